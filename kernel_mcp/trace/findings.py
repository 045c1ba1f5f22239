"""Findings: facts, not advice, each sentence built from figures in the summary's own tables (the
categories with their stall/issue/idle split, the stall-reason shares, the waits, the shared-memory
wavefronts), printed the way the tables print them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernel_mcp.trace.models import pct, short, where
from kernel_mcp.trace.ncu_source import GLOBAL_WAIT_REASON, SHARED_WAIT_REASONS
from kernel_mcp.trace.readers import mnemonic_of

if TYPE_CHECKING:
    from kernel_mcp.trace.models import TraceSummary

LDS_NOTE_SHARE = 0.05  # shared-memory work above this share gets a note on what can tell bank conflicts


def findings(s: TraceSummary, shared_columns: bool) -> list[str]:
    out = []
    top = sorted(s.categories.items(), key=lambda kv: -kv[1])
    if top:
        name, share = top[0]
        split = f" ({s.costs[name].parts()})" if name in s.costs else ""
        out.append(f"{name} takes {pct(share)} of the {s.unit}{split}" + (f", then {top[1][0]} {pct(top[1][1])}" if len(top) > 1 else ""))
    if s.reasons:
        shared = ", ".join(f"{r} {pct(s.reasons.get(r, 0.0))}" for r in SHARED_WAIT_REASONS)
        out.append(
            f"warps waiting on global or local memory ({GLOBAL_WAIT_REASON}) take {pct(s.reasons.get(GLOBAL_WAIT_REASON, 0.0))} "
            f"of the samples; on shared memory: {shared}"
        )
    if s.waits:
        w = s.waits[0]
        target = f"; it waits for {w.producers()} ({w.attribution})" if w.waits_for else f" ({w.attribution})"
        out.append(f"the costliest wait is {w.isa[:40]} at {where(w.address, w.index)}{short(w.source)} with {pct(w.share)} of the {s.unit}{target}")
    out += _shared_memory(s, shared_columns)
    if s.categories.get("barrier", 0) >= 0.05:
        out.append(f"barriers hold waves for {pct(s.categories['barrier'])} of the {s.unit}")
    if s.hot:
        h = s.hot[0]
        out.append(
            f"the hottest instruction is {mnemonic_of(h.isa) or '?'} at {where(h.address, h.index)}{short(h.source)} with {pct(h.share)} of the {s.unit}"
        )
    return out


def _shared_memory(s: TraceSummary, shared_columns: bool) -> list[str]:
    b = s.bank_conflicts
    if b is not None and b.excess > 0 and b.top:
        a = b.top[0]
        per = max(a.executed, 1.0)
        return [
            f"shared-memory bank conflicts: {pct(b.excess_share)} of the {b.wavefronts:.0f} shared-memory wavefronts are excess "
            f"({b.excess:.0f} over the ideal {b.ideal:.0f}); the most at {a.isa[:40]} {where(a.address, a.index)}{short(a.source)}, "
            f"{a.wavefronts / per:.1f} wavefronts per request where {a.ideal / per:.1f} would do"
        ]
    if b is not None and b.wavefronts:
        return [f"no shared-memory bank conflicts: no excess over the ideal {b.ideal:.0f} wavefronts"]
    if s.reasons and not shared_columns and s.categories.get("LDS/SMEM wait", 0.0) >= LDS_NOTE_SHARE:
        return ["this export has no shared-memory wavefront columns (L1 Wavefronts Shared, ...Ideal, ...Excessive), so bank conflicts cannot be told from it"]
    if s.unit == "cycles" and s.categories.get("LDS instructions", 0.0) >= LDS_NOTE_SHARE:
        return [
            f"LDS instructions take {pct(s.categories['LDS instructions'])} of the cycles ({s.costs['LDS instructions'].parts()}); "
            "a thread trace does not count LDS bank conflicts (the counters SQ_LDS_BANK_CONFLICT over SQ_INSTS_LDS do)"
        ]
    return []
