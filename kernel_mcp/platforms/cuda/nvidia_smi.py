"""NVIDIA GPUs from `nvidia-smi -q -x` (the XML report; recorded real output in the tests)."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET

from kernel_mcp import toolchain
from kernel_mcp.errors import CommandFailed
from kernel_mcp.arch_registry import device_id_hex
from kernel_mcp.models.gpu import GpuInfo, GpuProcess, GpuSample

QUERY_ARGS = ("-q", "-x")


def _number(text: str | None) -> float | None:
    """'81559 MiB' -> 81559.0; 'N/A' or missing -> None."""
    if not text:
        return None
    match = re.match(r"\s*([-+]?\d+(?:\.\d+)?)", text)
    return float(match.group(1)) if match else None


def _root(text: str) -> ET.Element:
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError as exc:
        raise CommandFailed(f"nvidia-smi XML could not be parsed: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise CommandFailed(f"not an nvidia-smi report (root element <{root.tag}>)")
    return root


def sample_args(gpu: GpuInfo) -> tuple[str, ...]:
    """`-i` takes an index, a UUID or a PCI bus id; the UUID names one GPU whatever the enumeration
    order (GpuInfo.index is the minor number, which nvidia-smi's own index need not equal)."""
    return ("-i", gpu.uuid or gpu.bus_id or str(gpu.index), *QUERY_ARGS)


def parse_nvidia_smi_xml(text: str) -> list[GpuInfo]:
    root = _root(text)
    driver = _state(root.findtext("driver_version"))  # one driver for every GPU of the report
    gpus = []
    for position, gpu in enumerate(root.findall("gpu")):
        minor = _number(gpu.findtext("minor_number"))
        processes = [
            GpuProcess(
                pid=int(_number(p.findtext("pid")) or 0),
                name=p.findtext("process_name"),
                used_memory_mib=_number(p.findtext("used_memory")),
            )
            for p in gpu.findall("processes/process_info")
        ]
        gpus.append(
            GpuInfo(
                index=position if minor is None else int(minor),
                vendor="nvidia",
                name=(gpu.findtext("product_name") or "unknown").strip(),
                arch=gpu.findtext("product_architecture"),
                device_id=device_id_hex(gpu.findtext("pci/pci_device_id")),
                memory_total_mib=_number(gpu.findtext("fb_memory_usage/total")),
                memory_used_mib=_number(gpu.findtext("fb_memory_usage/used")),
                utilization_pct=_number(gpu.findtext("utilization/gpu_util")),
                bus_id=gpu.get("id"),
                uuid=gpu.findtext("uuid"),
                processes=processes,
                driver_version=driver,
            )
        )
    return gpus


def _first(gpu: ET.Element, *paths: str) -> float | None:
    for path in paths:
        value = _number(gpu.findtext(path))
        if value is not None:
            return value
    return None


def _event_reasons(gpu: ET.Element) -> str | None:
    """Active clock-event reasons, e.g. "sw_power_cap, hw_thermal_slowdown"; "none" when all are
    "Not Active". Drivers before the rename call the block clocks_throttle_reasons."""
    for block, prefix in (("clocks_event_reasons", "clocks_event_reason_"), ("clocks_throttle_reasons", "clocks_throttle_reason_")):
        node = gpu.find(block)
        if node is None:
            continue
        states = {child.tag.removeprefix(prefix): (child.text or "").strip() for child in node}
        known = {name: state for name, state in states.items() if state in ("Active", "Not Active")}
        if not known:
            return None
        active = [name for name, state in known.items() if state == "Active"]
        return ", ".join(active) if active else "none"
    return None


def _clocks_locked(gpu: ET.Element, reasons: str | None) -> bool | None:
    """True when the report shows a clock setting in force: the applications-clocks reason is
    active, or applications clocks differ from their defaults. The report has no field for
    `nvidia-smi --lock-gpu-clocks` that does not limit the clock, so otherwise it is unknown."""
    if reasons and "applications_clocks_setting" in reasons.split(", "):
        return True
    for clock in ("graphics_clock", "mem_clock"):
        now, default = _number(gpu.findtext(f"applications_clocks/{clock}")), _number(gpu.findtext(f"default_applications_clocks/{clock}"))
        if now is not None and default is not None and now != default:
            return True
    return None


def _state(text: str | None) -> str | None:
    text = (text or "").strip()
    return None if text in ("", "N/A") else text


def parse_nvidia_smi_samples(text: str, at: float) -> list[GpuSample]:
    """Clocks, temperatures, power and clock-event reasons of each GPU in a `-q -x` report."""
    samples = []
    for position, gpu in enumerate(_root(text).findall("gpu")):
        minor = _number(gpu.findtext("minor_number"))
        reasons = _event_reasons(gpu)
        temperature = _number(gpu.findtext("temperature/gpu_temp"))
        samples.append(
            GpuSample(
                time=at,
                monitor="nvidia-smi",
                index=position if minor is None else int(minor),
                sm_clock_mhz=_first(gpu, "clocks/sm_clock", "clocks/graphics_clock"),
                sm_clock_max_mhz=_first(gpu, "max_clocks/sm_clock", "max_clocks/graphics_clock"),
                mem_clock_mhz=_first(gpu, "clocks/mem_clock"),
                temperature_c=temperature,
                temperature_sensor="gpu" if temperature is not None else None,
                memory_temperature_c=_number(gpu.findtext("temperature/memory_temp")),
                # instant draw where the driver has it (a moment, like the clocks); older reports have power_draw
                power_w=_first(
                    gpu,
                    "gpu_power_readings/instant_power_draw",
                    "gpu_power_readings/power_draw",
                    "gpu_power_readings/average_power_draw",
                    "power_readings/power_draw",
                ),
                clocks_locked=_clocks_locked(gpu, reasons),
                perf_level=_state(gpu.findtext("performance_state")),
                throttle=reasons,
            )
        )
    return samples


async def sample(gpu: GpuInfo, cwd: str) -> GpuSample | None:
    """The GPU's clocks, temperature and power now, from `nvidia-smi -q -x` for that GPU only; None
    without nvidia-smi (gpu.sample_by turns any failure into None as well)."""
    from kernel_mcp.gpu import SAMPLE_TIMEOUT_S, monitor_output, pick  # read at each call: a test shortens the timeout

    if toolchain.find("nvidia-smi") is None:
        return None
    started = time.time()
    text = await monitor_output("nvidia-smi", sample_args(gpu), cwd, SAMPLE_TIMEOUT_S)
    return pick(parse_nvidia_smi_samples(text, (started + time.time()) / 2), gpu)
