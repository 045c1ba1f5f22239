"""The keep/discard rule: a verdict per config class first, then the decision from the verdicts.

Each class is faster or slower (its 95% interval clear of the noise threshold on that side), the
same (its interval inside the threshold both ways) or undecided (nvbench's robust comparator has
FAST, SLOW, SAME and AMBG for the same reason). Then: a class faster and another slower is a split
(a specialised kernel with dispatch for the winners), whatever the classes together say; a keep
needs the target (or, for a global change, the classes together) faster beyond noise and every class
the change must not hurt shown safe: the upper end of its interval below the severe threshold
(a workspace setting). Short of that the answer is undecided, never kept. A move smaller than the
noise threshold counts only when the previous attempt moved the same way (the user's rule: under
1% is noise unless the same direction appears twice in a row). Wrong results ask for a repair
(3 at most). Pure functions of the measured comparisons: tests/test_decide.py holds every branch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from kernel_mcp.bench import BenchRun, Comparison

# duplicate: the code was BEST's or an earlier attempt's, and nothing ran (same_code.py)
Decision = Literal["keep", "suspicious", "discard", "undecided", "repair-needed", "split-suggested", "failed", "refused", "not-corroborated", "duplicate"]
Outcome = Literal["faster", "slower", "same", "undecided"]
KEEPABLE = ("keep", "suspicious", "split-suggested")  # decisions that claim a gain
MAX_REPAIRS = 3


class ClassVerdict(BaseModel):
    """One config class's outcome, with the interval and pairs it rests on."""

    key: str
    outcome: Outcome
    change: float
    low: float | None
    high: float | None
    pairs: int | None
    target: bool  # a class the change is meant for (every class, for a global change)


class Verdict(BaseModel):
    decision: Decision
    reasons: list[str]
    comparisons: dict[str, Comparison]
    overall: Comparison | None = None
    regression: bool = False  # a measured slowdown beyond noise (counts toward the stop rule)
    direction: int = 0  # -1 faster, +1 slower, 0 none: for the same-direction-twice rule
    classes: list[ClassVerdict] = []


def outcome(cmp: Comparison, threshold: float) -> Outcome:
    """faster / slower: significant and beyond the noise threshold; same: the whole interval within
    it both ways; undecided: anything else (too few pairs, or an interval that reaches past it)."""
    if cmp.significant and cmp.change <= -threshold:
        return "faster"
    if cmp.significant and cmp.change >= threshold:
        return "slower"
    if cmp.low is not None and cmp.high is not None and -threshold < cmp.low and cmp.high < threshold:
        return "same"
    return "undecided"


def class_verdicts(comparisons: dict[str, Comparison], threshold: float, target: str | None) -> list[ClassVerdict]:
    return [
        ClassVerdict(key=k, outcome=outcome(c, threshold), change=c.change, low=c.low, high=c.high, pairs=c.pairs, target=matches(k, target))
        for k, c in comparisons.items()
    ]


def not_shown_safe(comparisons: dict[str, Comparison], severe: float, keys: list[str]) -> list[str]:
    """Classes of `keys` whose interval does not exclude a slowdown of `severe` or more (none measured: not shown)."""
    return [k for k in keys if (high := comparisons[k].high) is None or high >= severe]


def guarded_classes(keys: list[str], target: str | None) -> list[str]:
    """The classes a claimed gain must not hurt: the non-target ones, or every one for a global change."""
    return [k for k in keys if not matches(k, target)] if target else list(keys)


def unsettled_classes(comparisons: dict[str, Comparison], target: str | None, threshold: float, severe: float) -> list[str]:
    """The guarded classes neither shown safe (interval below the severe threshold) nor shown slower
    (a split): while a gain is claimed, more pairs decide them."""
    unsafe = not_shown_safe(comparisons, severe, guarded_classes(list(comparisons), target))
    return [k for k in unsafe if outcome(comparisons[k], threshold) != "slower"]


def parse_key(key: str) -> dict[str, str]:
    """'shape=x3d,K=3' -> {'shape': 'x3d', 'K': '3'} (a class key as the benchmark reader writes it)."""
    pairs = [part.split("=", 1) for part in key.split(",")]
    return {name: value for name, value in (p for p in pairs if len(p) == 2)}


def separating_columns(winners: list[str], losers: list[str]) -> list[str]:
    """The config columns whose values never overlap between the two groups: what a dispatch can test."""
    win, lose = [parse_key(k) for k in winners], [parse_key(k) for k in losers]
    columns = [c for c in (win[0] if win else {}) if all(c in d for d in win + lose)]
    return [c for c in columns if not {d[c] for d in win} & {d[c] for d in lose}]


def matches(key: str, target: str | None) -> bool:
    if not target:
        return True
    wanted = [part.strip() for part in target.split(",") if part.strip()]
    have = key.split(",")
    return all(part in have or part == key for part in wanted)


def decide(
    cand: BenchRun,
    comparisons: dict[str, Comparison],
    script: Comparison | None,
    target: str | None,
    threshold: float,
    previous_direction: int,
    repairs_done: int,
    gpu_time: Comparison | None = None,
    suspicious_factor: float = 3.0,
    severe: float = 0.05,
) -> Verdict:
    """`comparisons` (per class) and `script` (the target classes together) come from BEST and the
    candidate measured in pairs in the same evaluation. `gpu_time`, when a profiler measured it (in
    pairs too), is the keep metric for the target; the CSV metric then only guards the other classes."""
    if cand.failure:
        return Verdict(decision="failed", reasons=[cand.failure], comparisons={})
    impossible = (
        ["impossible: faster than the roofline floor allows on " + (cand.floor_of or "this GPU") + ": " + "; ".join(cand.impossible[:3])]
        if cand.impossible
        else []
    )
    wrong = [c for c in cand.classes if not c.correct]
    if wrong:
        # the correctness column may hold a count of wrong elements or an error: its worst value is named as the column's
        column = cand.correctness.split()[0] if cand.correctness else "the correctness column"
        listed = ", ".join(f"{c.key} ({c.failing_rows} rows fail {cand.correctness}, worst {column} {c.worst_error})" for c in wrong[:6])
        if repairs_done >= MAX_REPAIRS:
            return Verdict(decision="discard", reasons=[f"still wrong after {MAX_REPAIRS} repairs: {listed}"] + impossible, comparisons={})
        return Verdict(
            decision="repair-needed", reasons=[f"wrong results in {listed}; repair {repairs_done + 1} of {MAX_REPAIRS}"] + impossible, comparisons={}
        )
    if impossible:
        return Verdict(decision="refused", reasons=impossible, comparisons={})
    missing = sorted(set(comparisons) - {c.key for c in cand.classes}) if comparisons else []
    if missing:
        return Verdict(decision="failed", reasons=[f"classes missing from the candidate's CSV: {', '.join(missing[:6])}"], comparisons={})
    targets = [k for k in comparisons if matches(k, target)]
    if not targets or script is None:
        return Verdict(
            decision="failed", reasons=[f"no class matches the target {target!r}" if target else "no class of BEST to compare with"], comparisons=comparisons
        )
    overall = gpu_time or script
    verdicts = class_verdicts(comparisons, threshold, target)
    what = f"target {target}" if target else "all classes (global)"
    if gpu_time is not None:
        reasons = [f"{what}, profiler GPU kernel time: {gpu_time.statement()}", f"benchmark metric: {script.statement()}"]
        if script.significant and script.change <= -threshold and not (gpu_time.significant and gpu_time.change <= -threshold):
            reasons.append("the benchmark's own timer shows a gain the profiler's GPU kernel time does not: not kept")
    else:
        reasons = [f"{what}: {overall.statement()}"]
    direction = (-1 if overall.change < 0 else 1) if overall.significant else 0

    def verdict(decision: Decision, *more: str, regression: bool = False) -> Verdict:
        return Verdict(
            decision=decision,
            reasons=reasons + list(more),
            comparisons=comparisons,
            overall=overall,
            regression=regression,
            direction=direction,
            classes=verdicts,
        )

    def with_comparisons(keys: list[str]) -> str:
        """The first classes of `keys`, each with its comparison, for a reason line."""
        return "; ".join(f"{k} {comparisons[k].statement()}" for k in keys[:5])

    winners = [v.key for v in verdicts if v.outcome == "faster"]
    losers = [v.key for v in verdicts if v.outcome == "slower"]
    if winners and losers:
        # the program's Kernel Split Rule: opposite moves are never averaged into a tie or a gain
        columns = separating_columns(winners, losers)
        by = f"; the config columns that separate them: {', '.join(columns)}" if columns else "; no config column separates them alone"
        return verdict(
            "split-suggested",
            "faster beyond noise: " + with_comparisons(winners),
            "slower beyond noise: " + with_comparisons(losers),
            "one group gains and another loses: keep the best kernel as the default and add a specialised kernel with dispatch for the winners" + by,
        )
    faster = overall.significant and overall.change <= -threshold
    # A move under the threshold counts only when the pairs call it significant, and twice in a row.
    small_faster = overall.significant and -threshold < overall.change < 0
    if small_faster and previous_direction == -1:
        reasons.append(f"below the {threshold:.0%} threshold, but the previous attempt also moved faster: counts")
        faster = True
    elif small_faster:
        reasons.append(f"below the {threshold:.0%} threshold and not yet seen twice in a row: noise")
    if faster:
        guarded = guarded_classes(list(comparisons), target)
        unsafe = not_shown_safe(comparisons, severe, guarded)
        whose = "non-target classes" if target else "classes"
        if unsafe:
            return verdict(
                "undecided",
                f"{', '.join(unsafe[:6])} not shown safe: the upper end of the interval reaches the severe threshold "
                f"(+{severe:.0%}); more pairs, or a change that leaves them alone",
            )
        reasons.append(f"every one of the {len(guarded)} {whose} shown not slower than +{severe:.0%} (the severe threshold)")
    if faster and overall.change <= 1 / suspicious_factor - 1:
        return verdict(
            "suspicious",
            f"a {1 / (1 + overall.change):.1f}x speedup in one step is beyond the {suspicious_factor:g}x plausibility limit: "
            "keeping it needs an independent re-measurement (done by experiment_keep)",
        )
    if faster:
        return verdict("keep")
    if overall.significant and overall.change >= threshold:
        return verdict("discard", "measured regression", regression=True)
    if losers:
        # the classes together can read as a tie when one class's runs are noisy (an outlier widens
        # the aggregate's interval) while another is clearly slower: a verdict per class counts that
        return verdict("discard", "measured regression in " + with_comparisons(losers), regression=True)
    return verdict("discard", "tie within noise")
