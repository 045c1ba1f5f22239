"""No GPU toolchain: the clang of the `ziglang` wheel compiles AMD device code (device-only, so
resource figures and ISA, never a run). Nothing can be profiled, traced, sampled or pinned here;
imported output made elsewhere is still read by the other platforms' parsers.
"""

from __future__ import annotations

from kernel_mcp import toolchain
from kernel_mcp.errors import WorkspaceError

NOTHING_RUNS = "platform = 'offline': nothing can be run under a profiler here"


class OfflinePlatform:
    name = "offline"
    toolkit = "the offline clang"
    maker = "no"
    gpu_vendor = None
    profiler = None
    outputs: tuple[str, ...] = ()
    flag_dialect = "clang"
    profiler_locks_clocks = False

    def installed(self) -> bool:
        return toolchain.offline_clang_argv() is not None

    def runs_here(self) -> bool:
        return False

    def builds_for(self, arch_vendor: str) -> bool:
        return arch_vendor == "amd"  # clang's AMDGPU backend; there is no offline compiler for NVIDIA

    def compiles(self, arch_vendor: str) -> bool:
        return self.builds_for(arch_vendor) and self.installed()

    async def compile(self, job):
        from kernel_mcp.compile.offline import compile_offline

        return await compile_offline(job)

    def occupancy(self, spec, *, vgprs, agprs, sgprs, lds_bytes, block_size):
        from kernel_mcp.hardware.occupancy import amd_occupancy  # it builds AMD code only

        return amd_occupancy(spec, vgprs, agprs, sgprs, lds_bytes, block_size)

    def can_profile(self) -> bool:
        return False

    def counter_base_name(self, name: str) -> str:
        return name

    def profiled_clocks(self, lock_note: str | None) -> str:
        return lock_note or "unknown (no profiler)"

    async def profile(self, ws, run, request, progress):
        raise WorkspaceError(NOTHING_RUNS, hint="use profile_import for output made elsewhere")

    async def trace(self, ws, run, request, progress):
        raise WorkspaceError(NOTHING_RUNS, hint="use thread_trace_import for output made elsewhere")

    async def sample(self, gpu, cwd):
        return None

    def pin_env(self, gpu) -> dict[str, str]:
        return {}

    async def lock_clocks(self, gpu, cwd, sclk_mhz=None) -> str | None:
        return None

    async def unlock_clocks(self, gpu, cwd) -> str | None:
        return None

    def classify(self, mnemonic: str) -> str:
        from kernel_mcp.compile.amdgpu_asm import classify

        return classify(mnemonic)


PLATFORM = OfflinePlatform()
