"""Reading what nvcc tells: `-Xptxas -v` resource lines, `cuobjdump -res-usage`, and SASS."""

from __future__ import annotations

import re
from collections import defaultdict

from kernel_mcp.compile.amdgpu_asm import display_name
from kernel_mcp.models.compile import InstructionMix, KernelFacts, merged_notes

_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_PROPS = re.compile(r"Function properties for (?P<name>\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")
_RES_FN = re.compile(r"^\s*Function (?P<name>[^:]+):\s*$")
_RES = re.compile(r"(\w+(?:\[\d+\])?):(\d+)")


def parse_ptxas(text: str) -> dict[str, dict[str, int]]:
    """function -> registers, stack, spills, barriers, shared from `ptxas info` lines."""
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            current = out.setdefault(m.group("name"), {})
        elif m := _PROPS.search(line):
            current = out.setdefault(m.group("name"), {})
        elif (m := _FRAME.search(line)) and current is not None:
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        elif (m := _USED.search(line)) and current is not None:
            current["registers"] = int(m.group(1))
            if m.group(2):
                current["barriers"] = int(m.group(2))
            if m.group(3):
                current["shared"] = int(m.group(3))
    return out


def parse_res_usage(text: str) -> dict[str, dict[str, int]]:
    """function -> REG, STACK, SHARED, LOCAL... from `cuobjdump -res-usage`."""
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        if m := _RES_FN.match(line):
            current = out.setdefault(m.group("name").strip(), {})
        elif current is not None and "REG:" in line:
            current.update({k: int(v) for k, v in _RES.findall(line)})
            current = None
    return out


def sass_listing(sass: str) -> dict[str, list[str]]:
    """function -> its SASS instruction lines (address and text, encodings dropped), from `cuobjdump -sass`."""
    bodies: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in sass.splitlines():
        if m := re.match(r"^\s*Function : (\S+)", line):
            current = bodies.setdefault(m.group(1), [])
        elif current is not None and re.match(r"^\s*/\*[0-9a-f]{4}\*/", line):
            current.append(re.sub(r"\s*/\*\s*0x[0-9a-f]+\s*\*/\s*$", "", line.strip()))
    return bodies


def sass_bodies(sass: str) -> dict[str, list[str]]:
    """function -> SASS instruction mnemonics."""
    out = {}
    for name, lines in sass_listing(sass).items():
        out[name] = [m.group(1) for line in lines if (m := re.match(r"^/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line))]
    return out


def classify_sass(op: str) -> str:
    base = op.split(".")[0]
    if base in ("HMMA", "HGMMA", "IMMA", "QGMMA", "IGMMA", "BMMA", "DMMA"):
        return "mfma"
    if base in ("LDG", "LDGSTS", "LD", "UBLKCP", "UTMALDG"):
        return "vmem_load"
    if base in ("STG", "ST", "UTMASTG", "RED"):
        return "vmem_store"
    if base in ("ATOM", "ATOMG"):
        return "vmem_atomic"
    if base in ("LDS", "LDSM"):
        return "lds_read"
    if base in ("STS", "STSM"):
        return "lds_write"
    if base in ("ATOMS",):
        return "lds_other"
    if base in ("LDC", "ULDC"):
        return "smem"
    if base in ("BAR", "SYNCS", "WARPSYNC"):
        return "barrier"
    if base in ("DEPBAR",):
        return "waitcnt"
    if base in ("BRA", "BRX", "JMP", "CALL", "RET", "EXIT", "BSSY", "BSYNC"):
        return "branch"
    if base.startswith("U"):
        return "salu"
    if base in ("NOP",):
        return "other"
    return "valu"


def sass_mix(ops: list[str]) -> InstructionMix:
    counts: dict[str, int] = defaultdict(int)
    for op in ops:
        counts[classify_sass(op)] += 1
    return InstructionMix(total=len(ops), **counts)


def static_shared(ptxas: dict[str, int], res: dict[str, int]) -> int | None:
    """One figure for a kernel's static shared memory: ptxas's, the compiler's own account of the
    kernel (no "bytes smem" on its line means none). cuobjdump's SHARED is used only when ptxas did
    not describe the kernel: CUDA 13's cuobjdump adds the per-block system reservation to it, which
    occupancy already counts (see shared_memory_notes)."""
    if ptxas:
        return ptxas.get("shared", 0)
    return res.get("SHARED")


def shared_memory_notes(ptxas_text: str, res_usage: str, reserved_per_block: int | None) -> list[str]:
    """Where cuobjdump and ptxas disagree on a kernel's shared memory, say so and which is used;
    kernels that disagree the same way share one note."""
    info, res = parse_ptxas(ptxas_text), parse_res_usage(res_usage)
    notes: list[tuple[str, str]] = []
    for symbol, p in info.items():
        dumped = res.get(symbol, {}).get("SHARED")
        compiled = p.get("shared", 0)
        if dumped is None or dumped == compiled:
            continue
        why = (
            (
                f"the {dumped - compiled} B difference is the per-block system reservation, which this cuobjdump includes; "
                "LDS shows ptxas's figure and occupancy adds the reservation once"
            )
            if reserved_per_block and dumped - compiled == reserved_per_block
            else "they disagree by an amount that is not the per-block reservation; LDS shows ptxas's figure"
        )
        notes.append((display_name(symbol), f"cuobjdump -res-usage says SHARED {dumped} B, ptxas {compiled} B: {why}"))
    return merged_notes(notes)


def kernels_from(ptxas: str, res_usage: str, sass: str) -> list[KernelFacts]:
    info = parse_ptxas(ptxas)
    res = parse_res_usage(res_usage)
    bodies = sass_bodies(sass)
    facts = []
    for symbol in info or res:
        p, r = info.get(symbol, {}), res.get(symbol, {})
        facts.append(
            KernelFacts(
                name=display_name(symbol),
                symbol=symbol,
                vgprs=r.get("REG", p.get("registers")),
                scratch_bytes=p.get("stack", r.get("STACK")),
                spill_stores_bytes=p.get("spill_stores"),
                spill_loads_bytes=p.get("spill_loads"),
                lds_bytes=static_shared(p, r),
                mix=sass_mix(bodies.get(symbol, [])),
            )
        )
    return facts
