"""Errors a tool reports to its caller as a clear result, never as a crash.

Every capability raises one of these for bad input or a missing backend; the tool layer turns it
into an MCP error result (and the CLI into a non-zero exit) with the message and the hint.
"""

from __future__ import annotations

from kernel_mcp import untrusted


class KernelMcpError(Exception):
    """Base of the errors that carry a message meant for the user (or agent) and a hint."""

    kind = "error"
    # A message is one line: it often names a workspace file or quotes an argument, and a newline in
    # one would start a line that reads as the server's (a forged "hint:"). An error whose message is
    # lines of its own, each escaping what it quotes, says so here.
    lines_escaped = False

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        text = f"{self.kind}: {self.message if self.lines_escaped else untrusted.inline(self.message)}"
        if self.hint:
            # one line: a hint often quotes what a command printed, whose lines must not pass for ours
            text += f"\nhint: {untrusted.inline(self.hint)}"
        return text


class InvalidInput(KernelMcpError):
    """An argument is malformed, unsafe (outside the workspace, looks like a flag) or unknown."""

    kind = "invalid input"


class WorkspaceError(KernelMcpError):
    """The workspace folder or its kernel-mcp.toml is missing or malformed."""

    kind = "workspace error"


class BackendMissing(KernelMcpError):
    """A tool needs an executable (compiler, profiler, monitor) or a GPU this machine lacks."""

    kind = "backend missing"


class CommandFailed(KernelMcpError):
    """A command the tool ran could not be started, timed out, or failed in a way the tool cannot interpret."""

    kind = "command failed"
