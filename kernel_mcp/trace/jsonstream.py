"""Bounded streaming of JSON for the trace readers: nothing nests deeper than MAX_JSON_DEPTH.

ijson's item builder keeps a path prefix per level, so its memory grows with the square of the
nesting depth (a 1 MB code.json nested 500,000 arrays deep took 24 GB). Indented files reach it
only through a guard that measures each block's depth first; files without line breaks are read
from the parser's flat events, which keep nothing per level.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import ijson

from kernel_mcp import limits
from kernel_mcp.errors import InvalidInput


def flat_array(text: str, start: int) -> str | None:
    """text[start:] from its "[" to the matching "]" when nothing nests inside; else None."""
    in_string = escaped = False
    for i in range(start + 1, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            return None
        elif c == "]":
            return text[start : i + 1]
    return None


def code_rows(handle, path: Path) -> Iterator[list]:
    """The rows of "code", built from the parser's flat events with the nesting depth counted here.

    ijson's item builder keeps a path prefix per level (memory grows with the square of the depth:
    500,000 nested arrays took 24 GB); its flat events keep nothing, and a row may hold scalars and
    one level of lists (Stall_Reasons), so anything deeper is refused at once."""
    depth = 0
    key = None
    in_code = False
    row: list | None = None
    inner: list | None = None
    for event, value in ijson.basic_parse(handle, use_float=True):
        if event == "start_array" or event == "start_map":
            depth += 1
            if depth > limits.MAX_JSON_DEPTH:
                raise InvalidInput(f"{path.name}: JSON nested deeper than {limits.MAX_JSON_DEPTH} levels; a rocprofv3 code.json has 4")
            if in_code:
                if event == "start_map" or depth > 4:
                    raise InvalidInput(
                        f'{path.name}: a row of "code" holds {"an object" if event == "start_map" else "lists nested in lists"}; rows hold values and one list of stall reasons'
                    )
                if depth == 3:
                    row = []
                else:
                    inner = []
            elif depth == 2 and key == "code":
                if event != "start_array":
                    raise InvalidInput(f'{path.name}: "code" is not a list of rows')
                in_code = True
        elif event == "end_array" or event == "end_map":
            if in_code:
                if depth == 4:
                    row.append(inner)  # type: ignore[union-attr]
                    if len(row) > limits.MAX_ROW_FIELDS:  # type: ignore[arg-type]
                        raise InvalidInput(f"{path.name}: a row has over {limits.MAX_ROW_FIELDS} fields")
                    inner = None
                elif depth == 3:
                    yield row  # type: ignore[misc]
                    row = None
                else:
                    in_code = False
            depth -= 1
        elif event == "map_key":
            if depth == 1:
                key = value
        elif in_code:
            if depth == 2:
                raise InvalidInput(f'{path.name}: "code" holds {value!r:.40} where a row (a list) belongs')
            target = row if depth == 3 else inner
            target.append(value)  # type: ignore[union-attr]
            if len(target) > (limits.MAX_ROW_FIELDS if depth == 3 else limits.MAX_LIST_ITEMS):  # type: ignore[arg-type]
                raise InvalidInput(f"{path.name}: a row or its list has over {limits.MAX_ROW_FIELDS} entries")


_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"\\')
_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
MAX_LINE = 1 << 20


class DepthGuard:
    """The file as ijson reads it, handed over whole lines at a time after their nesting depth is
    measured: ijson's item builder keeps a path prefix per level (500,000 nested arrays took
    24 GB), so nothing deeper than MAX_JSON_DEPTH may reach it. JSON strings cannot hold a raw
    newline, so a line's brackets outside its strings are exactly its structure (an invalid string
    that spans lines stops the parser there, before anything after it is built)."""

    def __init__(self, handle, path: Path) -> None:
        self.handle, self.path = handle, path
        self.depth = 0
        self.carry = b""

    def read(self, size: int = -1) -> bytes:
        import numpy as np  # here: a server's start does not wait for numpy

        if size == 0:
            return b""
        buf = self.carry
        while True:
            data = self.handle.read(max(size, 65536))
            buf += data
            cut = len(buf) if not data else buf.rfind(b"\n") + 1
            if cut or not data:
                break
            if len(buf) > MAX_LINE:
                raise InvalidInput(f"{self.path.name}: a line longer than {MAX_LINE // 2**20} MiB; rocprofv3 writes code.json indented")
        block, self.carry = buf[:cut], buf[cut:]
        # Only brackets, quotes and backslashes matter (one pass in C leaves a few per row); without
        # a backslash no quote is escaped, so every other piece between quotes is outside a string.
        # With one, the exact expression on the block.
        small = block.translate(None, _NOT_STRUCTURE)
        outside = _STRING.sub(b"", block).translate(None, _NOT_BRACKETS) if b"\\" in small else b"".join(small.split(b'"')[0::2])
        steps = np.frombuffer(outside.translate(_STEP), dtype=np.int8)
        if len(steps):
            depths = np.cumsum(steps, dtype=np.int64) + self.depth
            if int(depths.max()) > limits.MAX_JSON_DEPTH:
                raise InvalidInput(f"{self.path.name}: JSON nested deeper than {limits.MAX_JSON_DEPTH} levels; a rocprofv3 code.json has 4")
            self.depth = int(depths[-1])
        return block


def line_structured(path: Path) -> bool:
    with path.open("rb") as handle:
        return b"\n" in handle.read(65536)
