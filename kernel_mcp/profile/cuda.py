"""ncu: per-launch GPU time and launch facts (and counters) in one CSV; ncu replays each kernel
as many times as its metrics need, so one profiler run covers every pass."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kernel_mcp import runner, toolchain
from kernel_mcp.errors import BackendMissing, CommandFailed
from kernel_mcp.profile.parsers import ncu_duration_ns, read_ncu_metrics

TIME = "gpu__time_duration.sum"
LAUNCH = ["launch__grid_size", "launch__block_size", "launch__registers_per_thread", "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic"]


def find() -> str:
    path = toolchain.find("ncu")
    if path is None:
        raise BackendMissing("ncu not found", hint="install Nsight Compute")
    return path


def argv(log: Path, command: list[str], kernel_regex: str | None, counters: list[str], lock_clocks: bool = False) -> list[str]:
    """ncu's command line. `lock_clocks`: ncu's own default, base clocks held for every kernel (steady
    figures for a keep decision); otherwise the clocks run free, as the user's application sees them."""
    metrics = ",".join(dict.fromkeys([TIME, *LAUNCH, *counters]))
    out = [find(), "--csv", "--log-file", str(log), "--metrics", metrics, "--target-processes", "all", "--clock-control", "base" if lock_clocks else "none"]
    if kernel_regex:
        out += ["-k", f"regex:{kernel_regex}"]
    return out + ["--", *command]


async def list_metrics(cwd: Path, cache: Path) -> set[str]:
    if not cache.exists():
        result = await runner.run([find(), "--query-metrics", "--chip", "gh100"], cwd=cwd, timeout_s=300, tail_bytes=16 * 2**20)
        if not result.ok:
            raise CommandFailed(f"ncu --query-metrics gave {result.status()}", hint=result.stderr.tail[-300:] or None)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(result.stdout.tail)
    names = set()
    for line in cache.read_text().splitlines():
        word = line.split()[0] if line.split() else ""
        if "__" in word:
            names.add(word)
    return names


def dispatches(text: str) -> tuple[pd.DataFrame, dict[int, dict[str, float]]]:
    """ncu --metrics CSV -> one row per launch (kernel, duration_ns, grid, block, registers, shared) and the metrics per launch."""
    table = read_ncu_metrics(text)
    rows, metrics = [], {}
    for _, r in table.iterrows():
        m = r["metrics"]
        duration = ncu_duration_ns(m.get(TIME), r["units"].get(TIME, "ns"))
        if duration is None:
            raise CommandFailed(f"ncu reported no {TIME} for launch {r['launch']}")
        shared = (m.get("launch__shared_mem_per_block_static") or 0) + (m.get("launch__shared_mem_per_block_dynamic") or 0)
        rows.append({
            "kernel": r["kernel"], "duration_ns": duration, "dispatch": r["launch"],
            "grid_x": r["grid"][0], "grid_y": r["grid"][1], "grid_z": r["grid"][2],
            "wg_x": r["block"][0], "wg_y": r["block"][1], "wg_z": r["block"][2],
            "vgprs": m.get("launch__registers_per_thread"), "lds_bytes": shared if shared else None,
        })
        metrics[int(r["launch"])] = {k: v for k, v in m.items() if v is not None}
    return pd.DataFrame(rows), metrics
