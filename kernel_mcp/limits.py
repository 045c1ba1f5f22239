"""Stated bounds on every input the server parses, so that no file can cost unbounded memory or time.

An agent (or whatever wrote the workspace) controls these files; a limit is set well above what
the real tools write, and an input beyond it is refused with the file, the limit and the figure
found, never read on until the machine runs out of memory.
"""

from __future__ import annotations

from pathlib import Path

from kernel_mcp.errors import InvalidInput

# rocprofv3 UI code.json: {"header": [...], "code": [[cells..., [stall reasons]], ...]} is 4 levels
# deep; anything deeper is not that format, and a parser that follows it grows with the depth.
MAX_JSON_DEPTH = 8
CODE_JSON_MAX_BYTES = 2 * 2**30  # one dispatch's rows; a 20,000-instruction kernel writes ~10 MB
MAX_ROW_FIELDS = 64  # the real rows have 10 to 13 cells
MAX_LIST_ITEMS = 64  # Stall_Reasons has 10 entries
MAX_INSTRUCTIONS = 2_000_000  # distinct instructions kept per summary (memory grows with these)
MAX_ROWS_PER_FILE = 4_000_000

# Profiler CSVs (rocprofv3 kernel_trace/counter_collection, ncu --csv, thread-trace stats and ncu
# source pages): a million dispatches is ~200 MB of kernel_trace.csv.
PROFILE_CSV_MAX_BYTES = 2**30
PROFILE_CSV_MAX_ROWS = 5_000_000
# Python's csv module refuses fields over 131,072 characters; a demangled template name can be long,
# but not this long, so the limit is kept and reported as a property of the file.
CSV_FIELD_CHARS = 131_072
# Columns of one profiler table: rocprof-compute's pmc_perf.csv, the widest read, has ~2,700. Past
# this, reading it would take minutes (pandas works column by column) for no table a profiler writes.
PROFILE_CSV_MAX_COLUMNS = 20_000

# The benchmark's own CSV: a row per shape and repeat; each config class becomes a figure in every
# answer and ledger record.
BENCH_CSV_MAX_BYTES = 64 * 2**20
BENCH_CSV_MAX_ROWS = 200_000
BENCH_MAX_CLASSES = 2_000
BENCH_MAX_CELL_CHARS = 1_000  # a config value (a shape, a dtype) is short; it is part of a class key
# A metric figure is a time (or a rate) in some unit: 1e-100 to 1e100 holds every one, and the ratio
# or product of two such figures stays a normal float. A subnormal (5e-324) or a figure near the
# float's end (1e308 against 1e-308) made the ledger's statistics divide to 0 or infinity.
BENCH_METRIC_RANGE = (1e-100, 1e100)

# kernel-mcp.toml nests 2 or 3 levels ([benchmark] correctness = {...}); tomllib recurses per level.
TOML_MAX_DEPTH = 32
TOML_MAX_DOTS_PER_LINE = 64  # dotted keys; a line of floats holds one dot each
TOML_MAX_BYTES = 256 * 2**10  # the example configuration is 3 KB


def check_size(path: Path, limit: int, what: str) -> int:
    """The file's size, or InvalidInput when it is over `limit` bytes."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InvalidInput(f"{what}: {path.name} cannot be read: {exc.strerror or exc}") from None
    if size > limit:
        raise InvalidInput(f"{what}: {path.name} is {size / 2**20:.1f} MiB, over the {limit / 2**20:.0f} MiB this reader accepts")
    return size


def read_text(path: Path, limit: int, what: str, **checks) -> str:
    """The file as text (undecodable bytes replaced), refused beyond `limit` bytes. It is opened as
    safe_files opens files (regular files only; `checks` are its link rules), so a FIFO cannot block."""
    from kernel_mcp import safe_files

    check_size(path, limit, what)
    with safe_files.open_regular(path, **checks) as handle:
        data = handle.read(limit + 1)  # the size may have grown since the check
    if len(data) > limit:
        raise InvalidInput(f"{what}: {path.name} is over the {limit / 2**20:.0f} MiB this reader accepts")
    return data.decode("utf-8", errors="replace")


def nesting_problem(text: str, depth_limit: int, dots_limit: int) -> tuple[int, str] | None:
    """(position, what) where brackets or braces nest deeper than `depth_limit`, or a line holds
    more than `dots_limit` dots (dotted keys, which tomllib resolves in time growing with the square
    of their length), outside TOML/JSON strings and comments; None when neither. Linear, no
    recursion: a guard to run before a recursive parser."""
    depth = dots = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "[{":
            depth += 1
            if depth > depth_limit:
                return i, f"arrays or tables nested deeper than {depth_limit} levels"
        elif c in "]}":
            depth = max(0, depth - 1)
        elif c == ".":
            dots += 1
            if dots > dots_limit:
                return i, f"over {dots_limit} dots on one line (a dotted key that deep)"
        elif c == "\n":
            dots = 0
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c in "\"'":
            quote3 = c * 3
            if text.startswith(quote3, i):
                end = text.find(quote3, i + 3)
                while c == '"' and end > 0 and _escaped(text, end):
                    end = text.find(quote3, end + 1)
                i = n if end < 0 else end + 3
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if (c == '"' and text[j] == "\\") else 1
            i = j + 1
            continue
        i += 1
    return None


def _escaped(text: str, pos: int) -> bool:
    slashes = 0
    while pos - 1 - slashes >= 0 and text[pos - 1 - slashes] == "\\":
        slashes += 1
    return slashes % 2 == 1
