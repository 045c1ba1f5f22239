"""What a keep must pass beyond its evaluation: the verification set, and for suspicious speedups
an independent re-measurement (fresh processes, BEST and candidate interleaved in both orders)."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

from kernel_mcp import runner
from kernel_mcp.bench import compare, run_benchmark
from kernel_mcp.bench.results import _OPS as OPS, read_csv
from kernel_mcp.errors import CommandFailed, KernelMcpError
from kernel_mcp.gpu import gate
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace import Run, Workspace

AGREEMENT = 0.25  # the re-measured speedup must be within 25% of the evaluated one


async def verify(ws: Workspace, run: Run, workdir: Path, progress: ProgressFn | None) -> dict[str, Any]:
    """Run the workspace's verification command (extra shapes, odd sizes, a second seed) once."""
    h = ws.config.harness
    if not h.verify_command:
        return {"summary": "none configured"}
    cfg = ws.config.benchmark
    seed = secrets.randbits(62)
    async with gate.acquire(ws.config.gate, str(workdir), progress, require_gpu=ws.config.target.platform in ("rocm", "cuda")) as lease:
        started = time.time()
        result = await runner.run(h.verify_command, cwd=workdir, timeout_s=cfg.timeout_s, env={cfg.seed_env: str(seed), **lease.env},
                                  log_dir=run.folder, log_name="verify", progress=progress)
    if not result.ok:
        return {"failed": f"the verification command {result.status()}: {result.stderr.tail.strip()[-300:]}", "seed": seed}
    if not h.verify_csv:
        return {"summary": f"verification command passed (exit 0, seed {seed})", "seed": seed}
    path = Workspace(workdir).resolve(h.verify_csv)
    if not path.exists() or path.stat().st_mtime < started - 1:
        return {"failed": f"the verification command wrote no {h.verify_csv}", "seed": seed}
    try:
        frame = read_csv(path)
    except KernelMcpError as exc:
        return {"failed": exc.message, "seed": seed}
    run.path("verify.csv").write_bytes(path.read_bytes())
    column = cfg.correctness.column
    if column not in frame.columns:
        return {"failed": f"the verification CSV has no {column} column", "seed": seed}
    op, bound = cfg.correctness.parsed()
    values = frame[column].apply(lambda v: float(v) if str(v).strip() not in ("", "nan") else float("nan"))
    ok = values.apply(lambda v: v == v and OPS[op](v, bound))
    labels = [",".join(str(frame.iloc[i][c]) for c in cfg.config_columns if c in frame.columns) or f"row {i}" for i in range(len(frame))]
    worst = {labels[i]: float(values.iloc[i]) for i in range(len(frame))}
    if not ok.all():
        bad = [f"{labels[i]} ({column} = {values.iloc[i]:g})" for i in range(len(frame)) if not ok.iloc[i]]
        return {"failed": "wrong results on " + ", ".join(bad[:5]), "seed": seed, "errors": worst}
    return {"summary": f"{len(frame)} verification rows correct (seed {seed})", "seed": seed, "errors": worst}


async def remeasure(ledger, exp: dict[str, Any], run: Run, workdir: Path, progress: ProgressFn | None) -> dict[str, Any]:
    """BEST and the candidate measured again, each in fresh processes, in the order A B B A."""
    wt = ledger.worktree(exp)
    best_path = ledger.ws.state_dir / "worktrees" / f"{exp['tag']}--best-check"
    if best_path.exists():
        wt.git.worktree("remove", "--force", str(best_path))
    wt.git.worktree("add", "--detach", str(best_path), exp["best_commit"])
    try:
        best_dir = best_path / exp["subdir"] if exp["subdir"] != "." else best_path
        samples: dict[str, list] = {"A": [], "B": []}
        for label, folder in (("A", best_dir), ("B", workdir), ("B", workdir), ("A", best_dir)):
            bench = await run_benchmark(ledger.ws, run, f"re-measure {label}", repeats=1, progress=progress, cwd=folder)
            if bench.failure or not bench.all_correct:
                raise CommandFailed(f"re-measurement of {label} failed: {bench.failure or 'wrong results'}")
            samples[label].append(bench)
    finally:
        wt.git.worktree("remove", "--force", str(best_path))
    keys = [c.key for c in samples["A"][0].classes]

    def series(label: str) -> list[float]:
        import math

        return [math.exp(sum(math.log(b.by_key()[k].samples[0]) for k in keys) / len(keys)) for b in samples[label]]

    again = compare(series("A"), series("B"))
    attempt = ledger.store.latest_attempt(exp["tag"])
    evaluated = (attempt["evidence"].get("overall") or {}).get("change", 0.0)
    ratio_then, ratio_now = 1 + evaluated, 1 + again.change
    agrees = again.change < 0 and abs(ratio_now / ratio_then - 1) <= AGREEMENT
    statement = f"evaluated {1 / ratio_then:.2f}x faster, re-measured {1 / ratio_now:.2f}x (A B B A in fresh processes)"
    return {"agrees": agrees, "statement": statement, "change": again.change, "best": series("A"), "candidate": series("B")}
