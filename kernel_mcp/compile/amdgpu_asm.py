"""Reading what clang's AMDGPU backend writes: resource remarks, the assembly and its metadata.

Three readings of one compile, cross-checked: the `-Rpass-analysis=kernel-resource-usage`
remarks on stderr (amdgpu_remarks.py), the `; Kernel info:` comment block after each kernel in
the `.s` (registers, scratch, LDS, the compiler's `; Occupancy:`, code size) and the
`amdhsa.kernels` code-object metadata at its end (counts, spills, max workgroup size). Where two
readings of the same figure differ, the answer keeps the assembly's and says so. The
instruction mix is counted from each kernel's body.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from kernel_mcp.compile.amdgpu_remarks import parse_remarks  # (part of this module's interface)
from kernel_mcp.models.compile import InstructionMix, KernelFacts

_META_KEYS = {
    ".name": "name",
    ".symbol": "symbol_kd",
    # on gfx90a and later .vgpr_count is the unified count (arch VGPRs aligned to 4, plus AGPRs)
    ".vgpr_count": "total_vgprs",
    ".agpr_count": "agprs",
    ".sgpr_count": "sgprs",
    ".vgpr_spill_count": "vgpr_spills",
    ".sgpr_spill_count": "sgpr_spills",
    ".group_segment_fixed_size": "lds_bytes",
    ".private_segment_fixed_size": "scratch_bytes",
    ".max_flat_workgroup_size": "max_block_size",
}
# `; Kernel info:` comment lines -> fields. ROCm 6.x writes `NumSgprs`, LLVM 19 and later
# `TotalNumSgprs`; both count VCC and the other extra SGPRs, like the remarks' SGPR figure.
_INFO_KEYS = {
    "codeLenInByte": "code_size_bytes",
    "NumSgprs": "sgprs",
    "TotalNumSgprs": "sgprs",
    "NumVgprs": "vgprs",
    "NumAgprs": "agprs",
    "TotalNumVgprs": "total_vgprs",
    "ScratchSize": "scratch_bytes",
    "LDSByteSize": "lds_bytes",
    "Occupancy": "compiler_occupancy",
    "NumSGPRsForWavesPerEU": "occupancy_sgprs",
    "NumVGPRsForWavesPerEU": "occupancy_vgprs",
}
_INFO_LINE = re.compile(r"^; (?P<key>[A-Za-z]+)\s*[:=]\s*(?P<value>\S+)")
_SIZE = re.compile(r"^\s*\.size\s+(?P<symbol>[^,\s]+)\s*,")
_LABELS = {
    "sgprs": "SGPRs",
    "vgprs": "VGPRs",
    "agprs": "AGPRs",
    "total_vgprs": "VGPRs+AGPRs",
    "scratch_bytes": "scratch bytes",
    "lds_bytes": "LDS bytes",
    "compiler_occupancy": "occupancy",
    "vgpr_spills": "VGPR spills",
    "sgpr_spills": "SGPR spills",
}


def _number(text: str) -> int | str:
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def parse_kernel_info(asm: str) -> dict[str, dict[str, int | str]]:
    """symbol -> figures from the `; Kernel info:` block the compiler writes after each kernel
    (device functions get a `; Function info:` block, which is skipped)."""
    out: dict[str, dict[str, int | str]] = {}
    symbol: str | None = None
    block: dict[str, int | str] | None = None
    for line in asm.splitlines():
        size = _SIZE.match(line)
        if size:
            symbol, block = size.group("symbol"), None
            continue
        if line.startswith("; Kernel info:"):
            block = out.setdefault(symbol, {}) if symbol else None
            continue
        if line.startswith("; Function info:") or (block is not None and not line.startswith(";")):
            block = None
            continue
        if block is not None:
            match = _INFO_LINE.match(line)
            field = _INFO_KEYS.get(match.group("key")) if match else None
            if match and field and field not in block:
                block[field] = _number(match.group("value"))
    return out


def parse_metadata(asm: str) -> dict[str, dict[str, int | str]]:
    """name -> figures from the `amdhsa.kernels:` YAML block (one `- ` item per kernel)."""
    start = asm.find("amdhsa.kernels:")
    if start < 0:
        return {}
    out: dict[str, dict[str, int | str]] = {}
    item: dict[str, int | str] = {}
    for line in asm[start:].splitlines()[1:]:
        if line and not line.startswith(" "):
            break  # end of the block (amdhsa.target: ...)
        stripped = line.strip()
        if stripped.startswith("- ") and line.startswith("  - "):
            if item.get("name"):
                out[str(item["name"])] = item
            item = {}
            stripped = stripped[2:]
        if line.startswith("      "):
            continue  # nested (.args entries)
        key, _, value = stripped.partition(":")
        field = _META_KEYS.get(key.strip())
        if field:
            value = value.strip()
            item[field] = int(value) if value.lstrip("-").isdigit() else value
    if item.get("name"):
        out[str(item["name"])] = item
    return out


def kernel_bodies(asm: str) -> dict[str, list[str]]:
    """symbol -> the lines of its body (from its label to .Lfunc_end)."""
    functions = set(re.findall(r"^\s*\.type\s+([\w.$]+),@function", asm, flags=re.M))
    bodies: dict[str, list[str]] = {}
    current: str | None = None
    for line in asm.splitlines():
        if current is None:
            match = re.match(r"^([A-Za-z_.$][\w.$]*):", line)
            if match and match.group(1) in functions:
                current = match.group(1)
                bodies[current] = []
            continue
        if line.startswith(".Lfunc_end"):
            current = None
            continue
        bodies[current].append(line)
    return bodies


def instruction_lines(body: list[str]) -> list[str]:
    """The machine instructions of a body: no labels, directives or comments."""
    out = []
    for line in body:
        text = line.split(";", 1)[0].strip()
        if not text or text.endswith(":") or text.startswith("."):
            continue
        out.append(text)
    return out


def classify(mnemonic: str) -> str:
    m = mnemonic
    if m.startswith(("v_mfma", "v_smfmac")):
        return "mfma"
    if m.startswith("s_waitcnt"):
        return "waitcnt"
    if m in ("s_barrier", "s_barrier_signal", "s_barrier_wait"):
        return "barrier"
    if m.startswith(("s_cbranch", "s_branch", "s_setpc", "s_swappc")):
        return "branch"
    if m.startswith(("s_load", "s_buffer_load", "s_store", "s_buffer_store", "s_dcache", "s_scratch")):
        return "smem"
    if m.startswith(("global_load", "buffer_load", "flat_load", "scratch_load")):
        return "vmem_load"
    if m.startswith(("global_store", "buffer_store", "flat_store", "scratch_store")):
        return "vmem_store"
    if m.startswith(("global_atomic", "buffer_atomic", "flat_atomic")):
        return "vmem_atomic"
    if m.startswith(("ds_read", "ds_load")):
        return "lds_read"
    if m.startswith(("ds_write", "ds_store")):
        return "lds_write"
    if m.startswith("ds_"):
        return "lds_other"
    if m.startswith("v_"):
        return "valu"
    if m.startswith("s_"):
        return "salu" if m not in ("s_endpgm", "s_nop", "s_setprio", "s_sleep") else "other"
    return "other"


def mix_of(body: list[str]) -> InstructionMix:
    counts: dict[str, int] = defaultdict(int)
    lines = instruction_lines(body)
    for text in lines:
        counts[classify(text.split()[0])] += 1
    return InstructionMix(total=len(lines), **counts)


def display_name(symbol: str) -> str:
    """The source-level name of a (possibly Itanium-mangled) symbol: `_Z4convPKf...` -> `conv`."""
    match = re.match(r"^_Z(?:N\d*)?(\d+)(\w+)", symbol)
    if not match:
        return symbol
    length = int(match.group(1))
    name, rest = match.group(2)[:length], match.group(2)[length:]
    # integer template arguments (`ILi4ELb1EE` -> <4, 1>) tell instantiations apart
    args = re.match(r"^I((?:L[a-z]n?\d+E)+)E", rest)
    if args:
        values = re.findall(r"L[a-z](n?\d+)E", args.group(1))
        name += "<" + ", ".join(v.replace("n", "-") for v in values) + ">"
    return name


def _cross_check(name: str, readings: list[tuple[str, dict[str, int | str]]]) -> list[str]:
    """A note for every figure two readings give differently (the first reading is kept)."""
    notes = []
    for field, label in _LABELS.items():
        seen = [(where, figures[field]) for where, figures in readings if isinstance(figures.get(field), int)]
        if len({value for _, value in seen}) > 1:
            kept_where, kept = seen[0]
            others = ", ".join(f"{where} {value}" for where, value in seen[1:] if value != kept)
            notes.append(f"{name}: {label} differ between readings of the compile: {kept_where} {kept} (kept), {others}")
    return notes


def read_kernels(asm: str, compiler_output: str | Iterable[str]) -> tuple[list[KernelFacts], list[str]]:
    """Each kernel's facts from the .s (kernel-info comments, then metadata) and the resource
    remarks in the compiler's output, with a note wherever they disagree. Without a .s the
    remarks alone give the figures."""
    remarks = parse_remarks(compiler_output)
    info = parse_kernel_info(asm) if asm else {}
    meta = parse_metadata(asm) if asm else {}
    bodies = kernel_bodies(asm) if asm else {}
    facts, notes = [], []
    for symbol in list(meta) or list(info) or list(remarks):
        readings = [
            (where, figures)
            for where, figures in (
                ("the .s kernel info", info.get(symbol, {})),
                ("the code-object metadata", meta.get(symbol, {})),
                ("the resource remarks", remarks.get(symbol, {})),
            )
            if figures
        ]
        figures: dict[str, int | str] = {}
        for _, reading in reversed(readings):  # earlier readings win
            figures.update({k: v for k, v in reading.items() if isinstance(v, int)})
        agprs = _int(figures.get("agprs"))
        vgprs = _int(figures.get("vgprs"))
        total = _int(figures.get("total_vgprs"))
        if vgprs is None and total is not None:
            vgprs = total - agprs if agprs else total  # metadata alone counts AGPRs in .vgpr_count
        name = display_name(symbol)
        notes += _cross_check(name, readings)
        facts.append(
            KernelFacts(
                name=name,
                symbol=symbol,
                vgprs=vgprs,
                agprs=agprs,
                sgprs=_int(figures.get("sgprs")),
                scratch_bytes=_int(figures.get("scratch_bytes")),
                vgpr_spills=_int(figures.get("vgpr_spills")),
                sgpr_spills=_int(figures.get("sgpr_spills")),
                lds_bytes=_int(figures.get("lds_bytes")),
                max_block_size=_int(figures.get("max_block_size")),
                compiler_occupancy=_int(figures.get("compiler_occupancy")),
                code_size_bytes=_int(figures.get("code_size_bytes")),
                mix=mix_of(bodies.get(symbol, [])),
            )
        )
    return facts, notes


def kernels_from(asm: str, compiler_output: str | Iterable[str]) -> list[KernelFacts]:
    return read_kernels(asm, compiler_output)[0]


def _int(value: int | str | None) -> int | None:
    return value if isinstance(value, int) else None


_LOC = re.compile(r"^\s*\.loc\s+\d+\s+\d+\s+\d+[^;]*;\s*(?P<chain>.*)$")
_FILE_LINE = re.compile(r"([^\s@\[\]]+):(\d+):(\d+)")


def source_line_of(loc_comment: str, source_name: str) -> int | None:
    """The line in the compiled source a `.loc` comment points to (through inlining chains)."""
    hits = _FILE_LINE.findall(loc_comment)
    for path, line, _col in reversed(hits):
        if path.endswith(source_name) and int(line) > 0:
            return int(line)
    return None


def annotate_lines(body: list[str], source_name: str) -> list[tuple[int | None, str]]:
    """(source line, instruction) pairs, following the .loc directives."""
    current: int | None = None
    out = []
    for line in body:
        match = _LOC.match(line)
        if match:
            found = source_line_of(match.group("chain"), source_name)
            current = found if found is not None else current
            continue
        text = line.split(";", 1)[0].rstrip()
        stripped = text.strip()
        if not stripped or stripped.startswith((".cfi", ".file", ".p2align", ".Ltmp")):
            continue
        out.append((current, text))
    return out
