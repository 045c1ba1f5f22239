"""What a compile tells about each kernel, in one shape for every backend; and one compile: what
every backend receives (CompileJob) and what it hands back (BackendOutput)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from kernel_mcp.models.occupancy import Occupancy

if TYPE_CHECKING:  # types only: reading compile facts loads no workspace or runner
    from kernel_mcp.runner import ProgressFn, RunResult
    from kernel_mcp.workspace import Run, Workspace

COMPILE_TIMEOUT_S = 300.0


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
    dynamic_lds: Literal["none", "unknown", "given"] = Field("none", description="LDS sized at launch (extern __shared__): none, of unknown size, or given")
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
        if self.lds_bytes is None and self.dynamic_lds == "unknown":
            return "LDS sized at launch, not in this file"  # imported code that uses LDS and states no size (Triton's)
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


@dataclass
class CompileJob:
    ws: Workspace
    source: Path  # absolute, inside the workspace
    source_rel: str
    arch: str
    defines: list[str]  # already -DNAME=VALUE
    flags: list[str]
    run: Run
    progress: ProgressFn | None = None
    timeout_s: float = COMPILE_TIMEOUT_S
    include_dirs: list[Path] = field(default_factory=list)  # absolute, inside the workspace ([compile] include_dirs)

    def source_argument(self) -> str:
        """The source as the compiler's argv names it: absolute, so that no name (`-x.hip`,
        `@opts.hip`) can ever be read as an option or a response file of options."""
        if not self.source.is_absolute():
            raise ValueError("a compile job's source must be an absolute path")
        return str(self.source)

    def include_flags(self) -> list[str]:
        """-I for each include folder, joined to its absolute path (`-I/ws/inc`): one argument that
        no folder name can turn into another option."""
        if not all(folder.is_absolute() for folder in self.include_dirs):
            raise ValueError("a compile job's include folders must be absolute paths")
        return [f"-I{folder}" for folder in self.include_dirs]

    def optimization(self) -> list[str]:
        """-O3 unless the caller chose a level."""
        return [] if any(f.startswith("-O") for f in self.flags) else ["-O3"]


@dataclass
class BackendOutput:
    backend: str
    device_only: bool
    result: RunResult
    kernels: list[KernelFacts]
    isa_file: str | None  # artifact name of the ISA listing (AMD .s or NVIDIA SASS)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.result.ok

    def diagnostic_lines(self) -> Iterator[str]:
        return output_lines(self.result)


def output_lines(result: RunResult) -> Iterator[str]:
    """Every line the compiler printed, from the logs on disk (the tails only if none were kept):
    the resource remarks come after the front end's warnings, so a tail can lose them."""
    for capture in (result.stderr, result.stdout):
        if capture.log_path is not None and capture.log_path.exists():
            with capture.log_path.open(encoding="utf-8", errors="replace") as log:
                yield from log
        else:
            yield from capture.tail.splitlines()
