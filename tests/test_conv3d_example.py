"""CPU tests of the bundled conv3d_depthwise example workspace: reference,
tolerance check, FLOP/byte counts, CSV layout, seed handling, the no-GPU exit
of bench.py, and (when nvcc is installed) that every kernel source compiles.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_torch

torch = needs_torch()

WORKSPACE = Path(__file__).resolve().parents[1] / "kernels" / "conv3d_depthwise"


def _load(name: str, filename: str):
    if str(WORKSPACE) not in sys.path:
        sys.path.insert(0, str(WORKSPACE))
    spec = importlib.util.spec_from_file_location(name, WORKSPACE / filename)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


bench = _load("conv3d_example_bench", "bench.py")
ref = bench.ref  # the reference module bench.py itself uses

TINY = ref.Shape("tiny", 2, 3, 4, 6, 7)


# ---------------------------------------------------------------- shapes
def test_shapes_are_named_unique_and_sized():
    names = [s.name for s in ref.SHAPES]
    assert len(names) >= 4 and len(set(names)) == len(names)
    for s in ref.SHAPES:
        assert min(s.dims) >= 1
        # big enough for >= ~100 us at an H100's fp32 FMA rate, small enough
        # for one benchmark run
        assert 30e6 <= s.outputs <= 150e6, s
        assert 1 <= s.N <= 64 and s.D >= 8 and s.H >= 28 and s.W >= 28
    assert ref.SHAPES_BY_NAME == {s.name: s for s in ref.SHAPES}


def test_shapes_cover_both_config_classes():
    large_c_small_hw = [s for s in ref.SHAPES if s.C >= 192 and s.H * s.W <= 32 * 32]
    small_c_large_hw = [s for s in ref.SHAPES if s.C <= 64 and s.H * s.W >= 64 * 64]
    assert large_c_small_hw and small_c_large_hw


# ---------------------------------------------------------------- reference
def test_reference_matches_direct_sum():
    x, w = ref.make_inputs(TINY, seed=1)
    out = ref.conv3d_reference_fp32(x, w)
    assert out.shape == x.shape and out.dtype == torch.float32
    xf = torch.nn.functional.pad(x.double(), (2, 2, 2, 2, 1, 1))
    wf = w.double()
    n, c, d, h, wi = 1, 2, 0, 5, 6  # a corner-ish element, exercises padding
    want = sum(xf[n, c, d + kd, h + kh, wi + kw] * wf[c, 0, kd, kh, kw] for kd in range(3) for kh in range(5) for kw in range(5))
    assert abs(float(out[n, c, d, h, wi]) - float(want)) < 1e-5
    assert ref.conv3d_reference(x, w).dtype == torch.bfloat16


def test_make_inputs_is_seeded_and_bf16():
    x1, w1 = ref.make_inputs(TINY, seed=7)
    x2, w2 = ref.make_inputs(TINY, seed=7)
    x3, _ = ref.make_inputs(TINY, seed=8)
    assert x1.dtype == torch.bfloat16 and w1.dtype == torch.bfloat16
    assert w1.shape == (TINY.C, 1, 3, 5, 5)
    assert torch.equal(x1, x2) and torch.equal(w1, w2)
    assert not torch.equal(x1, x3)
    assert x1.float().abs().sum() > 0  # never zeros


# ---------------------------------------------------------------- tolerance
def test_tolerance_accepts_correct_bf16_result():
    x, w = ref.make_inputs(TINY, seed=3)
    expect = ref.conv3d_reference_fp32(x, w)
    got = expect.to(torch.bfloat16)  # what a correct kernel produces
    bad, maxabs = ref.count_errors(got, expect)
    assert bad == 0
    assert maxabs <= ref.RTOL * float(expect.abs().max()) + ref.ATOL


def test_tolerance_counts_perturbed_elements():
    x, w = ref.make_inputs(TINY, seed=4)
    expect = ref.conv3d_reference_fp32(x, w)
    got = expect.to(torch.bfloat16).clone()
    flat = got.view(-1)
    idx = torch.tensor([0, 17, 101, flat.numel() - 1])
    flat[idx] = flat[idx] + 0.5  # far outside tolerance for O(1) outputs
    flat[5] = float("nan")  # an unwritten (poisoned) element
    bad, maxabs = ref.count_errors(got, expect)
    assert bad == 5
    assert math.isnan(maxabs)


def test_tolerance_one_bf16_step_is_allowed():
    expect = torch.tensor([1.0, -3.0, 100.0, 0.0])
    # neighbouring bf16 value of each (one step up), and a tiny absolute miss
    got = torch.tensor([1.0078125, -2.984375, 100.5, 5e-4]).to(torch.bfloat16)
    assert ref.count_errors(got, expect) == (0, pytest.approx(0.5))
    got2 = torch.tensor([1.03, -3.0, 100.0, 0.0]).to(torch.bfloat16)
    assert ref.count_errors(got2, expect)[0] == 1


# ---------------------------------------------------------------- counts
def test_flop_and_byte_counts():
    s = ref.Shape("s", 2, 3, 4, 5, 6)
    outputs = 2 * 3 * 4 * 5 * 6
    assert ref.flops(s) == 150 * outputs
    assert ref.min_bytes(s) == 2 * outputs + 2 * 3 * 75 + 2 * outputs
    big = ref.SHAPES_BY_NAME["x3d_res3"]
    assert ref.flops(big) == 2 * 75 * 8 * 108 * 16 * 56 * 56


# ---------------------------------------------------------------- seed
def test_seed_default_and_env():
    assert ref.get_seed({}) == ref.DEFAULT_SEED
    assert ref.get_seed({ref.SEED_ENV: ""}) == ref.DEFAULT_SEED
    assert ref.get_seed({ref.SEED_ENV: "123"}) == 123
    assert ref.get_seed({ref.SEED_ENV: "0x10"}) == 16
    with pytest.raises(ValueError):
        ref.get_seed({ref.SEED_ENV: "abc"})
    with pytest.raises(ValueError):
        ref.get_seed({ref.SEED_ENV: "-1"})
    assert ref.SEED_ENV == "KERNEL_MCP_SEED"


# ---------------------------------------------------------------- harness
def test_parse_impls_and_shapes():
    all_names = [i.name for i in bench.IMPLS]
    assert all_names == ["naive", "ndhwc", "lds", "mfma", "lds_sgb", "fast"]
    assert bench.parse_impls("all") == all_names
    assert bench.parse_impls("fast,naive,fast") == ["naive", "fast"]
    with pytest.raises(argparse.ArgumentTypeError):
        bench.parse_impls("nope")
    assert [s.name for s in bench.parse_shapes("seg3d_64")] == ["seg3d_64"]
    with pytest.raises(argparse.ArgumentTypeError):
        bench.parse_shapes("nope")
    args = bench.build_parser().parse_args([])
    assert args.impls == all_names and args.csv == bench.DEFAULT_CSV
    assert bench.DEFAULT_CSV == WORKSPACE / "out" / "bench.csv"


def test_sources_and_symbols_exist():
    for impl in bench.IMPLS:
        text = (WORKSPACE / "src" / impl.source).read_text()
        assert impl.symbol in text
        assert f"conv3d_{impl.name}" in text  # kernel name for profiler regexes
    assert "conv3d_fast_kernel" in (WORKSPACE / "src" / "fast.hip").read_text()


def test_csv_layout_with_fake_timings(tmp_path):
    impls = ["naive", "fast"]
    s1, s2 = ref.SHAPES[0], ref.SHAPES[1]
    rows = [
        bench.make_row(s1, 5000.0, {"naive": {"err": 0, "maxabs": 0.0039, "us": 4000.0}, "fast": {"err": 0, "maxabs": 0.0078, "us": 250.5}}),
        bench.make_row(s2, 2500.0, {"naive": {"err": 3, "maxabs": 1.5, "us": 2000.0}, "fast": {"err": 0, "maxabs": 0.002, "us": 125.25}}),
    ]
    path = tmp_path / "sub" / "bench.csv"
    bench.write_csv(path, rows, impls)
    with open(path) as f:
        header = next(csv.reader(f))
    assert header == [
        "shape",
        "N",
        "C",
        "D",
        "H",
        "W",
        "flops",
        "bytes",
        "us_torch",
        "err_naive",
        "maxabs_naive",
        "us_naive",
        "err_fast",
        "maxabs_fast",
        "us_fast",
    ]
    with open(path) as f:
        got = list(csv.DictReader(f))
    assert [r["shape"] for r in got] == [s1.name, s2.name]
    assert int(got[0]["C"]) == s1.C and int(got[1]["W"]) == s2.W
    assert int(got[0]["err_fast"]) == 0 and int(got[1]["err_naive"]) == 3
    assert float(got[1]["us_fast"]) == pytest.approx(125.25)
    assert float(got[0]["us_torch"]) == pytest.approx(5000.0)
    assert int(got[0]["flops"]) == ref.flops(s1) and int(got[0]["bytes"]) == ref.min_bytes(s1)
    table = bench.format_table(rows, impls)
    assert s1.name in table and "20.0" in table  # 5000 / 250.5 speedup
    assert "2000.0!" in table  # failed check is marked


def test_kernel_mcp_toml_matches_harness():
    text = (WORKSPACE / "kernel-mcp.toml").read_text()
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        pytest.skip("tomllib not available")
    cfg = tomllib.loads(text)
    from kernel_mcp.workspace import parse_config

    parse_config(text)  # the server's own loader accepts it
    b = cfg["benchmark"]
    assert b["command"] == ["python3", "bench.py", "--impls", "fast"]
    assert cfg["harness"]["flops_column"] in bench.csv_columns(["fast"]) and cfg["harness"]["bytes_column"] in bench.csv_columns(["fast"])
    assert b["csv"] == "out/bench.csv"
    assert b["config_columns"] == bench.csv_columns(["fast"])[:6]
    assert b["correctness"]["column"] in bench.csv_columns(["fast"])
    assert b["metric"] in bench.csv_columns(["fast"])
    assert b["target_kernel"] == "conv3d_fast"
    assert cfg["target"]["arch"] == "gfx950"


def test_bench_without_gpu_exits_2(tmp_path):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", HIP_VISIBLE_DEVICES="")
    res = subprocess.run(
        [sys.executable, str(WORKSPACE / "bench.py"), "--impls", "fast", "--csv", str(tmp_path / "b.csv")], capture_output=True, text=True, env=env, timeout=120
    )
    assert res.returncode == 2, res.stdout + res.stderr
    out = (res.stdout + res.stderr).strip()
    assert "no GPU" in out and len(out.splitlines()) == 1
    assert not (tmp_path / "b.csv").exists()


# ---------------------------------------------------------------- compile
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("source", sorted(p.name for p in (WORKSPACE / "src").glob("*.hip")))
def test_sources_compile_with_nvcc(source, tmp_path):
    res = subprocess.run(
        ["nvcc", "-x", "cu", "-arch=sm_90", "-c", str(WORKSPACE / "src" / source), "-o", str(tmp_path / "k.o")], capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr


@pytest.mark.gpu
def test_bench_runs_on_gpu(tmp_path):
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    path = tmp_path / "b.csv"
    res = subprocess.run(
        [sys.executable, str(WORKSPACE / "bench.py"), "--impls", "fast", "--shapes", "x3d_res3", "--repeats", "3", "--csv", str(path)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    with open(path) as f:
        row = next(csv.DictReader(f))
    assert int(row["err_fast"]) == 0 and float(row["us_fast"]) > 0


def test_tune_candidates_are_whole_warps():
    tune = _load("conv3d_example_tune", "tune.py")
    for shape in ref.SHAPES:
        cands = tune.candidates(shape)
        assert cands, shape.name
        for rh, segs, hch, td, _groups in cands:
            assert rh in (4, 6, 7, 8)
            assert (segs * hch * td) % 32 == 0 and 128 <= segs * hch * td <= 256
