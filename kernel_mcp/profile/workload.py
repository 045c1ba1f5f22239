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
    if tables_read and all(_header_only(f) for f in tables_read):
        folder = tables_read[0].label.rpartition("/")[0] or "."
        raise InvalidInput(
            f"rocprof-compute workload {folder}: every table ({len(tables_read)} CSV files) holds its header and no row: "
            "the dispatch filter (-k/--kernel, -d/--dispatch) matched no kernel, so nothing was profiled",
            hint="profile again with a kernel name or dispatch filter that the application launches (rocprof-compute's log.txt lists them)",
        )
    merged = files.get(MERGED)
    if merged is None or merged.format not in (fmt.COMPUTE_WIDE, fmt.COMPUTE_LONG):
        stamps = files.get(TIMESTAMPS)
        if stamps is None or stamps.format != fmt.COMPUTE_TIMES:
            folder = (info or next(iter(files.values()))).label.rpartition("/")[0] or "."
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
        rows, instances = tables.drop_instances(rows)
        if instances:
            w.notes.append(f"{instances} per-instance counters of {merged.label} (NAME[i], one per channel) are not listed; their NAME_sum counters are")
        w.dispatches, w.counter_sums = timed, tables.counter_sums(rows)
        w.uses[merged.label] = f"GPU times ({len(timed)} dispatches) and counters ({rows['counter'].nunique()})"
        w.notes.append(
            f"GPU time per dispatch: the median of End - Start over its {int(runs.min()) if len(runs) else 0}+ counter rows "
            "(each counter pass re-ran it), as rocprof-compute computes it"
        )
    else:
        sums, timed, instances = tables.read_wide(merged.path, "rocprof-compute pmc_perf", merged.label, fmt.COMPUTE_FIXED, strip_kd=True)
        if timed is None:
            raise InvalidInput(f"rocprof-compute pmc_perf: {merged.label} has no Start_Timestamp/End_Timestamp columns")
        w.dispatches, w.counter_sums = timed, sums
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
