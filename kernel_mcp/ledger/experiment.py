"""Starting and ending an experiment.

Start refuses early what would fail late (no git identity to commit with, editable globs that match
no file), and is never left half-made: its record is written first, as "starting" with its owning
process, so a start killed during its baseline is cleaned up by the next start of that tag; a
start that fails removes its worktree, branch and record itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernel_mcp.bench import run_benchmark
from kernel_mcp.errors import InvalidInput, KernelMcpError, WorkspaceError
from kernel_mcp import sandbox
from kernel_mcp.ledger import gitops, harness, performance, reach, recover
from kernel_mcp.ledger.core import STOP_AFTER_REGRESSIONS, Ledger, crash_point, figures_of, figures_summary
from kernel_mcp.ledger.models import ExperimentAnswer
from kernel_mcp.ledger.store import now
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace import Run
from kernel_mcp.ledger.state import Experiment

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors


def _discard_half_made(ledger: Ledger, exp: Experiment) -> None:
    """What a start that never finished left: its worktree, its branch and its record (nothing else
    was made by it, and nothing of the user's is touched)."""
    repo, _ = gitops.repo_of(ledger.ws.root)
    recover.remove_folder(repo, ledger.ws.state_dir / "worktrees" / exp.tag)
    if gitops.branch_exists(repo, exp.branch):
        repo.git.branch("-D", exp.branch)
    with ledger.store.transaction():
        ledger.store.delete_experiment(exp.tag)


async def start(ledger: Ledger, run: Run, tag: str, carry: bool, progress: ProgressFn | None, *, vendors: Vendors) -> ExperimentAnswer:
    gitops.check_tag(tag)
    config = ledger.freeze_config()  # the rules of the whole experiment, kept in the ledger
    ws = ledger.ws
    repo, subdir = gitops.repo_of(ws.root)
    gitops.require_identity(repo)
    branch = f"kernel-opt/{tag}"
    path = ws.state_dir / "worktrees" / tag
    async with ledger.lock():
        existing = ledger.store.experiment(tag)
        if existing is not None and existing.status == "starting" and not recover.owner_alive(existing.owner):
            _discard_half_made(ledger, existing)
        elif existing is not None:
            raise InvalidInput(
                f"an experiment tagged {tag!r} exists" + (" and is still starting" if existing.status == "starting" else ""),
                hint="choose another tag, or continue it with experiment_status",
            )
        gitops.ignore_state_folder(repo, subdir)
        dirty = gitops.dirty_paths(repo)
        if dirty and not carry:
            raise WorkspaceError(
                f"the workspace has uncommitted changes: {', '.join(dirty[:8])}",
                hint="commit or stash them, or pass carry_changes=true to bring them into the experiment",
            )
        head = gitops.head_sha(repo)
        if head is None:  # repo_of saw a commit; HEAD has been moved off it since
            raise WorkspaceError("the workspace's repository has no commit at HEAD", hint="commit the kernel and its benchmark first")
        with ledger.store.transaction():
            ledger.store.add_experiment(
                tag=tag,
                branch=branch,
                worktree=str(path),
                subdir=subdir,
                base_commit=head,
                best_commit=head,
                status="starting",
                protected={},
                owner=recover.owner_token(),
                config=config,
            )
        exp = ledger.store.existing_experiment(tag)
        try:
            wt = gitops.add_worktree(repo, path, branch, head)
            carried = gitops.carry_changes(repo, wt) if dirty else []
            workdir = ledger.workdir(exp)
            harness.require_editable(wt, subdir, workdir, ws.config.harness)
            performance.ensure(workdir)
            base = gitops.commit_all(wt, f"Start experiment {tag}" + (f" (carrying {len(dirty)} uncommitted changes)" if dirty else ""))
            protected = harness.protected_hashes(wt, subdir, workdir, ws.config.harness)
            with ledger.store.transaction():
                ledger.store.update_experiment(tag, base_commit=base, best_commit=base, protected=protected)
        except BaseException:
            _discard_half_made(ledger, exp)
            raise
    exp = ledger.store.existing_experiment(tag)
    try:
        # a measurement like any evaluation's: one judge at a time in the workspace
        with ledger.judging(exp, "experiment_start's baseline"):
            async with ledger.watching(exp):
                crash_point("start-during-baseline")
                bench = await run_benchmark(ws, run, "baseline", progress=progress, cwd=workdir, vendors=vendors)
        if not bench.all_correct or bench.impossible:
            raise KernelMcpError(
                "the baseline is not correct (or not plausible), so nothing can be compared with it: " + bench.trouble(), hint=f"see run {run.id}"
            )
        exp = ledger.store.existing_experiment(tag)
        ledger.best_tree(exp)  # BEST's own worktree, ready before the first evaluation
        async with ledger.lock():
            with ledger.store.transaction():
                attempt_id = ledger.store.add_attempt(
                    tag=tag,
                    parent_commit=base,
                    commit_sha=base,
                    hypothesis="baseline",
                    figures=figures_of(bench),
                    decision="baseline",
                    outcome="kept",
                    evidence={
                        "seeds": bench.seeds,
                        "run": run.id,
                        "carried": carried,
                        "protected_digest": harness.hashes_digest(protected),
                        "keep_metric": ledger.keep_metric(vendors),
                        "candidate_commit": base,
                        "gpu": bench.gpu,
                        "floor_of": bench.floor_of,
                        "floor_note": bench.floor_note,
                    },
                    closed=now(),
                )
            cfg = ws.config.require_benchmark()
            performance.append_row(
                workdir,
                performance.Row(
                    commit=base[:10],
                    status="baseline",
                    command=" ".join(cfg.command),
                    target="all",
                    kernel=cfg.target_kernel,
                    metric=figures_summary(bench.by_key(), bench.metric),
                    gpu_time="-",
                    change="-",
                    why="unmodified code",
                ),
            )
            sha = ledger.candidate(exp, f"Baseline of experiment {tag}\n\n{gitops.LEDGER_MARK}: {attempt_id}\n")
            ledger.advance(exp, sha)
            with ledger.store.transaction():
                ledger.store.update_attempt(attempt_id, commit_sha=sha)
                ledger.store.update_experiment(tag, best_commit=sha, best_attempt=attempt_id, status="running", owner=None)
    except BaseException:
        async with ledger.lock():
            _discard_half_made(ledger, ledger.store.experiment(tag) or exp)
        raise
    answer = ledger.status_answer(ledger.store.existing_experiment(tag), run_id=run.id)
    answer.notes += reach.describe(reach.reaching_files(workdir, harness.workspace_files(wt, subdir), ws.config.harness))
    answer.notes.append(
        f"every run is sealed: {sandbox.mechanism()}"
        if sandbox.available() is None
        else f"runs are UNSEALED here ({sandbox.available()}): nothing is kept unless [harness] allow_unsealed = true"
    )
    return answer


async def stop(ledger: Ledger, exp: Experiment, reason: str, status: str = "stopped") -> None:
    """A stop condition, or the user's end: back to BEST, the stop summary into performance.md, committed."""
    async with ledger.lock():
        exp = ledger.store.existing_experiment(exp.tag)
        wt = ledger.worktree(exp)
        recover.clear_stale_index_lock(wt)
        gitops.reset_to(wt, exp.best_commit)
        recent = [a for a in ledger.store.attempts(exp.tag, 50) if a.regression][:STOP_AFTER_REGRESSIONS]
        kept = [a for a in ledger.store.attempts(exp.tag, 1000, "kept")]
        performance.append_stop(ledger.workdir(exp), reason, exp, recent, kept)
        sha = ledger.candidate(exp, f"{'End' if status == 'ended' else 'Stop'} experiment {exp.tag}: {reason}\n")
        ledger.advance(exp, sha)
        with ledger.store.transaction():
            ledger.store.close_pending(exp.tag, "not kept (the experiment " + status + ")")
            ledger.store.update_experiment(exp.tag, status=status, stop_reason=reason, best_commit=sha)


async def end(ledger: Ledger, tag: str | None, reason: str) -> ExperimentAnswer:
    """The user's or agent's end of an experiment: refused while the worktree holds changes that were
    never evaluated (they would be lost); otherwise the stop summary is written and committed."""
    exp = ledger.running(tag)
    wt = ledger.worktree(exp)
    snap = ledger.candidate(exp, "end check")
    files = gitops.files_between(wt, exp.best_commit, snap)
    latest = ledger.store.latest_attempt(exp.tag)
    measured = latest.evidence.candidate_commit if latest else None
    # the same test as keep's: nothing differs from the code the latest attempt measured
    if files and not (measured and not gitops.files_between(wt, measured, snap)):
        raise InvalidInput(
            f"the worktree holds changes that were never evaluated: {', '.join(files[:8])}",
            hint="experiment_evaluate them, or experiment_revert to discard them, then end the experiment",
        )
    await stop(ledger, exp, reason, status="ended")
    return ledger.status_answer(ledger.store.existing_experiment(exp.tag))
