"""What a profiler output file is, told from its header columns (and, for the few formats whose
header says nothing of the domain, its name), before any reader touches it.

Every file of an imported folder passes through `sniff`: a regular file is opened (never followed
out of the workspace: the caller lists files through safe_files), at most HEAD_BYTES are read,
and the first line is matched against the column sets the tools write. A file matching nothing
gets a description of what it looked like (empty, binary, JSON, SQLite, a CSV of n columns with the
closest known format and the columns it lacks), built from our own words: the file's content is
never echoed.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from kernel_mcp import safe_files

HEAD_BYTES = 64 * 2**10
HEADER_MAX_BYTES = 4 * 2**20  # rocprof-compute's pmc_perf.csv header has ~2,700 columns (~60 KB)
SQLITE_MAGIC = b"SQLite format 3\x00"

# Formats, as the summary names them
TRACE = "rocprofv3 kernel trace"
COUNTERS = "rocprofv3 counter collection"
KERNEL_STATS = "rocprofv3 kernel stats"
LEGACY_STATS = "rocprof results.stats.csv"
LEGACY_DISPATCHES = "rocprof results.csv"
OTHER_STATS = "stats table of API calls or copies"
AGENT_INFO = "rocprofv3 agent info"
OTHER_TRACE = "rocprofv3 trace without kernels (API calls, copies, markers)"
COMPUTE_WIDE = "rocprof-compute counters (one row per dispatch)"
COMPUTE_LONG = "rocprof-compute counters (one row per counter)"
COMPUTE_TIMES = "rocprof-compute timestamps"
COMPUTE_DISPATCH_INFO = "rocprof-compute dispatch list (no times)"
COMPUTE_SYSINFO = "rocprof-compute sysinfo"
COMPUTE_ROOFLINE = "rocprof-compute roofline"
COMPUTE_KERNEL_TOP = "rocprof-compute kernel top"
THREAD_TRACE_STATS = "rocprofv3 thread-trace stats"
NCU = "ncu CSV"
ROCPD = "rocpd database"
SQLITE = "SQLite database"

# What each dispatch-carrying format needs, lower-cased (rocpd's CSV export writes Vgpr_Count where
# rocprofv3 writes VGPR_Count: names are matched without case)
KNOWN = {
    TRACE: {"kernel_name", "start_timestamp", "end_timestamp", "agent_id"},
    COUNTERS: {"dispatch_id", "kernel_name", "counter_name", "counter_value", "agent_id"},
    COMPUTE_LONG: {"dispatch_id", "kernel_name", "counter_name", "counter_value", "gpu_id"},
    COMPUTE_TIMES: {"dispatch_id", "kernel_name", "gpu_id", "start_timestamp", "end_timestamp"},
    LEGACY_DISPATCHES: {"index", "kernelname"},
    LEGACY_STATS: {"name", "calls", "totaldurationns", "averagens", "percentage"},
}
# rocprof-compute's per-dispatch columns that are not counters (rocprofv1 spellings included);
# a merge of passes repeats some as NAME_1, NAME_2 ...
COMPUTE_FIXED = {
    "dispatch_id",
    "gpu_id",
    "queue_id",
    "queue-id",
    "queue-index",
    "pid",
    "tid",
    "grid_size",
    "workgroup_size",
    "lds_per_workgroup",
    "scratch_per_workitem",
    "arch_vgpr",
    "accum_vgpr",
    "sgpr",
    "wave_size",
    "kernel_name",
    "correlation_id",
    "kernel_id",
    "xcc_index",
    "start_timestamp",
    "end_timestamp",
    "dispatchns",
    "completens",
    "sig",
    "obj",
    "node",
    "guid",
    "fbar",
}
LEGACY_FIXED = {
    "index",
    "kernelname",
    "gpu-id",
    "queue-id",
    "queue-index",
    "pid",
    "tid",
    "grd",
    "wgr",
    "lds",
    "scr",
    "vgpr",
    "arch_vgpr",
    "accum_vgpr",
    "sgpr",
    "wave_size",
    "sig",
    "obj",
    "fbar",
    "dispatchns",
    "beginns",
    "endns",
    "completens",
    "durationns",
}
NON_KERNEL_STATS = re.compile(
    r"(hip|hsa|copy|hip_api|hsa_api|memory_copy|domain|marker_api|rccl_api|scratch_memory|memory_allocation|ompt|kokkos|rocdecode_api|rocjpeg_api)_stats\.csv$"
)
TEXT_SUFFIXES = {".csv", ".txt", ".log", ".out", ""}
JSON_START = re.compile(r'\s*(\{\s*("|\})|\[\s*[\[{"\d\]-])')  # "[profiling] ..." (a log line) is no JSON


@dataclass
class Sniffed:
    path: Path
    label: str  # workspace-relative name, for answers
    format: str | None  # one of the names above; None: not a profiler file this reader knows
    columns: list[str] = field(default_factory=list)  # header as written (only for CSV formats)
    what: str = ""  # for format None: what the file looked like

    @property
    def lower(self) -> set[str]:
        return {c.strip().lower() for c in self.columns}


def sniff(path: Path, label: str) -> Sniffed:
    with safe_files.open_regular(path, label) as handle:
        head = handle.read(HEAD_BYTES)
        if not head:
            return Sniffed(path, label, None, what="an empty file")
        if head.startswith(SQLITE_MAGIC):
            return Sniffed(path, label, None, what="an SQLite database")  # the caller looks inside
        if b"\x00" in head[:4096]:
            return Sniffed(path, label, None, what="binary data, not a text table")
        if b"\n" not in head and len(head) == HEAD_BYTES:
            head += handle.read(HEADER_MAX_BYTES - HEAD_BYTES)
    text = head.decode("utf-8", errors="replace")
    ncu = _ncu_header(text)
    if ncu is not None:
        return Sniffed(path, label, NCU, ncu)
    if "==PROF==" in text:  # ncu's log: the program's own output may run long before the table
        ncu = _ncu_header_further(path, label)
        if ncu is not None:
            return Sniffed(path, label, NCU, ncu)
        return Sniffed(path, label, None, what="ncu's log without its CSV table (did the profiled program fail, or was --csv not given?)")
    first, newline, _ = text.partition("\n")
    if not newline and len(head) >= HEADER_MAX_BYTES:
        return Sniffed(path, label, None, what=f"text whose first line is over {HEADER_MAX_BYTES // 2**20} MiB: no CSV header")
    if JSON_START.match(text):
        return Sniffed(path, label, None, what="JSON (rocprofv3's JSON and thread-trace outputs are not read here)")
    columns = _header(first)
    fmt = classify(path.name, columns)
    if fmt is None:
        return Sniffed(path, label, None, columns, describe_columns(columns))
    return Sniffed(path, label, fmt, columns)


def _header(line: str) -> list[str]:
    try:
        row = next(csv.reader(io.StringIO(line.strip("\r\ufeff"))), [])
    except csv.Error:
        return []
    return [c.strip() for c in row]


def _ncu_header(text: str) -> list[str] | None:
    """ncu --csv prints the program's own output and ==PROF== lines first; the table starts at "ID"."""
    for line in text.splitlines():
        if line.startswith('"ID",'):
            columns = _header(line)
            return columns if "Kernel Name" in columns else None
    return None


def _ncu_header_further(path: Path, label: str) -> list[str] | None:
    """The "ID" header line anywhere in the first PROFILE_CSV_MAX_BYTES, read a chunk at a time."""
    from kernel_mcp import limits

    tail = b""
    with safe_files.open_regular(path, label) as handle:
        for _ in range(limits.PROFILE_CSV_MAX_BYTES // (4 * 2**20) + 1):
            chunk = handle.read(4 * 2**20)
            if not chunk:
                return None
            block = tail + chunk
            at = block.find(b'\n"ID",')
            if at >= 0:
                line = (block[at + 1 :] + handle.read(HEADER_MAX_BYTES)).split(b"\n", 1)[0]
                return _ncu_header(line.decode("utf-8", errors="replace"))
            tail = block[-16:]
    return None


def classify(name: str, columns: list[str]) -> str | None:
    cols = {c.lower() for c in columns}
    if {"counter_name", "counter_value"} <= cols:
        if KNOWN[COUNTERS] <= cols:
            return COUNTERS
        if KNOWN[COMPUTE_LONG] <= cols:
            return COMPUTE_LONG
        return None
    if KNOWN[TRACE] <= cols:
        return TRACE
    if KNOWN[LEGACY_DISPATCHES] <= cols:
        return LEGACY_DISPATCHES
    if {"name", "calls", "totaldurationns"} <= cols:
        lowered = name.lower()
        if lowered.endswith("kernel_stats.csv"):
            return KERNEL_STATS
        if NON_KERNEL_STATS.search(lowered):
            return OTHER_STATS
        if lowered.endswith(".stats.csv") and KNOWN[LEGACY_STATS] <= cols:
            return LEGACY_STATS
        return None  # the same header serves kernels and API calls: the name must say which
    if {"node_id", "logical_node_id", "agent_type"} <= cols:
        return AGENT_INFO
    if {"workload_name", "gpu_arch"} <= cols:
        return COMPUTE_SYSINFO
    if {"codeobj", "vaddr", "instruction", "hitcount"} <= cols:
        return THREAD_TRACE_STATS
    if {"dispatch_id", "kernel_name", "gpu_id"} <= cols:
        extra = {c for c in cols if c not in COMPUTE_FIXED and not _repeated_fixed(c)}
        if extra:
            return COMPUTE_WIDE
        return COMPUTE_TIMES if {"start_timestamp", "end_timestamp"} <= cols else COMPUTE_DISPATCH_INFO
    if {"kernel_name", "count", "pct"} <= cols:
        return COMPUTE_KERNEL_TOP
    if "kind" in cols and ("start_timestamp" in cols or "correlation_id" in cols) and "kernel_name" not in cols:
        return OTHER_TRACE
    if any(c.startswith("roofline") or c.startswith("hbmbw") for c in cols) or {"device", "hbmbw"} <= cols:
        return COMPUTE_ROOFLINE
    return None


def _repeated_fixed(column: str) -> bool:
    base, _, number = column.rpartition("_")
    return number.isdigit() and base in COMPUTE_FIXED


def counter_columns(columns: list[str], fixed: set[str]) -> tuple[list[str], int]:
    """The counter columns of a wide table, and how many per-instance columns (NAME[i], one per L2
    channel or XCD) were left out: thousands on MI300X, their totals are the NAME_sum columns."""
    kept, instances = [], 0
    for c in columns:
        low = c.strip().lower()
        if low in fixed or _repeated_fixed(low) or not c.strip():
            continue
        if c.endswith("]") and "[" in c:
            instances += 1
            continue
        kept.append(c)
    return kept, instances


def describe_columns(columns: list[str]) -> str:
    """What a CSV header looked like, in our words: its width and the closest known format with the
    columns it lacks (our names, never the file's)."""
    if len(columns) < 2:
        return "text, not a CSV table with a header"
    cols = {c.lower() for c in columns}
    best = max(KNOWN, key=lambda fmt: len(KNOWN[fmt] & cols) / len(KNOWN[fmt]))
    missing = sorted(KNOWN[best] - cols)
    if len(KNOWN[best]) - len(missing) >= 2:
        return f"a CSV of {len(columns)} columns; closest to {best}, lacking {', '.join(missing)}"
    if {"name", "calls", "totaldurationns"} <= cols:
        return "a stats table (Name, Calls, TotalDurationNs) whose file name does not say it holds kernels (…kernel_stats.csv or results.stats.csv)"
    return f"a CSV of {len(columns)} columns matching no profiler output this reader knows"


def describe_other(path: Path) -> str:
    suffix = path.suffix.lower()
    return {
        ".db": "an SQLite database",
        ".json": "JSON",
        ".pftrace": "a Perfetto trace (for a trace viewer)",
        ".otf2": "an OTF2 trace",
        ".att": "raw thread-trace data",
        ".out": "raw thread-trace data",
        ".yaml": "YAML (a configuration or counter request)",
        ".txt": "text",
        ".md": "text",
        ".log": "a log",
    }.get(suffix, "a file of another kind")
