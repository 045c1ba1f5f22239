"""The benchmark tool: the workspace's fixed benchmark on a gated GPU, judged against BEST."""

from __future__ import annotations

from pydantic import Field

from kernel_mcp import bench
from kernel_mcp.ledger.core import compare_with_best
from kernel_mcp.ledger.tools import workdir_for
from kernel_mcp.tooling import IN_EXPERIMENT, RUNS_COMMANDS, ToolContext, ToolInput, ToolSpec


class RunBenchmarkInput(ToolInput):
    label: str | None = Field(default=None, max_length=120)
    repeats: int | None = Field(default=None, ge=1, le=100, description="default: [benchmark] repeats")
    in_experiment: bool = Field(default=False, description=IN_EXPERIMENT)


async def _run_benchmark(args: RunBenchmarkInput, ctx: ToolContext) -> bench.BenchAnswer:
    ws = ctx.workspace()
    run = ctx.new_run(args.model_dump())
    result = await bench.run_benchmark(
        ws, run, label=args.label, repeats=args.repeats, progress=ctx.progress, cwd=workdir_for(ws, args.in_experiment), vendors=ctx.vendors
    )
    answer = compare_with_best(ws, result, run.id)
    if result.failure:
        # an error answer (isError), with the reason; the run keeps the logs, the CSVs of the
        # repeats that completed, and this summary
        run.write_json("summary.json", result.model_dump(mode="json"))
        run.finish("failed", ok=False, error=result.failure)
        raise bench.BenchmarkFailed.of(answer, run.files())
    run.finish("ok")
    return answer


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "run_benchmark",
        "Run the fixed benchmark on the most idle GPU: per config class, correctness, the metric and its change against BEST, with confidence.",
        RunBenchmarkInput,
        bench.BenchAnswer,
        _run_benchmark,
        RUNS_COMMANDS,
        ("workspace", "benchmark"),
        toolset="core",
    ),
]
