"""The one contract every vendor keeps (psutil's model: one public API, a folder per platform
behind it). Capability code asks a `Platform` and never tests a vendor string itself.

A platform is where things run and what runs them: the compiler and its resource facts, the
profiler (kernel times and counters), the tracer, the GPU monitor, the environment that pins a
run to one GPU, clock control, and the classifier of its instruction set. Capability code sees it
through the roles of models/platform.py (Compiler, OccupancyRules, Runtime, GpuControl,
InstructionSet), each the part one capability uses; a `Platform` is all of them, plus what the
registry (platforms/__init__.py) decides with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kernel_mcp.models.platform import Compiler, GpuControl, InstructionSet, OccupancyRules, Runtime

if TYPE_CHECKING:  # types only: importing a platform must stay cheap
    from pathlib import Path

    from kernel_mcp.models.gpu import MonitorQuery


class Platform(Compiler, OccupancyRules, Runtime, GpuControl, InstructionSet, Protocol):
    name: str  # "rocm", "cuda" or "offline": the value kernel-mcp.toml's [target] platform takes
    toolkit: str  # how a person names what to install ("ROCm", "CUDA", "the offline clang")
    maker: str  # who makes its GPUs, as a person writes it ("AMD", "NVIDIA")

    # read-only (a property here), so that a vendor may declare it as a plain class attribute of a narrower type
    @property
    def profiler(self) -> str | None: ...  # the profiler executable it runs

    outputs: tuple[str, ...]  # how the outputs its tools write are named (a summary's `source` starts so)
    profiler_locks_clocks: bool  # whether its profiler holds the clocks steady while measuring
    inventory: tuple[MonitorQuery, ...]  # how its monitor lists the GPUs (doctor, gpu.list_gpus)
    usage_monitors: tuple[MonitorQuery, ...]  # how its monitors tell how busy each GPU is (the gate)

    def installed(self) -> bool:
        """Whether any of its tools (compiler, profiler, monitor) is on this machine."""
        ...

    def runs_here(self) -> bool:
        """Whether a GPU of its vendor can be measured here (its monitor or profiler is installed)."""
        ...

    def builds_for(self, arch_vendor: str) -> bool:
        """Whether its compiler targets that vendor's architectures at all."""
        ...

    def compiles(self, arch_vendor: str) -> bool:
        """Whether its compiler is installed and builds for that vendor's architectures."""
        ...

    def counter_base_name(self, name: str) -> str:
        """The name the profiler's counter listing uses for `name`."""
        ...

    async def tool_notes(self, cwd: Path) -> list[str]:
        """What doctor says about its installed tools beyond their versions (rocprofv3's output format)."""
        ...
