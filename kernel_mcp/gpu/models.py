"""What the GPU monitors tell about each GPU, in one shape for every vendor."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


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
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None  # None: the monitor did not say (never read as 0)
    utilization_pct: float | None = None
    bus_id: str | None = None
    uuid: str | None = None
    processes: list[GpuProcess] | None = None  # None: the monitor cannot attribute processes per GPU
