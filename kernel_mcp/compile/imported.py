"""compile_import: compile_kernel's per-kernel facts from compiler output made elsewhere.

It reads what a compile on another machine left: hipcc/amdclang `--save-temps` assembly (`.s`),
logs holding the `-Rpass-analysis=kernel-resource-usage` remarks (either order, any order of the
files), Triton's `.amdgcn` and the metadata `.json` Triton writes beside it. The readings are
compile_kernel's own (amdgpu_asm.read_kernels), so an imported kernel has the same figures as
the compile of its source here.

Triton sizes LDS at launch: its assembly states 0 B ("compile time only") though the code reads
and writes LDS, and the size is the metadata's `shared`. So a kernel whose code uses LDS while
the file states none is never shown as 0 B: its LDS is "sized at launch", or the metadata's figure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernel_mcp import safe_files
from kernel_mcp.arch_registry import arch_names
from kernel_mcp.compile import MAX_KERNELS_SHOWN, kernel_lines, with_occupancy
from kernel_mcp.compile.amdgpu_asm import instruction_lines, kernel_bodies, parse_kernel_info, parse_metadata, read_kernels
from kernel_mcp.compile.amdgpu_remarks import TAG
from kernel_mcp.errors import InvalidInput
from kernel_mcp.hardware import load_spec
from kernel_mcp.models.compile import KernelFacts
from kernel_mcp.tooling import ToolOutput

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors
    from kernel_mcp.workspace import Workspace

ASSEMBLY_SUFFIXES = (".s", ".amdgcn")
MAX_FILES = 16
# the target as each kind of file names it: the assembler directive, a compile command in a log
# (`--offload-arch=`, `-mcpu=`) or a `--save-temps` file name (`...-hip-amdgcn-amd-amdhsa-gfx942.s`)
_ASM_TARGET = re.compile(r'^\s*\.amdgcn_target\s+"amdgcn-amd-amdhsa-[^"]*?-(gfx[0-9a-z]+)', re.M)
_LOG_TARGET = re.compile(r"(?:--offload-arch=|-mcpu=|amdgcn-amd-amdhsa-+)(gfx[0-9a-z]+)")
# LDS instructions that need no allocation: lane permutes go through the LDS hardware only
_NO_ALLOCATION = ("ds_bpermute", "ds_permute", "ds_swizzle")


class CompileImportAnswer(ToolOutput):
    files: list[str]  # each file and how it was read
    arch: str
    arch_from: str  # the file that named the target, or the arch argument
    kernels: list[dict[str, Any]]  # compile_kernel's kernel facts (KernelFacts), as it answers them
    kernels_total: int
    notes: list[str]

    def render(self) -> str:
        lines = [f"{len(self.files)} file(s) for {self.arch} (arch from {self.arch_from}): " + "; ".join(self.files)]
        lines += [f"note: {n}" for n in self.notes]
        for k in self.kernels:
            lines += kernel_lines(KernelFacts.model_validate(k))
        if self.kernels_total > len(self.kernels):
            lines.append(f"... {self.kernels_total - len(self.kernels)} more kernels")
        return "\n".join(lines)


@dataclass
class _Files:
    assembly: list[tuple[str, str]] = field(default_factory=list)  # (path, text)
    remark_lines: list[str] = field(default_factory=list)
    triton: dict[str, tuple[str, dict]] = field(default_factory=dict)  # kernel name -> (path, metadata)
    read_as: list[str] = field(default_factory=list)
    archs: list[tuple[str, str]] = field(default_factory=list)  # (arch, path)


def _triton_metadata(rel: str, text: str) -> dict:
    try:
        data = json.loads(text)
    except ValueError:
        raise InvalidInput(f"{rel} is not JSON; a .json is read as Triton's kernel metadata") from None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or "shared" not in data:
        raise InvalidInput(f"{rel} is not Triton kernel metadata (no 'name' and 'shared')")
    return data


def _read(ws: Workspace, paths: list[str]) -> _Files:
    files = _Files()
    for rel in dict.fromkeys(paths):
        path, within = ws.import_path(rel)  # the workspace, or a folder [imports] names; no way out of either
        text = safe_files.read_text(path, rel, within=within)
        suffix = path.suffix.lower()
        if suffix in ASSEMBLY_SUFFIXES:
            if not (parse_metadata(text) or parse_kernel_info(text) or kernel_bodies(text)):
                raise InvalidInput(f"{rel} holds no AMDGPU kernel (no amdhsa.kernels metadata, kernel info or function body)")
            files.assembly.append((rel, text))
            files.read_as.append(f"{rel} (assembly)")
            match = _ASM_TARGET.search(text)
            found = match.group(1) if match else None
        elif suffix == ".json":
            data = _triton_metadata(rel, text)
            files.triton[data["name"]] = (rel, data)
            files.read_as.append(f"{rel} (Triton metadata)")
            target = data.get("target")
            arch = target.get("arch") if isinstance(target, dict) else data.get("arch")
            found = arch if isinstance(arch, str) and re.fullmatch(r"gfx[0-9a-z]+", arch) else None
        else:
            lines = [line for line in text.splitlines() if TAG in line]
            if not lines:
                raise InvalidInput(f"{rel} holds no {TAG} remarks", hint="give .s/.amdgcn assembly, remark logs, or Triton's .json")
            files.remark_lines += lines
            files.read_as.append(f"{rel} (resource remarks)")
            match = _LOG_TARGET.search(text)
            found = match.group(1) if match else None
        if found:
            files.archs.append((found, rel))
    return files


def _target(files: _Files, arch: str | None, default: str) -> tuple[str, str, list[str]]:
    named = sorted({a for a, _ in files.archs})
    if len(named) > 1:
        raise InvalidInput("the files are for different targets: " + ", ".join(f"{rel}: {a}" for a, rel in files.archs))
    if named:
        found, where = files.archs[0]
        notes = [f"the arch argument {arch} is not used: {where} names {found}"] if arch and arch != found else []
        return found, where, notes
    if arch:
        return arch, "the arch argument", []
    return default, "the workspace's [target] arch (no file names one)", []


def _uses_lds(body: list[str]) -> bool:
    return any(line.split()[0].startswith("ds_") and not line.split()[0].startswith(_NO_ALLOCATION) for line in instruction_lines(body))


def _launch_lds(kernels: list[KernelFacts], bodies: dict[str, list[str]], triton: dict[str, tuple[str, dict]], rel: str) -> list[str]:
    """LDS that a file does not size (Triton's, sized at launch): the metadata's figure, or unknown."""
    notes = []
    for k in kernels:
        meta = triton.get(k.symbol) or triton.get(k.name)
        if meta is not None:
            where, data = meta
            shared = data.get("shared")
            if isinstance(shared, int) and shared >= 0:
                k.dynamic_lds, k.dynamic_lds_bytes = "given", max(0, shared - (k.lds_bytes or 0))
                notes.append(f"{k.name}: LDS {shared:,} B per workgroup from {where} ('shared', sized at launch by Triton)")
            warps, wave = data.get("num_warps"), (data.get("target") or {}).get("warp_size") or data.get("warp_size")
            if k.max_block_size is None and isinstance(warps, int) and isinstance(wave, int):
                k.max_block_size = warps * wave
            continue
        if not k.lds_bytes and _uses_lds(bodies.get(k.symbol, [])):
            k.lds_bytes, k.dynamic_lds = None, "unknown"
            notes.append(
                f"{k.name}: its code reads or writes LDS but {rel} states no LDS size: sized at launch, not in this file "
                "(for Triton, give its metadata .json); occupancy counts no LDS"
            )
    return notes


def compile_import(ws: Workspace, paths: list[str], arch: str | None, *, vendors: Vendors) -> CompileImportAnswer:
    if not paths:
        raise InvalidInput("give at least one file")
    if len(paths) > MAX_FILES:
        raise InvalidInput(f"at most {MAX_FILES} files at once")
    files = _read(ws, paths)
    target, arch_from, notes = _target(files, arch, ws.config.target.arch)
    load_spec(target)  # refuses unknown targets with the list of known ones
    if target not in arch_names("amd"):
        raise InvalidInput(f"compile_import reads AMD compiler output; {target} is not an AMD target")
    kernels: list[KernelFacts] = []
    seen: set[str] = set()
    for rel, asm in files.assembly:
        found, checks = read_kernels(asm, files.remark_lines)
        fresh = [k for k in found if k.symbol not in seen]
        notes += checks + [f"{k.name}: also in {rel}; the first file's figures are kept" for k in found if k.symbol in seen]
        seen.update(k.symbol for k in fresh)
        notes += _launch_lds(fresh, kernel_bodies(asm), files.triton, rel)
        kernels += fresh
    if files.remark_lines:
        # kernels the remarks name and no assembly holds: the remarks alone give their figures
        kernels += [k for k in read_kernels("", files.remark_lines)[0] if k.symbol not in seen]
    unmatched = [name for name in files.triton if not any(name in (k.symbol, k.name) for k in kernels)]
    if unmatched:
        notes.append(f"Triton metadata for {', '.join(unmatched)} matches no kernel of the assembly given")
    if not kernels:
        raise InvalidInput("no kernel in the files given", hint="give the .s/.amdgcn assembly or a log of resource remarks")
    notes += with_occupancy(kernels, target, None, vendors)
    return CompileImportAnswer(
        files=files.read_as,
        arch=target,
        arch_from=arch_from,
        kernels=[k.model_dump(mode="json") for k in kernels[:MAX_KERNELS_SHOWN]],
        kernels_total=len(kernels),
        notes=notes,
    )
