"""The workspace's tools: describe it, run its named commands, read the artifacts runs kept."""

from __future__ import annotations

from pydantic import Field

from kernel_mcp.tooling import READ_ONLY, RUNS_COMMANDS, ToolContext, ToolInput, ToolSpec
from kernel_mcp.workspace import commands


class WorkspaceInfoInput(ToolInput):
    pass


class RunCommandInput(ToolInput):
    name: str = Field(
        description="'bench' (the fixed benchmark) or a [commands] entry",
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$",
        max_length=64,
    )
    timeout_s: float | None = Field(default=None, gt=0, le=24 * 3600, description="stop earlier than the configured timeout (seconds)")


class RunArtifactsInput(ToolInput):
    run_id: str | None = Field(default=None, description="a run id; omit to list recent runs", max_length=64)
    file: str | None = Field(default=None, description="an artifact of that run; omit to list its files", max_length=128)
    offset: int = Field(default=0, ge=0, description="byte offset, for paging a large file")


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
        "The workspace's configuration: where it sits in git, target arch, platform, fixed benchmark command, "
        "correctness rule, metric, repeats, config columns, target kernel, harness settings, named "
        "commands, recent runs and their states.",
        WorkspaceInfoInput,
        commands.WorkspaceInfo,
        _workspace_info,
        READ_ONLY,
        ("workspace",),
    ),
    ToolSpec(
        "run_command",
        "Run a command named in kernel-mcp.toml ('bench' or a [commands] entry; no other command can run). "
        "Returns exit status, duration and output tails; the full output is kept as run artifacts.",
        RunCommandInput,
        commands.CommandOutcome,
        _run_command,
        RUNS_COMMANDS,
        ("workspace",),
    ),
    ToolSpec(
        "run_artifacts",
        "List recent runs, list one run's files, or read a slice of one file (paged by byte offset).",
        RunArtifactsInput,
        commands.RunListing,
        _run_artifacts,
        READ_ONLY,
        ("workspace",),
    ),
]
