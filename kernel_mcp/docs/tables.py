"""Tables of every source format, rewritten as Markdown pipe tables.

A counter, an instruction or a metric is one row of a table, and the passage splitter
(passages.py) makes one entry per row with the table's header kept beside it. For that the row
must be one line whatever the source wrote: reStructuredText csv-tables, list-tables (also
MyST's ```{list-table}``` in Markdown) and grid tables are rewritten here; Markdown pipe tables
pass through; the HTML reader collects <tr> cells and calls `pipe_table`.

Every loop here walks the lines once: a malformed table ends as fewer rows, never as a hang.
"""

from __future__ import annotations

import csv
import re

MAX_CELL = 2000  # a cell this long is prose in the wrong place; the rest is cut


def _cell(text: str) -> str:
    # one line per row: no newlines, and no pipe that would split the cell
    return " ".join(text.replace("|", "/").split())[:MAX_CELL]


def pipe_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Markdown lines: header, separator, one line per row (cells padded to the widest row)."""
    width = max([len(header)] + [len(r) for r in rows]) if (header or rows) else 0
    if width == 0:
        return []
    head = [_cell(c) for c in header] + [""] * (width - len(header))
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * width]
    for row in rows:
        cells = [_cell(c) for c in row] + [""] * (width - len(row))
        if any(cells):
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block(lines: list[str], start: int, base: int) -> int:
    """End (exclusive) of the directive body that starts after line `start`: every following
    line that is blank or indented deeper than the directive's `base`."""
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > base):
        end += 1
    return end


def _options(body: list[str]) -> tuple[dict[str, str], list[str]]:
    """Leading `:name: value` lines of a directive body, and the content after them."""
    options: dict[str, str] = {}
    i = 0
    while i < len(body) and (not body[i].strip() or re.match(r"\s*:[\w-]+:", body[i])):
        match = re.match(r"\s*:([\w-]+):\s*(.*)", body[i])
        if match:
            options[match.group(1)] = match.group(2)
        i += 1
    return options, body[i:]


def _csv_rows(lines: list[str]) -> list[list[str]]:
    text = [line.strip() for line in lines if line.strip()]
    try:
        return [[c.strip() for c in row] for row in csv.reader(text, skipinitialspace=True)]
    except csv.Error:
        return [[line] for line in text]


def csv_table(options: dict[str, str], content: list[str]) -> list[str]:
    rows = _csv_rows(content)
    header = _csv_rows([options["header"]])[0] if options.get("header") else []
    skip = _header_rows(options)
    if not header and skip:
        header, rows = rows[0], rows[1:]
    return pipe_table(header, rows)


def _header_rows(options: dict[str, str]) -> int:
    value = options.get("header-rows", "0").strip()
    return int(value) if value.isdigit() else 0


_BULLET = re.compile(r"([*+-])(\s+|$)")


def list_table(options: dict[str, str], content: list[str]) -> list[str]:
    """`* - a` / `  - b` items: the outer bullets are rows, the inner ones cells."""
    rows: list[list[str]] = []
    outer = None
    for line in content:
        if not line.strip():
            continue
        indent, text = _indent(line), line.strip()
        bullet = _BULLET.match(text)
        if outer is None and bullet:
            outer = indent
        if bullet and indent == outer:
            rows.append([])
            text = text[bullet.end() :]
            inner = _BULLET.match(text)
            if inner:
                rows[-1].append(text[inner.end() :])
            elif text:
                rows[-1].append(text)
        elif bullet and rows:
            rows[-1].append(text[bullet.end() :])
        elif rows and rows[-1]:
            rows[-1][-1] += " " + text  # a cell continued on the next line
    skip = _header_rows(options)
    header = rows[0] if skip and rows else []
    return pipe_table(header, rows[1:] if header else rows)


_GRID_BORDER = re.compile(r"^\s*\+([-=]+\+)+\s*$")


def grid_table(lines: list[str]) -> list[str]:
    """+---+ tables: cells sliced at the first border's `+` columns; `+===+` ends the header."""
    first = lines[0]
    cuts = [i for i, ch in enumerate(first) if ch == "+"]
    header: list[str] = []
    rows: list[list[str]] = []
    current: list[str] = [""] * (len(cuts) - 1)
    for line in lines[1:]:
        if _GRID_BORDER.match(line):
            if any(c.strip() for c in current):
                if "=" in line and not header and not rows:
                    header = [c.strip() for c in current]
                else:
                    rows.append([c.strip() for c in current])
            current = [""] * (len(cuts) - 1)
            continue
        for j in range(len(cuts) - 1):
            current[j] += " " + line[cuts[j] + 1 : cuts[j + 1]].strip(" |")
    return pipe_table(header, rows)


_DIRECTIVE = re.compile(r"^(\s*)\.\. (csv-table|list-table)::")
_MYST_TABLE = re.compile(r"^(\s*)(`{3,}|:{3,})\{list-table\}\s*(.*)$")


def rewrite_rst_tables(lines: list[str]) -> list[str]:
    """The lines with each csv-table, list-table and grid table replaced by a pipe table."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = _DIRECTIVE.match(line)
        if directive:
            end = _block(lines, i, len(directive.group(1)))
            options, content = _options(lines[i + 1 : end])
            table = csv_table(options, content) if directive.group(2) == "csv-table" else list_table(options, content)
            out += [""] + table + [""]
            i = end
        elif _GRID_BORDER.match(line):
            end = i + 1
            while end < len(lines) and lines[end].strip().startswith(("|", "+")):
                end += 1
            out += [""] + grid_table(lines[i:end]) + [""]
            i = end
        else:
            out.append(line)
            i += 1
    return out


def rewrite_myst_tables(lines: list[str]) -> list[str]:
    """MyST list-tables in Markdown (```{list-table} caption ... ```) as pipe tables, the caption kept."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _MYST_TABLE.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        fence = match.group(2)
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        options, content = _options(lines[i + 1 : end])
        out += ([match.group(3).strip()] if match.group(3).strip() else []) + [""] + list_table(options, content) + [""]
        i = end + 1
    return out
