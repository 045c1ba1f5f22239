"""The profiler keep metric read from a kernel tracer inside the benchmark runs (CUDA: CUPTI
activity records, platforms/cuda/kernel_trace.cpp), end to end through the MCP client on a CPU
workspace: no separate profiled runs, a real gain kept, and a candidate that forges its records
(the tracer runs in its process, so it can) refused because the runs' wall time never shrank.

The workspace's "kernel" runs on the CPU and writes each launch as the tracer writes it (its
recorded format: tests/data/cuda/kernel-trace/, an H200's), and a stand-in nvcc "builds" the
tracer: orchestration only. The tracer itself is tested on a GPU in test_kernel_trace.py.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import git
import pytest
from mcp import Client

from conftest import PY, install_stand_ins, text_of, toml_list
from kernel_mcp.server import build_server

pytestmark = pytest.mark.anyio

# A launch sleeps its work and, when the tracer's folder is set, records it as the tracer does:
# start and end in ns, grid, block, registers, shared bytes, name; "end <records> <dropped>" at exit.
LAUNCHES = textwrap.dedent("""
    import atexit, os, time
    LINES = []
    def launch(name, seconds_of_work, recorded=None):
        start = time.monotonic_ns()
        time.sleep(seconds_of_work)
        ns = int((seconds_of_work if recorded is None else recorded) * 1e9)
        LINES.append(f"{start}\\t{start + ns}\\t64\\t1\\t1\\t256\\t1\\t1\\t32\\t0\\t0\\tvoid {name}(float const*, int)")
    def _write():  # the folder as the process has it when it ends (a fork server's run has its own)
        folder = os.environ.get("KERNEL_MCP_KERNEL_TRACE_DIR")
        if folder:
            with open(os.path.join(folder, f"kernels-{os.getpid()}.tsv"), "w") as f:
                f.write("\\n".join(LINES + [f"end\\t{len(LINES)}\\t0"]) + "\\n")
    atexit.register(_write)
""")
KERNEL = textwrap.dedent("""
    from launches import launch
    WORK = 0.15
    def conv(x):
        launch("k_main", WORK)
        return [2 * v for v in x]
""")
BENCH = textwrap.dedent("""
    import csv, os, sys, time
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kernel
    from launches import launch
    rows = []
    for name, n in [("small", 8), ("large", 32)]:
        times, wrong = [], 0
        for call in range(5):
            x = list(range(n))
            launch("reference_copy", 0.001)
            start = time.perf_counter()
            got = kernel.conv(x)
            times.append((time.perf_counter() - start) * 1e6)
            wrong += sum(1 for a, b in zip(got, x) if a != 2 * b)
        rows.append([name, n, wrong, sorted(times)[2]])
    os.makedirs("out", exist_ok=True)
    with open("out/bench.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["shape", "n", "err_k", "us_k"])
        out.writerows(rows)
""")
# nvcc's stand-in "builds" the tracer (an empty file where -o says); the toolkit folder holds the
# CUPTI header's kernel record name and a library file, as kernel_trace.cupti_folders looks for them
STAND_IN_NVCC = "import sys; open(sys.argv[sys.argv.index('-o') + 1], 'w').close()\n"


@pytest.fixture
def traced_ws(tmp_path, monkeypatch):
    toolkit = tmp_path / "toolkit"
    for folder in ("include", "lib64"):
        (toolkit / folder).mkdir(parents=True)
    (toolkit / "include" / "cupti.h").write_text("#include <cupti_activity.h>\n")
    (toolkit / "include" / "cupti_activity.h").write_text("typedef struct {\n  int start;\n} CUpti_ActivityKernel9;\n")
    (toolkit / "lib64" / "libcupti.so").write_bytes(b"")
    bindir = install_stand_ins(tmp_path, monkeypatch, {"nvcc": STAND_IN_NVCC})
    os.replace(bindir, toolkit / "bin")
    monkeypatch.setenv("PATH", f"{toolkit / 'bin'}{os.pathsep}{os.environ['PATH']}")
    root = tmp_path / "repo"
    root.mkdir()
    for name, body in {"launches.py": LAUNCHES, "kernel.py": KERNEL, "bench.py": BENCH, ".gitignore": "out/\n__pycache__/\n"}.items():
        (root / name).write_text(body)
    (root / "kernel-mcp.toml").write_text(
        f'[target]\narch = "sm_90"\nplatform = "cuda"\n\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\ncsv = "out/bench.csv"\n'
        'config_columns = ["shape"]\ncorrectness = { column = "err_k", rule = "== 0" }\nmetric = "us_k"\ntarget_kernel = "^k_main$"\n'
        'noise_threshold = 0.01\ntimeout_s = 60\nrepeats = 3\n\n[harness]\neditable = ["kernel.py"]\nkeep_metric = "profiler"\n'
    )
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.git.commit("-m", "cpu workspace", "--author", "t <t@example.invalid>")
    return root


async def _evaluate_change(root: Path, old: str, new: str) -> tuple[dict, dict]:
    async with Client(build_server(root)) as client:
        started = await client.call_tool("experiment_start", {"tag": "traced"})
        assert not started.is_error, text_of(started)
        kernel = Path(started.structured_content["worktree"], "kernel.py")
        kernel.write_text(kernel.read_text().replace(old, new))
        result = await client.call_tool("experiment_evaluate", {"hypothesis": "a change of the kernel's work"})
        assert not result.is_error, text_of(result)
        log = await client.call_tool("experiment_log", {})
    return result.structured_content["attempt"], log.structured_content


async def test_a_real_gain_is_kept_from_the_kernel_records_of_the_benchmark_runs(traced_ws):
    attempt, _ = await _evaluate_change(traced_ws, "WORK = 0.15\n", "WORK = 0.11\n")
    assert attempt["decision"] == "keep", attempt["reasons"]
    assert "profiler GPU kernel time: -26.7%" in attempt["reasons"][0], attempt["reasons"]
    assert "recorded in the benchmark runs by CUPTI kernel activity records" in attempt["measured"]
    assert "time: benchmark runs" in attempt["measured"]
    runs = list((traced_ws / ".kernel-mcp" / "runs").glob("*experiment_evaluate*/kernels-*"))
    assert runs and not list((traced_ws / ".kernel-mcp" / "runs").glob("*profile_kernels*")), "no profiled runs of their own"


async def test_with_preload_the_runs_are_forks_and_the_same_gain_is_kept(traced_ws, tmp_path, monkeypatch):
    """[benchmark] preload: each side's runs are forks of a fork server that imported the module once;
    each run's records still land in its own pair's folder, and the decision is the same. The module is
    installed (on PYTHONPATH, outside the workspace) as torch is: a fork server imports nothing from
    what the runs may write (test_forked_attacks.py)."""
    site = tmp_path / "site"
    site.mkdir()
    os.replace(traced_ws / "launches.py", site / "launches.py")
    monkeypatch.setenv("PYTHONPATH", str(site))
    toml = traced_ws / "kernel-mcp.toml"
    toml.write_text(toml.read_text().replace('metric = "us_k"\n', 'metric = "us_k"\npreload = ["launches"]\n'))
    repo = git.Repo(traced_ws)
    repo.git.commit("-am", "preload", "--author", "t <t@example.invalid>")
    attempt, _ = await _evaluate_change(traced_ws, "WORK = 0.15\n", "WORK = 0.11\n")
    assert attempt["decision"] == "keep", attempt["reasons"]
    assert "profiler GPU kernel time: -26.7%" in attempt["reasons"][0], attempt["reasons"]
    assert "launches imported once per side by a fork server; each run a fork of it" in attempt["measured"]
    folder = next((traced_ws / ".kernel-mcp" / "runs").glob("*experiment_evaluate*"))
    assert sorted(p.name for p in folder.glob("forkserver-*.stderr.log")) == ["forkserver-best.stderr.log", "forkserver-candidate.stderr.log"]
    pairs = sorted(folder.glob("kernels-*-candidate/pair-*"))
    assert len(pairs) >= 3 and all(len(list(p.glob("kernels-*.tsv"))) == 1 for p in pairs)


async def test_records_forged_inside_the_candidates_process_are_not_corroborated(traced_ws):
    """The same work, recorded as a tenth of it: the records claim 1.35 s less per run, the runs'
    wall time shows none of it."""
    attempt, _ = await _evaluate_change(traced_ws, '    launch("k_main", WORK)\n', '    launch("k_main", WORK, recorded=WORK / 10)\n')
    assert attempt["decision"] == "not-corroborated", attempt["reasons"]
    assert any("the kernel trace's records claim" in r and "kernel tracer runs inside the benchmark's processes" in r for r in attempt["reasons"])
