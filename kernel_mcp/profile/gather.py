"""Every file of the profiler outputs an import names, read and merged, with a record of each.

A folder is walked whole (regular files only, no link leading out of the workspace, or of the
folder of the workspace's [imports] it lies in): each file is
sniffed by its header, read when it carries kernel figures, and otherwise listed as skipped with
the reason. Rows keep the file they came from (`origin`), so a multi-process run (one
<pid>_kernel_trace.csv per process, under <hostname>/) merges into one summary whose kernels name
their files, and counters of processes that reuse dispatch ids are not folded together.

Which files give the GPU times, when several kinds are present:
1. rocpd databases (the tool's own database; CSV dispatch lists beside them are not merged: a
   rocpd CSV export repeats the same dispatches);
2. dispatch lists: rocprofv3 kernel traces, rocprof-compute workloads, legacy rocprof results.csv,
   ncu CSVs (counter files beside them give counters only);
3. counter files with Start/End timestamps (ROCm 7 counter_collection.csv), named as such;
4. kernel stats tables (calls and totals only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path


# the package's modules by their full names: the package imports this one (see test_architecture.py)
import kernel_mcp.profile.rocpd as rocpd
import kernel_mcp.profile.sniff as fmt
import kernel_mcp.profile.tables as tables
import kernel_mcp.profile.vendor_metrics as vendor_metrics
import kernel_mcp.profile.workload as workload
from kernel_mcp import limits, safe_files
from kernel_mcp.errors import InvalidInput, KernelMcpError
from kernel_mcp.models.profile import InputFile
from kernel_mcp.profile.parsers import ncu_dispatches

if TYPE_CHECKING:  # pandas is imported where a table is read: a server's start does not wait for it
    import pandas as pd

MAX_FILES = 10_000  # a thread-trace folder holds a few thousand; a whole home folder is refused
NO_KERNEL_FIGURES = {
    fmt.OTHER_TRACE: "no kernel dispatches in it",
    fmt.OTHER_STATS: "statistics of API calls or copies, not kernels",
    fmt.COMPUTE_SYSINFO: "a machine description, outside a rocprof-compute workload",
    fmt.COMPUTE_ROOFLINE: "roofline benchmark figures, not kernels",
    fmt.COMPUTE_KERNEL_TOP: "rocprof-compute's analysis output (its figures come from pmc_perf.csv)",
    fmt.COMPUTE_DISPATCH_INFO: "kernel names without times",
    fmt.THREAD_TRACE_STATS: "a thread trace (thread_trace_import reads it)",
}
SOURCES = {
    fmt.TRACE: "rocprofv3",
    fmt.LEGACY_DISPATCHES: "rocprof results.csv",
    fmt.COMPUTE_TIMES: "rocprof-compute timestamps",
    fmt.NCU: "ncu",
    fmt.KERNEL_STATS: "rocprofv3 kernel stats",
    fmt.LEGACY_STATS: "rocprof results.stats.csv",
    fmt.COUNTERS: "rocprofv3 counter collection",
    fmt.COMPUTE_LONG: "rocprof-compute counters",
}


@dataclass
class Gathered:
    dispatches: pd.DataFrame | None = None
    stats: pd.DataFrame | None = None
    counter_sums: pd.DataFrame | None = None
    rocpd: list[Path] = field(default_factory=list)
    rocpd_labels: list[str] = field(default_factory=list)  # each database as the answer names it
    sources: list[str] = field(default_factory=list)
    inputs: list[InputFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # the GPU targets the inputs name (workload sysinfo.csv, rocprofv3 agent_info.csv): target -> the files
    arches: dict[str, list[str]] = field(default_factory=dict)
    machine: dict[str, str] = field(default_factory=dict)  # a rocprof-compute workload's sysinfo row
    machine_label: str = ""  # the sysinfo.csv it came from
    agents: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # rocprofv3 agent_info.csv GPU rows (keys lower-case), by file
    dispatch_tables: list[tables.DispatchTable] = field(default_factory=list)  # counters per dispatch, for the derived metrics

    @property
    def arch(self) -> str | None:
        """The one target every input that names one agrees on; None when none or several."""
        return next(iter(self.arches)) if len(self.arches) == 1 else None

    @property
    def origins(self) -> list[str]:
        return [f.path for f in self.inputs if f.skipped is None]


def gather(targets: list[tuple[str, Path, Path]], root: Path, scratch: Path | None = None) -> Gathered:
    """`targets`: (label, resolved path, the folder its files must stay in) of each file or folder
    named; `root`: the workspace, whose files are named relative to it (others as the label leads);
    `scratch`: a folder of the run's own, where a database with a write-ahead log is copied to be read."""
    import pandas as pd

    entries = _entries(targets, root, scratch)
    g = Gathered()
    timed: list[tuple[InputFile, pd.DataFrame, str]] = []  # dispatch lists
    counter_timed: list[tuple[InputFile, pd.DataFrame]] = []  # dispatches read from counter files
    stats: list[tuple[InputFile, pd.DataFrame, str]] = []
    sums: list[pd.DataFrame] = []
    rocpd_files: list[tuple[InputFile, Path]] = []
    for folder, files in _workloads(entries, root, [within for _, _, within in targets]).items():
        w = workload.read_workload({s.path.name: s for s, _ in files if s.path.parent == folder})
        main = None
        for s, _ in files:
            use = w.uses.get(s.label)
            skip = None if use else w.skipped.get(s.label, "inside a rocprof-compute workload: raw pass output or counter requests, merged into pmc_perf.csv")
            g.inputs.append(InputFile(path=s.label, format=s.format or "other", used_for=use, skipped=skip))
            if use and use.startswith("GPU times"):
                main = g.inputs[-1]
        timed.append((main or g.inputs[-1], w.dispatches, w.source))
        sums.append(w.counter_sums)
        if w.table is not None:
            g.dispatch_tables.append(w.table)
        if w.arch:
            g.arches.setdefault(w.arch, []).append(next((s.label for s, _ in files if s.path.name == workload.SYSINFO), str(folder)))
        if w.machine and not g.machine:
            g.machine = w.machine
            g.machine_label = next((s.label for s, _ in files if s.path.name == workload.SYSINFO), "sysinfo.csv")
        g.notes += w.notes
        taken = {s.label for s, _ in files}
        entries = [(s, e) for s, e in entries if s.label not in taken]
    for s, explicit in entries:
        record = InputFile(path=s.label, format=s.format or "other")
        g.inputs.append(record)
        try:
            if s.format == fmt.AGENT_INFO:
                _agents(s, record, g)
                continue
            _read_one(s, record, timed, counter_timed, stats, sums, rocpd_files, g.dispatch_tables)
        except KernelMcpError as exc:
            if exc.message.startswith(s.path.name) or s.label in exc.message or s.path.name in exc.message:
                raise
            raise type(exc)(f"{s.label}: {exc.message}", exc.hint) from None
        if record.skipped is not None and explicit and not record.skipped.startswith("SQLite's"):
            raise InvalidInput(
                f"{s.label}: {record.skipped}",
                hint="profile_import reads rocprofv3 output (folders, kernel_trace/counter_collection/"
                "kernel_stats CSVs, rocpd .db), rocprof-compute workloads, legacy rocprof results.csv/results.stats.csv and ncu --csv files",
            )
    _choose(g, timed, counter_timed, stats, rocpd_files)
    if len(g.arches) > 1:
        g.notes.append(
            "the inputs name several GPU targets ("
            + "; ".join(f"{a} in {', '.join(f[:2])}" for a, f in g.arches.items())
            + "): derived metrics use only the definitions rocprof-compute gives alike for every target"
        )
    g.counter_sums = pd.concat([x for x in sums if len(x)], ignore_index=True) if any(len(x) for x in sums) else None
    return g


def agent_rows(folder: Path) -> list[tuple[str, dict[str, str]]]:
    """The GPU agents of every rocprofv3 agent_info.csv under a run's own output folder (keys lower-case), by file."""
    found: list[tuple[str, dict[str, str]]] = []
    for path in safe_files.files_under(folder, "*agent_info.csv", within=folder, relative_to=folder):
        s = _sniff(path, path.relative_to(folder).as_posix())
        if s.format == fmt.AGENT_INFO:
            g = Gathered()
            _agents(s, InputFile(path=s.label, format=s.format), g)
            found += g.agents
    return found


def _agents(s: fmt.Sniffed, record: InputFile, g: Gathered) -> None:
    """rocprofv3's agent_info.csv: which GPU ran the dispatches beside it (its GPU agents' target
    names and products); not kernel figures, but named as read, never refused when listed."""
    columns = tables.header(s.path, "rocprofv3 agent info")
    cols = {c.strip().lower(): c for c in columns}
    if "agent_type" not in cols or "name" not in cols:
        record.skipped = "agent info without Agent_Type/Name columns"
        return
    wanted = {"agent_type", "name", "product_name", *vendor_metrics.AGENT_FIELDS.values()}
    frame = tables.read(s.path, "rocprofv3 agent info", {cols[c] for c in wanted if c in cols}, set())
    gpus = frame[frame[cols["agent_type"]].astype(str).str.upper() == "GPU"]
    for row in gpus.to_dict("records"):
        g.agents.append((s.label, {str(k).strip().lower(): str(v) for k, v in row.items()}))
    names = sorted({str(n).strip() for n in gpus[cols["name"]] if str(n).strip()})
    if not names:
        record.skipped = "agent info naming no GPU agent"
        return
    product = sorted({str(p).strip() for p in gpus[cols["product_name"]]}) if "product_name" in cols else []
    record.used_for = (
        f"the GPU agents ({len(gpus)}): {', '.join(names)}" + (f", {', '.join(product)}" if product else "") + " (which agent ran a dispatch is its Agent_Id)"
    )
    for name in names:
        g.arches.setdefault(name, []).append(s.label)


def _entries(targets: list[tuple[str, Path, Path]], root: Path, scratch: Path | None = None) -> list[tuple[fmt.Sniffed, bool]]:
    seen: set[Path] = set()
    entries: list[tuple[fmt.Sniffed, bool]] = []
    for label, path, within in targets:
        found = [(p, False) for p in safe_files.files_under(path, "*", within=within, relative_to=root)] if path.is_dir() else [(path, True)]
        if len(seen) + len(found) > MAX_FILES:
            raise InvalidInput(f"{label}: over {MAX_FILES} files to look at; a profiler output folder holds fewer", hint="name the output folder itself")
        for p, explicit in found:
            key = p.resolve()
            if key in seen:
                continue  # named twice (a folder and a file in it): read once
            seen.add(key)
            entries.append((_sniff(p, _label(p, root, label if explicit else _beside(label, path, p)), scratch, len(entries)), explicit))
    return entries


def _label(path: Path, root: Path, given: str | None) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return given or path.name


def _beside(label: str, folder: Path, path: Path) -> str:
    """A file found under `folder` (named `label`) as the answer names it outside the workspace:
    the way the user gave the folder, then the file's way in it."""
    try:
        return f"{label.rstrip('/')}/{path.relative_to(folder).as_posix()}"
    except ValueError:
        return path.name


SQLITE_SIDE_FILES = {"-wal": "SQLite's write-ahead log of {db}, read with it", "-shm": "SQLite's shared-memory index of {db}'s log (not needed to read it)"}


def _sniff(path: Path, label: str, scratch: Path | None = None, index: int = 0) -> fmt.Sniffed:
    side = next((suffix for suffix in SQLITE_SIDE_FILES if path.name.endswith(suffix)), None)
    database = path.with_name(path.name[: -len(side)]) if side else None
    if side and database is not None and database.is_file():
        safe_files.check_regular(path, label)
        return fmt.Sniffed(path, label, None, what=SQLITE_SIDE_FILES[side].format(db=database.name))
    if path.suffix.lower() not in fmt.TEXT_SUFFIXES | {".db"}:
        safe_files.check_regular(path, label)
        return fmt.Sniffed(path, label, None, what=fmt.describe_other(path))
    s = fmt.sniff(path, label)
    if s.what == "an SQLite database":
        copied = scratch is not None and rocpd.write_ahead_log(path) is not None
        if copied and scratch is not None:
            # committed rows may be only in the log: a private copy of both is read, the user's files are never opened to write
            s.path = rocpd.private_copy(path, scratch, index)
        s.format, s.what = _sqlite_kind(s.path)
        if copied and s.format is not None:
            s.what = f"with its write-ahead log {path.name}-wal, read from a copy of both in the run's folder"
    return s


def _sqlite_kind(path: Path) -> tuple[str | None, str]:
    try:
        con = sqlite3.connect(rocpd.open_uri(path), uri=True)
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master LIMIT 10000")}
        finally:
            con.close()
    except sqlite3.Error:
        return None, "a damaged SQLite database"
    if any(n.startswith("rocpd_") for n in names):
        return fmt.ROCPD, ""
    if "KERN" in names:
        return None, "legacy rocprof's results.db (table KERN): the dispatches of its results.csv"
    return None, "an SQLite database of another tool (no rocpd tables)"


def _workloads(entries: list[tuple[fmt.Sniffed, bool]], root: Path, allowed: list[Path]) -> dict[Path, list[tuple[fmt.Sniffed, bool]]]:
    """rocprof-compute workload folders among the entries, each with every file at or under it.
    A pmc_perf.csv named alone brings its workload's sysinfo.csv and timestamps.csv along: they
    tell which profiler collected it (and are listed in the answer like any file read)."""
    for s, explicit in list(entries):
        if explicit and s.path.name == workload.MERGED:
            for name in (workload.SYSINFO, workload.TIMESTAMPS):
                sibling = s.path.parent / name
                if sibling.is_file() and not any(e.path == sibling for e, _ in entries) and any(safe_files.is_inside(sibling, a) for a in allowed):
                    entries.append((_sniff(sibling, _label(sibling, root, f"{s.label.rsplit('/', 1)[0]}/{name}" if "/" in s.label else name)), False))
    by_dir: dict[Path, dict[str, fmt.Sniffed]] = defaultdict(dict)
    for s, _ in entries:
        by_dir[s.path.parent][s.path.name] = s
    roots = sorted((d for d, files in by_dir.items() if workload.is_workload(files)), key=lambda d: len(d.parts))
    found: dict[Path, list] = {}
    for s, e in entries:
        owner = next((d for d in roots if d == s.path.parent or d in s.path.parents), None)
        if owner is not None:
            found.setdefault(owner, []).append((s, e))
    return found


def _read_one(s, record, timed, counter_timed, stats, sums, rocpd_files, per_dispatch) -> None:
    frame: pd.DataFrame | None  # each reader's dispatches; None where a file holds counters only
    if s.format is None and s.what.startswith("SQLite's write-ahead log"):
        record.used_for = s.what
    elif s.format is None:
        # a description naming the tool stands alone; a generic one says first that nothing could be read
        record.skipped = s.what if s.what.startswith(("legacy rocprof", "ncu's log", "SQLite's")) else f"not a profiler output this reader knows: {s.what}"
    elif s.format in NO_KERNEL_FIGURES:
        record.skipped = NO_KERNEL_FIGURES[s.format]
    elif s.format == fmt.ROCPD:
        record.used_for = s.what or None  # how it was read, when not in place
        rocpd_files.append((record, s.path))
    elif s.format in (fmt.TRACE, fmt.COMPUTE_TIMES):
        frame = tables.read_dispatches(s.path, SOURCES[s.format], s.label, strip_kd=s.format != fmt.TRACE)
        timed.append((record, frame, SOURCES[s.format]))
    elif s.format == fmt.LEGACY_DISPATCHES:
        long, frame, instances, table = tables.read_wide(s.path, "rocprof results.csv", s.label, fmt.LEGACY_FIXED, strip_kd=True, keep=vendor_metrics.wanted)
        sums.append(long)
        per_dispatch += [table] if table is not None else []
        if frame is None:  # counter mode without --timestamp on
            record.used_for = f"counters ({long['counter'].nunique()})"
        else:
            timed.append((record, frame, SOURCES[s.format]))
    elif s.format == fmt.NCU:
        frame, _ = ncu_dispatches(limits.read_text(s.path, limits.PROFILE_CSV_MAX_BYTES, "ncu CSV"))
        frame["origin"] = s.label
        timed.append((record, frame, SOURCES[s.format]))
    elif s.format in (fmt.COUNTERS, fmt.COMPUTE_LONG, fmt.COMPUTE_WIDE):
        if s.format == fmt.COMPUTE_WIDE:
            long, frame, _, table = tables.read_wide(s.path, s.format, s.label, fmt.COMPUTE_FIXED, strip_kd=True, keep=vendor_metrics.wanted)
            sums.append(long)
            count = long["counter"].nunique() if len(long) else 0
        else:
            rows, frame = tables.read_counter_rows(s.path, s.format, s.label, strip_kd=s.format != fmt.COUNTERS)
            table = tables.dispatch_table(rows, s.label, vendor_metrics.wanted, rocpd=s.format == fmt.COMPUTE_LONG)
            sums.append(tables.counter_sums(rows))
            count = rows["counter"].nunique()
        record.used_for = f"counters ({count})"
        per_dispatch += [table] if table is not None else []
        if frame is not None:
            counter_timed.append((record, frame))
    elif s.format in (fmt.KERNEL_STATS, fmt.LEGACY_STATS):
        stats.append((record, tables.read_stats(s.path, s.format, s.label), SOURCES[s.format]))


def _choose(g: Gathered, timed, counter_timed, stats, rocpd_files) -> None:
    import pandas as pd

    if rocpd_files:
        g.rocpd = [path for _, path in rocpd_files]
        g.rocpd_labels = [record.path for record, _ in rocpd_files]
        for r, _ in rocpd_files:
            r.used_for = "GPU times and counters (rocpd" + (f"; {r.used_for})" if r.used_for else ")")
        why = "rocpd databases were read; dispatch lists beside them are not merged (a rocpd CSV export repeats the same dispatches)"
        for record, _, _ in timed + stats:
            record.used_for, record.skipped = None, why
        for record, _ in counter_timed:
            record.used_for, record.skipped = None, why
        g.sources = ["rocpd"]
        return
    if timed:
        frames = []
        for record, frame, source in timed:
            frames.append(frame)
            if record.used_for is None or record.used_for.startswith("counters"):
                record.used_for = f"GPU times ({len(frame)} dispatches)" + (f" and {record.used_for}" if record.used_for else "")
            g.sources.append(source)
        g.dispatches = pd.concat(frames, ignore_index=True)
        for record, _, _ in stats:
            record.skipped = "kernel totals of the dispatches read from the dispatch lists beside it"
    elif counter_timed:
        g.dispatches = pd.concat([frame for _, frame in counter_timed], ignore_index=True)
        for record, frame in counter_timed:
            record.used_for = f"GPU times ({len(frame)} dispatches) and {record.used_for}"
        g.sources.append("rocprofv3 counter collection" if any(r.format == fmt.COUNTERS for r, _ in counter_timed) else "rocprof-compute counters")
        g.notes.append("GPU times from counter-collection Start/End: the profiler serializes dispatches while it counts, so they can exceed a kernel trace's")
        for record, _, _ in stats:
            record.skipped = "kernel totals of the dispatches read from the counter files beside it"
    elif stats:
        g.stats = pd.concat([frame for _, frame, _ in stats], ignore_index=True)
        for record, frame, source in stats:
            record.used_for = f"calls and totals ({int(frame['calls'].sum())} dispatches of {len(frame)} kernels)"
            g.sources.append(source)
    g.sources = sorted(set(g.sources))
