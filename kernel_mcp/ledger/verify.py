"""What a keep must pass beyond its evaluation: the verification set, and for suspicious speedups
an independent re-measurement (fresh processes, BEST and candidate interleaved in both orders)."""

from __future__ import annotations

import math
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from kernel_mcp import runner
from kernel_mcp.bench.results import _OPS as OPS, read_csv
from kernel_mcp.errors import CommandFailed, KernelMcpError
from kernel_mcp.gpu import gate
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace import Run, Workspace
from kernel_mcp.ledger.state import Attempt, Experiment, Remeasured, Verification

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

AGREEMENT = 0.25  # the re-measured speedup must be within 25% of the evaluated one


async def verify(ws: Workspace, run: Run, workdir: Path, progress: ProgressFn | None, *, vendors: Vendors) -> Verification:
    """Run the workspace's verification command (extra shapes, odd sizes, a second seed) once."""
    h = ws.config.harness
    if not h.verify_command:
        return Verification(summary="none configured")
    cfg = ws.config.require_benchmark()
    seed = secrets.randbits(62)
    async with gate.acquire(ws.config.gate, str(workdir), progress, require_gpu=vendors.needs_gpu(ws), vendors=vendors) as lease:
        started = time.time()
        with ws.sealed_side(workdir, f"{run.id}-verify") as boundary:
            result = await runner.run(
                h.verify_command,
                cwd=workdir,
                timeout_s=cfg.timeout_s,
                env={cfg.seed_env: str(seed), **lease.env},
                log_dir=run.folder,
                log_name="verify",
                progress=progress,
                boundary=boundary,
            )
    failed = None if result.ok else f"the verification command {result.status()}" + (f": {tail}" if (tail := result.stderr.tail.strip()[-300:]) else "")
    if not h.verify_csv:
        return Verification(failed=failed, seed=seed) if failed else Verification(summary=f"verification command passed (exit 0, seed {seed})", seed=seed)
    path = Workspace(workdir).resolve(h.verify_csv)
    if not path.exists() or path.stat().st_mtime < started - 1:
        return Verification(failed=failed or f"the verification command wrote no {h.verify_csv}", seed=seed)
    # a check that exits non-zero on a wrong shape (a common way to write one) still wrote which
    # shapes were wrong: those are named, not only the exit status
    try:
        frame = await anyio.to_thread.run_sync(read_csv, path)  # off the event loop: up to a second near the size bound
    except KernelMcpError as exc:
        return Verification(failed=failed or exc.message, seed=seed)
    run.path("verify.csv").write_bytes(path.read_bytes())
    column = cfg.correctness.column
    if column not in frame.columns:
        return Verification(failed=failed or f"the verification CSV has no {column} column", seed=seed)
    op, bound = cfg.correctness.parsed()
    values = frame[column].apply(lambda v: float(v) if str(v).strip() not in ("", "nan") else float("nan"))
    ok = values.apply(lambda v: v == v and OPS[op](v, bound))
    labels = [",".join(str(frame.iloc[i][c]) for c in cfg.config_columns if c in frame.columns) or f"row {i}" for i in range(len(frame))]
    # a value that is not a number is kept as its text: the ledger's JSON holds no NaN
    worst: dict[str, float | str] = {labels[i]: v if math.isfinite(v) else str(v) for i, v in enumerate(map(float, values))}
    if not ok.all():
        bad = [f"{labels[i]} ({column} = {values.iloc[i]:g})" for i in range(len(frame)) if not ok.iloc[i]]
        return Verification(failed="wrong results on " + ", ".join(bad[:5]) + (f" ({failed})" if failed else ""), seed=seed, errors=worst)
    if failed:
        return Verification(failed=failed, seed=seed, errors=worst)
    return Verification(summary=f"{len(frame)} verification rows correct (seed {seed})", seed=seed, errors=worst)


async def remeasure(ledger, exp: Experiment, run: Run, workdir: Path, attempt: Attempt, progress: ProgressFn | None, *, vendors: Vendors) -> Remeasured:
    """BEST and the candidate measured again, side by side in fresh processes (pairs, both orders),
    with the benchmark's own metric: does the evaluated speedup hold?"""
    from kernel_mcp.ledger.paired import measure_together

    best_dir = ledger.best_tree(exp)
    again = await measure_together(
        ledger.ws,
        run,
        best_dir,
        workdir,
        "csv",
        attempt.target_class,
        progress,
        label="re-measure",
        guard=ledger.guard(exp, best_dir, Path(exp.worktree), workdir),
        vendors=vendors,
    )
    if again.candidate is None or again.script is None or again.candidate.failure or not again.candidate.all_correct:
        raise CommandFailed("the re-measurement failed: " + (again.stopped or "no figures"))
    evaluated = attempt.evidence.overall.change if attempt.evidence.overall else 0.0
    ratio_then, ratio_now = 1 + evaluated, 1 + again.script.change
    agrees = again.script.change < 0 and abs(ratio_now / ratio_then - 1) <= AGREEMENT
    statement = f"evaluated {1 / ratio_then:.2f}x faster, re-measured {1 / ratio_now:.2f}x ({again.pairs} pairs of fresh runs, both orders)"
    return Remeasured(
        agrees=agrees, statement=statement, change=again.script.change, comparison=again.script, clocks=again.clocks.model_dump() if again.clocks else None
    )
