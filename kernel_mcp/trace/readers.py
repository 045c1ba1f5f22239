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
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

import ijson

from kernel_mcp import limits
from kernel_mcp.errors import InvalidInput
from kernel_mcp.trace.jsonstream import DepthGuard, code_rows, flat_array, line_structured

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
    """The "header" list of a code.json, found near either end without reading the rows.

    Only a flat list of names is taken (scanned by hand, no recursive decoder), so a header nested
    thousands deep costs one 64 KiB window, not a stack overflow."""
    import json

    size = path.stat().st_size
    with path.open("rb") as handle:
        pieces = [handle.read(65536)]
        if size > 65536:
            handle.seek(max(0, size - 65536))
            pieces.append(handle.read())
    for piece in pieces:
        text = piece.decode("utf-8", errors="replace")
        match = re.search(r'"header"\s*:\s*\[', text)
        if not match:
            continue
        flat = flat_array(text, match.end() - 1)
        if flat is None:
            continue
        try:
            found = json.loads(flat)
        except ValueError:
            continue
        if len(found) > limits.MAX_ROW_FIELDS:
            raise InvalidInput(f"{path.name}: the header names {len(found)} columns, over the {limits.MAX_ROW_FIELDS} this reader accepts")
        return [str(x) for x in found]
    return []


def read_code_json(path: Path) -> Iterator[Instr]:
    """Stream the instruction rows of a rocprofv3 UI code.json."""
    program: dict[int, Instr] = {}
    accumulate_code_json(path, program, keep_order=True)
    yield from program.values()


_NUMBER = (int, float)


def accumulate_code_json(path: Path, program: dict[int, Instr], keep_order: bool = False) -> int:
    """Add a code.json's rows into `program` (index -> totals), streaming; returns the row count.

    This is the hot loop of multi-gigabyte traces: column positions are resolved once, and a row
    seen before (the same instruction in another dispatch) only adds numbers in place. Memory is
    bounded by the program (MAX_INSTRUCTIONS), not by the file."""
    limits.check_size(path, limits.CODE_JSON_MAX_BYTES, "thread trace")
    header = _header(path) or list(UI_DEFAULT_HEADER)
    pos = {name: i for i, name in enumerate(header)}
    missing = [c for c in ("ISA", "Hit", "Latency") if c not in pos]
    if missing:
        raise InvalidInput(f"{path.name}: header lacks {', '.join(missing)}; not a rocprofv3 code.json this reader knows")
    i_isa, i_idx, i_src, i_hit, i_lat = pos["ISA"], pos.get("LineNumber", 2), pos.get("Source"), pos["Hit"], pos["Latency"]
    i_stall, i_idle = pos.get("Stall"), pos.get("Idle")
    i_iss, i_stl, i_rsn = pos.get("PC_Issued"), pos.get("PC_Stalled"), pos.get("Stall_Reasons")
    numeric = [i for i in (i_hit, i_lat, i_stall, i_idle, i_iss, i_stl) if i is not None]
    if i_iss is not None and i_stl is None:
        raise InvalidInput(f"{path.name}: header has PC_Issued without PC_Stalled")
    width = max(p for p in (i_isa, i_idx, i_src, i_rsn, *numeric) if p is not None) + 1
    count, max_rows = 0, limits.MAX_ROWS_PER_FILE
    with path.open("rb") as handle:
        try:
            # Indented files (what rocprofv3 writes) go through ijson's fast item builder behind the
            # depth guard; a file without line breaks through the flat events, which bound the depth
            # themselves at a third of the speed.
            rows = ijson.items(DepthGuard(handle, path), "code.item", use_float=True) if line_structured(path) else code_rows(handle, path)
            for row in rows:
                if type(row) is not list:
                    raise InvalidInput(f"{path.name}: row {count} is {type(row).__name__}, not a list")
                if len(row) < width:
                    raise InvalidInput(f"{path.name}: row {count} has {len(row)} fields, the header {len(header)} (inconsistent trace)")
                if count >= max_rows:
                    raise InvalidInput(f"{path.name}: over {max_rows} rows; one dispatch's code.json has one row per instruction")
                count += 1
                index = row[i_idx]
                if type(index) is not int:
                    raise InvalidInput(f"{path.name}: row {count - 1} has the instruction index {index!r:.40}, not an integer")
                acc = program.get(index)
                if acc is None:
                    isa = row[i_isa]
                    if type(isa) is not str:
                        raise InvalidInput(f"{path.name}: row {count - 1} has the instruction {isa!r:.40}, not text")
                    if isa.startswith(";"):
                        continue  # the kernel's label row
                    source = row[i_src] if i_src is not None else None
                    if source is not None and type(source) is not str:
                        raise InvalidInput(f"{path.name}: row {count - 1} has the source {source!r:.40}, neither text nor null")
                    if len(program) >= limits.MAX_INSTRUCTIONS:
                        raise InvalidInput(f"{path.name}: over {limits.MAX_INSTRUCTIONS} distinct instructions; no kernel is that long")
                    acc = program[index] = Instr(index=index, isa=isa, source=source)
                # Numbers are added unchecked (this loop is the cost of a large trace): text, null
                # or a list where a number belongs raises TypeError, turned into a clear error below.
                acc.hits += row[i_hit]
                acc.latency += row[i_lat]
                if i_stall is not None:
                    acc.stall += row[i_stall]
                if i_idle is not None:
                    acc.idle += row[i_idle]
                if i_iss is not None:
                    acc.samples += row[i_iss] + row[i_stl]  # type: ignore[index]
                    reasons = row[i_rsn] if i_rsn is not None else None
                    if reasons and any(reasons):
                        if type(reasons) is not list:
                            raise TypeError(f"Stall_Reasons is {type(reasons).__name__}")
                        for k, v in enumerate(reasons):
                            if v:
                                name = PC_STALL_REASONS[k] if k < len(PC_STALL_REASONS) else f"reason_{k}"
                                acc.reasons[name] = acc.reasons.get(name, 0.0) + v
        except TypeError as exc:
            raise InvalidInput(f"{path.name}: row {count - 1} holds a value of the wrong type where a number belongs ({exc})") from None
        except ijson.IncompleteJSONError as exc:
            raise InvalidInput(f"{path.name}: the trace ends early after {count} rows (truncated): {exc}") from None
        except ijson.JSONError as exc:
            raise InvalidInput(f"{path.name}: not valid JSON after {count} rows: {exc}") from None
        except UnicodeDecodeError:
            raise InvalidInput(f"{path.name}: not UTF-8 text after {count} rows") from None
    if count == 0:
        raise InvalidInput(f"{path.name}: no instruction rows")
    _check_finite(program, path)
    return count


def _check_finite(program: dict[int, Instr], path: Path) -> None:
    """A number like 1e999 reads as infinity, which no JSON answer can carry. Checked on the sums
    (an infinite or NaN term makes its sum so), each summed in C: this runs once per file."""
    values = program.values()
    sums = [sum(map(attrgetter(name), values)) for name in ("hits", "latency", "stall", "idle", "samples")]
    sums.append(sum(sum(r.values()) for r in map(attrgetter("reasons"), values) if r))
    if not all(math.isfinite(s) for s in sums):
        raise InvalidInput(f"{path.name}: the trace's counts sum to a number that is not finite (a value out of range?)")


STATS_COLUMNS = ("Instruction", "Hitcount", "Latency", "Stall", "Idle")


def read_stats_csv(path: Path) -> Iterator[Instr]:
    limits.check_size(path, limits.PROFILE_CSV_MAX_BYTES, "thread trace stats")
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        try:
            reader = csv.DictReader(handle)
            missing = [c for c in STATS_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise InvalidInput(f"{path.name}: lacks {', '.join(missing)}; not a rocprofv3 thread-trace stats CSV")
            for i, row in enumerate(reader):
                if i >= limits.PROFILE_CSV_MAX_ROWS:
                    raise InvalidInput(f"{path.name}: over {limits.PROFILE_CSV_MAX_ROWS} rows")
                try:
                    values = [float(row[c]) for c in STATS_COLUMNS[1:]]
                except (TypeError, ValueError):
                    raise InvalidInput(f"{path.name}: row {i + 2} has a non-numeric value (truncated?)") from None
                if not all(math.isfinite(v) for v in values):
                    raise InvalidInput(f"{path.name}: row {i + 2} has a value that is not a finite number")
                isa = row["Instruction"]
                if not isinstance(isa, str):
                    raise InvalidInput(f"{path.name}: row {i + 2} has no instruction (truncated?)")
                source = row.get("Source")
                yield Instr(index=i, isa=isa, source=source if isinstance(source, str) and source else None,
                            hits=values[0], latency=values[1], stall=values[2], idle=values[3])
        except csv.Error as exc:  # e.g. a field over the csv module's 131,072-character limit
            raise InvalidInput(f"{path.name}: not a readable CSV: {exc}") from None


def _is_library(source: str | None) -> bool:
    return bool(source) and (source.endswith((".h", ".hpp", ".cuh")) or "/include/" in source)


def read_ncu_source(text: str, name: str = "ncu source") -> Iterator[Instr]:
    """SASS rows of an ncu source page export (sass, or cuda+sass with file/line sections).

    In the cuda+sass view one instruction is listed under every source line it belongs to (an
    inlined header function and the kernel line that called it): it is counted once, attributed
    to the kernel's own file where it appears there."""
    try:
        yield from _ncu_source(text, name)
    except InvalidInput as exc:
        raise exc if exc.message.startswith(name) else InvalidInput(f"{name}: {exc.message}") from None
    except csv.Error as exc:  # e.g. a field over the csv module's 131,072-character limit
        raise InvalidInput(f"{name}: not a readable CSV: {exc}") from None


def _ncu_source(text: str, name: str) -> Iterator[Instr]:
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    current_file, current_line = None, None
    by_address: dict[str, Instr] = {}
    for number, row in enumerate(reader, 1):
        if number > limits.PROFILE_CSV_MAX_ROWS:
            raise InvalidInput(f"{name}: over {limits.PROFILE_CSV_MAX_ROWS} rows")
        if not row:
            continue
        if row[0] == "File Path":
            current_file = row[1] if len(row) > 1 else None
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
        seen = by_address.get(address)
        if seen is not None:
            if _is_library(seen.source) and not _is_library(current_line):
                seen.source = current_line
            continue
        reasons = {k[len("stall_"):]: _num(v) for k, v in cells.items() if k.startswith("stall_") and "(Not Issued)" not in k and _num(v)}
        by_address[address] = Instr(index=offset, isa=sass.strip(), source=current_line, samples=_num(cells.get("Warp Stall Sampling (All Samples)")),
                                    hits=_num(cells.get("Instructions Executed")), reasons=reasons)
    if header is None:
        raise InvalidInput(f"{name}: no ncu source table (expected a header with Address and Warp Stall Sampling)")
    for position, address in enumerate(sorted(by_address, key=lambda a: by_address[a].index)):
        instr = by_address[address]
        instr.index = position  # program order; the address stays readable in the run's CSV
        yield instr


def _num(value) -> float:
    try:
        number = float(str(value).replace(",", ""))
    except (TypeError, ValueError):
        return 0.0
    if not math.isfinite(number):  # "inf" or "1e999" in a sample count: no JSON answer can carry it
        raise InvalidInput(f"the value {str(value)[:40]!r} is not a finite number")
    return number
