"""Profiling: recorded real outputs parse unchanged; orchestration runs against stand-ins that
replay them (the real profilers were exercised on the device); rocpd databases built from the
official DDL give the same summary as the equivalent CSV."""

from __future__ import annotations

import os
import shutil
import stat
import textwrap
from pathlib import Path

import pandas as pd
import anyio
import pytest
from mcp import Client

from kernel_mcp.errors import InvalidInput
from kernel_mcp.profile import counters as ctr
from kernel_mcp.profile import parsers, rocpd
from kernel_mcp.profile.summary import summarise
from kernel_mcp.server import build_server

from conftest import PY, data, fixture, toml_list
from rocpd_builder import build as build_rocpd

pytestmark = pytest.mark.anyio
SCHEMA = fixture("rocm/rocpd-schema")


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.mark.parametrize("name", ["sdk-kernel_trace.csv", "sdk2508-kernel_trace.csv"])
def test_rocprofv3_kernel_traces_parse(name):
    frame = parsers.read_kernel_trace(fixture(f"rocm/{name}"))
    assert len(frame) > 0 and (frame["duration_ns"] > 0).all()
    s = summarise(frame, "rocprofv3", "addition")
    assert s.kernels[0].calls >= 1 and any(k.target for k in s.kernels)
    assert abs(sum(k.share for k in s.kernels) - 1) < 1e-9
    if name.startswith("sdk2508"):
        assert s.kernels[0].vgprs is not None and "agprs" in frame.columns  # the newer columns are read


@pytest.mark.parametrize("name", ["sdk-counter_collection.csv", "sdk2508-counter_collection.csv"])
def test_counter_collections_parse(name):
    frame = parsers.read_counter_collection(fixture(f"rocm/{name}"))
    assert set(frame["counter"]) >= {"SQ_WAVES"} and frame["value"].notna().all()


def test_list_avail_parses():
    listing = parsers.parse_list_avail(fixture("rocm/sdk2508-list-avail.txt").read_text())
    assert "SQ_WAVES" in listing and listing["SQ_WAVES"]["block"] == "SQ"
    assert "400*reduce(SQ_WAIT_INST_LDS" in listing["ALUStalledByLDS"]["expression"]


def test_ncu_outputs_parse():
    for name in ("ncu_metrics.csv", "ncu_metrics_conv3d_bigger.csv"):
        frame = parsers.read_ncu_metrics(fixture(f"cuda/{name}").read_text())
        assert len(frame) >= 1 and frame.iloc[0]["kernel"] == "dwconv3d_naive"
        assert frame.iloc[0]["metrics"]["gpu__time_duration.sum"] > 1000  # "34,784": thousands separators
    raw = parsers.read_ncu_raw(fixture("cuda/ncu_raw.csv").read_text())
    assert raw.iloc[0]["block"] == (256, 1, 1) and len(raw.iloc[0]["metrics"]) > 50


@pytest.mark.parametrize(
    "content, expected",
    [
        ("", "empty"),
        ("a,b\n1,2\n", "lacks column"),
        ('"Kind","Kernel_Name","Start_Timestamp","End_Timestamp"\n"KERNEL_DISPATCH","k",10,\n', "without timestamps"),
        ('"Kind","Kernel_Name","Start_Timestamp","End_Timestamp"\n"KERNEL_DISPATCH","k",20,10\n', "ends before it starts"),
        ("\x00\x01\x02garbage", "lacks column"),
    ],
)
def test_malformed_traces_get_clear_errors(tmp_path, content, expected):
    path = tmp_path / "kernel_trace.csv"
    path.write_text(content)
    with pytest.raises(InvalidInput, match=expected):
        parsers.read_kernel_trace(path)


def test_truncated_ncu_output():
    with pytest.raises(InvalidInput, match="no ncu CSV table"):
        parsers.read_ncu_metrics("==PROF== Connected to process 1\n")


# ---------------------------------------------------------------- orchestration ----------------
STAND_IN_ROCPROF = textwrap.dedent(
    """
    import os, shutil, subprocess, sys
    args = sys.argv[1:]
    if args == ["--help"]:
        print("usage: rocprofv3 [options] -- app" + (" (output formats: csv rocpd)" if os.environ.get("KMCP_ROCPD") else "")); sys.exit(0)
    if args == ["--list-avail"]:
        sys.stdout.write(open(os.environ["KMCP_FIX"] + "/sdk2508-list-avail.txt").read()); sys.exit(0)
    cmd = args[args.index("--") + 1:]; opts = args[:args.index("--")]
    out = opts[opts.index("-d") + 1]; name = opts[opts.index("-o") + 1]
    os.makedirs(out, exist_ok=True)
    if "--pmc" in opts:
        pmc = opts[opts.index("--pmc") + 1: opts.index("--output-format")]
        if len(pmc) > 1:
            print("Request exceeds the capabilities of the hardware to collect", file=sys.stderr); sys.exit(1)
    code = subprocess.call(cmd)
    if "--pmc" in opts:
        lines = open(os.environ["KMCP_FIX"] + "/sdk2508-counter_collection.csv").read().splitlines()
        body = [l.replace('"SQ_WAVES"', '"%s"' % pmc[0]) for l in lines[1:]]
        open(os.path.join(out, name + "_counter_collection.csv"), "w").write("\\n".join([lines[0]] + body) + "\\n")
    elif opts[opts.index("--output-format") + 1] == "rocpd":
        sys.path.insert(0, os.environ["KMCP_TESTS"])
        from rocpd_builder import build
        import csv as _csv
        rows = [{"name": r["Kernel_Name"], "start": int(r["Start_Timestamp"]), "end": int(r["End_Timestamp"])} for r in _csv.DictReader(open(os.environ["KMCP_FIX"] + "/sdk2508-kernel_trace.csv"))]
        from pathlib import Path
        build(Path(out) / (name + "_results.db"), Path(os.environ["KMCP_FIX"]) / "rocpd-schema", rows)
    else:
        shutil.copy(os.environ["KMCP_FIX"] + "/sdk2508-kernel_trace.csv", os.path.join(out, name + "_kernel_trace.csv"))
    sys.exit(code)
    """
)
STAND_IN_NCU = textwrap.dedent(
    """
    import os, shutil, subprocess, sys
    args = sys.argv[1:]
    cmd = args[args.index("--") + 1:]
    log = args[args.index("--log-file") + 1]
    code = subprocess.call(cmd)
    shutil.copy(os.environ["KMCP_FIX_CUDA"] + "/ncu_metrics.csv", log)
    sys.exit(code)
    """
)


def _install(bindir: Path, name: str, body: str) -> None:
    path = bindir / name
    path.write_text(f"#!{PY}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def gpu_ws(tmp_path, monkeypatch):
    """A workspace whose benchmark runs on the CPU, with stand-in profilers and a stand-in nvidia-smi
    (replaying the recorded H100 report) on PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _install(bindir, "rocprofv3", STAND_IN_ROCPROF)
    _install(bindir, "ncu", STAND_IN_NCU)
    _install(bindir, "nvidia-smi", f"import sys; sys.stdout.write(open({str(fixture('cuda/nvidia-smi-q-x.xml'))!r}).read())\n")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("KMCP_FIX", str(fixture("rocm")))
    monkeypatch.setenv("KMCP_FIX_CUDA", str(fixture("cuda")))
    monkeypatch.setenv("KMCP_TESTS", str(Path(__file__).parent))
    monkeypatch.setenv("KERNEL_MCP_LOCK_DIR", str(tmp_path / "locks"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "bench.py").write_text(
        "import os; os.makedirs('out', exist_ok=True); open('out/b.csv','w').write('shape,err_k,us_k\\na,0,1.0\\n'); print('bench ran', os.environ.get('CUDA_VISIBLE_DEVICES'))\n"
    )
    return ws


def _toml(ws: Path, platform: str, arch: str) -> None:
    (ws / "kernel-mcp.toml").write_text(
        f'[target]\narch = "{arch}"\nplatform = "{platform}"\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\ncsv = "out/b.csv"\n'
        'correctness = { column = "err_k" }\nmetric = "us_k"\ntarget_kernel = "addition"\ntimeout_s = 30\n[gate]\ninterval_s = 0.2\nlimit_s = 1\n'
    )


async def test_profile_kernels_rocm_with_counter_passes(gpu_ws):
    _toml(gpu_ws, "rocm", "gfx950")
    async with Client(build_server(gpu_ws)) as client:
        result = await client.call_tool("profile_kernels", {"counters": ["SQ_WAVES", "ALUStalledByLDS"]})
        assert not result.is_error, text_of(result)
        data = result.structured_content
        assert data["source"] == "rocprofv3" and data["kernels"][0]["target"] is False or any(k["target"] for k in data["kernels"])
        assert any("split" in n for n in data["notes"]) and any("2 pass(es)" in n for n in data["notes"])
        assert {c["kernel"] for c in data["counters"]} and "SQ_WAVES" in data["counters"][0]["counters"]
        assert any("ALUStalledByLDS" == d["name"] and "reduce(SQ_WAIT_INST_LDS" in d["definition"] for row in data["counters"] for d in row["derived"])
        assert any("GPU 0" in n for n in data["notes"])  # the gate chose and pinned the GPU
        bad = await client.call_tool("profile_kernels", {"counters": ["SQ_WAVEZ"]})
        assert bad.is_error and "SQ_WAVES" in text_of(bad)  # close matches listed
        wrong = await client.call_tool("profile_kernels", {"kernel_regex": "("})
        assert wrong.is_error


async def test_profile_kernels_reads_rocpd_when_the_profiler_writes_it(gpu_ws, monkeypatch):
    _toml(gpu_ws, "rocm", "gfx950")
    monkeypatch.setenv("KMCP_ROCPD", "1")
    async with Client(build_server(gpu_ws)) as client:
        result = await client.call_tool("profile_kernels", {})
        assert not result.is_error, text_of(result)
        assert result.structured_content["source"] == "rocpd" and any("output format rocpd" in n for n in result.structured_content["notes"])
        doctor = await client.call_tool("doctor", {})
        assert any("rocprofv3 output format in use: rocpd" in n for n in doctor.structured_content["notes"])


async def test_profile_kernels_cuda_and_compare(gpu_ws):
    _toml(gpu_ws, "cuda", "sm_90")
    async with Client(build_server(gpu_ws)) as client:
        first = await client.call_tool("profile_kernels", {})
        assert not first.is_error, text_of(first)
        k = first.structured_content["kernels"][0]
        assert k["name"] == "dwconv3d_naive" and k["calls"] == 3 and k["block"] == "256x1x1" and k["vgprs"] == 40
        second = await client.call_tool("profile_kernels", {})
        cmp = await client.call_tool("profile_compare", {"run_a": first.structured_content["run_id"], "run_b": second.structured_content["run_id"]})
        assert "dwconv3d_naive" in text_of(cmp) and "+0.0%" in text_of(cmp)
        log = gpu_ws / ".kernel-mcp" / "runs" / first.structured_content["run_id"] / "ncu.stdout.log"
        assert "GPU-2ff7243f" in log.read_text()  # the benchmark ran pinned to the gated GPU


async def test_profile_timeout_and_missing_profiler(gpu_ws, monkeypatch):
    _toml(gpu_ws, "rocm", "gfx950")
    (gpu_ws / "bench.py").write_text("import time; time.sleep(600)\n")
    text = (gpu_ws / "kernel-mcp.toml").read_text().replace("timeout_s = 30", "timeout_s = 1")
    (gpu_ws / "kernel-mcp.toml").write_text(text)
    async with Client(build_server(gpu_ws)) as client:
        result = await client.call_tool("profile_kernels", {})
        assert result.is_error and "timed out" in text_of(result)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    async with Client(build_server(gpu_ws)) as client:
        result = await client.call_tool("profile_kernels", {})
        assert result.is_error


async def test_collect_in_passes_halves_rejected_groups():
    calls = []

    async def run_pass(group):
        calls.append(list(group))
        return (group, "too many") if len(group) > 2 else (group, None)

    results, notes = await ctr.collect_in_passes([f"C{i}" for i in range(7)], 8, run_pass)
    assert [len(g) for g in results] == [1, 2, 2, 2] or sum(len(g) for g in results) == 7
    assert all(len(g) <= 2 for g in results) and notes


# ---------------------------------------------------------------- rocpd (issue 13) -------------
def _dispatches_from_csv(path: Path) -> list[dict]:
    frame = pd.read_csv(path)
    return [
        {
            "name": r.Kernel_Name,
            "start": int(r.Start_Timestamp),
            "end": int(r.End_Timestamp),
            "wg": int(r.Workgroup_Size_X),
            "grid": int(r.Grid_Size_X),
            "grid_y": int(r.Grid_Size_Y),
            "vgprs": int(r.VGPR_Count),
            "agprs": int(r.Accum_VGPR_Count),
            "sgprs": int(r.SGPR_Count),
            "lds": int(r.LDS_Block_Size),
            "scratch": int(r.Scratch_Size),
        }
        for r in frame.itertuples()
    ]


def test_rocpd_summary_equals_csv_summary(tmp_path):
    csv = fixture("rocm/sdk2508-kernel_trace.csv")
    db = build_rocpd(tmp_path / "run.db", SCHEMA, _dispatches_from_csv(csv))
    from_csv = summarise(parsers.read_kernel_trace(csv), "rocprofv3", "addition")
    from_db = rocpd.summary([db], "addition", ["run.db"])
    assert [k.name for k in from_db.kernels] == [k.name for k in from_csv.kernels]
    for a, b in zip(from_csv.kernels, from_db.kernels):
        for field in ("calls", "total_us", "avg_us", "median_us", "min_us", "max_us", "share", "grid", "block", "vgprs", "agprs", "sgprs", "target"):
            assert getattr(a, field) == pytest.approx(getattr(b, field)), (a.name, field)
    assert "gfx950 AMD Instinct MI350X" in from_db.origins[0] and "pid 4242" in from_db.origins[0]


ALL_KERNELS = "_kernel"  # every kernel of the fixture, so that four groups come first-seen in start order


def _expected_from_csv(path: Path, regex: str) -> dict[str, list[float]]:
    """pandas on the raw file, not through the parser: group by name and grid, in GPU start order."""
    frame = pd.read_csv(path)
    frame = frame[frame["Kernel_Name"].str.contains(regex)].sort_values("Start_Timestamp")
    out: dict[str, list[float]] = {}
    for r in frame.itertuples():
        out.setdefault(f"{r.Kernel_Name}|{r.Grid_Size_X}x{r.Grid_Size_Y}x{r.Grid_Size_Z}", []).append(float(r.End_Timestamp - r.Start_Timestamp))
    return out


def _expected_from_db(path: Path, regex: str) -> dict[str, list[float]]:
    """sqlite3 on the raw tables (not the `kernels` view the reader uses), suffixes looked up."""
    import re
    import sqlite3

    con = sqlite3.connect(path)
    table = lambda prefix: con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?", (prefix + "%",)).fetchone()[0]  # noqa: E731
    rows = con.execute(
        f"SELECT S.display_name, K.grid_size_x, K.grid_size_y, K.grid_size_z, K.end - K.start FROM `{table('rocpd_kernel_dispatch_')}` K "
        f"JOIN `{table('rocpd_info_kernel_symbol_')}` S ON S.id = K.kernel_id ORDER BY K.start"
    ).fetchall()
    con.close()
    out: dict[str, list[float]] = {}
    for name, gx, gy, gz, duration in rows:
        if re.search(regex, name):
            out.setdefault(f"{name}|{gx}x{gy}x{gz}", []).append(float(duration))
    return out


def test_rocpd_hands_over_the_same_target_dispatches_as_csv(tmp_path, monkeypatch):
    """The ledger's keep reads target_dispatches/target_calls; from rocpd they were empty, so the keep
    fell back to the CSV metric while saying "profiler". Same dispatches, same data, both ways."""
    from kernel_mcp.profile import summary as summary_mod

    csv = fixture("rocm/sdk2508-kernel_trace.csv")
    db = build_rocpd(tmp_path / "run.db", SCHEMA, _dispatches_from_csv(csv))
    expected = _expected_from_csv(csv, ALL_KERNELS)
    assert expected == _expected_from_db(db, ALL_KERNELS)
    addition = "void addition_kernel<float>(float*, float const*, float const*, int, int)|1024x1024x1"
    assert expected[addition] == [12800.0, 11400.0, 9840.0]
    from_csv = summarise(parsers.read_kernel_trace(csv), "rocprofv3", ALL_KERNELS)
    from_db = rocpd.summary([db], ALL_KERNELS, ["run.db"])
    assert list(from_csv.target_dispatches.items()) == list(expected.items())  # order of groups and of times too
    assert list(from_db.target_dispatches.items()) == list(expected.items())
    assert from_csv.target_calls == from_db.target_calls == {k: len(v) for k, v in expected.items()}
    assert sum(from_db.target_calls.values()) == 9
    # Past the per-group cap both keep the earliest dispatches and still count all of them.
    monkeypatch.setattr(summary_mod, "MAX_GROUP_SAMPLES", 1)
    monkeypatch.setattr(rocpd, "MAX_GROUP_SAMPLES", 1)
    capped_csv = summarise(parsers.read_kernel_trace(csv), "rocprofv3", "addition")
    capped_db = rocpd.summary([db], "addition", ["run.db"])
    assert capped_csv.target_dispatches == capped_db.target_dispatches == {addition: [12800.0]}
    assert capped_csv.target_calls == capped_db.target_calls == {addition: 3}
    assert rocpd.summary([db], None, ["run.db"]).target_dispatches == {}  # no target regex, no target


def test_rocpd_several_databases_merge_with_sources(tmp_path):
    first = build_rocpd(tmp_path / "a.db", SCHEMA, [{"name": "k", "start": 0, "end": 100}, {"name": "k", "start": 200, "end": 400}], pid=1)
    second = build_rocpd(tmp_path / "b.db", SCHEMA, [{"name": "k", "start": 0, "end": 300}], pid=2)
    s = rocpd.summary([first, second], "k", ["a.db", "b.db"])
    k = s.kernels[0]
    assert (k.calls, k.total_us, k.median_us) == (3, 0.6, 0.2) and k.sources == ["a.db", "b.db"]
    assert len(s.origins) == 2


def test_rocpd_counters_and_derived(tmp_path):
    db = build_rocpd(
        tmp_path / "c.db",
        SCHEMA,
        [{"name": "k", "start": 0, "end": 1000}, {"name": "k", "start": 2000, "end": 3000}],
        counters=[
            {"dispatch": 1, "counter": "TCC_HIT_sum", "value": 90.0},
            {"dispatch": 1, "counter": "TCC_MISS_sum", "value": 10.0},
            {"dispatch": 2, "counter": "TCC_HIT_sum", "value": 70.0},
            {"dispatch": 2, "counter": "TCC_MISS_sum", "value": 30.0},
        ],
    )
    s = rocpd.summary([db], None, ["c.db"])
    row = s.counters[0]
    assert row.counters == {"TCC_HIT_sum": 80.0, "TCC_MISS_sum": 20.0}
    # the database's GPU agent names gfx950: rocprof-compute's gfx950 L2 hit rate
    hit = next(d for d in row.derived if d.name == "L2 Speed-of-Light: Hit Rate")
    assert hit.value == 80.0 and hit.unit == "pct" and "rocprof-compute 3.3.0 gfx950/1700_l2_cache.yaml" in hit.definition
    assert any("definitions for gfx950" in n and "c.db" in n for n in s.notes), s.notes


def test_rocpd_metrics_are_per_dispatch_with_the_machine_of_its_agent(tmp_path):
    """As rocprof-compute reads a rocpd database (its counters_collection export): each dispatch's ratio, then the mean,
    not the ratio of the mean counters; the machine figures from the agent rocprofv3 saved in rocpd_info_agent.extdata,
    here the fields of a real MI355X agent_info.csv row (HipKittens), as generateRocpd.cpp saves the same agent."""
    import csv

    row = next(r for r in csv.DictReader(data("rocm/hk-ds_read_b64-out/lds_conflict_agent_info.csv").open()) if r["Agent_Type"] == "GPU")
    fields = {k.lower(): (int(v) if v.isdigit() else v) for k, v in row.items()}
    db = build_rocpd(
        tmp_path / "c.db",
        SCHEMA,
        [{"name": "k", "start": 0, "end": 1000}, {"name": "k", "start": 2000, "end": 3000}],
        counters=[
            {"dispatch": 1, "counter": "TCC_HIT_sum", "value": 9.0},
            {"dispatch": 1, "counter": "TCC_MISS_sum", "value": 1.0},
            {"dispatch": 2, "counter": "TCC_HIT_sum", "value": 10.0},
            {"dispatch": 2, "counter": "TCC_MISS_sum", "value": 90.0},
        ],
        agent_fields=fields,
    )
    s = rocpd.summary([db], None, ["c.db"])
    hit = next(d for d in s.counters[0].derived if d.name == "L2 Speed-of-Light: Hit Rate")
    assert hit.value == pytest.approx((90.0 + 10.0) / 2) and "mean counters" not in hit.definition  # not 19 / 110
    note = next(n for n in s.notes if n.startswith("machine figures"))
    assert f"from c.db rocpd_info_agent: $cu_per_gpu {row['Cu_Count']} (cu_count)" in note and f"$max_sclk {row['Max_Engine_Clk_Fcompute']}" in note


def test_a_rocpd_database_whose_rows_are_in_its_write_ahead_log_is_read_whole_and_left_untouched(tmp_path):
    """A database in SQLite's WAL mode whose writer never checkpointed: its tables and rows are in `run.db-wal`, the
    file `run.db` alone holds almost nothing. The user copied both (no -shm) into a folder of theirs. Read in place
    with `immutable=1` the log is ignored and every row lost; `mode=ro` creates an -shm beside their files (and fails
    where the server may not write). The import reads a private copy of both in its run folder, removes it, and
    leaves the user's folder byte for byte as it was."""
    import hashlib
    import sqlite3

    from kernel_mcp.platforms import VENDORS
    from kernel_mcp.profile import profile_import
    from kernel_mcp.workspace import Workspace

    from conftest import BASIC_TOML, write_toml

    writer: list = []
    live = tmp_path / "node"
    live.mkdir()
    dispatches = [{"name": "k_main", "start": 1000 * i, "end": 1000 * i + 100 + i} for i in range(5)]
    build_rocpd(live / "run.db", SCHEMA, dispatches, wal_writer=writer)
    try:
        ws_root = tmp_path / "ws"
        (ws_root / "from-node").mkdir(parents=True)
        for name in ("run.db", "run.db-wal"):  # copied while the writer still holds them: a real WAL state
            shutil.copyfile(live / name, ws_root / "from-node" / name)
    finally:
        writer[0].close()
    user = ws_root / "from-node"
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in user.iterdir()}
    in_place = sqlite3.connect(f"{(user / 'run.db').as_uri()}?immutable=1", uri=True)
    assert in_place.execute("SELECT count(*) FROM sqlite_master WHERE name = 'kernels'").fetchone() == (0,)  # the log is where the tables are
    in_place.close()
    write_toml(ws_root, BASIC_TOML)
    ws = Workspace.open(ws_root)
    run = ws.runs.create("profile_import", {})
    s = profile_import(ws, run, ["from-node"], vendors=VENDORS)
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in user.iterdir()} == before  # no -shm, nothing written
    assert s.dispatches == 5 and s.kernels[0].calls == 5 and s.kernels[0].max_us == pytest.approx(0.104)
    db = next(f for f in s.inputs if f.path == "from-node/run.db")
    assert "write-ahead log" in (db.used_for or "") and "copy" in (db.used_for or "")
    wal = next(f for f in s.inputs if f.path == "from-node/run.db-wal")
    assert wal.skipped is None and "write-ahead log of run.db" in (wal.used_for or "")
    assert not (run.folder / "sqlite-copies").exists()
    # the writer closed: its checkpoint moved everything into run.db, still marked WAL mode, with no log beside it.
    # Read in place with immutable=1 (mode=ro would create -wal and -shm beside it, refused where the server may not write)
    closed = ws_root / "closed"
    closed.mkdir()
    shutil.copyfile(live / "run.db", closed / "run.db")
    assert not (live / "run.db-wal").exists() and (closed / "run.db").read_bytes()[18:20] == bytes([2, 2])
    s = profile_import(ws, ws.runs.create("profile_import", {}), ["closed"], vendors=VENDORS)
    assert s.kernels[0].calls == 5 and sorted(p.name for p in closed.iterdir()) == ["run.db"]


def test_rocpd_bad_databases(tmp_path):
    good = build_rocpd(tmp_path / "good.db", SCHEMA, [{"name": "k", "start": 0, "end": 10}])
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes(good.read_bytes()[:5000])
    (tmp_path / "text.db").write_text("not a database")
    (tmp_path / "empty.db").write_bytes(b"")
    import sqlite3

    missing = tmp_path / "missing.db"
    shutil.copy(good, missing)
    con = sqlite3.connect(missing)
    con.execute("DROP VIEW kernels")
    con.commit()
    con.close()
    blank = tmp_path / "blank.db"
    sqlite3.connect(blank).execute("CREATE TABLE x (a)").connection.close()
    for path, expected in [
        (truncated, "truncated or corrupt"),
        (tmp_path / "text.db", "not an SQLite database"),
        (tmp_path / "empty.db", "empty file"),
        (missing, "missing view kernels"),
        (blank, "missing view kernels"),
    ]:
        with pytest.raises(InvalidInput, match=expected):
            rocpd.summary([path], None, [path.name])


async def test_a_rocpd_view_that_never_ends_is_stopped_and_others_are_answered_meanwhile(tmp_path, monkeypatch):
    """A database whose `kernels` view is an endless recursive query: the import stops at its time
    budget with a clear error, and a call made meanwhile is answered (the import runs off the loop)."""
    import sqlite3
    import time

    monkeypatch.setattr(rocpd, "QUERY_BUDGET_S", 3.0)  # a wide margin over the quick call made meanwhile
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    db = build_rocpd(ws / "endless_results.db", SCHEMA, [{"name": "k", "start": 0, "end": 10}])
    con = sqlite3.connect(db)
    columns = [row[1] for row in con.execute("PRAGMA table_info(kernels)")]
    con.execute("DROP VIEW kernels")
    picks = ", ".join(f"NULL AS {c}" for c in columns)
    con.execute(f"CREATE VIEW kernels AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT {picks} FROM n WHERE i < 0")
    con.commit()
    con.close()
    answered: dict[str, float] = {}
    async with Client(build_server(ws)) as client:
        started = time.monotonic()

        async def endless() -> None:
            result = await client.call_tool("profile_import", {"paths": ["endless_results.db"]})
            assert result.is_error and "took longer than 3 s" in text_of(result), text_of(result)
            answered["endless"] = time.monotonic() - started

        async def meanwhile() -> None:
            await anyio.sleep(0.2)
            assert not (await client.call_tool("hw_spec", {"arch": "gfx950"})).is_error
            answered["meanwhile"] = time.monotonic() - started

        with anyio.fail_after(60):  # a regression fails here instead of hanging the suite
            async with anyio.create_task_group() as group:
                group.start_soon(endless)
                group.start_soon(meanwhile)
    assert answered["meanwhile"] < answered["endless"]


async def test_profile_import_folder_csv_ncu_and_rocpd_and_compare_across(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text("")
    folder = tmp_path / "cluster" / "node1"
    folder.mkdir(parents=True)
    shutil.copy(fixture("rocm/sdk2508-kernel_trace.csv"), folder / "12345_kernel_trace.csv")
    shutil.copy(fixture("rocm/sdk2508-counter_collection.csv"), folder / "12345_counter_collection.csv")
    shutil.copy(fixture("cuda/ncu_metrics.csv"), tmp_path / "ncu.csv")
    build_rocpd(tmp_path / "run.db", SCHEMA, _dispatches_from_csv(fixture("rocm/sdk2508-kernel_trace.csv")))
    async with Client(build_server(tmp_path)) as client:
        csv_run = await client.call_tool("profile_import", {"paths": ["cluster/node1"]})
        assert not csv_run.is_error and csv_run.structured_content["counters"], text_of(csv_run)
        ncu_run = await client.call_tool("profile_import", {"paths": ["ncu.csv"]})
        assert ncu_run.structured_content["kernels"][0]["name"] == "dwconv3d_naive"
        db_run = await client.call_tool("profile_import", {"paths": ["run.db"]})
        assert db_run.structured_content["source"] == "rocpd"
        cmp = await client.call_tool("profile_compare", {"run_a": csv_run.structured_content["run_id"], "run_b": db_run.structured_content["run_id"]})
        assert "+0.0%" in text_of(cmp) and "across sources" in text_of(cmp)
        outside = await client.call_tool("profile_import", {"paths": ["../x"]})
        assert outside.is_error and "outside" in text_of(outside)


async def test_an_impossible_register_count_in_a_database_is_named(tmp_path):
    """A rocpd row with 384 AGPRs (seen in a real database; a wave has at most 256) is named in the
    answer, judged by the table of the GPU the database names, not passed on as a fact."""
    (tmp_path / "kernel-mcp.toml").write_text("")
    rows = _dispatches_from_csv(fixture("rocm/sdk2508-kernel_trace.csv"))
    rows[0] = {**rows[0], "agprs": 384}
    build_rocpd(tmp_path / "run.db", SCHEMA, rows, agent="gfx942", product="AMD Instinct MI300X")
    async with Client(build_server(tmp_path)) as client:
        answer = await client.call_tool("profile_import", {"paths": ["run.db"]})
    notes = answer.structured_content["notes"]
    assert not answer.is_error and any("not a possible kernel on gfx942" in n and "384" in n for n in notes), notes
    assert sum("not a possible kernel" in n for n in notes) == 1  # the other rows are possible


async def test_lds_bank_conflicts_are_named_from_the_counters(tmp_path):
    """HipKittens' ds_read_b64 bank-conflict probe on a real MI300X/MI355X run: the conflict cycles
    per LDS instruction, equal to pandas on the raw file."""
    (tmp_path / "kernel-mcp.toml").write_text("")
    shutil.copy(fixture("rocm/hk-ds_read_b64-lds_conflict_counter_collection.csv"), tmp_path / "1_counter_collection.csv")
    raw = pd.read_csv(tmp_path / "1_counter_collection.csv")
    async with Client(build_server(tmp_path)) as client:
        answer = await client.call_tool("profile_import", {"paths": ["1_counter_collection.csv"]})
    assert not answer.is_error, text_of(answer)
    checked = 0
    for row in answer.structured_content["counters"]:
        mine = raw[raw["Kernel_Name"] == row["kernel"]]
        per = mine.groupby("Counter_Name")["Counter_Value"].sum()
        if per.get("SQ_INSTS_LDS", 0) > 0:
            metric = next(d for d in row["derived"] if d["name"] == "LDS bank-conflict cycles per LDS instruction")
            assert metric["value"] == pytest.approx(per["SQ_LDS_BANK_CONFLICT"] / per["SQ_INSTS_LDS"])
            checked += 1
    assert checked >= 1
