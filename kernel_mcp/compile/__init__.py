"""compile_kernel: what the compiler really produced, per kernel, after every edit.

The compiler follows the target and the machine (Vendors.compiler_for): hipcc when ROCm is
installed, the offline clang (device-only) for AMD targets otherwise, nvcc for NVIDIA ones. Each
answer carries registers, LDS,
spills, occupancy with its limiter, the instruction mix, the diagnostics and the change against
the previous compile of the same kernel; the full ISA and compiler output stay as artifacts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp.compile import dynamic_lds
from kernel_mcp.compile.diagnostics import parse_diagnostics
from kernel_mcp.compile.flags import check_defines, check_flags
from kernel_mcp.errors import InvalidInput, WorkspaceError
from kernel_mcp.hardware import load_spec, occupancy
from kernel_mcp.models.compile import BackendOutput, CompileJob, Diagnostic, KernelFacts, merged_notes
from kernel_mcp.runner import ProgressFn
from kernel_mcp.tooling import ToolOutput
from kernel_mcp.workspace import Run, Workspace

if TYPE_CHECKING:
    from kernel_mcp.hardware.specs import HardwareSpec
    from kernel_mcp.models.occupancy import Occupancy
    from kernel_mcp.models.platform import Vendors

SOURCE_SUFFIXES = (".hip", ".cu", ".cpp", ".cc", ".cxx")
MAX_KERNELS_SHOWN = 12
HISTORY_FILE = "compile-history.json"


class CompileAnswer(ToolOutput):
    source: str
    arch: str
    backend: str
    device_only: bool
    ok: bool
    status: str
    kernels: list[KernelFacts]
    kernels_total: int
    diagnostics: list[Diagnostic]
    diagnostics_total: int
    notes: list[str]
    run_id: str
    artifacts: list[str]

    def failed(self) -> bool:
        return not self.ok  # a compile that did not build is an error answer, diagnostics and all

    def render(self) -> str:
        head = f"{self.source} for {self.arch} via {self.backend}: {'ok' if self.ok else 'FAILED'} ({self.status}); run {self.run_id}"
        lines = [head] + [f"note: {n}" for n in self.notes]
        for k in self.kernels:
            lines += kernel_lines(k)
        if self.kernels_total > len(self.kernels):
            lines.append(f"... {self.kernels_total - len(self.kernels)} more kernels in {self.run_id}/summary.json")
        for d in self.diagnostics:
            lines.append(d.render())
        if self.diagnostics_total > len(self.diagnostics):
            lines.append(f"... {self.diagnostics_total - len(self.diagnostics)} more distinct diagnostics in compiler.stderr.log")
        return "\n".join(lines)


def kernel_lines(k: KernelFacts) -> list[str]:
    """One kernel's facts as compile_kernel shows them (compile_import shows them alike)."""
    regs = f"VGPR {k.vgprs} AGPR {k.agprs} SGPR {k.sgprs}" if k.sgprs is not None else f"regs/thread {k.vgprs}"
    spills = k.spills()
    lines = [
        f"kernel {k.name}: {regs}, {k.lds_text()}, scratch {k.scratch_bytes or 0} B, "
        f"spills {spills}" + (" (SPILLS)" if spills else "") + (f", code {k.code_size_bytes} B" if k.code_size_bytes else "")
    ]
    if k.occupancy is not None:
        occ = k.occupancy
        lines.append(f"  occupancy {occ.short()}" + (f"; compiler says {k.compiler_occupancy}" if k.compiler_occupancy is not None else ""))
    mix = ", ".join(f"{key} {value}" for key, value in k.mix.nonzero().items())
    if k.mix.total:  # a remark log has no code: no mix to show, rather than an empty one
        lines.append(f"  mix ({k.mix.total} instr): {mix}")
    if k.changes:
        lines.append(f"  vs previous: {', '.join(k.changes)}")
    return lines


def with_dynamic_lds(kernels: list[KernelFacts], declared: list[str], dynamic_lds_bytes: int | None) -> list[str]:
    """Mark each kernel's dynamic LDS (unknown, or the size given) and say once what occupancy counts."""
    if dynamic_lds_bytes is None and not declared:
        return []
    where = ", ".join(declared[:3]) + (f" and {len(declared) - 3} more" if len(declared) > 3 else "")
    for k in kernels:
        k.dynamic_lds = "unknown" if dynamic_lds_bytes is None else "given"
        k.dynamic_lds_bytes = dynamic_lds_bytes
    if dynamic_lds_bytes is None:
        return [
            f"the source declares dynamic LDS ({where}), sized at launch: LDS shows the compiler's static figure and "
            "occupancy counts static LDS only; give dynamic_lds_bytes (bytes per workgroup) to count it"
        ]
    told = f"the source declares it at {where}" if declared else "though the source declares no extern __shared__ / HIP_DYNAMIC_SHARED"
    return [
        f"occupancy counts {dynamic_lds_bytes:,} B of dynamic LDS per workgroup on top of each kernel's static LDS (the dynamic_lds_bytes argument; {told})"
    ]


def with_occupancy(kernels: list[KernelFacts], arch: str, block_size: int | None, vendors: Vendors) -> list[str]:
    notes: list[tuple[str, str]] = []  # (kernel, what is said of it)
    spec = load_spec(arch)
    for k in kernels:
        if k.vgprs is None:
            continue
        size = block_size or k.max_block_size or 256
        try:
            k.occupancy = _occupancy_for(spec, k, size, vendors)
        except InvalidInput as exc:
            notes.append((k.name, f"occupancy not computed: {exc.message}"))
            continue
        notes += [(k.name, n) for n in k.occupancy.notes]
        origin = "the block_size argument" if block_size else ("the kernel's max workgroup size" if k.max_block_size else "an assumed 256")
        if k.occupancy_lds_bytes():
            notes.append((k.name, f"occupancy assumes blocks of {size} threads ({origin})"))
        if k.compiler_occupancy is not None and k.compiler_occupancy != k.occupancy.waves:
            notes.append((k.name, _compiler_differs(spec, k, size, vendors)))
    return merged_notes(notes)


def _occupancy_for(spec: HardwareSpec, k: KernelFacts, size: int, vendors: Vendors, lds_bytes: int | None = None) -> Occupancy:
    lds = k.occupancy_lds_bytes() if lds_bytes is None else lds_bytes
    return occupancy(spec, vgprs=k.vgprs or 0, agprs=k.agprs or 0, sgprs=k.sgprs or 0, lds_bytes=lds, block_size=size, vendors=vendors)


def _compiler_differs(spec: HardwareSpec, k: KernelFacts, size: int, vendors: Vendors) -> str:
    """Why the compiler's occupancy differs from the calculator's for `size`-thread blocks. The
    compiler only knows the kernel's largest workgroup and reports the best any size up to it
    reaches (a smaller workgroup may fit where the largest leaves slots over)."""
    if k.dynamic_lds_bytes:
        try:
            static_only = _occupancy_for(spec, k, size, vendors, lds_bytes=k.lds_bytes or 0).waves
        except InvalidInput:
            static_only = None
        if static_only == k.compiler_occupancy:  # said alike of every kernel: the occupancy lines hold the figures
            return f"the compiler's occupancy counts static LDS only; the calculator adds the {k.dynamic_lds_bytes:,} B of dynamic LDS given"
    wave = int(spec.value("wave_size"))
    best: tuple[int, int] | None = None
    for smaller in range(wave, size, wave):
        try:
            waves = _occupancy_for(spec, k, smaller, vendors).waves
        except InvalidInput:
            continue
        if waves == k.compiler_occupancy:
            best = (smaller, waves)
    assert k.occupancy is not None  # computed by the caller before it compares
    head = f"the compiler reports {k.compiler_occupancy} waves/SIMD, the calculator {k.occupancy.waves} for {size}-thread blocks"
    if best and k.max_block_size and size == k.max_block_size:
        return head + (f": the compiler counts the best workgroup size up to the kernel's limit of {size} threads ({best[1]} with {best[0]}-thread blocks)")
    return head


def _changes(old: dict, new: KernelFacts) -> list[str]:
    def waves(facts: dict) -> int | None:
        return (facts.get("occupancy") or {}).get("waves")

    pairs = [
        ("VGPRs", old.get("vgprs"), new.vgprs),
        ("AGPRs", old.get("agprs"), new.agprs),
        ("SGPRs", old.get("sgprs"), new.sgprs),
        ("LDS", old.get("lds_bytes"), new.lds_bytes),
        ("scratch", old.get("scratch_bytes"), new.scratch_bytes),
        ("spills", KernelFacts.model_validate(old).spills(), new.spills()),
        ("occupancy", waves(old), new.occupancy.waves if new.occupancy else None),
        ("MFMA", old.get("mix", {}).get("mfma"), new.mix.mfma),
        ("instructions", old.get("mix", {}).get("total"), new.mix.total),
    ]
    return [f"{name} {a} -> {b}" for name, a, b in pairs if a != b and a is not None and b is not None]


def _apply_history(ws: Workspace, key_prefix: str, kernels: list[KernelFacts]) -> None:
    path = ws.state_dir / HISTORY_FILE
    try:
        history = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        history = {}
    for k in kernels:
        key = f"{key_prefix}:{k.symbol}"
        if key in history:
            try:
                k.changes = _changes(history[key], k) or ["no change"]
            except (ValueError, TypeError):
                k.changes = []
        history[key] = k.model_dump(mode="json", exclude={"changes"})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(history), encoding="utf-8")
    tmp.replace(path)


def include_dirs(ws: Workspace) -> list[Path]:
    """The folders of `[compile] include_dirs`, resolved inside the workspace (a link leading out of
    it is refused like a path that does), each an existing folder."""
    folders = []
    for entry in ws.config.compile.include_dirs:
        try:
            folder = ws.resolve(entry, must_exist=True)
        except InvalidInput as exc:
            raise WorkspaceError(f"kernel-mcp.toml [compile] include_dirs: {exc.message}") from None
        if not folder.is_dir():
            raise WorkspaceError(f"kernel-mcp.toml [compile] include_dirs: {entry!r} is not a folder")
        folders.append(folder)
    return folders


def _relative_files(ws: Workspace, diagnostics: list[Diagnostic]) -> None:
    """The compiler is given the source as an absolute path (never an option), so it names it, and
    the headers next to it, that way; the answer names them relative to the workspace as before."""
    prefix = str(ws.root) + "/"
    for d in diagnostics:
        if d.file and d.file.startswith(prefix):
            d.file = d.file[len(prefix) :]


async def compile_kernel(
    ws: Workspace,
    run: Run,
    source: str,
    arch: str | None = None,
    defines: list[str] | None = None,
    flags: list[str] | None = None,
    block_size: int | None = None,
    progress: ProgressFn | None = None,
    dynamic_lds_bytes: int | None = None,
    *,
    vendors: Vendors,
) -> CompileAnswer:
    path = ws.resolve(source, must_exist=True)
    if not path.is_file() or path.suffix not in SOURCE_SUFFIXES:
        raise InvalidInput(f"{source} is not a kernel source file ({', '.join(SOURCE_SUFFIXES)})")
    arch = arch or ws.config.target.arch
    load_spec(arch)  # refuses unknown archs with the list of known ones
    compiler = vendors.compiler_for(ws, arch)
    job = CompileJob(
        ws=ws,
        source=path,
        source_rel=ws.relative(path),
        arch=arch,
        defines=check_defines(defines or []),
        flags=check_flags(flags or [], compiler.flag_dialect),
        run=run,
        progress=progress,
        include_dirs=include_dirs(ws),
    )
    out: BackendOutput = await compiler.compile(job)
    notes = list(out.notes)
    if out.result.timed_out:
        notes.append(f"the compiler was killed after {job.timeout_s:.0f} s")
    if out.ok and not out.kernels:
        notes.append("no kernels in the output (is anything marked __global__?)")
    notes += with_dynamic_lds(out.kernels, dynamic_lds.declarations(path, ws.root), dynamic_lds_bytes)
    notes += with_occupancy(out.kernels, arch, block_size, vendors)
    if out.ok:
        _apply_history(ws, f"{arch}:{job.source_rel}", out.kernels)
    diagnostics, total = parse_diagnostics(out.diagnostic_lines())
    _relative_files(ws, diagnostics)
    if not out.ok and not diagnostics:
        tail = out.result.stderr.tail.strip().splitlines()[-3:]
        diagnostics = [Diagnostic(file=job.source_rel, severity="error", message=" | ".join(tail)[:300] or out.result.status())]
        total = 1
    run.write_json("summary.json", {"kernels": [k.model_dump(mode="json") for k in out.kernels], "notes": notes})
    run.finish(out.result.status(), ok=out.ok, source=job.source_rel, arch=arch, backend=out.backend, isa=out.isa_file)
    return CompileAnswer(
        source=job.source_rel,
        arch=arch,
        backend=out.backend,
        device_only=out.device_only,
        ok=out.ok,
        status=out.result.status(),
        kernels=out.kernels[:MAX_KERNELS_SHOWN],
        kernels_total=len(out.kernels),
        diagnostics=diagnostics,
        diagnostics_total=total,
        notes=notes,
        run_id=run.id,
        artifacts=[run.uri(name) for name in run.files()],
    )
