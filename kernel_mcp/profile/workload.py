"""rocprof-compute (formerly Omniperf) workload folders: pmc_perf.csv, timestamps.csv, sysinfo.csv and
the per-pass files rocprof-compute merged, from any of its profilers.

Which profiler collected a workload is told by its files, as rocprof-compute leaves them:
- rocprofv1 (Omniperf 2, MI100/MI200): timestamps.csv with DispatchNs/CompleteNs and queue-id columns;
- rocprofv2 (Omniperf 2, MI300): timestamps.csv with Queue_ID, PID, TID columns;
- rocprofv3 CSV (rocprof-compute 3): no timestamps.csv, pmc_perf.csv with Kernel_ID, one row per dispatch;
- rocprofv3 rocpd (rocprof-compute 3.2+): pmc_perf.csv with one row per counter (Counter_Name/Value).

GPU times are read from pmc_perf.csv's Start/End columns, as rocprof-compute's own kernel top table
reads them: for rocprofv1/v2 it copied them from its timestamps run, for rocprofv3 CSV it averaged
them over the counter passes, and for the rocpd layout (every counter pass a re-run of the
dispatch) it takes per dispatch the median of End - Start over the dispatch's rows; so does this
reader. Counters come from the same file; per-instance columns (NAME[i]) are counted, not listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataclasses import dataclass, field
from pathlib import Path


# the package's modules by their full names: the package imports this one (see test_architecture.py)
import kernel_mcp.profile.sniff as fmt
import kernel_mcp.profile.tables as tables
import kernel_mcp.profile.vendor_metrics as vendor_metrics
from kernel_mcp import limits, safe_files
from kernel_mcp.errors import InvalidInput

if TYPE_CHECKING:  # pandas is imported where a table is read: a server's start does not wait for it
    import pandas as pd

MERGED = "pmc_perf.csv"
SYSINFO = "sysinfo.csv"
TIMESTAMPS = "timestamps.csv"


@dataclass
class Workload:
    source: str
    dispatches: pd.DataFrame
    counter_sums: pd.DataFrame
    uses: dict[str, str] = field(default_factory=dict)  # file label -> what was taken from it
    skipped: dict[str, str] = field(default_factory=dict)  # file label -> why not
    notes: list[str] = field(default_factory=list)
    arch: str | None = None  # the GPU's target as sysinfo.csv names it (gpu_arch)
    machine: dict[str, str] = field(default_factory=dict)  # sysinfo.csv's row, keys lower-case
    table: tables.DispatchTable | None = None  # the counters per dispatch, as rocprof-compute's analysis holds them


def is_workload(files: dict[str, fmt.Sniffed]) -> bool:
    """A folder holding rocprof-compute's merged table or its sysinfo (by header, not by name alone)."""
    merged = files.get(MERGED)
    info = files.get(SYSINFO)
    return (merged is not None and merged.format in (fmt.COMPUTE_WIDE, fmt.COMPUTE_LONG)) or (info is not None and info.format == fmt.COMPUTE_SYSINFO)


def profiler_of(files: dict[str, fmt.Sniffed]) -> str:
    merged, stamps = files.get(MERGED), files.get(TIMESTAMPS)
    if merged is not None and merged.format == fmt.COMPUTE_LONG:
        return "rocprofv3, rocpd"
    if stamps is not None and stamps.format == fmt.COMPUTE_TIMES:
        if {"dispatchns", "queue-id"} & stamps.lower:
            return "rocprofv1"
        if "queue_id" in stamps.lower:
            return "rocprofv2"
    if merged is not None and "kernel_id" in merged.lower:
        return "rocprofv3"
    return "profiler not recognisable"


def read_workload(files: dict[str, fmt.Sniffed]) -> Workload:
    """`files`: the folder's files by name (its own level only), already sniffed."""
    import pandas as pd

    profiler = profiler_of(files)
    w = Workload(source=f"rocprof-compute workload ({profiler})", dispatches=pd.DataFrame(), counter_sums=pd.DataFrame())
    info = files.get(SYSINFO)
    if info is not None and info.format == fmt.COMPUTE_SYSINFO:
        w.machine = sysinfo_row(info.path)
        w.notes.append(_machine(w.machine))
        w.arch = w.machine.get("gpu_arch") or None
        w.uses[info.label] = "machine (sysinfo)" + (f": {w.machine.get('gpu_model', '?')} ({w.arch})" if w.arch else "")
    tables_read = [f for f in files.values() if f.path.suffix.lower() == ".csv" and f.label not in w.uses]
    selection, empty_passes, conversion = _log_facts(files.get("log.txt"))
    if tables_read and all(_header_only(f) for f in tables_read):
        folder = tables_read[0].label.rpartition("/")[0] or "."
        raise InvalidInput(
            f"rocprof-compute workload {folder}: every table ({len(tables_read)} CSV files) holds its header and no row: "
            f"the dispatch filter (-k/--kernel, -d/--dispatch{selection}) matched no kernel, so nothing was profiled",
            hint="profile again with a kernel name or dispatch filter that the application launches (rocprof-compute's log.txt lists them)",
        )
    merged = files.get(MERGED)
    if merged is None or merged.format not in (fmt.COMPUTE_WIDE, fmt.COMPUTE_LONG):
        stamps = files.get(TIMESTAMPS)
        if stamps is None or stamps.format != fmt.COMPUTE_TIMES:
            folder = (info or next(iter(files.values()))).label.rpartition("/")[0] or "."
            if empty_passes and not tables_read and conversion:
                # the same warning follows rocprof-compute's own failure to convert rocprofv3's files
                # (utils.py v3_counter_csv_to_v2_csv: "Error converting <file> from v3 to v2 csv: <why>")
                raise InvalidInput(
                    f"rocprof-compute workload {folder}: no table at all: its log.txt says rocprof-compute could not convert "
                    f"rocprofv3's counter files ({conversion[:200]}), so {empty_passes} pass(es) kept nothing",
                    hint="profile again with --format-rocprof-output rocpd (the database path does not use that conversion)",
                )
            if empty_passes and not tables_read:
                # rocprof-compute 3 with rocprofv3: a pass whose profiler wrote no counter file leaves no table at all
                # (src/utils/utils.py process_rocprofv3_output, "Cannot write results for <pass>.csv due to no counter
                # csv files generated"), and with none there is nothing to merge into pmc_perf.csv
                raise InvalidInput(
                    f"rocprof-compute workload {folder}: no table at all, and its log.txt says rocprofv3 wrote no counter file for "
                    f"{empty_passes} pass(es): nothing was profiled. The dispatch filter (-k/--kernel, -d/--dispatch{selection}) "
                    "matched no kernel, or the application launched none",
                    hint="profile again with a kernel name or dispatch filter that the application launches",
                )
            raise InvalidInput(
                f"rocprof-compute workload {folder}: no {MERGED} (and no {TIMESTAMPS}): was profiling interrupted?",
                hint="rocprof-compute writes pmc_perf.csv after its last counter pass",
            )
        w.dispatches = tables.read_dispatches(stamps.path, "rocprof-compute timestamps", stamps.label, strip_kd=True)
        w.uses[stamps.label] = f"GPU times ({len(w.dispatches)} dispatches)"
        w.notes.append(f"{MERGED} is missing: GPU times from {TIMESTAMPS}, no counters")
    elif merged.format == fmt.COMPUTE_LONG:
        rows, timed = tables.read_counter_rows(merged.path, "rocprof-compute pmc_perf", merged.label, strip_kd=True)
        if timed is None:
            raise InvalidInput(f"rocprof-compute pmc_perf: {merged.label} has no Start_Timestamp/End_Timestamp columns")
        runs = rows.groupby("dispatch")["counter"].size()  # rows per dispatch, instances included
        table = tables.dispatch_table(rows, merged.label, vendor_metrics.wanted, rocpd=True)
        rows, instances = tables.drop_instances(rows)
        if instances:
            w.notes.append(f"{instances} per-instance counters of {merged.label} (NAME[i], one per channel) are not listed; their NAME_sum counters are")
        w.table = table
        w.dispatches, w.counter_sums = timed, tables.counter_sums(rows)
        w.uses[merged.label] = f"GPU times ({len(timed)} dispatches) and counters ({rows['counter'].nunique()})"
        w.notes.append(
            f"GPU time per dispatch: the median of End - Start over its {int(runs.min()) if len(runs) else 0}+ counter rows "
            "(each counter pass re-ran it), as rocprof-compute computes it"
        )
    else:
        sums, timed, instances, w.table = tables.read_wide(
            merged.path, "rocprof-compute pmc_perf", merged.label, fmt.COMPUTE_FIXED, strip_kd=True, keep=vendor_metrics.wanted
        )
        if timed is None:
            raise InvalidInput(f"rocprof-compute pmc_perf: {merged.label} has no Start_Timestamp/End_Timestamp columns")
        w.dispatches, w.counter_sums = timed, sums
        _level_tables(w, files)
        w.uses[merged.label] = f"GPU times ({len(timed)} dispatches) and counters ({sums['counter'].nunique() if len(sums) else 0})"
        if instances:
            w.notes.append(f"{instances} per-instance counter columns of {merged.label} (NAME[i], one per channel) are not listed; their NAME_sum columns are")
        w.notes.append(
            "GPU time per dispatch: pmc_perf.csv Start/End, "
            + (
                "averaged over the counter passes by rocprof-compute"
                if profiler.startswith("rocprofv3")
                else "copied by rocprof-compute from its timestamps run"
            )
        )
    for name, file in files.items():
        if file.label in w.uses:
            continue
        w.skipped[file.label] = _why_skipped(name, file)
    return w


def _level_tables(w: Workload, files: dict[str, fmt.Sniffed]) -> None:
    """The passes rocprof-compute reads some metrics from (SQ_LEVEL_WAVES.csv ...: a metric's coll_level),
    kept beside pmc_perf row by row. Its analysis joins all its tables on the row number, inner
    (src/utils/file_io.py create_df_pmc), so every table is cut to the shortest."""
    if w.table is None:
        return
    for name, file in files.items():
        level = name[:-4] if name.endswith(".csv") else ""
        if level not in vendor_metrics.levels() or file.format != fmt.COMPUTE_WIDE:
            continue
        _, _, _, extra = tables.read_wide(file.path, "rocprof-compute pass", file.label, fmt.COMPUTE_FIXED, strip_kd=True, keep=vendor_metrics.wanted)
        if extra is None or extra.tables[tables.PMC].empty:
            continue
        w.table.tables[level] = extra.tables[tables.PMC]
        w.uses[file.label] = f"per-dispatch counters of the metrics rocprof-compute reads from its {level} pass ({len(extra.kernels)} dispatches)"
    rows = min(len(t) for t in w.table.tables.values())
    if any(len(t) != rows for t in w.table.tables.values()):
        w.notes.append(f"per-dispatch tables of unequal length: the first {rows} dispatches of each are read together, as rocprof-compute joins them")
        w.table.tables = {n: t.iloc[:rows] for n, t in w.table.tables.items()}
        w.table.kernels = w.table.kernels.iloc[:rows]
        w.table.grid = None if w.table.grid is None else w.table.grid.iloc[:rows]


OWN_FILES = {"log.txt": "rocprof-compute's log (no figures)", "profiling_config.yaml": "rocprof-compute's settings (no figures)"}


def _why_skipped(name: str, file: fmt.Sniffed) -> str:
    if name in OWN_FILES:
        return OWN_FILES[name]
    if name == TIMESTAMPS:
        return f"the same dispatches as {MERGED} (rocprof-compute copied their Start/End there)"
    if file.format in (fmt.COMPUTE_WIDE, fmt.COMPUTE_LONG):
        return f"one counter pass; rocprof-compute merged the passes into {MERGED}"
    if file.format == fmt.COMPUTE_DISPATCH_INFO:
        return "rocprof-compute's dispatch list (names only, no times)"
    if file.format:
        return f"{file.format}: no kernel figures beyond {MERGED}'s"
    return file.what or "not a profiler table"


EMPTY_PASS = "due to no counter csv files generated"  # rocprof-compute 3's warning, in log.txt, for a pass with no counter file
CONVERSION_FAILED = "from v3 to v2 csv"  # its warning when it could not convert rocprofv3's files ("Error converting ...")
LOG_BYTES = 8 * 2**20


def _log_facts(log: fmt.Sniffed | None) -> tuple[str, int, str]:
    """From rocprof-compute's log.txt: the filter it profiled with (its 'Kernel Selection:' and
    'Dispatch Selection:' lines, as '; this one: kernel X, dispatch Y' or ''), how many passes left no
    counter file, and its first 'Error converting' line (its own conversion failed), if any."""
    if log is None:
        return "", 0, ""
    with safe_files.open_regular(log.path, log.label) as handle:
        text = handle.read(LOG_BYTES).decode("utf-8", errors="replace")  # its head: a log of many passes runs to megabytes
    picked = []
    for line in text.splitlines():
        for key, word in (("Kernel Selection:", "kernel"), ("Dispatch Selection:", "dispatch")):
            if line.startswith(key) and (value := line[len(key) :].strip()) not in ("", "None", "[]"):
                picked.append(f"{word} {value[:120]}")
    conversion = next((line.strip() for line in text.splitlines() if CONVERSION_FAILED in line), "")
    return ("; this one: " + ", ".join(dict.fromkeys(picked)) if picked else ""), text.count(EMPTY_PASS), conversion


def _header_only(file: fmt.Sniffed) -> bool:
    """A CSV with a header line and no row after it (what rocprof-compute leaves when nothing matched)."""
    with safe_files.open_regular(file.path, file.label) as handle:
        header = handle.readline(limits.PROFILE_CSV_MAX_BYTES)
        if not header.strip():
            return True
        return all(not line.strip() for line in iter(lambda: handle.readline(2**16), b""))


def sysinfo_row(path: Path) -> dict[str, str]:
    """sysinfo.csv's one row, keys lower-case; empty when it holds none."""
    text = limits.read_text(path, 2**20, "rocprof-compute sysinfo")
    import csv
    import io

    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error as exc:  # e.g. a field over the csv module's 131,072-character limit
        raise InvalidInput(f"rocprof-compute sysinfo: {path.name} is not a readable CSV: {str(exc)[:200]}") from None
    return {k.strip().lower(): (v or "").strip() for k, v in rows[0].items() if k} if rows else {}


def _machine(row: dict[str, str]) -> str:
    """The workload's machine, from sysinfo.csv's row."""
    if not row:
        return "sysinfo.csv holds no row"
    parts = [f"rocprof-compute workload {row.get('workload_name', '?')!r}"]
    if row.get("version"):
        parts.append(f"format version {row['version']}")
    gpu = " ".join(x for x in (row.get("gpu_model", ""), f"({row['gpu_arch']})" if row.get("gpu_arch") else "") if x)
    if gpu:
        parts.append(gpu)
    if row.get("rocm_version"):
        parts.append(f"ROCm {row['rocm_version']}")
    if row.get("compute_partition") and row["compute_partition"] not in ("NA", ""):
        parts.append(f"{row['compute_partition']}/{row.get('memory_partition', '?')}")
    return ", ".join(parts)[:300]
