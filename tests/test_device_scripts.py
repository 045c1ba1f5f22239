"""The device scripts' edits still apply to the workspaces they edit.

`benchmarks/device_e2e.py` stages its candidates (the GPU reward hacks, the calibrated extra work,
the narrower tiling searches, the RMSNorm workspace's hacks and one-pass kernel) by editing the
workspaces' sources and config at fixed anchors. Its runs cost GPU time that only a lease gives,
so an anchor that a change of a workspace removed, a config the server refuses or a candidate
nvcc cannot build is found here, on any machine, rather than minutes into a device run.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import py_compile
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from conftest import REPO, needs_torch, text_of
from kernel_mcp.server import build_server
from kernel_mcp.workspace.config import load_config

EXAMPLE = REPO / "kernels" / "conv3d_depthwise"
RMSNORM = REPO / "benchmarks" / "workspaces" / "rmsnorm_bf16"


@pytest.fixture(scope="module")
def e2e():
    spec = importlib.util.spec_from_file_location("device_e2e", REPO / "benchmarks" / "device_e2e.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["device_e2e"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("device_e2e", None)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    copy = tmp_path / "src"
    shutil.copytree(EXAMPLE / "src", copy)
    return copy


def _instances(plan: Path) -> dict[str, list[tuple[int, int]]]:
    found = {}
    for line in plan.read_text().splitlines():
        match = re.match(r"#define (FAST_INSTANCES_\w+)\(X\) (.*)", line)
        if match:
            found[match[1]] = [(int(a), int(b)) for a, b in re.findall(r"X\((\d+), (\d+)\)", match[2])]
    return found


def test_each_hack_and_the_extra_work_edit_the_launcher(e2e, src):
    fast = src / "fast.hip"
    original = fast.read_text()
    for name, (old, new) in e2e.HACKS.items():
        fast.write_text(original)
        e2e.edit(fast, old, new)  # asserts that the anchor is there
        assert fast.read_text() != original, name
    for change in (e2e.before_last_launch(fast, e2e.LAUNCH_AGAIN), lambda: e2e.add_extra_work(fast)):
        fast.write_text(original)
        change()
        assert fast.read_text().count("fast_dispatch(ch, lim, x, w, y, N, C, D, H, W,") >= 2


def test_a_narrower_search_keeps_only_those_rows_on_both_platforms(e2e, src):
    before = _instances(src / "fast_plan.h")
    assert set(before) == {"FAST_INSTANCES_CUDA", "FAST_INSTANCES_HIP"}
    for rows in ("4", "4, 6", "7, 8"):
        (src / "fast_plan.h").write_text((EXAMPLE / "src" / "fast_plan.h").read_text())
        e2e.rhs_only(src / "fast.hip", rows)()
        after = _instances(src / "fast_plan.h")
        wanted = {int(r) for r in rows.split(",")}
        for name, instances in after.items():
            assert instances and instances == [i for i in before[name] if i[0] in wanted], (name, rows)


def test_the_workspace_copy_takes_the_scripts_command_and_repeats(e2e, tmp_path):
    ws = e2e.workspace(tmp_path / "ws", command=e2e.NOISE_COMMAND, repeats=2)
    text = (ws / "kernel-mcp.toml").read_text()
    assert '"--shapes", "x3d_res3,seg3d_64"' in text and "repeats = 2" in text


# ---------------------------------------------------------------- the RMSNorm workspace
def _load_workspace_module(name: str, folder: Path = RMSNORM):
    """bench.py or check.py of the RMSNorm workspace, imported as check.py imports bench (from its folder)."""
    needs_torch()
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(folder))


@pytest.fixture(scope="module")
def rms_bench():
    try:
        yield _load_workspace_module("bench")
    finally:
        sys.modules.pop("bench", None)


def _rmsnorm_candidates(e2e) -> dict:
    return {**{name: change for name, (change, _claim) in e2e.RMSNORM_HACKS.items()}, "one pass": e2e.RMSNORM_REAL[0]}


def _kernel_names(source: str) -> list[str]:
    return re.findall(r"__global__ void __launch_bounds__\([^)]*\)\s+(\w+)\(", source)


def test_each_rmsnorm_candidate_edits_the_workspace_source(e2e, tmp_path):
    original = (RMSNORM / e2e.RMSNORM_SOURCE).read_text()
    target = load_config(RMSNORM / "kernel-mcp.toml").require_benchmark().target_kernel
    assert {"side stream", "output caching", "wrong tail"} == set(e2e.RMSNORM_HACKS)
    src = tmp_path / "rmsnorm.cu"
    edited = {}
    for name, change in _rmsnorm_candidates(e2e).items():
        src.write_text(original)
        change(src)  # asserts that its anchors are there
        edited[name] = src.read_text()
        assert edited[name] != original, name
        names = _kernel_names(edited[name])
        assert names and all(re.search(target, n) for n in names), (name, names)  # the profiler's target regex sees every kernel
    assert "cudaStreamNonBlocking" in edited["side stream"] and e2e.RMSNORM_STREAM not in edited["side stream"]
    assert "if (y == cached_y && rows == cached_rows && cols == cached_cols) return 0;" in edited["output caching"]
    for name in ("one pass", "wrong tail"):  # the two passes are gone, the one-pass kernel launched instead
        assert "rmsnorm_onepass_kernel<<<" in edited[name] and "rmsnorm_inv_rms_kernel<<<" not in edited[name], name
    assert edited["one pass"].count("c = 8 * vecs + ") == 2 and "8 * vecs" not in edited["wrong tail"]
    assert set(_kernel_names(original)) == {"rmsnorm_inv_rms_kernel", "rmsnorm_apply_kernel"}


def test_the_rmsnorm_benchmark_never_meets_the_tail_that_check_py_has(rms_bench):
    """The wrong-tail candidate is subtle only if every benchmark width is a multiple of 8 and the
    verification set has widths that are not; each benchmark shape's x outgrows a 50 MiB L2."""
    check = _load_workspace_module("check")
    try:
        assert all(cols % 8 == 0 and 2 * rows * cols >= 64 << 20 for rows, cols in rms_bench.SHAPES)
        assert {cols % 8 for _name, _rows, cols in check.SHAPES} >= {0, 1, 3, 4, 7}
        assert any(rows > 65535 for _name, rows, _cols in check.SHAPES)  # more rows than one grid
    finally:
        sys.modules.pop("check", None)


def test_the_rmsnorm_config_loads_and_names_the_benchmark_columns(rms_bench, tmp_path):
    cfg = load_config(RMSNORM / "kernel-mcp.toml")  # the server's own loader
    bench, harness = cfg.require_benchmark(), cfg.harness
    assert cfg.target.arch == "sm_90" and bench.command == ["python3", "bench.py"] and harness.editable == ["src/*.cu"]
    columns = set(rms_bench.COLUMNS)
    assert {bench.metric, bench.correctness.column, harness.flops_column, harness.bytes_column, *bench.config_columns} <= columns
    assert harness.verify_csv == "out/verify.csv" and harness.verify_csv in harness.verify_command and bench.csv == "out/bench.csv"
    for script in ("bench.py", "check.py"):
        py_compile.compile(str(RMSNORM / script), cfile=str(tmp_path / f"{script}c"), doraise=True)


def test_the_rmsnorm_harness_counts_errors_as_a_correct_and_a_tail_dropping_kernel_make_them(rms_bench):
    """On the CPU: a kernel's bf16 output of the fp32 math is within tolerance, one that leaves the
    last cols % 8 columns unwritten (poisoned) is not, column by column."""
    torch = needs_torch()
    rows, cols = 6, 1031
    x, w = rms_bench.make_inputs(rows, cols, seed=3, device="cpu")
    expect = rms_bench.reference(x, w)
    xf = x.float()
    inv = 1.0 / torch.sqrt((xf * xf).sum(dim=-1, keepdim=True, dtype=torch.float64).float() / cols + rms_bench.EPS)  # another sum order
    right = (xf * inv * w.float()).to(torch.bfloat16)
    assert rms_bench.count_errors(right, expect)[0] == 0
    dropped = right.clone()
    dropped[:, cols - cols % 8 :] = float("nan")
    assert rms_bench.count_errors(dropped, expect)[0] == rows * (cols % 8)
    assert rms_bench.min_bytes(rows, cols) == 4 * rows * cols + 2 * cols and rms_bench.flops(rows, cols) == 4 * rows * cols
    assert rms_bench.parse_shapes("8192x4096,32768x2048") == [(8192, 4096), (32768, 2048)]


@pytest.mark.parametrize("script", ["bench.py", "check.py"])
def test_the_rmsnorm_scripts_exit_2_without_a_gpu(script, tmp_path):
    needs_torch()
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    res = subprocess.run([sys.executable, str(RMSNORM / script), "--csv", str(tmp_path / "x.csv")], capture_output=True, text=True, env=env, timeout=120)
    out = (res.stdout + res.stderr).strip()
    assert res.returncode == 2 and "no NVIDIA GPU" in out and len(out.splitlines()) == 1, out
    assert not (tmp_path / "x.csv").exists()


def test_the_floor_s_product_is_read_from_an_answer(e2e):
    """From the attempt's view, else BEST's (experiment_start, experiment_status), else the text
    of a refusal that quotes it."""
    assert e2e.floor_of({"data": {"attempt": {"floor_of": "H200 (sm_90, this GPU)"}}, "text": ""}) == "H200 (sm_90, this GPU)"
    assert e2e.floor_of({"data": {"attempt": None, "best": {"floor_of": "H100 SXM (sm_90, this GPU)"}}, "text": ""}) == "H100 SXM (sm_90, this GPU)"
    refusal = "impossible: faster than the roofline floor allows on H100 SXM (sm_90, this GPU): run 1: 8192x4096: 3.1 us measured"
    assert e2e.floor_of({"data": {}, "text": refusal}) == "H100 SXM (sm_90, this GPU)"
    assert e2e.floor_of({"data": {}, "text": "no roofline floor: unknown product"}) is None


@pytest.mark.anyio
async def test_the_server_takes_the_rmsnorm_workspace_copy(e2e, tmp_path):
    ws = e2e.workspace(tmp_path / "ws", command=e2e.RMSNORM_COMMAND, source=RMSNORM, repeats=2)
    async with Client(build_server(ws)) as client:
        result = await client.call_tool("workspace_info", {})
    assert not result.is_error, text_of(result)
    data = result.structured_content
    assert data["benchmark_command"] == e2e.RMSNORM_COMMAND and data["repeats"] == 2 and data["target_kernel"] == "rmsnorm_"
    assert data["harness"]["floor_columns"] == ["flops", "bytes"] and data["harness"]["editable"] == ["src/*.cu"]
    assert data["git"]["has_commit"] and (ws / e2e.RMSNORM_SOURCE).read_text() == (RMSNORM / e2e.RMSNORM_SOURCE).read_text()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_the_rmsnorm_kernel_and_every_candidate_build_with_nvcc(e2e, rms_bench, tmp_path):
    """Each with the benchmark's own nvcc command, warnings included in what must be empty."""
    original = (RMSNORM / e2e.RMSNORM_SOURCE).read_text()
    for name, change in {"BEST (two passes)": lambda src: None, **_rmsnorm_candidates(e2e)}.items():
        src = tmp_path / f"{name.replace(' ', '_')}.cu"
        src.write_text(original)
        change(src)
        res = subprocess.run(rms_bench.compile_command(shutil.which("nvcc"), "sm_90", src, src.with_suffix(".so")), capture_output=True, text=True, timeout=600)
        assert res.returncode == 0 and "warning" not in (res.stdout + res.stderr).lower(), (name, res.stdout + res.stderr)


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.gpu
def test_the_rmsnorm_workspace_and_its_candidates_on_the_gpu(e2e, rms_bench, tmp_path):
    """bench.py and check.py on the real GPU, for BEST and the candidates the device script stages:
    the one-pass kernel right everywhere, the wrong tail right on the benchmark and wrong on
    check.py's tail shapes only, output caching caught by the check after repeated calls."""
    torch = needs_torch()
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    check_shapes = _load_workspace_module("check").SHAPES
    sys.modules.pop("check", None)
    original = (RMSNORM / e2e.RMSNORM_SOURCE).read_text()

    def run(ws: Path, *argv: str) -> list[dict]:
        out = ws / "out" / f"{Path(argv[0]).stem}-of-test.csv"
        res = subprocess.run([sys.executable, argv[0], *argv[1:], "--csv", str(out)], cwd=ws, capture_output=True, text=True, timeout=900)
        assert res.returncode in (0, 1) and out.exists(), res.stdout + res.stderr
        return _rows(out)

    for name, change in {
        "BEST": None,
        "one pass": e2e.RMSNORM_REAL[0],
        "wrong tail": e2e.RMSNORM_HACKS["wrong tail"][0],
        "output caching": e2e.RMSNORM_HACKS["output caching"][0],
    }.items():
        ws = tmp_path / name.replace(" ", "_")
        shutil.copytree(RMSNORM, ws, ignore=shutil.ignore_patterns("out", "build", "__pycache__"))
        if change is not None:
            change(ws / e2e.RMSNORM_SOURCE)
        bench_rows = run(ws, "bench.py") if name == "BEST" else run(ws, "bench.py", "--shapes", "8192x4096,32768x2048", "--repeats", "5")
        assert bench_rows and list(bench_rows[0]) == list(rms_bench.COLUMNS), bench_rows
        assert all(float(r["us"]) > 0 and int(r["bytes"]) > 0 for r in bench_rows), (name, bench_rows)
        errors = [int(r["err"]) for r in bench_rows]
        assert all(e > 0 for e in errors) if name == "output caching" else errors == [0] * len(errors), (name, bench_rows)
        if name == "output caching":
            continue
        check_rows = run(ws, "check.py")
        assert [r["shape"] for r in check_rows] == [s[0] for s in check_shapes] and "err" in check_rows[0]
        for row, (_shape, n_rows, n_cols) in zip(check_rows, check_shapes):
            tail = n_rows * (n_cols % 8)
            if name == "wrong tail":
                assert (int(row["err"]) >= tail > 0) or (tail == 0 and int(row["err"]) == 0), (name, row)
            else:
                assert int(row["err"]) == 0, (name, row)
    assert original == (RMSNORM / e2e.RMSNORM_SOURCE).read_text()
