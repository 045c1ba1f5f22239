"""The experiment tools: start, evaluate (one change or many), keep, revert, end, status and log."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from kernel_mcp.ledger import chart, experiment, keep, many
from kernel_mcp.ledger.core import Ledger
from kernel_mcp.ledger.evaluate import evaluate
from kernel_mcp.ledger.models import ExperimentAnswer, LogAnswer
from kernel_mcp.tooling import DESTRUCTIVE, READ_ONLY, RUNS_COMMANDS, Image, ToolContext, ToolInput, ToolSpec
from kernel_mcp.workspace import Workspace

Tag = Field(default=None, max_length=48, description="run tag (default: the latest experiment)")


def workdir_for(ws: Workspace, in_experiment: bool) -> Path | None:
    """Where a tool with `in_experiment` runs: the latest experiment's worktree (where BEST and the
    candidate live), or None for the workspace itself."""
    if not in_experiment:
        return None
    lg = Ledger(ws)
    return lg.workdir(lg.experiment(None))


class ExperimentStartInput(ToolInput):
    tag: str = Field(max_length=48, description="run tag: names the branch kernel-opt/<tag> and the worktree")
    carry_changes: bool = Field(default=False, description="bring the workspace's uncommitted changes into the experiment")


class ExperimentEvaluateInput(ToolInput):
    hypothesis: str = Field(min_length=3, max_length=500, description="the one-sentence hypothesis this change tests")
    target_class: str | None = Field(default=None, max_length=300, description="config class the change targets, e.g. 'shape=x3d_m'; omit for a global change")
    tag: str | None = Tag


class ExperimentEvaluateManyInput(ToolInput):
    candidates: list[many.Candidate] = Field(
        min_length=1, max_length=many.MAX_CANDIDATES, description="each a commit (sha or branch) or a unified diff against BEST, with its hypothesis"
    )
    target_class: str | None = Field(default=None, max_length=300, description="config class the candidates target; omit for global changes")
    tag: str | None = Tag


class ExperimentKeepInput(ToolInput):
    why: str | None = Field(default=None, max_length=500, description="why it worked (goes into the commit and performance.md)")
    attempt: int | None = Field(default=None, ge=1, description="the attempt to keep (default: the latest); e.g. a winner of experiment_evaluate_many")
    tag: str | None = Tag


class ExperimentTagInput(ToolInput):
    tag: str | None = Tag


class ExperimentEndInput(ToolInput):
    reason: str = Field(min_length=3, max_length=300, description="why the experiment ends (goes into performance.md's stop summary)")
    tag: str | None = Tag


class ExperimentLogInput(ToolInput):
    tag: str | None = Tag
    limit: int = Field(default=20, ge=1, le=200)
    outcome: Literal["kept", "reverted", "pending", "not kept", "superseded", "refused"] | None = None
    chart: bool = Field(
        default=False, description="also draw every attempt's metric per config class (kept ones marked, the BEST line) as a PNG, kept as a run artifact"
    )


async def _experiment_start(args: ExperimentStartInput, ctx: ToolContext) -> ExperimentAnswer:
    ws = ctx.workspace()
    return await experiment.start(
        Ledger(ws), ctx.new_run(args.model_dump()), tag=args.tag, carry=args.carry_changes, progress=ctx.progress, vendors=ctx.vendors
    )


async def _experiment_evaluate(args: ExperimentEvaluateInput, ctx: ToolContext) -> ExperimentAnswer:
    ws = ctx.workspace()
    return await evaluate(
        Ledger(ws),
        ctx.new_run(args.model_dump()),
        hypothesis=args.hypothesis,
        target=args.target_class,
        tag=args.tag,
        progress=ctx.progress,
        vendors=ctx.vendors,
    )


async def _experiment_keep(args: ExperimentKeepInput, ctx: ToolContext) -> ExperimentAnswer:
    ws = ctx.workspace()
    return await keep.keep(
        Ledger(ws), ctx.new_run(args.model_dump()), tag=args.tag, why=args.why, progress=ctx.progress, attempt_id=args.attempt, vendors=ctx.vendors
    )


async def _experiment_evaluate_many(args: ExperimentEvaluateManyInput, ctx: ToolContext) -> many.ManyAnswer:
    ws = ctx.workspace()
    return await many.evaluate_many(
        Ledger(ws),
        ctx.new_run(args.model_dump()),
        candidates=args.candidates,
        target=args.target_class,
        tag=args.tag,
        progress=ctx.progress,
        vendors=ctx.vendors,
    )


async def _experiment_revert(args: ExperimentTagInput, ctx: ToolContext) -> ExperimentAnswer:
    return await keep.revert(Ledger(ctx.workspace()), args.tag)


async def _experiment_end(args: ExperimentEndInput, ctx: ToolContext) -> ExperimentAnswer:
    return await experiment.end(Ledger(ctx.workspace()), args.tag, reason=args.reason)


async def _experiment_status(args: ExperimentTagInput, ctx: ToolContext) -> ExperimentAnswer:
    lg = Ledger(ctx.workspace())
    return lg.status_answer(lg.experiment(args.tag))


CHART = "history.png"


async def _experiment_log(args: ExperimentLogInput, ctx: ToolContext) -> LogAnswer:
    ws = ctx.workspace()
    lg = Ledger(ws)
    answer = lg.log(args.tag, limit=args.limit, outcome=args.outcome)
    if args.chart:
        # the whole history, whatever `limit` and `outcome` cut from the text: progress shows only against the baseline
        exp = lg.store.existing_experiment(answer.tag)
        metric = ws.config.benchmark.metric if ws.config.benchmark else "metric"
        png = chart.history_png(exp, lg.store.attempts(exp.tag), metric=metric)
        run = ctx.new_run(args.model_dump())
        path = run.write_bytes(CHART, png)
        run.finish("ok")
        answer.chart = run.uri(CHART)
        answer.attach(Image(png, "image/png", path=path, uri=answer.chart))
    return answer


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "experiment_start",
        "Start an optimization run: a branch kernel-opt/<tag> and its own worktree from HEAD (the user's tree is never touched), "
        "the baseline measured and recorded as BEST, performance.md created. Edit the kernel in the worktree it names.",
        ExperimentStartInput,
        ExperimentAnswer,
        _experiment_start,
        RUNS_COMMANDS,
        ("workspace", "benchmark"),
    ),
    ToolSpec(
        "experiment_evaluate",
        "Evaluate the worktree's change against BEST, with its hypothesis: BEST and the change run side by side in pairs of fresh runs "
        "(drift cancels), then a verdict per config class and keep / discard / undecided / repair-needed / split-suggested, with the timing source. "
        "Every attempt is recorded. Keeping is a separate step.",
        ExperimentEvaluateInput,
        ExperimentAnswer,
        _experiment_evaluate,
        RUNS_COMMANDS,
        ("workspace", "benchmark"),
    ),
    ToolSpec(
        "experiment_evaluate_many",
        "Evaluate several candidates at once (commits or diffs against BEST, each with its hypothesis): each in its own worktree on its own "
        "idle GPU (or Ray task, per [engine]), judged like experiment_evaluate; one table ranked best first, every attempt recorded. "
        "Keep a winner with experiment_keep(attempt=...).",
        ExperimentEvaluateManyInput,
        many.ManyAnswer,
        _experiment_evaluate_many,
        RUNS_COMMANDS,
        ("workspace", "benchmark"),
    ),
    ToolSpec(
        "experiment_keep",
        "Commit the evaluated change (hypothesis and figures in the message), add its row to performance.md, move BEST. "
        "Refused unless that evaluation decided keep and the worktree is unchanged since; attempt=N keeps a batch candidate.",
        ExperimentKeepInput,
        ExperimentAnswer,
        _experiment_keep,
        RUNS_COMMANDS,
        ("workspace",),
    ),
    ToolSpec(
        "experiment_revert",
        "Reset the experiment's worktree to BEST, discarding only what the attempt changed there.",
        ExperimentTagInput,
        ExperimentAnswer,
        _experiment_revert,
        DESTRUCTIVE,
        ("workspace",),
    ),
    ToolSpec(
        "experiment_end",
        "End the experiment: the worktree back to BEST, the stop summary (kept steps, recent regressions) into performance.md, committed. "
        "Refused while the worktree holds changes that were never evaluated.",
        ExperimentEndInput,
        ExperimentAnswer,
        _experiment_end,
        DESTRUCTIVE,
        ("workspace",),
    ),
    ToolSpec(
        "experiment_status",
        "The experiment's state: BEST commit and figures, the worktree, consecutive regressions and the recent ones, stop state.",
        ExperimentTagInput,
        ExperimentAnswer,
        _experiment_status,
        READ_ONLY,
        ("workspace",),
    ),
    ToolSpec(
        "experiment_log",
        "Every attempt with its parent commit, hypothesis, per-class figures and outcome: the population and its lineage; "
        "chart=true adds a picture of the metric per config class over all attempts.",
        ExperimentLogInput,
        LogAnswer,
        _experiment_log,
        READ_ONLY,
        ("workspace",),
    ),
]
