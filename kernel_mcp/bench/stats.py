"""The one statistics module: medians, geometric means, and comparisons with a confidence interval.

Two ways to compare BEST with a candidate:

- `paired`: the keep decision. BEST and the candidate run in pairs of fresh processes, back to
  back (A B, then B A, ...), so a drift of the GPU's speed over minutes moves both sides of a pair
  alike and cancels in the pair's ratio. The estimate is the geometric mean of the pairs' ratios;
  its 95% interval is Student's t over the pairs' log ratios. An outlier pair widens the interval
  (more pairs are then measured), it never makes a change look significant.
- `compare`: two independent sets of runs (a plain benchmark against BEST's recorded figures).
  The ratio of medians, with a seeded bootstrap interval. It cannot cancel drift, so it informs
  but never decides a keep.

A change is significant when its interval excludes zero. The policy on top (the threshold, the
same-direction-twice rule) lives with the ledger.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from kernel_mcp.errors import CommandFailed


class FiguresOutOfRange(CommandFailed):
    """Figures whose ratio no float holds (the benchmark CSV's reader refuses such figures; BEST's
    may be older than that check): a clear refusal instead of a domain error or an infinite change."""


BOOTSTRAP_DRAWS = 2000
CONFIDENCE = 0.95

# Student's t, two-sided 95% (the 0.975 quantile), for 1..30 degrees of freedom.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t (a table to 30, then the Cornish-Fisher expansion, within 1e-3)."""
    if df < 1:
        raise ValueError("t needs at least one degree of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("the median of nothing")
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def geomean(values: Iterable[float]) -> float:
    logs = [math.log(v) for v in values]
    if not logs:
        raise ValueError("the geometric mean of nothing")
    return math.exp(sum(logs) / len(logs))


def finite_positive(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


class Comparison(BaseModel):
    change: float  # candidate / best - 1 (negative = faster, for lower-is-better metrics)
    low: float | None  # the 95% interval; None when the runs leave no spread to measure
    high: float | None
    significant: bool
    best_median: float  # BEST's typical figure (median of its runs in this comparison)
    candidate_median: float
    best_runs: int
    candidate_runs: int
    pairs: int | None = None  # set when BEST and candidate were measured together, in pairs

    def statement(self) -> str:
        how = f", {self.pairs} pairs" if self.pairs else ""
        if self.low is None or self.high is None:
            return f"{self.change:+.1%} (too few runs for an interval, not significant{how})"
        verdict = "significant" if self.significant else "within noise"
        return f"{self.change:+.1%} (95% interval {self.low:+.1%} to {self.high:+.1%}), {verdict}{how}"


def paired(best: Sequence[float], candidate: Sequence[float]) -> Comparison:
    """BEST and candidate figures of the same pairs, in pair order (best[i] ran beside candidate[i])."""
    if len(best) != len(candidate) or not best:
        raise ValueError("paired figures need the same number of runs on each side, at least one")
    if not all(finite_positive(v) for v in [*best, *candidate]):
        raise ValueError("paired figures must be finite and positive")
    # the difference of logs, not the log of the quotient: 1e-308 / 1e308 is 0 to a float, and log(0) a domain error
    logs = [math.log(c) - math.log(b) for b, c in zip(best, candidate)]
    n = len(logs)
    mean = sum(logs) / n
    low = high = None
    significant = False
    if n >= 2:
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
        half = t975(n - 1) * sd / math.sqrt(n)
        low, high = _change(mean - half, best, candidate), _change(mean + half, best, candidate)
        significant = low > 0 or high < 0
    return Comparison(
        change=_change(mean, best, candidate),
        low=low,
        high=high,
        significant=significant,
        best_median=median(best),
        candidate_median=median(candidate),
        best_runs=n,
        candidate_runs=n,
        pairs=n,
    )


def _change(log_ratio: float, best: Sequence[float], candidate: Sequence[float]) -> float:
    """exp(log_ratio) - 1, refused where it leaves the floating-point range: a change of +1e300% is
    no measurement, and an infinite one could not be recorded (JSON has no inf)."""
    try:
        change = math.expm1(log_ratio)
    except OverflowError:
        change = math.inf
    if not math.isfinite(change):
        raise FiguresOutOfRange(
            f"the figures differ beyond the floating-point range (BEST {median(best):.4g}, candidate {median(candidate):.4g})",
            hint="the metric must be a time (or rate) in one unit on both sides",
        )
    return change


def mean_interval(values: Sequence[float]) -> tuple[float, float | None, float | None]:
    """The mean of `values` with its 95% t interval (None bounds with fewer than two values)."""
    if not values:
        raise ValueError("an interval needs at least one value")
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None, None
    half = t975(n - 1) * math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1)) / math.sqrt(n)
    return mean, mean - half, mean + half


def clear_of(cmp: Comparison, threshold: float) -> bool:
    """Whether more pairs could still change the outcome: the interval holds neither -threshold nor
    +threshold (clearly faster, clearly slower, or clearly a tie within the threshold)."""
    if cmp.low is None or cmp.high is None:
        return False
    return not any(cmp.low <= edge <= cmp.high for edge in (-threshold, threshold))


def compare(best: Sequence[float], candidate: Sequence[float], seed: int = 0) -> Comparison:
    """Two independent sets of runs: the ratio of medians, with a seeded bootstrap interval."""
    if not best or not candidate:
        raise ValueError("both sides need at least one run")
    if not all(finite_positive(v) for v in [*best, *candidate]):
        raise ValueError("compared figures must be finite and positive")
    best_median = median(best)
    cand_median = median(candidate)
    change = _change(math.log(cand_median) - math.log(best_median), best, candidate)  # not the quotient: it may under- or overflow
    if len(best) < 2 or len(candidate) < 2:
        # One run each: no spread to speak of, so nothing can be called significant.
        return Comparison(
            change=change,
            low=None,
            high=None,
            significant=False,
            best_median=best_median,
            candidate_median=cand_median,
            best_runs=len(best),
            candidate_runs=len(candidate),
        )
    rng = random.Random(seed)
    ratios = sorted(median(rng.choices(candidate, k=len(candidate))) / median(rng.choices(best, k=len(best))) - 1 for _ in range(BOOTSTRAP_DRAWS))
    low, high = interval(ratios)
    if not (math.isfinite(low) and math.isfinite(high)):  # resampled medians of far-apart runs: their quotient may overflow
        raise FiguresOutOfRange(
            f"the runs' figures spread beyond the floating-point range (BEST {best_median:.4g}, candidate {cand_median:.4g})",
            hint="the metric must be a time (or rate) in one unit on both sides",
        )
    return Comparison(
        change=change,
        low=low,
        high=high,
        significant=low > 0 or high < 0,
        best_median=best_median,
        candidate_median=cand_median,
        best_runs=len(best),
        candidate_runs=len(candidate),
    )


def interval(draws: Sequence[float]) -> tuple[float, float]:
    """The central 95% of sorted bootstrap draws."""
    tail = (1 - CONFIDENCE) / 2
    return draws[int(tail * len(draws))], draws[int((1 - tail) * len(draws)) - 1]


def spread(samples: Sequence[float]) -> float:
    """Relative spread of repeated runs of one version: median absolute deviation / median."""
    if len(samples) < 2:
        return 0.0
    med = median(samples)
    return median([abs(x - med) for x in samples]) / med
