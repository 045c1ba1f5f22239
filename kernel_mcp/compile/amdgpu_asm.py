"""Reading what clang's AMDGPU backend writes: resource remarks, the assembly and its metadata.

Three sources, cross-checked: the `-Rpass-analysis=kernel-resource-usage` remarks on stderr
(VGPRs, AGPRs, SGPRs, scratch, spills, LDS, occupancy), the `amdhsa.kernels` code-object
metadata at the end of the `.s` file (counts, max workgroup size), and the `; Kernel info:`
comment block (code size). The instruction mix is counted from each kernel's body.
"""

from __future__ import annotations

import re
from collections import defaultdict

from kernel_mcp.compile.models import InstructionMix, KernelFacts

_REMARK = re.compile(r"^(?P<loc>[^\n]*?): remark:\s+(?P<key>[^:\[]+?)(?: \[[^\]]*\])?:\s*(?P<value>\S+)\s*\[-Rpass-analysis=kernel-resource-usage\]")
_REMARK_KEYS = {
    "Function Name": "symbol",
    "TotalSGPRs": "sgprs",
    "VGPRs": "vgprs",
    "AGPRs": "agprs",
    "ScratchSize": "scratch_bytes",
    "Occupancy": "compiler_occupancy",
    "SGPRs Spill": "sgpr_spills",
    "VGPRs Spill": "vgpr_spills",
    "LDS Size": "lds_bytes",
}
_META_KEYS = {
    ".name": "name",
    ".symbol": "symbol_kd",
    ".vgpr_count": "vgprs",
    ".agpr_count": "agprs",
    ".sgpr_count": "sgprs",
    ".vgpr_spill_count": "vgpr_spills",
    ".sgpr_spill_count": "sgpr_spills",
    ".group_segment_fixed_size": "lds_bytes",
    ".private_segment_fixed_size": "scratch_bytes",
    ".max_flat_workgroup_size": "max_block_size",
}


def parse_remarks(stderr: str) -> dict[str, dict[str, int | str]]:
    """symbol -> resource figures, from the kernel-resource-usage remarks."""
    out: dict[str, dict[str, int | str]] = {}
    current: dict[str, int | str] | None = None
    for line in stderr.splitlines():
        match = _REMARK.match(line)
        if not match:
            continue
        key = match.group("key").strip()
        value = match.group("value")
        field = _REMARK_KEYS.get(key)
        if field == "symbol":
            current = out.setdefault(value, {"symbol": value})
        elif field and current is not None:
            try:
                current[field] = int(value)
            except ValueError:
                current[field] = value
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


def code_sizes(asm: str) -> list[int]:
    return [int(m) for m in re.findall(r"^; codeLenInByte = (\d+)", asm, flags=re.M)]


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


def kernels_from(asm: str, stderr: str) -> list[KernelFacts]:
    remarks = parse_remarks(stderr)
    meta = parse_metadata(asm)
    bodies = kernel_bodies(asm)
    sizes = code_sizes(asm)
    facts = []
    kernel_symbols = list(meta) or list(remarks)
    for index, symbol in enumerate(kernel_symbols):
        figures: dict[str, int | str] = {}
        figures.update(meta.get(symbol, {}))
        figures.update({k: v for k, v in remarks.get(symbol, {}).items() if k != "symbol"})
        facts.append(
            KernelFacts(
                name=display_name(symbol),
                symbol=symbol,
                vgprs=_int(figures.get("vgprs")),
                agprs=_int(figures.get("agprs")),
                sgprs=_int(figures.get("sgprs")),
                scratch_bytes=_int(figures.get("scratch_bytes")),
                vgpr_spills=_int(figures.get("vgpr_spills")),
                sgpr_spills=_int(figures.get("sgpr_spills")),
                lds_bytes=_int(figures.get("lds_bytes")),
                max_block_size=_int(figures.get("max_block_size")),
                compiler_occupancy=_int(figures.get("compiler_occupancy")),
                code_size_bytes=sizes[index] if index < len(sizes) and len(sizes) == len(kernel_symbols) else None,
                mix=mix_of(bodies.get(symbol, [])),
            )
        )
    return facts


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
