"""run_benchmark: the workspace's fixed command, on a gated GPU, repeated, read per config class.

Each repeat gets a fresh random seed (in the configured environment variable) so that outputs
cached from an earlier run cannot pass the correctness check; correctness is checked on every
repeat. The CSV of every repeat is kept as a run artifact.
"""

from __future__ import annotations

import math
import secrets
import shutil
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from pydantic import BaseModel, field_validator

from kernel_mcp import forked_runs, runner, safe_files, sandbox
from kernel_mcp.arch_registry import product_named
from kernel_mcp.bench.results import TableFigures, figures, read_csv, shown
from kernel_mcp.bench.stats import Comparison, compare, median, spread
from kernel_mcp.errors import CommandFailed, InvalidInput, WorkspaceError
from kernel_mcp.forked_runs import ForkServers
from kernel_mcp.gpu import gate
from kernel_mcp.models.gpu import GpuInfo
from kernel_mcp.runner import ProgressFn
from kernel_mcp.tooling import ToolOutput
from kernel_mcp.untrusted import inline
from kernel_mcp.workspace import Run, Workspace
from kernel_mcp.workspace.runs import run_uri
from kernel_mcp.workspace.config import BenchmarkConfig

if TYPE_CHECKING:
    from kernel_mcp.hardware.calibration import Floor
    from kernel_mcp.models.platform import Vendors

__all__ = ["BenchRun", "BenchmarkFailed", "ClassRun", "Comparison", "compare", "run_benchmark", "spread"]


class ClassRun(BaseModel):
    """One config class over all repeats."""

    key: str
    rows: int
    correct: bool
    failing_rows: int
    worst_error: float | str | None  # a number, or the CSV's value when not finite ("NaN", "inf")
    samples: list[float]  # the class metric of each repeat
    speed_of_light: float | None = None  # median over repeats of the floor / the measured time (1.0 = at the floor)

    @field_validator("worst_error")
    @classmethod
    def _finite_or_text(cls, value: float | str | None) -> float | str | None:
        # A NaN or inf float becomes null in JSON and breaks the tool's output schema; a record
        # written before figures were checked still reads, as text.
        if isinstance(value, float) and not math.isfinite(value):
            return shown(value)
        return value

    @property
    def median(self) -> float:
        return median(self.samples)


class BenchRun(BaseModel):
    label: str | None
    metric: str
    correctness: str
    class_columns: list[str]
    inferred_classes: bool
    classes: list[ClassRun]
    seeds: list[int]
    repeats: int
    gpu: str
    duration_s: float
    failure: str | None = None  # the command failed or wrote no usable CSV
    impossible: list[str] = []  # rows below the roofline floor
    floor_of: str | None = None  # whose figures the floor used: "H200 (sm_90)"; None when no floor was drawn
    floor_note: str | None = (
        None  # why not (a GPU no product table describes), when the benchmark has FLOP and byte columns; or why this GPU's peaks were not measured
    )
    sealed: str | None = None  # the boundary every run had ("Landlock ABI 7"); None if any ran unsealed
    wall_s: list[float] = []  # each run's wall time, measured by the server: a witness the code cannot reach
    forked: str | None = None  # with [benchmark] preload: how the runs started (forked from a fork server, or why not)

    @property
    def all_correct(self) -> bool:
        return self.failure is None and all(c.correct for c in self.classes)

    def trouble(self) -> str:
        """Why this run cannot stand as a measurement, on one line (the failure may quote the
        benchmark's output, the impossible rows its cells)."""
        return inline(self.failure or "; ".join(self.impossible[:2]) or "wrong results")

    def by_key(self) -> dict[str, ClassRun]:
        return {c.key: c for c in self.classes}


def _find_csv(ws: Workspace, cfg: BenchmarkConfig, started: float) -> Path:
    pattern = cfg.csv
    try:
        candidates = [ws.resolve(pattern)] if not any(ch in pattern for ch in "*?[") else [p for p in ws.root.glob(pattern) if not p.is_dir()]
    except InvalidInput as exc:
        raise CommandFailed(f"the benchmark CSV: {exc.message}") from None
    fresh = [p for p in candidates if p.exists() and p.stat().st_mtime >= started - 1]
    if not fresh:
        raise CommandFailed(f"the benchmark did not write {pattern} (nothing newer than the run's start)")
    chosen = max(fresh, key=lambda p: p.stat().st_mtime)
    # checked before it is copied or read: a FIFO would block both, a link could lead out
    try:
        return safe_files.check_regular(chosen, _label(ws, chosen), within=ws.root)
    except InvalidInput as exc:
        raise CommandFailed(f"the benchmark CSV {exc.message}") from None


def _label(ws: Workspace, path: Path) -> str:
    try:
        return path.relative_to(ws.root).as_posix()
    except ValueError:
        return path.name


def _kept_and_read(csv_path: Path, kept: Path, cfg: BenchmarkConfig, harness, floor) -> TableFigures:
    """The benchmark's CSV copied into the run, then read into figures."""
    shutil.copyfile(csv_path, kept)
    return figures(read_csv(csv_path), cfg, harness, floor)


def worse(a: float | str | None, b: float | str | None) -> float | str | None:
    """The worse of two worst errors; a value that is not a number (NaN, inf, text) beats any number."""
    if a is None or isinstance(b, str):
        return a if isinstance(a, str) else b
    if b is None or isinstance(a, str):
        return a
    return max(a, b)


def merge(tables: list[TableFigures]) -> list[ClassRun]:
    merged: dict[str, ClassRun] = {}
    lights: dict[str, list[float]] = {}
    for table in tables:
        for c in table.classes:
            run = merged.get(c.key)
            if run is None:
                merged[c.key] = ClassRun(key=c.key, rows=c.rows, correct=c.correct, failing_rows=c.failing_rows, worst_error=c.worst_error, samples=[c.metric])
                lights.setdefault(c.key, [])
            else:
                run.correct = run.correct and c.correct
                run.failing_rows = max(run.failing_rows, c.failing_rows)
                run.worst_error = worse(run.worst_error, c.worst_error)
                run.samples.append(c.metric)
            if c.speed_of_light is not None:
                lights[c.key].append(c.speed_of_light)
    for key, values in lights.items():
        if values:
            merged[key].speed_of_light = median(values)
    return list(merged.values())


async def run_benchmark(
    ws: Workspace,
    run: Run,
    label: str | None = None,
    repeats: int | None = None,
    progress: ProgressFn | None = None,
    cwd: Path | None = None,
    extra_env: dict[str, str] | None = None,
    lease: gate.Lease | None = None,
    file_prefix: str = "bench",
    boundary: sandbox.Boundary | None = None,
    forks: ForkServers | None = None,
    *,
    vendors: Vendors,
) -> BenchRun:
    """Run the fixed command `repeats` times on one gated GPU; `cwd` lets the ledger run it in its
    worktree (or BEST's), `lease` run it on a GPU the caller already holds, and `file_prefix` keeps
    the logs and CSVs of several calls into one run folder apart. Every run is sealed: `boundary`
    (the ledger's, per side) or, by default, its own folder and a private one for this call. With
    `[benchmark] preload`, the runs are forks of a fork server per side (`forks`, the caller's across
    calls, else one for this call; forked_runs.py), where runs get namespaces of their own."""
    cfg = ws.config.benchmark
    if cfg is None:
        raise WorkspaceError("kernel-mcp.toml has no [benchmark] table")
    repeats = repeats or cfg.repeats
    root = cwd or ws.root
    target = Workspace(root)
    tables: list[TableFigures] = []
    seeds: list[int] = []
    started_all = time.monotonic()
    failure = None
    require_gpu = vendors.needs_gpu(ws)
    impossible: list[str] = []
    floor_of = floor_note = None
    sealed: list[str | None] = []
    walls: list[float] = []
    forked, fork_note = _forking(cfg, forks)
    async with AsyncExitStack() as stack:
        if boundary is None:
            boundary = stack.enter_context(ws.sealed_side(root, f"{run.id}-{file_prefix}"))
        if forked and forks is None:
            forks = ForkServers(cfg.command, cfg.preload, run.folder)
            stack.push_async_callback(forks.close)
        async with gate.use(ws.config.gate, str(root), progress, require_gpu=require_gpu, lease=lease, vendors=vendors) as lease:
            # the first benchmark on a GPU whose floor a measurement would draw measures it (once per GPU and driver)
            from kernel_mcp.hardware.calibration import ensure_for_floor

            measuring = await ensure_for_floor(ws, lease.gpu, vendors, progress)
            floor, floor_of, floor_note = floor_for(ws, lease.gpu)
            if floor is not None and measuring:
                floor_note = measuring + "; the floor is the table's"
            for index in range(1, repeats + 1):
                seed = secrets.randbits(62)
                seeds.append(seed)
                env = {cfg.seed_env: str(seed), **lease.env, **(extra_env or {})}
                if progress is not None:
                    await progress(index - 1, repeats, f"benchmark run {index}/{repeats} on {lease.describe()}")
                started = time.time()
                if forked and forks is not None:
                    server = forks.of(root, boundary, file_prefix.split("-")[0])
                    result = await server.run(cfg.command, cwd=root, timeout_s=cfg.timeout_s, env=env, log_dir=run.folder, log_name=f"{file_prefix}-{index}")
                else:
                    result = await runner.run(
                        cfg.command, cwd=root, timeout_s=cfg.timeout_s, env=env, log_dir=run.folder, log_name=f"{file_prefix}-{index}", boundary=boundary
                    )
                sealed.append(result.sealed)
                walls.append(round(result.duration_s, 4))
                if not result.ok:
                    failure = f"run {index}: the benchmark {result.status()}: {result.stderr.tail.strip()[-400:]}"
                    break
                try:
                    csv_path = _find_csv(target, cfg, started)
                    # in a worker thread: a CSV near its size bound takes a second to copy and parse, in
                    # which the server's other calls (and this call's progress) still go on
                    table = await anyio.to_thread.run_sync(_kept_and_read, csv_path, run.path(f"{file_prefix}-{index}.csv"), cfg, ws.config.harness, floor)
                    tables.append(table)
                    impossible += [f"run {index}: {row}" for row in table.impossible]
                except (CommandFailed, WorkspaceError) as exc:
                    failure = f"run {index}: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")
                    break
    classes = merge(tables)
    first = tables[0] if tables else None
    return BenchRun(
        label=label,
        metric=cfg.metric,
        correctness=f"{cfg.correctness.column} {cfg.correctness.rule}",
        class_columns=first.class_columns if first else list(cfg.config_columns),
        inferred_classes=first.inferred if first else False,
        classes=classes,
        seeds=seeds,
        repeats=len(tables),
        gpu=lease.describe(),
        duration_s=time.monotonic() - started_all,
        failure=failure,
        impossible=impossible,
        floor_of=floor_of,
        floor_note=floor_note,
        sealed=sealed[0] if sealed and None not in sealed else None,
        wall_s=walls,
        forked=fork_note,
    )


def _forking(cfg, forks: ForkServers | None) -> tuple[bool, str | None]:
    """Whether the runs are forks of a fork server, and the note that says how they started."""
    if not cfg.preload:
        return False, None
    why = forked_runs.unavailable()
    if why:
        return False, f"{', '.join(cfg.preload)} imported by every run: no fork server, {why}"
    return True, f"{', '.join(cfg.preload)} imported once per side by a fork server; each run a fork of it"


def floor_for(ws: Workspace, gpu: GpuInfo | None) -> tuple[Floor | None, str | None, str | None]:
    """The roofline floor (seconds from FLOPs and bytes) of the product that runs the benchmark,
    whose figures it uses, and why there is none.

    The GPU's own product decides: an H200's floor comes from the H200's 4.8 TB/s, never from the
    H100 that shares its arch. A GPU no product table describes gets no floor (and so no
    "impossible" check), and the answer says so. `[harness] floor_product` names the product
    outright; without a GPU (a CPU benchmark), the workspace's product, else its arch's reference
    product, named as such. Where this GPU's peaks were measured (hardware/calibration.py), each
    resource takes the higher of the table's figure and the measured one; the answer says which."""
    harness = ws.config.harness
    if not harness.flops_column or not harness.bytes_column:
        return None, None, None
    from kernel_mcp.hardware import load_spec, spec_for
    from kernel_mcp.hardware.calibration import floor_for_spec

    if harness.floor_product:
        named = product_named(harness.floor_product)
        spec = load_spec(named.arch, named, by="[harness] floor_product")
    elif gpu is not None:
        entry = gpu.product_entry()
        if entry is None or (harness.floor_arch and entry.arch != harness.floor_arch):
            ident = f"{gpu.name}" + (f", device {gpu.device_id}" if gpu.device_id else "") + (f", {gpu.compute_units} CUs/SMs" if gpu.compute_units else "")
            why = "unknown product" if entry is None else f"{entry.label} is not of floor_arch {harness.floor_arch}"
            return None, None, f"no roofline floor: {why} ({ident}); no product table's figures apply to it (set [harness] floor_product to choose one)"
        spec = load_spec(entry.arch, entry, by="this GPU")
    else:
        target = ws.config.target
        spec = spec_for(None, None, default_arch=harness.floor_arch or target.arch, default_product=target.product)
    floor = floor_for_spec(ws, spec, gpu)
    return floor, floor.whose(), None


class BenchAnswer(ToolOutput):
    bench: BenchRun
    comparisons: dict[str, Comparison] = {}
    against: str | None = None
    run_id: str

    def render(self) -> str:
        b = self.bench
        # the class columns and keys are the CSV's cells, the failure may quote the benchmark's output
        cls = ", ".join(map(inline, b.class_columns)) + (" (inferred from the CSV)" if b.inferred_classes else "")
        lines = [
            f"benchmark{' ' + inline(b.label) if b.label else ''}: {b.repeats} run(s) on {b.gpu}, {b.duration_s:.1f} s; run {self.run_id}",
            f"correctness {b.correctness}; metric {b.metric} (lower is better); classes by {cls}",
        ]
        if b.failure:
            lines.append(f"FAILED: {inline(b.failure)}")
        if b.forked:
            lines.append(b.forked)
        if b.floor_of or b.floor_note:
            lines.append("; ".join(part for part in (f"roofline floor from {b.floor_of}" if b.floor_of else None, b.floor_note) if part))
        for c in b.classes[:40]:
            ok = "ok " if c.correct else f"WRONG ({c.failing_rows} rows, worst {inline(c.worst_error)})"
            cmp = self.comparisons.get(c.key)
            vs = f"  vs {self.against}: {cmp.statement()}" if cmp else ""
            sol = f", {c.speed_of_light:.0%} of speed of light" if c.speed_of_light is not None else ""
            lines.append(f"  {inline(c.key)}: {ok} {b.metric} {c.median:.4g}{sol}{vs}")
        if len(b.classes) > 40:
            lines.append(f"  ... {len(b.classes) - 40} more classes (see the CSVs in the run)")
        return "\n".join(lines)


class BenchmarkFailed(CommandFailed):
    """The fixed benchmark failed (crashed, timed out, wrote no usable CSV): an error answer, not a
    result that only says FAILED in its text, naming the run whose logs and CSVs are kept."""

    kind = "benchmark failed"
    lines_escaped = True  # the failure and the class lines escape what they quote from the CSV and the output (see `of`)
    CLASS_LINES = 10  # of the repeats that completed before the failure; the run keeps the rest
    MAX_BYTES = 3000  # the error text is not cut to the answer budget afterwards, so it stays under it here

    @classmethod
    def of(cls, answer: BenchAnswer, files: list[str]) -> BenchmarkFailed:
        b = answer.bench
        lines = [inline(b.failure), f"run {answer.run_id}: {b.repeats} repeat(s) completed before the failure, on {b.gpu}, {b.duration_s:.1f} s"]
        shown = answer.render().splitlines()[2:]  # the class lines of the completed repeats
        shown = [line for line in shown if not line.startswith("FAILED: ")]
        lines += shown[: cls.CLASS_LINES] + ([f"  ... {len(shown) - cls.CLASS_LINES} more lines in the run"] if len(shown) > cls.CLASS_LINES else [])
        message = "\n".join(lines)
        if len(message.encode("utf-8")) > cls.MAX_BYTES:
            message = message.encode("utf-8")[: cls.MAX_BYTES].decode("utf-8", errors="ignore") + " ..."
        # the failing repeat's logs first: the last ones written (bench-2 before bench-10 by number)
        number = lambda name: int("".join(ch for ch in name if ch.isdigit()) or 0)  # noqa: E731
        logs = sorted((name for name in files if name.endswith(".log")), key=number, reverse=True)[:2]
        hint = f'its output is kept: run_artifacts(run_id="{answer.run_id}")' + (
            f", e.g. {', '.join(run_uri(answer.run_id, name) for name in logs)}" if logs else ""
        )
        return cls(message, hint=hint)
