"""What a compile tells about each kernel, in one shape for every backend."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kernel_mcp.hardware import Occupancy


class InstructionMix(BaseModel):
    """Static instruction counts of one kernel's machine code, by class."""

    total: int = 0
    valu: int = 0
    salu: int = 0
    smem: int = 0
    vmem_load: int = 0
    vmem_store: int = 0
    vmem_atomic: int = 0
    lds_read: int = 0
    lds_write: int = 0
    lds_other: int = 0
    mfma: int = 0  # AMD MFMA; on NVIDIA the tensor-core (HMMA/HGMMA) instructions
    waitcnt: int = 0  # s_waitcnt on AMD; DEPBAR/scoreboard waits are not separate on NVIDIA
    barrier: int = 0
    branch: int = 0
    other: int = 0

    def nonzero(self) -> dict[str, int]:
        return {k: v for k, v in self.model_dump().items() if v and k != "total"}


class KernelFacts(BaseModel):
    name: str
    symbol: str
    vgprs: int | None = Field(None, description="arch VGPRs (AMD) or registers per thread (NVIDIA)")
    agprs: int | None = None
    sgprs: int | None = None
    scratch_bytes: int | None = Field(None, description="private segment per lane (AMD) / stack frame per thread (NVIDIA)")
    vgpr_spills: int | None = None
    sgpr_spills: int | None = None
    spill_stores_bytes: int | None = None  # NVIDIA
    spill_loads_bytes: int | None = None  # NVIDIA
    lds_bytes: int | None = Field(None, description="static LDS / shared memory per workgroup (what the compiler reports)")
    dynamic_lds: Literal["none", "unknown", "given"] = Field(
        "none", description="dynamic LDS (extern __shared__, sized at launch): none declared, declared but of unknown size, "
                            "or the size given as dynamic_lds_bytes")
    dynamic_lds_bytes: int | None = Field(None, description="dynamic LDS per workgroup that occupancy counted (as given)")
    code_size_bytes: int | None = None
    max_block_size: int | None = None
    compiler_occupancy: int | None = Field(None, description="waves/SIMD as the compiler reports it")
    occupancy: Occupancy | None = None
    mix: InstructionMix = Field(default_factory=InstructionMix)
    changes: list[str] = Field(default_factory=list, description="against the previous compile of this kernel")

    def occupancy_lds_bytes(self) -> int:
        """The LDS per workgroup occupancy counts: static, plus the dynamic size when given."""
        return (self.lds_bytes or 0) + (self.dynamic_lds_bytes or 0)

    def lds_text(self) -> str:
        static = f"{self.lds_bytes or 0:,} B"
        if self.dynamic_lds == "unknown":
            return f"LDS {static} static + dynamic unknown"
        if self.dynamic_lds == "given":
            return f"LDS {static} static + {self.dynamic_lds_bytes or 0:,} B dynamic (given)"
        return f"LDS {static}"

    def spills(self) -> int:
        return (self.vgpr_spills or 0) + (self.sgpr_spills or 0) + (self.spill_stores_bytes or 0) + (self.spill_loads_bytes or 0)


class Diagnostic(BaseModel):
    file: str
    line: int | None = None
    column: int | None = None
    severity: str
    message: str
    count: int = 1

    def render(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "") + (f":{self.column}" if self.column else "")
        repeat = f" (x{self.count})" if self.count > 1 else ""
        return f"{where}: {self.severity}: {self.message}{repeat}"


def merged_notes(notes: list[tuple[str, str]]) -> list[str]:
    """One note per sentence, naming every kernel it is said of: a template's instantiations would
    otherwise repeat the same sentence until the answer is cut."""
    names: dict[str, list[str]] = {}
    for kernel, text in notes:
        names.setdefault(text, []).append(kernel)
    merged = []
    for text, who in names.items():
        named = who[0] if len(who) == 1 else f"{len(who)} kernels ({', '.join(who[:3])}{', ...' if len(who) > 3 else ''})"
        merged.append(f"{named}: {text}")
    return merged
