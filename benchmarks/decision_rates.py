"""How often the keep rule decides wrong: the recorded device trials replayed, and a simulation
calibrated on them.

    python benchmarks/decision_rates.py [--trials 2000] [--seed 1]

1. Replay: every A/A and A/B evaluation recorded on the device (benchmarks/data/, the reduced conv3d
   benchmark on H200s, csv keep metric, sealed runs) gave its overall and per-class paired comparison;
   the rule of today (`ledger.decide.decide`) decides each of them again. An A/A trial must not be kept
   or split; an A/B trial (+2% of work) must be a measured regression.
2. Simulation: each class's run-to-run noise per pair is taken from those A/A trials (the spread their
   intervals imply); evaluations are drawn pair by pair with the ledger's own stopping rule
   (min_pairs 3, max_pairs 10, `clear_of`, classes not yet shown safe) and decided by `decide`.
   Scenarios: A/A, a 2% slowdown, a 3%, a 1.5% and a 0.5% global gain, a 5% gain of one class with the
   other 5% slower (a split), a 3% gain of a target class while the other class stays put; at the
   device's noise and at the noise of noisier benchmarks (1% and 3% per pair).

Prints, per scenario, the share of each decision and the rates that matter: false keep, false
discard (a real gain not kept), missed split, missed regression.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from kernel_mcp.bench import BenchRun, ClassRun  # noqa: E402
from kernel_mcp.bench.stats import Comparison, clear_of, geomean, paired, t975  # noqa: E402
from kernel_mcp.ledger.decide import decide, unsettled_classes  # noqa: E402

DATA = REPO / "benchmarks" / "data" / "device-aa-ab-2026-11-26.json"
NOISE, SEVERE, MIN_PAIRS, MAX_PAIRS = 0.01, 0.05, 3, 10  # the workspace defaults
STATEMENT = re.compile(r"([+-][\d.]+)% \(95% interval ([+-][\d.]+)% to ([+-][\d.]+)%\), (significant|within noise), (\d+) pairs")
KEEPS = ("keep", "suspicious")


def comparison(statement: str) -> Comparison:
    """A recorded statement ('+0.1% (95% interval -0.4% to +0.6%), within noise, 3 pairs') as the Comparison it printed."""
    found = STATEMENT.search(statement)
    if found is None:
        raise ValueError(f"not a paired statement: {statement!r}")
    change, low, high = (float(found[i]) / 100 for i in (1, 2, 3))
    pairs = int(found[5])
    return Comparison(
        change=change,
        low=low,
        high=high,
        significant=found[4] == "significant",
        best_median=100.0,
        candidate_median=100.0 * (1 + change),
        best_runs=pairs,
        candidate_runs=pairs,
        pairs=pairs,
    )


def candidate(keys: list[str]) -> BenchRun:
    return BenchRun(
        label="candidate",
        metric="us",
        correctness="err == 0",
        class_columns=["shape"],
        inferred_classes=False,
        classes=[ClassRun(key=k, rows=1, correct=True, failing_rows=0, worst_error=0.0, samples=[1.0]) for k in keys],
        seeds=[0],
        repeats=1,
        gpu="replayed",
        duration_s=0.0,
    )


def replay() -> dict[str, Counter]:
    runs = json.loads(DATA.read_text())["runs"]
    found: dict[str, Counter] = {"aa": Counter(), "ab": Counter()}
    for run in runs:
        for trial in run["trials"]:
            per_class = {k: comparison(v) for k, v in trial["per_class"].items()}
            verdict = decide(candidate(list(per_class)), per_class, comparison(trial["overall"]), None, NOISE, 0, 0, None, 3.0, SEVERE)
            found[run["kind"]][verdict.decision + (" (regression)" if verdict.regression else "")] += 1
    return found


def calibrated_noise() -> list[float]:
    """Each A/A class interval's implied standard deviation of one pair's log ratio."""
    sds = []
    for run in json.loads(DATA.read_text())["runs"]:
        if run["kind"] != "aa":
            continue
        for trial in run["trials"]:
            for statement in trial["per_class"].values():
                c = comparison(statement)
                assert c.low is not None and c.high is not None and c.pairs
                half = (math.log1p(c.high) - math.log1p(c.low)) / 2
                sds.append(half * math.sqrt(c.pairs) / t975(c.pairs - 1))
    return sorted(sds)


def simulate(rng: random.Random, truth: dict[str, float], sd: dict[str, float], target: str | None) -> str:
    """One evaluation drawn pair by pair with the ledger's stopping rule, decided by decide()."""
    keys = list(truth)
    best: dict[str, list[float]] = {k: [] for k in keys}
    cand: dict[str, list[float]] = {k: [] for k in keys}
    comparisons: dict[str, Comparison] = {}
    script = None
    for pair in range(1, MAX_PAIRS + 1):
        for k in keys:
            base = 100.0 * math.exp(rng.gauss(0, 0.002))  # BEST's own drift from pair to pair cancels in the pairs
            best[k].append(base)
            cand[k].append(base * math.exp(math.log1p(truth[k]) + rng.gauss(0, sd[k])))
        chosen = [k for k in keys if target is None or k == target]
        script = paired([geomean([best[k][i] for k in chosen]) for i in range(pair)], [geomean([cand[k][i] for k in chosen]) for i in range(pair)])
        comparisons = {k: paired(best[k], cand[k]) for k in keys}
        claims_gain = script.significant and script.change < 0
        unsettled = unsettled_classes(comparisons, target, NOISE, SEVERE) if claims_gain else []
        if pair >= MIN_PAIRS and clear_of(script, NOISE) and not unsettled:
            break
    verdict = decide(candidate(keys), comparisons, script, target, NOISE, 0, 0, None, 3.0, SEVERE)
    return verdict.decision + (" (regression)" if verdict.regression else "")


SCENARIOS = {
    # name: (true change per class, target class, what a right decision is)
    "A/A (no change)": ({"a": 0.0, "b": 0.0}, None, lambda d: d not in KEEPS and not d.startswith("split")),
    "2% slower everywhere": ({"a": 0.02, "b": 0.02}, None, lambda d: d == "discard (regression)"),
    "3% faster everywhere": ({"a": -0.03, "b": -0.03}, None, lambda d: d in KEEPS),
    "1.5% faster everywhere": ({"a": -0.015, "b": -0.015}, None, lambda d: d in KEEPS),
    # a real gain under the 1% threshold: kept only when its estimate came out past the threshold (not wrong, but luck)
    "0.5% faster everywhere (under the threshold)": ({"a": -0.005, "b": -0.005}, None, lambda d: not d.startswith(("discard (regression)", "split"))),
    "class a 5% faster, class b 5% slower": ({"a": -0.05, "b": 0.05}, None, lambda d: d == "split-suggested"),
    "target a 3% faster, b unchanged": ({"a": -0.03, "b": 0.0}, "a", lambda d: d in KEEPS),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    found = replay()
    print("Replay of the recorded device evaluations through today's rule:")
    for kind, counts in found.items():
        print(f"  {kind}: {sum(counts.values())} trials: " + ", ".join(f"{d} {n}" for d, n in counts.most_common()))
    sds = calibrated_noise()
    median_sd, high_sd = sds[len(sds) // 2], sds[int(len(sds) * 0.9)]
    print(f"Noise per pair (log ratio sd) implied by {len(sds)} A/A class intervals: median {median_sd:.2%}, 90th percentile {high_sd:.2%}")
    rng = random.Random(args.seed)
    # the device's own noise, and the noisier benchmarks other users bring (1% and 3% per pair)
    for label, sd_value in (("median noise", median_sd), ("90th-percentile noise", high_sd), ("a noisier benchmark", 0.01), ("a much noisier benchmark", 0.03)):
        print(f"Simulation, {args.trials} evaluations per scenario, {label} ({sd_value:.2%} per pair and class):")
        for name, (truth, target, right) in SCENARIOS.items():
            counts = Counter(simulate(rng, truth, dict.fromkeys(truth, sd_value), target) for _ in range(args.trials))
            wrong = sum(n for d, n in counts.items() if not right(d))
            print(f"  {name}: wrong {wrong / args.trials:.2%}; " + ", ".join(f"{d} {n / args.trials:.1%}" for d, n in counts.most_common()))


if __name__ == "__main__":
    main()
