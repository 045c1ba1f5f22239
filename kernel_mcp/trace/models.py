"""What a trace summary holds and how it reads: one kernel dispatch (or launch), never several
added together; costs kept as stall, issue and idle in every category; an instruction named by its
address, the key every output of the decoder shares. Percentages are printed with one decimal in
the tables and in the findings alike, so a finding's figure can be found in its table."""

from __future__ import annotations

from pydantic import BaseModel

from kernel_mcp.tooling import ToolOutput
from kernel_mcp.trace.readers import mnemonic_of
from kernel_mcp.untrusted import inline


def pct(share: float) -> str:
    return f"{share:.1%}"


def where(address: int | None, index: int) -> str:
    return f"0x{address:x}" if address is not None else f"#{index}"


def short(source: str | None) -> str:
    return f" [{inline(source.rsplit('/', 1)[-1])}]" if source else ""


class CostSplit(BaseModel):
    """A category's cost in the summary's unit: cycles stalled, issuing, idle before an instruction
    (thread trace); samples not issued, issued (sampling: idle 0)."""

    stall: float = 0.0
    issue: float = 0.0
    idle: float = 0.0

    @property
    def total(self) -> float:
        return self.stall + self.issue + self.idle

    def parts(self) -> str:
        total = self.total or 1.0
        named = [(n, v / total) for n, v in (("stall", self.stall), ("issue", self.issue), ("idle", self.idle)) if v]
        return " ".join(f"{n} {pct(s)}" for n, s in named)


class HotInstruction(BaseModel):
    index: int
    address: int | None = None
    isa: str
    source: str | None
    hits: float
    cost: float
    share: float
    stall: float = 0.0
    issue: float = 0.0
    idle: float = 0.0
    category: str
    reasons: dict[str, float] = {}


class Producer(BaseModel):
    """A memory instruction a wait waits for."""

    index: int
    address: int | None = None
    isa: str
    source: str | None = None
    records: int = 0  # how many of the decoder's wait records name it (0: an estimate)


class WaitFact(BaseModel):
    index: int
    address: int | None = None
    isa: str
    source: str | None
    cost: float
    share: float
    waits_for: list[Producer] = []
    attribution: str  # "decoder", "decoder: none recorded", or "estimate: ..."
    valu_between: int | None = None  # estimates only: vector ALU instructions between the load and the wait

    def producers(self) -> str:
        if not self.waits_for:
            return ""
        groups: dict[str, list[Producer]] = {}
        for p in self.waits_for:
            groups.setdefault(mnemonic_of(p.isa) or "?", []).append(p)
        parts = []
        for name, members in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:3]:
            first = members[0]
            span = where(first.address, first.index) + (f"..{where(members[-1].address, members[-1].index)}" if len(members) > 1 else "")
            parts.append(f"{len(members)}x {inline(name)} {span}{short(first.source)}")
        return ", ".join(parts)


class SharedAccess(BaseModel):
    index: int
    address: int | None = None
    isa: str
    source: str | None
    executed: float
    wavefronts: float
    ideal: float
    excess: float


class BankConflicts(BaseModel):
    """Shared-memory wavefronts over the kernel's shared-memory instructions (ncu source counters):
    the excess over the ideal is what bank conflicts cost."""

    wavefronts: float
    ideal: float
    excess: float
    excess_share: float
    top: list[SharedAccess] = []


class DispatchBrief(BaseModel):
    kernel: str
    dispatch: str | None = None
    unit: str
    total: float
    instructions: int
    waves: int | None = None
    top: str = ""  # the largest category and its share

    def line(self) -> str:
        where_ = f" ({self.dispatch})" if self.dispatch else ""
        waves = f", {self.waves} waves" if self.waves is not None else ""
        return f"{inline(self.kernel)[:70]}{where_}: {self.total:.0f} {self.unit}, {self.instructions} instructions{waves}; {self.top}"


class TraceSummary(ToolOutput):
    kernel: str  # as the trace names it
    symbol: str | None = None
    dispatch: str | None = None
    arch: str | None = None  # where the trace says exactly which
    source: str
    unit: str
    total: float
    instructions: int
    waves: int | None = None
    categories: dict[str, float]  # share of the total
    costs: dict[str, CostSplit] = {}  # the same categories in the unit, split
    reasons: dict[str, float] = {}  # share of the samples per named stall reason
    hot: list[HotInstruction]
    waits: list[WaitFact]
    bank_conflicts: BankConflicts | None = None
    found: list[DispatchBrief] = []  # every kernel dispatch in the input, this one first
    findings: list[str]
    facts: list[str] = []
    run_id: str | None = None

    def render(self) -> str:
        detail = ", ".join(x for x in (self.dispatch, self.arch) if x)
        waves = f", {self.waves} waves" if self.waves is not None else ""
        # the kernel's name, its instructions' text and stall reasons are the trace file's: each on its line
        lines = [
            f"trace of {inline(self.kernel)[:160]} ({self.source}{', ' + detail if detail else ''}): {self.total:.0f} {self.unit} over "
            f"{self.instructions} instructions{waves}" + (f"; run {self.run_id}" if self.run_id else "")
        ]
        if len(self.found) > 1:
            lines.append(f"the input holds {len(self.found)} kernel dispatches, summarised one at a time (pick with kernel / dispatch):")
            lines += [("  * " if i == 0 else "    ") + b.line() for i, b in enumerate(self.found[:8])]
            if len(self.found) > 8:
                lines.append(f"    ... and {len(self.found) - 8} more")
        ordered = sorted(self.categories.items(), key=lambda kv: -kv[1])
        lines.append(
            f"by category (% of {self.unit}; stall/issue/idle within): "
            + ", ".join(f"{k} {pct(v)}" + (f" [{self.costs[k].parts()}]" if k in self.costs else "") for k, v in ordered if v >= 0.0005)
        )
        if self.reasons:
            shown = [(k, v) for k, v in sorted(self.reasons.items(), key=lambda kv: -kv[1]) if v >= 0.0005][:14]
            lines.append("stall reasons (% of samples): " + ", ".join(f"{inline(k)} {pct(v)}" for k, v in shown))
        lines.append(f"hottest instructions ({self.unit}):")
        for h in self.hot[:6]:
            lines.append(f"  {where(h.address, h.index):<14} {pct(h.share):>6} {h.cost:>10.0f} hits {h.hits:>8.0f}  {inline(h.isa)[:48]}{short(h.source)}")
        if self.waits:
            lines.append(f"top waits ({self.unit}):")
            for w in self.waits[:4]:
                target = f" waits for {w.producers()}" if w.waits_for else ""
                between = f"; {w.valu_between} VALU between" if w.valu_between is not None else ""
                lines.append(f"  {where(w.address, w.index)} {inline(w.isa)[:36]} {pct(w.share)}{target} ({w.attribution}{between})")
        if self.bank_conflicts:
            b = self.bank_conflicts
            lines.append(f"shared memory: {b.wavefronts:.0f} wavefronts, ideal {b.ideal:.0f}, excess {b.excess:.0f} ({pct(b.excess_share)})")
            for a in b.top[:3]:
                lines.append(
                    f"  {where(a.address, a.index)} {inline(a.isa)[:40]}{short(a.source)}: {a.wavefronts / max(a.executed, 1):.1f} wavefronts "
                    f"per request, ideal {a.ideal / max(a.executed, 1):.1f}"
                )
        lines += [f"finding: {inline(f)}" for f in self.findings]  # a finding quotes an instruction's text
        lines += [f"fact: {inline(f)}" for f in self.facts]
        return "\n".join(lines)


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
    kernels: str = ""  # which kernel dispatch each side is

    def render(self) -> str:
        change = f" ({self.total_b / self.total_a - 1:+.1%})" if self.total_a else ""
        # which kernels, and the instructions that moved, are named as the traces name them
        lines = [f"{self.a} -> {self.b}: {self.total_a:.0f} -> {self.total_b:.0f} {self.unit}{change}" + (f"; {inline(self.kernels)}" if self.kernels else "")]
        for c in self.categories:
            lines.append(f"  {c.category:<18} {c.a:6.1%} -> {c.b:6.1%}")
        lines += [f"  {inline(m)}" for m in self.moved]
        return "\n".join(lines)
