"""GPU discovery (and, with the gate, availability) through each vendor's monitor (amd-smi,
nvidia-smi: their queries and readers live with the platforms, which the caller hands over); and
samples of what one GPU is doing (clocks, temperature, power), kept as evidence with measurements."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from kernel_mcp import runner, toolchain
from kernel_mcp.errors import BackendMissing, CommandFailed
from kernel_mcp.models.gpu import GpuInfo, GpuProcess, GpuSample

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

__all__ = ["GpuInfo", "GpuProcess", "GpuSample", "list_gpus", "lock_clocks", "sample", "sample_by", "unlock_clocks"]

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


async def list_gpus(cwd: str, *, vendors: Vendors) -> tuple[list[GpuInfo], list[str]]:
    """Every GPU the installed monitors report, and a note for each monitor that could not answer."""
    gpus: list[GpuInfo] = []
    notes: list[str] = []
    for query in vendors.inventory():
        if toolchain.find(query.tool) is None:
            continue
        try:
            gpus += query.read(await monitor_output(query.tool, query.args, cwd))
        except (CommandFailed, BackendMissing) as exc:
            notes.append(exc.message)
    return gpus, notes


def pick(samples: list[GpuSample], gpu: GpuInfo) -> GpuSample | None:
    if len(samples) == 1:  # the monitor was asked for this GPU only
        return samples[0]
    return next((s for s in samples if s.index == gpu.index), None)


async def sample(gpu: GpuInfo | None, cwd: str, *, vendors: Vendors) -> GpuSample | None:
    """The given GPU's clocks, temperature and power now, from its vendor's monitor (that GPU only).

    None when there is no GPU, no monitor, or the monitor fails, hangs past SAMPLE_TIMEOUT_S or
    prints something unreadable: a sample is evidence, never a reason to fail a run."""
    if gpu is None:
        return None
    return await sample_by(vendors.for_gpu(gpu).sample, gpu, cwd)


async def sample_by(sampler: Callable[[GpuInfo, str], Awaitable[GpuSample | None]], gpu: GpuInfo, cwd: str) -> GpuSample | None:
    """`sampler`'s sample of the GPU, or None whatever went wrong (see sample)."""
    try:
        return await sampler(gpu, cwd)
    except Exception:  # whatever went wrong, the run it describes goes on without it
        return None


async def lock_clocks(gpu: GpuInfo | None, cwd: str, sclk_mhz: int | None = None, *, vendors: Vendors) -> str | None:
    """Hold the GPU's clocks steady the vendor's way, where the vendor has one (AMD's performance
    determinism); a statement of what was done or why not, None where nothing is attempted."""
    if gpu is None:
        return "no GPU leased: clocks not locked"
    return await vendors.for_gpu(gpu).lock_clocks(gpu, cwd, sclk_mhz)


async def unlock_clocks(gpu: GpuInfo | None, cwd: str, *, vendors: Vendors) -> str | None:
    if gpu is None:
        return "no GPU leased: nothing to unlock"
    return await vendors.for_gpu(gpu).unlock_clocks(gpu, cwd)
