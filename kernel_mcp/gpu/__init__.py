"""GPU discovery (and, with the gate, availability): amd-smi on AMD, nvidia-smi on NVIDIA."""

from __future__ import annotations

from kernel_mcp import runner, toolchain
from kernel_mcp.errors import BackendMissing, CommandFailed
from kernel_mcp.gpu.cuda import QUERY_ARGS, parse_nvidia_smi_xml
from kernel_mcp.gpu.models import GpuInfo, GpuProcess
from kernel_mcp.gpu.rocm import STATIC_ARGS, parse_amd_smi_static

__all__ = ["GpuInfo", "GpuProcess", "list_gpus"]

MONITOR_TIMEOUT_S = 30.0


async def _monitor_output(name: str, args: tuple[str, ...], cwd: str) -> str:
    path = toolchain.find(name)
    if path is None:
        raise BackendMissing(f"{name} not found")
    result = await runner.run([path, *args], cwd=cwd, timeout_s=MONITOR_TIMEOUT_S, tail_bytes=8 * 2**20)
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
