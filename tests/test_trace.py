"""Thread-trace summaries from recorded real outputs (rocprofv3 UI code.json with PC-sampling
stall reasons, ncu source exports), bad traces, and orchestration through a stand-in rocprofv3.

The PC-sampling stall-reason list is indexed by rocprofiler-sdk's
rocprofiler_pc_sampling_instruction_not_issued_reason_t (include/rocprofiler-sdk/pc_sampling.h):
NONE, NO_INSTRUCTION_AVAILABLE, ALU_DEPENDENCY, WAITCNT, INTERNAL_INSTRUCTION, BARRIER_WAIT,
ARBITER_NOT_WIN, ARBITER_WIN_EX_STALL, OTHER_WAIT, SLEEP_WAIT. The stats CSV columns are those of
rocprofiler-sdk's "Using thread trace" page (fixture sdk-using-thread-trace.rst).
"""

from __future__ import annotations


import pytest
from mcp import Client

from kernel_mcp.errors import InvalidInput
from kernel_mcp.platforms import VENDORS
from kernel_mcp.server import build_server
from kernel_mcp.trace.analysis import summarise
from kernel_mcp.trace.ncu_source import read_ncu_source
from kernel_mcp.trace.readers import read_code_json, read_stats_csv

from conftest import PY, fixture, install_stand_ins, toml_list

pytestmark = pytest.mark.anyio


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


def test_pc_sampling_code_json():
    rows = list(read_code_json(fixture("rocm/rcv-pcsampling-code.json")))
    assert len(rows) > 1000 and not any(r.isa.startswith(";") for r in rows)
    barrier = next(r for r in rows if r.index == 102)
    assert barrier.isa == "s_barrier" and barrier.reasons == {"BARRIER_WAIT": 153.0} and barrier.samples == 153
    s = summarise("reference_gemm", "rocprofv3 PC sampling", rows, vendors=VENDORS)
    assert s.unit == "samples" and s.total == sum(r.samples for r in rows)
    assert s.categories["barrier"] > 0.1 and s.hot[0].isa in ("s_barrier", "s_waitcnt vmcnt(0)")
    waits = [w for w in s.waits if w.waits_for]
    assert waits and all(p.isa.split()[0].startswith(("global_", "scratch_", "buffer_", "flat_", "ds_", "s_load")) for w in waits for p in w.waits_for)
    # a counter-N wait waits for what is older than its N youngest operations of that counter
    assert all(("lgkmcnt" in w.isa) == w.waits_for[0].isa.startswith(("ds_", "s_load")) for w in waits)
    assert all(w.attribution.startswith("estimate") for w in s.waits)  # PC sampling writes no wave files: no decoder records
    assert any("barriers hold waves" in f for f in s.findings)


def test_ncu_source_views_agree():
    sass = summarise("dwconv3d_naive", "ncu source counters", read_ncu_source(fixture("cuda/ncu_source_sass.csv").read_text()), vendors=VENDORS)
    both = summarise("dwconv3d_naive", "ncu source counters", read_ncu_source(fixture("cuda/ncu_source_cuda_sass.csv").read_text()), vendors=VENDORS)
    assert sass.total == both.total == 3159  # an instruction listed under several source lines counts once
    assert sass.categories == pytest.approx(both.categories)
    assert both.hot[0].source.endswith("dw.cu:14") and "LDG" in both.waits[0].waits_for[0].isa
    long_sb = f"{both.reasons['long_sb']:.1%}"
    assert any(f"(long_sb) take {long_sb} of the samples" in f for f in both.findings)


def test_stats_csv(tmp_path):
    path = tmp_path / "stats_kernel.csv"
    path.write_text(
        "Codeobj,Vaddr,Instruction,Hitcount,Latency,Stall,Idle,Source\n11,5888,global_load_dwordx4 v[0:3], v[4:5], off,48,276,96,48,k.hip:10\n"
        "11,5896,s_waitcnt vmcnt(0),48,900,850,0,k.hip:11\n11,5900,v_fmac_f32_e32 v1, v2, v3,48,192,0,0,k.hip:12\n"
    )
    path.write_text(
        path.read_text()
        .replace("global_load_dwordx4 v[0:3], v[4:5], off", '"global_load_dwordx4 v[0:3], v[4:5], off"')
        .replace("v_fmac_f32_e32 v1, v2, v3", '"v_fmac_f32_e32 v1, v2, v3"')
    )
    s = summarise("k", "rocprofv3 thread trace stats", read_stats_csv(path), vendors=VENDORS)
    assert s.unit == "cycles" and s.hot[0].isa == "s_waitcnt vmcnt(0)"
    assert s.waits[0].waits_for[0].isa.startswith("global_load_dwordx4") and s.waits[0].valu_between == 0
    assert s.waits[0].attribution.startswith("estimate")


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda t: t[: len(t) // 2], "truncated"),
        (lambda t: "", "not valid JSON|truncated|no instruction rows"),
        (lambda t: t.replace('"Hit"', '"Hits"'), "header lacks Hit"),
        (lambda t: '{"code": [[1, 2]], "header": ["ISA","_","LineNumber","Source","Codeobj","Vaddr","Hit","Latency","Stall","Idle"]}', "inconsistent"),
    ],
)
def test_bad_code_json(tmp_path, mutate, expected):
    path = tmp_path / "code.json"
    path.write_text(mutate(fixture("rocm/rcv-pcsampling-code.json").read_text()))
    with pytest.raises(InvalidInput, match=expected) as info:
        list(read_code_json(path))
    assert "code.json" in info.value.message


def test_truncated_ncu_source():
    text = fixture("cuda/ncu_source_sass.csv").read_text()
    cut = text[: len(text) // 2].rsplit(",", 3)[0]
    with pytest.raises(InvalidInput, match="truncated"):
        list(read_ncu_source(cut, "source.csv"))
    with pytest.raises(InvalidInput, match="no ncu source table"):
        list(read_ncu_source("hello\n", "source.csv"))


STAND_IN_ATT = """
import os, shutil, subprocess, sys
args = sys.argv[1:]
cmd = args[args.index("--") + 1:]; opts = args[:args.index("--")]
out = opts[opts.index("-d") + 1]
assert "--att" in opts and "--kernel-include-regex" in opts
code = subprocess.call(cmd)
ui = os.path.join(out, "ui_output_agent_1_dispatch_3")
os.makedirs(ui, exist_ok=True)
for name in ("code", "filenames", "snapshots"):
    shutil.copy(os.path.join(os.environ["KMCP_FIX"], "rcv-pcsampling-%s.json" % name), os.path.join(ui, name + ".json"))
open(os.path.join(out, "argv.txt"), "w").write(" ".join(opts))
sys.exit(code)
"""


@pytest.fixture
def att_ws(tmp_path, monkeypatch):
    install_stand_ins(tmp_path, monkeypatch, {"rocprofv3": STAND_IN_ATT})
    monkeypatch.setenv("KMCP_FIX", str(fixture("rocm")))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "bench.py").write_text("print('ran')\n")
    (ws / "kernel-mcp.toml").write_text(
        f'[target]\narch = "gfx950"\nplatform = "rocm"\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\ncsv = "out.csv"\n'
        'correctness = { column = "err" }\nmetric = "us"\ntarget_kernel = "reference_gemm"\ntimeout_s = 30\n'
    )
    return ws


async def test_thread_trace_runs_att_and_compares(att_ws):
    async with Client(build_server(att_ws)) as client:
        first = await client.call_tool(
            "thread_trace", {"kernel_regex": "reference_gemm", "options": {"target_cu": 1, "shader_engine_mask": "0x1", "serialize_all": True}}
        )
        assert not first.is_error, text_of(first)
        data = first.structured_content
        assert data["source"] == "rocprofv3 PC sampling" and data["hot"] and data["findings"]
        assert len(text_of(first).encode()) <= 4096
        run = att_ws / ".kernel-mcp" / "runs" / data["run_id"]
        argv = (run / "trace" / "argv.txt").read_text()
        assert "--att-target-cu 1" in argv and "--att-shader-engine-mask 0x1" in argv and "--att-serialize-all True" in argv
        second = await client.call_tool("thread_trace_import", {"path": f".kernel-mcp/runs/{data['run_id']}/trace"})
        cmp = await client.call_tool("thread_trace_compare", {"a": data["run_id"], "b": second.structured_content["run_id"]})
        assert "barrier" in text_of(cmp) and "+0.0%" in text_of(cmp)
        bad = await client.call_tool("thread_trace", {"kernel_regex": "x", "options": {"shader_engine_mask": "0x1; rm -rf /"}})
        assert bad.is_error
        runs_before = sorted((att_ws / ".kernel-mcp" / "runs").iterdir())
        for tool in ("thread_trace", "profile_kernels"):  # one check of the pattern for both, before any profiler starts
            unbalanced = await client.call_tool(tool, {"kernel_regex": "gemm(("})
            assert unbalanced.is_error and "kernel_regex: bad regular expression" in text_of(unbalanced), text_of(unbalanced)
        assert sorted((att_ws / ".kernel-mcp" / "runs").iterdir()) == runs_before


async def test_thread_trace_import_errors(att_ws):
    (att_ws / "empty").mkdir()
    async with Client(build_server(att_ws)) as client:
        nothing = await client.call_tool("thread_trace_import", {"path": "empty"})
        assert nothing.is_error and "no decoded trace" in text_of(nothing)
        outside = await client.call_tool("thread_trace_import", {"path": "../../etc"})
        assert outside.is_error and "outside" in text_of(outside)
