"""experiment_evaluate_many: several candidates measured at once, each on its own GPU.

A candidate is a commit (sha or branch) or a unified diff against BEST, with its hypothesis. Each
is pinned under refs/kernel-mcp/<tag>/ (so its lineage stays reachable), checked against the frozen
harness, and handed to the engine (engines/). As each measurement comes back it is judged against
BEST with the same rule as experiment_evaluate and recorded in one transaction: a process killed
mid-batch leaves the finished candidates recorded and no half-written row. Candidates are siblings,
so each is judged on its own (the "same direction twice" rule joins a line of changes, not a batch).
Keeping one stays a separate step: experiment_keep(attempt=...).
"""

from __future__ import annotations

import secrets
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, model_validator

from kernel_mcp.errors import InvalidInput
from kernel_mcp.gpu.gate import NoIdleGpu
from kernel_mcp.ledger import gitops, harness, recover, same_code
from kernel_mcp.ledger.core import BATCH_DIR, STOP_AFTER_REGRESSIONS, Ledger, crash_point
from kernel_mcp.ledger.evaluate import attempt_fields, judge
from kernel_mcp.ledger.experiment import stop
from kernel_mcp.ledger.decide import KEEPABLE, Verdict
from kernel_mcp.ledger.engines import Engine, Job, Measurement
from kernel_mcp.ledger.models import CandidateRow, ManyAnswer
from kernel_mcp.ledger.paired import Together
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace import Run
from kernel_mcp.ledger.state import Experiment, Attempt

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

MAX_CANDIDATES = 32
MAX_PATCH_BYTES = 1 << 20
# Best first: what can be kept, then ties and losses, then what could not be judged.
RANK = {
    "keep": 0,
    "suspicious": 1,
    "split-suggested": 2,
    "undecided": 3,
    "discard": 4,
    "not-corroborated": 5,
    "repair-needed": 6,
    "refused": 7,
    "failed": 8,
    "duplicate": 9,
}


class Candidate(BaseModel):
    commit: str | None = Field(None, max_length=200, description="sha or branch")
    patch: str | None = Field(None, max_length=MAX_PATCH_BYTES, description="a unified diff against BEST")
    hypothesis: str = Field(min_length=3, max_length=500, description="one sentence: what should get faster, and why")

    @model_validator(mode="after")
    def _one_source(self) -> Candidate:
        if (self.commit is None) == (self.patch is None):
            raise ValueError("give exactly one of commit or patch")
        return self


def _prepare(ledger: Ledger, exp: Experiment, batch: str, index: int, cand: Candidate, root: Path) -> tuple[Job, list[str]]:
    """Pin the candidate's commit and check it out in its own worktree; returns the job and any
    reason it must not be measured (a harness violation)."""
    repo, _ = gitops.repo_of(ledger.ws.root)
    best = exp.best_commit
    path = root / f"c{index}"
    if cand.commit is not None:
        commit = gitops.resolve_commit(repo, cand.commit)
        wt = gitops.add_detached_worktree(repo, path, commit)
    else:
        wt = gitops.add_detached_worktree(repo, path, best)
        gitops.apply_patch(wt, cand.patch or "")
        commit = gitops.commit_all(wt, f"{cand.hypothesis}\n\nCandidate {index} of batch {batch} (experiment {exp.tag})")
    ref = f"refs/kernel-mcp/{exp.tag}/{batch}/{index}"
    gitops.pin(repo, ref, commit)
    job = Job(index=index, hypothesis=cand.hypothesis, commit=commit, ref=ref, subdir=exp.subdir, worktree=path)
    job.files = gitops.files_between(wt, best, commit)
    job.digest = gitops.tree_of(wt, commit)
    problems = harness.violations(wt, exp.subdir, job.workdir, exp.protected, ledger.ws.config.harness, job.files)
    nested = gitops.nested_problem([], gitops.new_gitlinks(wt, best, commit))
    return job, ["the harness is frozen: " + p for p in problems] + ([nested] if nested else [])


def _verdict(ledger: Ledger, exp: Experiment, m: Measurement, target: str | None, keep_metric: str) -> Verdict:
    if m.error is not None or m.together is None:
        return Verdict(decision="failed", reasons=[m.error or "no measurement came back"], comparisons={})
    return judge(ledger, m.together, target, 0, 0, keep_metric)


def engine_for(ledger: Ledger, exp: Experiment, batch: str, keep_metric: str, target: str | None, vendors: Vendors) -> Engine:
    """The engine [engine] kind names: a pool over this node's GPUs, or Ray tasks."""
    cfg = ledger.ws.config.engine
    if cfg.kind == "ray":
        from kernel_mcp.ledger.engines.on_ray import RayEngine

        return RayEngine(ledger, exp, batch, keep_metric, target, vendors)
    from kernel_mcp.ledger.engines.local import LocalEngine

    return LocalEngine(ledger, exp, batch, keep_metric, target, vendors)


async def evaluate_many(
    ledger: Ledger, run: Run, candidates: list[Candidate], target: str | None, tag: str | None, progress: ProgressFn | None, *, vendors: Vendors
) -> ManyAnswer:
    exp = ledger.running(tag)  # the candidates' count and form were checked by the tool's input model
    batch = time.strftime("b%Y%m%d-%H%M%S-") + secrets.token_hex(2)
    keep_metric = ledger.keep_metric(vendors)
    engine = engine_for(ledger, exp, batch, keep_metric, target, vendors)
    with ledger.store.transaction():  # an earlier batch's candidates were measured against this BEST too, but are superseded
        ledger.store.close_pending(exp.tag, "superseded")
    root = ledger.ws.state_dir / BATCH_DIR / exp.tag / batch
    recover.mark_owner(root)  # a killed batch's worktrees are removed by the next call
    rows: list[CandidateRow] = []
    batch_start = time.time()
    jobs: list[Job] = []
    first_with: dict[str, Job] = {}  # the first candidate of this batch with each code fingerprint
    twins: list[tuple[Job, Job, str]] = []  # a later candidate with the same code, its first, and the code
    repo, _ = gitops.repo_of(ledger.ws.root)

    async def record(job: Job, m: Measurement, refused: list[str] | None = None) -> None:
        verdict = Verdict(decision="refused", reasons=refused, comparisons={}) if refused else _verdict(ledger, exp, m, target, keep_metric)
        placement = {"index": job.index, "ref": job.ref, "where": m.where, "started": m.started, "ended": m.ended, "run": m.run_id}
        fields = attempt_fields(
            exp,
            m.together or Together(),
            verdict,
            job.hypothesis,
            target,
            job.files,
            job.digest,
            0,
            m.run_id or run.id,
            keep_metric,
            batch=batch,
            candidate=placement,
            candidate_commit=job.commit or None,
            code_fingerprint=job.code,
        )
        fields["commit_sha"] = job.commit or None  # none when the candidate could not be prepared
        with ledger.store.transaction():
            attempt_id = ledger.store.add_attempt(**fields)
        crash_point("many-after-first-record")
        await add_row(attempt_id, job, verdict.decision, (verdict.reasons or [""])[0], verdict, m)

    async def record_duplicate(job: Job, twin: same_code.Twin, code: str) -> None:
        """A candidate whose code was decided already (same_code.py): recorded, never measured."""
        placement = {"index": job.index, "ref": job.ref}
        fields = same_code.duplicate_fields(
            exp, twin, job.hypothesis, target, job.files, job.digest, code, run=run.id, batch=batch, candidate=placement, candidate_commit=job.commit
        )
        fields["commit_sha"] = job.commit
        with ledger.store.transaction():
            attempt_id = ledger.store.add_attempt(**fields)
        await add_row(attempt_id, job, "duplicate", twin.reason)

    async def add_row(attempt_id: int, job: Job, decision: str, reason: str, verdict: Verdict | None = None, m: Measurement | None = None) -> None:
        overall = verdict.overall if verdict is not None else None
        rows.append(
            CandidateRow(
                attempt=attempt_id,
                index=job.index,
                commit=job.commit[:10] or "-",
                hypothesis=job.hypothesis[:120],
                decision=decision,
                regression=verdict.regression if verdict is not None else False,
                change=overall.statement() if overall else None,
                sort_change=overall.change if overall else 0.0,
                where=m.where if m is not None else "",
                started_s=round(m.started - batch_start, 2) if m is not None and m.started else None,
                ended_s=round(m.ended - batch_start, 2) if m is not None and m.ended else None,
                reason=reason[:240],
            )
        )
        if progress is not None:
            await progress(len(rows), len(candidates), f"candidate {job.index} ({job.hypothesis[:48]}): {decision}")

    try:
        for index, cand in enumerate(candidates):
            try:
                job, refused = _prepare(ledger, exp, batch, index, cand, root)
            except InvalidInput as exc:
                job = Job(index=index, hypothesis=cand.hypothesis, commit="", ref="", subdir=exp.subdir)
                await record(job, Measurement(index=index, error=f"could not prepare the candidate: {exc.message}"))
                continue
            if refused:
                await record(job, Measurement(index=index), refused)
                continue
            code = same_code.fingerprint(repo, job.commit, exp.subdir, ledger.ws.config.harness)
            twin = same_code.find_twin(ledger, exp, repo, code, target, job.digest)
            if twin is not None and code is not None:
                await record_duplicate(job, twin, code)
            elif code is not None and code in first_with and not ledger.ws.config.harness.measure_same_code:
                twins.append((job, first_with[code], code))  # decided once the first of them is judged
            else:
                job.code = code
                if code is not None:
                    first_with.setdefault(code, job)
                jobs.append(job)
        slots = 0
        if jobs:
            try:
                with ledger.judging(exp, "experiment_evaluate_many"):
                    slots = await engine.measure(jobs, record, progress)
            except NoIdleGpu:
                await stop(ledger, exp, "no idle GPU for the whole waiting limit")
                raise
        for job, first, code in twins:
            measured = next((r for r in rows if r.index == first.index), None)
            said = f"#{measured.attempt} ({measured.decision})" if measured else "not recorded"
            reason = f"same code as candidate {first.index} of this batch, attempt {said}: measured once for both, comments and layout aside"
            await record_duplicate(job, same_code.Twin(measured.attempt if measured else None, reason), code)
    finally:
        _remove_worktrees(ledger, root)
    return await _answer(ledger, exp.tag, run, batch, engine.name, slots, rows, batch_start)


def _remove_worktrees(ledger: Ledger, root: Path) -> None:
    if root.exists():
        shutil.rmtree(root, ignore_errors=True)
    repo, _ = gitops.repo_of(ledger.ws.root)
    gitops.prune_worktrees(repo, root)


async def _answer(ledger: Ledger, tag: str, run: Run, batch: str, engine: str, slots: int, rows: list[CandidateRow], batch_start: float) -> ManyAnswer:
    """Rank the batch, and count its regressions: a batch where nothing held up counts every
    measured regression toward the stop rule; one success (or tie) breaks the run."""
    rows.sort(key=lambda r: (RANK.get(r.decision, 9), r.sort_change, r.index))
    for rank, row in enumerate(rows, 1):
        row.rank = rank
    exp = ledger.store.existing_experiment(tag)
    regressions = sum(r.regression for r in rows)
    held = any(r.decision in KEEPABLE or (r.decision == "discard" and not r.regression) for r in rows)
    count = 0 if held else exp.consecutive_regressions + regressions
    with ledger.store.transaction():
        ledger.store.update_experiment(tag, consecutive_regressions=count)
    notes = []
    if count >= STOP_AFTER_REGRESSIONS:
        await stop(ledger, ledger.store.existing_experiment(tag), f"{STOP_AFTER_REGRESSIONS} consecutive measured regressions")
        notes.append("stopped: every candidate of the recent batches regressed")
    exp = ledger.store.existing_experiment(tag)
    winners = [r for r in rows if r.decision in ("keep", "suspicious")]
    if winners:
        notes.append(f"to keep the best: experiment_keep(attempt={winners[0].attempt})")
    return ManyAnswer(
        tag=tag,
        status=exp.status,
        best_commit=exp.best_commit,
        batch=batch,
        engine=engine,
        slots=slots,
        started=time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(batch_start)),
        rows=rows,
        consecutive_regressions=exp.consecutive_regressions,
        run_id=run.id,
        notes=notes,
    )


def check_out_candidate(ledger: Ledger, exp: Experiment, attempt: Attempt) -> None:
    """Before keeping a batch candidate: put its changes into the experiment worktree.

    Refused when BEST moved since it was measured, or when the worktree holds other changes that
    were not evaluated (they are the agent's work, and only the ledger's own changes are reset)."""
    if attempt.parent_commit != exp.best_commit:
        raise InvalidInput(
            f"attempt #{attempt.id} was measured against {attempt.parent_commit[:10]}, but BEST is now {exp.best_commit[:10]}",
            hint="evaluate it again against the new BEST",
        )
    if attempt.commit_sha is None:  # recorded so only for a candidate that could not be prepared (never a keep)
        raise InvalidInput(f"attempt #{attempt.id} has no commit of its candidate", hint="evaluate the change again")
    wt = ledger.worktree(exp)
    current = ledger.candidate(exp, "check")
    if not gitops.files_between(wt, attempt.commit_sha, current):
        return
    if gitops.files_between(wt, exp.best_commit, current):
        raise InvalidInput(
            "the experiment worktree has changes that were not evaluated", hint="experiment_revert them (or evaluate them) before keeping a batch candidate"
        )
    patch = gitops.diff_between(wt, exp.best_commit, attempt.commit_sha)
    if patch:
        gitops.apply_patch(wt, patch)
