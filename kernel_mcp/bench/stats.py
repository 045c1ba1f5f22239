"""Comparing two sets of repeated measurements with an explicit confidence statement.

The estimate is the ratio of medians (robust to an outlier run); its 95% interval comes from a
bootstrap over the runs of each side (seeded, so the same data give the same statement). A
change is significant when the interval excludes zero. The decision policy on top (the noise
threshold, the same-direction-twice rule) lives with the ledger.
"""

from __future__ import annotations

import random
import statistics

from pydantic import BaseModel

BOOTSTRAP_DRAWS = 2000
CONFIDENCE = 0.95


class Comparison(BaseModel):
    change: float  # candidate / best - 1 (negative = faster, for lower-is-better metrics)
    low: float | None  # the 95% interval; None when one run a side leaves no spread to measure
    high: float | None
    significant: bool
    best_median: float
    candidate_median: float
    best_runs: int
    candidate_runs: int

    def statement(self) -> str:
        if self.low is None or self.high is None:
            return f"{self.change:+.1%} (one run a side: no interval, not significant)"
        half = (self.high - self.low) / 2
        verdict = "significant" if self.significant else "within noise"
        return f"{self.change:+.1%} ± {half:.1%}, {verdict}"


def compare(best: list[float], candidate: list[float], seed: int = 0) -> Comparison:
    if not best or not candidate:
        raise ValueError("both sides need at least one run")
    best_median = statistics.median(best)
    cand_median = statistics.median(candidate)
    change = cand_median / best_median - 1
    if len(best) < 2 or len(candidate) < 2:
        # One run each: no spread to speak of, so nothing can be called significant.
        return Comparison(change=change, low=None, high=None, significant=False, best_median=best_median,
                          candidate_median=cand_median, best_runs=len(best), candidate_runs=len(candidate))
    rng = random.Random(seed)
    ratios = []
    for _ in range(BOOTSTRAP_DRAWS):
        b = statistics.median(rng.choices(best, k=len(best)))
        c = statistics.median(rng.choices(candidate, k=len(candidate)))
        ratios.append(c / b - 1)
    ratios.sort()
    tail = (1 - CONFIDENCE) / 2
    low = ratios[int(tail * BOOTSTRAP_DRAWS)]
    high = ratios[int((1 - tail) * BOOTSTRAP_DRAWS) - 1]
    return Comparison(change=change, low=low, high=high, significant=low > 0 or high < 0, best_median=best_median,
                      candidate_median=cand_median, best_runs=len(best), candidate_runs=len(candidate))


def spread(samples: list[float]) -> float:
    """Relative spread of repeated runs of one version: median absolute deviation / median."""
    if len(samples) < 2:
        return 0.0
    med = statistics.median(samples)
    return statistics.median(abs(x - med) for x in samples) / med
