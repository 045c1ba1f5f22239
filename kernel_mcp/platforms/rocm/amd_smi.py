"""AMD GPUs from `amd-smi static --json` (recorded real outputs of amd-smi 24.x and 26.x in the tests).

amd-smi 26.x wraps the list as {"gpu_data": [...]}, 24.x prints the bare list; a permission banner
may precede the JSON; any value may be the string "N/A" (unknown, never zero).
"""

from __future__ import annotations

import json
import time
from typing import Any

from kernel_mcp import toolchain
from kernel_mcp.errors import CommandFailed
from kernel_mcp.arch_registry import device_id_hex
from kernel_mcp.models.gpu import GpuInfo, GpuSample

STATIC_ARGS = ("static", "--json")
_MIB_PER = {"B": 1 / 2**20, "KB": 1 / 1024, "MB": 1.0, "MIB": 1.0, "GB": 1024.0, "GIB": 1024.0}
# Groups of `amd-smi metric` a sample needs (flags as amd-smi's parser defines them). --perf-level is
# offered only on bare-metal Linux, so sample() retries without it when amd-smi rejects it.
SAMPLE_GROUPS = ("--power", "--clock", "--temperature", "--perf-level")
_SCALE = {"MHZ": 1.0, "GHZ": 1000.0, "C": 1.0, "W": 1.0, "MW": 1e-3}
# DPM levels that hold the graphics clock fixed (amd-smi's perf-determinism guide lists them).
FIXED_LEVELS = {"DETERMINISM", "STABLE_STD", "STABLE_PEAK", "STABLE_MIN_MCLK", "STABLE_MIN_SCLK", "HIGH", "LOW"}


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
        driver = (entry.get("driver") or {}).get("version")
        cus = asic.get("num_compute_units")
        gpus.append(
            GpuInfo(
                index=int(entry.get("gpu", position)),
                vendor="amd",
                name=str(asic.get("market_name") or (entry.get("board") or {}).get("product_name") or "unknown"),
                arch=asic.get("target_graphics_version") if asic.get("target_graphics_version") != "N/A" else None,
                compute_units=cus if isinstance(cus, int) else None,
                device_id=device_id_hex(asic.get("device_id")),
                memory_total_mib=quantity_mib(vram.get("size")),
                bus_id=bus.get("bdf") if bus.get("bdf") != "N/A" else None,
                driver_version=str(driver) if driver not in (None, "", "N/A") else None,
            )
        )
    return gpus


def sample_args(gpu: GpuInfo, groups: tuple[str, ...] = SAMPLE_GROUPS) -> tuple[str, ...]:
    """`--gpu` takes amd-smi's ID, a BDF or a UUID; the BDF names one GPU whatever the numbering."""
    return ("metric", "--gpu", gpu.bus_id or str(gpu.index), *groups, "--json")


def _reading(value: Any) -> float | None:
    """{"value": 2102, "unit": "MHz"} -> 2102.0; "N/A", {"value": "N/A", ...} or a unit it does not know -> None."""
    unit = "MHZ"
    if isinstance(value, dict):
        value, unit = value.get("value"), str(value.get("unit", "MHz")).upper()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or unit not in _SCALE:
        return None
    return float(value) * _SCALE[unit]


def _engines(clock: dict, prefix: str) -> list[dict]:
    """gfx_0, gfx_1, ...: one entry per graphics engine (8 on an MI300X; unused ones all "N/A")."""
    return [v for k, v in clock.items() if isinstance(v, dict) and k.startswith(prefix) and k[len(prefix) :].isdigit()]


def _clocks_locked(engines: list[dict], level: str | None) -> bool | None:
    flags = {str(e.get("clk_locked")) for e in engines}
    if "ENABLED" in flags or level in FIXED_LEVELS:
        return True
    if level == "AUTO" or "DISABLED" in flags:
        return False  # dynamic power management chooses the clock; or the firmware's own lock flag is off
    return None  # MANUAL or unreported, with no lock flag: the report cannot say


def parse_amd_smi_metric_samples(text: str, at: float) -> list[GpuSample]:
    """Clocks, temperatures, power, DPM level and throttle status of each GPU in `amd-smi metric
    --json` (24.x bare list or 26.x {"gpu_data": [...]}); groups that were not asked for or are
    "N/A" give None."""
    samples = []
    for position, entry in enumerate(gpu_entries(load_amd_smi_json(text))):
        clock = c if isinstance(c := entry.get("clock"), dict) else {}
        temps = t if isinstance(t := entry.get("temperature"), dict) else {}
        power = p if isinstance(p := entry.get("power"), dict) else {}
        gfx = _engines(clock, "gfx_")
        now = [c for c in (_reading(e.get("clk")) for e in gfx) if c is not None]
        highest = [c for c in (_reading(e.get("max_clk")) for e in gfx) if c]  # 0 is no limit anyone runs at: unknown
        mem = _engines(clock, "mem_")
        hotspot, edge = _reading(temps.get("hotspot")), _reading(temps.get("edge"))
        raw_level = entry.get("perf_level")
        level = raw_level.removeprefix("AMDSMI_DEV_PERF_LEVEL_") if isinstance(raw_level, str) and raw_level != "N/A" else None
        status = power.get("throttle_status")
        samples.append(
            GpuSample(
                time=at,
                monitor="amd-smi",
                index=int(entry.get("gpu", position)),
                sm_clock_mhz=sum(now) / len(now) if now else None,
                sm_clock_max_mhz=max(highest) if highest else None,
                mem_clock_mhz=_reading(mem[0].get("clk")) if mem else None,
                # hotspot (junction) first: MI300-class parts report no edge sensor
                temperature_c=hotspot if hotspot is not None else edge,
                temperature_sensor="hotspot" if hotspot is not None else ("edge" if edge is not None else None),
                memory_temperature_c=_reading(temps.get("mem")),
                power_w=_reading(power.get("socket_power")),
                clocks_locked=_clocks_locked(gfx, level),
                perf_level=level,
                throttle={"THROTTLED": "throttled", "UNTHROTTLED": "none"}.get(str(status)),
            )
        )
    return samples


async def sample(gpu: GpuInfo, cwd: str) -> GpuSample | None:
    """The GPU's clocks, temperature and power now, from `amd-smi metric` for that GPU only; None
    without amd-smi (gpu.sample_by turns any failure into None as well)."""
    from kernel_mcp.gpu import SAMPLE_TIMEOUT_S, monitor_output, pick  # read at each call: a test shortens the timeout

    if toolchain.find("amd-smi") is None:
        return None
    started = time.time()
    try:
        text = await monitor_output("amd-smi", sample_args(gpu), cwd, SAMPLE_TIMEOUT_S)
    except CommandFailed as exc:
        if not exc.message.endswith("gave exit 2"):
            return None
        # exit 2 is argparse refusing an option: --perf-level exists only on bare-metal Linux
        text = await monitor_output("amd-smi", sample_args(gpu, SAMPLE_GROUPS[:-1]), cwd, SAMPLE_TIMEOUT_S)
    return pick(parse_amd_smi_metric_samples(text, (started + time.time()) / 2), gpu)
