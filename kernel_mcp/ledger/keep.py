"""experiment_keep and experiment_revert.

Keep commits exactly the code that was evaluated: the candidate commit taken before its runs. The
verification (and a suspicious speedup's re-measurement) runs first, watched: if it changes kernel
sources, or the worktree no longer holds what was evaluated, nothing is kept. Then, under the
workspace lock that every server process shares, the attempt and BEST are read again, the worktree
and the protected files are checked again, and the branch is moved from BEST to the new commit
with git's compare-and-swap; the ledger records the intent (with the commit) before the move, so
a process killed in between is reconciled by the next call from the branch itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp.errors import InvalidInput
from kernel_mcp.ledger import gitops, harness, performance, recover
from kernel_mcp.ledger.core import Ledger, crash_point, figures_summary
from kernel_mcp.ledger.models import ExperimentAnswer, measured_statement
from kernel_mcp.ledger.state import Attempt, Evidence, Experiment, Verification
from kernel_mcp.ledger.store import now
from kernel_mcp.ledger.verify import remeasure, verify
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace import Run

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors


def _still_evaluated(ledger: Ledger, exp: Experiment, attempt: Attempt, when: str) -> str:
    """The worktree's candidate, refused unless it is what the attempt measured."""
    wt = ledger.worktree(exp)
    snap = ledger.candidate(exp, f"Candidate of attempt #{attempt.id}")
    # performance.md is the ledger's own record (a keep killed after writing its row is retried)
    measured = attempt.evidence.candidate_commit or attempt.commit_sha
    if measured is None:
        raise InvalidInput(f"attempt #{attempt.id} records no commit of what it measured", hint="evaluate it again before keeping")
    changed = gitops.files_between(wt, measured, snap)
    if changed:
        raise InvalidInput(f"the worktree changed {when}: {', '.join(changed[:8])}", hint="evaluate it again before keeping")
    return snap


def _close(ledger: Ledger, attempt: Attempt, evidence: Evidence, reason: str) -> None:
    """Refuse a pending attempt at keep (never one that another server kept meanwhile)."""
    with ledger.store.transaction():
        current = ledger.store.attempt(attempt.id)
        if current is not None and current.outcome == "pending":
            ledger.store.update_attempt(attempt.id, evidence=evidence, reasons=attempt.reasons + [reason], decision="refused", outcome="refused", closed=now())


async def keep(
    ledger: Ledger, run: Run, tag: str | None, why: str | None, progress: ProgressFn | None, attempt_id: int | None = None, *, vendors: Vendors
) -> ExperimentAnswer:
    exp = ledger.running(tag)
    # by default the latest attempt judged on its own: a duplicate after it quotes it, and ran nothing
    attempt = ledger.store.latest_attempt(exp.tag, except_duplicates=True) if attempt_id is None else ledger.store.attempt(attempt_id)
    if attempt_id is not None and (attempt is None or attempt.tag != exp.tag):
        raise InvalidInput(f"experiment {exp.tag} has no attempt #{attempt_id}", hint="experiment_log lists its attempts")
    attempt = _keepable(attempt)
    if attempt.evidence.batch:
        from kernel_mcp.ledger.many import check_out_candidate

        check_out_candidate(ledger, exp, attempt)
    snap = _still_evaluated(ledger, exp, attempt, "after it was evaluated")
    cfg = ledger.ws.config
    workdir = ledger.workdir(exp)
    evidence = attempt.evidence.model_copy(deep=True)
    with ledger.judging(exp, "experiment_keep's verification"):
        # the verification checks the commit that is kept, and nothing the worktree holds besides
        gitops.match_commit(ledger.worktree(exp), snap)
        async with ledger.watching(exp) as seen:
            verification = await verify(ledger.ws, run, workdir, progress, vendors=vendors)
            evidence.verification = verification
            if not verification.failed and attempt.decision == "suspicious":
                evidence.remeasured = await remeasure(ledger, exp, run, workdir, attempt, progress, vendors=vendors)
    rewritten = sorted(set(seen.edited) | set(seen.tracked))
    if rewritten:
        _close(ledger, attempt, evidence, f"refused at keep: the verification changed files of the candidate: {', '.join(rewritten[:6])}")
        raise InvalidInput(
            f"keep refused: the verification changed files of the candidate ({', '.join(rewritten[:6])}); nothing was kept",
            hint="the verification must only read the kernel and the harness; experiment_revert, then evaluate the change again",
        )
    if verification.failed:
        _close(ledger, attempt, evidence, "refused at keep: " + verification.failed)
        raise InvalidInput("keep refused: the verification set failed: " + verification.failed, hint=f"see run {run.id}")
    remeasured = evidence.remeasured
    if remeasured and not remeasured.agrees:
        _close(ledger, attempt, evidence, "refused at keep: the independent re-measurement disagrees: " + remeasured.statement)
        raise InvalidInput(
            "keep refused: the independent re-measurement (fresh processes, side by side with BEST, both orders) disagrees: " + remeasured.statement
        )
    async with ledger.lock():
        exp = ledger.store.existing_experiment(exp.tag)
        attempt = _keepable(ledger.store.attempt(attempt.id))  # another server may have kept or closed it meanwhile
        if attempt.parent_commit != exp.best_commit:
            raise InvalidInput(
                f"attempt #{attempt.id} was measured against {attempt.parent_commit[:10]}, but BEST is now {exp.best_commit[:10]}",
                hint="evaluate it again against the new BEST",
            )
        wt = ledger.worktree(exp)
        recover.clear_stale_index_lock(wt)
        snap = _still_evaluated(ledger, exp, attempt, "during the verification")
        problems = harness.violations(wt, exp.subdir, workdir, exp.protected, cfg.harness, gitops.files_between(wt, exp.best_commit, snap), ledger.outputs(exp))
        if problems:
            raise InvalidInput("keep refused, the harness is frozen: " + "; ".join(problems))
        best = ledger.store.existing_attempt(exp.best_attempt)
        message = _message(ledger, exp, attempt, best, evidence, why)
        performance.append_row(workdir, _row(ledger, attempt, evidence, why))
        sha = ledger.candidate(exp, message)
        with ledger.store.transaction():
            ledger.store.update_attempt(attempt.id, evidence=evidence)
            ledger.store.add_intent(exp.tag, "keep", attempt.id, sha)
        crash_point("keep-before-commit")
        ledger.advance(exp, sha)
        crash_point("keep-after-commit")
        with ledger.store.transaction():
            ledger.record_keep(exp, attempt.id, sha)
            ledger.store.clear_intents(exp.tag)
            if attempt.evidence.batch:  # its siblings were measured against the old BEST
                ledger.store.close_pending(exp.tag, "not kept", batch=attempt.evidence.batch)
    answer = ledger.status_answer(ledger.store.existing_experiment(exp.tag), attempt=ledger.store.attempt(attempt.id), run_id=run.id)
    measured = evidence.candidate_commit or ""
    if measured and measured != sha:
        # two ids for one keep: the code measured, and the commit BEST moves to (that code, the message and performance.md's row)
        answer.notes.append(
            f"kept as commit {sha[:10]}: the measured code (commit {measured[:10]}, named in performance.md) with this keep's message and performance.md row"
        )
    return answer


def _keepable(attempt: Attempt | None) -> Attempt:
    if attempt is not None and attempt.decision == "duplicate":
        raise InvalidInput(f"attempt #{attempt.id} ran nothing to keep: " + "; ".join(attempt.reasons[:2]))
    if attempt is None or attempt.outcome != "pending":
        raise InvalidInput(
            "nothing evaluated to keep" if attempt is None else f"attempt #{attempt.id} is already {attempt.outcome}",
            hint="call experiment_evaluate (or experiment_evaluate_many) first",
        )
    if attempt.decision not in ("keep", "suspicious"):
        raise InvalidInput(f"attempt #{attempt.id} was decided {attempt.decision}, not keep: " + "; ".join(attempt.reasons[:4]))
    return attempt


def _message(ledger: Ledger, exp: Experiment, attempt: Attempt, best: Attempt, evidence: Evidence, why: str | None) -> str:
    change = evidence.overall.change if evidence.overall else 0.0
    verification = evidence.verification or Verification()
    hashes = exp.protected
    lines = [
        attempt.hypothesis,
        "",
        why or "",
        "",
        f"Kept by kernel-mcp: {attempt.target_class or 'all classes'} {change:+.2%} against {(best.commit_sha or exp.best_commit)[:10]}.",
        *attempt.reasons,
        f"Measured: {measured_statement(evidence) or '-'}",
        f"Seeds: {', '.join(map(str, evidence.seeds))}",
        f"Verification: {verification.summary or 'none configured'}",
    ]
    if evidence.remeasured:
        lines.append(f"Re-measured (suspicious speedup): {evidence.remeasured.statement}")
    lines.append(f"Protected files (sha256, digest {harness.hashes_digest(hashes)[:16]}):")
    lines += [f"  {h[:16]} {rel}" for rel, h in list(sorted(hashes.items()))[:40]]
    return "\n".join(lines) + f"\n\n{gitops.LEDGER_MARK}: {attempt.id}\n"


def _row(ledger: Ledger, attempt: Attempt, evidence: Evidence, why: str | None) -> performance.Row:
    cfg = ledger.ws.config
    change = evidence.overall.change if evidence.overall else 0.0
    gpu = evidence.gpu_time
    remeasured = evidence.remeasured
    return performance.Row(
        commit=(evidence.candidate_commit or "")[:10],
        status="keep",
        command=" ".join(cfg.require_benchmark().command),
        target=attempt.target_class or "all",
        kernel=cfg.require_benchmark().target_kernel,
        metric=figures_summary(attempt.figures, cfg.require_benchmark().metric),
        gpu_time=f"{gpu.change:+.2%}" if gpu else "not measured (keep metric: the benchmark's timer)",
        change=f"{change:+.2%}" + (" (GPU time)" if gpu else " (benchmark timer)"),
        why=(why or attempt.hypothesis) + (f"; re-measured: {remeasured.statement}" if remeasured else ""),
    )


async def revert(ledger: Ledger, tag: str | None) -> ExperimentAnswer:
    exp = ledger.experiment(tag)
    async with ledger.lock():
        exp = ledger.store.existing_experiment(exp.tag)
        # a redirected or deleted .git pointer is written again from the repository's own record
        # before any git command runs there: revert is the way back from it
        tree = Path(exp.worktree)
        repaired = bool(gitops.pointer_problem(tree, ledger.git_dir)) and gitops.repair_worktree(ledger.git_dir, tree)
        wt = ledger.worktree(exp)
        recover.clear_stale_index_lock(wt)
        files = gitops.changed_files(wt, exp.best_commit)
        files += gitops.reset_to(wt, exp.best_commit)  # a nested .git is discarded too, and named
        attempt = ledger.store.latest_attempt(exp.tag, except_duplicates=True)
        with ledger.store.transaction():
            # a batch's candidates were measured in worktrees of their own, never in this one: resetting
            # it leaves them pending (one stays keepable by experiment_keep(attempt=...)), whichever of
            # them happened to be recorded last
            if attempt is not None and attempt.outcome == "pending" and not attempt.evidence.batch:
                ledger.store.update_attempt(attempt.id, outcome="reverted", closed=now())
    answer = ledger.status_answer(ledger.store.existing_experiment(exp.tag), attempt=ledger.store.attempt(attempt.id) if attempt else None)
    answer.notes.append(f"reset the worktree to BEST {exp.best_commit[:10]}; discarded: {', '.join(files) or 'nothing'}")
    if repaired:
        answer.notes.append("the worktree's .git pointer no longer led to this workspace's repository; it was written again first")
    return answer
