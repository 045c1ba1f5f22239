"""Which vendor does the work, decided in one place.

`resolve` is the only rule for "which platform": the workspace's `[target] platform` when set,
else what the target and this machine's tools allow. `of(ws)` resolves once per workspace
configuration; `for_gpu` and `for_vendor` pick the module for a GPU the monitor reported or an
architecture's vendor; `compiler_for` picks who compiles an arch (a gfx target on an NVIDIA machine
compiles with the offline clang while its benchmarks run on the NVIDIA GPU). Every vendor string
test of the project lives in this package (tests/test_contracts.py checks that).

Capability packages never import this package: `VENDORS`, these functions as one object (the
`models.platform.Vendors` protocol), is what the server hands them, and they pass it on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp.errors import InvalidInput, KernelMcpError, WorkspaceError
from kernel_mcp.models.platform import ProfileRequest, TraceRequest
from kernel_mcp.platforms import cuda, offline, rocm
from kernel_mcp.platforms.base import Platform

if TYPE_CHECKING:
    from kernel_mcp.models.gpu import GpuInfo, MonitorQuery
    from kernel_mcp.workspace import Workspace

__all__ = [
    "VENDORS",
    "Platform",
    "ProfileRequest",
    "Registry",
    "Resolution",
    "TraceRequest",
    "compiler_for",
    "for_gpu",
    "for_vendor",
    "inventory",
    "needs_gpu",
    "of",
    "of_tool",
    "resolve",
    "runtime",
    "tool_notes",
    "usage_monitors",
]

PLATFORMS: dict[str, Platform] = {"rocm": rocm.PLATFORM, "cuda": cuda.PLATFORM, "offline": offline.PLATFORM}
BY_VENDOR: dict[str, Platform] = {"amd": rocm.PLATFORM, "nvidia": cuda.PLATFORM}


@dataclass(frozen=True)
class Resolution:
    platform: Platform
    reason: str

    @property
    def name(self) -> str:
        return self.platform.name


def for_vendor(vendor: str) -> Platform:
    """The module of an architecture's or a GPU's vendor ("amd", "nvidia")."""
    try:
        return BY_VENDOR[vendor]
    except KeyError:
        raise InvalidInput(f"no platform for vendor {vendor!r}", hint="known: " + ", ".join(BY_VENDOR)) from None


def for_gpu(gpu: GpuInfo) -> Platform:
    return BY_VENDOR.get(gpu.vendor, offline.PLATFORM)


def of_tool(source: str) -> Platform:
    """The platform whose tools wrote an output named `source` ("ncu ...", "rocprofv3 ...",
    "rocpd", "rocprof-compute ..."): its GPUs and instruction set are the output's."""
    for platform in BY_VENDOR.values():
        if platform.outputs and source.startswith(platform.outputs):
            return platform
    return offline.PLATFORM


def _arch_vendor(arch: str | None) -> str | None:
    from kernel_mcp.arch_registry import registry

    try:
        entry = registry().get(arch or "")
    except KernelMcpError:  # no docs index: the tools that need one say so
        return None
    return entry.vendor if entry else None  # an unknown arch is refused by the tool that uses it


def resolve(configured: str | None, arch: str | None) -> Resolution:
    """The platform in use: the workspace's choice, else what the target and the machine allow.

    A machine "has" a vendor when any of its tools is installed (compiler, profiler or monitor)."""
    if configured and configured != "auto":
        return Resolution(PLATFORMS[configured], "set in kernel-mcp.toml")
    present = {name: p for name, p in PLATFORMS.items() if name != "offline" and p.installed()}
    vendor = _arch_vendor(arch)
    native = BY_VENDOR.get(vendor) if vendor else None
    if native is not None and vendor:  # (native implies vendor; said for the type checker)
        if native.name in present:
            return Resolution(native, f"target {arch} and {native.toolkit} found")
        others = [p for p in present.values() if p is not native and p.runs_here()]
        if others:  # the benchmark builds itself (a HIP source through a portability header, say)
            other = others[0]
            facts = "compiles offline" if offline.PLATFORM.compiles(vendor) else f"has no compiler here (neither {native.toolkit} nor the offline clang)"
            return Resolution(other, f"target {arch} {facts}; benchmarks and profiles run on the {other.maker} GPU here")
        if offline.PLATFORM.compiles(vendor):
            return Resolution(offline.PLATFORM, f"target {arch} but no {native.toolkit} here: compile facts from the offline clang only")
        return Resolution(offline.PLATFORM, f"target {arch} but no {native.toolkit} here")
    for p in present.values():
        return Resolution(p, f"{p.toolkit} tools or {p.maker} GPUs found")
    return Resolution(offline.PLATFORM, "no GPU toolchain found: compile facts only (offline clang)")


_RESOLVED: dict[tuple, Resolution] = {}


def of(ws: Workspace) -> Resolution:
    """The workspace's platform, resolved once per (workspace, configuration)."""
    target = ws.config.target
    key = (str(ws.root), target.platform, target.arch)
    if key not in _RESOLVED:
        _RESOLVED[key] = resolve(target.platform, target.arch)
    return _RESOLVED[key]


def runtime(ws: Workspace, what: str = "profiled") -> Platform:
    """The platform that runs the benchmark under a profiler or tracer; refused when offline."""
    chosen = of(ws).platform
    if chosen is offline.PLATFORM:
        raise WorkspaceError(f"platform = 'offline': nothing can be {what} here", hint="use profile_import / thread_trace_import for output made elsewhere")
    return chosen


def needs_gpu(ws: Workspace) -> bool:
    """A workspace that names a GPU platform refuses to measure without a GPU; 'auto' and
    'offline' may run a CPU benchmark."""
    return ws.config.target.platform in PLATFORMS and PLATFORMS[ws.config.target.platform].gpu_vendor is not None


def compiler_for(ws: Workspace, arch: str) -> Platform:
    """Who compiles `arch` here: its vendor's toolkit when installed (and not excluded by the
    workspace's platform), else the offline clang where it can, else the vendor's module, whose
    compile says what is missing."""
    from kernel_mcp.hardware import load_spec

    vendor = load_spec(arch).vendor
    native = for_vendor(vendor)
    configured = ws.config.target.platform
    if configured in PLATFORMS and configured not in (native.name, "offline"):
        raise InvalidInput(f"arch {arch} is an {native.maker} target, but the workspace sets platform = {configured!r}")
    if configured == "offline" and not offline.PLATFORM.builds_for(vendor):
        raise InvalidInput(f"arch {arch} needs the {native.name} platform, but the workspace sets platform = 'offline'")
    if configured != "offline" and native.compiles(vendor):
        return native
    if not offline.PLATFORM.builds_for(vendor):
        return native  # no other compiler for it: its compile names what is missing
    if configured == native.name:
        raise WorkspaceError(f"platform = {native.name!r} but its compiler was not found", hint=f"install {native.toolkit} or set platform = 'offline'")
    return offline.PLATFORM


def inventory() -> tuple[MonitorQuery, ...]:
    """Every vendor's GPU listing, AMD's first (the order doctor has always listed GPUs in)."""
    return tuple(query for platform in BY_VENDOR.values() for query in platform.inventory)


# The gate asks the first of these that is installed how busy each GPU is: nvidia-smi first, as it
# always has (its report names each GPU's compute processes; the AMD tools cannot).
USAGE_ORDER: tuple[Platform, ...] = (cuda.PLATFORM, rocm.PLATFORM)


def usage_monitors() -> tuple[MonitorQuery, ...]:
    return tuple(query for platform in USAGE_ORDER for query in platform.usage_monitors)


async def tool_notes(cwd: Path) -> list[str]:
    """What doctor says about the installed vendor tools beyond their versions."""
    return [note for platform in PLATFORMS.values() for note in await platform.tool_notes(cwd)]


async def assembles(mnemonic: str, arch: str) -> str | None:
    """The offline clang's assembler judges whether an AMD instruction exists (platforms/offline/assembler.py)."""
    from kernel_mcp.platforms.offline import assembler

    return await assembler.check(mnemonic, arch)


class Registry:
    """The functions above as one object (models.platform.Vendors): server.py hands `VENDORS` to
    the capability packages, which never import this package, and a Ray task receives it pickled."""

    resolve = staticmethod(resolve)
    of = staticmethod(of)
    runtime = staticmethod(runtime)
    needs_gpu = staticmethod(needs_gpu)
    compiler_for = staticmethod(compiler_for)
    for_vendor = staticmethod(for_vendor)
    for_gpu = staticmethod(for_gpu)
    of_tool = staticmethod(of_tool)
    inventory = staticmethod(inventory)
    usage_monitors = staticmethod(usage_monitors)
    tool_notes = staticmethod(tool_notes)
    assembles = staticmethod(assembles)


VENDORS = Registry()
