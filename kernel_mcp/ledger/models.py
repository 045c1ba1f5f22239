"""What the experiment tools answer."""

from __future__ import annotations

from pydantic import BaseModel

from kernel_mcp.ledger.state import Attempt, Evidence, Verification
from kernel_mcp.tooling import ToolOutput
from kernel_mcp.untrusted import inline


class AttemptView(BaseModel):
    id: int
    parent: str
    commit: str | None
    hypothesis: str
    target_class: str | None
    files: list[str]
    decision: str
    outcome: str
    reasons: list[str]
    classes: dict[str, float]  # class -> median metric
    speed_of_light: dict[str, float] = {}  # class -> roofline floor / measured time on the GPU that ran it (1.0 = at the floor)
    floor_of: str | None = None  # whose figures drew those floors: "H200 (sm_90, this GPU)"
    correct: bool
    change: str | None  # overall statement against the parent
    per_class: dict[str, str] = {}  # class -> its own paired statement against BEST
    measured: str | None = None  # where the figures came from: timing source, pairs, clocks, wall time
    remeasured: str | None = None  # a suspicious speedup's independent re-measurement at keep time
    verification: str | None = None
    created: str

    def line(self) -> str:
        commit = f" -> {self.commit[:10]}" if self.commit else ""
        scope = f"target {inline(self.target_class)}" if self.target_class else "global"
        line = f"#{self.id} {self.parent[:10]}{commit} [{self.decision}/{self.outcome}, {scope}] {inline(self.hypothesis)[:90]}" + (
            f" ({self.change})" if self.change else ""
        )
        if self.remeasured:
            line += f"\n    re-measured at keep: {inline(self.remeasured)}"
        if self.speed_of_light:
            line += f"\n    {self.light_statement(4)}"
        return line

    def light_statement(self, most: int = 8) -> str:
        """Each class's time as a fraction of its floor on the GPU that measured it (SOL-ExecBench's score)."""
        shown = "; ".join(f"{inline(k)} {v:.0%}" for k, v in list(self.speed_of_light.items())[:most])
        return f"speed of light (floor / time, floor from {self.floor_of or 'the roofline'}): {shown}"


def attempt_view(a: Attempt) -> AttemptView:
    ev = a.evidence
    classes = {k: v.median for k, v in a.figures.items() if v.samples}
    verification = ev.verification or Verification()
    return AttemptView(
        id=a.id,
        parent=a.parent_commit,
        commit=a.commit_sha,
        hypothesis=a.hypothesis,
        target_class=a.target_class,
        files=a.files,
        decision=a.decision,
        outcome=a.outcome,
        reasons=a.reasons,
        classes=dict(list(classes.items())[:12]),
        correct=all(v.correct for v in a.figures.values()),
        speed_of_light={k: v.speed_of_light for k, v in list(a.figures.items())[:12] if v.speed_of_light is not None},
        floor_of=ev.floor_of,
        change=ev.overall.statement() if ev.overall else None,
        per_class={k: (f"{ev.verdicts[k]}: " if k in ev.verdicts else "") + v.statement() for k, v in list(a.comparisons.items())[:12]},
        measured=measured_statement(ev),
        created=a.created,
        remeasured=ev.remeasured.statement if ev.remeasured else None,
        verification=verification.summary or verification.failed,
    )


def measured_statement(evidence: Evidence) -> str | None:
    """One line on how an attempt was measured: the timing source, the pairs, the clocks, the time."""
    if not evidence.source:
        return None
    parts = [f"timing: {evidence.source}, BEST and candidate side by side", evidence.stopped or ""]
    if evidence.gpu:
        parts.append(f"on {evidence.gpu}")
    if evidence.clocks:
        from kernel_mcp.ledger.paired import Clocks

        parts.append(Clocks.model_validate(evidence.clocks).statement())
    if evidence.wall_s is not None:
        parts.append(f"{len(evidence.runs)} runs in {evidence.wall_s:.0f} s")
    parts.append(f"sealed ({evidence.sealed})" if evidence.sealed else "UNSEALED (the runs could write outside their own tree)")
    if evidence.forked:
        parts.append(evidence.forked)
    if evidence.witness is not None:
        parts.append(f"witness (wall time per run): {evidence.witness.statement()}")
    if evidence.floor_of:
        parts.append(f"roofline floor from {evidence.floor_of}")
    elif evidence.floor_note:
        parts.append(evidence.floor_note)
    if evidence.kernel_trace_note and evidence.keep_metric == "profiler":
        parts.append(evidence.kernel_trace_note)
    if evidence.spent is not None:
        parts.append(evidence.spent.statement())
    return "; ".join(p for p in parts if p)


class ExperimentAnswer(ToolOutput):
    tag: str
    status: str
    stop_reason: str | None
    branch: str
    worktree: str
    best_commit: str
    best: AttemptView | None
    consecutive_regressions: int
    recent_regressions: list[AttemptView]
    attempt: AttemptView | None
    max_repairs: int
    run_id: str | None
    notes: list[str]

    def render(self) -> str:
        # Class keys are the benchmark CSV's cells, reasons quote failures (the benchmark's output),
        # file names are the workspace's: each stays on its own line.
        lines = [
            f"experiment {self.tag} [{self.status}{': ' + inline(self.stop_reason) if self.stop_reason else ''}] branch {self.branch}",
            f"edit here: {self.worktree}",
            f"BEST {self.best_commit[:10]}; consecutive regressions {self.consecutive_regressions}/5",
        ]
        if self.attempt:
            a = self.attempt
            lines.append(f"attempt #{a.id}: {a.decision.upper()} ({a.outcome}) - {inline(a.hypothesis)}")
            lines += [f"  {inline(r)}" for r in a.reasons[:8]]
            if a.per_class:
                lines.append("  per class (vs BEST, paired): " + "; ".join(f"{inline(k)} {v}" for k, v in list(a.per_class.items())[:8]))
            if a.speed_of_light:
                lines.append(f"  {a.light_statement()}")
            if a.measured:
                lines.append(f"  measured: {a.measured}")
            if a.remeasured:
                lines.append(f"  re-measured at keep: {inline(a.remeasured)}")
            if a.files:
                lines.append(f"  files: {', '.join(map(inline, a.files[:10]))}")
        if self.best:
            lines.append("BEST figures: " + "; ".join(f"{inline(k)} {v:.4g}" for k, v in list(self.best.classes.items())[:8]))
        if self.run_id:
            lines.append(f"run {self.run_id}")
        lines += [f"note: {inline(n)}" for n in self.notes]
        return "\n".join(lines)


class LogAnswer(ToolOutput):
    tag: str
    best_commit: str
    attempts: list[AttemptView]
    chart: str | None = None  # the history chart's run artifact, when one was drawn (the picture is in the answer)

    def render(self) -> str:
        lines = [f"experiment {self.tag}: BEST {self.best_commit[:10]}; {len(self.attempts)} attempt(s), newest first"]
        if self.chart:
            lines.append(f"chart (every attempt, per config class): {self.chart}")
        lines += [a.line() for a in self.attempts]
        return "\n".join(lines)


class CandidateRow(BaseModel):
    rank: int = 0
    attempt: int
    index: int  # position in the request
    commit: str
    hypothesis: str
    decision: str
    regression: bool
    change: str | None  # overall statement against BEST
    sort_change: float
    where: str  # slot and GPU (or Ray node) that measured it
    started_s: float | None  # seconds after the batch started
    ended_s: float | None
    reason: str


class ManyAnswer(ToolOutput):
    tag: str
    status: str
    best_commit: str
    batch: str
    engine: str
    slots: int
    started: str
    rows: list[CandidateRow]
    consecutive_regressions: int
    run_id: str
    notes: list[str]

    def render(self) -> str:
        # a reason may quote a failure (the benchmark's output): it stays on its own line
        lines = [
            f"experiment {self.tag} [{self.status}]: batch {self.batch} of {len(self.rows)} candidate(s) on the {self.engine} engine, "
            f"{self.slots} slot(s), started {self.started}; BEST {self.best_commit[:10]}",
            "rank attempt decision | change vs BEST | where | start-end (s) | hypothesis",
        ]
        for r in self.rows:
            span = f"{r.started_s:.1f}-{r.ended_s:.1f}" if r.started_s is not None and r.ended_s is not None else "-"
            lines.append(f"{r.rank}. #{r.attempt} {r.decision.upper()} | {r.change or '-'} | {r.where or '-'} | {span} | {inline(r.hypothesis)[:70]}")
            if r.decision not in ("keep", "suspicious") and r.reason:
                lines.append(f"     {inline(r.reason)[:200]}")  # a failure may quote the benchmark's output
        lines.append(f"consecutive regressions {self.consecutive_regressions}/5; run {self.run_id}")
        lines += [f"note: {inline(n)}" for n in self.notes]
        return "\n".join(lines)
