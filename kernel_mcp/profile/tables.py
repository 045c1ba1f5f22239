"""Readers for the dispatch, counter and stats tables of every AMD profiler generation, keyed on
column names through one alias table (rocprofv3, its rocpd CSV export, rocprof-compute workloads
of rocprofv1/v2/v3, legacy rocprof results.csv / results.stats.csv).

Each reader returns the shared shapes: dispatches (kernel, duration_ns, start_ns, dispatch, grid,
block, registers, origin: one row per dispatch), counter rows (origin, dispatch, kernel, counter,
value) and stats (kernel, calls, total_ns, min_ns, max_ns). Bounds as in parsers.py: file size and
row count from limits.py; every value error becomes InvalidInput naming the file.
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_mcp import limits
from kernel_mcp.errors import InvalidInput

if TYPE_CHECKING:  # pandas is imported where a table is read: a server's start does not wait for it
    import pandas as pd

# canonical name -> the lower-cased spellings the tools use, first match wins
ALIASES: dict[str, tuple[str, ...]] = {
    "kernel": ("kernel_name", "kernelname"),
    "start": ("start_timestamp", "beginns"),
    "end": ("end_timestamp", "endns"),
    "dispatch": ("dispatch_id", "index"),
    "kind": ("kind",),
    "agent": ("agent_id", "gpu_id", "gpu-id"),
    "counter": ("counter_name",),
    "value": ("counter_value",),
    "grid_x": ("grid_size_x",),
    "grid_y": ("grid_size_y",),
    "grid_z": ("grid_size_z",),
    "grid_total": ("grid_size", "grd"),  # one number, the work-items of all dimensions
    "wg_x": ("workgroup_size_x",),
    "wg_y": ("workgroup_size_y",),
    "wg_z": ("workgroup_size_z",),
    "wg_total": ("workgroup_size", "wgr"),
    "vgprs": ("vgpr_count", "arch_vgpr", "arch_vgpr_count", "vgpr"),
    "agprs": ("accum_vgpr_count", "accum_vgpr"),
    "sgprs": ("sgpr_count", "sgpr"),
    "lds_bytes": ("lds_block_size", "group_segment_size", "lds_per_workgroup", "lds"),
    "scratch_bytes": ("scratch_size", "private_segment_size", "scratch_per_workitem", "scr"),
}
NUMERIC = ("grid_x", "grid_y", "grid_z", "grid_total", "wg_x", "wg_y", "wg_z", "wg_total", "vgprs", "agprs", "sgprs", "lds_bytes", "scratch_bytes")
# The kernel-descriptor suffix rocprof v1/v2 append (" [clone .kd]", " (.kd)", ".kd"): dropped, so a
# kernel has the same name as rocprofv3 and rocpd give it and runs compare across tools.
KD_SUFFIX = re.compile(r"(\s*\[clone \.kd\]|\s*\(\.kd\)|\.kd)$")
TIME_COLUMNS = set(ALIASES["start"] + ALIASES["end"])
EXPONENT = re.compile(r"^\s*[-+]?(\d*)\.?(\d*)[eE]([-+]?\d+)\s*$")
# The launch facts and times under the names rocprof-compute's expressions read them by (its
# pmc_perf.csv columns; src/utils/utils.py renames rocprofv3's and rocprof's to these)
VENDOR_NAMES = {
    "grid_total": "Grid_Size",
    "wg_total": "Workgroup_Size",
    "lds_bytes": "LDS_Per_Workgroup",
    "scratch_bytes": "Scratch_Per_Workitem",
    "vgprs": "Arch_VGPR",
    "agprs": "Accum_VGPR",
    "sgprs": "SGPR",
    "start": "Start_Timestamp",
    "end": "End_Timestamp",
}
PMC = "pmc_perf"  # rocprof-compute's main table; its other tables are named by their pass (SQ_LEVEL_WAVES)


@dataclass
class DispatchTable:
    """One file's counters per dispatch, as rocprof-compute's analysis holds them: `tables[PMC]` one
    row per dispatch and one column per counter (vendor names), other tables aligned with it by row;
    `kernels` the kernel of each row; `accum`: a level's SQ_ACCUM_PREV_HIRES is the `<level>_ACCUM`
    column of PMC (rocprofv3 and rocpd name it so), not a table of its own."""

    origin: str
    kernels: pd.Series
    tables: dict[str, pd.DataFrame]
    accum: bool = False
    grid: pd.Series | None = None  # Grid_Size per row, for joining passes as rocprof-compute joins them


def _malformed(what: str, name: str):
    """Turns the value errors of a column of the wrong kind (text in a count, a timestamp past
    int64, infinity) into invalid input naming the file, never an internal error."""
    import contextlib

    @contextlib.contextmanager
    def guard():
        try:
            yield
        except InvalidInput:
            raise
        except (ValueError, TypeError, OverflowError, KeyError, IndexError, AttributeError) as exc:
            raise InvalidInput(f"{what}: {name} holds a value of the wrong kind: {type(exc).__name__}: {str(exc)[:200]}") from None

    return guard()


@contextlib.contextmanager
def _readable(what: str, name: str) -> Iterator[None]:
    """The csv module's own refusals (a field over its 131,072-character limit) as invalid input naming the file."""
    try:
        yield
    except csv.Error as exc:
        raise InvalidInput(f"{what}: {name} is not a readable CSV: {str(exc)[:200]}") from None


def resolve(columns: list[str]) -> dict[str, str]:
    """canonical name -> the file's own column name."""
    by_lower: dict[str, str] = {}
    for c in columns:
        by_lower.setdefault(str(c).strip().lower(), c)
    found = {}
    for name, spellings in ALIASES.items():
        for s in spellings:
            if s in by_lower:
                found[name] = by_lower[s]
                break
    return found


def header(path: Path, what: str) -> list[str]:
    import pandas as pd

    if limits.check_size(path, limits.PROFILE_CSV_MAX_BYTES, what) == 0:
        raise InvalidInput(f"{what}: {path.name} is empty")
    with path.open("rb") as handle:  # counted before pandas parses it: a header of 150,000 columns took it 13 s
        width = handle.readline(4 * 2**20).count(b",") + 1
    if width > limits.PROFILE_CSV_MAX_COLUMNS:
        raise InvalidInput(
            f"{what}: {path.name} has {width:,} header fields, more than any profiler table (at most {limits.PROFILE_CSV_MAX_COLUMNS:,} are read)"
        )
    try:
        return [str(c) for c in pd.read_csv(path, nrows=0).columns]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError, csv.Error) as exc:
        raise InvalidInput(f"{what}: {path.name} is not a readable CSV: {str(exc)[:200]}") from None


def read(path: Path, what: str, usecols: set[str], text: set[str]) -> pd.DataFrame:
    """Only the named columns (the file's spelling); `text` columns read as text (names as
    categories, timestamps as written so that their precision can be checked)."""
    import pandas as pd

    dtype = {c: (str if c.strip().lower() in TIME_COLUMNS else "category") for c in text}
    try:
        frame = pd.read_csv(path, usecols=lambda c: c in usecols, dtype=dtype, nrows=limits.PROFILE_CSV_MAX_ROWS + 1)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError, TypeError, OverflowError, csv.Error) as exc:
        raise InvalidInput(f"{what}: {path.name} is not a readable CSV: {str(exc)[:300]}") from None
    if len(frame) > limits.PROFILE_CSV_MAX_ROWS:
        raise InvalidInput(f"{what}: {path.name} has over {limits.PROFILE_CSV_MAX_ROWS} rows, more than this reader accepts")
    return frame


def require(cols: dict[str, str], needed: tuple[str, ...], path: Path, what: str) -> None:
    missing = [ALIASES[n][0].title() if n not in ("kernel",) else "Kernel_Name" for n in needed if n not in cols]
    if missing:
        raise InvalidInput(
            f"{what}: {path.name} lacks column(s) {', '.join(missing)}: not a profiler file of a known version",
            hint="its header's own names are not echoed here (a file's content never is)",
        )


def timestamps(raw: pd.Series, path: Path, what: str) -> pd.Series:
    """Nanosecond timestamps as written. A value in exponent notation that cannot resolve a
    nanosecond (8.1097E+14: a spreadsheet saved the file with 5 digits) is refused: every dispatch
    of such a file lasts 0 ns or 10 s, and no figure from it is a GPU time."""
    import pandas as pd

    text = raw.astype(str)
    marked = text[text.str.contains("e", case=False, regex=False)]
    if len(marked):
        parts = marked.str.extract(EXPONENT)
        ok = parts.notna().all(axis=1)
        if ok.any():
            resolution = parts.loc[ok, 2].astype(int) - parts.loc[ok, 1].str.len()
            digits = (parts.loc[ok, 0].str.lstrip("0") + parts.loc[ok, 1]).str.len()
            if (resolution > 0).any():
                worst = int(resolution.max())
                raise InvalidInput(
                    f"{what}: {path.name} has timestamps written in exponent notation with {int(digits.min())} significant digits "
                    f"(a resolution of 1e{worst} ns): no GPU time can be computed from them",
                    hint="such files have passed through a spreadsheet; the profiler writes whole nanoseconds",
                )
    values = pd.to_numeric(raw, errors="coerce")
    if values.isna().any():
        raise InvalidInput(f"{what}: {path.name} has rows without timestamps (truncated?)")
    if not (values.abs() < 2**62).all():
        raise InvalidInput(f"{what}: {path.name} has a timestamp out of range (not nanoseconds of a real run)")
    return values  # int64 when whole: past 2**53 ns (104 days of uptime) a float64 loses nanoseconds


def read_dispatches(path: Path, what: str, origin: str, strip_kd: bool = False) -> pd.DataFrame:
    """One row per dispatch from any table with a kernel name and Start/End (or BeginNs/EndNs)."""
    import pandas as pd

    with _malformed(what, path.name):
        cols = resolve(header(path, what))
        require(cols, ("kernel", "start", "end"), path, what)
        frame = read(path, what, set(cols.values()), {cols[k] for k in ("kernel", "start", "end", "kind", "agent") if k in cols})
        if "kind" in cols:
            frame = frame[frame[cols["kind"]].astype(str) == "KERNEL_DISPATCH"]
        start = timestamps(frame[cols["start"]], path, what)
        end = timestamps(frame[cols["end"]], path, what)
        out = pd.DataFrame(
            {"kernel": _names(frame[cols["kernel"]], strip_kd), "duration_ns": (end - start).to_numpy(dtype="float64"), "start_ns": start.to_numpy()}
        )
        if (out["duration_ns"] < 0).any():
            raise InvalidInput(f"{what}: {path.name} has a dispatch that ends before it starts (inconsistent)")
        return _launch_columns(out, frame, cols, origin)


def _names(series: pd.Series, strip_kd: bool) -> pd.Series:
    names = series.astype(str)
    return (names.str.replace(KD_SUFFIX, "", regex=True) if strip_kd else names).astype("category").reset_index(drop=True)


def _launch_columns(out: pd.DataFrame, frame: pd.DataFrame, cols: dict[str, str], origin: str) -> pd.DataFrame:
    import pandas as pd

    out["dispatch"] = pd.to_numeric(frame[cols["dispatch"]], errors="coerce").to_numpy() if "dispatch" in cols else range(len(out))
    for name in NUMERIC:
        if name in cols:
            out[name] = pd.to_numeric(frame[cols[name]], errors="coerce").to_numpy()
    out["agent"] = frame[cols["agent"]].astype(str).to_numpy() if "agent" in cols else ""
    out["origin"] = origin
    return out.replace([float("inf"), float("-inf")], float("nan"))  # a grid of "inf" is no grid


def read_counter_rows(path: Path, what: str, origin: str, strip_kd: bool = False) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Long-format counters (one row per dispatch and counter): the rows, and when the file has
    Start/End columns, its dispatches: per dispatch the median of End - Start over its rows (what
    rocprof-compute computes when a dispatch was re-run once per counter pass)."""
    import pandas as pd

    with _malformed(what, path.name):
        cols = resolve(header(path, what))
        require(cols, ("dispatch", "kernel", "counter", "value"), path, what)
        frame = read(path, what, set(cols.values()), {cols[k] for k in ("kernel", "counter", "start", "end", "agent") if k in cols})
        rows = pd.DataFrame(
            {
                "origin": origin,
                "dispatch": pd.to_numeric(frame[cols["dispatch"]], errors="coerce").to_numpy(),
                "kernel": _names(frame[cols["kernel"]], strip_kd).astype(str).to_numpy(),
                "counter": frame[cols["counter"]].astype(str).to_numpy(),
                "value": pd.to_numeric(frame[cols["value"]], errors="coerce").to_numpy(),
            }
        )
        for name in NUMERIC:
            if name in cols and name in VENDOR_NAMES:  # launch facts, per row: the per-dispatch tables read them
                rows[name] = pd.to_numeric(frame[cols[name]], errors="coerce").to_numpy()
        if "start" not in cols or "end" not in cols:
            return rows, None
        start = timestamps(frame[cols["start"]], path, what).to_numpy()
        end = timestamps(frame[cols["end"]], path, what).to_numpy()
        rows["start"], rows["end"] = start, end
        timed = pd.DataFrame({"dispatch": rows["dispatch"], "kernel": rows["kernel"], "duration_ns": (end - start).astype("float64"), "start_ns": start})
        if (timed["duration_ns"] < 0).any():
            raise InvalidInput(f"{what}: {path.name} has a dispatch that ends before it starts (inconsistent)")
        for name in NUMERIC:
            if name in cols:
                timed[name] = pd.to_numeric(frame[cols[name]], errors="coerce").to_numpy()
        timed["agent"] = frame[cols["agent"]].astype(str).to_numpy() if "agent" in cols else ""
        keys = ["dispatch", "kernel", "agent"]
        grouped = timed.groupby(keys, sort=False, dropna=False)
        dispatches = grouped.agg({"start_ns": "min", **{c: "first" for c in timed.columns if c in NUMERIC}}).reset_index()
        dispatches["duration_ns"] = grouped["duration_ns"].median().to_numpy()
        dispatches["origin"] = origin
        dispatches["kernel"] = dispatches["kernel"].astype("category")
        return rows, dispatches


def read_wide(
    path: Path, what: str, origin: str, fixed: set[str], strip_kd: bool = False, keep: Callable[[str], bool] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame | None, int, DispatchTable | None]:
    """A table with one row per dispatch and one column per counter (rocprof-compute pmc_perf.csv,
    legacy rocprof results.csv in counter mode): the counter sums per kernel, the dispatches when
    it has Start/End, how many per-instance columns were left out, and with `keep` (which counters,
    per-instance ones included, the derived metrics read) the per-dispatch table of those."""
    import pandas as pd
    from kernel_mcp.profile.sniff import counter_columns

    with _malformed(what, path.name):
        names = header(path, what)
        cols = resolve(names)
        require(cols, ("kernel",), path, what)
        counters, instances = counter_columns(names, fixed)
        timed = "start" in cols and "end" in cols
        wanted = [c for c in names if keep(c)] if keep else []
        frame = read(path, what, set(cols.values()) | set(counters) | set(wanted), {cols[k] for k in ("kernel", "start", "end", "agent") if k in cols})
        kernel = _names(frame[cols["kernel"]], strip_kd).astype(str)
        values = frame[counters].apply(pd.to_numeric, errors="coerce") if counters else pd.DataFrame(index=frame.index)
        values.index = kernel.to_numpy()
        sums = values.groupby(level=0, sort=False).agg(["sum", "count"]) if counters else None
        long = pd.DataFrame(columns=["kernel", "counter", "value_sum", "n"])
        if sums is not None and len(sums):
            stacked = sums.stack(level=0, future_stack=True).reset_index()
            stacked.columns = ["kernel", "counter", "value_sum", "n"]
            long = stacked[stacked["n"] > 0]
        dispatches = None
        if timed:
            start = timestamps(frame[cols["start"]], path, what)
            end = timestamps(frame[cols["end"]], path, what)
            dispatches = pd.DataFrame(
                {"kernel": kernel.astype("category").to_numpy(), "duration_ns": (end - start).to_numpy(dtype="float64"), "start_ns": start.to_numpy()}
            )
            if (dispatches["duration_ns"] < 0).any():
                raise InvalidInput(f"{what}: {path.name} has a dispatch that ends before it starts (inconsistent)")
            dispatches = _launch_columns(dispatches, frame, cols, origin)
        table = None
        if keep:
            per = frame[[c for c in wanted if c not in cols.values()]].apply(pd.to_numeric, errors="coerce")
            for name, vendor in VENDOR_NAMES.items():
                if name in cols:
                    per[vendor] = pd.to_numeric(frame[cols[name]], errors="coerce")
            per = per.reset_index(drop=True).astype("float64")
            table = DispatchTable(origin, kernel.reset_index(drop=True), {PMC: per}, grid=per.get("Grid_Size"))
        return long, dispatches, instances, table


def dispatch_table(rows: pd.DataFrame, origin: str, keep: Callable[[str], bool], rocpd: bool) -> DispatchTable | None:
    """Long counter rows of one file as rocprof-compute turns them into one row per dispatch:
    rocprofv3's counter_collection.csv by pivot_table (the mean of a counter's values within a dispatch;
    src/utils/utils.py v3_counter_csv_to_v2_csv), its rocpd-layout pmc_perf.csv by dispatch, kernel
    and launch size with the last value of each counter and End - Start the median over the rows
    (src/utils/rocpd_data.py process_rocpd_csv, which sets Start to 0)."""
    if rows.empty or not rows["counter"].map(keep).any():
        return None
    launch = [c for c in VENDOR_NAMES if c in rows.columns and c not in ("start", "end")]
    keys = ["dispatch", "kernel"] + ([c for c in ("grid_total", "wg_total", "lds_bytes") if c in launch] if rocpd else [])
    timed = "start" in rows.columns and "end" in rows.columns
    every = rows.assign(duration=rows["end"] - rows["start"]) if timed else rows
    group = every.groupby(keys, sort=False, dropna=False)  # every row of a dispatch: its time is the median over all
    facts = group[[c for c in launch if c not in keys] + (["start", "end"] if timed else [])].first()
    if rocpd and timed:
        facts["end"] = group["duration"].median()
        facts["start"] = 0.0
    rows = rows[rows["counter"].map(keep)]
    values = rows.pivot_table(index=keys, columns="counter", values="value", aggfunc="last" if rocpd else "mean", sort=False, dropna=False)
    table = facts.join(values, how="inner").reset_index()
    kernels = table["kernel"].astype(str)
    per = table.drop(columns=["dispatch", "kernel"]).rename(columns=VENDOR_NAMES).astype("float64")
    per.columns = [str(c) for c in per.columns]
    return DispatchTable(origin, kernels, {PMC: per}, accum=True, grid=per.get("Grid_Size"))


def drop_instances(rows: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Long counter rows without the per-instance counters (NAME[i]), and how many names those were."""
    names = rows["counter"].astype(str)
    instance = names.str.endswith("]") & names.str.contains("[", regex=False)
    return rows[~instance], int(names[instance].nunique())


def counter_sums(rows: pd.DataFrame) -> pd.DataFrame:
    """Long counter rows -> per kernel and counter: the sum of values and the number of dispatches
    that carry it (a dispatch is its file and its id: processes reuse ids, passes split counters)."""
    import pandas as pd

    if rows.empty:
        return pd.DataFrame(columns=["kernel", "counter", "value_sum", "n"])
    keyed = rows.assign(key=rows["origin"].astype(str) + "#" + rows["dispatch"].astype(str)) if "origin" in rows.columns else rows.assign(key=rows["dispatch"])
    grouped = keyed.groupby(["kernel", "counter"], sort=False, observed=True)
    return pd.DataFrame({"value_sum": grouped["value"].sum(), "n": grouped["key"].nunique()}).reset_index()


def read_stats(path: Path, what: str, origin: str) -> pd.DataFrame:
    """A kernel stats table (rocprofv3 kernel_stats.csv, rocprof results.stats.csv). Read with the
    csv module: old rocprof wrote kernel names unquoted, commas and all, so a row has more cells than
    the header and the name is all cells but the trailing figures."""
    import pandas as pd

    text = limits.read_text(path, limits.PROFILE_CSV_MAX_BYTES, what)
    with _malformed(what, path.name), _readable(what, path.name):
        reader = csv.reader(io.StringIO(text))
        head = [c.strip().lower() for c in next(reader, [])]
        for needed in ("name", "calls", "totaldurationns"):
            if needed not in head:
                raise InvalidInput(f"{what}: {path.name} lacks column {needed}")
        if head[0] != "name":
            raise InvalidInput(f"{what}: {path.name} does not start with the Name column")
        rows: list[dict[str, Any]] = []
        for cells in reader:
            if not cells:
                continue
            if len(rows) >= limits.PROFILE_CSV_MAX_ROWS:
                raise InvalidInput(f"{what}: {path.name} has over {limits.PROFILE_CSV_MAX_ROWS} rows, more than this reader accepts")
            extra = len(cells) - len(head)
            name = ",".join(cells[: extra + 1]) if extra > 0 else cells[0]
            row = dict(zip(head[1:], cells[extra + 1 :] if extra > 0 else cells[1:]))
            rows.append(
                {
                    "kernel": KD_SUFFIX.sub("", name),
                    "calls": int(row["calls"]),
                    "total_ns": float(row["totaldurationns"]),
                    "min_ns": float(row["minns"]) if row.get("minns") else None,
                    "max_ns": float(row["maxns"]) if row.get("maxns") else None,
                }
            )
        frame = pd.DataFrame(rows, columns=["kernel", "calls", "total_ns", "min_ns", "max_ns"])
        if (frame["calls"] < 0).any() or (frame["total_ns"] < 0).any() or not frame["total_ns"].map(lambda v: v == v and abs(v) < 2**62).all():
            raise InvalidInput(f"{what}: {path.name} has a negative or impossible call count or duration")
        frame["origin"] = origin
        return frame
