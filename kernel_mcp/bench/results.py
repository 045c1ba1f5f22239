"""Reading a benchmark CSV: the correctness gate, the metric, and config classes.

Rows are never collapsed into one average: they are grouped into config classes (the configured
config columns, or columns inferred from the table, saying which), and each class keeps its own
correctness and metric.
"""

from __future__ import annotations

import math
import operator
import re
from pathlib import Path

import pandas as pd
from pydantic import BaseModel

from kernel_mcp.errors import CommandFailed, WorkspaceError
from kernel_mcp.workspace.config import BenchmarkConfig

_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
MEASUREMENT = re.compile(r"^(err|us|ms|ns|s|maxabs|max_err|time|tflops|gflops|gbps|bw|speedup|throughput)(_|$)", re.I)


class ClassFigures(BaseModel):
    """One config class in one run of the benchmark."""

    key: str
    rows: int
    correct: bool
    failing_rows: int
    worst_error: float | None
    metric: float  # geometric mean of the metric over the class's rows


class TableFigures(BaseModel):
    classes: list[ClassFigures]
    class_columns: list[str]
    inferred: bool
    rows: int
    impossible: list[str] = []  # rows faster than the roofline floor allows

    @property
    def all_correct(self) -> bool:
        return all(c.correct for c in self.classes)


def read_csv(path: Path) -> pd.DataFrame:
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise CommandFailed(f"the benchmark CSV {path.name} could not be read: {exc}") from None
    if frame.empty:
        raise CommandFailed(f"the benchmark CSV {path.name} has no rows")
    return frame


def infer_class_columns(frame: pd.DataFrame, cfg: BenchmarkConfig) -> list[str]:
    """Columns that describe a configuration rather than a measurement: names that are not
    measurement-like, and values that are text or whole numbers."""
    chosen = []
    for column in frame.columns:
        if column in (cfg.metric, cfg.correctness.column) or MEASUREMENT.match(str(column)):
            continue
        values = frame[column].dropna()
        if pd.api.types.is_numeric_dtype(values) and not (values == values.round()).all():
            continue
        chosen.append(str(column))
    return chosen


def below_floor(frame: pd.DataFrame, cfg: BenchmarkConfig, harness, floor) -> list[str]:
    """Rows whose measured time is under the physical floor for their FLOPs and bytes."""
    if floor is None or not harness.flops_column or not harness.bytes_column:
        return []
    missing = [c for c in (harness.flops_column, harness.bytes_column) if c not in frame.columns]
    if missing:
        raise WorkspaceError(f"the benchmark CSV lacks the harness column(s) {', '.join(missing)}")
    out = []
    columns = list(cfg.config_columns) or infer_class_columns(frame, cfg)
    for _, row in frame.iterrows():
        seconds = float(row[cfg.metric]) * harness.metric_seconds
        least = floor(float(row[harness.flops_column]), float(row[harness.bytes_column]))
        if seconds < least:
            label = ",".join(f"{c}={row[c]}" for c in columns) or "a row"
            out.append(f"{label}: {seconds * 1e6:.3g} us measured, the floor is {least * 1e6:.3g} us")
    return out


def figures(frame: pd.DataFrame, cfg: BenchmarkConfig, harness=None, floor=None) -> TableFigures:
    missing = [c for c in (cfg.metric, cfg.correctness.column, *cfg.config_columns) if c not in frame.columns]
    if missing:
        raise WorkspaceError(
            f"the benchmark CSV lacks the configured column(s) {', '.join(missing)}",
            hint="columns present: " + ", ".join(map(str, frame.columns)),
        )
    columns = list(cfg.config_columns) or infer_class_columns(frame, cfg)
    op, bound = cfg.correctness.parsed()
    errors = pd.to_numeric(frame[cfg.correctness.column], errors="coerce")
    metric = pd.to_numeric(frame[cfg.metric], errors="coerce")
    ok = errors.apply(lambda v: not math.isnan(v) and _OPS[op](v, bound))
    classes = []
    groups = frame.groupby(columns, sort=False, dropna=False) if columns else [((), frame)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        idx = group.index
        values = metric[idx]
        good = values[(values > 0) & values.notna()]
        class_ok = bool(ok[idx].all()) and len(good) == len(values)
        classes.append(
            ClassFigures(
                key=",".join(f"{c}={v}" for c, v in zip(columns, key)) or "all",
                rows=len(idx),
                correct=class_ok,
                failing_rows=int((~ok[idx]).sum()) + int(len(values) - len(good)),
                worst_error=float(errors[idx].abs().max()) if errors[idx].notna().any() else None,
                metric=float(math.exp(sum(math.log(v) for v in good) / len(good))) if len(good) else float("nan"),
            )
        )
    impossible = below_floor(frame, cfg, harness, floor) if harness is not None else []
    return TableFigures(classes=classes, class_columns=columns, inferred=not cfg.config_columns, rows=len(frame), impossible=impossible)
