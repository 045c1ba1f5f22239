"""Passages: the units that search ranks and that a hit opens at.

A section's body (tables already rewritten as pipe tables, tables.py) is cut into
- one passage per table row, carrying the table's header as context and shown as
  "header: value" pairs, so that the row of one counter answers a question about that counter;
- overlapping chunks of the prose between tables, so that a figure on the third page of a long
  section comes back with the few hundred characters around it.
A short section without tables is one passage. Offsets into the body let `docs_read` open the
section at the passage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CHUNK = 700  # characters of prose per passage: a few sentences, well inside one page
OVERLAP = 200  # shared with the previous chunk, so a sentence cut at one edge is whole in the next
MAX_PASSAGES = 5000  # per section; a pathological document is cut, not indexed for ever


@dataclass
class Passage:
    kind: str  # "text" or "row"
    text: str  # what is indexed and shown: the prose, or the row as "header: value" pairs
    context: str  # the table's header for a row; empty for prose
    start: int  # offsets of the passage in the section body
    end: int
    defines: str = ""  # a row's first cell: the counter, instruction or metric it is about


_SEPARATOR = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?$")


def _is_row(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) > 2 and stripped.startswith("|") and stripped.endswith("|")


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip()[1:-1].split("|")]


def row_text(header: list[str], row: list[str]) -> str:
    """'Hardware counter: SQ_WAVES; Unit: Waves; Definition: ...' (a header cell may be empty)."""
    parts = []
    for j, value in enumerate(row):
        if not value:
            continue
        name = header[j] if j < len(header) else ""
        parts.append(f"{name}: {value}" if name else value)
    return "; ".join(parts)


def _lines_with_offsets(body: str) -> list[tuple[int, str]]:
    out, offset = [], 0
    for line in body.split("\n"):
        out.append((offset, line))
        offset += len(line) + 1
    return out


def _chunks(body: str, start: int, end: int, out: list[Passage]) -> None:
    """Prose between `start` and `end` in overlapping chunks that begin and end at a space."""
    while start < end and body[start].isspace():
        start += 1
    while end > start and body[end - 1].isspace():
        end -= 1
    if start >= end:
        return
    pos = start
    while pos < end and len(out) < MAX_PASSAGES:
        stop = min(end, pos + CHUNK)
        if stop < end:  # cut at a sentence end, else at a space, in the last third of the window
            window = body[pos + CHUNK * 2 // 3 : stop]
            cut = max(window.rfind(". "), window.rfind("\n"))
            cut = cut if cut >= 0 else window.rfind(" ")
            if cut >= 0:
                stop = pos + CHUNK * 2 // 3 + cut + 1
        text = body[pos:stop].strip()
        if text:
            out.append(Passage("text", text, "", pos, stop))
        if stop >= end:
            break
        nxt = max(pos + 1, stop - OVERLAP)
        space = body.find(" ", nxt, stop)
        pos = space + 1 if space >= 0 else nxt


def split(body: str) -> list[Passage]:
    """The passages of one section body, in order."""
    out: list[Passage] = []
    lines = _lines_with_offsets(body)
    prose_from = 0
    i = 0
    while i < len(lines) and len(out) < MAX_PASSAGES:
        offset, line = lines[i]
        if not _is_row(line):
            i += 1
            continue
        _chunks(body, prose_from, offset, out)
        header = cells(line)
        j = i + 1
        if j < len(lines) and _SEPARATOR.match(lines[j][1].strip()):
            j += 1
        else:
            header = []  # no separator: every line is a row
            j = i
        context = " | ".join(h for h in header if h)
        while j < len(lines) and _is_row(lines[j][1]) and len(out) < MAX_PASSAGES:
            row_offset, row_line = lines[j]
            row = cells(row_line)
            text = row_text(header, row)
            if text:
                out.append(Passage("row", text, context, row_offset, row_offset + len(row_line), defines=row[0] if row else ""))
            j += 1
        prose_from = lines[j][0] if j < len(lines) else len(body)
        i = max(j, i + 1)
    _chunks(body, prose_from, len(body), out)
    return out
