"""experiment_evaluate: the worktree's change, measured side by side with BEST and judged.

The candidate is what the worktree holds when the evaluation starts, taken as a commit (the runs'
outputs left out): that commit is what is measured, recorded and, if kept, committed. Kernel
sources that change while the runs go on (a benchmark that writes them, an edit during the runs)
make the measurement void, and the attempt is refused with the files named. A candidate whose code
is BEST's, or an earlier attempt's judged against this BEST, is decided from that without a run
(same_code.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_mcp.gpu.gate import NoIdleGpu
from kernel_mcp.ledger import gitops, harness, reach, same_code, spent
from kernel_mcp.ledger.core import STOP_AFTER_REGRESSIONS, Ledger, crash_point, figures_of
from kernel_mcp import sandbox
from kernel_mcp.bench.stats import mean_interval
from kernel_mcp.ledger.decide import KEEPABLE, Verdict, decide
from kernel_mcp.ledger.experiment import stop
from kernel_mcp.ledger.models import ExperimentAnswer
from kernel_mcp.ledger.paired import Together, measure_together, pair_walls
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace import Run
from kernel_mcp.ledger.state import Experiment, attempt_head

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors


def judge(ledger: Ledger, together: Together, target: str | None, prev_dir: int, repairs: int, keep_metric: str) -> Verdict:
    """The keep/discard rule for a candidate measured side by side with BEST."""
    cand = together.candidate
    if together.tampered:
        return Verdict(decision="refused", reasons=["the evaluation is void: " + p for p in together.tampered[:4]], comparisons={})
    if cand is None:
        return Verdict(decision="failed", reasons=[together.stopped or "nothing was measured"], comparisons={})
    best_prof, cand_prof = together.best_profile.get("profile"), together.candidate_profile.get("profile")
    launch = harness.launch_problems(best_prof, cand_prof) if best_prof and cand_prof else []
    if launch:
        return Verdict(decision="refused", reasons=["the profiler's dispatch list: " + p for p in launch], comparisons={})
    cfg = ledger.ws.config
    bench_cfg = cfg.require_benchmark()
    verdict = decide(
        cand,
        together.comparisons,
        together.script,
        target,
        bench_cfg.noise_threshold,
        prev_dir,
        repairs,
        together.gpu_time,
        cfg.harness.suspicious_factor,
        bench_cfg.severe_threshold,
    )
    if keep_metric == "profiler" and together.gpu_time is None and verdict.decision in KEEPABLE:
        # The profiler is the keep metric but measured nothing usable: never fall back silently.
        return Verdict(
            decision="failed",
            reasons=verdict.reasons + ["the profiler is the keep metric but gave no target GPU time: " + together.stopped],
            comparisons=verdict.comparisons,
            overall=verdict.overall,
        )
    return sealed_and_witnessed(verdict, together, cfg.harness.allow_unsealed, cfg.harness.metric_seconds)


CLAIMED_SHARE = 0.5  # the share of the claimed saving the wall time must at least show


def witnessed(witness, claimed: float) -> bool:
    """Whether the server's witness stands behind a claimed change: it saw the candidate faster too;
    or the claim is within what it can resolve (half its interval's width), so it cannot speak; or
    its interval still reaches half the claimed saving. Refused only where it shows significantly
    less than that: a witness that resolves the claim but falls just short of significance is no
    evidence against an honest gain (a real 0.5% gain was refused so, at random, on a quiet machine),
    while a timer that reports a gain the runs never had leaves the interval far from it."""
    if witness is None or witness.low is None or witness.high is None:
        return False
    if witness.significant and witness.change < 0:
        return True
    if abs(claimed) <= (witness.high - witness.low) / 2:
        return True
    return claimed < 0 and witness.low <= claimed * CLAIMED_SHARE


def shortfall(claimed: list[float], seen: list[float], whose: str) -> str | None:
    """Why the runs' wall times contradict a claimed saving per pair (seconds), or None: where they
    shrank by significantly less than CLAIMED_SHARE of it."""
    if len(claimed) < 2:
        return None
    _, _, high = mean_interval([s - c * CLAIMED_SHARE for c, s in zip(claimed, seen)])
    if high is None or high >= 0:
        return None
    saw, low_saw, high_saw = mean_interval(seen)
    assert low_saw is not None and high_saw is not None  # two or more pairs
    return (
        f"{whose} claim at least {sum(claimed) / len(claimed) * 1e3:.3g} ms less work per run, but the runs' wall time as the "
        f"server measured it shrank by {saw * 1e3:.3g} ms (95% interval {low_saw * 1e3:.3g} to {high_saw * 1e3:.3g} ms), "
        f"significantly less than {CLAIMED_SHARE:.0%} of the claim"
    )


def unseen_kernel_saving(together: Together) -> str | None:
    """The same test for GPU time a kernel tracer recorded inside the runs: the kernels' summed time
    saved per pair against the runs' wall times (a benchmark waits for its kernels)."""
    kernels: dict[int, dict[str, float]] = {}
    for r in together.runs:
        if r.kind == "benchmark" and r.kernel_us is not None:
            kernels.setdefault(r.pair, {})[r.side] = r.kernel_us
    claimed, seen = [], []
    for pair, wall in pair_walls(together.runs):
        if len(k := kernels.get(pair, {})) == 2:
            claimed.append((k["best"] - k["candidate"]) / 1e6)
            seen.append(wall["best"] - wall["candidate"])
    return shortfall(claimed, seen, "the kernel trace's records")


def unseen_saving(together: Together, metric_seconds: float) -> str | None:
    """Why the runs' wall times contradict the benchmark's own figures, or None. Each class figure is
    the time of at least one call (as the roofline floor reads it, `metric_seconds` per unit), so a
    run of the candidate takes at least the sum of its classes' gains less time than BEST's run in the
    same pair. A witness that saw significantly less than half that saved was shown a faster clock,
    not a faster kernel: the half keeps an honest benchmark whose figures are all of its timed work
    (claim and saving equal, so a one-sided test at the claim itself would refuse one in forty)
    clear of the edge, while a clock that reports a fraction of the time is still caught."""
    best, cand = together.best, together.candidate
    if best is None or cand is None:
        return None
    best_k, cand_k = best.by_key(), cand.by_key()
    keys = [k for k in cand_k if k in best_k]
    claimed, seen = [], []
    for pair, wall in pair_walls(together.runs):
        i = pair - 1
        if any(i >= len(best_k[k].samples) or i >= len(cand_k[k].samples) for k in keys):
            continue
        claimed.append(sum(best_k[k].samples[i] - cand_k[k].samples[i] for k in keys) * metric_seconds)
        seen.append(wall["best"] - wall["candidate"])
    return shortfall(claimed, seen, "its own figures")


def sealed_and_witnessed(verdict: Verdict, together: Together, allow_unsealed: bool, metric_seconds: float) -> Verdict:
    """A claimed gain stands only when the runs were sealed (or the user opted in to unsealed keeps)
    and, where the benchmark's own timer is the keep metric, when the server's witness (each run's
    wall time) saw the candidate faster too: a timer the candidate's code can reach proves nothing."""
    if verdict.decision not in KEEPABLE:
        return verdict
    if together.sealed is None and not allow_unsealed:
        unsealed = sandbox.available() or "a run of this evaluation was not sealed"
        return verdict.model_copy(
            update={
                "decision": "refused",
                "reasons": verdict.reasons
                + [
                    f"unsealed: {unsealed}; the candidate's processes could reach BEST and the ledger, so nothing is kept "
                    "(set [harness] allow_unsealed = true to keep unsealed measurements)"
                ],
            }
        )
    if verdict.decision not in ("keep", "suspicious"):
        return verdict  # a split is not kept itself (its specialised kernel is evaluated, and witnessed, on its own)
    if together.gpu_time is not None and together.kernel_trace:
        # recorded inside the candidate's processes: its code can reach the records
        unseen = unseen_kernel_saving(together)
        if unseen is None:
            return verdict
        reason = f"{unseen}; the kernel tracer runs inside the benchmark's processes, and the candidate's code can reach its records"
        return verdict.model_copy(update={"decision": "not-corroborated", "regression": False, "reasons": verdict.reasons + ["not corroborated: " + reason]})
    if together.gpu_time is not None:
        return verdict  # the profiler's kernel time is measured outside the candidate's processes
    witness = together.witness
    why: str | None
    if not witnessed(witness, verdict.overall.change if verdict.overall is not None else 0.0):
        seen = witness.statement() if witness is not None else "not measured"
        why = (
            f"the runs' wall time as the server measured it: {seen}; the benchmark's own timer is the only evidence of the gain, and the "
            "candidate's code can reach it. Not kept: use the profiler keep metric, or a benchmark whose timed work dominates its run"
        )
    else:
        impossible = unseen_saving(together, metric_seconds)
        why = f"{impossible}; the benchmark's own timer is the only evidence of the rest, and the candidate's code can reach it" if impossible else None
    if why:
        return verdict.model_copy(update={"decision": "not-corroborated", "regression": False, "reasons": verdict.reasons + ["not corroborated: " + why]})
    if witness is not None and not witness.significant:
        return verdict.model_copy(
            update={
                "reasons": verdict.reasons
                + [f"the witness (wall time per run, {witness.statement()}) cannot resolve a change this small; kept on the benchmark's timer"]
            }
        )
    return verdict


def attempt_fields(
    exp: Experiment,
    together: Together,
    verdict: Verdict,
    hypothesis: str,
    target: str | None,
    files: list[str],
    digest: str,
    repairs: int,
    run_id: str,
    keep_metric: str,
    **extra_evidence: Any,
) -> dict[str, Any]:
    """One attempt row, as evaluate and evaluate_many record it."""
    bench = together.candidate
    return dict(
        **attempt_head(exp, hypothesis, target, files, digest),
        figures=figures_of(bench) if bench else {},
        comparisons={k: v.model_dump() for k, v in verdict.comparisons.items()},
        decision=verdict.decision,
        reasons=verdict.reasons,
        regression=int(verdict.regression),
        repair_count=repairs if verdict.decision == "repair-needed" else 0,
        outcome="pending",
        evidence={
            "seeds": bench.seeds if bench else [],
            "run": run_id,
            "direction": verdict.direction,
            "overall": verdict.overall.model_dump() if verdict.overall else None,
            "gpu_time": together.gpu_time.model_dump() if together.gpu_time else None,
            "impossible": bench.impossible if bench else [],
            "keep_metric": keep_metric,
            "source": together.source,
            "pairs": together.pairs,
            "profiler_pairs": together.profiler_pairs,
            "stopped": together.stopped,
            "wall_s": round(together.wall_s, 2),
            "clocks": together.clocks.model_dump() if together.clocks else None,
            "best_figures": figures_of(together.best) if together.best else {},
            "runs": [r.model_dump() for r in together.runs],
            "profile": together.candidate_profile.get("profile"),
            "sealed": together.sealed,
            "witness": together.witness.model_dump() if together.witness else None,
            "tampered": together.tampered,
            "spent": spent_so_far.model_dump() if (spent_so_far := spent.so_far(together.time_spent)) else None,
            "kernel_trace": together.kernel_trace,
            "kernel_trace_note": together.kernel_trace_note,
            "gpu": bench.gpu if bench else None,
            "floor_of": bench.floor_of if bench else None,
            "floor_note": bench.floor_note if bench else None,
            "forked": bench.forked if bench else None,
            "verdicts": {v.key: v.outcome for v in verdict.classes},
            **extra_evidence,
        },
    )


async def evaluate(
    ledger: Ledger, run: Run, hypothesis: str, target: str | None, tag: str | None, progress: ProgressFn | None, *, vendors: Vendors
) -> ExperimentAnswer:
    with spent.tally():
        return await _evaluate(ledger, run, hypothesis, target, tag, progress, vendors=vendors)


async def _evaluate(
    ledger: Ledger, run: Run, hypothesis: str, target: str | None, tag: str | None, progress: ProgressFn | None, *, vendors: Vendors
) -> ExperimentAnswer:
    exp = ledger.running(tag)
    wt = ledger.worktree(exp)
    workdir = ledger.workdir(exp)
    best = exp.best_commit
    snap = ledger.candidate(exp, f"Candidate: {hypothesis}\n\nMeasured against BEST {best[:10]} (experiment {exp.tag})\n")
    files = gitops.files_between(wt, best, snap)
    digest = gitops.tree_of(wt, snap)
    previous = ledger.store.latest_attempt(exp.tag, except_duplicates=True)
    outputs = ledger.outputs(exp)
    problems = harness.violations(wt, exp.subdir, workdir, exp.protected, ledger.ws.config.harness, files, outputs)
    if problems:
        return await _record(
            ledger,
            exp,
            run,
            snap,
            dict(
                **attempt_head(exp, hypothesis, target, files, digest),
                decision="refused",
                reasons=["the harness is frozen: " + p for p in problems],
                outcome="pending",
                evidence={"candidate_commit": snap},
            ),
            None,
        )
    code = same_code.fingerprint(wt, snap, exp.subdir, ledger.ws.config.harness)
    twin = same_code.find_twin(ledger, exp, wt, code, target, digest)
    if twin is not None and code is not None:
        fields = same_code.duplicate_fields(exp, twin, hypothesis, target, files, digest, code, candidate_commit=snap, run=run.id)
        return await _record(ledger, exp, run, snap, fields, None, supersede=False)
    repairs = previous.repair_count + 1 if previous and previous.decision == "repair-needed" and previous.hypothesis == hypothesis else 0
    keep_metric = ledger.keep_metric(vendors)
    try:
        with ledger.judging(exp, "experiment_evaluate"):
            # what runs is the commit and nothing else: what is kept is the commit
            removed = gitops.match_commit(wt, snap)
            async with ledger.watching(exp) as seen:
                crash_point("evaluate-during-runs")
                best_dir = ledger.best_tree(exp)
                together = await measure_together(
                    ledger.ws,
                    run,
                    best_dir,
                    workdir,
                    keep_metric,
                    target,
                    progress,
                    label=hypothesis[:60],
                    vendors=vendors,
                    guard=ledger.guard(exp, best_dir, Path(exp.worktree), workdir),
                )
    except NoIdleGpu:
        await stop(ledger, exp, "no idle GPU for the whole waiting limit")
        raise
    # Candidates of a batch are siblings, not a line of changes: "twice in a row" skips them.
    in_line = previous and previous.decision in ("discard", "keep", "suspicious") and not previous.evidence.batch
    prev_dir = previous.evidence.direction if previous is not None and in_line else 0
    verdict = judge(ledger, together, target, prev_dir, repairs, keep_metric)
    if seen.edited:
        verdict = Verdict(
            decision="refused",
            comparisons=verdict.comparisons,
            overall=verdict.overall,
            reasons=[
                f"kernel sources changed while they were measured: {', '.join(seen.edited[:6])} "
                "(the benchmark writes them, or they were edited during the runs): what ran is not what would be kept"
            ],
        )
    timing = reach.timing_symbols(gitops.diff_between(wt, best, snap))
    if timing:
        named = ", ".join(sorted({f"{t.symbol} ({t.file}:{t.line})" for t in timing}))[:400]
        verdict = verdict.model_copy(update={"reasons": verdict.reasons + [f"the change defines or wraps timing functions: {named}"]})
    fields = attempt_fields(
        exp,
        together,
        verdict,
        hypothesis,
        target,
        files,
        digest,
        repairs,
        run.id,
        keep_metric,
        candidate_commit=snap,
        timing_symbols=sorted({t.symbol for t in timing}),
        removed_before_runs=removed[:200],
        code_fingerprint=code,
    )
    answer = await _record(ledger, exp, run, snap, fields, verdict)
    answer.notes.append(measured_as_committed(snap, removed))
    return answer


def measured_as_committed(snap: str, removed: list[str]) -> str:
    """The answer's word on what ran: the candidate's commit, and what was removed to make it so."""
    shown = ", ".join(removed[:8]) + (f" (and {len(removed) - 8} more)" if len(removed) > 8 else "")
    return f"measured exactly the candidate's commit {snap[:10]}: " + (
        f"files it does not hold (ignored or uncommitted) were removed from the worktree first: {shown}" if removed else "the worktree held no file outside it"
    )


async def _record(
    ledger: Ledger, exp: Experiment, run: Run, snap: str, fields: dict[str, Any], verdict: Verdict | None, supersede: bool = True
) -> ExperimentAnswer:
    """The attempt in one transaction: earlier pending attempts are superseded by it (unless it is a
    duplicate, which measured nothing to take their place), and the run of consecutive regressions
    is counted."""
    with ledger.store.transaction():
        if supersede:
            ledger.store.close_pending(exp.tag, "superseded")
        attempt_id = ledger.store.add_attempt(**fields)
        count = exp.consecutive_regressions
        if verdict is not None:
            if verdict.regression:
                count += 1
            elif verdict.decision != "repair-needed":
                count = 0  # a tie, a failure or an improvement breaks the run of regressions
        ledger.store.update_experiment(exp.tag, consecutive_regressions=count)
    repo, _ = gitops.repo_of(ledger.ws.root)
    gitops.pin(repo, f"refs/kernel-mcp/{exp.tag}/attempt-{attempt_id}", snap)  # the measured code stays reachable
    if count >= STOP_AFTER_REGRESSIONS:
        await stop(ledger, exp, f"{STOP_AFTER_REGRESSIONS} consecutive measured regressions")
    return ledger.status_answer(ledger.store.existing_experiment(exp.tag), attempt=ledger.store.attempt(attempt_id), run_id=run.id)
