"""The workspace's tools: describe it, run its named commands, read the artifacts runs kept."""

from __future__ import annotations

from pydantic import Field

from kernel_mcp.tooling import READ_ONLY, RUNS_COMMANDS, ToolContext, ToolInput, ToolSpec
from kernel_mcp.workspace import commands


class WorkspaceInfoInput(ToolInput):
    pass


class RunCommandInput(ToolInput):
    name: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$", max_length=64)  # the tool's description says which names
    timeout_s: float | None = Field(default=None, gt=0, le=24 * 3600, description="seconds; only shortens the configured timeout")


class RunArtifactsInput(ToolInput):
    # what each leaves out is in the tool's description
    run_id: str | None = Field(default=None, max_length=64)
    file: str | None = Field(default=None, max_length=128)
    offset: int = Field(default=0, ge=0)


async def _workspace_info(args: WorkspaceInfoInput, ctx: ToolContext) -> commands.WorkspaceInfo:
    return commands.describe(ctx.workspace(), ctx.vendors)


async def _run_command(args: RunCommandInput, ctx: ToolContext) -> commands.CommandOutcome:
    ws = ctx.workspace()
    commands.command_argv(ws, args.name)  # refuse unknown names before creating a run
    run = ctx.new_run(args.model_dump())
    return await commands.run_named(ws, run, name=args.name, timeout_s=args.timeout_s, progress=ctx.progress)


async def _run_artifacts(args: RunArtifactsInput, ctx: ToolContext) -> commands.RunListing:
    ref = commands.RunRef(run_id=args.run_id, file=args.file, offset=args.offset)
    return commands.read_runs(ctx.workspace().runs, ref, ctx.state.budget())


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "workspace_info",
        "The workspace's kernel-mcp.toml in force (target, benchmark, metric, correctness rule, harness, named commands) and its recent runs.",
        WorkspaceInfoInput,
        commands.WorkspaceInfo,
        _workspace_info,
        READ_ONLY,
        ("workspace",),
        toolset="core",
    ),
    ToolSpec(
        "run_command",
        "Run a command named in kernel-mcp.toml, 'bench' or a [commands] entry (no other can run): exit status and output tails.",
        RunCommandInput,
        commands.CommandOutcome,
        _run_command,
        RUNS_COMMANDS,
        ("workspace",),
        toolset="machine",
    ),
    ToolSpec(
        "run_artifacts",
        "What runs kept: recent runs (no run_id), one run's files (no file), or a file read from a byte offset.",
        RunArtifactsInput,
        commands.RunListing,
        _run_artifacts,
        READ_ONLY,
        ("workspace",),
        toolset="core",  # every cut answer points at the run's files, and the server's instructions name it
    ),
]
