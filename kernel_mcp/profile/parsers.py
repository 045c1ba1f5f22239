"""Parsers for profiler outputs, exactly as the tools write them.

rocprofv3 --list-avail, and the entry points for kernel_trace.csv / counter_collection.csv (read by
tables.py, keyed on column names, older and newer column sets alike). ncu `--csv` output
(`--metrics` long format and `--page raw` wide format), with the program's own output and
`==PROF==` lines before the table and thousands separators in the values.
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_mcp import limits
from kernel_mcp.errors import CommandFailed, InvalidInput
from kernel_mcp.profile.tables import read_counter_rows, read_dispatches

if TYPE_CHECKING:  # pandas is imported where a table is read: a server's start does not wait for it
    import pandas as pd


def read_kernel_trace(path: Path) -> pd.DataFrame:
    """rocprofv3 kernel_trace.csv -> one row per dispatch with normalised columns (the alias-aware
    reader of tables.py, which every dispatch list goes through)."""
    return read_dispatches(path, "kernel trace", path.name)


def read_counter_collection(path: Path) -> pd.DataFrame:
    """rocprofv3 counter_collection.csv (long format: one row per dispatch and counter)."""
    return read_counter_rows(path, "counter collection", path.name)[0]


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
# the metrics every ncu run asks for: a launch's GPU time and its shape (ncu_dispatches reads them)
NCU_TIME = "gpu__time_duration.sum"
NCU_LAUNCH = [
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
]


def _ncu_table(text: str, what: str) -> pd.DataFrame:
    import pandas as pd

    start = text.find('"ID"')
    if start < 0:
        raise InvalidInput(f'{what}: no ncu CSV table (no header line starting with "ID")', hint=text.strip()[-300:] or None)
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
    import pandas as pd

    table = _ncu_table(text, "ncu metrics")
    needed = ("ID", "Kernel Name", "Metric Name", "Metric Value")
    if any(c not in table.columns for c in needed):
        raise InvalidInput("ncu metrics: not the --metrics long format", hint="columns: " + ", ".join(map(str, table.columns[:15])))
    rows: dict[Any, dict[str, Any]] = {}
    for _, r in table.iterrows():
        row = rows.setdefault(
            r["ID"],
            {
                "launch": _launch(r["ID"], "ncu metrics"),
                "kernel": r["Kernel Name"],
                "block": _dims(r.get("Block Size", "")),
                "grid": _dims(r.get("Grid Size", "")),
                "metrics": {},
                "units": {},
            },
        )
        row["metrics"][r["Metric Name"]] = ncu_number(r["Metric Value"])
        row["units"][r["Metric Name"]] = r.get("Metric Unit", "")
    return pd.DataFrame(rows.values())


def ncu_duration_ns(value: float | None, unit: str) -> float | None:
    scale = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}
    return None if value is None else value * scale.get(unit.strip(), 1.0)


def read_ncu_raw(text: str) -> pd.DataFrame:
    """`ncu --page raw --csv` (wide: a units row under the header) -> the same shape as read_ncu_metrics."""
    import pandas as pd

    table = _ncu_table(text, "ncu raw")
    if any(c not in table.columns for c in ("ID", "Kernel Name")):
        raise InvalidInput("ncu raw: not the --page raw format (no ID and Kernel Name columns)", hint="columns: " + ", ".join(map(str, table.columns[:15])))
    units = table.iloc[0] if len(table) and table.iloc[0].get("ID", "") == "" else None
    body = table.iloc[1:] if units is not None else table
    fixed = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC"}
    rows = []
    for _, r in body.iterrows():
        metrics = {c: ncu_number(r[c]) for c in table.columns if c not in fixed}
        rows.append(
            {
                "launch": _launch(r["ID"], "ncu raw"),
                "kernel": r["Kernel Name"],
                "block": _dims(r.get("Block Size", "")),
                "grid": _dims(r.get("Grid Size", "")),
                "metrics": metrics,
                "units": {c: (units[c] if units is not None else "") for c in metrics},
            }
        )
    return pd.DataFrame(rows)


def ncu_dispatches(text: str) -> tuple[pd.DataFrame, dict[int, dict[str, float]]]:
    """ncu --metrics CSV -> one row per launch (kernel, duration_ns, grid, block, registers, shared) and the metrics per launch."""
    import pandas as pd

    table = read_ncu_metrics(text)
    rows, metrics = [], {}
    for _, r in table.iterrows():
        m = r["metrics"]
        duration = ncu_duration_ns(m.get(NCU_TIME), r["units"].get(NCU_TIME, "ns"))
        if duration is None:
            raise CommandFailed(f"ncu reported no {NCU_TIME} for launch {r['launch']}")
        shared = (m.get("launch__shared_mem_per_block_static") or 0) + (m.get("launch__shared_mem_per_block_dynamic") or 0)
        rows.append(
            {
                "kernel": r["kernel"],
                "duration_ns": duration,
                "dispatch": r["launch"],
                "grid_x": r["grid"][0],
                "grid_y": r["grid"][1],
                "grid_z": r["grid"][2],
                "wg_x": r["block"][0],
                "wg_y": r["block"][1],
                "wg_z": r["block"][2],
                "vgprs": m.get("launch__registers_per_thread"),
                "lds_bytes": shared if shared else None,
            }
        )
        metrics[int(r["launch"])] = {k: v for k, v in m.items() if v is not None}
    return pd.DataFrame(rows), metrics
