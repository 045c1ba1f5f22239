"""BEST and a candidate measured together, in pairs of fresh runs.

A GPU's speed drifts over minutes (clocks, temperature, power): BEST measured once at the start of
an experiment is not what the same code measures ten minutes later, and a candidate judged
against that stale figure can win or lose by drift alone. So every evaluation measures both, on
the same GPU lease, in pairs of fresh processes, alternating the order (A B, B A, A B, ...) so a
steady drift and an order effect both cancel; the decision rests on the pairs' ratios, and the
noise figure comes from the same pairs (bench/stats.py `paired`).

The number of pairs adapts: after `min_pairs`, measuring stops as soon as the outcome is clear
(the interval holds neither -threshold nor +threshold); while it stays close to the threshold,
pairs are added up to `max_pairs`. A candidate run that fails, is wrong or is impossible ends the
measurement at once (more runs cannot change that verdict). Both builds are made before any timed
run when the workspace names a `build_command`.

Around every run the GPU's clock and temperature are sampled (when a monitor is there), so the
answer can say whether clocks moved during the evaluation and whether they were locked.

With the profiler keep metric, the kernels' GPU time comes, where the platform has a kernel tracer
(CUDA: CUPTI activity records), from the same benchmark runs: each run records its kernels' start and
end as the GPU stamps them, with no replay, so a decision costs about what a decision on the
benchmark's own timer costs (ncu's profiled runs of their own cost 1.3-3x a run each, on top of the
benchmark pairs). The tracer runs inside the benchmark's processes, where the candidate's code can
reach it, so a gain it reports needs the witness too (evaluate.py). Without a tracer, or with
`[harness] kernel_times = "profiler"`, the profiler measures pairs of runs of its own after the
benchmark pairs, outside the candidate's processes.

Every run is sealed (sandbox.py): each side may write only its own tree and a private folder of
its own for this evaluation (temporary files, compiler and framework caches), and the trees are
checked around every run (guard.py). Each run's wall time, measured by the server, is the witness
that the benchmark's own timer cannot reach.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel

from kernel_mcp import runner, sandbox
from kernel_mcp.bench import BenchRun, run_benchmark, worse
from kernel_mcp.bench.stats import Comparison, clear_of, geomean, median, paired
from kernel_mcp.errors import BackendMissing, CommandFailed, KernelMcpError
from kernel_mcp.forked_runs import ForkServers, servers_for
from kernel_mcp.gpu import gate
from kernel_mcp.ledger import spent
from kernel_mcp.ledger.decide import matches, unsettled_classes
from kernel_mcp.ledger.guard import TreeGuard
from kernel_mcp.ledger.spent import Spent
from kernel_mcp.models.gpu import GpuSample
from kernel_mcp.runner import ProgressFn
from kernel_mcp.untrusted import inline
from kernel_mcp.workspace import Run, Workspace

if TYPE_CHECKING:
    from kernel_mcp.models.platform import KernelTracer, Vendors

Side = Literal["best", "candidate"]
CLOCK_MOVED = 0.03  # an SM clock range wider than this share of its top counts as "moved"
BETWEEN_RUNS_S = 1.0  # a sample this recent, taken after the previous run, is the next run's "before"


class RunRecord(BaseModel):
    side: Side
    pair: int
    kind: Literal["benchmark", "profiler"]
    started: float
    ended: float
    before: GpuSample | None = None
    after: GpuSample | None = None
    value: float | None = None  # the run's overall figure (geomean of target classes, or total GPU time in µs)
    wall_s: float | None = None  # the run's wall time as the server measured it (the witness)
    kernel_us: float | None = None  # every kernel's GPU time in the run, as the kernel tracer recorded it


class Clocks(BaseModel):
    """How the GPU ran during one evaluation."""

    locked: str  # "free-running", "locked by ncu (--clock-control base)", the AMD mode statement, or "unknown"
    sm_clock_mhz: tuple[float, float] | None = None  # lowest and highest sampled
    temperature_c: tuple[float, float] | None = None
    moved: bool = False

    def statement(self) -> str:
        parts = [f"clocks {self.locked}"]
        if self.sm_clock_mhz:
            lo, hi = self.sm_clock_mhz
            parts.append(f"SM clock {lo:.0f}-{hi:.0f} MHz" + (" (moved during the evaluation; the pairs cancel it)" if self.moved else " (steady)"))
        if self.temperature_c:
            parts.append(f"{self.temperature_c[0]:.0f}-{self.temperature_c[1]:.0f} °C")
        return "; ".join(parts)


class Together(BaseModel):
    """BEST and the candidate as measured side by side in one evaluation."""

    best: BenchRun | None = None
    candidate: BenchRun | None = None
    comparisons: dict[str, Comparison] = {}  # per config class, paired
    script: Comparison | None = None  # the target classes together (geomean), the benchmark's own metric
    gpu_time: Comparison | None = None  # the profiler's total target GPU time, paired
    pairs: int = 0
    profiler_pairs: int = 0
    stopped: str = ""
    runs: list[RunRecord] = []
    clocks: Clocks | None = None
    wall_s: float = 0.0
    best_profile: dict[str, Any] = {}  # the last profile of each side (launch checks, evidence)
    candidate_profile: dict[str, Any] = {}
    witness: Comparison | None = None  # the benchmark runs' wall times, paired: what the server saw, not the benchmark's timer
    sealed: str | None = None  # the boundary every run had; None when any ran unsealed
    tampered: list[str] = []  # changes outside a run's own tree and scratch (guard.py): the evaluation is void
    kernel_trace: str | None = None  # the tracer that recorded the GPU time inside the benchmark runs
    kernel_trace_note: str | None = None  # why the profiler measured runs of its own instead
    time_spent: Spent | None = None  # where the evaluation's time went

    @property
    def source(self) -> str:
        if self.gpu_time is not None and self.kernel_trace:
            return f"GPU kernel time recorded in the benchmark runs by {self.kernel_trace} ({self.profiler_pairs} pairs)"
        if self.gpu_time is not None:
            return f"profiler GPU kernel time ({self.profiler_pairs} pairs of profiled runs)"
        return f"the benchmark's own timer ({self.pairs} pairs of runs)"


def target_keys(run: BenchRun, target: str | None) -> list[str]:
    return [c.key for c in run.classes if matches(c.key, target)]


def run_value(run: BenchRun, keys: list[str]) -> float | None:
    """One run's figure for the target classes: the geometric mean of their metric."""
    figures = run.by_key()
    values = [figures[k].samples[-1] for k in keys if k in figures and figures[k].samples]
    return geomean(values) if len(values) == len(keys) and keys else None


def profile_total_us(prof: dict[str, Any], best_prof: dict[str, Any] | None) -> float | None:
    """Target GPU time of one profiled run: per (kernel, grid) group the median dispatch time times
    the dispatches, summed; a candidate's new non-target kernels (absent from BEST's profile) count too."""
    from kernel_mcp.ledger.harness import new_kernels_ns

    groups = prof.get("dispatches") or {}
    counts = prof.get("dispatch_counts") or {g: len(v) for g, v in groups.items()}
    total_ns = sum(median(v) * counts.get(g, len(v)) for g, v in groups.items() if v)
    if best_prof is not None and prof.get("profile") and best_prof.get("profile"):
        total_ns += new_kernels_ns(best_prof["profile"], prof["profile"])
    return total_ns / 1e3 if total_ns > 0 else None


def merge_runs(runs: list[BenchRun], label: str | None) -> BenchRun | None:
    """One side's single-run benchmarks as one BenchRun (a sample per run, in pair order)."""
    if not runs:
        return None
    merged = runs[0].model_copy(deep=True)
    merged.label = label
    for other in runs[1:]:
        figures = other.by_key()
        for c in merged.classes:
            if c.key in figures:
                o = figures[c.key]
                c.samples += o.samples
                c.correct = c.correct and o.correct
                c.failing_rows = max(c.failing_rows, o.failing_rows)
                c.worst_error = worse(c.worst_error, o.worst_error)  # may be text ("NaN"): never max() it
        merged.seeds += other.seeds
        merged.repeats += other.repeats
        merged.impossible += other.impossible
        merged.duration_s += other.duration_s
        merged.failure = merged.failure or other.failure
        merged.wall_s += other.wall_s
        merged.sealed = merged.sealed if merged.sealed == other.sealed else None
    return merged


def unusable(bench: BenchRun) -> bool:
    return bool(bench.failure) or not bench.all_correct or bool(bench.impossible)


Sampler = Callable[[Any], Awaitable[GpuSample | None]]


async def _build(ws: Workspace, run: Run, folder: Path, side: Side, lease: gate.Lease, boundary: sandbox.Boundary) -> runner.RunResult | None:
    """The side's build, when the workspace names one."""
    cfg = ws.config.require_benchmark()
    if not cfg.build_command:
        return None
    with spent.timing("builds", count=True):
        return await runner.run(
            cfg.build_command, cwd=folder, timeout_s=cfg.timeout_s, env=lease.env, log_dir=run.folder, log_name=f"build-{side}", boundary=boundary
        )


class Guarded:
    """The guard's checks around one run; what voids the evaluation goes into the answer. Without a
    guard (a Ray worker's copy, whose state folder lies inside the candidate's tree) none."""

    def __init__(self, guard: TreeGuard | None, out: Together) -> None:
        self.guard, self.out = guard, out

    def before(self, side: Side) -> bool:
        if self.guard is None:
            return True
        with spent.timing("tree checks"):
            return self._void(self.guard.before(side))

    def after(self, side: Side) -> bool:
        if self.guard is None:
            return True
        with spent.timing("tree checks"):
            return self._void(self.guard.after(side))

    def _void(self, fine: bool) -> bool:
        if not fine and self.guard is not None:
            self.out.tampered = list(self.guard.problems)
            self.out.stopped = "the evaluation is void: " + self.out.tampered[0]
        return fine


async def measure_together(
    ws: Workspace,
    run: Run,
    best_dir: Path,
    cand_dir: Path,
    keep_metric: str,
    target: str | None,
    progress: ProgressFn | None = None,
    lease: gate.Lease | None = None,
    label: str = "candidate",
    slot_env: dict[str, str] | None = None,
    sampler: Sampler | None = None,
    guard=None,
    *,
    vendors: Vendors,
) -> Together:
    """Measure BEST (in `best_dir`) and the candidate (in `cand_dir`) in alternating pairs on one GPU,
    each side sealed to its own tree and private folder; `guard` (guard.TreeGuard) checks the trees
    around every run; `vendors` says what gates, samples, pins and profiles here."""
    folders = {"best": best_dir, "candidate": cand_dir}
    out = Together()
    with spent.tally() as used:
        out = await _measure(ws, run, folders, keep_metric, target, progress, lease, label, slot_env, sampler, guard, vendors, out)
    out.time_spent = used
    return out


async def _measure(ws, run, folders, keep_metric, target, progress, lease, label, slot_env, sampler, guard, vendors: Vendors, out: Together) -> Together:
    cfg = ws.config
    threshold, severe = cfg.require_benchmark().noise_threshold, cfg.require_benchmark().severe_threshold
    lo_pairs, hi_pairs = cfg.harness.min_pairs, cfg.harness.max_pairs
    started_all = time.monotonic()
    raw_sample = sampler or gpu_sampler(ws, vendors)
    last: list[tuple[float, GpuSample | None]] = []

    async def sample(gpu, reuse_s: float = 0.0) -> GpuSample | None:
        """A GPU sample; with `reuse_s`, the last one when it is that recent (the sample after one
        run stands for the one before the next: a monitor call costs about 0.1 s, 4% of a decision)."""
        if reuse_s and last and time.monotonic() - last[0][0] <= reuse_s:
            return last[0][1]
        with spent.timing("GPU samples"):
            value = await raw_sample(gpu)
        last[:] = [(time.monotonic(), value)]
        return value

    require_gpu = vendors.needs_gpu(ws)
    checks = Guarded(guard, out)
    tracer = await _kernel_tracer(ws, out, vendors) if keep_metric == "profiler" else None
    key = f"{run.id}-{secrets.token_hex(3)}"  # several measurements of one run (a batch's slots) stay apart
    with ExitStack() as stack:
        with spent.timing("sealing"):
            sides = {side: stack.enter_context(ws.sealed_side(folders[side], f"{key}-{side}")) for side in ("best", "candidate")}
        async with gate.use(cfg.gate, str(folders["candidate"]), progress, require_gpu=require_gpu, lease=lease, vendors=vendors) as held:
            builds: list[runner.RunResult] = []
            for side in ("best", "candidate"):
                if not checks.before(side):
                    return _finish(ws, out, started_all, keep_metric, held, vendors)
                build = await _build(ws, run, folders[side], side, held, sides[side])
                builds += [build] if build else []
                failed = f"the build of {side} {build.status()}: {build.stderr.tail.strip()[-300:]}" if build and not build.ok else None
                if not checks.after(side):
                    return _finish(ws, out, started_all, keep_metric, held, vendors)
                if failed and side == "best":
                    raise CommandFailed(inline(failed), hint=f"BEST itself does not build; see run {run.id}")  # quotes the build's output
                if failed:
                    out.candidate = _failed_bench(ws, label, failed, held)
                    out.stopped = "the candidate's build failed"
                    return _finish(ws, out, started_all, keep_metric, held, vendors)
            lock_note = await _lock_clocks(ws, held, vendors)
            bench_cfg = cfg.require_benchmark()
            # with [benchmark] preload: one fork server per side for all its runs (forked_runs.py)
            forks = servers_for(bench_cfg.command, bench_cfg.preload, run.folder)
            try:
                await _bench_pairs(
                    ws,
                    run,
                    folders,
                    held,
                    out,
                    label,
                    target,
                    threshold,
                    severe,
                    lo_pairs,
                    hi_pairs,
                    progress,
                    slot_env,
                    sample,
                    sides,
                    checks,
                    vendors,
                    needs_witness=keep_metric != "profiler",
                    tracer=tracer,
                    forks=forks,
                )
                cand = out.candidate
                if keep_metric == "profiler" and tracer is None and cand is not None and not unusable(cand) and not out.tampered:
                    await _profile_pairs(ws, run, folders, held, out, threshold, lo_pairs, hi_pairs, progress, sample, sides, checks, vendors)
            finally:
                if forks is not None:
                    await forks.close()
                await _unlock_clocks(ws, held, lock_note, vendors)
            seals = [b.sealed for b in builds] + [b.sealed for b in (out.best, out.candidate) if b is not None]
            out.sealed = seals[0] if seals and all(s == seals[0] for s in seals) else None
            return _finish(ws, out, started_all, keep_metric, held, vendors, lock_note)


async def _bench_pairs(
    ws,
    run,
    folders,
    held,
    out: Together,
    label,
    target,
    threshold,
    severe,
    lo_pairs,
    hi_pairs,
    progress,
    slot_env,
    sample,
    boundaries: dict[str, sandbox.Boundary],
    checks: Guarded,
    vendors: Vendors,
    needs_witness: bool = True,
    tracer: KernelTracer | None = None,
    forks: ForkServers | None = None,
) -> None:
    """Pairs of benchmark runs until the outcome is clear; a gain on the benchmark's own timer (the
    keep metric) is clear only once the witness has seen it too, or the pairs run out. With a
    `tracer`, each run also records its kernels' GPU time, the keep metric then."""
    sides: dict[str, list[BenchRun]] = {"best": [], "candidate": []}
    traced = Traced(ws, run, vendors, tracer, out) if tracer is not None else None
    if forks is not None:
        first = {s: traced.prepare(s, 0, slot_env, boundaries[s]) if traced else (slot_env, boundaries[s]) for s in ("best", "candidate")}
        with spent.timing("fork server starts"):
            await forks.start_all([(folders[s], first[s][1], s, first[s][0]) for s in ("best", "candidate")], ws.config.require_benchmark().timeout_s)
    for pair in range(hi_pairs):
        order: tuple[Side, Side] = ("best", "candidate") if pair % 2 == 0 else ("candidate", "best")
        for side in order:
            if progress is not None:
                await progress(pair, hi_pairs, f"pair {pair + 1} (at most {hi_pairs}): {side} on {held.describe()}")
            if not checks.before(side):
                return
            before = await sample(held.gpu, reuse_s=BETWEEN_RUNS_S)
            env, boundary = traced.prepare(side, pair, slot_env, boundaries[side]) if traced else (slot_env, boundaries[side])
            started = time.time()
            with spent.timing("benchmark runs", count=True):
                bench = await run_benchmark(
                    ws,
                    run,
                    f"{label} {side} pair {pair + 1}",
                    repeats=1,
                    cwd=folders[side],
                    extra_env=env,
                    lease=held,
                    file_prefix=f"{side}-{pair + 1}",
                    boundary=boundary,
                    forks=forks,
                    vendors=vendors,
                )
            rec = RunRecord(
                side=side,
                pair=pair + 1,
                kind="benchmark",
                started=started,
                ended=time.time(),
                before=before,
                after=await sample(held.gpu),
                wall_s=bench.wall_s[0] if bench.wall_s else None,
            )
            out.runs.append(rec)
            sides[side].append(bench)
            if not checks.after(side):
                out.best, out.candidate = merge_runs(sides["best"], "BEST"), merge_runs(sides["candidate"], label)
                return
            if side == "best" and unusable(bench):
                raise KernelMcpError(
                    f"BEST itself failed in this evaluation (pair {pair + 1}): " + bench.trouble(),
                    hint=f"the GPU or the harness changed since the experiment started; see run {run.id}",
                )
            if side == "candidate" and unusable(bench):
                out.candidate = merge_runs(sides["candidate"], label)
                out.best = merge_runs(sides["best"], "BEST")
                out.pairs = pair
                out.stopped = f"the candidate's run in pair {pair + 1} " + (
                    "failed" if bench.failure else "was wrong" if not bench.all_correct else "was impossible"
                )
                return
        out.best = merge_runs(sides["best"], "BEST")
        out.candidate = merge_runs(sides["candidate"], label)
        assert out.best is not None and out.candidate is not None  # both sides ran in this pair
        keys = [k for k in target_keys(out.candidate, target) if k in out.best.by_key()]
        values = {s: [run_value(b, keys) for b in sides[s]] for s in sides}
        for rec in out.runs[-2:]:
            index = rec.pair - 1
            rec.value = values[rec.side][index] if index < len(values[rec.side]) else None
        out.pairs = pair + 1
        if not keys or None in values["best"] or None in values["candidate"]:
            out.stopped = "no target class to compare"
            return
        out.script = paired(cast("list[float]", values["best"]), cast("list[float]", values["candidate"]))  # no None: tested above
        out.witness = witness_of(out.runs)
        out.comparisons = class_comparisons(out.best, out.candidate)
        if traced is not None:
            if not traced.pair_done(pair):
                return
            metric = out.gpu_time
            assert metric is not None  # pair_done set it
            witness_needed = False  # the tracer's gain is checked against the wall times in absolute terms (evaluate.py)
        else:
            metric, witness_needed = out.script, needs_witness
        claims_gain = metric.significant and metric.change < 0
        witnessed = out.witness is not None and out.witness.significant and out.witness.change < 0
        unsettled = unsettled_classes(out.comparisons, target, threshold, severe) if claims_gain else []
        if out.pairs >= lo_pairs and clear_of(metric, threshold) and not (witness_needed and claims_gain and not witnessed) and not unsettled:
            out.stopped = f"clear after {out.pairs} pairs"
            break
    else:
        out.stopped = f"the cap of {hi_pairs} pairs was reached (close to the threshold" + (
            f"; {', '.join(unsettled[:4])} not shown safe)" if unsettled else ")"
        )
    assert out.best is not None and out.candidate is not None  # max_pairs >= 2: every pair that ran set both
    # out.comparisons: set in the last pair that ran, over all its pairs (the loop leaves only after that)


async def _kernel_tracer(ws: Workspace, out: Together, vendors: Vendors) -> KernelTracer | None:
    """The platform's in-run kernel tracer for a profiler-metric evaluation, or None (and why, in
    `out.kernel_trace_note`): the profiler then measures runs of its own."""
    if ws.config.harness.kernel_times != "trace":
        out.kernel_trace_note = '[harness] kernel_times = "profiler": the profiler measured runs of its own'
        return None
    try:
        with spent.timing("builds"):
            tracer = await vendors.of(ws).platform.kernel_tracer(ws)
    except (BackendMissing, CommandFailed) as exc:
        out.kernel_trace_note = f"no in-run kernel tracer ({exc.message}): the profiler measured runs of its own"
        return None
    out.kernel_trace = tracer.name
    return tracer


class Traced:
    """What the kernel tracer recorded in one evaluation's benchmark runs, pair by pair: each run's
    records go to a folder of its own in the evaluation's run folder, the only place outside its
    tree and private folder that the run may also write."""

    def __init__(self, ws: Workspace, run: Run, vendors: Vendors, tracer: KernelTracer, out: Together) -> None:
        self.ws, self.run, self.tracer, self.out = ws, run, tracer, out
        self.platform = vendors.of(ws).platform
        self.token = secrets.token_hex(3)  # a batch's candidates share the run folder
        self.folders: dict[str, Path] = {}
        self.totals: dict[str, list[float]] = {"best": [], "candidate": []}

    def prepare(self, side: Side, pair: int, env: dict[str, str] | None, boundary: sandbox.Boundary) -> tuple[dict[str, str], sandbox.Boundary]:
        # one writable folder per side, a pair's records in a folder of their own inside it: every
        # run of a side has the same boundary (a fork server's, forked_runs.py, is fixed at its start)
        side_folder = self.run.folder / f"kernels-{self.token}-{side}"
        folder = side_folder / f"pair-{pair + 1}"
        folder.mkdir(parents=True, exist_ok=True)
        self.folders[side] = folder
        return {**(env or {}), **self.tracer.env_for(folder)}, boundary.with_writable(side_folder)

    def pair_done(self, pair: int) -> bool:
        """Read both sides' records of the pair just run and compare the GPU time so far; False when
        the measurement must stop (why: in `out.stopped`)."""
        from kernel_mcp.profile.summary import summarise

        profiles: dict[str, dict[str, Any]] = {}
        for side in ("best", "candidate"):
            with spent.timing("trace reading"):
                frame, problems = self.platform.read_kernel_trace(self.folders[side])
            if problems:
                self.out.stopped = f"the kernel trace of {side}'s run in pair {pair + 1} is incomplete: " + "; ".join(problems[:3])
                self.out.gpu_time = None
                return False
            summary = summarise(frame, "kernel trace", self.ws.config.require_benchmark().target_kernel)
            profiles[side] = {
                "keep_metric": "profiler",
                "profile": summary.model_dump(mode="json", include={"kernels", "source", "dispatches", "run_id"}),
                "dispatches": summary.target_dispatches,
                "dispatch_counts": summary.target_calls,
            }
            for rec in self.out.runs[-2:]:
                if rec.side == side:
                    rec.kernel_us = float(frame["duration_ns"].sum()) / 1e3 if not frame.empty else 0.0
        self.out.best_profile, self.out.candidate_profile = profiles["best"], profiles["candidate"]
        best_total = profile_total_us(profiles["best"], None)
        cand_total = profile_total_us(profiles["candidate"], profiles["best"])
        if best_total is None or cand_total is None:
            self.out.stopped = f"the kernel trace saw no target dispatch of {'BEST' if best_total is None else 'the candidate'} in pair {pair + 1}"
            self.out.gpu_time = None
            return False
        self.totals["best"].append(best_total)
        self.totals["candidate"].append(cand_total)
        self.out.profiler_pairs = pair + 1
        self.out.gpu_time = paired(self.totals["best"], self.totals["candidate"])
        if from_launch_checks(self.out):
            self.out.stopped = f"the kernel trace's dispatch list in pair {pair + 1} differs from BEST's"
            return False
        return True


def class_comparisons(best: BenchRun, candidate: BenchRun) -> dict[str, Comparison]:
    """Each class's paired comparison, over the pairs where both sides measured it."""
    best_figs, cand_figs = best.by_key(), candidate.by_key()
    return {
        k: paired(best_figs[k].samples, cand_figs[k].samples) for k in cand_figs if k in best_figs and len(best_figs[k].samples) == len(cand_figs[k].samples)
    }


def pair_walls(runs: list[RunRecord]) -> list[tuple[int, dict[str, float]]]:
    """The benchmark runs' wall times by pair, in pair order, for the pairs where both sides ran."""
    walls: dict[int, dict[str, float]] = {}
    for r in runs:
        if r.kind == "benchmark" and r.wall_s:
            walls.setdefault(r.pair, {})[r.side] = r.wall_s
    return [(pair, w) for pair, w in sorted(walls.items()) if len(w) == 2]


def witness_of(runs: list[RunRecord]) -> Comparison | None:
    """The benchmark runs' wall times, paired in pair order (None until a pair has both)."""
    both = [w for _, w in pair_walls(runs)]
    return paired([w["best"] for w in both], [w["candidate"] for w in both]) if both else None


async def _profile_pairs(
    ws,
    run,
    folders,
    held,
    out: Together,
    threshold,
    lo_pairs,
    hi_pairs,
    progress,
    sample,
    boundaries: dict[str, sandbox.Boundary],
    checks: Guarded,
    vendors: Vendors,
) -> None:
    totals: dict[str, list[float]] = {"best": [], "candidate": []}
    for pair in range(hi_pairs):
        order: tuple[Side, Side] = ("best", "candidate") if pair % 2 == 0 else ("candidate", "best")
        profiles: dict[str, dict[str, Any]] = {}
        for side in order:
            if progress is not None:
                await progress(pair, hi_pairs, f"profiled pair {pair + 1} (at most {hi_pairs}): {side}")
            if not checks.before(side):
                return
            before = await sample(held.gpu, reuse_s=BETWEEN_RUNS_S)
            started = time.time()
            with spent.timing("profiled runs", count=True):
                profiles[side] = await keep_profile(ws, "profiler", run, folders[side], None, held, locked=True, boundary=boundaries[side], vendors=vendors)
            out.runs.append(
                RunRecord(side=side, pair=pair + 1, kind="profiler", started=started, ended=time.time(), before=before, after=await sample(held.gpu))
            )
            if not checks.after(side):
                return
        out.best_profile, out.candidate_profile = profiles["best"], profiles["candidate"]
        best_total = profile_total_us(profiles["best"], None)
        cand_total = profile_total_us(profiles["candidate"], profiles["best"])
        for rec in out.runs[-2:]:
            rec.value = best_total if rec.side == "best" else cand_total
        if best_total is None or cand_total is None:
            out.stopped += "; the profiler saw no target dispatch" + (" of BEST" if best_total is None else " of the candidate")
            out.gpu_time = None
            return
        totals["best"].append(best_total)
        totals["candidate"].append(cand_total)
        out.profiler_pairs = pair + 1
        out.gpu_time = paired(totals["best"], totals["candidate"])
        if from_launch_checks(out):
            return
        if out.profiler_pairs >= lo_pairs and clear_of(out.gpu_time, threshold):
            out.stopped += f"; profiler clear after {out.profiler_pairs} pairs"
            return
    out.stopped += f"; profiler: the cap of {hi_pairs} pairs was reached"


async def keep_profile(
    ws: Workspace, keep_metric: str, run: Run, workdir: Path, progress: ProgressFn | None, lease=None, locked: bool = True, boundary=None, *, vendors: Vendors
) -> dict[str, Any]:
    """The profiler's view of one benchmark run (GPU times, launches), when it is the keep metric.
    `locked`: let the profiler hold the clocks steady (ncu's base-clock control) for a keep measurement."""
    if keep_metric != "profiler":
        return {"keep_metric": "csv"}
    from kernel_mcp import profile

    prof_run = ws.runs.create("profile_kernels", {"for": run.id})
    try:
        summary = await profile.profile_kernels(
            ws, prof_run, None, [], None, progress, cwd=workdir, lease=lease, lock_clocks=locked, boundary=boundary, vendors=vendors
        )
    except BaseException as exc:  # the run says it failed, never that it is still running
        prof_run.fail(exc)
        raise
    return {
        "keep_metric": "profiler",
        "profile": summary.model_dump(mode="json", include={"kernels", "source", "dispatches", "run_id"}),
        "dispatches": summary.target_dispatches,
        "dispatch_counts": summary.target_calls,
    }


def from_launch_checks(out: Together) -> bool:
    """A candidate the profiler's dispatch list already refuses needs no more profiled pairs."""
    from kernel_mcp.ledger.harness import launch_problems

    best, cand = out.best_profile.get("profile"), out.candidate_profile.get("profile")
    return bool(best and cand and launch_problems(best, cand))


def _failed_bench(ws: Workspace, label: str, failure: str, held: gate.Lease) -> BenchRun:
    cfg = ws.config.require_benchmark()
    return BenchRun(
        label=label,
        metric=cfg.metric,
        correctness=f"{cfg.correctness.column} {cfg.correctness.rule}",
        class_columns=list(cfg.config_columns),
        inferred_classes=False,
        classes=[],
        seeds=[],
        repeats=0,
        gpu=held.describe(),
        duration_s=0.0,
        failure=failure,
    )


def _finish(ws: Workspace, out: Together, started: float, keep_metric: str, held: gate.Lease, vendors: Vendors, lock_note: str | None = None) -> Together:
    out.wall_s = time.monotonic() - started
    samples = [s for r in out.runs for s in (r.before, r.after) if s is not None]
    clocks = [s.sm_clock_mhz for s in samples if s.sm_clock_mhz]
    temps = [s.temperature_c for s in samples if s.temperature_c is not None]
    if keep_metric == "profiler" and out.gpu_time is not None and not out.kernel_trace:
        locked = vendors.of(ws).platform.profiled_clocks(lock_note)
    elif lock_note:
        locked = lock_note
    elif any(s.clocks_locked for s in samples):
        locked = "locked (the monitor reports locked clocks)"
    elif samples:
        locked = "free-running"
    else:
        locked = "unknown (no GPU monitor)"
    moved = bool(clocks) and (max(clocks) - min(clocks)) > CLOCK_MOVED * max(clocks)
    out.clocks = Clocks(
        locked=locked, sm_clock_mhz=(min(clocks), max(clocks)) if clocks else None, temperature_c=(min(temps), max(temps)) if temps else None, moved=moved
    )
    return out


def gpu_sampler(ws: Workspace, vendors: Vendors) -> Sampler:
    """Samples through the GPU monitor (gpu.sample never fails a run: None when it cannot say)."""
    from kernel_mcp import gpu as monitor

    async def sample(gpu) -> GpuSample | None:
        return await monitor.sample(gpu, str(ws.root), vendors=vendors)

    return sample


async def _lock_clocks(ws: Workspace, held: gate.Lease, vendors: Vendors) -> str | None:
    """The vendor's deterministic-performance mode for the evaluation, when kernel-mcp.toml asks for
    it (where the vendor has one; the statement says what was done or why not)."""
    if not ws.config.harness.lock_clocks or held.gpu is None:
        return None
    from kernel_mcp import gpu as monitor

    return await monitor.lock_clocks(held.gpu, str(ws.root), vendors=vendors)


async def _unlock_clocks(ws: Workspace, held: gate.Lease, note: str | None, vendors: Vendors) -> None:
    if note is None or held.gpu is None:
        return
    from kernel_mcp import gpu as monitor

    await monitor.unlock_clocks(held.gpu, str(ws.root), vendors=vendors)
