"""Thread-trace summaries held against real outputs they were not written from (tests/data,
SOURCES.md): four gfx950 rocprofv3 --att dispatches of four kernels in one folder, and an ncu
source page of a kernel with shared-memory bank conflicts beside its conflict-free twin.

Every figure is recomputed here from the raw files with json, csv and pandas, never through the
project's readers: totals and splits per dispatch, wave counts, the decoder's wait records, the
shared-memory wavefronts, and each percentage a finding states.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from kernel_mcp.platforms import VENDORS
from kernel_mcp.trace import summarise_folder
from kernel_mcp.trace.folder import summarise_file
from kernel_mcp.trace.models import pct

DATA = Path(__file__).resolve().parent / "data"
ATT = DATA / "rocm" / "att-gfx950"
BANK_SASS = DATA / "cuda" / "ncu_source_bank_sass.csv"
BANK_CUDA_SASS = DATA / "cuda" / "ncu_source_bank_cuda_sass.csv"
VMEM = ("global_", "buffer_", "flat_", "scratch_")


# -- independent readings of the raw files ---------------------------------------------------------


def dispatches() -> list[Path]:
    return sorted(p.parent for p in ATT.rglob("code.json"))


def code_frame(folder: Path) -> pd.DataFrame:
    doc = json.loads((folder / "code.json").read_text())
    assert doc["header"] == "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle"
    frame = pd.DataFrame(doc["code"], columns=["isa", "_", "line", "source", "codeobj", "vaddr", "hit", "latency", "stall", "idle"])
    return frame


def label_of(folder: Path) -> str:
    frame = code_frame(folder)
    row = frame[frame.isa.str.startswith(";")].iloc[0]
    return row.source or row.isa[1:].strip()


def instructions(folder: Path) -> pd.DataFrame:
    frame = code_frame(folder)
    return frame[~frame.isa.str.startswith(";")]


def wave_leaves(folder: Path) -> int:
    tree = json.loads((folder / "filenames.json").read_text())["wave_filenames"]
    return sum(len(slot) for se in tree.values() for simd in se.values() for slot in simd.values())


def decoder_waits(folder: Path) -> dict[int, Counter]:
    records: dict[int, Counter] = {}
    for path in folder.glob("se*_sm*_sl*_wv*.json"):
        for line, deps in json.loads(path.read_text())["wave"]["waitcnt"]:
            records.setdefault(line, Counter()).update(d[0] for d in deps)
    return records


def table_percentages(s) -> set[str]:
    """Every percentage the summary's tables print."""
    found = {pct(v) for v in s.categories.values()} | {pct(v) for v in s.reasons.values()}
    found |= {pct(h.share) for h in s.hot} | {pct(w.share) for w in s.waits}
    for c in s.costs.values():
        found |= set(re.findall(r"\d+\.\d%", c.parts()))
    if s.bank_conflicts:
        found.add(pct(s.bank_conflicts.excess_share))
    return found


def assert_findings_quote_tables(s) -> None:
    tables = table_percentages(s)
    for finding in s.findings:
        for figure in re.findall(r"\d+\.\d%", finding):
            assert figure in tables, (figure, finding)


# -- AMD: a folder of several kernels' dispatches --------------------------------------------------


def test_each_dispatch_is_its_own_summary_never_merged():
    """Instruction indices restart in every code.json: the old reader added the layernorm's
    s_waitcnt lgkmcnt(0) at index N to whatever other kernels had at N."""
    folders = dispatches()
    assert len(folders) == 4 and len({label_of(f) for f in folders}) == 4
    costliest = max(folders, key=lambda f: (instructions(f).latency + instructions(f).idle).sum())
    s = summarise_folder(ATT, None, "att-gfx950", vendors=VENDORS)
    assert {b.kernel for b in s.found} == {label_of(f) for f in folders} and len(s.found) == 4
    assert s.kernel == label_of(costliest) and s.found[0].kernel == s.kernel
    assert s.facts[0].startswith("summarised: the costliest dispatch")
    for folder in folders:
        one = summarise_folder(ATT, label_of(folder), "att-gfx950", vendors=VENDORS)
        rows = instructions(folder)
        assert one.kernel == label_of(folder) and one.arch == "gfx950"
        assert one.total == (rows.latency + rows.idle).sum() and one.instructions == len(rows)
        by_address = rows.set_index("vaddr")
        for h in one.hot:  # each hot instruction's figures are this dispatch's row, nothing added
            assert (h.hits, h.cost) == (by_address.hit[h.address], by_address.latency[h.address] + by_address.idle[h.address])
            assert h.isa == by_address.isa[h.address]


def test_stall_issue_and_idle_are_kept_apart_in_every_category():
    for folder in dispatches():
        s = summarise_folder(folder, None, folder.name, within=ATT, vendors=VENDORS)
        rows = instructions(folder)
        assert sum(c.stall for c in s.costs.values()) == rows.stall.sum()
        assert sum(c.issue for c in s.costs.values()) == (rows.latency - rows.stall).sum()
        assert sum(c.idle for c in s.costs.values()) == rows.idle.sum()
        waits = rows[rows.isa.str.startswith("s_waitcnt")]
        assert (waits.latency == waits.stall).all()  # a wait's duration is all stall
        wait_costs = [s.costs[k] for k in ("VMEM wait", "LDS/SMEM wait") if k in s.costs]
        assert sum(c.stall for c in wait_costs) == waits.stall.sum() and all(c.issue == 0 for c in wait_costs)
        vmem = rows[rows.isa.str.startswith(VMEM)]
        if len(vmem):
            c = s.costs["VMEM instructions"]
            assert (c.stall, c.issue, c.idle) == (vmem.stall.sum(), (vmem.latency - vmem.stall).sum(), vmem.idle.sum())
        for name, share in s.categories.items():
            assert share == pytest.approx(s.costs[name].total / (rows.latency + rows.idle).sum())
        assert_findings_quote_tables(s)


def test_waves_are_counted_per_dispatch_from_filenames_and_folder():
    total = 0
    for folder in dispatches():
        s = summarise_folder(folder, None, folder.name, within=ATT, vendors=VENDORS)
        files = len(list(folder.glob("se*_sm*_sl*_wv*.json")))
        assert s.waves == files == wave_leaves(folder)
        total += files
    vec_add = next(f for f in dispatches() if label_of(f) == "vecAddKernel_0")
    assert wave_leaves(vec_add) == 632 and total == 632 + 16 + 8 + 4
    s = summarise_folder(vec_add, None, "vec_add", within=ATT, vendors=VENDORS)
    assert "632 waves" in s.render() and all(w.attribution.endswith("64 of 632 wave files") for w in s.waits if w.waits_for)


def test_waits_name_what_the_decoder_recorded():
    """Producers come from the wave files' waitcnt records (all of them where a dispatch has at
    most 64 wave files); nearest-preceding-load guesses disagree with them for many waits."""
    disagreements = 0
    for folder in dispatches():
        waves = len(list(folder.glob("se*_wv*.json")))
        if waves > 64:
            continue
        records = decoder_waits(folder)
        rows = instructions(folder).set_index("line")
        s = summarise_folder(folder, None, folder.name, within=ATT, vendors=VENDORS)
        assert s.waits
        for w in s.waits:
            named = records.get(w.index, Counter())
            assert {p.index: p.records for p in w.waits_for} == dict(named)
            assert w.attribution == (f"decoder records, all {waves} wave files" if named else "decoder recorded no outstanding load")
            assert w.cost == rows.stall[w.index] and w.address == rows.vaddr[w.index]
            earlier = [i for i in rows.index if i < w.index and rows.isa[i].startswith(VMEM + ("ds_", "s_load"))]
            if named and earlier and earlier[-1] not in named:
                disagreements += 1
    assert disagreements >= 5  # the estimate the decoder's records replace was wrong this often


def test_same_kernel_two_dispatches_are_listed_apart(tmp_path):
    """Two dispatches of one kernel: each listed, the one asked for by number summarised."""
    layernorm = next(f for f in dispatches() if label_of(f) == "layernorm_kernel_0")
    shutil.copytree(layernorm, tmp_path / "ui_output_agent_22257_dispatch_23")
    second = tmp_path / "ui_output_agent_22257_dispatch_24"
    shutil.copytree(layernorm, second)
    doc = json.loads((second / "code.json").read_text())
    for row in doc["code"]:
        row[7] *= 2  # the second launch ran twice as long
        row[8] *= 2
    (second / "code.json").write_text(json.dumps(doc, separators=(",", ":")))
    s = summarise_folder(tmp_path, "layernorm", "two", vendors=VENDORS)
    assert [b.dispatch for b in s.found] == ["agent 22257 dispatch 24", "agent 22257 dispatch 23"]
    first = summarise_folder(tmp_path, "layernorm", "two", dispatch=23, vendors=VENDORS)
    assert first.dispatch == "agent 22257 dispatch 23" and first.total == (instructions(layernorm).latency + instructions(layernorm).idle).sum()
    assert s.total - first.total == instructions(layernorm).latency.sum()


def write_stats_csv(folder: Path, target: Path) -> None:
    """A stats CSV in the writer's layout (rocprofiler-sdk att-tool code.cpp), from a real code.json."""
    frame = code_frame(folder)
    rows = frame[~frame.isa.str.startswith(";")].sort_values(["codeobj", "vaddr"])
    label = frame[frame.isa.str.startswith(";")].iloc[0]
    with target.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["CodeObj", "Vaddr", "Instruction", "Hitcount", "Latency", "Stall", "Idle", "Source"])
        out.writerow([label.codeobj, label.vaddr, label.isa, 0, 0, 0, 0, label.source])
        for r in rows.itertuples():
            out.writerow([r.codeobj, r.vaddr, r.isa, r.hit, r.latency, r.stall, r.idle, r.source])


def test_stats_csv_and_code_json_name_instructions_alike(tmp_path):
    """code.json numbers by LineNumber and the CSV by row; both carry Vaddr, the one name used."""
    folder = next(f for f in dispatches() if label_of(f) == "hgemm_bf16_32x64x256_W1x2x2_S2_BT_BLDS1_AS1_SPK14_0")
    stats = tmp_path / f"stats_{folder.name}.csv"
    write_stats_csv(folder, stats)
    from_code = summarise_folder(folder, None, "code", within=ATT, vendors=VENDORS)
    from_stats = summarise_file(stats, None, "stats", tmp_path, vendors=VENDORS)
    assert from_stats.kernel == from_code.kernel and from_stats.dispatch == from_code.dispatch
    assert [(h.address, h.isa, h.cost) for h in from_stats.hot] == [(h.address, h.isa, h.cost) for h in from_code.hot]
    assert from_stats.categories.keys() <= set(from_code.categories) | {"VMEM wait", "LDS/SMEM wait"}
    shutil.copytree(folder, tmp_path / folder.name)
    both = summarise_folder(tmp_path, None, "both", vendors=VENDORS)
    assert len(both.found) == 1 and both.source == "rocprofv3 thread trace"  # the stats CSV of a decoded dispatch is not a second one


# -- NVIDIA: ncu's source page of a bank-conflicted kernel ----------------------------------------


def ncu_sections(path: Path) -> list[tuple[str, pd.DataFrame]]:
    rows = list(csv.reader(path.open()))
    starts = [i for i, r in enumerate(rows) if r and r[0] == "Kernel Name"] + [len(rows)]
    out = []
    for a, b in zip(starts, starts[1:]):
        frame = pd.DataFrame(rows[a + 2 : b], columns=rows[a + 1])
        out.append((rows[a][1], frame.apply(pd.to_numeric, errors="coerce").fillna(0).assign(Source=frame.Source)))
    return out


@pytest.mark.parametrize("path", [BANK_SASS, BANK_CUDA_SASS])
def test_bank_conflicts_are_named_from_the_shared_wavefront_columns(path):
    sections = ncu_sections(BANK_SASS)
    assert len(sections) == 4 and len({name for name, _ in sections}) == 2  # each kernel printed twice
    name, frame = sections[0]
    samples, wavefronts = frame["Warp Stall Sampling (All Samples)"].sum(), frame["L1 Wavefronts Shared"].sum()
    ideal, excess = frame["L1 Wavefronts Shared Ideal"].sum(), frame["L1 Wavefronts Shared Excessive"].sum()
    details = (DATA / "cuda" / "ncu_details_bank.csv").read_text()
    assert f"total of {excess:.0f} excessive wavefronts (97% of the total {wavefronts:.0f} wavefronts)" in details
    s = summarise_file(path, None, path.name, DATA, vendors=VENDORS)
    assert s.kernel == name and len(s.found) == 2 and s.total == samples
    b = s.bank_conflicts
    assert (b.wavefronts, b.ideal, b.excess) == (wavefronts, ideal, excess) and b.excess_share == excess / wavefronts
    assert b.top[0].isa.startswith("LDS") and b.top[0].wavefronts / b.top[0].executed == 32.0
    conflict = [f for f in s.findings if f.startswith("shared-memory bank conflicts")]
    assert conflict and pct(excess / wavefronts) in conflict[0] and "96.8%" in conflict[0]
    long_sb = frame["stall_long_sb"].sum() / samples
    assert any(f"(long_sb) take {pct(long_sb)} of the samples" in f for f in s.findings) and pct(long_sb) == "0.1%"
    assert not any("global-memory waits take" in f for f in s.findings)
    shared_wait = (frame["stall_short_sb"].sum() + frame["stall_mio"].sum() + frame["stall_imc"].sum()) / samples
    assert s.categories["LDS/SMEM wait"] == pytest.approx(shared_wait) and pct(shared_wait) in s.findings[0]
    assert_findings_quote_tables(s)
    assert len(s.render().encode()) <= 4096


def test_the_conflict_free_twin_is_summarised_when_asked_for():
    name, frame = ncu_sections(BANK_SASS)[2]
    s = summarise_file(BANK_SASS, "transpose_read<(int)1>", "bank", DATA, vendors=VENDORS)
    assert s.kernel == name and s.total == frame["Warp Stall Sampling (All Samples)"].sum()
    assert s.bank_conflicts.excess == 0 and s.bank_conflicts.wavefronts == frame["L1 Wavefronts Shared"].sum()
    assert any(f.startswith("no shared-memory bank conflicts") for f in s.findings)
    assert not any(f.startswith("shared-memory bank conflicts") for f in s.findings)


def test_an_export_without_wavefront_columns_says_it_cannot_tell(tmp_path):
    """The conv3d export (../shared) has no L1 Wavefronts Shared columns: nothing is claimed."""
    from conftest import fixture

    s = summarise_file(fixture("cuda/ncu_source_sass.csv"), None, "conv3d", fixture("cuda/ncu_source_sass.csv").parent, vendors=VENDORS)
    assert s.bank_conflicts is None and not any("bank conflicts" in f and "cannot" not in f for f in s.findings)


# -- through the tool: the label is the trace's kernel; compile facts only for that kernel and arch --


def _history(ws: Path, entries: dict[str, dict]) -> None:
    state = ws / ".kernel-mcp"
    state.mkdir(exist_ok=True)
    (state / "compile-history.json").write_text(json.dumps(entries))


def _facts(name: str, symbol: str, vgprs: int) -> dict:
    return {
        "name": name,
        "symbol": symbol,
        "vgprs": vgprs,
        "agprs": 0,
        "sgprs": 40,
        "lds_bytes": 0,
        "occupancy": {"waves": 8, "max_waves": 8, "limiter": ["VGPRs"]},
    }


@pytest.mark.anyio
async def test_imports_are_labelled_by_the_trace_and_get_only_matching_compile_facts(workspace):
    from mcp import Client

    from conftest import text_of
    from kernel_mcp.server import build_server

    shutil.copytree(ATT / "layernorm", workspace / "att" / "layernorm")
    shutil.copy(BANK_SASS, workspace / "bank.csv")
    # the workspace's target kernel (k_main, gfx950) has facts; so has layernorm, but for gfx942 first
    _history(
        workspace,
        {
            "gfx950:src/k.hip:k_main": _facts("k_main", "k_main", 108),
            "gfx942:kernels/layernorm.py:layernorm_kernel_0": _facts("layernorm_kernel_0", "layernorm_kernel_0", 64),
            "sm_90a:bank_conflict.cu:transpose_read": _facts("transpose_read", "_Z14transpose_readILi0EEvPKfPfi", 12),
        },
    )
    async with Client(build_server(workspace)) as client:
        nvidia = await client.call_tool("thread_trace_import", {"path": "bank.csv"})
        text = text_of(nvidia)
        assert not nvidia.is_error and text.startswith("trace of void transpose_read<(int)0>(const float *, float *, int) (ncu source counters")
        assert "k_main" not in text and "VGPR 108" not in text and "compile (" not in text
        assert "compile facts not attached: the trace does not say which architecture it ran on (the history has sm_90a)" in text
        amd = await client.call_tool("thread_trace_import", {"path": "att"})
        assert amd.structured_content["kernel"] == "layernorm_kernel_0" and amd.structured_content["arch"] == "gfx950"
        assert "compile (" not in text_of(amd)  # layernorm was compiled for gfx942 only
        _history(workspace, {"gfx950:kernels/layernorm.py:layernorm_kernel_0": _facts("layernorm_kernel_0", "layernorm_kernel_0", 64)})
        again = await client.call_tool("thread_trace_import", {"path": "att"})
        assert "fact: compile (gfx950): VGPR 64 AGPR 0 SGPR 40" in text_of(again)
        missing = await client.call_tool("thread_trace_import", {"path": "bank.csv", "kernel": "conv3d_fast"})
        assert missing.is_error and "matches kernel='conv3d_fast'" in text_of(missing) and "transpose_read" in text_of(missing)
        picked = await client.call_tool("thread_trace_import", {"path": "bank.csv", "kernel": "transpose_read<(int)1>"})
        assert picked.structured_content["kernel"].startswith("void transpose_read<(int)1>")
        cmp = await client.call_tool("thread_trace_compare", {"a": nvidia.structured_content["run_id"], "b": picked.structured_content["run_id"]})
        assert "transpose_read<(int)0>" in text_of(cmp) and "transpose_read<(int)1>" in text_of(cmp)


# -- where a trace's target comes from (issue 32) ----------------------------------------------------


def _layernorm_run(tmp_path: Path) -> Path:
    """The real layernorm dispatch folder with its run's agent_info.csv beside it, as rocprofv3 lays a run out."""
    run = tmp_path / "run"
    source = next(f for f in dispatches() if label_of(f) == "layernorm_kernel_0")
    shutil.copytree(source, run / source.name)
    shutil.copy(ATT / "layernorm" / "compute_viewer" / "big_agent_info.csv", run / "big_agent_info.csv")
    return run


def test_the_target_of_a_trace_names_the_file_it_came_from(tmp_path):
    run = _layernorm_run(tmp_path)
    s = summarise_folder(run, None, "t", vendors=VENDORS)
    assert s.arch == "gfx950"
    assert "target gfx950 from big_agent_info.csv (beside the trace)" in s.facts
    whole = summarise_folder(ATT, None, "att-gfx950", vendors=VENDORS)  # each kernel's agent info sits in a sibling folder, not beside its trace
    assert whole.arch == "gfx950" and any("compute_viewer/big_agent_info.csv" in f and "not beside the trace" in f for f in whole.facts), whole.facts


def test_an_agent_info_of_another_gpu_does_not_label_the_trace(tmp_path):
    """The same folder with another run's agent_info.csv: the real file with its GPU rows renamed gfx1100 (assembled here:
    no public gfx11 agent_info was found). The trace's own filenames.json says gfx major 9, so no target is claimed."""
    run = _layernorm_run(tmp_path)
    with (run / "big_agent_info.csv").open() as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        if row["Agent_Type"] == "GPU":
            row["Name"] = "gfx1100"
    (run / "big_agent_info.csv").unlink()
    with (run / "other_agent_info.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    s = summarise_folder(run, None, "t", vendors=VENDORS)
    assert s.arch is None
    assert any("other_agent_info.csv names gfx1100" in f and "gfx major version 9" in f for f in s.facts), s.facts
