"""GPU discovery (and, with the gate, availability): amd-smi on AMD, nvidia-smi on NVIDIA; and
samples of what one GPU is doing (clocks, temperature, power), kept as evidence with measurements."""

from __future__ import annotations

from kernel_mcp import runner, toolchain
from kernel_mcp.errors import BackendMissing, CommandFailed
from kernel_mcp.gpu.cuda import QUERY_ARGS, parse_nvidia_smi_xml
from kernel_mcp.gpu.rocm import STATIC_ARGS, parse_amd_smi_static
from kernel_mcp.models.gpu import GpuInfo, GpuProcess, GpuSample

__all__ = ["GpuInfo", "GpuProcess", "GpuSample", "list_gpus", "lock_clocks", "sample", "unlock_clocks"]

MONITOR_TIMEOUT_S = 30.0
# A sample is taken right before and after each benchmark run: it must not add much to either, and
# a monitor that hangs must not hold the run up.
SAMPLE_TIMEOUT_S = 5.0


async def monitor_output(name: str, args: tuple[str, ...], cwd: str, timeout_s: float = MONITOR_TIMEOUT_S) -> str:
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
            gpus += parse(await monitor_output(name, args, cwd))
        except (CommandFailed, BackendMissing) as exc:
            notes.append(exc.message)
    return gpus, notes


def pick(samples: list[GpuSample], gpu: GpuInfo) -> GpuSample | None:
    if len(samples) == 1:  # the monitor was asked for this GPU only
        return samples[0]
    return next((s for s in samples if s.index == gpu.index), None)


async def sample(gpu: GpuInfo | None, cwd: str) -> GpuSample | None:
    """The given GPU's clocks, temperature and power now, from its vendor's monitor (that GPU only).

    None when there is no GPU, no monitor, or the monitor fails, hangs past SAMPLE_TIMEOUT_S or
    prints something unreadable: a sample is evidence, never a reason to fail a run."""
    if gpu is None:
        return None
    from kernel_mcp import platforms

    try:
        return await platforms.for_gpu(gpu).sample(gpu, cwd)
    except Exception:  # noqa: BLE001 - whatever went wrong, the run it describes goes on without it
        return None


async def lock_clocks(gpu: GpuInfo | None, cwd: str, sclk_mhz: int | None = None) -> str | None:
    """Hold the GPU's clocks steady the vendor's way, where the vendor has one (AMD's performance
    determinism); a statement of what was done or why not, None where nothing is attempted."""
    if gpu is None:
        return "no GPU leased: clocks not locked"
    from kernel_mcp import platforms

    return await platforms.for_gpu(gpu).lock_clocks(gpu, cwd, sclk_mhz)


async def unlock_clocks(gpu: GpuInfo | None, cwd: str) -> str | None:
    if gpu is None:
        return "no GPU leased: nothing to unlock"
    from kernel_mcp import platforms

    return await platforms.for_gpu(gpu).unlock_clocks(gpu, cwd)
