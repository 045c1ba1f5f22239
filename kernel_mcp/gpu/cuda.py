"""NVIDIA GPUs from `nvidia-smi -q -x` (the XML report; recorded real output in the tests)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from kernel_mcp.errors import CommandFailed
from kernel_mcp.gpu.models import GpuInfo, GpuProcess

QUERY_ARGS = ("-q", "-x")


def _number(text: str | None) -> float | None:
    """'81559 MiB' -> 81559.0; 'N/A' or missing -> None."""
    if not text:
        return None
    match = re.match(r"\s*([-+]?\d+(?:\.\d+)?)", text)
    return float(match.group(1)) if match else None


def parse_nvidia_smi_xml(text: str) -> list[GpuInfo]:
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError as exc:
        raise CommandFailed(f"nvidia-smi XML could not be parsed: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise CommandFailed(f"not an nvidia-smi report (root element <{root.tag}>)")
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
                memory_total_mib=_number(gpu.findtext("fb_memory_usage/total")),
                memory_used_mib=_number(gpu.findtext("fb_memory_usage/used")),
                utilization_pct=_number(gpu.findtext("utilization/gpu_util")),
                bus_id=gpu.get("id"),
                uuid=gpu.findtext("uuid"),
                processes=processes,
            )
        )
    return gpus
