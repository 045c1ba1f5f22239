"""AMD GPUs from `amd-smi static --json` (recorded real outputs of amd-smi 24.x and 26.x in the tests).

amd-smi 26.x wraps the list as {"gpu_data": [...]}, 24.x prints the bare list; a permission banner
may precede the JSON; any value may be the string "N/A" (unknown, never zero).
"""

from __future__ import annotations

import json
from typing import Any

from kernel_mcp.errors import CommandFailed
from kernel_mcp.gpu.models import GpuInfo

STATIC_ARGS = ("static", "--json")
_MIB_PER = {"B": 1 / 2**20, "KB": 1 / 1024, "MB": 1.0, "MIB": 1.0, "GB": 1024.0, "GIB": 1024.0}


def load_amd_smi_json(text: str) -> Any:
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    if not starts:
        raise CommandFailed("amd-smi printed no JSON", hint=text.strip()[:200] or None)
    try:
        return json.loads(text[min(starts) :])
    except ValueError as exc:
        raise CommandFailed(f"amd-smi JSON could not be parsed: {exc}") from None


def gpu_entries(data: Any) -> list[dict]:
    if isinstance(data, dict) and "gpu_data" in data:
        data = data["gpu_data"]
    if not isinstance(data, list):
        raise CommandFailed("amd-smi JSON is neither a list of GPUs nor {'gpu_data': [...]}")
    return [entry for entry in data if isinstance(entry, dict)]


def quantity_mib(value: Any) -> float | None:
    """{"value": 196592, "unit": "MB"} -> 196592.0; "N/A" -> None."""
    if isinstance(value, dict):
        number, unit = value.get("value"), str(value.get("unit", "MB")).upper()
    else:
        number, unit = value, "MB"
    if isinstance(number, (int, float)) and unit in _MIB_PER:
        return float(number) * _MIB_PER[unit]
    return None


def parse_amd_smi_static(text: str) -> list[GpuInfo]:
    gpus = []
    for position, entry in enumerate(gpu_entries(load_amd_smi_json(text))):
        asic = entry.get("asic") or {}
        bus = entry.get("bus") or {}
        vram = entry.get("vram") or {}
        cus = asic.get("num_compute_units")
        gpus.append(
            GpuInfo(
                index=int(entry.get("gpu", position)),
                vendor="amd",
                name=str(asic.get("market_name") or (entry.get("board") or {}).get("product_name") or "unknown"),
                arch=asic.get("target_graphics_version") if asic.get("target_graphics_version") != "N/A" else None,
                compute_units=cus if isinstance(cus, int) else None,
                memory_total_mib=quantity_mib(vram.get("size")),
                bus_id=bus.get("bdf") if bus.get("bdf") != "N/A" else None,
            )
        )
    return gpus
