"""Readers of decoded instruction-level traces, streamed with bounded memory.

- rocprofv3 `--att` UI output (`ui_output_agent_*_dispatch_*/code.json`, also written for PC
  sampling): {"code": [[ISA, _, index, source, codeobj, vaddr, hit, latency, stall, idle, ...]],
  "header": [...]}. Columns are located by name in "header" where present (the layout the ROCprof
  Compute Viewer reads). PC-sampling files add PC_Issued, PC_Stalled and Stall_Reasons, a list
  indexed by rocprofiler-sdk's rocprofiler_pc_sampling_instruction_not_issued_reason_t.
- rocprofv3 `stats_*.csv`: Codeobj, Vaddr, Instruction, Hitcount, Latency, Stall, Idle, Source.
- ncu `--page source --csv --print-source sass` (and `cuda,sass`): per-SASS-instruction warp
  stall samples with one column per stall reason.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import ijson

from kernel_mcp.errors import InvalidInput

PC_STALL_REASONS = ("NONE", "NO_INSTRUCTION_AVAILABLE", "ALU_DEPENDENCY", "WAITCNT", "INTERNAL_INSTRUCTION", "BARRIER_WAIT",
                    "ARBITER_NOT_WIN", "ARBITER_WIN_EX_STALL", "OTHER_WAIT", "SLEEP_WAIT")
UI_DEFAULT_HEADER = ("ISA", "_", "LineNumber", "Source", "Codeobj", "Vaddr", "Hit", "Latency", "Stall", "Idle")


@dataclass
class Instr:
    index: int  # program order
    isa: str
    source: str | None
    hits: float = 0.0
    latency: float = 0.0
    stall: float = 0.0
    idle: float = 0.0
    samples: float = 0.0  # PC or warp-stall samples
    reasons: dict[str, float] = field(default_factory=dict)

    @property
    def mnemonic(self) -> str:
        return mnemonic_of(self.isa)


def mnemonic_of(isa: str) -> str:
    words = isa.split()
    if words and words[0].startswith("@"):  # a SASS predicate guard (@P0, @!P1)
        words = words[1:]
    return words[0] if words else ""


def _header(path: Path) -> list[str]:
    """The "header" list of a code.json, found near either end without reading the rows."""
    import json
    import re

    size = path.stat().st_size
    with path.open("rb") as handle:
        pieces = [handle.read(65536)]
        if size > 65536:
            handle.seek(max(0, size - 65536))
            pieces.append(handle.read())
    for piece in pieces:
        text = piece.decode("utf-8", errors="replace")
        match = re.search(r'"header"\s*:\s*\[', text)
        if match:
            try:
                found, _ = json.JSONDecoder().raw_decode(text, match.end() - 1)
                return [str(x) for x in found]
            except ValueError:
                continue
    return []


def read_code_json(path: Path) -> Iterator[Instr]:
    """Stream the instruction rows of a rocprofv3 UI code.json."""
    program: dict[int, Instr] = {}
    accumulate_code_json(path, program, keep_order=True)
    yield from program.values()


def accumulate_code_json(path: Path, program: dict[int, Instr], keep_order: bool = False) -> int:
    """Add a code.json's rows into `program` (index -> totals), streaming; returns the row count.

    This is the hot loop of multi-gigabyte traces: column positions are resolved once, and a row
    seen before (the same instruction in another dispatch) only adds numbers in place."""
    header = _header(path) or list(UI_DEFAULT_HEADER)
    pos = {name: i for i, name in enumerate(header)}
    missing = [c for c in ("ISA", "Hit", "Latency") if c not in pos]
    if missing:
        raise InvalidInput(f"{path.name}: header lacks {', '.join(missing)}; not a rocprofv3 code.json this reader knows")
    width = min(len(header), 10)
    i_isa, i_idx, i_src, i_hit, i_lat = pos["ISA"], pos.get("LineNumber", 2), pos.get("Source"), pos["Hit"], pos["Latency"]
    i_stall, i_idle = pos.get("Stall"), pos.get("Idle")
    i_iss, i_stl, i_rsn = pos.get("PC_Issued"), pos.get("PC_Stalled"), pos.get("Stall_Reasons")
    count = 0
    with path.open("rb") as handle:
        try:
            for row in ijson.items(handle, "code.item", use_float=True):
                if type(row) is not list or len(row) < width:
                    raise InvalidInput(f"{path.name}: row {count} has {len(row) if isinstance(row, list) else 'no'} fields, the header {len(header)} (inconsistent trace)")
                count += 1
                index = row[i_idx]
                acc = program.get(index)
                if acc is None:
                    isa = row[i_isa]
                    if isa.startswith(";"):
                        continue  # the kernel's label row
                    acc = program[index] = Instr(index=int(index), isa=isa, source=row[i_src] if i_src is not None else None)
                acc.hits += row[i_hit]
                acc.latency += row[i_lat]
                if i_stall is not None:
                    acc.stall += row[i_stall]
                if i_idle is not None:
                    acc.idle += row[i_idle]
                if i_iss is not None:
                    acc.samples += row[i_iss] + row[i_stl]
                    reasons = row[i_rsn] if i_rsn is not None else None
                    if reasons and any(reasons):
                        for k, v in enumerate(reasons):
                            if v:
                                name = PC_STALL_REASONS[k] if k < len(PC_STALL_REASONS) else f"reason_{k}"
                                acc.reasons[name] = acc.reasons.get(name, 0.0) + v
        except ijson.IncompleteJSONError as exc:
            raise InvalidInput(f"{path.name}: the trace ends early after {count} rows (truncated): {exc}") from None
        except ijson.JSONError as exc:
            raise InvalidInput(f"{path.name}: not valid JSON after {count} rows: {exc}") from None
    if count == 0:
        raise InvalidInput(f"{path.name}: no instruction rows")
    return count


STATS_COLUMNS = ("Instruction", "Hitcount", "Latency", "Stall", "Idle")


def read_stats_csv(path: Path) -> Iterator[Instr]:
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in STATS_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InvalidInput(f"{path.name}: lacks {', '.join(missing)}; not a rocprofv3 thread-trace stats CSV")
        for i, row in enumerate(reader):
            try:
                yield Instr(index=i, isa=row["Instruction"], source=row.get("Source") or None, hits=float(row["Hitcount"]),
                            latency=float(row["Latency"]), stall=float(row["Stall"]), idle=float(row["Idle"]))
            except (TypeError, ValueError):
                raise InvalidInput(f"{path.name}: row {i + 2} has a non-numeric value (truncated?)") from None


def _is_library(source: str | None) -> bool:
    return bool(source) and (source.endswith((".h", ".hpp", ".cuh")) or "/include/" in source)


def read_ncu_source(text: str, name: str = "ncu source") -> Iterator[Instr]:
    """SASS rows of an ncu source page export (sass, or cuda+sass with file/line sections).

    In the cuda+sass view one instruction is listed under every source line it belongs to (an
    inlined header function and the kernel line that called it): it is counted once, attributed
    to the kernel's own file where it appears there."""
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    current_file, current_line = None, None
    by_address: dict[str, Instr] = {}
    for row in reader:
        if not row:
            continue
        if row[0] == "File Path":
            current_file = row[1]
            continue
        if row[0] in ("Kernel Name", "Function Name"):
            continue
        if "Address" in row and "Warp Stall Sampling (All Samples)" in row:
            header = row
            continue
        if header is None:
            continue
        if len(row) < len(header):
            raise InvalidInput(f"{name}: a row has {len(row)} fields, the header {len(header)} (truncated?)")
        if header.count("Source") == 1:
            cells = dict(zip(header, row))
            address, sass = cells["Address"], cells["Source"]
        else:  # cuda,sass: "Line No","Source","Address","Source",...
            line_no, address, sass = row[0], row[2], row[3]
            cells = dict(zip(header[4:], row[4:]))
            if line_no:
                current_line = f"{current_file or ''}:{line_no}"
                continue
        if not address.startswith("0x"):
            continue
        seen = by_address.get(address)
        if seen is not None:
            if _is_library(seen.source) and not _is_library(current_line):
                seen.source = current_line
            continue
        reasons = {k[len("stall_"):]: _num(v) for k, v in cells.items() if k.startswith("stall_") and "(Not Issued)" not in k and _num(v)}
        by_address[address] = Instr(index=int(address, 16), isa=sass.strip(), source=current_line, samples=_num(cells.get("Warp Stall Sampling (All Samples)")),
                                    hits=_num(cells.get("Instructions Executed")), reasons=reasons)
    if header is None:
        raise InvalidInput(f"{name}: no ncu source table (expected a header with Address and Warp Stall Sampling)")
    for position, address in enumerate(sorted(by_address, key=lambda a: int(a, 16))):
        instr = by_address[address]
        instr.index = position  # program order; the address stays readable in the run's CSV
        yield instr


def _num(value) -> float:
    try:
        return float(str(value).replace(",", ""))
    except (TypeError, ValueError):
        return 0.0
