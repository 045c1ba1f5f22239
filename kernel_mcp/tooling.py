"""What a tool is, with no protocol in it: one pydantic input model, one output model, one handler.

Capability packages describe their tools with these types; only `mcp_adapter` turns a `ToolSpec`
into an MCP tool. Nothing here imports the MCP SDK, so a Ray worker or a script that uses a
capability does not load it (about a hundred modules).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from kernel_mcp.errors import KernelMcpError
from kernel_mcp.models.output import Image, ToolOutput  # noqa: F401  (offered here with the rest of a tool's vocabulary)
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace import Run, Workspace
from kernel_mcp.workspace.config import ListedTools

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

DEFAULT_BUDGET = 4096
# The toolsets a tool belongs to (see kernel_mcp.toolsets): tools/list shows "core" from the start
# and the others once loaded, so a model reads a small catalog every turn.
Toolset = Literal["core", "profiling", "hardware", "machine", "batch"]
# the one wording of the argument that every tool running the benchmark takes
IN_EXPERIMENT = "run the latest experiment's worktree, not the workspace"


@dataclass(frozen=True)
class ToolAnnotations:
    """The hints a client reads before calling a tool (the MCP layer writes them as ToolAnnotations)."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool = False  # every tool works on this machine and its workspace only


READ_ONLY = ToolAnnotations(read_only=True, destructive=False, idempotent=True)
RUNS_COMMANDS = ToolAnnotations(read_only=False, destructive=False, idempotent=False)
DESTRUCTIVE = ToolAnnotations(read_only=False, destructive=True, idempotent=False)


class ToolInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass
class ServerState:
    """What the server was started with; everything else is read afresh on each call."""

    workspace_dir: Path | None
    vendors: Vendors  # the platforms' registry (kernel_mcp.platforms.VENDORS): capability code gets it from here, never by import
    tools: tuple[ToolSpec, ...] = ()  # the tools it publishes, for doctor's liveness table
    listed: ListedTools | None = None  # which tools tools/list shows, as the command line said; None: the workspace's [server] tools

    def workspace(self) -> Workspace:
        return Workspace.open(self.workspace_dir)

    def listed_tools(self) -> ListedTools:
        """Which tools tools/list shows: "core" (the rest once their toolset is loaded) or "all"."""
        if self.listed is not None:
            return self.listed
        try:
            return self.workspace().config.server.tools
        except KernelMcpError:
            return "core"  # no workspace (or a broken config) lists what any workspace lists by default

    def budget(self) -> int:
        try:
            return self.workspace().config.server.response_budget_bytes
        except KernelMcpError:
            return DEFAULT_BUDGET


async def _no_progress(done: float, total: float | None, message: str) -> None:
    return None


@dataclass
class ToolContext:
    state: ServerState
    tool: str
    progress: ProgressFn = _no_progress
    runs_made: list[Run] = field(default_factory=list)

    def workspace(self) -> Workspace:
        return self.state.workspace()

    @property
    def vendors(self) -> Vendors:
        return self.state.vendors

    def new_run(self, arguments: dict[str, Any] | None = None) -> Run:
        run = self.workspace().runs.create(self.tool, arguments)
        self.runs_made.append(run)
        return run

    async def call(self, handler: Handler, args: ToolInput) -> ToolOutput:
        """The handler's answer; every run it opened and left open is finished on the way out (ok,
        or failed with the error), so no run of an answered call lists as running afterwards."""
        try:
            out = await handler(args, self)
        except KernelMcpError as exc:
            self._settle(f"{exc.kind}: {exc.message}")
            raise
        except BaseException as exc:  # a bug, or the call cancelled: still not a running run
            self._settle(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            raise
        self._settle(None)
        return out

    def _settle(self, error: str | None) -> None:
        for run in self.runs_made:
            try:
                if not run.finished:
                    run.finish("ok" if error is None else "failed", ok=error is None, **({"error": error[:500]} if error else {}))
            except (OSError, KernelMcpError):
                pass  # a run folder the call could not write to: the listing says what it can


Handler = Callable[[Any, ToolContext], Awaitable[ToolOutput]]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, models, handler, annotations, what it needs to be live (see doctor) and
    the toolset it is listed with (see kernel_mcp.toolsets; named on every tool, so that a new one
    is placed on purpose: "core" is listed on every turn)."""

    name: str
    description: str
    input_model: type[ToolInput]
    output_model: type[ToolOutput]
    handler: Handler
    annotations: ToolAnnotations
    requires: tuple[str, ...] = ()
    toolset: Toolset = field(kw_only=True)
