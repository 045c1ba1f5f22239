"""How busy each AMD GPU is right now (for the gate): utilization, memory in use, compute processes.

`amd-smi metric --json` (`usage.gfx_activity`, falling back to `usage.gfx_busy_inst` on partitioned parts, and
`mem_usage.used_vram`/`total_vram`, names as in the amd-smi source), else `rocm-smi -u
--showmemuse --showmeminfo vram --json`. Neither AMD tool can say which GPU a process uses, so
AMD processes stay unknown (None), never zero. (NVIDIA's: `nvidia-smi -q -x`, nvidia_smi.py, per-GPU
processes included.)
"""

from __future__ import annotations

from typing import Any

from kernel_mcp.models.gpu import GpuInfo
from kernel_mcp.platforms.rocm.amd_smi import gpu_entries, load_amd_smi_json, quantity_mib

AMD_METRIC_ARGS = ("metric", "--json")
ROCM_SMI_ARGS = ("-u", "--showmemuse", "--showmeminfo", "vram", "--json")


def _percent(value: Any) -> float | None:
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().rstrip("%"))
        except ValueError:
            return None  # "N/A": unknown
    return None


def parse_amd_smi_metric(text: str) -> list[GpuInfo]:
    gpus = []
    for position, entry in enumerate(gpu_entries(load_amd_smi_json(text))):
        usage = entry.get("usage") or {}
        mem = entry.get("mem_usage") or {}
        util = _percent(usage.get("gfx_activity"))
        if util is None:
            util = _percent(usage.get("gfx_busy_inst"))
        gpus.append(
            GpuInfo(
                index=int(entry.get("gpu", position)),
                vendor="amd",
                name=f"AMD GPU {entry.get('gpu', position)}",
                memory_total_mib=quantity_mib(mem.get("total_vram")),
                memory_used_mib=quantity_mib(mem.get("used_vram")),
                utilization_pct=util,
            )
        )
    return gpus


def parse_rocm_smi(text: str) -> list[GpuInfo]:
    """`rocm-smi ... --json`: {"card0": {...}, "system": {...}}, every value a string."""
    data = load_amd_smi_json(text)
    if not isinstance(data, dict):
        return []
    gpus = []
    for key, card in data.items():
        if not key.startswith("card") or not isinstance(card, dict):
            continue
        total = _percent(card.get("VRAM Total Memory (B)"))
        used = _percent(card.get("VRAM Total Used Memory (B)"))
        gpus.append(
            GpuInfo(
                index=int(key[4:]),
                vendor="amd",
                name=str(card.get("Card Series") or card.get("Card series") or key),
                memory_total_mib=total / 2**20 if total is not None else None,
                memory_used_mib=used / 2**20 if used is not None else None,
                utilization_pct=_percent(card.get("GPU use (%)")),
            )
        )
    return sorted(gpus, key=lambda g: g.index)
