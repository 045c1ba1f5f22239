"""Turning one kernel dispatch's instruction-level trace into a page: where the time goes, what
waits on what, facts.

Costs are cycles for a thread trace and samples for PC sampling or ncu's warp-stall sampling; the
unit is always stated. Every category keeps stall, issue and idle apart: a thread trace's Latency
is stall + issue (gfx9), Idle the gap before the instruction; a sample either issued or not.
Categories follow what the cost is for: s_waitcnt vmcnt (global memory), lgkmcnt (LDS and scalar
memory), s_barrier, MFMA, VALU, SALU, branches, memory instructions themselves; sampled stall
reasons map onto the same categories through the reader's table. A wait's producers come from the
decoder's own records where the trace has them; otherwise they are estimated, and marked so.
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import kernel_mcp.trace.ncu_source as ncu_source
from kernel_mcp.trace.findings import findings
from kernel_mcp.trace.models import (
    BankConflicts,
    CategoryDelta,
    CostSplit,
    DispatchBrief,
    HotInstruction,
    Producer,
    SharedAccess,
    TraceComparison,
    TraceSummary,
    WaitFact,
    pct,
    short,
)
from kernel_mcp.trace.readers import Instr, mnemonic_of

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

__all__ = ["CATEGORIES", "KernelTrace", "TraceComparison", "TraceSummary", "brief", "brief_of", "compare", "summarise", "summarise_trace"]

CATEGORIES = (
    "VMEM wait",
    "LDS/SMEM wait",
    "barrier",
    "MFMA",
    "VALU",
    "SALU",
    "branch",
    "VMEM instructions",
    "LDS instructions",
    "issue contention",
    "idle",
    "other",
)
MAX_HOT = 12
MAX_WAITS = 8
VM_CLASSES = ("vmem_load", "vmem_store", "vmem_atomic")
LGKM_CLASSES = ("lds_read", "lds_write", "lds_other", "smem")

# The instruction classes of the platforms' classifiers, named for where a trace's cost goes.
_TRACE_CATEGORY = {
    "mfma": "MFMA",
    "barrier": "barrier",
    "branch": "branch",
    "valu": "VALU",
    "salu": "SALU",
    "smem": "SALU",
    "vmem_load": "VMEM instructions",
    "vmem_store": "VMEM instructions",
    "vmem_atomic": "VMEM instructions",
    "lds_read": "LDS instructions",
    "lds_write": "LDS instructions",
    "lds_other": "LDS instructions",
}


@dataclass
class KernelTrace:
    """One kernel dispatch as a reader found it."""

    kernel: str
    source: str  # the output's name ("rocprofv3 thread trace", "ncu source counters"): whose instruction set
    program: dict[int, Instr]
    symbol: str | None = None
    dispatch: str | None = None
    arch: str | None = None
    waves: int | None = None
    wait_records: dict[int, Counter] | None = None  # the decoder's: waiting index -> producer index counts
    wait_records_from: str = ""  # which wave files they were read from
    reason_category: dict[str, str] | None = None  # sampled stall reasons -> category
    issued_reason: str | None = None  # the stall reason that means "issued"
    wait_reasons: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a waiting reason -> the classes it waits on
    shared_columns: bool = False  # ncu source counters with shared-memory wavefronts
    facts: list[str] = field(default_factory=list)
    origin: Path | None = None  # the dispatch folder, where its wave files are


def category_of(instr: Instr, classify: Callable[[str], str], producers: Iterable[str] = ()) -> str:
    """Where an instruction's cost goes, from its class in its own instruction set (`classify`: the
    platform's classifier). A wait goes by what it waits for: the decoder's producers where known,
    else the counters it names (vmcnt first: global memory is the longer wait)."""
    m = instr.mnemonic
    kind = classify(m)
    if kind == "waitcnt":
        classes = {classify(p) for p in producers}
        if classes:
            return "VMEM wait" if classes & set(VM_CLASSES) else "LDS/SMEM wait"
        return "LDS/SMEM wait" if "lgkmcnt" in instr.isa and "vmcnt" not in instr.isa else "VMEM wait"
    return _TRACE_CATEGORY.get(kind, "other")  # s_endpgm, s_nop, s_sleep: not scalar ALU work


def categoriser(trace: KernelTrace, classify: Callable[[str], str]) -> Callable[[Instr], str]:
    """category_of for this trace's instructions, the class of each mnemonic worked out once
    (a trace repeats a few hundred mnemonics over millions of rows)."""
    classes: dict[str, str] = {}
    records = trace.wait_records or {}

    def cached(mnemonic: str) -> str:
        kind = classes.get(mnemonic)
        if kind is None:
            kind = classes[mnemonic] = classify(mnemonic)
        return kind

    def of(instr: Instr) -> str:
        kind = cached(mnemonic_of(instr.isa))
        if kind != "waitcnt":
            return _TRACE_CATEGORY.get(kind, "other")
        producers = (trace.program[p].mnemonic for p in records.get(instr.index, ()) if p in trace.program)
        return category_of(instr, cached, producers)

    return of


def summarise(kernel: str, source: str, rows: Iterable[Instr], *, vendors: Vendors) -> TraceSummary:
    """One program from rows (an instruction seen twice adds up): for one dispatch's rows, its
    instructions classified by the platform whose tool wrote them (`source`)."""
    program: dict[int, Instr] = {}
    for r in rows:
        seen = program.get(r.index)
        if seen is None:
            program[r.index] = r
            continue
        for attr in ("hits", "latency", "stall", "idle", "samples", "issued", "shared_wavefronts", "shared_ideal", "shared_excess"):
            setattr(seen, attr, getattr(seen, attr) + getattr(r, attr))
        for k, v in r.reasons.items():
            seen.reasons[k] = seen.reasons.get(k, 0.0) + v
    trace = KernelTrace(kernel=kernel, source=source, program=program)
    if source == ncu_source.SOURCE:  # the ncu reader's tables go with its rows
        trace.reason_category, trace.issued_reason = ncu_source.REASON_CATEGORY, ncu_source.ISSUED_REASON
        trace.wait_reasons = dict(ncu_source.LOADS_FOR_REASON)
    return summarise_trace(trace, vendors.of_tool(source).classify)


def _sampled(ordered: list[Instr]) -> bool:
    return any(i.samples for i in ordered) and not any(i.latency for i in ordered)


def _cost(instr: Instr, sampled: bool) -> float:
    return instr.samples if sampled else instr.latency + instr.idle


def costs_of(trace: KernelTrace, classify: Callable[[str], str]) -> tuple[dict[str, CostSplit], dict[str, float], str, float]:
    """Category costs (split), stall-reason totals, the unit and the total. Plain lists while
    adding up (this runs over every instruction of every dispatch in the input)."""
    ordered = list(trace.program.values())
    sampled = _sampled(ordered)
    acc: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # stall, issue, idle
    reasons: dict[str, float] = defaultdict(float)
    category = categoriser(trace, classify)
    for i in ordered:
        own = acc[category(i)]
        if not sampled:
            own[0] += i.stall
            own[1] += max(i.latency - i.stall, 0.0)
            own[2] += i.idle
            continue
        if i.reasons and trace.reason_category is not None:
            for reason, value in i.reasons.items():
                reasons[reason] += value
                if reason == trace.issued_reason:
                    own[1] += value
                else:
                    acc[trace.reason_category.get(reason, "other")][0] += value
            rest = i.samples - sum(i.reasons.values())
            if rest > 0:
                own[0] += rest
            continue
        for reason, value in i.reasons.items():
            reasons[reason] += value
        own[1] += i.issued
        own[0] += max(i.samples - i.issued, 0.0)
    costs = {k: CostSplit(stall=v[0], issue=v[1], idle=v[2]) for k, v in acc.items()}
    return costs, dict(reasons), ("samples" if sampled else "cycles"), sum(c.total for c in costs.values())


def summarise_trace(trace: KernelTrace, classify: Callable[[str], str]) -> TraceSummary:
    """The full summary of one dispatch; `classify` is the instruction set's classifier (the
    platform's whose tool wrote the trace: Vendors.of_tool(trace.source).classify)."""
    classify = functools.lru_cache(maxsize=4096)(classify)
    ordered = [trace.program[i] for i in sorted(trace.program)]
    costs, reasons, unit, grand = costs_of(trace, classify)
    sampled = unit == "samples"
    total = sum(_cost(i, sampled) for i in ordered) or 1.0
    grand = grand or 1.0
    category = categoriser(trace, classify)
    hottest = sorted(ordered, key=lambda i: -_cost(i, sampled))[:MAX_HOT]
    hot = [
        HotInstruction(
            index=i.index,
            address=i.address,
            isa=i.isa,
            source=i.source,
            hits=i.hits,
            cost=_cost(i, sampled),
            share=_cost(i, sampled) / total,
            stall=i.stall if not sampled else max(i.samples - i.issued, 0.0),
            issue=max(i.latency - i.stall, 0.0) if not sampled else i.issued,
            idle=i.idle,
            category=category(i),
            reasons=dict(sorted(i.reasons.items(), key=lambda kv: -kv[1])[:4]),
        )
        for i in hottest
    ]
    summary = TraceSummary(
        kernel=trace.kernel,
        symbol=trace.symbol,
        dispatch=trace.dispatch,
        arch=trace.arch,
        source=trace.source,
        unit=unit,
        total=total,
        instructions=len(ordered),
        waves=trace.waves,
        categories={k: c.total / grand for k, c in costs.items()},
        costs=costs,
        reasons={k: v / total for k, v in reasons.items()} if trace.reason_category is not None else {},
        hot=hot,
        waits=_waits(trace, ordered, sampled, total, classify),
        bank_conflicts=_bank_conflicts(trace, ordered),
        findings=[],
        facts=list(trace.facts),
    )
    summary.findings = findings(summary, trace.shared_columns)
    return summary


def brief(s: TraceSummary) -> DispatchBrief:
    top = max(s.categories.items(), key=lambda kv: kv[1], default=("nothing", 0.0))
    return DispatchBrief(
        kernel=s.kernel, dispatch=s.dispatch, unit=s.unit, total=s.total, instructions=s.instructions, waves=s.waves, top=f"{top[0]} {pct(top[1])}"
    )


def brief_of(trace: KernelTrace, classify: Callable[[str], str]) -> DispatchBrief:
    """A dispatch in one line, without the waits and hot list a full summary works out."""
    costs, _, unit, grand = costs_of(trace, classify)
    sampled = unit == "samples"
    top = max(costs.items(), key=lambda kv: kv[1].total, default=("nothing", CostSplit()))
    return DispatchBrief(
        kernel=trace.kernel,
        dispatch=trace.dispatch,
        unit=unit,
        total=sum(_cost(i, sampled) for i in trace.program.values()) or 1.0,
        instructions=len(trace.program),
        waves=trace.waves,
        top=f"{top[0]} {pct(top[1].total / (grand or 1.0))}",
    )


def _waits(trace: KernelTrace, ordered: list[Instr], sampled: bool, total: float, classify) -> list[WaitFact]:
    candidates = []
    for pos, instr in enumerate(ordered):
        waiting = {r: v for r, v in instr.reasons.items() if r in trace.wait_reasons} if trace.wait_reasons else {}
        if not waiting and classify(instr.mnemonic) != "waitcnt":
            continue
        cost = sum(waiting.values()) if waiting else _cost(instr, sampled)
        if cost > 0:
            candidates.append((cost, pos, waiting))
    positions = {i.index: n for n, i in enumerate(ordered)}
    out = []
    for cost, pos, waiting in sorted(candidates, key=lambda c: -c[0])[:MAX_WAITS]:  # producers only for the ones shown
        instr = ordered[pos]
        fact = WaitFact(index=instr.index, address=instr.address, isa=instr.isa, source=instr.source, cost=cost, share=cost / total, attribution="")
        if trace.wait_records is not None and not waiting:
            named = trace.wait_records.get(instr.index, Counter())
            fact.waits_for = [
                Producer(index=p, address=trace.program[p].address, isa=trace.program[p].isa, source=trace.program[p].source, records=n)
                for p, n in sorted(named.items(), key=lambda kv: positions.get(kv[0], 0))
                if p in trace.program
            ]
            fact.attribution = f"decoder records, {trace.wait_records_from}" if fact.waits_for else "decoder recorded no outstanding load"
        else:
            classes = trace.wait_reasons[max(waiting, key=waiting.__getitem__)] if waiting else _counter_classes(instr.isa)
            producer, valu = _estimate(ordered, pos, classes, _outstanding(instr.isa) if not waiting else 0, classify)
            if producer is not None:
                fact.waits_for = [Producer(index=producer.index, address=producer.address, isa=producer.isa, source=producer.source)]
                fact.valu_between = valu
            fact.attribution = "estimate: program order" if producer is not None else "estimate: no load found before it"
        out.append(fact)
    return out


def _counter_classes(isa: str) -> tuple[str, ...]:
    return VM_CLASSES if "vmcnt" in isa or "lgkmcnt" not in isa else LGKM_CLASSES


def _outstanding(isa: str) -> int:
    """N of vmcnt(N) / lgkmcnt(N): how many younger operations the wait lets stay in flight."""
    match = re.search(r"(?:vmcnt|lgkmcnt)\((\d+)\)", isa)
    return int(match.group(1)) if match else 0


def _estimate(ordered: list[Instr], pos: int, classes: tuple[str, ...], skip: int, classify) -> tuple[Instr | None, int]:
    """The memory instruction a wait waits for, from program order alone: the (skip+1)-th most
    recent one of its counter's classes. Loops and branches can make this wrong; it says so."""
    seen, valu = 0, 0
    for back in range(pos - 1, max(-1, pos - 400), -1):
        candidate = ordered[back]
        kind = classify(candidate.mnemonic)
        if kind in classes:
            if seen == skip:
                return candidate, valu
            seen += 1
        elif kind == "valu":
            valu += 1
    return None, 0


def _bank_conflicts(trace: KernelTrace, ordered: list[Instr]) -> BankConflicts | None:
    if not trace.shared_columns:
        return None
    shared = [i for i in ordered if i.shared_wavefronts]
    wavefronts = sum(i.shared_wavefronts for i in shared)
    excess = sum(i.shared_excess for i in shared)
    top = sorted((i for i in shared if i.shared_excess), key=lambda i: -i.shared_excess)[:5]
    return BankConflicts(
        wavefronts=wavefronts,
        ideal=sum(i.shared_ideal for i in shared),
        excess=excess,
        excess_share=excess / wavefronts if wavefronts else 0.0,
        top=[
            SharedAccess(
                index=i.index,
                address=i.address,
                isa=i.isa,
                source=i.source,
                executed=i.hits,
                wavefronts=i.shared_wavefronts,
                ideal=i.shared_ideal,
                excess=i.shared_excess,
            )
            for i in top
        ],
    )


def compare(a: TraceSummary, b: TraceSummary, label_a: str, label_b: str) -> TraceComparison:
    names = sorted(set(a.categories) | set(b.categories), key=lambda k: -(a.categories.get(k, 0) + b.categories.get(k, 0)))
    deltas = [CategoryDelta(category=k, a=a.categories.get(k, 0.0), b=b.categories.get(k, 0.0)) for k in names]
    key = lambda h: (mnemonic_of(h.isa), (h.source or "").rsplit("/", 1)[-1])  # noqa: E731
    hot_a = {key(h): h for h in a.hot}
    moved = []
    for h in b.hot[:8]:
        before = hot_a.get(key(h))
        moved.append(
            f"{mnemonic_of(h.isa)}{short(h.source)}: " + (f"{before.share:.1%} -> {h.share:.1%}" if before else f"new in the hot list at {h.share:.1%}")
        )
    for k, h in hot_a.items():
        if k not in {key(x) for x in b.hot}:
            moved.append(f"{mnemonic_of(h.isa)}{short(h.source)}: left the hot list (was {h.share:.1%})")
    which = f"{a.kernel[:60]}{' (' + a.dispatch + ')' if a.dispatch else ''} vs {b.kernel[:60]}{' (' + b.dispatch + ')' if b.dispatch else ''}"
    return TraceComparison(a=label_a, b=label_b, total_a=a.total, total_b=b.total, unit=b.unit, categories=deltas, moved=moved[:12], kernels=which)
