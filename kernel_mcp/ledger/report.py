"""An experiment as one self-contained HTML page, for the person who reviews what the agent kept.

`kernel-mcp report TAG` writes it: the experiment's facts, the history chart (ledger/chart.py,
inlined as a data: URI), the table of kept steps (commit, hypothesis, change with its interval,
per class), and per keep the evidence the decision stood on (pairs and runs, timing source,
clocks, why it was kept). No script, no external file: the page opens from disk, in a mail, or
attached to a review. Every text from the ledger is escaped (hypotheses are an agent's words).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from html import escape
from pathlib import Path

from kernel_mcp.bench.stats import Comparison
from kernel_mcp.errors import KernelMcpError
from kernel_mcp.ledger.gitops import check_tag
from kernel_mcp.ledger.state import Attempt, Experiment

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;width:100%;margin:.5em 0}th,td{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}code{font-size:.95em}
.faster{color:#06612a}.slower{color:#9b1c1c}.muted{color:#666}img{max-width:100%;border:1px solid #ddd}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:600}
"""


def _interval(c: Comparison | None) -> str:
    if c is None:
        return "<span class=muted>n/a</span>"
    css = "faster" if c.significant and c.change < 0 else "slower" if c.significant and c.change > 0 else "muted"
    return f"<span class={css}>{escape(c.statement())}</span>"


def _short(sha: str | None) -> str:
    return f"<code>{escape(sha[:10])}</code>" if sha else "<span class=muted>none</span>"


def _evidence(attempt: Attempt) -> str:
    ev = attempt.evidence
    facts = [
        ("decision", attempt.decision),
        ("why", "; ".join(attempt.reasons) or "-"),
        ("timing source", ev.source or "-"),
        ("keep metric", ev.keep_metric or "-"),
        ("pairs", f"{ev.pairs or '-'} benchmark, {ev.profiler_pairs or 0} profiled" + (f"; {ev.stopped}" if ev.stopped else "")),
        ("runs", str(len(ev.runs))),
        ("wall time", f"{ev.wall_s:.1f} s" if ev.wall_s is not None else "-"),
        ("clocks", ", ".join(f"{k} {v}" for k, v in (ev.clocks or {}).items() if v is not None) or "not recorded"),
        ("GPU time", ev.gpu_time.statement() if ev.gpu_time else "-"),
        ("measured code", ev.candidate_commit or "-"),
    ]
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in facts)
    per_class = "".join(f"<tr><td><code>{escape(key)}</code></td><td>{_interval(c)}</td></tr>" for key, c in attempt.comparisons.items())
    table = f"<table><tr><th>config class</th><th>change against BEST</th></tr>{per_class}</table>" if per_class else ""
    return f"<h3 id=attempt-{attempt.id}>Attempt {attempt.id}: {escape(attempt.hypothesis)}</h3><dl>{rows}</dl>{table}"


def render(experiment: Experiment, attempts: Sequence[Attempt], chart_png: bytes | None, metric: str) -> str:
    attempts = sorted(attempts, key=lambda a: a.id)  # the story in the order it happened
    kept = [a for a in attempts if a.outcome == "kept"]
    head = (
        f"<h1>Experiment {escape(experiment.tag)}</h1><dl>"
        f"<dt>status</dt><dd>{escape(experiment.status)}{' (' + escape(experiment.stop_reason) + ')' if experiment.stop_reason else ''}</dd>"
        f"<dt>started</dt><dd>{escape(experiment.created)}</dd><dt>baseline</dt><dd>{_short(experiment.base_commit)}</dd>"
        f"<dt>BEST</dt><dd>{_short(experiment.best_commit)}{f' (attempt {experiment.best_attempt})' if experiment.best_attempt else ''}</dd>"
        f"<dt>attempts</dt><dd>{len(attempts)}, {len(kept)} kept</dd><dt>metric</dt><dd>{escape(metric)}</dd></dl>"
    )
    picture = (
        (
            f'<h2>History</h2><img alt="{escape(metric)} per config class over the attempts, kept ones filled" '
            f'src="data:image/png;base64,{base64.b64encode(chart_png).decode()}">'
        )
        if chart_png
        else "<h2>History</h2><p class=muted>No chart: nothing was measured yet, or matplotlib is not installed.</p>"
    )
    rows = "".join(
        f"<tr><td class=num><a href=#attempt-{a.id}>{a.id}</a></td><td>{_short(a.commit_sha)}</td><td>{escape(a.hypothesis)}</td>"
        f"<td>{escape(a.target_class or 'all classes')}</td><td>{_interval(a.evidence.overall)}</td></tr>"
        for a in kept
    )
    steps = (
        (f"<h2>Kept steps</h2><table><tr><th>attempt</th><th>commit</th><th>hypothesis</th><th>target</th><th>change</th></tr>{rows}</table>")
        if kept
        else "<h2>Kept steps</h2><p class=muted>Nothing kept yet.</p>"
    )
    others = [a for a in attempts if a.outcome != "kept"]
    other_rows = "".join(
        f"<tr><td class=num>{a.id}</td><td>{escape(a.outcome)}</td><td>{escape(a.decision)}</td><td>{escape(a.hypothesis)}</td></tr>" for a in others
    )
    rest = f"<h2>Not kept</h2><table><tr><th>attempt</th><th>outcome</th><th>decision</th><th>hypothesis</th></tr>{other_rows}</table>" if others else ""
    decided = [a for a in kept if a.decision != "baseline"]  # the baseline was measured, not decided
    evidence = "<h2>Evidence per keep</h2>" + "".join(_evidence(a) for a in decided) if decided else ""
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>kernel-mcp: {escape(experiment.tag)}</title>"
        f"<style>{STYLE}</style></head><body>{head}{picture}{steps}{evidence}{rest}</body></html>"
    )


def write_report(state_dir: Path, experiment: Experiment, attempts: Sequence[Attempt], metric: str) -> Path:
    """The page in the workspace's state folder (.kernel-mcp/reports/), named after the tag; its path."""
    from kernel_mcp.ledger import chart

    try:
        png = chart.history_png(experiment, attempts, metric=metric) if attempts else None
    except KernelMcpError:  # no matplotlib: the page says there is no chart
        png = None
    folder = state_dir / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{check_tag(experiment.tag)}.html"  # a tag is a checked name: no separator, no dot-dot
    path.write_text(render(experiment, attempts, png, metric), encoding="utf-8")
    return path


def report(ws, tag: str | None) -> Path:
    """`kernel-mcp report [TAG]`: the page of an experiment (the latest without a tag); its path."""
    from kernel_mcp.ledger.core import Ledger

    ledger = Ledger(ws)
    experiment = ledger.experiment(tag)  # an unknown tag is refused with the tags that exist
    metric = ws.config.benchmark.metric if ws.config.benchmark else "metric"
    return write_report(ws.state_dir, experiment, ledger.store.attempts(experiment.tag), metric)
