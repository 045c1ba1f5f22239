"""Readers of rocprofv3's decoded instruction-level outputs, streamed with bounded memory.

- UI output `ui_output_agent_<a>_dispatch_<d>/code.json` (thread trace, also PC sampling): one row
  per ISA instruction, [ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle, ...],
  ordered by LineNumber, the decoder's instruction index that the wave files refer to. A row whose
  ISA starts with "; " opens a function block: the symbol, and the demangled name in Source
  (rocprofiler-sdk att-tool code.cpp). "header" is one comma-separated string in thread traces and a
  list in PC-sampling output; columns are located by name either way. PC-sampling files add
  PC_Issued, PC_Stalled and Stall_Reasons, a list indexed by rocprofiler-sdk's
  rocprofiler_pc_sampling_instruction_not_issued_reason_t.
- `stats_ui_output_agent_<a>_dispatch_<d>.csv`, one folder up: CodeObj (the docs write Codeobj),
  Vaddr, Instruction, Hitcount, Latency, Stall, Idle, Source; ordered by code object and address,
  with the same "; symbol" rows. It has no LineNumber, so an instruction is named by its address
  (Vaddr) everywhere: the one key both files share.

Each file is one dispatch; its function blocks are kept apart (a code object holds neighbouring
kernels that did not run), and nothing here adds one dispatch to another.
"""

from __future__ import annotations

import csv
import json
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

PC_STALL_REASONS = (
    "NONE",
    "NO_INSTRUCTION_AVAILABLE",
    "ALU_DEPENDENCY",
    "WAITCNT",
    "INTERNAL_INSTRUCTION",
    "BARRIER_WAIT",
    "ARBITER_NOT_WIN",
    "ARBITER_WIN_EX_STALL",
    "OTHER_WAIT",
    "SLEEP_WAIT",
)
UI_DEFAULT_HEADER = ("ISA", "_", "LineNumber", "Source", "Codeobj", "Vaddr", "Hit", "Latency", "Stall", "Idle")


@dataclass(slots=True)
class Instr:
    index: int  # the decoder's instruction index (code.json LineNumber); program order where a file has none
    isa: str
    source: str | None
    address: int | None = None  # Vaddr in its code object (AMD), the SASS address (NVIDIA)
    hits: float = 0.0
    latency: float = 0.0  # cycles: stall + issue (gfx9)
    stall: float = 0.0  # cycles stalled, or samples not issued
    idle: float = 0.0  # cycles with nothing issuing before this instruction
    samples: float = 0.0  # PC or warp-stall samples
    issued: float = 0.0  # samples that issued
    reasons: dict[str, float] = field(default_factory=dict)
    shared_wavefronts: float = 0.0  # ncu: shared-memory wavefronts, the ideal count, the excess
    shared_ideal: float = 0.0
    shared_excess: float = 0.0

    @property
    def mnemonic(self) -> str:
        return mnemonic_of(self.isa)


@dataclass
class KernelBlock:
    """One function of one dispatch: its instructions by index."""

    name: str  # demangled where the file gives it, else the symbol
    symbol: str | None
    program: dict[int, Instr] = field(default_factory=dict)

    @property
    def executed(self) -> bool:
        return any(i.hits or i.samples or i.latency for i in self.program.values())


def mnemonic_of(isa: str) -> str:
    if isa.startswith("@"):  # a SASS predicate guard (@P0, @!P1)
        words = isa.split(None, 2)
        return words[1] if len(words) > 1 else ""
    words = isa.split(None, 1)
    return words[0] if words else ""


def _header(path: Path) -> list[str]:
    """The "header" of a code.json (a list, or one comma-separated string), found near either end
    without reading the rows. Only a flat list is taken (scanned by hand, no recursive decoder), so
    a header nested thousands deep costs one 64 KiB window, not a stack overflow."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        pieces = [handle.read(65536)]
        if size > 65536:
            handle.seek(max(0, size - 65536))
            pieces.append(handle.read())
    for piece in pieces:
        text = piece.decode("utf-8", errors="replace")
        as_text = re.search(r'"header"\s*:\s*"((?:[^"\\]|\\.){0,4000})"', text)
        if as_text:
            return [name.strip() for name in as_text.group(1).split(",")][: limits.MAX_ROW_FIELDS + 1]
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
    """Every instruction row of a rocprofv3 UI code.json, function labels left out."""
    for block in read_code_json_blocks(path):
        yield from block.program.values()


def read_code_json_blocks(path: Path) -> list[KernelBlock]:
    """A code.json's function blocks, streaming (memory bounded by the program, not the file).

    This is the hot loop of multi-gigabyte traces: column positions are resolved once."""
    limits.check_size(path, limits.CODE_JSON_MAX_BYTES, "thread trace")
    header = _header(path) or list(UI_DEFAULT_HEADER)
    pos = {name: i for i, name in enumerate(header)}
    missing = [c for c in ("ISA", "Hit", "Latency") if c not in pos]
    if missing:
        raise InvalidInput(f"{path.name}: header lacks {', '.join(missing)}; not a rocprofv3 code.json this reader knows")
    i_isa, i_idx, i_src, i_hit, i_lat = pos["ISA"], pos.get("LineNumber", 2), pos.get("Source"), pos["Hit"], pos["Latency"]
    i_stall, i_idle, i_addr = pos.get("Stall"), pos.get("Idle"), pos.get("Vaddr")
    i_iss, i_stl, i_rsn = pos.get("PC_Issued"), pos.get("PC_Stalled"), pos.get("Stall_Reasons")
    if i_iss is not None and i_stl is None:
        raise InvalidInput(f"{path.name}: header has PC_Issued without PC_Stalled")
    width = max(p for p in (i_isa, i_idx, i_src, i_hit, i_lat, i_stall, i_idle, i_addr, i_iss, i_stl, i_rsn) if p is not None) + 1
    blocks: list[KernelBlock] = []
    block: KernelBlock | None = None
    distinct = 0
    count, max_rows = 0, limits.MAX_ROWS_PER_FILE
    with path.open("rb") as handle:
        try:
            # Indented files go through ijson's fast item builder behind the depth guard; a file
            # without line breaks (what rocprofv3 writes for thread traces) through the flat events,
            # which bound the depth themselves.
            rows = ijson.items(DepthGuard(handle, path), "code.item", use_float=True) if line_structured(path) else code_rows(handle, path)
            for row in rows:
                if type(row) is not list:
                    raise InvalidInput(f"{path.name}: row {count} is {type(row).__name__}, not a list")
                if len(row) < width:
                    raise InvalidInput(f"{path.name}: row {count} has {len(row)} fields, the header {len(header)} (inconsistent trace)")
                if count >= max_rows:
                    raise InvalidInput(f"{path.name}: over {max_rows} rows; one dispatch's code.json has one row per instruction")
                count += 1
                index, isa = row[i_idx], row[i_isa]
                if type(index) is not int:
                    raise InvalidInput(f"{path.name}: row {count - 1} has the instruction index {index!r:.40}, not an integer")
                if type(isa) is not str:
                    raise InvalidInput(f"{path.name}: row {count - 1} has the instruction {isa!r:.40}, not text")
                source = row[i_src] if i_src is not None else None
                if source is not None and type(source) is not str:
                    raise InvalidInput(f"{path.name}: row {count - 1} has the source {source!r:.40}, neither text nor null")
                if isa.startswith(";"):  # a function label: "; symbol", the demangled name in Source
                    symbol = isa[1:].strip()
                    block = KernelBlock(name=source or symbol, symbol=symbol)
                    blocks.append(block)
                    continue
                if block is None:
                    block = KernelBlock(name="", symbol=None)
                    blocks.append(block)
                acc = block.program.get(index)
                if acc is None:
                    distinct += 1
                    if distinct > limits.MAX_INSTRUCTIONS:
                        raise InvalidInput(f"{path.name}: over {limits.MAX_INSTRUCTIONS} distinct instructions; no kernel is that long")
                    address = row[i_addr] if i_addr is not None else None
                    acc = block.program[index] = Instr(index=index, isa=isa, source=source, address=address if type(address) is int else None)
                # Numbers are added unchecked (this loop is the cost of a large trace): text, null
                # or a list where a number belongs raises TypeError, turned into a clear error below.
                acc.hits += row[i_hit]
                acc.latency += row[i_lat]
                if i_stall is not None:
                    acc.stall += row[i_stall]
                if i_idle is not None:
                    acc.idle += row[i_idle]
                if i_iss is not None and i_stl is not None:  # never one without the other (refused above)
                    acc.samples += row[i_iss] + row[i_stl]
                    acc.issued += row[i_iss]
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
    if count == 0 or not any(b.program for b in blocks):
        raise InvalidInput(f"{path.name}: no instruction rows")
    for b in blocks:
        check_finite(b.program, path.name)
    return [b for b in blocks if b.program]


def check_finite(program: dict[int, Instr], name: str) -> None:
    """A number like 1e999 reads as infinity, which no JSON answer can carry. Checked on the sums
    (an infinite or NaN term makes its sum so), each summed in C: this runs once per file."""
    values = program.values()
    # one pass: an infinite or NaN term makes the sum so (+inf and -inf make NaN)
    total = sum(i.hits + i.latency + i.stall + i.idle + i.samples + i.issued + i.shared_wavefronts + i.shared_ideal + i.shared_excess for i in values)
    total += sum(sum(r.values()) for r in map(attrgetter("reasons"), values) if r)
    if not math.isfinite(total):
        raise InvalidInput(f"{name}: the trace's counts sum to a number that is not finite (a value out of range?)")


STATS_COLUMNS = ("Instruction", "Hitcount", "Latency", "Stall", "Idle")


def read_stats_csv(path: Path) -> Iterator[Instr]:
    """Every instruction row of a thread-trace stats CSV, function labels left out."""
    for block in read_stats_blocks(path):
        yield from block.program.values()


def read_stats_blocks(path: Path) -> list[KernelBlock]:
    limits.check_size(path, limits.PROFILE_CSV_MAX_BYTES, "thread trace stats")
    blocks: list[KernelBlock] = []
    block: KernelBlock | None = None
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        try:
            reader = csv.DictReader(handle)
            names = reader.fieldnames or []
            missing = [c for c in STATS_COLUMNS if c not in names]
            if missing:
                raise InvalidInput(f"{path.name}: lacks {', '.join(missing)}; not a rocprofv3 thread-trace stats CSV")
            for i, row in enumerate(reader):
                if i >= limits.PROFILE_CSV_MAX_ROWS:
                    raise InvalidInput(f"{path.name}: over {limits.PROFILE_CSV_MAX_ROWS} rows")
                isa, source = row["Instruction"], row.get("Source")
                if not isinstance(isa, str):
                    raise InvalidInput(f"{path.name}: row {i + 2} has no instruction (truncated?)")
                source = source if isinstance(source, str) and source else None
                if isa.startswith(";"):
                    symbol = isa[1:].strip()
                    block = KernelBlock(name=source or symbol, symbol=symbol)
                    blocks.append(block)
                    continue
                try:
                    values = [float(row[c]) for c in STATS_COLUMNS[1:]]
                    address = int(row["Vaddr"]) if row.get("Vaddr") not in (None, "") else None
                except (TypeError, ValueError):
                    raise InvalidInput(f"{path.name}: row {i + 2} has a non-numeric value (truncated?)") from None
                if not all(math.isfinite(v) for v in values):
                    raise InvalidInput(f"{path.name}: row {i + 2} has a value that is not a finite number")
                if block is None:
                    block = KernelBlock(name="", symbol=None)
                    blocks.append(block)
                block.program[i] = Instr(index=i, isa=isa, source=source, address=address, hits=values[0], latency=values[1], stall=values[2], idle=values[3])
        except csv.Error as exc:  # e.g. a field over the csv module's 131,072-character limit
            raise InvalidInput(f"{path.name}: not a readable CSV: {exc}") from None
    return [b for b in blocks if b.program]
