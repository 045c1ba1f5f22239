"""Reading a benchmark CSV: the correctness gate, the metric, and config classes.

Rows are never collapsed into one average: they are grouped into config classes (the configured
config columns, or columns inferred from the table, saying which), and each class keeps its own
correctness and metric.

A metric cell that is not a finite positive number (NaN, an empty cell, inf, -inf, 0, text), or that
no time is (a subnormal, 1e308: see limits.BENCH_METRIC_RANGE), is not a measurement: the table is
refused with the column, the row's class and the value named, never averaged into a NaN figure (one
NaN in the ledger made every later answer fail its schema).
"""

from __future__ import annotations

import math
import operator
import re
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from kernel_mcp import limits
from kernel_mcp.bench.stats import geomean
from kernel_mcp import safe_files
from kernel_mcp.errors import CommandFailed, InvalidInput, WorkspaceError
from kernel_mcp.untrusted import inline
from kernel_mcp.workspace.config import BenchmarkConfig

if TYPE_CHECKING:  # types only: reading a CSV loads no hardware table
    import pandas as pd  # imported where a table is read: a server's start does not wait for it
    from kernel_mcp.hardware.calibration import Floor

_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
MEASUREMENT = re.compile(r"^(err|us|ms|ns|s|maxabs|max_err|time|tflops|gflops|gbps|bw|speedup|throughput)(_|$)", re.I)


# Figures leave the server as JSON, where NaN and inf have no place: refuse them at the source.
FINITE = ConfigDict(allow_inf_nan=False)


class ClassFigures(BaseModel):
    """One config class in one run of the benchmark."""

    model_config = FINITE

    key: str
    rows: int
    correct: bool
    failing_rows: int
    worst_error: float | str | None  # a number, or the CSV's value when not finite ("NaN", "inf", 'text')
    metric: float  # geometric mean of the metric over the class's rows
    # speed of light: the roofline floor over the measured time, geometric mean over the class's rows
    # (1.0 = at the floor of the product that ran it); None without FLOP/byte columns or a floor
    speed_of_light: float | None = None


class TableFigures(BaseModel):
    model_config = FINITE

    classes: list[ClassFigures]
    class_columns: list[str]
    inferred: bool
    rows: int
    impossible: list[str] = []  # rows faster than the roofline floor allows

    @property
    def all_correct(self) -> bool:
        return all(c.correct for c in self.classes)


def read_csv(path: Path) -> pd.DataFrame:
    """The benchmark's CSV, within stated bounds (size, rows, cell length), or CommandFailed saying
    which bound: the benchmark wrote it, so a table beyond them is a fault of the run."""
    import pandas as pd

    size = path.stat().st_size
    if size > limits.BENCH_CSV_MAX_BYTES:
        raise CommandFailed(f"the benchmark CSV {path.name} is {size / 2**20:.1f} MiB, over the {limits.BENCH_CSV_MAX_BYTES // 2**20} MiB accepted")
    try:
        # a regular file only: a FIFO named like the CSV would block the read forever
        with safe_files.open_regular(path) as handle, warnings.catch_warnings():
            # index_col=False: a header one field short must not turn the first column into labels;
            # pandas then drops the extra fields with a warning, which is a malformed file here
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(handle, nrows=limits.BENCH_CSV_MAX_ROWS + 1, index_col=False)
    except InvalidInput as exc:
        raise CommandFailed(f"the benchmark CSV {exc.message}") from None
    except (pd.errors.ParserError, pd.errors.ParserWarning, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError, OverflowError) as exc:
        raise CommandFailed(f"the benchmark CSV {path.name} could not be read: {str(exc)[:300]}") from None
    if frame.empty:
        raise CommandFailed(f"the benchmark CSV {path.name} has no rows")
    if len(frame) > limits.BENCH_CSV_MAX_ROWS:
        raise CommandFailed(f"the benchmark CSV {path.name} has over {limits.BENCH_CSV_MAX_ROWS} rows, more than a benchmark's shapes and repeats")
    for column in frame.columns:
        if len(str(column)) > limits.BENCH_MAX_CELL_CHARS:
            raise CommandFailed(f"the benchmark CSV {path.name} has a column name of {len(str(column))} characters, over {limits.BENCH_MAX_CELL_CHARS}")
        if not pd.api.types.is_numeric_dtype(frame[column]):  # text: object in pandas 2, str in pandas 3
            longest = frame[column].astype(str).str.len().max()
            if longest > limits.BENCH_MAX_CELL_CHARS:
                raise CommandFailed(
                    f"the benchmark CSV {path.name} has a value of {longest} characters in column {inline(str(column)[:60])}, over {limits.BENCH_MAX_CELL_CHARS}"
                )
    return frame


def infer_class_columns(frame: pd.DataFrame, cfg: BenchmarkConfig) -> list[str]:
    """Columns that describe a configuration rather than a measurement: names that are not
    measurement-like, and values that are text or whole numbers."""
    import pandas as pd

    chosen = []
    for column in frame.columns:
        if column in (cfg.metric, cfg.correctness.column) or MEASUREMENT.match(str(column)):
            continue
        values = frame[column].dropna()
        if pd.api.types.is_numeric_dtype(values) and not (values == values.round()).all():
            continue
        chosen.append(str(column))
    return chosen


def floors(frame: pd.DataFrame, cfg: BenchmarkConfig, harness, floor: Floor | None) -> pd.Series | None:
    """Each row's roofline floor over its measured time (its fraction of the speed of light); None
    where the benchmark writes no FLOP and byte columns or no floor is known for the GPU."""
    import pandas as pd

    if floor is None or harness is None or not harness.flops_column or not harness.bytes_column:
        return None
    if any(c not in frame.columns for c in (harness.flops_column, harness.bytes_column)):
        return None  # below_floor names the missing columns
    out = []
    for _, row in frame.iterrows():
        try:
            least = floor(float(row[harness.flops_column]), float(row[harness.bytes_column]))
            out.append(least / (float(row[cfg.metric]) * harness.metric_seconds))
        except (InvalidInput, ValueError, ZeroDivisionError):
            return None  # below_floor says what is wrong with the row
    return pd.Series(out, index=frame.index)


def below_floor(frame: pd.DataFrame, cfg: BenchmarkConfig, harness, floor: Floor | None) -> list[str]:
    """Rows whose measured time is under the physical floor for their FLOPs and bytes, each saying
    which figure drew the floor (the table's or this GPU's measured one) and how far under it."""
    if floor is None or not harness.flops_column or not harness.bytes_column:
        return []
    missing = [c for c in (harness.flops_column, harness.bytes_column) if c not in frame.columns]
    if missing:
        raise WorkspaceError(f"the benchmark CSV lacks the harness column(s) {', '.join(missing)}")
    out = []
    columns = list(cfg.config_columns) or infer_class_columns(frame, cfg)
    for _, row in frame.iterrows():
        seconds = float(row[cfg.metric]) * harness.metric_seconds
        try:
            flops, nbytes = float(row[harness.flops_column]), float(row[harness.bytes_column])
            least = floor(flops, nbytes)
        except (InvalidInput, ValueError) as exc:  # NaN, inf or text where a count should be: no floor to check against
            why = exc.message if isinstance(exc, InvalidInput) else str(exc)
            raise CommandFailed(
                f"the benchmark CSV's {harness.flops_column} and {harness.bytes_column} of {_class_label(row, columns, 'a row')} "
                f"give no roofline floor: {inline(why)}"
            ) from None
        if seconds < least:
            out.append(f"{_class_label(row, columns, 'a row')}: {floor.refusal(seconds, flops, nbytes)}")
    return out


def shown(value) -> str:
    """A CSV cell as the user would recognise it: NaN, inf, -inf, or the text itself."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value) if isinstance(value, str) else str(value)


def _class_label(row, columns: list[str], without_columns: str = "all") -> str:
    """A row's class as a message names it, on one line whatever its cells hold."""
    return inline(",".join(f"{c}={row[c]}" for c in columns)) or without_columns


def unusable_metric(frame: pd.DataFrame, metric: pd.Series, cfg: BenchmarkConfig, columns: list[str], errors: pd.Series, ok: pd.Series) -> str | None:
    """Why the metric column cannot be read as times, naming the first bad row; None when it can.
    Rows are taken by position: labels of a hand-made CSV need not be unique."""
    values = metric.to_numpy()
    low, high = limits.BENCH_METRIC_RANGE
    bad = [pos for pos, v in enumerate(values) if not (math.isfinite(v) and low <= v <= high)]
    if not bad:
        return None
    first = bad[0]
    raw = frame[cfg.metric].iloc[first]
    v = values[first]
    value = shown(raw) if not math.isfinite(v) or 0 < abs(v) < sys.float_info.min else shown(v)  # a subnormal as the CSV wrote it
    kind = (
        "not a finite number"
        if not math.isfinite(v)
        else "not a positive time"
        if v <= 0
        else "a subnormal number, no measured time"
        if v < sys.float_info.min
        else f"outside {low:g} to {high:g}, no time in any unit (the ratios of such figures leave the floating-point range)"
    )
    where = f"{_class_label(frame.iloc[first], columns)} (row {first + 1} of {len(frame)})"
    text = f"the metric column {cfg.metric} holds {value} in {where}: {kind}, so no figure can be made of it"
    if not ok.iloc[first]:
        text += f"; that row's {cfg.correctness.column} {shown(errors.iloc[first])} also fails {cfg.correctness.rule}"
    if len(bad) > 1:
        text += f"; {len(bad)} rows in all"
    return text


def worst_error(raw: pd.Series, errors: pd.Series) -> float | str | None:
    """The largest error of a class; a value that is not a finite number is worse than any, and is
    reported as the CSV had it (a float NaN or inf would not survive JSON)."""
    for pos, value in enumerate(errors.to_numpy()):
        if not math.isfinite(value):
            return shown(raw.iloc[pos]) if math.isnan(value) else shown(value)
    return float(errors.abs().max()) if len(errors) else None


def figures(frame: pd.DataFrame, cfg: BenchmarkConfig, harness=None, floor=None) -> TableFigures:
    import pandas as pd

    missing = [c for c in (cfg.metric, cfg.correctness.column, *cfg.config_columns) if c not in frame.columns]
    if missing:
        raise WorkspaceError(
            f"the benchmark CSV lacks the configured column(s) {', '.join(missing)}",
            hint="columns present: " + ", ".join(map(str, frame.columns)),
        )
    columns = list(cfg.config_columns) or infer_class_columns(frame, cfg)
    op, bound = cfg.correctness.parsed()
    errors = pd.to_numeric(frame[cfg.correctness.column], errors="coerce").astype(float)
    metric = pd.to_numeric(frame[cfg.metric], errors="coerce").astype(float)
    # An infinite error is no more a pass than NaN is, whatever the rule's direction.
    ok = errors.apply(lambda v: math.isfinite(v) and _OPS[op](v, bound))
    problem = unusable_metric(frame, metric, cfg, columns, errors, ok)
    if problem:
        raise CommandFailed(
            problem, hint="every row the benchmark writes must carry a measured time; a row it could not time is an error of the run, not a figure"
        )
    classes = []
    light = floors(frame, cfg, harness, floor)
    groups = frame.groupby(columns, sort=False, dropna=False) if columns else [((), frame)]
    count = len(groups) if columns else 1
    if count > limits.BENCH_MAX_CLASSES:
        # 40,000 classes made a 4.9 MB answer and held the server for 24 s: refused before any is built.
        raise CommandFailed(
            f"the benchmark CSV has {count} config classes over {inline(', '.join(columns)[:200])}, over the {limits.BENCH_MAX_CLASSES} accepted",
            hint="set [benchmark] config_columns to the columns that name a configuration" if not cfg.config_columns else None,
        )
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        idx = group.index
        values = metric[idx]
        classes.append(
            ClassFigures(
                key=",".join(f"{c}={v}" for c, v in zip(columns, key)) or "all",
                rows=len(idx),
                correct=bool(ok[idx].all()),
                failing_rows=int((~ok[idx]).sum()),
                worst_error=worst_error(frame[cfg.correctness.column][idx], errors[idx]),
                metric=geomean(float(v) for v in values),
                speed_of_light=geomean(float(v) for v in light[idx]) if light is not None and bool((light[idx] > 0).all()) else None,
            )
        )
    impossible = below_floor(frame, cfg, harness, floor) if harness is not None else []
    return TableFigures(classes=classes, class_columns=columns, inferred=not cfg.config_columns, rows=len(frame), impossible=impossible)
