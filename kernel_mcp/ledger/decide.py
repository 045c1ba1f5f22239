"""The keep/discard rule, per config class.

keep: every class correct, the target class (or, for a global change, the classes together)
faster beyond noise, and no other class clearly and reproducibly slower. A change smaller than
the noise threshold counts only when the previous attempt moved the same way (the user's rule:
under 1% is noise unless the same direction appears twice in a row). One class faster and another
slower suggests a specialised kernel with dispatch. Wrong results ask for a repair (3 at most).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from kernel_mcp.bench import BenchRun, Comparison

Decision = Literal["keep", "suspicious", "discard", "repair-needed", "split-suggested", "failed", "refused", "not-corroborated"]
KEEPABLE = ("keep", "suspicious", "split-suggested")  # decisions that claim a gain
MAX_REPAIRS = 3


class Verdict(BaseModel):
    decision: Decision
    reasons: list[str]
    comparisons: dict[str, Comparison]
    overall: Comparison | None = None
    regression: bool = False  # a measured slowdown beyond noise (counts toward the stop rule)
    direction: int = 0  # -1 faster, +1 slower, 0 none: for the same-direction-twice rule


def matches(key: str, target: str | None) -> bool:
    if not target:
        return True
    wanted = [part.strip() for part in target.split(",") if part.strip()]
    have = key.split(",")
    return all(part in have or part == key for part in wanted)


def decide(cand: BenchRun, comparisons: dict[str, Comparison], script: Comparison | None, target: str | None, threshold: float,
           previous_direction: int, repairs_done: int, gpu_time: Comparison | None = None, suspicious_factor: float = 3.0) -> Verdict:
    """`comparisons` (per class) and `script` (the target classes together) come from BEST and the
    candidate measured in pairs in the same evaluation. `gpu_time`, when a profiler measured it (in
    pairs too), is the keep metric for the target; the CSV metric then only guards the other classes."""
    if cand.failure:
        return Verdict(decision="failed", reasons=[cand.failure], comparisons={})
    impossible = ["impossible: faster than the roofline floor allows on " + (cand.floor_of or "this GPU") + ": " + "; ".join(cand.impossible[:3])] if cand.impossible else []
    wrong = [c for c in cand.classes if not c.correct]
    if wrong:
        listed = ", ".join(f"{c.key} ({c.failing_rows} rows, worst error {c.worst_error})" for c in wrong[:6])
        if repairs_done >= MAX_REPAIRS:
            return Verdict(decision="discard", reasons=[f"still wrong after {MAX_REPAIRS} repairs: {listed}"] + impossible, comparisons={})
        return Verdict(decision="repair-needed", reasons=[f"wrong results in {listed}; repair {repairs_done + 1} of {MAX_REPAIRS}"] + impossible, comparisons={})
    if impossible:
        return Verdict(decision="refused", reasons=impossible, comparisons={})
    missing = sorted(set(comparisons) - {c.key for c in cand.classes}) if comparisons else []
    if missing:
        return Verdict(decision="failed", reasons=[f"classes missing from the candidate's CSV: {', '.join(missing[:6])}"], comparisons={})
    targets = [k for k in comparisons if matches(k, target)]
    if not targets or script is None:
        return Verdict(decision="failed", reasons=[f"no class matches the target {target!r}" if target else "no class of BEST to compare with"], comparisons=comparisons)
    overall = gpu_time or script
    slower = [k for k, cmp in comparisons.items() if cmp.significant and cmp.change >= threshold]
    slower_others = [k for k in slower if k not in targets] if target else slower
    what = f"target {target}" if target else "all classes (global)"
    if gpu_time is not None:
        reasons = [f"{what}, profiler GPU kernel time: {gpu_time.statement()}", f"benchmark metric: {script.statement()}"]
        if script.significant and script.change <= -threshold and not (gpu_time.significant and gpu_time.change <= -threshold):
            reasons.append("the benchmark's own timer shows a gain the profiler's GPU kernel time does not: not kept")
    else:
        reasons = [f"{what}: {overall.statement()}"]
    direction = (-1 if overall.change < 0 else 1) if overall.significant else 0
    faster = overall.significant and overall.change <= -threshold
    # A move under the threshold counts only when the pairs call it significant, and twice in a row.
    small_faster = overall.significant and -threshold < overall.change < 0
    if small_faster and previous_direction == -1:
        reasons.append(f"below the {threshold:.0%} threshold, but the previous attempt also moved faster: counts")
        faster = True
    elif small_faster:
        reasons.append(f"below the {threshold:.0%} threshold and not yet seen twice in a row: noise")
    if faster and slower_others:
        reasons.append("slower beyond noise: " + ", ".join(f"{k} {comparisons[k].statement()}" for k in slower_others[:5]))
        reasons.append("one class gains and another loses: keep the best kernel as default and add a specialised kernel with dispatch for the winners")
        return Verdict(decision="split-suggested", reasons=reasons, comparisons=comparisons, overall=overall, direction=direction)
    if faster and overall.change <= 1 / suspicious_factor - 1:
        reasons.append(f"a {1 / (1 + overall.change):.1f}x speedup in one step is beyond the {suspicious_factor:g}x plausibility limit: "
                       "keeping it needs an independent re-measurement (done by experiment_keep)")
        return Verdict(decision="suspicious", reasons=reasons, comparisons=comparisons, overall=overall, direction=direction)
    if faster:
        return Verdict(decision="keep", reasons=reasons, comparisons=comparisons, overall=overall, direction=direction)
    if overall.significant and overall.change >= threshold:
        return Verdict(decision="discard", reasons=reasons + ["measured regression"], comparisons=comparisons, overall=overall, regression=True, direction=direction)
    return Verdict(decision="discard", reasons=reasons + ["tie within noise"], comparisons=comparisons, overall=overall, direction=direction)
