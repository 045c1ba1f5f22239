"""ncu: per-launch GPU time and launch facts (and counters) in one CSV; ncu replays each kernel
as many times as its metrics need, so one profiler run covers every pass."""

from __future__ import annotations

from pathlib import Path

from kernel_mcp import runner, toolchain
from kernel_mcp.errors import BackendMissing, CommandFailed
from kernel_mcp.models.profile import DerivedMetric
from kernel_mcp.profile.parsers import NCU_LAUNCH, NCU_TIME

# profile_kernels' presets: named sets of metrics, filtered by what `ncu --query-metrics` lists
COUNTER_PRESETS: dict[str, list[str]] = {
    "memory": ["dram__bytes_read.sum", "dram__bytes_write.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed"],
    "compute": ["sm__throughput.avg.pct_of_peak_sustained_elapsed", "smsp__inst_executed.sum", "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"],
    "lds": [
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "smsp__inst_executed_op_shared_ld.sum",
    ],
    "mfma": ["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_tensor.sum"],
    "occupancy": [
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "launch__occupancy_limit_registers",
        "launch__occupancy_limit_shared_mem",
        "launch__waves_per_multiprocessor",
    ],
    "cache": ["lts__t_sector_hit_rate.pct", "l1tex__t_sector_hit_rate.pct"],
}


def find() -> str:
    path = toolchain.find("ncu")
    if path is None:
        raise BackendMissing("ncu not found", hint="install Nsight Compute")
    return path


def argv(log: Path, command: list[str], kernel_regex: str | None, counters: list[str], lock_clocks: bool = False) -> list[str]:
    """ncu's command line. `lock_clocks`: ncu's own default, base clocks held for every kernel (steady
    figures for a keep decision); otherwise the clocks run free, as the user's application sees them."""
    metrics = ",".join(dict.fromkeys([NCU_TIME, *NCU_LAUNCH, *counters]))
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


def derived(c: dict[str, float], duration_s: float | None, peak_bw: float | None) -> list[DerivedMetric]:
    out = []
    read, write = c.get("dram__bytes_read.sum"), c.get("dram__bytes_write.sum")
    if read is not None and write is not None and duration_s:
        bw = (read + write) / duration_s
        out.append(
            DerivedMetric(
                name="HBM bandwidth", value=bw / 1e9, unit=" GB/s", definition="(dram__bytes_read.sum + dram__bytes_write.sum) / gpu__time_duration.sum"
            )
        )
        if peak_bw:
            out.append(
                DerivedMetric(name="HBM share of peak", value=100 * bw / peak_bw, unit="%", definition="HBM bandwidth / hw_spec hbm_bandwidth_bytes_per_s")
            )
    conflicts = c.get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
    wavefronts = c.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
    if conflicts is not None and wavefronts:
        out.append(
            DerivedMetric(
                name="shared-memory bank-conflict rate",
                value=100 * conflicts / wavefronts,
                unit="%",
                definition="100 * l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum / l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
            )
        )
    if "sm__warps_active.avg.pct_of_peak_sustained_active" in c:
        out.append(
            DerivedMetric(
                name="achieved occupancy",
                value=c["sm__warps_active.avg.pct_of_peak_sustained_active"],
                unit="%",
                definition="sm__warps_active.avg.pct_of_peak_sustained_active",
            )
        )
    return out
