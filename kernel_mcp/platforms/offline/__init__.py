"""No GPU toolchain: the clang of the `ziglang` wheel compiles AMD device code (device-only, so
resource figures and ISA, never a run). Nothing can be profiled, traced, sampled or pinned here;
imported output made elsewhere is still read by the shared parsers.

Its modules: clang.py (the compile) and prelude/ (stand-ins for the HIP headers it compiles with
when no ROCm is installed, and for the device side of the C and C++ library headers a kernel
includes: <cmath>, <cfloat>, <limits>, ...; the compiler's own <stddef.h>, <float.h>, ... come
from the wheel).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from kernel_mcp import toolchain
from kernel_mcp.errors import BackendMissing, WorkspaceError
from kernel_mcp.models.gpu import GpuInfo, GpuSample, MonitorQuery

if TYPE_CHECKING:  # types only: resolving a platform loads nothing more
    from kernel_mcp.hardware.specs import HardwareSpec
    from kernel_mcp.models.compile import BackendOutput, CompileJob
    from kernel_mcp.models.occupancy import Occupancy
    from kernel_mcp.models.platform import ProfileRequest, TraceRequest
    from kernel_mcp.runner import ProgressFn
    from kernel_mcp.workspace import Run, Workspace

NOTHING_RUNS = "platform = 'offline': nothing can be run under a profiler here"


class OfflinePlatform:
    name: str = "offline"
    toolkit: str = "the offline clang"
    maker: str = "no"
    gpu_vendor: str | None = None
    profiler: str | None = None
    outputs: tuple[str, ...] = ()
    flag_dialect: str = "clang"
    profiler_locks_clocks: bool = False
    inventory: tuple[MonitorQuery, ...] = ()
    usage_monitors: tuple[MonitorQuery, ...] = ()

    def installed(self) -> bool:
        return toolchain.offline_clang_argv() is not None

    def runs_here(self) -> bool:
        return False

    def builds_for(self, arch_vendor: str) -> bool:
        return arch_vendor == "amd"  # clang's AMDGPU backend; there is no offline compiler for NVIDIA

    def compiles(self, arch_vendor: str) -> bool:
        return self.builds_for(arch_vendor) and self.installed()

    async def compile(self, job: CompileJob) -> BackendOutput:
        from kernel_mcp.platforms.offline.clang import compile_offline

        return await compile_offline(job)

    def occupancy(self, spec: HardwareSpec, *, vgprs: int, agprs: int, sgprs: int, lds_bytes: int, block_size: int) -> Occupancy:
        from kernel_mcp.hardware.occupancy import amd_occupancy  # it builds AMD code only

        return amd_occupancy(spec, vgprs, agprs, sgprs, lds_bytes, block_size)

    def can_profile(self) -> bool:
        return False

    def counter_base_name(self, name: str) -> str:
        return name

    def profiled_clocks(self, lock_note: str | None) -> str:
        return lock_note or "unknown (no profiler)"

    async def tool_notes(self, cwd: Path) -> list[str]:
        return []

    async def profile(self, ws: Workspace, run: Run, request: ProfileRequest, progress: ProgressFn | None) -> NoReturn:
        raise WorkspaceError(NOTHING_RUNS, hint="use profile_import for output made elsewhere")

    async def trace(self, ws: Workspace, run: Run, request: TraceRequest, progress: ProgressFn | None) -> NoReturn:
        raise WorkspaceError(NOTHING_RUNS, hint="use thread_trace_import for output made elsewhere")

    async def kernel_tracer(self, ws: Workspace) -> NoReturn:
        raise BackendMissing("no kernel tracer: " + NOTHING_RUNS)

    def read_kernel_trace(self, folder: Path) -> NoReturn:
        raise BackendMissing("no kernel tracer: " + NOTHING_RUNS)

    async def sample(self, gpu: GpuInfo, cwd: str) -> GpuSample | None:
        return None

    def pin_env(self, gpu: GpuInfo) -> dict[str, str]:
        return {}

    async def lock_clocks(self, gpu: GpuInfo, cwd: str, sclk_mhz: int | None = None) -> str | None:
        return None

    async def unlock_clocks(self, gpu: GpuInfo, cwd: str) -> str | None:
        return None

    async def calibrate(self, gpu: GpuInfo, folder: Path) -> NoReturn:
        raise BackendMissing(
            "no GPU here: the offline platform measures nothing, and a GPU's peaks are measured on it with its vendor's compiler",
            hint="run doctor where the GPU is (CUDA or ROCm installed)",
        )

    def classify(self, mnemonic: str) -> str:
        from kernel_mcp.compile.amdgpu_asm import classify

        return classify(mnemonic)


PLATFORM = OfflinePlatform()
