"""How many waves (warps) can be resident and which resource stops more: the calculator's answer
(hardware/occupancy.py, by the rules of the architecture's vendor), part of every compile's facts."""

from __future__ import annotations

from pydantic import BaseModel, Field


class OccupancyLimit(BaseModel):
    resource: str
    waves: int  # per SIMD (AMD) / per SM sub-partition (NVIDIA)
    detail: str


class Occupancy(BaseModel):
    arch: str
    figures_of: str | None = None  # occupancy is the arch's: the product only says which GPU was meant
    unit: str
    waves: int
    max_waves: int
    limiter: list[str]
    limits: list[OccupancyLimit]
    explanation: list[str]
    sources: list[str]
    disagreements: list[str] = []
    waves_min: int | None = Field(None, description="fewest waves on a SIMD when a CU's waves do not divide evenly over its SIMDs")
    notes: list[str] = Field(default_factory=list, description="inputs a wave cannot have as given, and how they were read")

    def short(self) -> str:
        return f"{self.waves}/{self.max_waves} {self.unit} (limited by {', '.join(self.limiter)})"
