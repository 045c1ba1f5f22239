"""AMD derived metrics as the vendor defines them, per target, from data shipped in ./data.

- rocprof_compute_metrics.json: every metric of rocprof-compute's analysis configs (its panels'
  metric tables) for gfx90a, gfx942 and gfx950, the expression and unit as the vendor wrote them;
  evaluated by expressions.py on a kernel's counters and, where a metric needs them, the machine's
  figures ($cu_per_gpu, $num_xcd, ...) from the workload's sysinfo.csv, else from the GPU agent
  rocprofv3 recorded (agent_info.csv, rocpd_info_agent) or the hardware tables, each figure named with
  its source (machine_figures); unknown ones are said so. As rocprof-compute's analysis
  does, each metric is computed per dispatch and then reduced over the kernel's dispatches (its
  AVG/MIN/MAX), from the per-dispatch tables the readers keep (tables.DispatchTable); where an input
  gives no dispatch rows (a rocpd database of over 2 million counter rows), on the kernel's mean
  counters, and the definition says so.
- rocprofiler_sdk_derived.json: rocprofv3's own derived counters (counter_defs.yaml), whose values
  the profiler computes itself: a file's LDSBankConflict is passed on with the expression that made it.

The versions and licence are in each file's "source" entry and in data/SOURCES.md. A metric is
answered when the counters it reads were collected; where some of them were (and others not), or
where it needs a machine figure no input gave, it is answered without a value, naming what is missing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any


from kernel_mcp.arch_registry import ProductEntry
from kernel_mcp.errors import KernelMcpError
from kernel_mcp.models.profile import DerivedMetric

# the package's modules by their full names: the package imports this one (see test_architecture.py)
import kernel_mcp.profile.tables as tables

if TYPE_CHECKING:  # types only: listing the tools must not load numpy or pandas
    import numpy as np
    import pandas as pd

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


@cache
def _read_by_metrics() -> frozenset[str]:
    """Every counter a shipped expression reads (per-instance ones such as TCC_HIT[3] included)."""
    import kernel_mcp.profile.expressions as expressions  # numpy: loaded where metrics are computed

    names: set[str] = set()
    for metrics in _compute()["arches"].values():
        for m in metrics:
            try:
                names |= expressions.inputs(m["expr"])[0]
            except expressions.CannotEvaluate:
                continue
    return frozenset(names)


def wanted(column: object) -> bool:
    """Whether a per-dispatch table keeps a column: a counter some shipped metric reads, or a level's
    accumulator (SQ_LEVEL_WAVES_ACCUM: rocprof-compute reads it as SQ_ACCUM_PREV_HIRES of that level)."""
    return isinstance(column, str) and (column in _read_by_metrics() or column.endswith("_ACCUM"))


@cache
def levels() -> frozenset[str]:
    """The tables other than pmc_perf that some metric reads (its coll_level: SQ_LEVEL_WAVES, ...)."""
    return frozenset(m["coll_level"] for ms in _compute()["arches"].values() for m in ms if m.get("coll_level"))


LAUNCH = frozenset(tables.VENDOR_NAMES.values())  # dispatch facts and times, not counters


@dataclass
class KernelColumns:
    """A kernel's counters per dispatch: table name (tables.PMC, or a coll_level) -> column -> values."""

    tables: dict[str, dict[str, np.ndarray]]
    dispatches: int
    accum: bool
    passes: int  # files of different counters joined per dispatch


def kernel_columns(sources: list[tables.DispatchTable], kernel: str) -> KernelColumns | None:
    """The kernel's rows of every per-dispatch table. Files of the same counters (processes) follow
    one another; files of different counters (passes, each a re-run) are joined per dispatch the way
    rocprof-compute joins its passes (src/rocprof_compute_profile/profiler_base.py, join type grid:
    the n-th dispatch of a kernel and grid size in one pass is the n-th in the other), inner."""
    import pandas as pd

    groups: dict[frozenset[str], list[tuple[tables.DispatchTable, np.ndarray]]] = {}
    for t in sources:
        mask = (t.kernels.astype(str) == kernel).to_numpy()
        if mask.any():
            groups.setdefault(frozenset(t.tables[tables.PMC].columns), []).append((t, mask))
    if not groups:
        return None
    joined: list[tuple[dict[str, pd.DataFrame], bool]] = []
    for members in groups.values():
        names = set.intersection(*(set(t.tables) for t, _ in members))
        frames = {n: pd.concat([t.tables[n][mask[: len(t.tables[n])]] for t, mask in members], ignore_index=True) for n in names}
        joined.append((frames, any(t.accum for t, _ in members)))
    frames, accum = joined[0]
    if len(joined) > 1:
        merged = _keyed(frames[tables.PMC])
        for other, other_accum in joined[1:]:
            extra = _keyed(other[tables.PMC])
            merged = merged.merge(extra[[c for c in extra.columns if c not in merged.columns or c == "_key"]], on="_key", how="inner")
            accum = accum or other_accum
        frames = {tables.PMC: merged.drop(columns="_key")}  # a pass's own tables cannot follow a join
    pmc = frames[tables.PMC]
    return KernelColumns({n: {str(c): f[c].to_numpy(dtype="float64") for c in f.columns} for n, f in frames.items()}, len(pmc), accum, len(joined))


def _keyed(frame: pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    grid = frame["Grid_Size"].astype(str) if "Grid_Size" in frame.columns else pd.Series("", index=frame.index)
    return frame.assign(_key=grid + "#" + grid.groupby(grid).cumcount().astype(str))


@dataclass
class Machine:
    """The machine figures ($cu_per_gpu, $max_sclk, ...) the vendor's expressions read, each with
    where it came from: (the file or table, the field of it, or how it was derived; may be empty)."""

    values: dict[str, float]
    sources: dict[str, tuple[str, str]]

    def merge(self, other: Machine) -> Machine:
        """These figures, and `other`'s for those not known here."""
        extra = {k: v for k, v in other.values.items() if k not in self.values}
        return Machine({**self.values, **extra}, {**self.sources, **{k: other.sources[k] for k in extra}})

    def note(self) -> str:
        by_source: dict[str, list[str]] = {}
        for k in NEEDED_VARS:
            if k in self.values:
                where, what = self.sources[k]
                by_source.setdefault(where, []).append(f"${k} {self.values[k]:g}" + (f" ({what})" if what else ""))
        unknown = [f"${k}" for k in NEEDED_VARS if k not in self.values]
        return (
            "machine figures of the vendor's expressions: "
            + ("; ".join(f"from {where}: {', '.join(items)}" for where, items in by_source.items()) or "none known")
            + ("; unknown: " + ", ".join(unknown) + " (no input gives them; the metrics that need them say so)" if unknown else "")
        )


# the variables rocprof-compute's own analysis reads (src/utils/parser.py eval_metric), cur_* aside: unused
NEEDED_VARS = tuple(v for v in SYSINFO_VARS if v not in ("cur_sclk", "cur_mclk", "hbm_bw"))


def _number(value: Any) -> float | None:
    """A machine figure; 0 and blanks are unknown, as rocprof-compute reads them ('not available in sysinfo.csv')."""
    import numpy as np

    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) and number != 0 else None


def machine_vars(sysinfo: dict[str, str], label: str = "sysinfo.csv") -> Machine:
    """rocprof-compute's $variables from a workload's sysinfo.csv row (keys lower-case)."""
    values = {name: v for name in SYSINFO_VARS if (v := _number(sysinfo.get(name))) is not None}
    return Machine(values, {name: (label, "") for name in values})


# rocprofv3's agent_info.csv column (rocpd: the same field of rocpd_info_agent.extdata) for each figure
# rocprof-compute takes from rocminfo (rocprof_compute_soc/soc_base.py). Both read the same KFD node
# properties: rocminfo prints ROCr's agent info (projects/rocminfo/rocminfo.cc), which ROCr takes from
# them (rocr-runtime amd_gpu_agent.cpp GetInfo: COMPUTE_UNIT_COUNT = simd_count / simd_per_cu,
# NUM_SHADER_ENGINES = NumShaderBanks = array_count / simd_arrays_per_engine (libhsakmt topology.c),
# MAX_CLOCK_FREQUENCY = max_engine_clk_fcompute, NUM_XCC = num_xcc), and rocprofiler-sdk computes the
# agent's fields from them the same way (source/lib/rocprofiler-sdk/agent.cpp). ROCm/rocm-systems 1b1610fc.
AGENT_FIELDS = {
    "cu_per_gpu": "cu_count",
    "simd_per_cu": "simd_per_cu",
    "se_per_gpu": "num_shader_banks",
    "wave_size": "wave_front_size",
    "workgroup_max_size": "workgroup_max_size",
    "max_waves_per_cu": "max_waves_per_cu",
    "max_sclk": "max_engine_clk_fcompute",
    "num_xcd": "num_xcc",
}


def machine_from_agent(agent: dict[str, Any], arch: str | None, label: str) -> Machine:
    """The figures rocprof-compute would have put in sysinfo.csv, from a GPU agent's row (keys
    lower-case) of rocprofv3's agent_info.csv or rocpd_info_agent's extdata, and what it derives from
    them the way it does (src/utils/specs.py total_sqc and total_l2_banks, the soc constants)."""
    values: dict[str, float] = {}
    sources: dict[str, tuple[str, str]] = {}
    for name, column in AGENT_FIELDS.items():
        if (v := _number(agent.get(column))) is not None:
            values[name], sources[name] = v, (label, column)
    _derived(values, sources, arch)
    return Machine(values, sources)


def _derived(values: dict[str, float], sources: dict[str, tuple[str, str]], arch: str | None) -> None:
    import numpy as np

    if "cu_per_gpu" in values and "se_per_gpu" in values:
        # specs.py total_sqc: one SQC per two CUs of a shader engine, rounded up (MI50/MI100: per three)
        values["sqc_per_gpu"] = float(np.ceil(values["cu_per_gpu"] / values["se_per_gpu"] / 2) * values["se_per_gpu"])
        sources["sqc_per_gpu"] = ("rocprof-compute's specs.py", "total_sqc of the CUs and shader engines")
    # rocprof-compute's own per-target constants (soc_<arch>.py: lds_banks_per_cu, pipes_per_gpu, and _l2_banks, the
    # L2 channels of one XCD, which make total_l2_chan = _l2_banks x XCDs), shipped in the metrics data
    constants = _compute().get("soc", {}).get(arch or "")
    if constants:
        for name in ("lds_banks_per_cu", "pipes_per_gpu"):
            values[name], sources[name] = float(constants[name]), (f"rocprof-compute's soc_{arch}.py", "")
        if "num_xcd" in values:
            values["total_l2_chan"] = constants["l2_banks"] * values["num_xcd"]
            sources["total_l2_chan"] = (f"rocprof-compute's soc_{arch}.py", f"_l2_banks {constants['l2_banks']} per XCD x XCDs")


# hw_spec figure (docs_index/hardware) for each variable: the arch's and, where one is known, the product's
SPEC_FIGURES = {
    "cu_per_gpu": "compute_units",
    "simd_per_cu": "simds_per_cu",
    "wave_size": "wave_size",
    "workgroup_max_size": "max_workgroup_size",
    "max_waves_per_cu": "max_waves_per_cu",
    "max_sclk": "peak_engine_clock_mhz",
    "num_xcd": "xcds",
}


def machine_from_spec(figures: dict[str, Any], arch: str | None, label: str) -> Machine:
    """Figures from the project's hardware tables (`figures`: name -> Figure, with .value) for `label`
    (the product, or the arch alone: then no counts or clocks)."""
    values: dict[str, float] = {}
    sources: dict[str, tuple[str, str]] = {}
    for name, figure in SPEC_FIGURES.items():
        entry = figures.get(figure)
        if entry is not None and (v := _number(getattr(entry, "value", None))) is not None:
            values[name], sources[name] = v, (f"hw_spec {label}", figure)
    _derived(values, sources, arch)
    return Machine(values, sources)


def machine_figures(
    arch: str | None, known: Machine, agents: list[tuple[str, dict[str, str]]], product: str | ProductEntry | None
) -> tuple[Machine, list[str]]:
    """`known`, then for the figures still unknown the GPU agents of `arch` (agent_info rows, by
    file; used when they agree), then the hardware tables of `product` (or of the arch alone)."""
    notes = []
    machine = known
    mine = [(label, row) for label, row in agents if arch is None or row.get("name", "").strip() == arch]
    figures = {tuple(sorted(machine_from_agent(row, arch, "").values.items())) for _, row in mine}
    if len(figures) == 1:
        machine = machine.merge(machine_from_agent(mine[0][1], arch, mine[0][0]))
    elif figures:
        notes.append(f"the agent_info files list {arch or 'GPU'} agents of different figures (CUs, clocks): none is taken as the machine's")
    if arch is not None:
        from kernel_mcp.hardware import load_spec  # here: the hardware tables load only when a figure is needed

        try:
            spec = load_spec(arch, product, reference=False)
            machine = machine.merge(machine_from_spec(spec.figures, arch, spec.product_label or arch))
        except KernelMcpError:
            pass  # no table for this target (or a product of another): its figures stay unknown
    return machine, notes


def vendor_derived(
    counters: dict[str, float],
    arch: str | None,
    variables: dict[str, float] | None = None,
    duration_s: float | None = None,
    columns: KernelColumns | None = None,
) -> list[DerivedMetric]:
    """rocprof-compute's metrics for one kernel on `arch`: per dispatch from `columns`, else on its
    per-dispatch mean `counters`; with no arch, those every shipped target defines alike, said so in
    each definition."""
    import kernel_mcp.profile.expressions as expressions  # numpy: loaded where metrics are computed

    if arch is not None and arch not in _compute()["arches"]:
        return []
    metrics = _compute()["arches"][arch] if arch else _common()
    where = arch or "/".join(arches())
    pmc: dict[str, Any] = dict(columns.tables[tables.PMC]) if columns else dict(counters)
    if duration_s is not None and "End_Timestamp" not in pmc:  # the kernel's GPU time, for the expressions' End_Timestamp - Start_Timestamp (ns)
        pmc.update(Start_Timestamp=0.0, End_Timestamp=duration_s * 1e9)
    collected = set(counters) | (set(pmc) - LAUNCH)
    how = "" if columns else " (on the kernel's mean counters: no per-dispatch rows were read)"
    out = []
    for m in metrics:
        if m["table"] in SKIPPED_TABLES:
            continue
        try:
            needed, _ = expressions.inputs(m["expr"])
        except expressions.CannotEvaluate:
            needed = set()
        level = m.get("coll_level")
        values = _level_values(pmc, columns, level) if level else pmc
        if not needed & (collected | (set(values) - LAUNCH)):
            continue  # none of its counters were collected: not this profile's metric
        outcome = expressions.evaluate(m["expr"], values, variables or {}, pmc)
        if isinstance(outcome.value, str):
            continue  # a label (CONCAT), not a figure
        source = f"rocprof-compute {_compute()['source']['version']} {where}/{m['file']}#{m['table_id']}: {m['expr']}"
        lacks = []
        timing = [c for c in outcome.missing_counters if c in ("Start_Timestamp", "End_Timestamp")]
        missing = [c for c in outcome.missing_counters if c not in timing]
        if missing:
            lacks.append(
                "missing counter(s) "
                + ", ".join(missing)
                + (
                    (f" (not in the {level} table read)" if columns and level in columns.tables else f" (rocprof-compute collects it in its {level} pass)")
                    if level and "SQ_ACCUM_PREV_HIRES" in missing
                    else ""
                )
            )
        if timing:
            lacks.append("needs the kernel's GPU time (none was read)")
        if outcome.missing_vars:
            lacks.append("needs " + ", ".join(f"${v}" for v in outcome.missing_vars) + " (unknown: rocprof-compute reads them from its sysinfo.csv)")
        if outcome.error:
            lacks.append(outcome.error)
        if not lacks and outcome.value is None:
            lacks.append("no value for these counters: the vendor's expression gives none (a zero divisor)")
        definition = (("; ".join(lacks) + " | ") if lacks else "") + source + how
        value = None if outcome.value is None else float(outcome.value)
        out.append(DerivedMetric(name=f"{m['table']}: {m['name']}", value=value, unit=expressions.unit_text(m["unit"]), definition=definition))
    return out


def _level_values(pmc: dict[str, Any], columns: KernelColumns | None, level: str) -> dict[str, Any]:
    """What a metric of rocprof-compute's `level` table reads: that table (a workload's SQ_LEVEL_WAVES.csv),
    or where rocprofv3 and rocpd name the level's accumulator `<level>_ACCUM`, pmc_perf with it as
    SQ_ACCUM_PREV_HIRES (rocprof-compute renames it so: utils.py v3_counter_csv_to_v2_csv, parser.py)."""
    if columns is not None and level in columns.tables:
        return columns.tables[level]
    accum = f"{level}_ACCUM"
    if accum in pmc and (columns is None or columns.accum):
        return {**pmc, "SQ_ACCUM_PREV_HIRES": pmc[accum]}
    return {k: v for k, v in pmc.items() if k != "SQ_ACCUM_PREV_HIRES"}


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
