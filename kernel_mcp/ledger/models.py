"""What the experiment tools answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from kernel_mcp.toolkit import ToolOutput


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
    correct: bool
    change: str | None  # overall statement against the parent
    created: str

    def line(self) -> str:
        commit = f" -> {self.commit[:10]}" if self.commit else ""
        return f"#{self.id} {self.parent[:10]}{commit} [{self.decision}/{self.outcome}] {self.hypothesis[:90]}" + (f" ({self.change})" if self.change else "")


def attempt_view(a: dict[str, Any]) -> AttemptView:
    figures = a.get("figures") or {}
    classes = {k: sorted(v["samples"])[len(v["samples"]) // 2] for k, v in figures.items() if v.get("samples")}
    overall = (a.get("evidence") or {}).get("overall")
    change = None
    if overall:
        from kernel_mcp.bench.stats import Comparison

        change = Comparison.model_validate(overall).statement()
    return AttemptView(
        id=a["id"], parent=a["parent_commit"], commit=a.get("commit_sha"), hypothesis=a["hypothesis"], target_class=a.get("target_class"),
        files=a.get("files") or [], decision=a["decision"], outcome=a["outcome"], reasons=a.get("reasons") or [],
        classes=dict(list(classes.items())[:12]), correct=all(v.get("correct", True) for v in figures.values()), change=change, created=a["created"],
    )


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
        lines = [f"experiment {self.tag} [{self.status}{': ' + self.stop_reason if self.stop_reason else ''}] branch {self.branch}",
                 f"edit here: {self.worktree}", f"BEST {self.best_commit[:10]}; consecutive regressions {self.consecutive_regressions}/5"]
        if self.attempt:
            a = self.attempt
            lines.append(f"attempt #{a.id}: {a.decision.upper()} ({a.outcome}) - {a.hypothesis}")
            lines += [f"  {r}" for r in a.reasons[:8]]
            if a.files:
                lines.append(f"  files: {', '.join(a.files[:10])}")
        if self.best:
            lines.append("BEST figures: " + "; ".join(f"{k} {v:.4g}" for k, v in list(self.best.classes.items())[:8]))
        if self.run_id:
            lines.append(f"run {self.run_id}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


class LogAnswer(ToolOutput):
    tag: str
    best_commit: str
    attempts: list[AttemptView]

    def render(self) -> str:
        lines = [f"experiment {self.tag}: BEST {self.best_commit[:10]}; {len(self.attempts)} attempt(s), newest first"]
        lines += [a.line() for a in self.attempts]
        return "\n".join(lines)
