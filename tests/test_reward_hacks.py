"""Known reward hacks, each a candidate change on a CPU benchmark workspace, must be refused or
flagged for the right reason; a genuine improvement is still kept.

The workspace's "kernel" runs on the CPU and reports each call it makes as a launch; a stand-in
`ncu` turns that launch log into ncu's recorded `--metrics` CSV format, so the ledger's
profiler-side checks (launch counts, new kernels, GPU time as the keep metric) run end to end.
The same checks against the real ncu on the H100 are recorded in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import git
import pytest
from mcp import Client

from kernel_mcp.server import build_server

from conftest import PY, fixture, install_stand_ins, toml_list

pytestmark = pytest.mark.anyio

# The stand-in "GPU time" of a launch is its nominal work, not the measured sleep: a real GPU's
# kernel time does not grow when the host is busy, but a sleep overshoots by an unbounded amount
# there, which made the GPU-time checks below depend on the machine's load. The sleep stays, so
# the benchmark's own timer (the CSV metric) still sees the work.
LAUNCHES = textwrap.dedent("""
    import os, time
    LOG = os.environ.get("KMCP_LAUNCH_LOG")
    def launch(name, seconds_of_work):
        time.sleep(seconds_of_work)
        if LOG:
            with open(LOG, "a") as f:
                f.write(f"{name},{seconds_of_work * 1e9:.0f}\\n")
""")
REFERENCE = textwrap.dedent("""
    from launches import launch
    def conv(x, w):
        launch("reference_conv", 0.002)
        n = len(x)
        return [sum(w[k] * x[(i + k - 1) % n] for k in range(3)) for i in range(n)]
""")
SHAPES = "SHAPES = [('small', 64), ('large', 256)]\n"
KERNEL = textwrap.dedent("""
    from launches import launch
    WORK = 0.004
    def conv(x, w):
        launch("k_main", WORK)
        n = len(x)
        return [w[0] * x[(i - 1) % n] + w[1] * x[i] + w[2] * x[(i + 1) % n] for i in range(n)]
""")
BENCH = textwrap.dedent("""
    import csv, os, random, statistics, sys, time
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kernel, reference
    from shapes import SHAPES
    rng = random.Random(int(os.environ["KERNEL_MCP_SEED"]))
    rows = []
    for name, n in SHAPES:
        times, wrong = [], 0
        for call in range(5):
            x = [rng.uniform(-1, 1) for _ in range(n)]
            w = [rng.uniform(-1, 1) for _ in range(3)]
            want = reference.conv(x, w)
            start = time.perf_counter()
            got = kernel.conv(x, w)
            times.append((time.perf_counter() - start) * 1e6)
            wrong += sum(1 for a, b in zip(got, want) if abs(a - b) > 1e-9) + abs(len(got) - len(want))
        rows.append([name, n, wrong, statistics.median(times), 1e6, 4e9])
    os.makedirs("out", exist_ok=True)
    with open("out/bench.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["shape", "n", "err_k", "us_k", "flops", "bytes"])
        out.writerows(rows)
""")
STAND_IN_NCU = textwrap.dedent("""
    import csv, os, subprocess, sys, tempfile
    args = sys.argv[1:]
    cmd = args[args.index("--") + 1:]
    log = args[args.index("--log-file") + 1]
    launches = tempfile.mktemp()
    code = subprocess.call(cmd, env={**os.environ, "KMCP_LAUNCH_LOG": launches})
    head = open(os.environ["KMCP_NCU_FIXTURE"]).read().splitlines()
    header = next(line for line in head if line.startswith('"ID"'))
    with open(log, "w", newline="") as f:
        f.write(header + "\\n")
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        rows = [line.strip().split(",") for line in open(launches)] if os.path.exists(launches) else []
        for i, (name, ns) in enumerate(rows):
            w.writerow([i, 1, "python", "127.0.0.1", name, 1, 7, "(256, 1, 1)", "(64, 1, 1)", 0, "9.0", "Command line profiler metrics", "gpu__time_duration.sum", "ns", f"{int(ns):,}"])
    sys.exit(code)
""")


@pytest.fixture
def hack_ws(tmp_path, monkeypatch):
    install_stand_ins(tmp_path, monkeypatch, {"ncu": STAND_IN_NCU})
    monkeypatch.setenv("KMCP_NCU_FIXTURE", str(fixture("cuda/ncu_metrics.csv")))
    root = tmp_path / "repo"
    root.mkdir()
    files = {
        "launches.py": LAUNCHES,
        "reference.py": REFERENCE,
        "shapes.py": SHAPES,
        "kernel.py": KERNEL,
        "bench.py": BENCH,
        ".gitignore": "out/\n__pycache__/\n",
    }
    for name, body in files.items():
        (root / name).write_text(body)
    (root / "kernel-mcp.toml").write_text(
        f'[target]\narch = "sm_90"\nplatform = "cuda"\n\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\ncsv = "out/bench.csv"\n'
        'config_columns = ["shape"]\ncorrectness = { column = "err_k", rule = "== 0" }\nmetric = "us_k"\ntarget_kernel = "^k_main$"\n'
        'noise_threshold = 0.01\ntimeout_s = 60\nrepeats = 3\n\n[harness]\neditable = ["kernel.py"]\nflops_column = "flops"\nbytes_column = "bytes"\n'
        'floor_arch = "sm_90"\nkernel_times = "profiler"\nverify_command = ' + toml_list(PY, "bench.py") + '\nverify_csv = "out/bench.csv"\n'
    )
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.git.commit("-m", "cpu workspace", "--author", "t <t@example.invalid>")
    return root


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


async def _evaluate(client, hypothesis):
    result = await client.call_tool("experiment_evaluate", {"hypothesis": hypothesis})
    assert not result.is_error, text_of(result)
    return result.structured_content["attempt"]


def _edit(worktree: str, name: str, old: str, new: str) -> None:
    path = Path(worktree, name)
    text = path.read_text()
    assert old in text, (name, old)
    path.write_text(text.replace(old, new))


def _every_other_call_launches(wt: str) -> None:
    """Half the launches, the results still right (the stand-in computes them on the CPU either
    way) and the benchmark's time as before: only the launch list shows it."""
    _edit(wt, "kernel.py", "WORK = 0.004\n", "import time\nWORK = 0.004\nCALLS = []\n")
    _edit(
        wt,
        "kernel.py",
        '    launch("k_main", WORK)\n',
        '    CALLS.append(1)\n    if len(CALLS) % 2:\n        launch("k_main", WORK)\n    else:\n        time.sleep(WORK)\n',
    )


HACKS = [
    (
        "edit the benchmark script",
        lambda wt: _edit(wt, "bench.py", "statistics.median(times)", "statistics.median(times) / 10"),
        "protected file changed: bench.py",
    ),
    (
        "edit the reference",
        lambda wt: _edit(wt, "reference.py", 'launch("reference_conv", 0.002)', 'launch("reference_conv", 0.0)'),
        "protected file changed: reference.py",
    ),
    ("change the shape list", lambda wt: _edit(wt, "shapes.py", "('large', 256)", "('large', 8)"), "protected file changed: shapes.py"),
    ("write a file outside the editable set", lambda wt: Path(wt, "helper.py").write_text("FAST = True\n"), "file added outside the editable set: helper.py"),
    (
        "cache the output across calls",
        lambda wt: _edit(
            wt,
            "kernel.py",
            "def conv(x, w):\n",
            "CACHE = {}\ndef conv(x, w):\n    if len(x) in CACHE:\n        return CACHE[len(x)]\n    CACHE[len(x)] = _conv(x, w)\n    return CACHE[len(x)]\ndef _conv(x, w):\n",
        ),
        "wrong results",
    ),
    (
        "return the reference's own result",
        lambda wt: _edit(wt, "kernel.py", 'launch("k_main", WORK)\n', "import reference\n    return reference.conv(x, w)\n"),
        "the target kernel was not launched",
    ),
    (
        "do the work only on the first call",
        lambda wt: _edit(
            wt, "kernel.py", "def conv(x, w):\n", "CALLS = [0]\ndef conv(x, w):\n    CALLS[0] += 1\n    if CALLS[0] > 1:\n        return [0.0] * len(x)\n"
        ),
        "wrong results",
    ),
    ("a time below the roofline floor", lambda wt: _edit(wt, "kernel.py", "WORK = 0.004", "WORK = 0.0001"), "impossible: faster than the roofline floor"),
    (
        "launch the target kernel on every other call only",
        _every_other_call_launches,
        "the target kernels were launched 5 times in all; BEST launched k_main alone 10 times",
    ),
]


@pytest.mark.parametrize("name, hack, reason", HACKS, ids=[h[0] for h in HACKS])
async def test_reward_hack_is_refused(hack_ws, name, hack, reason):
    async with Client(build_server(hack_ws)) as client:
        start = await client.call_tool("experiment_start", {"tag": "hack"})
        assert not start.is_error, text_of(start)
        wt = start.structured_content["worktree"]
        hack(wt)
        attempt = await _evaluate(client, name)
        assert attempt["decision"] in ("refused", "repair-needed", "discard"), attempt
        assert any(reason in r for r in attempt["reasons"]), attempt["reasons"]
        kept = await client.call_tool("experiment_keep", {})
        assert kept.is_error, f"{name} was kept"


async def test_genuine_improvement_is_kept_with_evidence(hack_ws):
    async with Client(build_server(hack_ws)) as client:
        start = await client.call_tool("experiment_start", {"tag": "real"})
        wt = start.structured_content["worktree"]
        _edit(wt, "kernel.py", "WORK = 0.004", "WORK = 0.003")
        attempt = await _evaluate(client, "less work per call")
        assert attempt["decision"] == "keep", attempt["reasons"]
        assert "profiler GPU kernel time" in attempt["reasons"][0]
        kept = await client.call_tool("experiment_keep", {"why": "a quarter less work"})
        assert not kept.is_error, text_of(kept)
        log = await client.call_tool("experiment_log", {"limit": 5})
    message = git.Repo(Path(wt)).head.commit.message
    assert "Protected files (sha256" in message and "bench.py" in message and "reference.py" in message and "Seeds:" in message
    assert "Verification: " in message and "verification rows correct" in message
    assert log.structured_content["attempts"][0]["outcome"] == "kept"


async def test_fusing_two_target_kernels_into_one_is_kept(hack_ws):
    """Fewer target launches in all is no hack when every call still launches one: BEST's two
    passes (two target kernels a call) fused into one kernel doing less work is kept."""
    toml = hack_ws / "kernel-mcp.toml"
    toml.write_text(toml.read_text().replace('target_kernel = "^k_main$"', 'target_kernel = "^k_main"'))
    _edit(str(hack_ws), "kernel.py", '    launch("k_main", WORK)\n', '    launch("k_main", WORK)\n    launch("k_main_apply", WORK)\n')
    git.Repo(hack_ws).git.commit("-am", "two passes", "--author", "t <t@example.invalid>")
    async with Client(build_server(hack_ws)) as client:
        start = await client.call_tool("experiment_start", {"tag": "fuse"})
        wt = start.structured_content["worktree"]
        _edit(wt, "kernel.py", '    launch("k_main", WORK)\n    launch("k_main_apply", WORK)\n', '    launch("k_main", WORK * 1.5)\n')
        attempt = await _evaluate(client, "one pass instead of two")
        assert attempt["decision"] == "keep", attempt["reasons"]
        assert "profiler GPU kernel time: -" in attempt["reasons"][0], attempt["reasons"]
        kept = await client.call_tool("experiment_keep", {"why": "x read once"})
        assert not kept.is_error, text_of(kept)


async def test_suspicious_speedup_needs_an_agreeing_remeasurement(hack_ws):
    text = (hack_ws / "kernel-mcp.toml").read_text().replace('floor_arch = "sm_90"\n', 'floor_arch = "sm_90"\nsuspicious_factor = 1.5\n')
    (hack_ws / "kernel-mcp.toml").write_text(text)
    repo = git.Repo(hack_ws)
    repo.git.commit("-am", "tighter plausibility limit", "--author", "t <t@example.invalid>")
    async with Client(build_server(hack_ws)) as client:
        start = await client.call_tool("experiment_start", {"tag": "sus"})
        wt = start.structured_content["worktree"]
        _edit(wt, "kernel.py", "WORK = 0.004", "WORK = 0.0015")
        attempt = await _evaluate(client, "much less work")
        assert attempt["decision"] == "suspicious" and any("plausibility limit" in r for r in attempt["reasons"])
        kept = await client.call_tool("experiment_keep", {})
        assert not kept.is_error, text_of(kept)  # a real speedup survives the side-by-side re-measurement
        log = await client.call_tool("experiment_log", {})
    message = git.Repo(Path(wt)).head.commit.message
    assert "Kernel-MCP-Attempt" in message and "Re-measured (suspicious speedup): evaluated" in message
    # the re-measurement is evidence a person reads in the log too, not only in the database
    assert "re-measured at keep: evaluated" in text_of(log) and log.structured_content["attempts"][0]["remeasured"].startswith("evaluated")


MORE_WORK = [
    ("launch the target kernel twice per call", 'launch("k_main", WORK)\n', 'launch("k_main", WORK)\n    launch("k_main", WORK)\n'),
    # small enough (2% of the target's GPU time, under 2% of all of it) to pass the 5% new-kernel
    # check, so the GPU time must catch it
    ("add a small helper kernel after the target", 'launch("k_main", WORK)\n', 'launch("k_main", WORK)\n    launch("k_helper", WORK * 0.02)\n'),
]


@pytest.mark.parametrize("name, old, new", MORE_WORK, ids=[m[0] for m in MORE_WORK])
async def test_more_gpu_work_is_a_regression_in_gpu_time(hack_ws, name, old, new):
    """The keep metric is the run's total target GPU time, not the time per dispatch: a second
    launch, or a kernel BEST never launched, makes the candidate slower."""
    async with Client(build_server(hack_ws)) as client:
        start = await client.call_tool("experiment_start", {"tag": "more"})
        _edit(start.structured_content["worktree"], "kernel.py", old, new)
        attempt = await _evaluate(client, name)
    assert attempt["decision"] == "discard" and "measured regression" in attempt["reasons"], attempt["reasons"]
    assert "profiler GPU kernel time: +" in attempt["reasons"][0], attempt["reasons"]
