"""`doctor`: what this machine can do for kernel work, and which tools are live because of it; and
each GPU's measured peaks beside its product table (hardware/calibration.py), measuring the idle
GPUs that have none for their driver."""

from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
from pydantic import BaseModel

from kernel_mcp import __version__, gpu, sandbox, toolchain
from kernel_mcp.errors import KernelMcpError
from kernel_mcp.gpu import GpuInfo
from kernel_mcp.toolchain import ExecutableInfo
from kernel_mcp.tooling import READ_ONLY, ServerState, ToolContext, ToolInput, ToolOutput, ToolSpec
from kernel_mcp.untrusted import inline
from kernel_mcp.workspace import Workspace

if TYPE_CHECKING:
    from kernel_mcp.models.calibration import MeasuredPeaks
    from kernel_mcp.models.platform import Vendors


@dataclass(frozen=True)
class Requirement:
    key: str
    satisfied_by: tuple[str, ...]  # executable names, any one suffices
    hint: str


# What a tool may need; `requires` in a ToolSpec names these keys.
REQUIREMENTS = {
    "compiler": Requirement("compiler", ("hipcc", "amdclang++", "nvcc", toolchain.OFFLINE_CLANG), toolchain.OFFLINE_HINT),
    "profiler": Requirement("profiler", ("rocprofv3", "ncu"), "install rocprofiler-sdk (rocprofv3) or Nsight Compute (ncu)"),
    "gpu-monitor": Requirement("gpu-monitor", ("amd-smi", "rocm-smi", "nvidia-smi"), "install amd-smi/rocm-smi or nvidia-smi"),
}


class ToolLiveness(BaseModel):
    tool: str
    live: bool
    missing: str | None = None


class DoctorResult(ToolOutput):
    kernel_mcp_version: str
    platform: str
    platform_reason: str
    workspace: str | None = None
    workspace_problem: str | None = None
    executables: list[ExecutableInfo]
    gpus: list[GpuInfo]
    tools: list[ToolLiveness]
    boundary: str  # how runs of workspace code are sealed here ("Landlock ABI 7 ...; own PID and mount namespaces"), or "unsealed: why"
    notes: list[str] = []

    def render(self) -> str:
        lines = [f"kernel-mcp {self.kernel_mcp_version}; platform: {self.platform} ({self.platform_reason})"]
        lines.append(
            f"boundary around workspace code: {self.boundary}"
            + ("" if not self.boundary.startswith("unsealed") else " - the ledger keeps nothing measured unsealed unless [harness] allow_unsealed = true")
        )
        lines.append(f"workspace: {self.workspace or '-'}" + (f"  PROBLEM: {self.workspace_problem}" if self.workspace_problem else ""))
        lines.append("executables:")
        for exe in self.executables:
            if exe.found:
                lines.append(f"  {exe.name:<13} {exe.role:<11} {exe.version or '?':<22} {exe.path}" + (f"  ({exe.note})" if exe.note else ""))
            else:
                lines.append(f"  {exe.name:<13} {exe.role:<11} missing: {exe.note}")
        lines.append(f"gpus: {len(self.gpus)}")
        for g in self.gpus:
            mem = f"{g.memory_total_mib / 1024:.0f} GiB" if g.memory_total_mib else "? GiB"
            product = f"product {g.product}" if g.product else "product unknown: no floors or peaks for it"
            lines.append(f"  [{g.index}] {g.vendor} {g.name} {g.arch or ''} {mem}; {product}" + (f" (device {g.device_id})" if g.device_id else ""))
        live = [t.tool for t in self.tools if t.live]
        lines.append(f"live tools: {', '.join(live) or '-'}")
        for t in self.tools:
            if not t.live:
                lines.append(f"  not live: {t.tool}: {t.missing}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def liveness(
    tools: Iterable[tuple[str, tuple[str, ...]]], exes: list[ExecutableInfo], gpus: list[GpuInfo], ws_problem: str | None, has_benchmark: bool
) -> list[ToolLiveness]:
    found = {e.name for e in exes if e.found}
    out = []
    for name, requires in tools:
        missing = []
        for key in requires:
            if key == "workspace" and ws_problem:
                missing.append(ws_problem)
            elif key == "benchmark" and not ws_problem and not has_benchmark:
                missing.append("kernel-mcp.toml has no [benchmark] table")
            elif key == "gpu" and not gpus:
                missing.append("no GPU found")
            elif key in REQUIREMENTS and not found & set(REQUIREMENTS[key].satisfied_by):
                missing.append(REQUIREMENTS[key].hint)
        out.append(ToolLiveness(tool=name, live=not missing, missing="; ".join(missing) or None))
    return out


async def measured_peaks(ws: Workspace, gpus: list[GpuInfo], vendors: Vendors, cwd: str) -> list[str]:
    """Each GPU's measured peaks beside its product table, as doctor's notes: the measurement kept
    for its driver, else one made now. The GPUs without one are measured together, each only when
    the gate finds it idle and under its lock (a benchmark on it would be disturbed, and disturb
    the figures); one that is busy, held by a run, or fails to measure says why."""
    from kernel_mcp.gpu import gate
    from kernel_mcp.hardware import calibration, load_spec

    kept = {i: calibration.cached(ws, g) for i, g in enumerate(gpus)}
    todo = [i for i, peaks in kept.items() if peaks is None]
    fresh: dict[int, MeasuredPeaks] = {}
    problems: dict[int, str] = {}
    if todo:
        try:
            status = await gate.gpu_status(ws.config.gate, cwd, vendors=vendors)
        except KernelMcpError as exc:
            status = None
            problems = {i: f"whether it is idle could not be told: {exc.message}" for i in todo}
        states = {(s.gpu.vendor, s.gpu.index): s for s in status.gpus} if status else {}

        async def one(i: int) -> None:
            state = states.get((gpus[i].vendor, gpus[i].index))
            if state is None:
                problems.setdefault(i, "the gate's monitor does not list it, so it cannot be held alone to be measured")
                return
            held_elsewhere = "held by another kernel-mcp run; doctor measures it when it is free"
            if state.locked:
                problems[i] = held_elsewhere
                return
            if not state.idle:
                problems[i] = f"not idle ({state.reason}); doctor measures it when it is"
                return
            with gate.hold(state.gpu) as held:
                if not held:  # taken since the gate looked
                    problems[i] = held_elsewhere
                    return
                try:
                    fresh[i] = await calibration.measure(ws, gpus[i], vendors)
                except KernelMcpError as exc:
                    problems[i] = f"measuring failed: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")
                except OSError as exc:
                    problems[i] = f"the measurement could not be kept: {exc.strerror or exc}"

        async with anyio.create_task_group() as group:
            for i in todo:
                group.start_soon(one, i)
    lines = []
    for i, g in enumerate(gpus):
        peaks = kept[i] or fresh.get(i)
        if peaks is None:
            lines.append(f"GPU {g.index} ({inline(g.product or g.name)}): peaks not measured: {inline(problems.get(i, 'no measurement'))}")
            continue
        entry = g.product_entry()
        lines += calibration.describe(g, peaks, load_spec(entry.arch, entry) if entry else None, fresh=i in fresh)
    return lines


async def diagnose(state: ServerState, tools: Iterable[tuple[str, tuple[str, ...]]]) -> DoctorResult:
    ws_problem = None
    ws: Workspace | None = None
    ws_path = None
    notes_first: list[str] = []
    configured = None
    arch = None
    has_benchmark = False
    cwd = os.getcwd()
    try:
        ws = state.workspace()
        ws_path = str(ws.root)
        cwd = ws_path
        configured = ws.config.target.platform
        arch = ws.config.target.arch
        has_benchmark = ws.config.benchmark is not None
        engine = ws.config.engine
        if engine.kind == "ray":
            import importlib.util

            have_ray = importlib.util.find_spec("ray") is not None
            notes_first = [
                f"experiment_evaluate_many engine: ray at {engine.address}" + ("" if have_ray else " - but ray is not installed: pip install 'kernel-mcp[ray]'")
            ]
        else:
            notes_first = [f"experiment_evaluate_many engine: local, {engine.slots or 'one per idle GPU'} slot(s)"]
    except KernelMcpError as exc:
        ws_problem = exc.message
    exes = await toolchain.probe_all(cwd)
    gpus, notes = await gpu.list_gpus(cwd, vendors=state.vendors)
    notes = notes_first + notes + await state.vendors.tool_notes(Path(cwd))
    if gpus and ws is not None:
        try:
            notes += await measured_peaks(ws, gpus, state.vendors, cwd)
        except KernelMcpError as exc:  # a state folder that is a link, say: the rest of the report stands
            notes.append(f"measured peaks: none read or measured: {exc.message}")
    elif gpus:
        notes.append("measured peaks: none shown or measured without a workspace (they are kept in its .kernel-mcp/calibration/)")
    if sandbox.available() is None:
        isolated, missing = sandbox.isolation()
        if isolated is None:
            notes.append(
                f"runs of workspace code get no namespaces of their own ({missing}): Landlock still keeps their "
                "writes in, but a run can prlimit, renice or signal other processes of this user, the server and "
                "BEST's runs included, and what it leaves running is only swept by the server after it ends"
            )
        elif not isolated.proc:
            notes.append(
                f"runs of workspace code see the machine's /proc ({isolated.proc_why}): every process is "
                "visible to them, and some entries of this user's processes (autogroup nice, oom_score_adj) writable"
            )
    resolution = state.vendors.resolve(configured, arch)
    platform, reason = resolution.name, resolution.reason
    return DoctorResult(
        kernel_mcp_version=__version__,
        platform=platform,
        platform_reason=reason,
        workspace=ws_path,
        workspace_problem=ws_problem,
        executables=exes,
        gpus=gpus,
        tools=liveness(tools, exes, gpus, ws_problem, has_benchmark),
        boundary=sandbox.mechanism(),
        notes=notes,
    )


class DoctorInput(ToolInput):
    pass


async def _doctor(args: DoctorInput, ctx: ToolContext) -> DoctorResult:
    # liveness of every tool the server publishes (the server hands them over in its state)
    return await diagnose(ctx.state, [(s.name, s.requires) for s in ctx.state.tools])


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "doctor",
        "What this machine has (compilers, profilers, GPU monitors, GPUs) and which tools work here, or what to install. Call it first.",
        DoctorInput,
        DoctorResult,
        _doctor,
        READ_ONLY,
        toolset="core",
    ),
]
