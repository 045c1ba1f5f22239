"""The experiment's history as a picture: the metric of each config class over the attempts.

Each attempt's median per class is a point (hollow when it was not kept, a cross when it was wrong,
filled when it was kept); a step line per class is BEST: the figure of the latest kept attempt at
each point of the history. `history_png` takes the ledger's own records and returns PNG bytes, so
the experiment_log tool and a report page draw the same chart.

Drawn with matplotlib's object API on the Agg canvas, never pyplot: no global figure state and no
display, in a server that may draw for several requests.

Class names are the benchmark CSV's cells: every text drawn is plain text (no mathtext, so a `$` is
a dollar sign; no TeX, whatever the user's matplotlibrc says), on one line, and the legend is given
its entries explicitly, so a class named `_x` is not left out as matplotlib leaves out `_` labels.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from kernel_mcp.errors import BackendMissing
from kernel_mcp.ledger.state import Attempt, Experiment
from kernel_mcp.untrusted import inline

MAX_CLASSES = 8  # beyond this a legend and its colours stop telling the lines apart
PLAIN_TEXT = {"usetex": False, "parse_math": False}
LOG_SCALE_RANGE = 20.0  # classes whose figures differ more than this share a readable axis only on a log scale


def _figure(width: float, height: float):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise BackendMissing("matplotlib is needed for the experiment chart", hint="pip install matplotlib") from None
    return Figure(figsize=(width, height), dpi=100)


def drawn_classes(attempts: Sequence[Attempt]) -> tuple[list[str], int]:
    """The classes the chart draws (those of the first attempt with figures, the baseline, in its
    order; then any others), at most MAX_CLASSES, and how many there are in all."""
    seen: dict[str, None] = {}
    for attempt in attempts:
        for key, run in attempt.figures.items():
            if run.samples:
                seen.setdefault(key)
    names = list(seen)
    return names[:MAX_CLASSES], len(names)


def best_steps(attempts: Sequence[Attempt], key: str) -> tuple[list[int], list[float]]:
    """BEST's figure for one class along the history: it changes at each kept attempt and holds
    until the last attempt drawn."""
    xs: list[int] = []
    ys: list[float] = []
    for attempt in attempts:
        run = attempt.figures.get(key)
        if attempt.outcome == "kept" and run is not None and run.samples:
            xs.append(attempt.id)
            ys.append(run.median)
    if xs and attempts and attempts[-1].id > xs[-1]:
        xs.append(attempts[-1].id)
        ys.append(ys[-1])
    return xs, ys


def history_png(experiment: Experiment, attempts: Sequence[Attempt], metric: str = "metric") -> bytes:
    """PNG bytes of the chart of `attempts` (any order; drawn by id) of `experiment`."""
    fig = history_figure(experiment, attempts, metric)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def history_figure(experiment: Experiment, attempts: Sequence[Attempt], metric: str = "metric"):
    """The chart as a matplotlib Figure, drawn but not yet rendered."""
    attempts = sorted(attempts, key=lambda a: a.id)
    classes, total = drawn_classes(attempts)
    fig = _figure(8.0, 4.8)
    ax = fig.subplots()
    colours = [f"C{i}" for i in range(10)]
    values: list[float] = []
    lines, names = [], []
    for index, key in enumerate(classes):
        colour = colours[index % len(colours)]
        kept: tuple[list[int], list[float]] = ([], [])  # attempt ids, medians
        other: tuple[list[int], list[float]] = ([], [])
        wrong: tuple[list[int], list[float]] = ([], [])
        for attempt in attempts:
            run = attempt.figures.get(key)
            if run is None or not run.samples or not math.isfinite(run.median):
                continue
            group = kept if attempt.outcome == "kept" else (wrong if not run.correct else other)
            group[0].append(attempt.id)
            group[1].append(run.median)
            values.append(run.median)
        xs, ys = best_steps(attempts, key)
        lines += ax.plot(xs, ys, drawstyle="steps-post", color=colour, linewidth=1.6)
        names.append(inline(key)[:40])
        ax.scatter(*kept, color=colour, s=46, zorder=3, edgecolors="black", linewidths=0.6)
        ax.scatter(*other, facecolors="none", edgecolors=colour, s=26, zorder=2)
        ax.scatter(*wrong, color=colour, marker="x", s=30, zorder=2)
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > LOG_SCALE_RANGE:
        ax.set_yscale("log")
    kept_count = sum(1 for a in attempts if a.outcome == "kept")
    shown = f"{len(classes)} of {total} classes" if total > len(classes) else f"{total} class{'es' if total != 1 else ''}"
    ax.set_title(f"experiment {experiment.tag}: {inline(metric)} per config class ({shown}), lower is better", fontsize=10, **PLAIN_TEXT)
    ax.set_xlabel(f"attempt ({len(attempts)} drawn, {kept_count} kept; BEST {experiment.best_commit[:10]})", **PLAIN_TEXT)
    ax.set_ylabel(inline(metric), **PLAIN_TEXT)
    ax.grid(True, alpha=0.3)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # attempts are numbered: no tick at 1.5
    if not classes:
        ax.text(0.5, 0.5, "no measured figures yet", transform=ax.transAxes, ha="center", va="center")
    else:
        # the markers' meaning once, in grey, after the classes' lines
        markers = [
            ax.scatter([], [], color="grey", s=46, edgecolors="black", linewidths=0.6),
            ax.scatter([], [], facecolors="none", edgecolors="grey", s=26),
            ax.scatter([], [], color="grey", marker="x", s=30),
        ]
        legend = ax.legend([*lines, *markers], [*names, "kept", "not kept", "wrong results"], fontsize=7, loc="best", title="line: BEST", title_fontsize=7)
        for text in legend.get_texts():
            text.set(**PLAIN_TEXT)
    fig.tight_layout()
    return fig
