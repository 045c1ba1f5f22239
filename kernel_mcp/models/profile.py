"""A profile in one shape, whichever profiler wrote it (rocprofv3 CSV or rocpd, rocprof-compute,
ncu, an import of several): per-kernel GPU times, counters with derived metrics, the files read,
and the target kernel's dispatch times the ledger compares."""

from __future__ import annotations

from pydantic import BaseModel, Field

from kernel_mcp.models.output import ToolOutput
from kernel_mcp.untrusted import inline


class KernelRow(BaseModel):
    name: str
    calls: int
    total_us: float
    avg_us: float
    median_us: float | None  # None: a stats table gives no median (and old ones no min or max)
    min_us: float | None
    max_us: float | None
    share: float
    grid: str
    block: str
    vgprs: float | None = None
    agprs: float | None = None
    sgprs: float | None = None
    lds_bytes: float | None = None
    scratch_bytes: float | None = None
    target: bool = False
    sources: list[str] = []


class InputFile(BaseModel):
    """One file of an import: what it was recognised as and what was taken from it, or why not."""

    path: str
    format: str
    used_for: str | None = None  # "GPU times (70 dispatches)", "counters (2)", ...
    skipped: str | None = None  # why nothing was taken


class DerivedMetric(BaseModel):
    name: str
    value: float | None
    unit: str
    definition: str


class CounterRow(BaseModel):
    kernel: str
    dispatches: int
    counters: dict[str, float]
    derived: list[DerivedMetric] = []


class ProfileSummary(ToolOutput):
    source: str
    kernels: list[KernelRow]
    kernels_total: int
    dispatches: int
    total_gpu_us: float
    target_regex: str | None
    counters: list[CounterRow] = []
    origins: list[str] = []
    inputs: list[InputFile] = []  # every file an import looked at: read, or skipped and why
    notes: list[str] = []
    run_id: str | None = None
    # GPU times (ns) of the target kernel's dispatches, per kernel and grid: what the ledger compares
    # (kept in the run's target_dispatches.json, not in answers: it can hold thousands of numbers)
    target_dispatches: dict[str, list[float]] = Field(default_factory=dict, exclude=True)
    target_calls: dict[str, int] = Field(default_factory=dict, exclude=True)  # dispatches per group, uncapped

    def target_rows(self) -> list[KernelRow]:
        return [k for k in self.kernels if k.target]

    def render(self) -> str:
        # kernel and counter names are the profiler's cells, paths the workspace's: each on its line
        lines = [
            f"profile ({self.source}): {self.dispatches} dispatches of {self.kernels_total} kernels, {self.total_gpu_us:.1f} us GPU time"
            + (f"; run {self.run_id}" if self.run_id else "")
        ]
        lines.append(f"{'':2}{'kernel':<44} {'calls':>6} {'total us':>10} {'avg us':>9} {'median':>9} {'share':>6}  grid / block  regs")
        for k in self.kernels:
            regs = (
                ""
                if k.vgprs is None
                else f"v{k.vgprs:.0f}"
                + (f" a{k.agprs:.0f}" if k.agprs else "")
                + (f" s{k.sgprs:.0f}" if k.sgprs is not None else "")
                + (f" lds{k.lds_bytes:.0f}" if k.lds_bytes else "")
            )
            median = f"{k.median_us:>9.2f}" if k.median_us is not None else f"{'-':>9}"
            lines.append(
                f"{'* ' if k.target else '  '}{inline(k.name)[:44]:<44} {k.calls:>6} {k.total_us:>10.1f} {k.avg_us:>9.2f} {median} {k.share:>6.1%}  {k.grid} / {k.block}  {regs}"
            )
        if self.kernels_total > len(self.kernels):
            lines.append(f"  ... {self.kernels_total - len(self.kernels)} more kernels")
        if self.target_regex:
            lines.append(f"(* = target /{self.target_regex}/)" if self.target_rows() else f"no kernel matches the target /{self.target_regex}/")
        shown_defs: list[DerivedMetric] = []
        for row in self.counters[:6]:
            # a full rocprof-compute workload yields hundreds of the vendor's metrics: the text shows the speed-of-light
            # ones and this project's own; the structured answer and the run's profile.json hold them all
            valued = [d for d in row.derived if d.value is not None]
            shown = [d for d in valued if ":" not in d.name or "Speed-of-Light" in d.name][:SHOWN_DERIVED]
            lacking = [d for d in row.derived if d.value is None]
            derived = "; ".join(f"{d.name} {d.value:.3g}{d.unit if d.unit.startswith((' ', '%')) else ' ' + d.unit}" for d in shown)
            more = len(valued) - len(shown)
            parts = [derived] if derived else []
            parts += [f"+{more} more derived"] if more else []
            parts += [f"{len(lacking)} without a value (why: in their definitions)"] if lacking else []
            lines.append(
                f"counters {inline(row.kernel)[:40]}: "
                + ", ".join(f"{inline(k)} {v:.4g}" for k, v in list(row.counters.items())[:8])
                + (f" | {'; '.join(parts)}" if parts else "")
            )
            shown_defs += shown[:4] + lacking[:1]
        defs = {d.name: d.definition for d in shown_defs}
        lines += [f"  {name} = {definition[:DEFINITION_CHARS]}" for name, definition in list(defs.items())[:8]]
        lines += render_inputs(self.inputs)
        lines += [f"note: {inline(n)}" for n in self.notes]
        return "\n".join(lines)


SHOWN_DERIVED = 6
DEFINITION_CHARS = 240
SHOWN_PER_GROUP = 4
SHOWN_GROUPS = 6


def render_inputs(inputs: list[InputFile]) -> list[str]:
    """Which files were read (grouped by format) and which skipped (grouped by reason), in a few
    lines: a folder of a thousand files still fits the answer; the run's profile.json lists each."""
    read = [f for f in inputs if f.skipped is None]
    skipped = [f for f in inputs if f.skipped is not None]
    if not inputs or (len(read) == 1 and not skipped):
        return []
    lines = [f"read {len(read)} of {len(inputs)} files:"]
    by_format: dict[str, list[InputFile]] = {}
    for f in read:
        by_format.setdefault(f.format, []).append(f)
    for name, files in list(by_format.items())[:SHOWN_GROUPS]:
        shown = "; ".join(f"{inline(f.path)[-60:]}: {inline(f.used_for)}" for f in files[:SHOWN_PER_GROUP])
        lines.append(f"  {name} x{len(files)}: {shown}" + (f"; +{len(files) - SHOWN_PER_GROUP} more" if len(files) > SHOWN_PER_GROUP else ""))
    by_reason: dict[str, list[InputFile]] = {}
    for f in skipped:
        by_reason.setdefault(f.skipped or "", []).append(f)
    if skipped:
        lines.append(f"skipped {len(skipped)}:")
    for reason, files in list(by_reason.items())[:SHOWN_GROUPS]:
        names = ", ".join(inline(f.path.rpartition("/")[2])[-50:] for f in files[:SHOWN_PER_GROUP])
        lines.append(f"  {names}" + (f" +{len(files) - SHOWN_PER_GROUP} more" if len(files) > SHOWN_PER_GROUP else "") + f": {inline(reason)[:150]}")
    if len(by_reason) > SHOWN_GROUPS:
        lines.append(f"  ... {len(by_reason) - SHOWN_GROUPS} more reasons (the run's profile.json lists every file)")
    return lines
