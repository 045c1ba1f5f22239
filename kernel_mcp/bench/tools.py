"""The benchmark tool: the workspace's fixed benchmark on a gated GPU, judged against BEST."""

from __future__ import annotations

from pydantic import Field

from kernel_mcp import bench
from kernel_mcp.ledger.core import compare_with_best
from kernel_mcp.ledger.tools import workdir_for
from kernel_mcp.tooling import RUNS_COMMANDS, ToolContext, ToolInput, ToolSpec


class RunBenchmarkInput(ToolInput):
    label: str | None = Field(default=None, max_length=120, description="a label kept with the run")
    repeats: int | None = Field(default=None, ge=1, le=100, description="runs of the command (default: [benchmark] repeats)")
    in_experiment: bool = Field(default=False, description="run in the latest experiment's worktree (its current code) instead of the workspace")


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
        "Run the workspace's fixed benchmark on the most idle GPU (gated, locked), repeated with fresh seeds; "
        "per config class: correctness, metric, and the change against the experiment's BEST with a confidence statement. "
        "A failed benchmark (crash, timeout, no usable CSV) is an error answer naming its run, whose logs and CSVs are kept.",
        RunBenchmarkInput,
        bench.BenchAnswer,
        _run_benchmark,
        RUNS_COMMANDS,
        ("workspace", "benchmark"),
    ),
]
