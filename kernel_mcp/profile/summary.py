"""Per-kernel summaries of dispatch lists, counter tables with derived metrics, and comparisons."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from kernel_mcp.models.profile import KernelRow, ProfileSummary
from kernel_mcp.patterns import AgentPattern
from kernel_mcp.tooling import ToolOutput
from kernel_mcp.untrusted import inline

if TYPE_CHECKING:  # pandas is imported where a table is read: a server's start does not wait for it
    import pandas as pd

MAX_KERNELS = 15
MAX_GROUP_SAMPLES = 5000


def _dims(frame: pd.DataFrame, prefix: str) -> str:
    cols = [f"{prefix}_{a}" for a in "xyz"]
    if not all(c in frame.columns for c in cols):
        # rocprof v1/v2 and rocprof-compute give one number: the work-items of all dimensions
        if f"{prefix}_total" in frame.columns:
            totals = {_whole(v) for v in frame[f"{prefix}_total"].dropna()}
            return f"{next(iter(totals))} items" if len(totals) == 1 else ("varies" if totals else "?")
        return "?"
    shapes = {tuple(_whole(v) for v in row) for row in frame[cols].dropna().itertuples(index=False)}
    if len(shapes) == 1:
        return "x".join(map(str, next(iter(shapes))))
    return "varies"


def target_pattern(target_regex: str | None) -> AgentPattern | None:
    """The workspace's `[benchmark] target_kernel`, searched within one time budget over all kernel
    names of a profile: with Python's `re`, `^(a+)+$` against a long name in the profiler's output
    held the server for minutes."""
    return AgentPattern(target_regex, what="[benchmark] target_kernel", searched="the profile's kernel names") if target_regex else None


def summarise(dispatches: pd.DataFrame, source: str, target_regex: str | None, origins: list[str] | None = None) -> ProfileSummary:
    """dispatches: kernel, duration_ns, and optional grid/wg/register columns (one row per dispatch)."""
    if dispatches.empty:
        return ProfileSummary(
            source=source,
            kernels=[],
            kernels_total=0,
            dispatches=0,
            total_gpu_us=0.0,
            target_regex=target_regex,
            origins=origins or [],
            inputs=dispatches.attrs.get("inputs", []),
            notes=["no kernel dispatches recorded"],
        )
    total = float(dispatches["duration_ns"].sum())
    pattern = target_pattern(target_regex)
    rows = []
    for name, group in dispatches.groupby("kernel", sort=False, observed=True):
        d = group["duration_ns"].astype(float)
        first = group.iloc[0]
        rows.append(
            KernelRow(
                name=str(name),
                calls=len(group),
                total_us=d.sum() / 1e3,
                avg_us=d.mean() / 1e3,
                median_us=d.median() / 1e3,
                min_us=d.min() / 1e3,
                max_us=d.max() / 1e3,
                share=d.sum() / total if total else 0.0,
                grid=_dims(group, "grid"),
                block=_dims(group, "wg"),
                vgprs=_opt(first, "vgprs"),
                agprs=_opt(first, "agprs"),
                sgprs=_opt(first, "sgprs"),
                lds_bytes=_opt(first, "lds_bytes"),
                scratch_bytes=_opt(first, "scratch_bytes"),
                target=pattern.search(str(name)) if pattern else False,
                sources=sorted(set(group["origin"].astype(str))) if "origin" in group.columns else [],
            )
        )
    rows.sort(key=lambda r: r.total_us, reverse=True)
    shown = rows[:MAX_KERNELS] + [r for r in rows[MAX_KERNELS:] if r.target][:3]
    groups: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    if pattern is not None:
        grid_cols = [c for c in ("grid_x", "grid_y", "grid_z") if c in dispatches.columns] or [c for c in ("grid_total",) if c in dispatches.columns]
        # the rows' verdicts, not a second search: pandas' str.contains would run the pattern with `re`, unbounded
        targets = dispatches[dispatches["kernel"].astype(str).isin({r.name for r in rows if r.target})]
        # In GPU start order (ties by dispatch id), as the rocpd reader hands them over: a CSV's row
        # order is the profiler's buffer order, which differs between runs and formats.
        order = [c for c in ("start_ns", "dispatch") if c in targets.columns]
        if order:
            targets = targets.sort_values(order, kind="stable")
        for _, d in targets.iterrows():
            key = str(d["kernel"]) + "|" + "x".join(_whole(d[c]) for c in grid_cols)
            kept = groups.setdefault(key, [])
            counts[key] = counts.get(key, 0) + 1
            if len(kept) < MAX_GROUP_SAMPLES:
                kept.append(float(d["duration_ns"]))
    return ProfileSummary(
        source=source,
        kernels=shown,
        kernels_total=len(rows),
        dispatches=len(dispatches),
        total_gpu_us=total / 1e3,
        target_regex=target_regex,
        origins=origins or [],
        inputs=dispatches.attrs.get("inputs", []),
        target_dispatches=groups,
        target_calls=counts,
    )


def summarise_stats(stats: pd.DataFrame, source: str, target_regex: str | None, origins: list[str] | None = None) -> ProfileSummary:
    """A summary from kernel stats tables (kernel, calls, total_ns, min_ns, max_ns): calls and totals
    only. No per-dispatch time exists in them, so there is no median and no target dispatch for the
    ledger: target_calls is filled, target_dispatches stays empty, and a note says so."""
    grouped = stats.groupby("kernel", sort=False)
    total = float(stats["total_ns"].sum())
    pattern = target_pattern(target_regex)
    rows, counts = [], {}
    for name, group in grouped:
        calls, ns = int(group["calls"].sum()), float(group["total_ns"].sum())
        lows, highs = group["min_ns"].dropna(), group["max_ns"].dropna()
        target = pattern.search(str(name)) if pattern else False
        if target:
            counts[f"{name}|"] = calls
        rows.append(
            KernelRow(
                name=str(name),
                calls=calls,
                total_us=ns / 1e3,
                avg_us=ns / calls / 1e3 if calls else 0.0,
                median_us=None,
                min_us=float(lows.min()) / 1e3 if len(lows) == len(group) and len(group) else None,
                max_us=float(highs.max()) / 1e3 if len(highs) == len(group) and len(group) else None,
                share=ns / total if total else 0.0,
                grid="?",
                block="?",
                target=target,
                sources=sorted(set(group["origin"].astype(str))),
            )
        )
    rows.sort(key=lambda r: r.total_us, reverse=True)
    shown = rows[:MAX_KERNELS] + [r for r in rows[MAX_KERNELS:] if r.target][:3]
    notes = ["a stats table holds calls and totals only: no median, grid or registers, and no per-dispatch GPU times for a keep decision"]
    return ProfileSummary(
        source=source,
        kernels=shown,
        kernels_total=len(rows),
        dispatches=int(stats["calls"].sum()),
        total_gpu_us=total / 1e3,
        target_regex=target_regex,
        origins=origins or [],
        notes=notes,
        target_calls=counts,
    )


def _whole(value) -> str:
    """A grid dimension as text; "?" where the profiler's cell was empty or not a number."""
    import pandas as pd

    return str(int(value)) if not pd.isna(value) and abs(value) < 2**63 else "?"


def _opt(row: pd.Series, column: str) -> float | None:
    import pandas as pd

    if column not in row.index:
        return None
    value = row[column]
    return None if pd.isna(value) else float(value)


class KernelDelta(BaseModel):
    name: str
    a_avg_us: float | None
    b_avg_us: float | None
    change: float | None
    a_calls: int
    b_calls: int


class ProfileComparison(ToolOutput):
    a: str
    b: str
    kernels: list[KernelDelta]
    total_a_us: float
    total_b_us: float
    notes: list[str] = []

    def render(self) -> str:
        lines = [
            f"{self.a} -> {self.b}: total GPU time {self.total_a_us:.1f} -> {self.total_b_us:.1f} us ({self.total_b_us / self.total_a_us - 1:+.1%})"
            if self.total_a_us
            else f"{self.a} -> {self.b}"
        ]
        for k in self.kernels:
            a = f"{k.a_avg_us:.2f}" if k.a_avg_us is not None else "-"
            b = f"{k.b_avg_us:.2f}" if k.b_avg_us is not None else "-"
            change = f"{k.change:+.1%}" if k.change is not None else ("new" if k.a_avg_us is None else "gone")
            calls = f" calls {k.a_calls}->{k.b_calls}" if k.a_calls != k.b_calls else ""
            lines.append(f"  {inline(k.name)[:50]:<50} avg {a} -> {b} us  {change}{calls}")
        lines += [f"note: {inline(n)}" for n in self.notes]
        return "\n".join(lines)


def compare_summaries(a: ProfileSummary, b: ProfileSummary, label_a: str, label_b: str) -> ProfileComparison:
    by_a = {k.name: k for k in a.kernels}
    by_b = {k.name: k for k in b.kernels}
    names = list(dict.fromkeys([*by_a, *by_b]))
    deltas = []
    for name in names:
        ka, kb = by_a.get(name), by_b.get(name)
        change = (kb.avg_us / ka.avg_us - 1) if ka and kb and ka.avg_us else None
        deltas.append(
            KernelDelta(
                name=name,
                a_avg_us=ka.avg_us if ka else None,
                b_avg_us=kb.avg_us if kb else None,
                change=change,
                a_calls=ka.calls if ka else 0,
                b_calls=kb.calls if kb else 0,
            )
        )
    deltas.sort(key=lambda d: -max(d.a_avg_us or 0, d.b_avg_us or 0))
    notes = []
    if a.source != b.source:
        notes.append(f"compared across sources: {a.source} vs {b.source}")
    return ProfileComparison(a=label_a, b=label_b, kernels=deltas[:MAX_KERNELS], total_a_us=a.total_gpu_us, total_b_us=b.total_gpu_us, notes=notes)
