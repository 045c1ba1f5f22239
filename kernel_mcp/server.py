"""The MCP server: it only registers tools and resources. Each tool is one input model, one
capability call and one output model; the logic lives in the capability packages."""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from kernel_mcp import __version__, doctor
from kernel_mcp.errors import KernelMcpError
from kernel_mcp.toolkit import READ_ONLY, RUNS_COMMANDS, ServerState, ToolContext, ToolInput, ToolSpec, register
from kernel_mcp.workspace import commands

INSTRUCTIONS = """\
kernel-mcp supplies facts about GPU kernels that must not be guessed: what this machine can do
(doctor), the workspace's fixed benchmark and commands, and the raw output of every run.
Answers are short; full outputs are kept as run artifacts (run_artifacts tool, or resources
kernel-mcp://runs/<run-id>/<file>)."""


class DoctorInput(ToolInput):
    pass


class WorkspaceInfoInput(ToolInput):
    pass


class RunCommandInput(ToolInput):
    name: str = Field(
        description="a command named in kernel-mcp.toml: 'bench' (the fixed benchmark) or a [commands] entry",
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$",
        max_length=64,
    )
    timeout_s: float | None = Field(
        default=None, gt=0, le=24 * 3600, description="stop earlier than the configured timeout (seconds)"
    )


class RunArtifactsInput(ToolInput):
    run_id: str | None = Field(default=None, description="a run id; omit to list recent runs", max_length=64)
    file: str | None = Field(default=None, description="an artifact of that run; omit to list its files", max_length=128)
    offset: int = Field(default=0, ge=0, description="byte offset to read from, for paging through a large file")


async def _doctor(args: DoctorInput, ctx: ToolContext) -> doctor.DoctorResult:
    return await doctor.diagnose(ctx.state, [(s.name, s.requires) for s in TOOLS])


async def _workspace_info(args: WorkspaceInfoInput, ctx: ToolContext) -> commands.WorkspaceInfo:
    return commands.describe(ctx.workspace())


async def _run_command(args: RunCommandInput, ctx: ToolContext) -> commands.CommandOutcome:
    ws = ctx.workspace()
    commands.command_argv(ws, args.name)  # refuse unknown names before creating a run
    run = ctx.new_run(args.model_dump())
    return await commands.run_named(ws, run, args.name, args.timeout_s, ctx.progress)


async def _run_artifacts(args: RunArtifactsInput, ctx: ToolContext) -> commands.RunListing:
    ref = commands.RunRef(run_id=args.run_id, file=args.file, offset=args.offset)
    return commands.read_runs(ctx.workspace().runs, ref, ctx.state.budget())


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "doctor",
        "What this machine can do: compilers, profilers, GPU monitors and GPUs found (with versions), "
        "the platform in use, and which kernel-mcp tools are live or what to install for the others.",
        DoctorInput, doctor.DoctorResult, _doctor, READ_ONLY,
    ),
    ToolSpec(
        "workspace_info",
        "The workspace's configuration: target arch, platform, fixed benchmark command, correctness "
        "rule, metric, config columns, target kernel, named commands, recent runs.",
        WorkspaceInfoInput, commands.WorkspaceInfo, _workspace_info, READ_ONLY, ("workspace",),
    ),
    ToolSpec(
        "run_command",
        "Run a command named in kernel-mcp.toml ('bench' or a [commands] entry; no other command can run). "
        "Returns exit status, duration and output tails; the full output is kept as run artifacts.",
        RunCommandInput, commands.CommandOutcome, _run_command, RUNS_COMMANDS, ("workspace",),
    ),
    ToolSpec(
        "run_artifacts",
        "List recent runs, list one run's files, or read a slice of one file (paged by byte offset).",
        RunArtifactsInput, commands.RunListing, _run_artifacts, READ_ONLY, ("workspace",),
    ),
]


def build_server(workspace_dir: str | Path | None) -> MCPServer:
    state = ServerState(Path(workspace_dir) if workspace_dir else None)
    server = MCPServer("kernel-mcp", version=__version__, instructions=INSTRUCTIONS)
    for spec in TOOLS:
        register(server, state, spec)

    @server.resource("kernel-mcp://runs", name="runs", description="Recent runs of this workspace", mime_type="text/plain")
    def list_runs() -> str:
        try:
            return commands.read_runs(state.workspace().runs, commands.RunRef(), state.budget()).render()
        except KernelMcpError as exc:
            return exc.render()

    @server.resource(
        "kernel-mcp://runs/{run_id}/{name}",
        name="run-artifact",
        description="One file kept by a run (compiler output, ISA, logs, CSV, profiles)",
        mime_type="text/plain",
    )
    def run_artifact(run_id: str, name: str) -> str:
        store = state.workspace().runs
        text, _size = store.read(run_id, name, limit_bytes=16 * 2**20)
        return text

    return server
