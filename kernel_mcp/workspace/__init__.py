"""The workspace: its folder, its validated kernel-mcp.toml, and the run artifacts kept in it."""

from kernel_mcp.workspace.config import CONFIG_NAME, WorkspaceConfig, parse_config
from kernel_mcp.workspace.runs import Run, RunStore
from kernel_mcp.workspace.scaffold import init_workspace
from kernel_mcp.workspace.workspace import Workspace

__all__ = ["CONFIG_NAME", "Run", "RunStore", "Workspace", "WorkspaceConfig", "init_workspace", "parse_config"]
