"""GPU discovery (and, with the gate, availability): amd-smi on AMD, nvidia-smi on NVIDIA; and
samples of what one GPU is doing (clocks, temperature, power), kept as evidence with measurements."""

from __future__ import annotations

import time

from kernel_mcp import runner, toolchain
from kernel_mcp.errors import BackendMissing, CommandFailed
from kernel_mcp.gpu import cuda, rocm
from kernel_mcp.gpu.clocks import lock_clocks, unlock_clocks
from kernel_mcp.gpu.cuda import QUERY_ARGS, parse_nvidia_smi_xml
from kernel_mcp.gpu.models import GpuInfo, GpuProcess, GpuSample
from kernel_mcp.gpu.rocm import STATIC_ARGS, parse_amd_smi_static

__all__ = ["GpuInfo", "GpuProcess", "GpuSample", "list_gpus", "lock_clocks", "sample", "unlock_clocks"]

MONITOR_TIMEOUT_S = 30.0
# A sample is taken right before and after each benchmark run: it must not add much to either, and
# a monitor that hangs must not hold the run up.
SAMPLE_TIMEOUT_S = 5.0


async def _monitor_output(name: str, args: tuple[str, ...], cwd: str, timeout_s: float = MONITOR_TIMEOUT_S) -> str:
    path = toolchain.find(name)
    if path is None:
        raise BackendMissing(f"{name} not found")
    result = await runner.run([path, *args], cwd=cwd, timeout_s=timeout_s, tail_bytes=8 * 2**20)
    if not result.ok:
        raise CommandFailed(f"{name} {' '.join(args)} gave {result.status()}", hint=result.stderr.tail[-300:] or None)
    return result.stdout.tail


async def list_gpus(cwd: str) -> tuple[list[GpuInfo], list[str]]:
    """Every GPU the installed monitors report, and a note for each monitor that could not answer."""
    gpus: list[GpuInfo] = []
    notes: list[str] = []
    for name, args, parse in (
        ("amd-smi", STATIC_ARGS, parse_amd_smi_static),
        ("nvidia-smi", QUERY_ARGS, parse_nvidia_smi_xml),
    ):
        if toolchain.find(name) is None:
            continue
        try:
            gpus += parse(await _monitor_output(name, args, cwd))
        except (CommandFailed, BackendMissing) as exc:
            notes.append(exc.message)
    return gpus, notes


def _pick(samples: list[GpuSample], gpu: GpuInfo) -> GpuSample | None:
    if len(samples) == 1:  # the monitor was asked for this GPU only
        return samples[0]
    return next((s for s in samples if s.index == gpu.index), None)


async def sample(gpu: GpuInfo | None, cwd: str) -> GpuSample | None:
    """The given GPU's clocks, temperature and power now, from its vendor's monitor (that GPU only).

    None when there is no GPU, no monitor, or the monitor fails, hangs past SAMPLE_TIMEOUT_S or
    prints something unreadable: a sample is evidence, never a reason to fail a run."""
    if gpu is None:
        return None
    started = time.time()
    try:
        if gpu.vendor == "nvidia":
            if toolchain.find("nvidia-smi") is None:
                return None
            text = await _monitor_output("nvidia-smi", cuda.sample_args(gpu), cwd, SAMPLE_TIMEOUT_S)
            parse = cuda.parse_nvidia_smi_samples
        else:
            if toolchain.find("amd-smi") is None:
                return None
            try:
                text = await _monitor_output("amd-smi", rocm.sample_args(gpu), cwd, SAMPLE_TIMEOUT_S)
            except CommandFailed as exc:
                if not exc.message.endswith("gave exit 2"):
                    return None
                # exit 2 is argparse refusing an option: --perf-level exists only on bare-metal Linux
                text = await _monitor_output("amd-smi", rocm.sample_args(gpu, rocm.SAMPLE_GROUPS[:-1]), cwd, SAMPLE_TIMEOUT_S)
            parse = rocm.parse_amd_smi_metric_samples
        return _pick(parse(text, (started + time.time()) / 2), gpu)
    except Exception:  # noqa: BLE001 - whatever went wrong, the run it describes goes on without it
        return None
