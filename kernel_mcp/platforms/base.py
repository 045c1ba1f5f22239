"""The one contract every vendor module keeps (psutil's model: one public API, a module per
platform behind it). Capability code asks a `Platform` and never tests a vendor string itself.

A platform is where things run and what runs them: the compiler and its resource facts, the
profiler (kernel times and counters), the tracer, the GPU monitor, the environment that pins a
run to one GPU, clock control, and the classifier of its instruction set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # types only: importing a platform must stay cheap
    from kernel_mcp.models.compile import BackendOutput, CompileJob
    from kernel_mcp.models.gpu import GpuInfo, GpuSample
    from kernel_mcp.profile.summary import ProfileSummary
    from kernel_mcp.runner import ProgressFn, RunResult
    from kernel_mcp.sandbox import Boundary
    from kernel_mcp.workspace import Run, Workspace


@dataclass(frozen=True)
class ProfileRequest:
    """One profiled run of the workspace's benchmark, as profile_kernels asks for it."""

    root: Path  # where the benchmark runs (the workspace or an experiment's worktree)
    env: dict[str, str]  # the lease's pinning environment plus the run's seed
    kernel_regex: str | None
    counters: list[str]
    preset: str | None
    lock_clocks: bool  # keep measurements: let the profiler hold the clocks, where it can
    boundary: Boundary  # what the profiled run may write (its tree, private folders, the profile run's folder)


@dataclass(frozen=True)
class TraceRequest:
    root: Path
    env: dict[str, str]
    kernel_regex: str
    dispatch: int | None
    options: Any  # trace.TraceOptions (AMD thread-trace knobs; NVIDIA ignores them)
    out: Path  # the run's trace folder
    boundary: Boundary  # what the traced run may write (its tree, private folders, `out`)


class Platform(Protocol):
    name: str  # "rocm", "cuda" or "offline": the value kernel-mcp.toml's [target] platform takes
    toolkit: str  # how a person names what to install ("ROCm", "CUDA", "the offline clang")
    maker: str  # who makes its GPUs, as a person writes it ("AMD", "NVIDIA")
    gpu_vendor: str | None  # what the monitors call this vendor's GPUs ("amd", "nvidia")
    profiler: str | None  # the profiler executable it runs
    outputs: tuple[str, ...]  # how the outputs its tools write are named (a summary's `source` starts so)
    flag_dialect: str  # which compiler's flag allowlist applies ("clang" or "nvcc")
    profiler_locks_clocks: bool  # whether its profiler holds the clocks steady while measuring

    def installed(self) -> bool:
        """Whether any of its tools (compiler, profiler, monitor) is on this machine."""

    def runs_here(self) -> bool:
        """Whether a GPU of its vendor can be measured here (its monitor or profiler is installed)."""

    # -- compiler and resource facts
    def builds_for(self, arch_vendor: str) -> bool:
        """Whether its compiler targets that vendor's architectures at all."""

    def compiles(self, arch_vendor: str) -> bool:
        """Whether its compiler is installed and builds for that vendor's architectures."""

    async def compile(self, job: CompileJob) -> BackendOutput: ...

    def occupancy(self, spec: Any, *, vgprs: int, agprs: int, sgprs: int, lds_bytes: int, block_size: int) -> Any:
        """Resident waves (warps) for these resources by the vendor's rules (hardware.Occupancy)."""

    # -- profiler
    def can_profile(self) -> bool: ...

    async def profile(self, ws: Workspace, run: Run, request: ProfileRequest, progress: ProgressFn | None) -> tuple[ProfileSummary, list[str]]: ...

    def counter_base_name(self, name: str) -> str:
        """The name the profiler's counter listing uses for `name`."""

    def profiled_clocks(self, lock_note: str | None) -> str:
        """How the clocks stood during this platform's profiled keep runs."""

    # -- tracer
    async def trace(self, ws: Workspace, run: Run, request: TraceRequest, progress: ProgressFn | None) -> RunResult: ...

    # -- GPU monitor, pinning and clock control
    async def sample(self, gpu: GpuInfo, cwd: str) -> GpuSample | None: ...

    def pin_env(self, gpu: GpuInfo) -> dict[str, str]: ...

    async def lock_clocks(self, gpu: GpuInfo, cwd: str, sclk_mhz: int | None = None) -> str | None:
        """A statement of what was done to hold the clocks, or None when nothing is attempted."""

    async def unlock_clocks(self, gpu: GpuInfo, cwd: str) -> str | None: ...

    # -- instruction set
    def classify(self, mnemonic: str) -> str:
        """The instruction class (valu, salu, vmem_load, lds_read, mfma, waitcnt, barrier, ...)."""


PLATFORM_NAMES = ("rocm", "cuda", "offline")
