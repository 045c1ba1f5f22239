"""profile_import on real outputs of every AMD profiler generation (issue 20): whole folders merged
(one file per process), counter files with timestamps on their own, rocprof-compute workloads of
rocprofv1/v2/v3/rocpd, legacy rocprof results.csv / results.stats.csv, and files it cannot read.

Every figure is checked against numbers computed here from the raw files with pandas, the csv
module or sqlite3, never through the readers under test. Where a layout had to be assembled (the
multi-process folder), real files are copied unchanged into the layout rocprofv3 documents
(`<output dir>/%hostname%/%pid%_kernel_trace.csv`, using-rocprofv3.rst).
"""

from __future__ import annotations

import csv
import glob
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from mcp import Client

from kernel_mcp.errors import InvalidInput
from kernel_mcp.platforms import VENDORS
from kernel_mcp.platforms.rocm import rocprofv3
from kernel_mcp.profile import profile_import
from kernel_mcp.server import build_server
from kernel_mcp.workspace import Workspace

from conftest import BASIC_TOML, data, fixture, text_of, write_toml

pytestmark = pytest.mark.anyio
VCOPY = "vecCopy(double*, double*, double*, int, int)"


def _import(root: Path, *paths: str, target: str = "k_main"):
    write_toml(root, BASIC_TOML.replace('target_kernel = "k_main"', f'target_kernel = "{target}"'))
    ws = Workspace.open(root)
    return profile_import(ws, ws.runs.create("profile_import", {}), list(paths), vendors=VENDORS)


def _copy_tree(source: Path, dest: Path) -> None:
    shutil.copytree(source, dest)


def _trace_totals(*paths: Path) -> pd.DataFrame:
    """pandas on raw kernel_trace.csv files: per kernel calls and total ns."""
    frame = pd.concat([pd.read_csv(p) for p in paths])
    frame = frame[frame["Kind"] == "KERNEL_DISPATCH"]
    frame["ns"] = frame["End_Timestamp"] - frame["Start_Timestamp"]
    return frame.groupby("Kernel_Name")["ns"].agg(["count", "sum"])


# -- a folder of one kernel_trace.csv per process ------------------------------------------------


def _multi_process(root: Path) -> Path:
    out = root / "prof"
    for host, pid, trace, counters in (
        ("node1", 834304, "sdk2508-kernel_trace.csv", "sdk2508-counter_collection.csv"),
        ("node1", 834305, "sdk2508-kernel_trace.csv", "sdk2508-counter_collection.csv"),
        ("node2", 19396, "sdk-kernel_trace.csv", "sdk-counter_collection.csv"),
    ):
        (out / host).mkdir(parents=True, exist_ok=True)
        shutil.copy(fixture(f"rocm/{trace}"), out / host / f"{pid}_kernel_trace.csv")
        shutil.copy(fixture(f"rocm/{counters}"), out / host / f"{pid}_counter_collection.csv")
        shutil.copy(fixture("rocm/hk-ds_read_b64-lds_conflict_agent_info.csv"), out / host / f"{pid}_agent_info.csv")
    return out


def test_every_process_file_of_a_folder_is_read_and_merged(tmp_path):
    out = _multi_process(tmp_path)
    traces = sorted(out.rglob("*_kernel_trace.csv"))
    expected = _trace_totals(*traces)
    s = _import(tmp_path, "prof", target="addition")
    assert s.dispatches == int(expected["count"].sum()) == 9 + 9 + 7  # not the newest file's 9
    assert s.source == "rocprofv3 (imported)"
    for k in s.kernels:
        assert (k.calls, k.total_us) == (expected.loc[k.name, "count"], pytest.approx(expected.loc[k.name, "sum"] / 1e3, rel=1e-12))
    addition = next(k for k in s.kernels if k.target)
    assert addition.sources == [f"prof/{p.relative_to(out).as_posix()}" for p in traces]  # each row kept its file
    read = {f.path: f for f in s.inputs if f.skipped is None}
    skipped = {f.path: f.skipped for f in s.inputs if f.skipped is not None}
    assert len(read) == 9 and not skipped  # each agent_info.csv is read for the GPU that ran the dispatches beside it
    assert read["prof/node1/834304_kernel_trace.csv"].used_for == "GPU times (9 dispatches)"
    assert "gfx950" in read["prof/node1/834304_agent_info.csv"].used_for
    text = s.render()
    assert "read 9 of 9 files" in text and "834305_kernel_trace.csv" in text


def test_counters_of_processes_reusing_dispatch_ids_are_not_folded(tmp_path):
    out = _multi_process(tmp_path)
    files = sorted(out.rglob("*_counter_collection.csv"))
    raw = pd.concat([pd.read_csv(p).assign(file=p.name) for p in files])
    s = _import(tmp_path, "prof")
    for row in s.counters:
        mine = raw[raw["Kernel_Name"] == row.kernel]
        dispatches = mine[["file", "Dispatch_Id"]].drop_duplicates()
        assert row.dispatches == len(dispatches)
        assert row.counters["SQ_WAVES"] == pytest.approx(mine["Counter_Value"].sum() / len(dispatches))


def test_two_copies_of_one_process_file_count_twice(tmp_path):
    """The observed failure: 70 of 140 dispatches read, silently. Two processes, same kernels."""
    for pid in (1, 2):
        (tmp_path / "prof" / "host").mkdir(parents=True, exist_ok=True)
        shutil.copy(fixture("rocm/sdk2508-kernel_trace.csv"), tmp_path / "prof" / "host" / f"{pid}_kernel_trace.csv")
    single = _trace_totals(fixture("rocm/sdk2508-kernel_trace.csv"))
    s = _import(tmp_path, "prof", target="addition")
    assert s.dispatches == 2 * int(single["count"].sum())
    assert sum(s.target_calls.values()) == 2 * int(single.loc[[n for n in single.index if "addition" in n], "count"].sum())


def test_the_profile_kernels_folder_readers_merge_every_file(tmp_path):
    out = _multi_process(tmp_path)
    frame = rocprofv3.read_trace_folder(out, within=tmp_path)
    assert len(frame) == 25 and frame["origin"].nunique() == 3
    agents = {f.path: f.used_for for f in frame.attrs["inputs"] if f.format == "rocprofv3 agent info"}
    assert not [f for f in frame.attrs["inputs"] if f.skipped]
    assert set(agents) == {f"prof/{p.relative_to(out).as_posix()}" for p in out.rglob("*_agent_info.csv")} and all("GPU agents" in u for u in agents.values())
    counters = rocprofv3.read_counters_folder(out, within=tmp_path)
    assert len(counters) == sum(len(pd.read_csv(p)) for p in out.rglob("*_counter_collection.csv"))


# -- counter files with timestamps, on their own ---------------------------------------------


def test_counter_files_with_timestamps_give_gpu_times(tmp_path):
    _copy_tree(data("rocm/hk-ds_read_b64-out"), tmp_path / "out")
    files = sorted(glob.glob(str(tmp_path / "out" / "*_counter_collection.csv")))
    raw = pd.concat([pd.read_csv(p).assign(file=Path(p).name) for p in files])
    per_dispatch = raw.drop_duplicates(["file", "Dispatch_Id"]).assign(ns=lambda f: f["End_Timestamp"] - f["Start_Timestamp"])
    s = _import(tmp_path, "out", target="micro_tk")
    assert s.source == "rocprofv3 counter collection (imported)"
    assert s.dispatches == len(per_dispatch) == 77
    totals = per_dispatch.groupby("Kernel_Name")["ns"].sum()
    for k in s.kernels:
        assert k.total_us == pytest.approx(totals[k.name] / 1e3, rel=1e-12)
    micro = next(c for c in s.counters if c.kernel.startswith("micro_tk"))
    mine = raw[(raw["Kernel_Name"] == micro.kernel) & (raw["Counter_Name"] == "SQ_LDS_BANK_CONFLICT")]
    assert micro.counters["SQ_LDS_BANK_CONFLICT"] == pytest.approx(mine["Counter_Value"].sum() / len(mine[["file", "Dispatch_Id"]].drop_duplicates()))
    assert any("serializes" in n for n in s.notes)
    assert sum(s.target_calls.values()) == next(k.calls for k in s.kernels if k.target) and s.target_dispatches
    skipped = [f for f in s.inputs if f.skipped]
    assert {Path(f.path).name for f in skipped} == {"README.md", "analyze_conflicts.py"}
    # the agent_info files beside the counters name the GPU (gfx950), so gfx950's own rocprof-compute definitions apply; the
    # probe collected SQ_INSTS_LDS and SQ_LDS_BANK_CONFLICT only, so the vendor's conflict figures name the counter they lack
    assert any("gfx950" in n and "rocprof-compute 3.3.0" in n and "lds_conflict_agent_info.csv" in n for n in s.notes), s.notes
    rate = next(d for d in micro.derived if d.name == "LDS Speed-of-Light: Bank Conflict Rate")
    assert (
        rate.value is None
        and rate.definition.startswith("missing counter(s) SQ_LDS_IDX_ACTIVE |")
        and "gfx950/1200_local_data_share_lds.yaml" in rate.definition
    )
    assert not [d for d in micro.derived if d.name == "LDS bank-conflict rate"]  # the old hand-written % of SQ_ACTIVE_INST_LDS is gone


def test_a_single_counter_file_with_timestamps_is_accepted_and_one_without_is_explained(tmp_path):
    shutil.copy(fixture("rocm/sdk2508-counter_collection.csv"), tmp_path / "timed_counter_collection.csv")
    shutil.copy(fixture("rocm/sdk-counter_collection.csv"), tmp_path / "old_counter_collection.csv")
    raw = pd.read_csv(tmp_path / "timed_counter_collection.csv")
    s = _import(tmp_path, "timed_counter_collection.csv", target="addition")
    assert s.dispatches == raw["Dispatch_Id"].nunique()
    assert s.total_gpu_us == pytest.approx((raw["End_Timestamp"] - raw["Start_Timestamp"]).sum() / 1e3)
    with pytest.raises(InvalidInput) as info:
        _import(tmp_path, "old_counter_collection.csv")
    assert "no kernel GPU times" in info.value.message and "old_counter_collection.csv" in info.value.message
    assert "Start_Timestamp" in info.value.hint


# -- rocprof-compute workloads ------------------------------------------------------------------


def _pmc_times(path: Path) -> pd.Series:
    frame = pd.read_csv(path)
    return frame["End_Timestamp"] - frame["Start_Timestamp"]


def test_rocprof_compute_rocprofv2_workload(tmp_path):
    _copy_tree(fixture("rocm/rpc-dispatch0-mi300x"), tmp_path / "w")
    pmc = pd.read_csv(tmp_path / "w" / "pmc_perf.csv")
    stamps = pd.read_csv(tmp_path / "w" / "timestamps.csv")
    assert (_pmc_times(tmp_path / "w" / "pmc_perf.csv").to_numpy() == (stamps["End_Timestamp"] - stamps["Start_Timestamp"]).to_numpy()).all()
    s = _import(tmp_path, "w", target="vecCopy")
    assert s.source == "rocprof-compute workload (rocprofv2) (imported)"
    (k,) = s.kernels
    assert k.name == VCOPY and k.calls == 3 and k.total_us == pytest.approx(_pmc_times(tmp_path / "w" / "pmc_perf.csv").sum() / 1e3)
    assert k.median_us == pytest.approx(_pmc_times(tmp_path / "w" / "pmc_perf.csv").median() / 1e3)
    (row,) = s.counters
    for name in ("SQ_WAVES", "GRBM_GUI_ACTIVE", "TCC_EA0_RDREQ_sum"):
        assert row.counters[name] == pytest.approx(pmc[name].mean())
    assert not any("[" in c for c in row.counters) and any("2432 per-instance" in n for n in s.notes)
    assert any("MI300X_A1 (gfx942)" in n for n in s.notes)
    assert {f.path.split("/")[-1]: f.skipped for f in s.inputs}["timestamps.csv"].startswith("the same dispatches")


def test_a_pmc_perf_named_alone_is_still_told_by_its_workload(tmp_path):
    _copy_tree(fixture("rocm/rpc-dispatch0-mi300x"), tmp_path / "w")
    s = _import(tmp_path, "w/pmc_perf.csv", target="vecCopy")
    assert s.source == "rocprof-compute workload (rocprofv2) (imported)" and s.dispatches == 3
    assert {f.path for f in s.inputs} == {"w/pmc_perf.csv", "w/sysinfo.csv", "w/timestamps.csv"}


def test_rocprof_compute_rocpd_workload_takes_the_median_over_passes(tmp_path):
    _copy_tree(fixture("rocm/rcs-vcopy-mi300x-rocpd"), tmp_path / "w")
    raw = pd.read_csv(tmp_path / "w" / "pmc_perf.csv")
    per_dispatch = (raw["End_Timestamp"] - raw["Start_Timestamp"]).groupby(raw["Dispatch_ID"]).median()  # rocprof-compute's own rule
    s = _import(tmp_path, "w", target="vecCopy")
    assert s.source == "rocprof-compute workload (rocprofv3, rocpd) (imported)"
    (k,) = s.kernels
    assert (k.calls, k.total_us, k.median_us) == (3, pytest.approx(per_dispatch.sum() / 1e3), pytest.approx(per_dispatch.median() / 1e3))
    assert s.target_dispatches[f"{VCOPY}|1048576"] == list(per_dispatch.to_numpy(dtype=float))
    (row,) = s.counters
    plain = raw[~raw["Counter_Name"].str.contains("[", regex=False)]
    means = plain.groupby("Counter_Name")["Counter_Value"].sum() / raw["Dispatch_ID"].nunique()
    assert row.counters == pytest.approx(means.to_dict())


def test_rocprof_compute_rocprofv3_csv_workload_on_mi350(tmp_path):
    _copy_tree(data("rocm/rcm-vcopy-mi350-rocprofv3"), tmp_path / "w")
    merged = _pmc_times(tmp_path / "w" / "pmc_perf.csv")
    passes = sorted(glob.glob(str(tmp_path / "w" / "pmc_perf_*.csv"))) + sorted(glob.glob(str(tmp_path / "w" / "SQ_*.csv")))
    pass_mean = pd.concat([_pmc_times(Path(p)) for p in passes], axis=1).mean(axis=1)
    assert (merged - pass_mean).abs().max() < 1.0  # rocprof-compute averaged Start and End over the 13 passes
    s = _import(tmp_path, "w", target="vecCopy")
    assert s.source == "rocprof-compute workload (rocprofv3) (imported)"
    (k,) = s.kernels
    assert k.total_us == pytest.approx(merged.sum() / 1e3) and k.calls == 3 and k.vgprs == 4
    assert any("MI350 (gfx950)" in n for n in s.notes)
    kinds = {f.path.split("/")[-1]: (f.used_for, f.skipped) for f in s.inputs}
    assert kinds["pmc_perf_3.csv"][1].startswith("one counter pass") and kinds["pmc_perf.csv"][0].startswith("GPU times (3 dispatches)")


def test_rocprof_compute_rocprofv1_workload_on_mi200(tmp_path):
    _copy_tree(data("rocm/rcm-vcopy-mi200-rocprofv1"), tmp_path / "w")
    stamps = pd.read_csv(tmp_path / "w" / "timestamps.csv")
    s = _import(tmp_path, "w", target="vecCopy")
    assert s.source == "rocprof-compute workload (rocprofv1) (imported)"
    (k,) = s.kernels
    assert k.name == VCOPY  # " [clone .kd]" dropped, as rocprofv3 names it
    assert k.total_us == pytest.approx((stamps["End_Timestamp"] - stamps["Start_Timestamp"]).sum() / 1e3)
    assert {f.path.split("/")[-1]: f.skipped for f in s.inputs}["roofline.csv"] is not None


def test_a_workload_whose_timestamps_a_spreadsheet_rounded_is_refused(tmp_path):
    _copy_tree(data("rocm/rcm-vcopy-mi300x-rounded"), tmp_path / "w")
    assert (_pmc_times(tmp_path / "w" / "pmc_perf.csv") == 0).all()  # 8.1097E+14 - 8.1097E+14
    with pytest.raises(InvalidInput) as info:
        _import(tmp_path, "w")
    assert "pmc_perf.csv" in info.value.message and "5 significant digits" in info.value.message


# -- legacy rocprof ------------------------------------------------------------------------------


def _stats(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path)
    frame["Name"] = frame["Name"].str.replace(r"(\s*\[clone \.kd\]|\.kd)$", "", regex=True)
    return frame.set_index("Name")


def test_legacy_rocprof_results_csv_agrees_with_its_stats_and_database(tmp_path):
    _copy_tree(data("rocm/gunrock-rocprof-bfs"), tmp_path / "g")
    raw = pd.read_csv(tmp_path / "g" / "results.csv")
    assert ((raw["EndNs"] - raw["BeginNs"]) == raw["DurationNs"]).all()
    stats = _stats(tmp_path / "g" / "results.stats.csv")
    con = sqlite3.connect(tmp_path / "g" / "results.db")
    per_kernel_db = dict(con.execute("SELECT KernelName, COUNT(*) FROM KERN GROUP BY KernelName").fetchall())
    con.close()
    s = _import(tmp_path, "g", target="merge_path")
    assert s.source == "rocprof results.csv (imported)" and s.dispatches == len(raw) == sum(per_kernel_db.values())
    by_name = {k.name: k for k in s.kernels}
    assert set(by_name) == set(stats.index)
    for name, k in by_name.items():
        assert k.calls == stats.loc[name, "Calls"] and k.total_us == pytest.approx(stats.loc[name, "TotalDurationNs"] / 1e3)
    skipped = {f.path.split("/")[-1]: f.skipped for f in s.inputs if f.skipped}
    assert set(skipped) == {"results.db", "results.stats.csv", "results.sysinfo.txt"} and "KERN" in skipped["results.db"]
    assert sum(s.target_calls.values()) == stats.loc[[n for n in stats.index if "merge_path" in n], "Calls"].sum()


def test_a_stats_table_alone_gives_calls_and_totals_only(tmp_path):
    shutil.copy(data("rocm/gunrock-rocprof-bfs/results.stats.csv"), tmp_path / "results.stats.csv")
    stats = _stats(tmp_path / "results.stats.csv")
    s = _import(tmp_path, "results.stats.csv", target="merge_path")
    assert s.source == "rocprof results.stats.csv (imported)" and s.dispatches == stats["Calls"].sum()
    for k in s.kernels:
        assert (k.calls, k.total_us, k.median_us) == (stats.loc[k.name, "Calls"], pytest.approx(stats.loc[k.name, "TotalDurationNs"] / 1e3), None)
        assert k.share == pytest.approx(stats.loc[k.name, "Percentage"] / 100, abs=1e-9)
    assert s.target_calls and not s.target_dispatches and any("no per-dispatch" in n for n in s.notes)
    assert "      -" in s.render()


def test_old_rocprof_stats_with_unquoted_names(tmp_path):
    """Generated in the layout an old rocprof wrote (kernel names unquoted, commas and all; a real
    sample exists in a public repository without a licence, so it is not copied here)."""
    rows = [
        ["Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage"],
        ["void f<int, 4>(int const*, int)", "2", "300", "150", "75.0"],
        ["g()", "1", "100", "100", "25.0"],
    ]
    (tmp_path / "results.stats.csv").write_text('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n' + "\n".join(",".join(r) for r in rows[1:]) + "\n")
    s = _import(tmp_path, "results.stats.csv", target="f<")
    assert [(k.name, k.calls, k.total_us) for k in s.kernels] == [("void f<int, 4>(int const*, int)", 2, 0.3), ("g()", 1, 0.1)]


# -- what cannot be read is named as what it is -------------------------------------------------


@pytest.mark.parametrize(
    "name, source, expected",
    [
        ("agent_info.csv", "rocm/hk-ds_read_b64-lds_conflict_agent_info.csv", "agents"),
        ("x_hip_api_stats.csv", "rocm/sdk-hip_api_stats.csv", "API calls"),
        ("memory_copy_trace.csv", "rocm/sdk-memory_copy_trace.csv", "no kernel dispatches"),
    ],
)
def test_known_files_without_kernel_figures_are_named(tmp_path, name, source, expected):
    shutil.copy(fixture(source), tmp_path / name)
    with pytest.raises(InvalidInput) as info:
        _import(tmp_path, name)
    assert name in info.value.message and expected in info.value.message and "ncu" not in info.value.message


async def test_unknown_files_are_described_never_called_ncu(tmp_path):
    write_toml(tmp_path, BASIC_TOML)
    (tmp_path / "table.csv").write_text("a,b,c\n1,2,3\n")
    (tmp_path / "half_trace.csv").write_text('"Kind","Agent_Id","Kernel_Name","Start_Timestamp"\n"KERNEL_DISPATCH",1,"k",5\n')
    shutil.copy(data("rocm/gunrock-rocprof-bfs/results.sysinfo.txt"), tmp_path / "results.sysinfo.txt")
    (tmp_path / "rounded").mkdir()
    shutil.copy(data("rocm/rcm-vcopy-mi300x-rounded/timestamps.csv"), tmp_path / "rounded" / "timestamps.csv")
    expectations = {
        "table.csv": "a CSV of 3 columns",
        "half_trace.csv": "lacking end_timestamp",
        "results.sysinfo.txt": "not a CSV table",
        "rounded/timestamps.csv": "significant digits",
    }
    async with Client(build_server(tmp_path)) as client:
        for name, expected in expectations.items():
            result = await client.call_tool("profile_import", {"paths": [name]})
            text = text_of(result)
            message = text.splitlines()[0]  # the hint lists what is read, ncu CSVs among them
            assert result.is_error and name.split("/")[-1] in message and expected in message and "ncu" not in message, (name, text)


async def test_the_answer_for_a_workload_fits_the_budget_and_lists_its_files(tmp_path):
    write_toml(tmp_path, BASIC_TOML)
    _copy_tree(data("rocm/rcm-vcopy-mi350-rocprofv3"), tmp_path / "w")
    async with Client(build_server(tmp_path)) as client:
        result = await client.call_tool("profile_import", {"paths": ["w"]})
        text = text_of(result)
    assert not result.is_error and len(text.encode()) <= 4096, text
    # pmc_perf.csv, sysinfo.csv, and the five SQ_*_LEVEL passes some of rocprof-compute's metrics read (their coll_level)
    assert "read 7 of 18 files" in text and "skipped 11" in text and "one counter pass" in text
    assert len(result.structured_content["inputs"]) == 18


def test_stats_files_use_the_csv_module_not_a_guess(tmp_path):
    """results.stats.csv read through the csv module agrees with pandas on a quoted real file."""
    path = data("rocm/gunrock-rocprof-bfs/results.stats.csv")
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert len(rows) - 1 == len(pd.read_csv(path))
