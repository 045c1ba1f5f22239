"""kernel-mcp: ground truth about GPU kernels for coding agents, over the Model Context Protocol."""

__version__ = "0.1.0"
