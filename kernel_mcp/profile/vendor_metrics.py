"""AMD derived metrics as the vendor defines them, per target, from data shipped in ./data.

- rocprof_compute_metrics.json: every metric of rocprof-compute's analysis configs (its panels'
  metric tables) for gfx90a, gfx942 and gfx950, the expression and unit as the vendor wrote them;
  evaluated by expressions.py on a kernel's counters and, where a metric needs them, the machine's
  figures ($cu_per_gpu, $num_xcd, ...) from the workload's sysinfo.csv.
- rocprofiler_sdk_derived.json: rocprofv3's own derived counters (counter_defs.yaml), whose values
  the profiler computes itself: a file's LDSBankConflict is passed on with the expression that made it.

The versions and licence are in each file's "source" entry and in data/SOURCES.md. A metric is
answered when the counters it reads were collected; where some of them were (and others not), or
where it needs a machine figure no input gave, it is answered without a value, naming what is missing.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from kernel_mcp.models.profile import DerivedMetric

# the package's modules by their full names: the package imports this one (see test_architecture.py)
import kernel_mcp.profile.expressions as expressions

DATA = Path(__file__).parent / "data"
SKIPPED_TABLES = {"Memory Chart"}  # the chart repeats other panels' metrics as a picture's labels
# rocprof-compute's sysinfo.csv columns that its expressions read as $name (all numeric)
SYSINFO_VARS = (
    "cu_per_gpu",
    "simd_per_cu",
    "se_per_gpu",
    "wave_size",
    "workgroup_max_size",
    "max_waves_per_cu",
    "max_sclk",
    "max_mclk",
    "cur_sclk",
    "cur_mclk",
    "total_l2_chan",
    "lds_banks_per_cu",
    "sqc_per_gpu",
    "pipes_per_gpu",
    "num_xcd",
    "num_hbm_channels",
    "hbm_bw",
)


@cache
def _compute() -> dict[str, Any]:
    return json.loads((DATA / "rocprof_compute_metrics.json").read_text())


@cache
def _sdk() -> dict[str, Any]:
    return json.loads((DATA / "rocprofiler_sdk_derived.json").read_text())


def arches() -> list[str]:
    return sorted(_compute()["arches"])


def compute_version() -> str:
    src = _compute()["source"]
    return f"rocprof-compute {src['version']} ({src['repository']} {src['commit'][:10]})"


def sdk_version() -> str:
    src = _sdk()["source"]
    return f"rocprofiler-sdk {src['version']} counter_defs.yaml ({src['repository']} {src['commit'][:10]})"


@cache
def _common() -> list[dict[str, Any]]:
    """The metrics every shipped target defines alike (same table, name and expression)."""
    per = [{(m["table"], m["name"], m["expr"]) for m in ms} for ms in _compute()["arches"].values()]
    alike = set.intersection(*per)
    first = next(iter(_compute()["arches"].values()))
    return [m for m in first if (m["table"], m["name"], m["expr"]) in alike]


def machine_vars(sysinfo: dict[str, str]) -> dict[str, float]:
    """rocprof-compute's $variables from a sysinfo.csv row (keys lower-case); non-numbers left out."""
    out = {}
    for name in SYSINFO_VARS:
        try:
            out[name] = float(sysinfo[name])
        except (KeyError, ValueError, TypeError):
            continue
    return out


def vendor_derived(
    counters: dict[str, float], arch: str | None, variables: dict[str, float] | None = None, duration_s: float | None = None
) -> list[DerivedMetric]:
    """rocprof-compute's metrics for one kernel's counters (per-dispatch means) on `arch`; with no
    arch, those every shipped target defines alike, said so in each definition."""
    if arch is not None and arch not in _compute()["arches"]:
        return []
    metrics = _compute()["arches"][arch] if arch else _common()
    where = arch or "/".join(arches())
    values = dict(counters)
    if duration_s is not None:  # the kernel's GPU time, for the expressions' End_Timestamp - Start_Timestamp (ns)
        values.setdefault("Start_Timestamp", 0.0)
        values.setdefault("End_Timestamp", duration_s * 1e9)
    out = []
    for m in metrics:
        if m["table"] in SKIPPED_TABLES:
            continue
        try:
            needed, _ = expressions.inputs(m["expr"])
        except expressions.CannotEvaluate:
            needed = set()
        collected = needed & set(counters)
        if not collected:
            continue  # none of its counters were collected: not this profile's metric
        outcome = expressions.evaluate(m["expr"], values, variables or {})
        if isinstance(outcome.value, str):
            continue  # a label (CONCAT), not a figure
        source = f"rocprof-compute {_compute()['source']['version']} {where}/{m['file']}#{m['table_id']}: {m['expr']}"
        lacks = []
        timing = [c for c in outcome.missing_counters if c in ("Start_Timestamp", "End_Timestamp")]
        missing = [c for c in outcome.missing_counters if c not in timing]
        if missing:
            lacks.append("missing counter(s) " + ", ".join(missing))
        if timing:
            lacks.append("needs the kernel's GPU time (none was read)")
        if outcome.missing_vars:
            lacks.append("needs " + ", ".join(f"${v}" for v in outcome.missing_vars) + " (rocprof-compute reads them from its sysinfo.csv)")
        if outcome.error:
            lacks.append(outcome.error)
        if not lacks and outcome.value is None:
            lacks.append("no value for these counters: the vendor's expression gives none (a zero divisor)")
        definition = (("; ".join(lacks) + " | ") if lacks else "") + source
        value = None if outcome.value is None else float(outcome.value)
        out.append(DerivedMetric(name=f"{m['table']}: {m['name']}", value=value, unit=expressions.unit_text(m["unit"]), definition=definition))
    return out


PLAIN_REDUCTION = re.compile(r"^reduce\(\w+,\s*\w+\)$")


def sdk_definition(counter: str, arch: str | None) -> str | None:
    """How rocprofv3 computed a derived counter it wrote (counter_defs.yaml), for `arch`, or for every
    gfx9 target when they agree; None for a hardware counter, and for a plain sum over instances
    (TCC_HIT_sum = reduce(TCC_HIT,sum)): a counter, not a metric."""
    entry = _sdk()["counters"].get(counter)
    if entry is None:
        return None
    defs = entry["definitions"]
    if all(PLAIN_REDUCTION.match(d["expression"].replace(" ", "")) for d in defs):
        return None
    if arch:
        chosen = next((d for d in defs if arch in d["architectures"]), None) or next((d for d in defs if "gfx9" in d["architectures"]), None)
        label = arch
    else:
        chosen = defs[0] if len({d["expression"] for d in defs}) == 1 else None
        label = "gfx9 targets (the target is unknown; only gfx9 definitions are shipped)"
    if chosen is None:
        return f"{sdk_version()}: a derived counter whose expression differs per target; the target is unknown"
    return f"{sdk_version()}, {label}: {chosen['expression']} ({entry['description'][:160]})"
