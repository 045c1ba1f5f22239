"""Parsers for profiler outputs, exactly as the tools write them.

rocprofv3 CSV (kernel_trace.csv, counter_collection.csv, --list-avail) keyed on column names,
accepting the older and newer column sets (Agent_Id as a number or "Agent N", with or without
VGPR/Accum_VGPR/SGPR/LDS columns, counters with or without timestamps). ncu `--csv` output
(`--metrics` long format and `--page raw` wide format), with the program's own output and
`==PROF==` lines before the table and thousands separators in the values.
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import pandas as pd

from kernel_mcp import limits
from kernel_mcp.errors import InvalidInput

TRACE_REQUIRED = ("Kernel_Name", "Start_Timestamp", "End_Timestamp")
COUNTER_REQUIRED = ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value")


TRACE_COLUMNS = {
    "Kind", "Agent_Id", "Dispatch_Id", "Kernel_Name", "Start_Timestamp", "End_Timestamp", "Workgroup_Size_X", "Workgroup_Size_Y",
    "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "LDS_Block_Size",
    "Group_Segment_Size", "Scratch_Size", "Private_Segment_Size",
}
TEXT_COLUMNS = {"Kind": "category", "Kernel_Name": "category", "Agent_Id": "category", "Counter_Name": "category"}


def _read(path: Path, what: str, columns: set[str] | None = None) -> pd.DataFrame:
    """Only the columns used, names as categories: a million dispatches fit in little memory."""
    if not path.exists():
        raise InvalidInput(f"{what}: {path.name} not found")
    if limits.check_size(path, limits.PROFILE_CSV_MAX_BYTES, what) == 0:
        raise InvalidInput(f"{what}: {path.name} is empty")
    try:
        # One row past the limit is read, so that a longer file is refused without reading it all.
        frame = pd.read_csv(path, usecols=(lambda c: c in columns) if columns else None, dtype=TEXT_COLUMNS, nrows=limits.PROFILE_CSV_MAX_ROWS + 1)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError, TypeError, OverflowError) as exc:
        raise InvalidInput(f"{what}: {path.name} is not a readable CSV: {str(exc)[:300]}") from None
    if len(frame) > limits.PROFILE_CSV_MAX_ROWS:
        raise InvalidInput(f"{what}: {path.name} has over {limits.PROFILE_CSV_MAX_ROWS} rows, more than this reader accepts")
    return frame


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


def _require(frame: pd.DataFrame, columns: tuple[str, ...], path: Path, what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InvalidInput(f"{what}: {path.name} lacks column(s) {', '.join(missing)}: not a rocprofv3 file of a known version", hint=f"its header has {len(frame.columns)} column(s), none of them echoed here (a file's content never is)")


def read_kernel_trace(path: Path) -> pd.DataFrame:
    """rocprofv3 kernel_trace.csv -> one row per dispatch with normalised columns."""
    with _malformed("kernel trace", path.name):
        return _kernel_trace(path)


def _kernel_trace(path: Path) -> pd.DataFrame:
    frame = _read(path, "kernel trace", TRACE_COLUMNS)
    _require(frame, TRACE_REQUIRED, path, "kernel trace")
    if "Kind" in frame.columns:
        frame = frame[frame["Kind"].astype(str) == "KERNEL_DISPATCH"]
    start = pd.to_numeric(frame["Start_Timestamp"], errors="coerce")
    end = pd.to_numeric(frame["End_Timestamp"], errors="coerce")
    if start.isna().any() or end.isna().any():
        raise InvalidInput(f"kernel trace: {path.name} has rows without timestamps (truncated?)")
    if not (start.abs() < 2**62).all() or not (end.abs() < 2**62).all():
        raise InvalidInput(f"kernel trace: {path.name} has a timestamp out of range (not nanoseconds of a real run)")
    out = pd.DataFrame({"kernel": frame["Kernel_Name"], "duration_ns": (end - start).astype("int64"), "start_ns": start.astype("int64")})
    out["dispatch"] = pd.to_numeric(frame.get("Dispatch_Id", pd.Series(range(len(frame)))), errors="coerce")
    for source, name in (("Workgroup_Size_X", "wg_x"), ("Workgroup_Size_Y", "wg_y"), ("Workgroup_Size_Z", "wg_z"), ("Grid_Size_X", "grid_x"), ("Grid_Size_Y", "grid_y"), ("Grid_Size_Z", "grid_z"),
                         ("VGPR_Count", "vgprs"), ("Accum_VGPR_Count", "agprs"), ("SGPR_Count", "sgprs"), ("LDS_Block_Size", "lds_bytes"), ("Group_Segment_Size", "lds_bytes"),
                         ("Scratch_Size", "scratch_bytes"), ("Private_Segment_Size", "scratch_bytes")):
        if source in frame.columns and name not in out.columns:
            out[name] = pd.to_numeric(frame[source], errors="coerce").to_numpy()
    out["agent"] = frame["Agent_Id"].to_numpy() if "Agent_Id" in frame.columns else ""
    out = out.replace([float("inf"), float("-inf")], float("nan"))  # a grid of "inf" is no grid
    if (out["duration_ns"] < 0).any():
        raise InvalidInput(f"kernel trace: {path.name} has a dispatch that ends before it starts (inconsistent)")
    return out


def read_counter_collection(path: Path) -> pd.DataFrame:
    """rocprofv3 counter_collection.csv (long format: one row per dispatch and counter)."""
    frame = _read(path, "counter collection")
    _require(frame, COUNTER_REQUIRED, path, "counter collection")
    with _malformed("counter collection", path.name):
        return _counters(frame)


def _counters(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "dispatch": pd.to_numeric(frame["Dispatch_Id"], errors="coerce"),
        "kernel": frame["Kernel_Name"].astype(str),
        "counter": frame["Counter_Name"].astype(str),
        "value": pd.to_numeric(frame["Counter_Value"], errors="coerce"),
    })


def parse_list_avail(text: str) -> dict[str, dict[str, str]]:
    """`rocprofv3 --list-avail`: counter name -> {description, expression, block, dimensions}."""
    counters: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "Counter_Name":
            current = counters.setdefault(value, {})
        elif current is not None and key in ("Description", "Expression", "Block", "Dimensions"):
            current[key.lower()] = value
    return counters


# ---------------------------------------------------------------- ncu -------------------------
def _ncu_table(text: str, what: str) -> pd.DataFrame:
    start = text.find('"ID"')
    if start < 0:
        raise InvalidInput(f"{what}: no ncu CSV table (no header line starting with \"ID\")", hint=text.strip()[-300:] or None)
    try:
        table = pd.read_csv(io.StringIO(text[start:]), dtype=str, keep_default_na=False, nrows=limits.PROFILE_CSV_MAX_ROWS + 1)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise InvalidInput(f"{what}: the ncu CSV could not be parsed: {str(exc)[:300]}") from None
    if len(table) > limits.PROFILE_CSV_MAX_ROWS:
        raise InvalidInput(f"{what}: over {limits.PROFILE_CSV_MAX_ROWS} rows, more than this reader accepts")
    return table


def ncu_number(value: str) -> float | None:
    text = str(value).replace(",", "").strip()
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None  # "inf" or "nan" is no measurement


def _launch(value: str, what: str) -> int:
    """ncu's launch ID, a small whole number; anything else means the table is not ncu's."""
    text = str(value).strip()
    if not text.isdigit() or len(text) > 12:
        raise InvalidInput(f"{what}: the launch ID {text[:40]!r} is not a whole number (a damaged ncu CSV?)")
    return int(text)


def _dims(text: str) -> tuple[int, int, int]:
    numbers = [int(n) for n in re.findall(r"\d{1,12}", str(text))]
    return tuple((numbers + [1, 1, 1])[:3])  # type: ignore[return-value]


def read_ncu_metrics(text: str) -> pd.DataFrame:
    """`ncu --csv --metrics ...` (long format) -> one row per launch with one column per metric."""
    table = _ncu_table(text, "ncu metrics")
    needed = ("ID", "Kernel Name", "Metric Name", "Metric Value")
    if any(c not in table.columns for c in needed):
        raise InvalidInput("ncu metrics: not the --metrics long format", hint="columns: " + ", ".join(map(str, table.columns[:15])))
    rows = {}
    for _, r in table.iterrows():
        row = rows.setdefault(r["ID"], {"launch": _launch(r["ID"], "ncu metrics"), "kernel": r["Kernel Name"], "block": _dims(r.get("Block Size", "")), "grid": _dims(r.get("Grid Size", "")), "metrics": {}, "units": {}})
        row["metrics"][r["Metric Name"]] = ncu_number(r["Metric Value"])
        row["units"][r["Metric Name"]] = r.get("Metric Unit", "")
    return pd.DataFrame(rows.values())


def ncu_duration_ns(value: float | None, unit: str) -> float | None:
    scale = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}
    return None if value is None else value * scale.get(unit.strip(), 1.0)


def read_ncu_raw(text: str) -> pd.DataFrame:
    """`ncu --page raw --csv` (wide: a units row under the header) -> the same shape as read_ncu_metrics."""
    table = _ncu_table(text, "ncu raw")
    if any(c not in table.columns for c in ("ID", "Kernel Name")):
        raise InvalidInput("ncu raw: not the --page raw format (no ID and Kernel Name columns)", hint="columns: " + ", ".join(map(str, table.columns[:15])))
    units = table.iloc[0] if len(table) and table.iloc[0].get("ID", "") == "" else None
    body = table.iloc[1:] if units is not None else table
    fixed = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC"}
    rows = []
    for _, r in body.iterrows():
        metrics = {c: ncu_number(r[c]) for c in table.columns if c not in fixed}
        rows.append({"launch": _launch(r["ID"], "ncu raw"), "kernel": r["Kernel Name"], "block": _dims(r.get("Block Size", "")), "grid": _dims(r.get("Grid Size", "")),
                     "metrics": metrics, "units": {c: (units[c] if units is not None else "") for c in metrics}})
    return pd.DataFrame(rows)
