"""AMD derived metrics from the vendor's own definitions (issue 32): rocprof-compute's analysis
configs and rocprofiler-sdk's counter_defs.yaml, shipped as data and evaluated by a parser of the
vendor's expression language; and real rocprof-compute / rocprofv3 outputs read as what they are.

Figures are checked against rocprof-compute's own analysis of the same workloads (its saved
tables, recorded with rocprof-compute 3.3.0 itself: tests/data/SOURCES.md), and against the vendor's
formulas applied here with pandas to the raw files the way rocprof-compute applies them (per
dispatch, then AVG), never through the code under test.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kernel_mcp.errors import InvalidInput
from kernel_mcp.platforms import VENDORS
from kernel_mcp.profile import expressions, profile_import, vendor_metrics
from kernel_mcp.workspace import Workspace

from conftest import BASIC_TOML, data, fixture, write_toml

DATA = Path(vendor_metrics.__file__).parent / "data"


def _import(root: Path, *paths: str):
    write_toml(root, BASIC_TOML.replace('target_kernel = "k_main"', 'target_kernel = "vecCopy"'))
    ws = Workspace.open(root)
    return profile_import(ws, ws.runs.create("profile_import", {}), list(paths), vendors=VENDORS)


def _metric(arch: str, table: str, name: str) -> dict:
    return next(m for m in json.loads((DATA / "rocprof_compute_metrics.json").read_text())["arches"][arch] if m["table"] == table and m["name"] == name)


# -- the shipped data -----------------------------------------------------------------------------------------------------


def test_the_shipped_definitions_cite_their_source_and_keep_the_notice():
    for name in ("rocprof_compute_metrics.json", "rocprofiler_sdk_derived.json"):
        source = json.loads((DATA / name).read_text())["source"]
        assert source["commit"] == "1b1610fc2b2ab32af71e6e04e4d4a6a4ae597992" and source["repository"] == "ROCm/rocm-systems"
        assert source["license"].startswith("MIT License. Copyright (c)") and "Advanced Micro Devices" in source["license"]
    assert vendor_metrics.arches() == ["gfx90a", "gfx942", "gfx950"]
    # the LDS panel's conflict figures as rocprof-compute 3.3.0 writes them for gfx942
    rate = _metric("gfx942", "LDS Speed-of-Light", "Bank Conflict Rate")
    assert (
        rate["expr"]
        == (
            "AVG((((SQ_LDS_BANK_CONFLICT * 3.125) / (SQ_LDS_IDX_ACTIVE - SQ_LDS_BANK_CONFLICT)) "
            "if ((SQ_LDS_IDX_ACTIVE - SQ_LDS_BANK_CONFLICT) != 0) else None))"
        )
        and rate["unit"] == "Pct of Peak"
    )


def test_every_shipped_expression_parses_and_uses_only_known_functions():
    """No metric of any shipped target falls to 'cannot evaluate': the parser covers the vendor's whole language."""
    everything = json.loads((DATA / "rocprof_compute_metrics.json").read_text())["arches"]
    for arch, metrics in everything.items():
        for m in metrics:
            counters, variables = expressions.inputs(m["expr"])
            outcome = expressions.evaluate(m["expr"], dict.fromkeys(counters, 1.0), dict.fromkeys(variables, 1.0))
            assert outcome.error is None, (arch, m["name"], m["expr"], outcome.error)


# -- the evaluator -----------------------------------------------------------------------------------------------------------


def test_the_lds_conflict_figures_follow_rocprof_computes_formula():
    """The issue's real gfx942 workload gave rocprof-compute 16.41% of peak and 5.25 conflicts per access, and the old
    hand-written formula 2094.3%. That workload is not among the public fixtures, so its ratio stands in: conflicts
    5.25 times the conflict-free index cycles. rocprof-compute's Bank Conflict Rate is conflicts/access * 3.125."""
    counters = {"SQ_LDS_BANK_CONFLICT": 5.25 * 1000, "SQ_LDS_IDX_ACTIVE": 1000 + 5.25 * 1000}
    per_access = expressions.evaluate(_metric("gfx942", "LDS Statistics", "Bank Conflicts/Access")["expr"], counters, {})
    rate = expressions.evaluate(_metric("gfx942", "LDS Speed-of-Light", "Bank Conflict Rate")["expr"], counters, {})
    assert per_access.value == pytest.approx(5.25) and rate.value == pytest.approx(16.40625) and round(rate.value, 2) == 16.41


def test_ratios_are_averaged_per_dispatch_skipping_the_dispatches_without_a_value():
    """rocprof-compute evaluates an expression on each dispatch's counters and averages the results; a dispatch whose
    ratio is None (`... if x != 0 else None`) is skipped, as pandas' mean skips NaN. The ratio of the sums differs."""
    rate = _metric("gfx942", "System Speed-of-Light", "L2 Cache Hit Rate")["expr"]
    per_dispatch = {"TCC_HIT_sum": np.array([9.0, 0.0, 10.0]), "TCC_MISS_sum": np.array([1.0, 0.0, 90.0])}
    assert expressions.evaluate(rate, per_dispatch, {}).value == pytest.approx((90.0 + 10.0) / 2)  # not 19 / 110
    assert expressions.evaluate(rate, {"TCC_HIT_sum": np.zeros(2), "TCC_MISS_sum": np.zeros(2)}, {}).value is None
    # one number per counter (a kernel's means) evaluates as before
    assert expressions.evaluate(rate, {"TCC_HIT_sum": 19.0, "TCC_MISS_sum": 91.0}, {}).value == pytest.approx(100 * 19 / 110)


def test_a_missing_input_is_named_and_an_unknown_function_is_not_run():
    rate = _metric("gfx942", "LDS Speed-of-Light", "Bank Conflict Rate")["expr"]
    outcome = expressions.evaluate(rate, {"SQ_LDS_BANK_CONFLICT": 10.0, "SQ_INSTS_LDS": 4.0}, {})
    assert outcome.value is None and outcome.missing_counters == ["SQ_LDS_IDX_ACTIVE"]
    utilization = _metric("gfx942", "LDS Speed-of-Light", "Utilization")["expr"]  # needs the machine's CU count and XCD count
    outcome = expressions.evaluate(utilization, {"SQ_LDS_IDX_ACTIVE": 1.0, "GRBM_GUI_ACTIVE": 2.0}, {})
    assert outcome.value is None and outcome.missing_vars == ["cu_per_gpu", "num_xcd"]
    for hostile in ("__import__('os').system('true')", "STD(SQ_WAVES)", "SQ_WAVES.real", "[x for x in SQ_WAVES]", "lambda: 1"):
        out = expressions.evaluate(hostile, {"SQ_WAVES": 1.0}, {})
        assert out.value is None and (out.error or "").startswith("cannot evaluate"), (hostile, out)


def test_zero_divisors_give_no_value_as_in_rocprof_compute():
    rate = _metric("gfx942", "LDS Speed-of-Light", "Bank Conflict Rate")["expr"]
    assert expressions.evaluate(rate, {"SQ_LDS_BANK_CONFLICT": 0.0, "SQ_LDS_IDX_ACTIVE": 0.0}, {}).value is None
    assert expressions.evaluate("AVG(SQ_WAVES / GRBM_GUI_ACTIVE)", {"SQ_WAVES": 3.0, "GRBM_GUI_ACTIVE": 0.0}, {}).value is None


# -- real workloads --------------------------------------------------------------------------------------------------------


def test_a_real_gfx942_workload_gets_gfx942s_definitions_with_its_machine(tmp_path):
    """Omniperf 2 / rocprofv2 on an MI300X (ROCm/rocprofiler-compute tests/workloads/dispatch_0/MI300X_A1): three dispatches
    of one kernel. The vendor's formulas are applied here per dispatch and averaged, as rocprof-compute does, and so does
    the reader. (rocprof-compute 3.3.0 cannot analyse this Omniperf 2 workload itself: its sysinfo.csv has no
    num_hbm_channels.)"""
    shutil.copytree(fixture("rocm/rpc-dispatch0-mi300x"), tmp_path / "w")
    raw = pd.read_csv(tmp_path / "w" / "pmc_perf.csv")
    info = next(csv.DictReader((tmp_path / "w" / "sysinfo.csv").open()))
    s = _import(tmp_path, "w")
    assert any("definitions for gfx942" in n and "w/sysinfo.csv" in n for n in s.notes), s.notes
    derived = {d.name: d for d in s.counters[0].derived}
    per_xcd = raw["GRBM_GUI_ACTIVE"] / float(info["num_xcd"])
    valu = (100 * raw["SQ_ACTIVE_INST_VALU"] / (per_xcd * float(info["cu_per_gpu"]))).mean()
    vendor = {
        "System Speed-of-Light: L2 Cache Hit Rate": (100 * raw["TCC_HIT_sum"] / (raw["TCC_HIT_sum"] + raw["TCC_MISS_sum"])).mean(),
        "System Speed-of-Light: VALU Utilization": valu,
        "Pipeline Statistics: VALU Utilization": valu,
    }
    for name, expected in vendor.items():
        assert derived[name].value == pytest.approx(expected, rel=1e-12), (name, derived[name])
        assert "gfx942/" in derived[name].definition and "rocprof-compute 3.3.0" in derived[name].definition
    lds = derived["LDS Speed-of-Light: Bank Conflict Rate"]  # vcopy touches no LDS: the vendor's expression gives None
    assert lds.value is None and "zero divisor" in lds.definition
    assert "LDS bank-conflict rate" not in derived and "MFMA busy share" not in derived  # the hand-written ones the vendor defines


def test_the_formulas_written_out_above_are_the_vendors():
    """The real-workload check writes the vendor's formulas out with pandas: they must be the shipped gfx942 ones."""
    assert (
        _metric("gfx942", "System Speed-of-Light", "VALU Utilization")["expr"]
        == "AVG(((100 * SQ_ACTIVE_INST_VALU) / ($GRBM_GUI_ACTIVE_PER_XCD * $cu_per_gpu)))"
    )
    assert _metric("gfx942", "System Speed-of-Light", "L2 Cache Hit Rate")["expr"] == (
        "AVG((((100 * TCC_HIT_sum) / (TCC_HIT_sum + TCC_MISS_sum)) if ((TCC_HIT_sum + TCC_MISS_sum) != 0) else None))"
    )
    assert expressions.BUILT_INS["GRBM_GUI_ACTIVE_PER_XCD"] == "(GRBM_GUI_ACTIVE / $num_xcd)"


def test_a_workload_whose_dispatch_filter_matched_nothing_is_named_as_such(tmp_path):
    """Every CSV of the folder keeps its header and no row: the real MI300X workload's headers, rows dropped."""
    source = fixture("rocm/rpc-dispatch0-mi300x")
    (tmp_path / "w").mkdir()
    for f in source.iterdir():
        text = f.read_text()
        (tmp_path / "w" / f.name).write_text(text.splitlines()[0] + "\n" if f.suffix == ".csv" and f.name != "sysinfo.csv" else text)
    with pytest.raises(InvalidInput) as err:
        _import(tmp_path, "w")
    assert "dispatch filter" in err.value.message and "matched no kernel" in err.value.message and "interrupted" not in err.value.message


def _workload_without_tables(folder: Path, kernel: str, warnings: list[str]) -> None:
    """The layout rocprof-compute 3 leaves when rocprofv3 wrote no counter file for any pass (its src/utils/utils.py at
    1b1610fc: process_rocprofv3_output returns no file, the pass is skipped with a warning, and with no pass file
    there is no pmc_perf.csv): the real MI350 workload's sysinfo.csv and profiling_config.yaml, and its log.txt up to
    its first pass, with the kernel filter set, followed by the warnings that code writes ("%(message)s" format)."""
    source = data("rocm/rcm-vcopy-mi350-rocprofv3")
    folder.mkdir()
    for name in ("sysinfo.csv", "profiling_config.yaml"):
        shutil.copy(source / name, folder / name)
    head = (source / "log.txt").read_text().split("~~~~")[0].replace("Kernel Selection: None", f"Kernel Selection: {kernel}")
    (folder / "log.txt").write_text(head + "\n".join(warnings) + "\n")


def test_a_rocprof_compute_3_workload_without_tables_says_nothing_was_profiled(tmp_path):
    passes = [f"Cannot write results for pmc_perf_{i}.csv due to no counter csv files generated." for i in range(8)]
    _workload_without_tables(tmp_path / "w", "['not_launched']", passes)
    with pytest.raises(InvalidInput) as err:
        _import(tmp_path, "w")
    message = err.value.message
    assert "rocprofv3 wrote no counter file for 8 pass(es)" in message and "kernel ['not_launched']" in message, message
    assert "interrupted" not in message
    # the same warning after rocprof-compute's own conversion failed (a reported rocprofv3 Agent_Id change): said so
    failed = (
        "Error converting out/pmc_1/node/123_counter_collection.csv from v3 to v2 csv: You are trying to merge on str and int64 columns for key 'Agent_Id'."
    )
    _workload_without_tables(tmp_path / "v", "None", [failed, *passes])
    with pytest.raises(InvalidInput) as err:
        _import(tmp_path, "v")
    assert "could not convert rocprofv3's counter files" in err.value.message and "Agent_Id" in err.value.message
    assert "--format-rocprof-output rocpd" in (err.value.hint or "")


def test_agent_info_listed_beside_a_counter_file_names_the_gpu(tmp_path):
    """HipKittens' gfx950 probe: the counter file and its agent_info.csv named one by one, as a user lists them."""
    for name in ("lds_conflict_counter_collection.csv", "lds_conflict_agent_info.csv"):
        shutil.copy(data(f"rocm/hk-ds_read_b64-out/{name}"), tmp_path / name)
    s = _import(tmp_path, "lds_conflict_counter_collection.csv", "lds_conflict_agent_info.csv")
    agent = next(f for f in s.inputs if f.path == "lds_conflict_agent_info.csv")
    assert agent.skipped is None and "gfx950" in (agent.used_for or "")
    assert any("definitions for gfx950" in n and "lds_conflict_agent_info.csv" in n for n in s.notes), s.notes
    row = next(r for r in s.counters if r.counters.get("SQ_INSTS_LDS"))
    per_access = next(d for d in row.derived if d.name == "LDS Statistics: Bank Conflicts/Access")
    assert per_access.value is None and per_access.definition.startswith("missing counter(s) SQ_LDS_IDX_ACTIVE")
    own = next(d for d in row.derived if d.name == "LDS bank-conflict cycles per LDS instruction")
    assert own.definition.startswith("kernel-mcp's own")


def test_rocprofv3s_own_derived_counters_carry_their_counter_defs_expression():
    """A file's LDSBankConflict is rocprofv3's figure: passed on with the expression that made it, for the file's target."""
    assert vendor_metrics.sdk_definition("LDSBankConflict", "gfx942") == (
        "rocprofiler-sdk 1.0.0 counter_defs.yaml (ROCm/rocm-systems 1b1610fc2b), gfx942: 100*reduce(SQ_LDS_BANK_CONFLICT,sum)/reduce(GRBM_GUI_ACTIVE,max)/CU_NUM "
        "(The percentage of GPUTime LDS is stalled by bank conflicts. Value range: 0% (optimal) to 100% (bad).)"
    )
    assert vendor_metrics.sdk_definition("TCC_HIT_sum", "gfx942") is None  # a sum over the L2 channels: a counter, not a metric
    assert vendor_metrics.sdk_definition("SQ_WAVES", "gfx942") is None  # a hardware counter


# -- rocprof-compute's own analysis of the same workloads --------------------------------------------------------------

ANALYZED = {  # workload -> (its folder, target): rocprof-compute 3.3.0 `analyze --save-dfs` of each is in tests/data
    "rcm-vcopy-mi350-rocprofv3": (lambda: data("rocm/rcm-vcopy-mi350-rocprofv3"), "gfx950"),
    "rcs-vcopy-mi300x-rocpd": (lambda: fixture("rocm/rcs-vcopy-mi300x-rocpd"), "gfx942"),
    "rcm-vcopy-mi200-rocprofv1": (lambda: data("rocm/rcm-vcopy-mi200-rocprofv1"), "gfx90a"),
}


def _vendor_tables(name: str) -> dict[tuple[str, str], str]:
    """(table id "2.1", metric) -> the value rocprof-compute printed (its Avg, or Value, column), as text."""
    found = {}
    for path in data(f"rocm/rocprof-compute-3.3.0-analyze/{name}").glob("*.csv"):
        rows = list(csv.DictReader(path.open(encoding="utf-8", newline="")))
        column = next((c for c in ("Avg", "Value", "Mean") if rows and c in rows[0]), None)
        for row in rows if column else []:
            found[(path.name.split("_")[0], row["Metric"])] = row[column]
    return found


@pytest.mark.parametrize("name", sorted(ANALYZED))
def test_every_figure_equals_rocprof_computes_own_analysis(tmp_path, name):
    """Each metric is computed per dispatch and then averaged, from the same tables rocprof-compute reads (pmc_perf.csv,
    its SQ_*_LEVEL passes, the rocpd layout's last value and median time), so every figure both give agrees to the
    10 decimals the vendor's tables were saved with, over three profilers and three targets."""
    folder, arch = ANALYZED[name]
    shutil.copytree(folder(), tmp_path / "w")
    s = _import(tmp_path, "w")
    assert any(f"definitions for {arch}" in n for n in s.notes), s.notes
    vendor = _vendor_tables(name)
    compared = without = 0
    for d in s.counters[0].derived:
        found = re.search(r"rocprof-compute 3\.3\.0 \w+/\S+#(\d+): ", d.definition)
        if not found:
            continue  # rocprofv3's own counters and this project's figures
        table = int(found.group(1))
        expected = vendor[(f"{table // 100}.{table % 100}", d.name.split(": ", 1)[1])]
        if expected in ("", "inf", "nan"):
            # the vendor prints nothing (no value) or inf (a zero divisor, or a machine figure sysinfo.csv gives as 0)
            assert d.value is None and d.definition.split(" | ")[0], (d.name, expected, d)
            without += 1
        else:
            assert d.value == pytest.approx(float(expected), rel=1e-9, abs=1e-9), (d.name, expected, d)
            compared += 1
    assert compared >= 270 and without >= 6, (compared, without)


def test_the_machine_figures_of_a_counter_file_come_from_its_agent_info_and_say_so(tmp_path):
    """No sysinfo.csv: the vendor's expressions read $cu_per_gpu, $max_sclk ... from the agent_info.csv rocprofv3 wrote
    beside the counters (the KFD figures rocminfo prints, which rocprof-compute reads), each named with its field;
    what no input gives ($max_mclk: amd-smi) is unknown, and a metric that needs it says so."""
    for name in ("lds_conflict_counter_collection.csv", "lds_conflict_agent_info.csv"):
        shutil.copy(data(f"rocm/hk-ds_read_b64-out/{name}"), tmp_path / name)
    agent = next(r for r in csv.DictReader((tmp_path / "lds_conflict_agent_info.csv").open()) if r["Agent_Type"] == "GPU")
    s = _import(tmp_path, "lds_conflict_counter_collection.csv", "lds_conflict_agent_info.csv")
    note = next(n for n in s.notes if n.startswith("machine figures"))
    assert f"from lds_conflict_agent_info.csv: $cu_per_gpu {agent['Cu_Count']} (cu_count)" in note
    assert f"$max_sclk {agent['Max_Engine_Clk_Fcompute']} (max_engine_clk_fcompute)" in note and f"$num_xcd {agent['Num_Xcc']} (num_xcc)" in note
    # rocprof-compute's own derivations: one SQC per two CUs of a shader engine, 16 L2 channels per XCD on gfx950
    sqc = -(-int(agent["Cu_Count"]) // int(agent["Num_Shader_Banks"]) // 2) * int(agent["Num_Shader_Banks"])
    assert f"$sqc_per_gpu {sqc} (total_sqc" in note and f"$total_l2_chan {16 * int(agent['Num_Xcc'])}" in note
    assert "unknown: $max_mclk, $num_hbm_channels" in note
    row = next(r for r in s.counters if r.counters.get("SQ_INSTS_LDS"))
    # it reads $max_sclk and $cu_per_gpu too: known now, so only the counter not collected is missing
    util = next(d for d in row.derived if d.name == "LDS Speed-of-Light: Theoretical Bandwidth Utilization")
    assert "$max_sclk" in util.definition and "$cu_per_gpu" in util.definition
    assert util.value is None and util.definition.split(" | ")[0] == "missing counter(s) SQ_LDS_IDX_ACTIVE"


def test_a_zero_in_sysinfo_is_unknown_as_rocprof_compute_reads_it():
    """MI350's sysinfo.csv gives max_sclk 0; rocprof-compute warns it is 'not available' (and prints inf)."""
    machine = vendor_metrics.machine_vars(next(csv.DictReader(data("rocm/rcm-vcopy-mi350-rocprofv3/sysinfo.csv").open())), "w/sysinfo.csv")
    assert "max_sclk" not in machine.values and machine.values["cu_per_gpu"] == 128 and machine.sources["cu_per_gpu"] == ("w/sysinfo.csv", "")


def test_passes_in_separate_files_are_joined_per_dispatch_as_rocprof_compute_joins_them(tmp_path):
    """The MI350 workload's own pass files (pmc_perf_0..7.csv and the SQ_*.csv passes, as rocprof-compute left them),
    read without its merged pmc_perf.csv: joined per dispatch (kernel, grid size, order), every metric that needs
    neither the GPU time (which rocprof-compute averages over the passes when it merges them) nor a machine figure
    equals the one from the vendor's own merge."""
    source = data("rocm/rcm-vcopy-mi350-rocprofv3")
    (tmp_path / "passes").mkdir()
    for path in [*source.glob("pmc_perf_*.csv"), *source.glob("SQ_*.csv")]:
        shutil.copy(path, tmp_path / "passes" / path.name)
    shutil.copytree(source, tmp_path / "w")
    merged = {d.name: d for d in _import(tmp_path, "w").counters[0].derived}
    s = _import(tmp_path, "passes")
    assert any("13 files of different counters (passes) are joined per dispatch" in n for n in s.notes), s.notes
    compared = 0
    for d in s.counters[0].derived:
        expr = d.definition.split(" | ")[-1]
        if "Timestamp" in expr or "$" in expr or d.name not in merged:
            continue
        expected = merged[d.name].value
        assert d.value == (None if expected is None else pytest.approx(expected, rel=1e-12)), (d.name, d.value, merged[d.name])
        compared += d.value is not None
    assert compared >= 30


def test_a_live_runs_machine_figures_come_from_the_agent_info_it_wrote_else_the_products_table(tmp_path):
    """profile_kernels reads the agent_info.csv rocprofv3 writes beside each pass's counters (a real MI355X one here,
    laid out as rocprofv3's %hostname%/%pid% output); with none, the hardware table of the GPU's product, named."""
    from kernel_mcp.arch_registry import product_named
    from kernel_mcp.profile import gather

    folder = tmp_path / "run" / "pmc-1-ab12" / "node-a"
    folder.mkdir(parents=True)
    shutil.copy(data("rocm/hk-ds_read_b64-out/lds_conflict_agent_info.csv"), folder / "4242_agent_info.csv")
    agents = gather.agent_rows(tmp_path / "run")
    machine, notes = vendor_metrics.machine_figures("gfx950", vendor_metrics.Machine({}, {}), agents, None)
    assert notes == [] and machine.values["cu_per_gpu"] == 256 and machine.values["max_sclk"] == 2400
    assert machine.sources["cu_per_gpu"] == ("pmc-1-ab12/node-a/4242_agent_info.csv", "cu_count")
    spec = vendor_metrics.machine_figures("gfx950", vendor_metrics.Machine({}, {}), [], product_named("MI355X"))[0]
    assert spec.values["cu_per_gpu"] == 256 and spec.sources["cu_per_gpu"] == ("hw_spec MI355X", "compute_units")
    assert spec.sources["max_sclk"] == ("hw_spec MI355X", "peak_engine_clock_mhz") and "max_mclk" not in spec.values
    # the target alone (no product): its shared facts, no counts or clocks
    alone = vendor_metrics.machine_figures("gfx950", vendor_metrics.Machine({}, {}), [], None)[0]
    assert "cu_per_gpu" not in alone.values and alone.values["simd_per_cu"] == 4
