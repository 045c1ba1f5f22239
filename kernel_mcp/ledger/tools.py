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

Tag = Field(default=None, max_length=48, description="default: the latest experiment")
TARGET_CLASS = "the config class it targets, e.g. 'shape=x3d_m'; omit for a global change"


def workdir_for(ws: Workspace, in_experiment: bool) -> Path | None:
    """Where a tool with `in_experiment` runs: the latest experiment's worktree (where BEST and the
    candidate live), or None for the workspace itself."""
    if not in_experiment:
        return None
    lg = Ledger(ws)
    return lg.workdir(lg.experiment(None))


class ExperimentStartInput(ToolInput):
    tag: str = Field(max_length=48)  # the tool's description says what it names
    carry_changes: bool = Field(default=False, description="bring the workspace's uncommitted changes")


class ExperimentEvaluateInput(ToolInput):
    hypothesis: str = Field(min_length=3, max_length=500, description="one sentence: what should get faster, and why")
    target_class: str | None = Field(default=None, max_length=300, description=TARGET_CLASS)
    tag: str | None = Tag


class ExperimentEvaluateManyInput(ToolInput):
    candidates: list[many.Candidate] = Field(
        min_length=1, max_length=many.MAX_CANDIDATES, description="each exactly one of commit or patch, with its hypothesis"
    )
    target_class: str | None = Field(default=None, max_length=300, description=TARGET_CLASS)
    tag: str | None = Tag


class ExperimentKeepInput(ToolInput):
    why: str | None = Field(default=None, max_length=500, description="why it worked, for the commit and performance.md")
    attempt: int | None = Field(default=None, ge=1, description="default: the latest evaluated")
    tag: str | None = Tag


class ExperimentTagInput(ToolInput):
    tag: str | None = Tag


class ExperimentEndInput(ToolInput):
    reason: str = Field(min_length=3, max_length=300, description="why it ends, for the stop summary")
    tag: str | None = Tag


class ExperimentLogInput(ToolInput):
    tag: str | None = Tag
    limit: int = Field(default=20, ge=1, le=200)
    outcome: Literal["kept", "reverted", "pending", "not kept", "superseded", "refused"] | None = None
    chart: bool = False  # the tool's description says what it draws


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
        "Start an optimization run: branch kernel-opt/<tag> in its own worktree (edit the kernel there), the baseline measured as BEST.",
        ExperimentStartInput,
        ExperimentAnswer,
        _experiment_start,
        RUNS_COMMANDS,
        ("workspace", "benchmark"),
        toolset="core",
    ),
    ToolSpec(
        "experiment_evaluate",
        "Measure the worktree's change against BEST in interleaved pairs: a verdict per config class and keep, discard, "
        "undecided, repair-needed or split-suggested. Recorded; experiment_keep keeps it.",
        ExperimentEvaluateInput,
        ExperimentAnswer,
        _experiment_evaluate,
        RUNS_COMMANDS,
        ("workspace", "benchmark"),
        toolset="core",
    ),
    ToolSpec(
        "experiment_evaluate_many",
        "experiment_evaluate for several candidates at once, each on its own idle GPU (or Ray task): one table, best first; "
        "experiment_keep(attempt=N) keeps a winner.",
        ExperimentEvaluateManyInput,
        many.ManyAnswer,
        _experiment_evaluate_many,
        RUNS_COMMANDS,
        ("workspace", "benchmark"),
        toolset="batch",
    ),
    ToolSpec(
        "experiment_keep",
        "Commit an evaluated change judged keep (the worktree unchanged since), record it in performance.md, move BEST.",
        ExperimentKeepInput,
        ExperimentAnswer,
        _experiment_keep,
        RUNS_COMMANDS,
        ("workspace",),
        toolset="core",
    ),
    ToolSpec(
        "experiment_revert",
        "Reset the experiment's worktree to BEST, discarding only what the attempt changed there.",
        ExperimentTagInput,
        ExperimentAnswer,
        _experiment_revert,
        DESTRUCTIVE,
        ("workspace",),
        toolset="core",
    ),
    ToolSpec(
        "experiment_end",
        "End the experiment: the worktree back to BEST, a stop summary committed to performance.md. Refused while changes are unevaluated.",
        ExperimentEndInput,
        ExperimentAnswer,
        _experiment_end,
        DESTRUCTIVE,
        ("workspace",),
        toolset="core",
    ),
    ToolSpec(
        "experiment_status",
        "The experiment now: BEST's commit and figures, the worktree, recent regressions, stop state.",
        ExperimentTagInput,
        ExperimentAnswer,
        _experiment_status,
        READ_ONLY,
        ("workspace",),
        toolset="core",
    ),
    ToolSpec(
        "experiment_log",
        "Every attempt: parent commit, hypothesis, per-class figures, outcome; chart=true plots the metric per config class.",
        ExperimentLogInput,
        LogAnswer,
        _experiment_log,
        READ_ONLY,
        ("workspace",),
        toolset="core",
    ),
]
