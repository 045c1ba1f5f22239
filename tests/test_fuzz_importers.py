"""Fuzzing every importer and the config loader (issue 18): the recorded real outputs, mutated
(truncated, nested deep, a huge field, a value of the wrong type, random bytes spliced in), must
give either a result or one of the project's own errors; anything else is a bug. A hang fails the
example through an alarm, never a time measured against a threshold.

Reproducible (derandomized); about two minutes on two cores. With KERNEL_MCP_FUZZ_REPORT=FILE the
inputs tried and their outcomes per importer are written there as JSON (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
from collections import Counter, defaultdict
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel_mcp.bench.results import figures, read_csv
from kernel_mcp.docs import DocsStore, ingest
from kernel_mcp.errors import KernelMcpError
from kernel_mcp.platforms import VENDORS
from kernel_mcp.profile import rocpd
from kernel_mcp.profile.parsers import ncu_dispatches
from kernel_mcp.profile.parsers import read_counter_collection, read_kernel_trace, read_ncu_raw
from kernel_mcp.profile.summary import summarise as summarise_profile
from kernel_mcp.trace import summarise_folder
from kernel_mcp.trace.analysis import summarise
from kernel_mcp.trace.folder import summarise_file
from kernel_mcp.trace.ncu_source import read_ncu_source
from kernel_mcp.trace.readers import read_stats_csv
from kernel_mcp.workspace.config import parse_config

from conftest import BASIC_TOML, find_fixture, fixture
from conftest import data as data_file
from rocpd_builder import build as build_rocpd

EXAMPLES = int(os.environ.get("KERNEL_MCP_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
HANG_S = 60  # far above any input here (the largest is under 1 MB): only a hang reaches it
OUTCOMES: dict[str, Counter] = defaultdict(Counter)


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    target = os.environ.get("KERNEL_MCP_FUZZ_REPORT")
    if target:
        Path(target).write_text(json.dumps({k: dict(v) for k, v in sorted(OUTCOMES.items())}, indent=1))


@contextmanager
def _no_hang(what: str):
    def fire(*_):
        raise AssertionError(f"{what}: no answer after {HANG_S} s (a hang)")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _outcome(importer: str, action) -> None:
    """Success or the project's own error; any other exception fails the example."""
    with _no_hang(importer):
        try:
            action()
        except KernelMcpError as exc:
            OUTCOMES[importer][f"refused ({exc.kind})"] += 1
            assert "internal error" not in exc.message
            return
    OUTCOMES[importer]["accepted"] += 1


# ---------------------------------------------------------------- mutations -----------------
def _nest(data: bytes, at: int, depth: int) -> bytes:
    return data[:at] + b"[" * depth + b"]" * depth + data[at:]


MUTATIONS = ("truncate", "nest", "huge", "wrong_type", "splice", "duplicate", "delete")


@st.composite
def mutated(draw, base: bytes) -> bytes:
    data = base
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(MUTATIONS))
        at = draw(st.integers(0, len(data)))
        if kind == "truncate":
            data = data[:at]
        elif kind == "nest":
            data = _nest(data, at, draw(st.sampled_from([2, 40, 5_000, 200_000])))
        elif kind == "huge":
            data = data[:at] + draw(st.sampled_from([b"9", b"x", b'"', b"\\", b"1e999", b","])) * draw(st.sampled_from([200, 150_000])) + data[at:]
        elif kind == "wrong_type":
            token = draw(st.sampled_from([b"null", b'"text"', b"-1", b"1e400", b"nan", b"inf", b"{}", b"[]", b"true", b"0x", b",,,", b"\n", b"\x00"]))
            end = min(len(data), at + draw(st.integers(0, 12)))
            data = data[:at] + token + data[end:]
        elif kind == "splice":
            data = data[:at] + draw(st.binary(min_size=1, max_size=64)) + data[at:]
        elif kind == "duplicate":
            end = min(len(data), at + draw(st.integers(1, 4096)))
            data = data[:at] + data[at:end] * draw(st.integers(2, 50)) + data[at:]
        else:
            end = min(len(data), at + draw(st.integers(1, 256)))
            data = data[:at] + data[end:]
    return data


def _bytes(relative: str) -> bytes:
    return fixture(relative).read_bytes()


# ---------------------------------------------------------------- thread traces -------------
CODE = _bytes("rocm/rcv-pcsampling-code.json") if find_fixture("rocm/rcv-pcsampling-code.json") else b""
CODE_ONE_LINE = json.dumps(json.loads(CODE), separators=(",", ":")).encode() if CODE else b""


@FUZZ
@given(data=st.data())
def test_code_json(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("ui_output_agent_1_dispatch_1")
    # Indented as rocprofv3 writes it (the guarded item builder) or on one line (the flat events).
    (folder / "code.json").write_bytes(data.draw(mutated(data.draw(st.sampled_from([CODE, CODE_ONE_LINE])))))
    if data.draw(st.booleans()):
        (folder / "filenames.json").write_bytes(data.draw(mutated(_bytes("rocm/rcv-pcsampling-filenames.json"))))
    _outcome("thread_trace_import: rocprofv3 code.json (+ filenames.json)", lambda: summarise_folder(folder, None, "fuzz", vendors=VENDORS))


ATT_DISPATCH = Path(__file__).resolve().parent / "data/rocm/att-gfx950/fused_rope_cache/att_viewer/big/ui_output_agent_4253_dispatch_8781"


@FUZZ
@given(data=st.data(), which=st.sampled_from(["se0_sm3_sl0_wv0.json", "filenames.json"]))
def test_thread_trace_wave_files(tmp_path_factory, data, which):
    """A real gfx950 dispatch (tests/data) with one wave file or its filenames.json mutated: the
    wait records and wave counts are read from these."""
    folder = tmp_path_factory.mktemp("att") / ATT_DISPATCH.name
    shutil.copytree(ATT_DISPATCH, folder)
    (folder / which).write_bytes(data.draw(mutated((ATT_DISPATCH / which).read_bytes())))
    _outcome("thread_trace_import: rocprofv3 wave files and filenames.json", lambda: summarise_folder(folder, None, "fuzz", vendors=VENDORS))


@FUZZ
@given(data=st.data())
def test_stats_csv(tmp_path_factory, data):
    base = b"Codeobj,Vaddr,Instruction,Hitcount,Latency,Stall,Idle,Source\n" + b"".join(
        b"0,%d,s_waitcnt vmcnt(%d),%d,%d,%d,0,k.hip:%d\n" % (4 * i, i % 4, i, 10 * i, 5 * i, i) for i in range(40)
    )
    path = tmp_path_factory.mktemp("stats") / "stats_k.csv"
    path.write_bytes(data.draw(mutated(base)))
    _outcome("thread_trace_import: rocprofv3 stats CSV", lambda: summarise("k", "rocprofv3 thread trace stats", read_stats_csv(path), vendors=VENDORS))


@FUZZ
@given(data=st.data(), which=st.sampled_from(["cuda/ncu_source_sass.csv", "cuda/ncu_source_cuda_sass.csv"]))
def test_ncu_source(data, which):
    text = data.draw(mutated(_bytes(which))).decode("utf-8", errors="replace")
    _outcome("thread_trace_import: ncu source page CSV", lambda: summarise("k", "ncu source counters", read_ncu_source(text, "fuzz.csv"), vendors=VENDORS))


BANK = Path(__file__).resolve().parent / "data/cuda"


@FUZZ
@given(data=st.data(), which=st.sampled_from(["ncu_source_bank_sass.csv", "ncu_source_bank_cuda_sass.csv"]))
def test_ncu_source_of_several_kernels(tmp_path_factory, data, which):
    """Two kernels, each section printed twice, shared-memory wavefront columns (tests/data)."""
    path = tmp_path_factory.mktemp("ncu") / which
    path.write_bytes(data.draw(mutated((BANK / which).read_bytes())))
    _outcome("thread_trace_import: ncu source page of several kernels", lambda: summarise_file(path, None, "fuzz", path.parent, vendors=VENDORS))


# ---------------------------------------------------------------- profiles ------------------
@FUZZ
@given(data=st.data(), which=st.sampled_from(["rocm/sdk-kernel_trace.csv", "rocm/sdk2508-kernel_trace.csv"]))
def test_kernel_trace(tmp_path_factory, data, which):
    path = tmp_path_factory.mktemp("kt") / "x_kernel_trace.csv"
    path.write_bytes(data.draw(mutated(_bytes(which))))
    _outcome("profile_import: rocprofv3 kernel_trace.csv", lambda: summarise_profile(read_kernel_trace(path), "rocprofv3", "add"))


@FUZZ
@given(data=st.data(), which=st.sampled_from(["rocm/sdk-counter_collection.csv", "rocm/sdk2508-counter_collection.csv"]))
def test_counter_collection(tmp_path_factory, data, which):
    path = tmp_path_factory.mktemp("cc") / "x_counter_collection.csv"
    path.write_bytes(data.draw(mutated(_bytes(which))))
    _outcome("profile_import: rocprofv3 counter_collection.csv", lambda: read_counter_collection(path))


@FUZZ
@given(data=st.data(), which=st.sampled_from(["cuda/ncu_metrics.csv", "cuda/ncu_metrics_conv3d_bigger.csv", "cuda/ncu_raw.csv"]))
def test_ncu_csv(data, which):
    text = data.draw(mutated(_bytes(which))).decode("utf-8", errors="replace")
    parse = read_ncu_raw if which.endswith("raw.csv") else (lambda t: summarise_profile(ncu_dispatches(t)[0], "ncu", "conv"))
    _outcome("profile_import: ncu --csv (metrics, raw)", lambda: parse(text))


# Whole folders through profile_import itself (issue 20): one real file of a real output folder
# mutated, the others intact, so the sniffing, the workload and legacy readers and the merge all
# meet damaged input. Fewer examples each: every example reads a whole folder.
FOLDERS = {
    "rocprof-compute rocprofv2": (fixture("rocm/rpc-dispatch0-mi300x"), ["pmc_perf.csv", "timestamps.csv", "sysinfo.csv"]),
    "rocprof-compute rocpd": (fixture("rocm/rcs-vcopy-mi300x-rocpd"), ["pmc_perf.csv"]),
    "rocprof-compute rocprofv3": (data_file("rocm/rcm-vcopy-mi350-rocprofv3"), ["pmc_perf.csv", "sysinfo.csv"]),
    "legacy rocprof": (data_file("rocm/gunrock-rocprof-bfs"), ["results.csv", "results.stats.csv"]),
    "counter files": (data_file("rocm/hk-ds_read_b64-out"), ["lds_conflict_counter_collection.csv", "bank_test_agent_info.csv"]),
}
FOLDER_FUZZ = settings(FUZZ, max_examples=max(EXAMPLES // 3, 10))


@pytest.fixture(scope="module")
def import_ws(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("importws")
    (root / "kernel-mcp.toml").write_text(BASIC_TOML.replace('target_kernel = "k_main"', 'target_kernel = "vecCopy|merge_path|micro"'))
    return root


@pytest.mark.slow
@FOLDER_FUZZ
@given(data=st.data(), which=st.sampled_from(sorted(FOLDERS)))
def test_profile_import_folders(import_ws, data, which):
    from kernel_mcp.profile import profile_import
    from kernel_mcp.workspace import Workspace

    source, names = FOLDERS[which]
    name = data.draw(st.sampled_from(names))
    folder = import_ws / f"f{len(list(import_ws.iterdir()))}"
    shutil.copytree(source, folder)
    (folder / name).write_bytes(data.draw(mutated((source / name).read_bytes())))
    ws = Workspace.open(import_ws)
    _outcome(f"profile_import: {which} folder", lambda: profile_import(ws, ws.runs.create("profile_import", {}), [folder.name], vendors=VENDORS))
    shutil.rmtree(folder)


@pytest.fixture(scope="module")
def rocpd_base(tmp_path_factory) -> Path:
    dispatches = [{"name": f"k{i % 3}", "start": 1000 * i, "end": 1000 * i + 100 + i, "grid": 64 * (i % 2 + 1)} for i in range(30)]
    return build_rocpd(
        tmp_path_factory.mktemp("rocpd") / "base.db",
        fixture("rocm/rocpd-schema"),
        dispatches,
        counters=[{"dispatch": i + 1, "counter": "SQ_WAVES", "value": 4.0} for i in range(30)],
    )


TABLE_COLUMNS = {
    "rocpd_kernel_dispatch": ["start", "end", "grid_size_x", "workgroup_size_x", "kernel_id", "dispatch_id"],
    "rocpd_info_kernel_symbol": ["kernel_name", "display_name", "arch_vgpr_count", "sgpr_count"],
    "rocpd_pmc_event": ["value", "event_id"],
    "rocpd_info_agent": ["name", "type"],
    "rocpd_metadata": ["value"],
}


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_rocpd(tmp_path_factory, rocpd_base, data):
    path = tmp_path_factory.mktemp("db") / "run.db"
    shutil.copyfile(rocpd_base, path)
    if data.draw(st.booleans()):  # columns of the wrong type, as a hand-made database may have
        con = sqlite3.connect(path)
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for _ in range(data.draw(st.integers(1, 3))):
            stem = data.draw(st.sampled_from(sorted(TABLE_COLUMNS)))
            table = next(n for n in names if n.startswith(stem + "_") or n == stem)
            column = data.draw(st.sampled_from(TABLE_COLUMNS[stem]))
            value = data.draw(st.one_of(st.none(), st.text(max_size=20), st.binary(max_size=8), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=True)))
            where = data.draw(st.sampled_from(["", " WHERE rowid % 2 = 0", " WHERE rowid = 1"]))
            try:
                con.execute(f"UPDATE `{table}` SET `{column}` = ?{where}", (value,))
            except sqlite3.IntegrityError:  # a NOT NULL or UNIQUE column: the schema refuses it itself
                pass
        con.commit()
        con.close()
    else:  # a damaged file
        path.write_bytes(data.draw(mutated(path.read_bytes())))
    _outcome("profile_import: rocpd database", lambda: rocpd.summary([path], "k1", ["run.db"]))


# ---------------------------------------------------------------- benchmark CSV, config, docs -----
@FUZZ
@given(data=st.data())
def test_benchmark_csv(tmp_path_factory, data):
    from kernel_mcp.workspace.config import parse_config as parse

    cfg = parse(BASIC_TOML).benchmark
    base = b"shape,err_k,us_k\n" + b"".join(b"s%d,0,%d.5\n" % (i % 7, 10 + i) for i in range(30))
    path = tmp_path_factory.mktemp("bench") / "bench.csv"
    path.write_bytes(data.draw(mutated(base)))
    _outcome("run_benchmark: the benchmark's CSV", lambda: figures(read_csv(path), cfg))


@FUZZ
@given(data=st.data())
def test_config(data):
    from kernel_mcp.workspace.config import example_config

    base = data.draw(st.sampled_from([BASIC_TOML, example_config()])).encode()
    text = data.draw(mutated(base)).decode("utf-8", errors="replace")
    _outcome("kernel-mcp.toml (parse_config)", lambda: parse_config(text))


def _ingest_or_raise(store: DocsStore, folder) -> None:
    """An ingest reports a bad file and skips it; here its first error is the outcome."""
    report = ingest(store, [folder])
    errors = [r["status"] for r in report.results if r["status"].startswith("error")]
    if errors:
        raise KernelMcpError(errors[0])


@FUZZ
@given(data=st.data())
def test_document_ingest(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("docs")
    base = b'+++\nid = "my-notes"\ntitle = "Notes"\nlayer = 1\narch = ["gfx950"]\nsources = ["mine"]\n+++\n# Notes\n\n## LDS\nbanks and conflicts.\n'
    (folder / "notes.md").write_bytes(data.draw(mutated(base)))
    store = DocsStore(":memory:")

    _outcome("docs ingest: Markdown with front matter", lambda: _ingest_or_raise(store, folder))
    store.close()


# The readers of tables (RST csv/list/grid tables, HTML tables) and of AMD's ISA XML: each base
# document holds the structures their code walks, so mutations land in them.
DOC_BASES = {
    "notes.rst": (
        b'Title\n=====\n\nCounters\n--------\n\n.. csv-table::\n  :header: "Counter", "Unit"\n\n  "``SQ_WAVES``", "Waves"\n\n'
        b".. list-table::\n   :header-rows: 1\n\n   * - Model\n     - CUs\n   * - MI300X\n     - 304\n\n"
        b"+------+-------+\n| Knob | Means |\n+======+=======+\n| a    | b     |\n+------+-------+\n"
    ),
    "page.html": b"<html><head><title>T</title></head><body><h1>T</h1><h2>Limits</h2><table><tr><th>Limit</th><th>Value</th></tr>"
    b"<tr><td>threads</td><td>1024</td></tr></table><p>:ref:`x <y>` text</p></body></html>",
    "amdgpu_isa_cdna4.xml": b"<Spec><ISA><Architecture><ArchitectureName>AMD CDNA 4</ArchitectureName></Architecture><Instructions><Instruction>"
    b"<InstructionName>V_ZETA</InstructionName><Description>Does <p>zeta</p>.</Description><InstructionEncodings>"
    b"<InstructionEncoding><EncodingName>ENC_VOP3</EncodingName><Opcode Radix='10'>1</Opcode><Operands>"
    b"<Operand Input='true' Output='false' Order='1'><FieldName>SRC0</FieldName><OperandType>OPR_VGPR</OperandType>"
    b"<OperandSize>32</OperandSize></Operand></Operands></InstructionEncoding></InstructionEncodings></Instruction>"
    b"</Instructions></ISA></Spec>",
}


@FUZZ
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(DOC_BASES))
def test_table_and_isa_readers(tmp_path_factory, data, name):
    folder = tmp_path_factory.mktemp("docs")
    (folder / name).write_bytes(data.draw(mutated(DOC_BASES[name])))
    store = DocsStore(":memory:")

    def run():
        _ingest_or_raise(store, folder)
        store.search("counter waves zeta threads", None, 5)

    _outcome(f"docs ingest: {name.rsplit('.', 1)[-1]} (tables, ISA XML)", run)
    store.close()
