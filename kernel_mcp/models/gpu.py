"""What the GPU monitors tell about each GPU, in one shape for every vendor, and how they are asked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field, computed_field
from pydantic.json_schema import SkipJsonSchema

from kernel_mcp import arch_registry


class GpuProcess(BaseModel):
    pid: int
    name: str | None = None
    used_memory_mib: float | None = None


class GpuInfo(BaseModel):
    index: int
    vendor: Literal["amd", "nvidia"]
    name: str
    arch: str | None = None  # gfx942, gfx950, Hopper...
    compute_units: int | None = None
    device_id: str | None = None  # PCI device id, "0x2335": what tells the product where the name does not
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None  # None: the monitor did not say (never read as 0)
    utilization_pct: float | None = None
    bus_id: str | None = None
    uuid: str | None = None
    processes: list[GpuProcess] | None = None  # None: the monitor cannot attribute processes per GPU
    # The monitor's driver version: with the uuid or bus id and the name, the key of this GPU's
    # measured peaks (hardware/calibration.py), so that a new driver is measured anew. The server's
    # own knowledge, not part of any answer: doctor's text shows it, and the tool definitions,
    # whose size every client pays for, stay as they were.
    driver_version: SkipJsonSchema[str | None] = Field(default=None, exclude=True)

    def product_entry(self) -> arch_registry.ProductEntry | None:
        """The product table that describes this GPU, or None (then no product figure applies to it)."""
        try:
            return arch_registry.product_for_gpu(self.vendor, self.name, self.device_id, self.compute_units, self.arch)
        except Exception:  # no docs index or a broken table: the GPU is still listed, as an unknown product
            return None

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented way to serialise a property
    @property
    def product(self) -> str | None:
        entry = self.product_entry()
        return entry.label if entry else None


class GpuSample(BaseModel):
    """What one GPU was doing at one moment, as its monitor reported it: evidence kept with each
    measurement (clocks and temperature before and after a run). None means the monitor did not
    say, never zero."""

    time: float  # epoch seconds, the middle of the monitor's query
    monitor: str | None = None  # the tool that answered: nvidia-smi, amd-smi
    index: int | None = None  # the GPU's index as that monitor numbers it
    sm_clock_mhz: float | None = None  # NVIDIA SM clock; AMD graphics clock (mean over its gfx engines)
    sm_clock_max_mhz: float | None = None  # the highest graphics/SM clock the GPU allows now
    mem_clock_mhz: float | None = None
    temperature_c: float | None = None
    temperature_sensor: str | None = None  # which sensor temperature_c is: gpu (NVIDIA), hotspot or edge (AMD)
    memory_temperature_c: float | None = None
    power_w: float | None = None
    clocks_locked: bool | None = None  # None: the monitor cannot tell
    perf_level: str | None = None  # NVIDIA performance state (P0...); AMD DPM level (AUTO, DETERMINISM...)
    throttle: str | None = None  # active clock-limit reasons ("none" when the monitor says none is active)

    def describe(self) -> str:
        parts = [
            f"{self.sm_clock_mhz:.0f}" + (f"/{self.sm_clock_max_mhz:.0f}" if self.sm_clock_max_mhz else "") + " MHz"
            if self.sm_clock_mhz is not None
            else "clock ?"
        ]
        parts.append(f"{self.temperature_c:.0f} C" if self.temperature_c is not None else "temp ?")
        if self.power_w is not None:
            parts.append(f"{self.power_w:.0f} W")
        parts.append({True: "clocks locked", False: "clocks not locked", None: "clock lock unknown"}[self.clocks_locked])
        if self.throttle and self.throttle != "none":
            parts.append(f"limited by {self.throttle}")
        return ", ".join(parts)


@dataclass(frozen=True)
class MonitorQuery:
    """One query of a vendor's GPU monitor, as data: which executable, its arguments, and the reader
    of what it prints. The platforms hold them; gpu.list_gpus and the gate run them, so that neither
    names a vendor's tool."""

    tool: str  # the executable, found through toolchain.find
    args: tuple[str, ...]
    read: Callable[[str], list[GpuInfo]]
