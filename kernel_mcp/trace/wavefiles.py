"""What a thread-trace dispatch folder says about its waves (rocprofiler-sdk att-tool wave.cpp,
filenames.cpp, waitcnt/gfx9.cpp):

- filenames.json: "wave_filenames" {se: {simd: {slot: {n: [file, begin, end]}}}}, one leaf per wave
  file (null in PC-sampling output); "gfxip" the major version only (9 for gfx90a..gfx950).
- se<SE>_sm<simd>_sl<slot>_wv<n>.json, one per traced wave: {"wave": {..., "instructions": [[time,
  category, stall, duration, LineNumber]], "timeline": [...], "waitcnt": [[LineNumber, [[dependency
  LineNumber, 0], ...]], ...]}}. A "waitcnt" entry is the decoder's own account of one executed
  s_waitcnt: the memory instructions, by LineNumber, whose counter it waited on (vmcnt and lgkmcnt
  give one entry each). code.json's Hit, Latency and Stall are these files' sums per LineNumber.

A dispatch may have thousands of wave files; the wait records are read from an even sample of at
most MAX_WAVE_FILES of them (the answer says how many), each streamed with its nesting bounded.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import ijson

from kernel_mcp import limits, safe_files
from kernel_mcp.errors import InvalidInput

WAVE_FILE = re.compile(r"^se\d+_sm\d+_sl\d+_wv\d+\.json$")
MAX_WAVE_FILES = 64
WAVE_FILE_MAX_BYTES = 256 * 2**20
MAX_WAIT_RECORDS = 2_000_000  # wait entries summed over the files read
FILENAMES_MAX_BYTES = 16 * 2**20  # a leaf per wave: ~60 bytes each


def read_filenames(path: Path, within: Path) -> dict:
    """A dispatch's filenames.json, refused when malformed (its content is never echoed)."""
    label = f"{path.parent.name}/{path.name}"
    text = limits.read_text(path, FILENAMES_MAX_BYTES, "thread trace metadata", within=within)
    problem = limits.nesting_problem(text, limits.MAX_JSON_DEPTH, 10**9)
    if problem:
        raise InvalidInput(f"{label}: {problem[1]}")
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError):
        raise InvalidInput(f"{label} is not valid JSON") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("wave_filenames") or {}, (dict, list)):
        raise InvalidInput(f"{label} is not rocprofv3 trace metadata (an object with wave_filenames)")
    return meta


def wave_count(meta: dict) -> int:
    """How many wave files filenames.json lists: the leaves of its nested map."""
    count, stack = 0, [meta.get("wave_filenames") or {}]
    while stack:
        node = stack.pop()
        values = node.values() if isinstance(node, dict) else node
        for value in values:
            if isinstance(value, dict):
                stack.append(value)
            elif isinstance(value, list) and value and isinstance(value[0], str):
                count += 1  # [file, begin, end]
            elif isinstance(value, list):
                stack.append(value)
    return count


def wave_files(folder: Path, within: Path) -> list[Path]:
    """The dispatch folder's wave files (not its subfolders), checked as regular files inside `within`."""
    found = [p for p in folder.iterdir() if WAVE_FILE.match(p.name)]
    return [safe_files.check_regular(p, f"{folder.name}/{p.name}", within=within) for p in sorted(found, key=_wave_order)]


def _wave_order(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path.name))


def sample(files: list[Path], most: int = MAX_WAVE_FILES) -> list[Path]:
    """An even spread of at most `most` files (every SE and SIMD, not the first few)."""
    if len(files) <= most:
        return files
    step = len(files) / most
    return [files[int(k * step)] for k in range(most)]


def wait_records(files: list[Path], within: Path) -> dict[int, Counter]:
    """Per waiting instruction (LineNumber), how often the decoder named each producer."""
    records: dict[int, Counter] = {}
    total = 0
    for path in files:
        for line, deps in _waitcnt(path, within):
            counter = records.setdefault(line, Counter())
            for dep in deps:
                counter[dep] += 1
            total += 1
            if total > MAX_WAIT_RECORDS:
                raise InvalidInput(f"{path.parent.name}: over {MAX_WAIT_RECORDS} wait records in {len(files)} wave files")
    return records


def _waitcnt(path: Path, within: Path) -> list[tuple[int, list[int]]]:
    """The "waitcnt" entries of one wave file, from the parser's flat events with the depth counted
    here (the instructions and timeline around them are skipped, never built)."""
    label = f"{path.parent.name}/{path.name}"
    limits.check_size(path, WAVE_FILE_MAX_BYTES, "thread trace wave")
    out: list[tuple[int, list[int]]] = []
    keys: list[str | None] = []  # the key that opened each open container (None inside arrays)
    pending: str | None = None
    entry: list | None = None
    deps: list[int] | None = None
    pair_items = 0
    with safe_files.open_regular(path, label, within=within) as handle:
        try:
            for event, value in ijson.basic_parse(handle, use_float=True):
                if event == "map_key":
                    pending = value
                    continue
                inside = keys[1:3] == ["wave", "waitcnt"]
                if event in ("start_map", "start_array"):
                    keys.append(pending)
                    if len(keys) > limits.MAX_JSON_DEPTH:
                        raise InvalidInput(f"{label}: JSON nested deeper than {limits.MAX_JSON_DEPTH} levels; a wave file has 6")
                    inside = keys[1:3] == ["wave", "waitcnt"]
                    if inside and len(keys) == 4:
                        entry = []
                    elif inside and len(keys) == 5:
                        deps = []
                    elif inside and len(keys) == 6:
                        pair_items = 0
                elif event in ("end_map", "end_array"):
                    if inside and len(keys) == 4 and entry is not None:
                        if len(entry) != 2 or type(entry[0]) is not int or not isinstance(entry[1], list):
                            raise InvalidInput(f"{label}: a waitcnt entry is not [line, [[line, 0], ...]]")
                        out.append((entry[0], entry[1]))
                        entry = None
                        if len(out) > MAX_WAIT_RECORDS:
                            raise InvalidInput(f"{label}: over {MAX_WAIT_RECORDS} wait records")
                    elif inside and len(keys) == 5 and entry is not None and deps is not None:
                        entry.append(deps)
                        deps = None
                    keys.pop()
                elif inside and len(keys) == 4 and entry is not None:
                    entry.append(value)
                elif inside and len(keys) == 6 and deps is not None:
                    if pair_items == 0:  # [line, 0]: the producer's LineNumber, then a flag
                        if type(value) is not int:
                            raise InvalidInput(f"{label}: a waitcnt dependency is {value!r:.20}, not an instruction index")
                        deps.append(value)
                    pair_items += 1
                pending = None
        except ijson.IncompleteJSONError:
            raise InvalidInput(f"{label}: the wave file ends early (truncated)") from None
        except ijson.JSONError as exc:
            raise InvalidInput(f"{label}: not valid JSON: {exc}") from None
        except UnicodeDecodeError:
            raise InvalidInput(f"{label}: not UTF-8 text") from None
    return out
