"""Turning an instruction-level trace into a page: where the time goes, what waits on what, facts.

Costs are cycles for a thread trace (latency = stall + issue, plus idle gaps) and samples for PC
sampling or ncu's warp-stall sampling; the unit is always stated. Categories follow what a wait
is for: s_waitcnt vmcnt (global memory), lgkmcnt (LDS and scalar memory), s_barrier, MFMA
dependency bubbles, VALU, SALU, branches, idle. On NVIDIA, stall reasons map onto the same
categories (long scoreboard -> global memory, short scoreboard and MIO -> shared memory, ...).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel

from kernel_mcp.tooling import ToolOutput
from kernel_mcp.trace.readers import Instr, mnemonic_of

CATEGORIES = ("VMEM wait", "LDS/SMEM wait", "barrier", "MFMA dependency", "VALU", "SALU", "branch", "VMEM issue", "LDS issue", "issue contention", "idle", "other")
NCU_REASON_CATEGORY = {
    "long_sb": "VMEM wait", "lg": "VMEM wait", "tex": "VMEM wait", "drain": "VMEM wait",
    "short_sb": "LDS/SMEM wait", "mio": "LDS/SMEM wait", "imc": "LDS/SMEM wait",
    "barrier": "barrier", "membar": "barrier",
    "math": "VALU", "wait": "VALU", "selected": "VALU", "not_selected": "issue contention",
    "branch_resolving": "branch", "no_inst": "idle", "dispatch": "other", "misc": "other", "sleep": "idle", "sleeping": "idle",
}
PC_REASON_CATEGORY = {"WAITCNT": None, "BARRIER_WAIT": "barrier", "ALU_DEPENDENCY": None, "NO_INSTRUCTION_AVAILABLE": "idle", "SLEEP_WAIT": "idle"}
VMEM_LOAD = re.compile(r"^(global_load|buffer_load|flat_load|scratch_load)")
LGKM = re.compile(r"^(ds_read|ds_load|s_load|s_buffer_load|ds_bpermute|ds_swizzle)")
MAX_HOT = 12


# The compile tool's instruction classes (amdgpu_asm.classify), named for where a trace's time goes.
_TRACE_CATEGORY = {
    "mfma": "MFMA dependency", "barrier": "barrier", "branch": "branch", "valu": "VALU", "salu": "SALU", "smem": "SALU",
    "vmem_load": "VMEM issue", "vmem_store": "VMEM issue", "vmem_atomic": "VMEM issue",
    "lds_read": "LDS issue", "lds_write": "LDS issue", "lds_other": "LDS issue",
}


def category_of(instr: Instr, classify) -> str:
    """Where an instruction's time goes, from its class in its own instruction set (`classify`:
    the platform's classifier; SASS read with the AMDGPU one would all be 'other')."""
    m = instr.mnemonic
    kind = classify(m)
    if kind == "waitcnt":
        return "LDS/SMEM wait" if "lgkmcnt" in instr.isa else "VMEM wait"
    if kind == "other":
        return "SALU" if m.startswith("s_") else "other"
    return _TRACE_CATEGORY[kind]


class HotInstruction(BaseModel):
    index: int
    isa: str
    source: str | None
    hits: float
    cost: float
    share: float
    latency: float = 0.0
    stall: float = 0.0
    idle: float = 0.0
    category: str
    reasons: dict[str, float] = {}


class WaitFact(BaseModel):
    index: int
    isa: str
    source: str | None
    cost: float
    share: float
    waits_for: str | None
    waits_for_source: str | None
    valu_between: int | None


class TraceSummary(ToolOutput):
    kernel: str
    source: str
    unit: str
    total: float
    instructions: int
    categories: dict[str, float]
    hot: list[HotInstruction]
    waits: list[WaitFact]
    findings: list[str]
    facts: list[str] = []
    run_id: str | None = None

    def render(self) -> str:
        lines = [f"trace of {self.kernel} ({self.source}): {self.total:.0f} {self.unit} over {self.instructions} instructions" + (f"; run {self.run_id}" if self.run_id else "")]
        lines.append("by category: " + ", ".join(f"{k} {v:.0%}" for k, v in sorted(self.categories.items(), key=lambda kv: -kv[1]) if v >= 0.005))
        lines.append(f"hottest instructions ({self.unit}):")
        for h in self.hot[:10]:
            where = f" [{h.source.rsplit('/', 1)[-1]}]" if h.source else ""
            lines.append(f"  #{h.index:<5} {h.share:6.1%} {h.cost:>10.0f} hits {h.hits:>8.0f}  {h.isa[:56]}{where}")
        if self.waits:
            lines.append("top waits:")
            for w in self.waits[:5]:
                target = f" waits for {w.waits_for}" + (f" [{w.waits_for_source.rsplit('/', 1)[-1]}]" if w.waits_for_source else "") if w.waits_for else ""
                lines.append(f"  #{w.index} {w.isa[:40]} {w.share:.1%}{target}" + (f"; {w.valu_between} VALU between" if w.valu_between is not None else ""))
        lines += [f"finding: {f}" for f in self.findings]
        lines += [f"fact: {f}" for f in self.facts]
        return "\n".join(lines)


def _cost(instr: Instr, sampled: bool) -> float:
    return instr.samples if sampled else instr.latency + instr.idle


def summarise(kernel: str, source: str, rows: Iterable[Instr]) -> TraceSummary:
    """One pass over the rows keeps only per-instruction totals (the program, not the trace)."""
    from kernel_mcp import platforms

    classify = platforms.of_tool(source).classify
    program: dict[int, Instr] = {}
    for r in rows:
        seen = program.get(r.index)
        if seen is None:
            program[r.index] = r
        else:  # the same instruction from several dispatches or files: add up
            seen.hits += r.hits
            seen.latency += r.latency
            seen.stall += r.stall
            seen.idle += r.idle
            seen.samples += r.samples
            for k, v in r.reasons.items():
                seen.reasons[k] = seen.reasons.get(k, 0.0) + v
    ordered = [program[i] for i in sorted(program)]
    sampled = any(i.samples for i in ordered) and not any(i.latency for i in ordered)
    unit = "samples" if sampled else "cycles"
    total = sum(_cost(i, sampled) for i in ordered) or 1.0
    categories: dict[str, float] = defaultdict(float)
    for i in ordered:
        if sampled and i.reasons and source.startswith("ncu"):
            for reason, value in i.reasons.items():
                categories[NCU_REASON_CATEGORY.get(reason, "other")] += value
            rest = i.samples - sum(i.reasons.values())
            if rest > 0:
                categories[category_of(i, classify)] += rest
        else:
            cost = _cost(i, sampled)
            if not sampled and i.idle:
                categories["idle"] += i.idle
                cost -= i.idle
            categories[category_of(i, classify)] += cost
    grand = sum(categories.values()) or 1.0
    shares = {k: v / grand for k, v in categories.items()}
    hottest = sorted(ordered, key=lambda i: -_cost(i, sampled))[:MAX_HOT]
    hot = [HotInstruction(index=i.index, isa=i.isa, source=i.source, hits=i.hits, cost=_cost(i, sampled), share=_cost(i, sampled) / total,
                          latency=i.latency, stall=i.stall, idle=i.idle, category=category_of(i, classify), reasons=dict(sorted(i.reasons.items(), key=lambda kv: -kv[1])[:4]))
           for i in hottest]
    waits = _waits(ordered, sampled, total, source)
    summary = TraceSummary(kernel=kernel, source=source, unit=unit, total=total, instructions=len(ordered), categories=shares, hot=hot, waits=waits, findings=[])
    summary.findings = findings(summary)
    return summary


def _waits(ordered: list[Instr], sampled: bool, total: float, source: str) -> list[WaitFact]:
    out = []
    for pos, instr in enumerate(ordered):
        is_wait = instr.mnemonic.startswith("s_waitcnt") or (source.startswith("ncu") and any(k in instr.reasons for k in ("long_sb", "short_sb", "mio")))
        if not is_wait:
            continue
        cost = _cost(instr, sampled)
        if cost <= 0:
            continue
        if instr.mnemonic.startswith("s_waitcnt"):
            pattern = LGKM if "lgkmcnt" in instr.isa else VMEM_LOAD
        else:
            pattern = re.compile(r"^(LDG|LD\b|LDS|LDSM)") if instr.reasons.get("long_sb", 0) < instr.reasons.get("short_sb", 0) + instr.reasons.get("mio", 0) else re.compile(r"^(LDG|LD\b)")
        producer, valu = None, 0
        for back in range(pos - 1, max(-1, pos - 200), -1):
            candidate = ordered[back]
            if pattern.match(candidate.mnemonic):
                producer = candidate
                break
            if candidate.mnemonic.startswith(("v_", "F", "H", "I")) and not candidate.mnemonic.startswith("v_mfma"):
                valu += 1
        out.append(WaitFact(index=instr.index, isa=instr.isa, source=instr.source, cost=cost, share=cost / total,
                            waits_for=producer.isa if producer else None, waits_for_source=producer.source if producer else None, valu_between=valu if producer else None))
    return sorted(out, key=lambda w: -w.cost)[:8]


def _line(source: str | None) -> str:
    return f" at {source.rsplit('/', 1)[-1]}" if source else ""


def findings(s: TraceSummary) -> list[str]:
    """Facts, not advice: each sentence points at figures in the summary."""
    out = []
    top = sorted(s.categories.items(), key=lambda kv: -kv[1])
    if top:
        out.append(f"{top[0][0]} takes {top[0][1]:.0%} of the {s.unit}" + (f", then {top[1][0]} {top[1][1]:.0%}" if len(top) > 1 else ""))
    lgkm = [w for w in s.waits if "lgkmcnt" in w.isa or (w.waits_for and w.waits_for.startswith(("ds_", "LDS")))]
    if lgkm:
        share = sum(w.share for w in lgkm)
        w = lgkm[0]
        out.append(f"LDS/scalar waits{_line(w.source)} take {share:.0%} of {s.unit}" + (f"; the top one waits for {mnemonic_of(w.waits_for)}{_line(w.waits_for_source)} with {w.valu_between} VALU instructions between" if w.waits_for else ""))
    vm = [w for w in s.waits if w not in lgkm]
    if vm:
        share = sum(w.share for w in vm)
        w = vm[0]
        out.append(f"global-memory waits take {share:.0%} of {s.unit}" + (f"; the top one{_line(w.source)} waits for {mnemonic_of(w.waits_for)}{_line(w.waits_for_source)} with {w.valu_between} VALU instructions between" if w.waits_for else ""))
    if s.categories.get("barrier", 0) >= 0.05:
        out.append(f"barriers hold waves for {s.categories['barrier']:.0%} of {s.unit}")
    if s.hot:
        h = s.hot[0]
        out.append(f"the hottest instruction is {mnemonic_of(h.isa)}{_line(h.source)} with {h.share:.0%} of {s.unit}")
    return out


class CategoryDelta(BaseModel):
    category: str
    a: float
    b: float


class TraceComparison(ToolOutput):
    a: str
    b: str
    total_a: float
    total_b: float
    unit: str
    categories: list[CategoryDelta]
    moved: list[str]

    def render(self) -> str:
        change = f" ({self.total_b / self.total_a - 1:+.1%})" if self.total_a else ""
        lines = [f"{self.a} -> {self.b}: {self.total_a:.0f} -> {self.total_b:.0f} {self.unit}{change}"]
        for c in self.categories:
            lines.append(f"  {c.category:<16} {c.a:6.1%} -> {c.b:6.1%}")
        lines += [f"  {m}" for m in self.moved]
        return "\n".join(lines)


def compare(a: TraceSummary, b: TraceSummary, label_a: str, label_b: str) -> TraceComparison:
    names = sorted(set(a.categories) | set(b.categories), key=lambda k: -(a.categories.get(k, 0) + b.categories.get(k, 0)))
    deltas = [CategoryDelta(category=k, a=a.categories.get(k, 0.0), b=b.categories.get(k, 0.0)) for k in names]
    key = lambda h: (mnemonic_of(h.isa), (h.source or "").rsplit("/", 1)[-1])  # noqa: E731
    hot_a = {key(h): h for h in a.hot}
    moved = []
    for h in b.hot[:8]:
        before = hot_a.get(key(h))
        moved.append(f"{mnemonic_of(h.isa)}{_line(h.source)}: " + (f"{before.share:.1%} -> {h.share:.1%}" if before else f"new in the hot list at {h.share:.1%}"))
    for k, h in hot_a.items():
        if k not in {key(x) for x in b.hot}:
            moved.append(f"{mnemonic_of(h.isa)}{_line(h.source)}: left the hot list (was {h.share:.1%})")
    return TraceComparison(a=label_a, b=label_b, total_a=a.total, total_b=b.total, unit=b.unit, categories=deltas, moved=moved[:12])
