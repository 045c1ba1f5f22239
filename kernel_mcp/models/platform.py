"""What capability code asks of a platform, role by role, and the registry it is handed.

Capability packages never import `kernel_mcp.platforms` (tests/test_architecture.py checks it):
the front end hands them `Vendors`, the registry of platforms (server.py puts
`kernel_mcp.platforms.VENDORS` in the server state, every ToolContext carries it), and each entry
function passes it on to whatever needs a vendor's answer. Each role below is the part of
`platforms.base.Platform` one capability uses, so a capability's signatures say what it needs
(compile_kernel a Compiler, the gate a GpuControl) and a new vendor is written against one protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, Field

if TYPE_CHECKING:  # types only: handing a request over loads nothing more
    import pandas as pd

    from kernel_mcp.hardware.specs import HardwareSpec
    from kernel_mcp.models.calibration import MeasuredPeaks
    from kernel_mcp.models.compile import BackendOutput, CompileJob
    from kernel_mcp.models.gpu import GpuInfo, GpuSample, MonitorQuery
    from kernel_mcp.models.occupancy import Occupancy
    from kernel_mcp.models.profile import ProfileSummary
    from kernel_mcp.runner import ProgressFn, RunResult
    from kernel_mcp.sandbox import Boundary
    from kernel_mcp.workspace import Run, Workspace


class TraceOptions(BaseModel):
    """rocprofv3's thread-trace knobs, as thread_trace takes them (NVIDIA's tracer has none and ignores them)."""

    # each is rocprofv3's --att-<name, dashed> (thread_trace's description of `options` says so)
    target_cu: int | None = Field(default=None, ge=0, le=15)
    shader_engine_mask: str | None = Field(default=None, pattern=r"^0x[0-9a-fA-F]{1,8}$")
    simd_select: str | None = Field(default=None, pattern=r"^0x[0-9a-fA-F]$")
    buffer_size: str | None = Field(default=None, pattern=r"^0x[0-9a-fA-F]{1,8}$", description="bytes")
    serialize_all: bool = False
    activity: int | None = Field(default=None, ge=1, le=16, description="gfx9 perfcounter streaming")


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
    gpu: GpuInfo | None = None  # the leased GPU: its product's peaks, never another product's, for the shares of peak


@dataclass(frozen=True)
class TraceRequest:
    """One traced dispatch of the workspace's benchmark, as thread_trace asks for it."""

    root: Path
    env: dict[str, str]
    kernel_regex: str
    dispatch: int | None
    options: TraceOptions
    out: Path  # the run's trace folder
    boundary: Boundary  # what the traced run may write (its tree, private folders, `out`)


@dataclass(frozen=True)
class KernelTracer:
    """A platform's cheap record of every kernel's GPU time inside an ordinary benchmark run (no
    replay, no serialisation): what turns it on for a run whose records go to one folder. It runs
    inside the benchmark's own processes, so the candidate's code can reach what it records."""

    name: str  # what records the times, for the answer ("CUPTI kernel activity records (...)")
    env: dict[str, str]  # the environment that loads it
    folder_env: str  # the variable that names the run's record folder
    prefix: tuple[str, ...] = ()  # a command that wraps the benchmark's, where the platform needs one

    def env_for(self, folder: Path) -> dict[str, str]:
        return {**self.env, self.folder_env: str(folder)}


# -- the roles: what each capability asks of a platform ------------------------------------------


class Compiler(Protocol):
    """compile/: who compiles an architecture here."""

    flag_dialect: str  # which compiler's flag allowlist applies ("clang" or "nvcc")

    async def compile(self, job: CompileJob) -> BackendOutput: ...


class OccupancyRules(Protocol):
    """hardware/ (and compile/): resident waves by the rules of an architecture's vendor."""

    def occupancy(self, spec: HardwareSpec, *, vgprs: int, agprs: int, sgprs: int, lds_bytes: int, block_size: int) -> Occupancy:
        """Resident waves (warps) for these resources (hardware.occupancy checks the inputs first)."""
        ...


class GpuControl(Protocol):
    """gpu/, the gate and hardware/calibration.py: one GPU's monitor, pinning, clock control and
    measured peaks."""

    async def sample(self, gpu: GpuInfo, cwd: str) -> GpuSample | None: ...

    def pin_env(self, gpu: GpuInfo) -> dict[str, str]:
        """The environment that makes a run see this GPU only."""
        ...

    async def lock_clocks(self, gpu: GpuInfo, cwd: str, sclk_mhz: int | None = None) -> str | None:
        """A statement of what was done to hold the clocks, or None when nothing is attempted."""
        ...

    async def unlock_clocks(self, gpu: GpuInfo, cwd: str) -> str | None: ...

    async def calibrate(self, gpu: GpuInfo, folder: Path) -> MeasuredPeaks:
        """This GPU's copy bandwidth, FP32 FMA rate and matrix rate, measured by the vendor's
        calibration program: built with the vendor's compiler into `folder`/build (once per
        source and target), run on this GPU alone with a time limit, its output read strictly.
        Raises BackendMissing where there is no compiler or no GPU of the vendor, CommandFailed
        where the build or the run fails or prints no measurement."""
        ...


class Runtime(Protocol):
    """profile/, trace/ and the ledger: what runs the benchmark under a profiler or tracer."""

    name: str  # "rocm", "cuda" or "offline"

    def can_profile(self) -> bool: ...

    def profiled_clocks(self, lock_note: str | None) -> str:
        """How the clocks stood during this platform's profiled keep runs."""
        ...

    async def profile(self, ws: Workspace, run: Run, request: ProfileRequest, progress: ProgressFn | None) -> tuple[ProfileSummary, list[str]]: ...

    async def trace(self, ws: Workspace, run: Run, request: TraceRequest, progress: ProgressFn | None) -> RunResult: ...

    async def kernel_tracer(self, ws: Workspace) -> KernelTracer:
        """The tracer the ledger's profiler keep metric records kernel times with inside each
        benchmark run. Raises BackendMissing where the platform has none here (the ledger then
        profiles separate runs with `profile`), CommandFailed where building it fails."""
        ...

    def read_kernel_trace(self, folder: Path) -> tuple[pd.DataFrame, list[str]]:
        """The launches a kernel tracer recorded under `folder` (ncu_dispatches' columns, in start
        order), and what makes the record incomplete."""
        ...


class InstructionSet(Protocol):
    """trace/ and profile imports: the platform whose tools wrote an output, and its instruction set."""

    gpu_vendor: str | None  # what the monitors and the hardware tables call its GPUs ("amd", "nvidia")

    def classify(self, mnemonic: str) -> str:
        """The instruction class (valu, salu, vmem_load, lds_read, mfma, waitcnt, barrier, ...)."""
        ...


class PlatformChoice(Protocol):
    """The platform in use and why (platforms.Resolution)."""

    @property
    def name(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def platform(self) -> Runtime: ...


# -- the registry ----------------------------------------------------------------------------


class Vendors(Protocol):
    """Which platform does what: the one rule for "which vendor" (platforms/__init__.py), as an
    object the entry functions receive. `kernel_mcp.platforms.VENDORS` is the only implementation."""

    def resolve(self, configured: str | None, arch: str | None) -> PlatformChoice:
        """The platform a workspace configured so would use on this machine (doctor)."""
        ...

    def of(self, ws: Workspace) -> PlatformChoice:
        """The workspace's platform, resolved once per workspace configuration."""
        ...

    def runtime(self, ws: Workspace, what: str = "profiled") -> Runtime:
        """The platform that runs the benchmark under a profiler or tracer; refused when offline."""
        ...

    def needs_gpu(self, ws: Workspace) -> bool:
        """Whether the workspace's platform refuses to measure without a GPU."""
        ...

    def compiler_for(self, ws: Workspace, arch: str) -> Compiler: ...

    def for_vendor(self, vendor: str) -> OccupancyRules:
        """The platform of an architecture's vendor (a hardware table's `vendor`)."""
        ...

    def for_gpu(self, gpu: GpuInfo) -> GpuControl:
        """The platform of a GPU a monitor reported."""
        ...

    def of_tool(self, source: str) -> InstructionSet:
        """The platform whose tools wrote an output named `source` ("ncu ...", "rocprofv3 ...", "rocpd")."""
        ...

    def inventory(self) -> tuple[MonitorQuery, ...]:
        """Every vendor's GPU listing (gpu.list_gpus runs those whose tool is installed)."""
        ...

    def usage_monitors(self) -> tuple[MonitorQuery, ...]:
        """The monitors the gate asks how busy each GPU is, in the order it tries them."""
        ...

    async def tool_notes(self, cwd: Path) -> list[str]:
        """What doctor says about the installed vendor tools beyond their versions."""
        ...

    async def assembles(self, mnemonic: str, arch: str) -> str | None:
        """An AMD target's assembler on one instruction name: 'exists', 'not on target' or
        'unknown'; None where no assembler is installed or its answer says neither (isa_lookup)."""
        ...
