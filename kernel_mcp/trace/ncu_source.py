"""ncu's source page as CSV (`ncu --import R.ncu-rep --page source --csv --print-source sass` or
`cuda,sass`): per SASS instruction, warp-stall samples with one column per stall reason, and the
source counters (shared-memory wavefronts: actual, ideal, excessive).

Layouts, as Nsight Compute 2025.3 writes them (tests/data/cuda/ncu_source_bank_*.csv):
- sass: `"Kernel Name","<name>"`, then a header row ("Address","Source",...) and one row per
  instruction; every kernel of the report in turn. Each kernel's section is printed twice, the same
  numbers both times: a repeated section is one launch, not two.
- cuda,sass: `"File Path","<file>"`, `"Function Name","<name>"`, a header ("Line No","Source",
  "Address","Source",...), then source-line rows (Line No set) each followed by its SASS rows. One
  function comes in one section per source file it has lines in (an inlined header, the kernel's
  file), and one instruction may be listed under several lines: it is counted once, attributed to
  the kernel's own file where it appears there.

Kernels are kept apart; addresses are the report's own (absolute).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from kernel_mcp import limits
from kernel_mcp.errors import InvalidInput
from kernel_mcp.trace.readers import Instr, KernelBlock, check_finite

SOURCE = "ncu source counters"  # the name summaries give this output
# Where each warp-stall reason's samples go (Nsight Compute's stall reasons, `stall_*` columns):
# scoreboard and throttle reasons name the memory the warp waits on.
REASON_CATEGORY = {
    "long_sb": "VMEM wait",
    "lg": "VMEM wait",
    "tex": "VMEM wait",
    "drain": "VMEM wait",
    "short_sb": "LDS/SMEM wait",
    "mio": "LDS/SMEM wait",
    "imc": "LDS/SMEM wait",
    "barrier": "barrier",
    "membar": "barrier",
    "math": "VALU",
    "wait": "VALU",
    "not_selected": "issue contention",
    "branch_resolving": "branch",
    "no_inst": "idle",
    "dispatch": "other",
    "misc": "other",
    "sleep": "idle",
    "sleeping": "idle",
}
ISSUED_REASON = "selected"  # a sample of a warp that issued: issue, not stall
GLOBAL_WAIT_REASON = "long_sb"  # waiting on global or local memory (the long scoreboard)
SHARED_WAIT_REASONS = ("short_sb", "mio")  # waiting on shared memory: short scoreboard, MIO throttle
LOADS_FOR_REASON = {"long_sb": ("vmem_load",), "short_sb": ("lds_read", "lds_other"), "mio": ("lds_read", "lds_write", "lds_other")}
SHARED_COLUMNS = ("L1 Wavefronts Shared", "L1 Wavefronts Shared Ideal", "L1 Wavefronts Shared Excessive")


@dataclass
class NcuKernel:
    """One kernel launch of the report."""

    name: str
    launch: int  # 1, 2, ... for launches of the same kernel
    block: KernelBlock
    has_shared_columns: bool


def read_ncu_source(text: str, name: str = "ncu source"):
    """Every SASS row of every kernel (compatibility: callers that take one program)."""
    for kernel in read_ncu_kernels(text, name):
        yield from kernel.block.program.values()


def read_ncu_kernels(text: str, name: str = "ncu source") -> list[NcuKernel]:
    try:
        return _kernels(text, name)
    except InvalidInput as exc:
        raise exc if exc.message.startswith(name) else InvalidInput(f"{name}: {exc.message}") from None
    except csv.Error as exc:  # e.g. a field over the csv module's 131,072-character limit
        raise InvalidInput(f"{name}: not a readable CSV: {exc}") from None


def _is_library(source: str | None) -> bool:
    return bool(source and (source.endswith((".h", ".hpp", ".cuh")) or "/include/" in source))


class _Section:
    def __init__(self, kernel: str) -> None:
        self.kernel = kernel
        self.by_address: dict[str, Instr] = {}
        self.shared_columns = False


def _kernels(text: str, name: str) -> list[NcuKernel]:
    reader = csv.reader(io.StringIO(text))
    sections: list[_Section] = []
    section: _Section | None = None
    header: list[str] | None = None
    current_file = current_line = None
    pending_function: str | None = None
    for number, row in enumerate(reader, 1):
        if number > limits.PROFILE_CSV_MAX_ROWS:
            raise InvalidInput(f"{name}: over {limits.PROFILE_CSV_MAX_ROWS} rows")
        if not row:
            continue
        if row[0] == "File Path":
            current_file = row[1] if len(row) > 1 else None
            continue
        if row[0] == "Kernel Name":  # sass view: each section its own (a repeat is dropped below)
            section = _Section(row[1] if len(row) > 1 else "")
            sections.append(section)
            header = None
            continue
        if row[0] == "Function Name":  # cuda,sass view: a function continues across file sections
            pending_function = row[1] if len(row) > 1 else ""
            if section is None or section.kernel != pending_function:
                section = _Section(pending_function)
                sections.append(section)
            header = None
            continue
        if "Address" in row and "Warp Stall Sampling (All Samples)" in row:
            header = row
            if section is None:  # a table with no kernel line before it
                section = _Section("")
                sections.append(section)
            section.shared_columns = section.shared_columns or all(c in row for c in SHARED_COLUMNS)
            continue
        if header is None or section is None:
            continue
        if len(row) < len(header):
            raise InvalidInput(f"{name}: a row has {len(row)} fields, the header {len(header)} (truncated?)")
        if header.count("Source") == 1:
            cells = dict(zip(header, row))
            address, sass = cells["Address"], cells["Source"]
        else:  # cuda,sass: "Line No","Source","Address","Source",...
            if len(row) < 4:
                raise InvalidInput(f"{name}: row {number} has {len(row)} fields; a cuda,sass row has at least 4")
            line_no, address, sass = row[0], row[2], row[3]
            cells = dict(zip(header[4:], row[4:]))
            if line_no:
                current_line = f"{current_file or ''}:{line_no}"
                continue
        if not address.startswith("0x"):
            continue
        try:
            offset = int(address, 16)
        except ValueError:
            raise InvalidInput(f"{name}: row {number} has the address {address[:40]!r}, not a hexadecimal number") from None
        seen = section.by_address.get(address)
        if seen is not None:
            if _is_library(seen.source) and not _is_library(current_line):
                seen.source = current_line
            continue
        reasons = {k[len("stall_") :]: _num(v) for k, v in cells.items() if k.startswith("stall_") and "(Not Issued)" not in k and _num(v)}
        section.by_address[address] = Instr(
            index=offset,
            isa=sass.strip(),
            source=current_line,
            address=offset,
            samples=_num(cells.get("Warp Stall Sampling (All Samples)")),
            hits=_num(cells.get("Instructions Executed")),
            issued=reasons.get(ISSUED_REASON, 0.0),
            reasons=reasons,
            shared_wavefronts=_num(cells.get(SHARED_COLUMNS[0])),
            shared_ideal=_num(cells.get(SHARED_COLUMNS[1])),
            shared_excess=_num(cells.get(SHARED_COLUMNS[2])),
        )
    if not any(s.by_address for s in sections):
        raise InvalidInput(f"{name}: no ncu source table (expected a header with Address and Warp Stall Sampling)")
    return _launches([s for s in sections if s.by_address], name)


def _launches(sections: list[_Section], name: str) -> list[NcuKernel]:
    """Sections turned into launches: one identical to an earlier one of its kernel is the repeat
    ncu prints, not a launch of its own."""
    out: list[NcuKernel] = []
    seen: dict[str, list[tuple]] = {}
    for s in sections:
        fingerprint = tuple((a, i.samples, i.hits) for a, i in s.by_address.items())
        earlier = seen.setdefault(s.kernel, [])
        if fingerprint in earlier:
            continue
        earlier.append(fingerprint)
        program: dict[int, Instr] = {}
        for position, instr in enumerate(sorted(s.by_address.values(), key=lambda i: i.index)):
            instr.index = position  # program order; the address stays on the instruction
            program[position] = instr
        check_finite(program, name)
        out.append(
            NcuKernel(name=s.kernel, launch=len(earlier), block=KernelBlock(name=s.kernel, symbol=None, program=program), has_shared_columns=s.shared_columns)
        )
    return out


def _num(value) -> float:
    try:
        number = float(str(value).replace(",", ""))
    except (TypeError, ValueError):
        return 0.0
    if not math.isfinite(number):  # "inf" or "1e999" in a sample count: no JSON answer can carry it
        raise InvalidInput(f"the value {str(value)[:40]!r} is not a finite number")
    return number
