"""The thread-trace tools: trace one kernel instruction by instruction, import a decoded trace, compare two."""

from __future__ import annotations

import anyio
from pydantic import Field

from kernel_mcp import trace
from kernel_mcp.ledger.tools import workdir_for
from kernel_mcp.patterns import AgentPattern
from kernel_mcp.tooling import IN_EXPERIMENT, READ_ONLY, RUNS_COMMANDS, ToolContext, ToolInput, ToolSpec


class ThreadTraceInput(ToolInput):
    kernel_regex: str = Field(min_length=1, max_length=200)
    dispatch: int | None = Field(default=None, ge=0, description="which launch; default: the first")
    options: trace.TraceOptions = Field(default_factory=trace.TraceOptions, description="AMD: rocprofv3's --att-<option>")
    in_experiment: bool = Field(default=False, description=IN_EXPERIMENT)


class ThreadTraceImportInput(ToolInput):
    path: str = Field(max_length=512, description="in the workspace or an [imports] folder")
    kernel: str | None = Field(default=None, max_length=200, description="name, part of it, or regex; default: the costliest")
    dispatch: int | None = Field(default=None, ge=0)


class ThreadTraceCompareInput(ToolInput):
    a: str = Field(max_length=64, description="before")
    b: str = Field(max_length=64, description="after")


async def _thread_trace(args: ThreadTraceInput, ctx: ToolContext) -> trace.TraceSummary:
    AgentPattern(args.kernel_regex, what="kernel_regex")  # refused here, by name, not by the profiler
    ws = ctx.workspace()
    return await trace.thread_trace(
        ws,
        ctx.new_run(args.model_dump()),
        kernel_regex=args.kernel_regex,
        dispatch=args.dispatch,
        options=args.options,
        progress=ctx.progress,
        cwd=workdir_for(ws, args.in_experiment),
        vendors=ctx.vendors,
    )


async def _thread_trace_import(args: ThreadTraceImportInput, ctx: ToolContext) -> trace.TraceSummary:
    ws = ctx.workspace()
    ws.import_path(args.path)  # refuse bad paths before creating a run
    run = ctx.new_run(args.model_dump())
    # decoding a large trace is blocking work: off the event loop, so other calls are answered meanwhile
    return await anyio.to_thread.run_sync(
        lambda: trace.thread_trace_import(ws, run, path=args.path, kernel=args.kernel, dispatch=args.dispatch, vendors=ctx.vendors)
    )


async def _thread_trace_compare(args: ThreadTraceCompareInput, ctx: ToolContext) -> trace.TraceComparison:
    return trace.thread_trace_compare(ctx.workspace(), args.a, args.b)


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "thread_trace",
        "Instruction-level trace of one kernel dispatch (rocprofv3 --att or ncu source counters): hot instructions, "
        "time by category, what the top waits wait for, bank conflicts, findings.",
        ThreadTraceInput,
        trace.TraceSummary,
        _thread_trace,
        RUNS_COMMANDS,
        ("workspace", "benchmark", "profiler", "gpu"),
        toolset="profiling",
    ),
    ToolSpec(
        "thread_trace_import",
        "thread_trace's summary of a decoded trace made elsewhere: a rocprofv3 ui_output folder or stats CSV, an ncu source CSV.",
        ThreadTraceImportInput,
        trace.TraceSummary,
        _thread_trace_import,
        READ_ONLY,
        ("workspace",),
        toolset="profiling",
    ),
    ToolSpec(
        "thread_trace_compare",
        "Two thread_trace runs side by side: what moved, by category and by hot instruction.",
        ThreadTraceCompareInput,
        trace.TraceComparison,
        _thread_trace_compare,
        READ_ONLY,
        ("workspace",),
        toolset="profiling",
    ),
]
