"""The keep/revert ledger on real git repositories and a real benchmark command run on the CPU.

The benchmark is a small script that writes a CSV like the user's benchmarks (config column,
err_*, us_*); the "kernel" it measures is a Python file whose figures a test edits, with a little
seeded run-to-run noise, so each decision path can be provoked on purpose.
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

import git
import pytest
from mcp import Client

from kernel_mcp.server import build_server

from conftest import PY, call, text_of, toml_list

pytestmark = pytest.mark.anyio

BENCH = textwrap.dedent(
    """
    import csv, os, random, sys, time
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kernel
    seed = int(os.environ["KERNEL_MCP_SEED"])
    rng = random.Random(seed)
    if getattr(kernel, "HANG", False):
        time.sleep(600)
    # the "kernel" takes the time it reports (1 ms per unit), so the server's witness sees what the CSV says;
    # WALL_MS (a kernel may set it) is a run that also saves untimed work, so it takes less than its figures
    time.sleep(getattr(kernel, "WALL_MS", sum(kernel.TIME.values())) * 1e-3)
    os.makedirs("out", exist_ok=True)
    with open("out/bench.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["shape", "N", "err_k", "us_k"])
        for shape, n in (("small", 64), ("large", 4096)):
            # NOISE (a kernel may set it per class): the run-to-run spread of that class's figure
            spread = getattr(kernel, "NOISE", {}).get(shape, 0.001)
            w.writerow([shape, n, kernel.ERR, kernel.TIME[shape] * (1 + rng.uniform(-spread, spread))])
    print("seed", seed)
    """
)
KERNEL = 'TIME = {"small": 100.0, "large": 200.0}\nERR = 0\n'


@pytest.fixture
def cpu_ws(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "ws").mkdir(parents=True)
    ws = root / "ws"
    (ws / "bench.py").write_text(BENCH)
    (ws / "kernel.py").write_text(KERNEL)
    (ws / "kernel-mcp.toml").write_text(
        f'[target]\narch = "gfx950"\nplatform = "offline"\n\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\n'
        'csv = "out/bench.csv"\nconfig_columns = ["shape"]\ncorrectness = { column = "err_k", rule = "== 0" }\n'
        'metric = "us_k"\ntarget_kernel = "k"\nnoise_threshold = 0.01\ntimeout_s = 20\nrepeats = 3\n'
        '[harness]\neditable = ["kernel.py", "notes.txt", "scratch.txt"]\n'
        "metric_seconds = 1e-3\n"  # the benchmark sleeps 1 ms per unit it reports
    )
    (ws / ".gitignore").write_text("out/\n__pycache__/\n")
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.git.commit("-m", "kernel and benchmark", "--author", "t <t@example.invalid>")
    return ws


def set_kernel(worktree: str, small: float, large: float, err: int = 0, hang: bool = False, wall_ms: float | None = None) -> None:
    wall = f"WALL_MS = {wall_ms}\n" if wall_ms is not None else ""
    Path(worktree, "kernel.py").write_text(f'TIME = {{"small": {small}, "large": {large}}}\nERR = {err}\nHANG = {hang}\n' + wall)


async def test_keep_commits_moves_best_and_leaves_user_tree_alone(cpu_ws):
    user_head = git.Repo(cpu_ws.parent).head.commit.hexsha
    async with Client(build_server(cpu_ws)) as client:
        start = await call(client, "experiment_start", tag="t1")
        wt = start["worktree"]
        assert wt.endswith("ws") and ".kernel-mcp/worktrees/t1" in wt
        set_kernel(wt, 90.0, 180.0)
        ev = await call(client, "experiment_evaluate", hypothesis="do 10% less work")
        assert ev["attempt"]["decision"] == "keep", ev["attempt"]["reasons"]
        assert "significant" in ev["attempt"]["reasons"][0]
        kept = await call(client, "experiment_keep", why="less work per output")
        assert kept["best_commit"] != start["best_commit"]
    wt_repo = git.Repo(Path(wt).parent)
    message = wt_repo.head.commit.message
    assert "do 10% less work" in message and "Kernel-MCP-Attempt" in message
    assert re.search(r"-(9\.9|10\.0)\d*%", message), message
    perf = Path(wt, "performance.md").read_text()
    assert "| baseline |" in perf and "| keep |" in perf and "less work per output" in perf
    user = git.Repo(cpu_ws.parent)
    assert user.head.commit.hexsha == user_head and not user.is_dirty(untracked_files=True)
    assert Path(cpu_ws, "kernel.py").read_text() == KERNEL


async def test_regression_is_discarded_and_revert_restores_best(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        start = await call(client, "experiment_start", tag="t2")
        wt = start["worktree"]
        set_kernel(wt, 110.0, 220.0)
        Path(wt, "scratch.txt").write_text("a file the attempt added")
        ev = await call(client, "experiment_evaluate", hypothesis="unroll more")
        assert ev["attempt"]["decision"] == "discard" and "measured regression" in ev["attempt"]["reasons"]
        assert ev["consecutive_regressions"] == 1
        refused = await client.call_tool("experiment_keep", {})
        assert refused.is_error and "decided discard" in text_of(refused)
        rev = await call(client, "experiment_revert")
        assert "kernel.py" in rev["notes"][0] and "scratch.txt" in rev["notes"][0]
    assert Path(wt, "kernel.py").read_text() == KERNEL and not Path(wt, "scratch.txt").exists()


async def test_tie_resets_the_regression_counter(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="t3"))["worktree"]
        set_kernel(wt, 110.0, 220.0)
        assert (await call(client, "experiment_evaluate", hypothesis="slower"))["consecutive_regressions"] == 1
        await call(client, "experiment_revert")
        set_kernel(wt, 100.05, 200.1)
        ev = await call(client, "experiment_evaluate", hypothesis="cosmetic")
        assert ev["attempt"]["decision"] == "discard" and ev["consecutive_regressions"] == 0
        assert any("noise" in r for r in ev["attempt"]["reasons"])


async def test_correctness_failure_asks_for_repairs_then_gives_up(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="t4"))["worktree"]
        decisions = []
        for i in range(4):
            set_kernel(wt, 50.0 + i, 100.0, err=3)  # each repair changes the code (unchanged code would be a duplicate), still wrong
            ev = await call(client, "experiment_evaluate", hypothesis="skip the halo")
            decisions.append(ev["attempt"]["decision"])
        assert decisions == ["repair-needed", "repair-needed", "repair-needed", "discard"]
        assert "still wrong after 3 repairs" in ev["attempt"]["reasons"][0]
        set_kernel(wt, 50.0, 100.0, err=0)  # a repair that works is judged normally
        ev = await call(client, "experiment_evaluate", hypothesis="skip the halo, fixed")
        assert ev["attempt"]["decision"] == "keep"


async def test_split_suggested_when_classes_diverge(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="t5"))["worktree"]
        set_kernel(wt, 80.0, 230.0)
        ev = await call(client, "experiment_evaluate", hypothesis="bigger tiles", target_class="shape=small")
        assert ev["attempt"]["decision"] == "split-suggested"
        assert any("dispatch" in r for r in ev["attempt"]["reasons"])


@pytest.mark.slow
async def test_opposite_moves_that_cancel_globally_are_a_split_not_a_tie(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="t5b"))["worktree"]
        set_kernel(wt, 55.0, 360.0)  # small -45%, large +80%: together (geomean) about -0.5%, a tie before per-class verdicts
        ev = await call(client, "experiment_evaluate", hypothesis="one tile size for every shape")
        attempt = ev["attempt"]
        assert attempt["decision"] == "split-suggested", attempt["reasons"]
        text = " ".join(attempt["reasons"])
        assert "faster beyond noise: shape=small" in text and "slower beyond noise: shape=large" in text
        assert "the config columns that separate them: shape" in text
        assert attempt["per_class"]["shape=small"].startswith("faster: ") and attempt["per_class"]["shape=large"].startswith("slower: ")


@pytest.mark.slow
async def test_a_target_gain_that_slows_a_noisy_other_class_is_not_kept(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="t5c"))["worktree"]
        # the target 20% faster; the other class 30% slower on average, its figure spread +-60% run to
        # run: its interval never comes below the +5% severe threshold (shown slower: a split; or not
        # shown either way after the pairs: undecided), and it is never kept
        Path(wt, "kernel.py").write_text('TIME = {"small": 80.0, "large": 260.0}\nERR = 0\nNOISE = {"large": 0.6}\n')
        ev = await call(client, "experiment_evaluate", hypothesis="a faster path for small shapes", target_class="shape=small")
        attempt = ev["attempt"]
        assert attempt["decision"] in ("undecided", "split-suggested"), attempt["reasons"]
        if attempt["decision"] == "undecided":
            assert any("shape=large not shown safe" in r and "+5%" in r for r in attempt["reasons"])
            assert "not shown safe" in attempt["measured"], attempt["measured"]  # the pairs went on for it
        assert ev["consecutive_regressions"] == 0  # neither is a measured regression
        refused = await client.call_tool("experiment_keep", {})
        assert refused.is_error and attempt["decision"] in text_of(refused)


@pytest.mark.slow
async def test_small_gain_counts_only_when_seen_twice(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="t6"))["worktree"]
        # a 0.5% gain in the figures (1.5 ms a run) is at the wall-time witness's noise floor, where its
        # one-sided tests refuse an honest gain at random (about one in forty, once in CI); the run also
        # saves 100 ms of untimed work, so the witness stands behind the gain and only "seen twice" decides
        set_kernel(wt, 99.5, 199.0, wall_ms=200.0)
        first = await call(client, "experiment_evaluate", hypothesis="hoist a load")
        assert first["attempt"]["decision"] == "discard" and any("not yet seen twice" in r for r in first["attempt"]["reasons"])
        second = await call(client, "experiment_evaluate", hypothesis="hoist a load")
        assert second["attempt"]["decision"] == "keep" and any("previous attempt also moved faster" in r for r in second["attempt"]["reasons"])


@pytest.mark.slow
async def test_five_regressions_stop_the_run(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="t7"))["worktree"]
        for i in range(5):
            set_kernel(wt, 110.0 + i, 220.0)
            ev = await call(client, "experiment_evaluate", hypothesis=f"idea {i}")
            if i < 4:
                await call(client, "experiment_revert")
        assert ev["status"] == "stopped" and "5 consecutive measured regressions" in ev["stop_reason"]
        refused = await client.call_tool("experiment_evaluate", {"hypothesis": "one more"})
        assert refused.is_error and "stopped" in text_of(refused)
        log = await call(client, "experiment_log", limit=10)
        assert len(log["attempts"]) == 6 and log["attempts"][-1]["decision"] == "baseline"
    perf = Path(wt, "performance.md").read_text()
    assert "## Stop summary" in perf and perf.count("| idea ") == 5
    assert Path(wt, "kernel.py").read_text() == KERNEL


async def test_dirty_workspace_is_refused_unless_carried(cpu_ws):
    Path(cpu_ws, "kernel.py").write_text(KERNEL.replace("100.0", "95.0"))
    Path(cpu_ws, "notes.txt").write_text("untracked")
    async with Client(build_server(cpu_ws)) as client:
        refused = await client.call_tool("experiment_start", {"tag": "t8"})
        assert refused.is_error and "uncommitted changes" in text_of(refused) and "kernel.py" in text_of(refused)
        start = await call(client, "experiment_start", tag="t8", carry_changes=True)
    assert "95.0" in Path(start["worktree"], "kernel.py").read_text()
    assert Path(start["worktree"], "notes.txt").exists()
    assert "95.0" in Path(cpu_ws, "kernel.py").read_text()  # the user's tree keeps its changes


async def test_hung_benchmark_is_killed_and_recorded_as_failed(cpu_ws):
    # a limit of 4 s, not the fixture's 20: the hang is killed at it (a run takes well under a second)
    config = cpu_ws / "kernel-mcp.toml"
    config.write_text(config.read_text().replace("timeout_s = 20", "timeout_s = 4"))
    git.Repo(cpu_ws.parent).git.commit("-am", "a shorter limit", "--author", "t <t@example.invalid>")
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="t9"))["worktree"]
        set_kernel(wt, 90.0, 180.0, hang=True)
        ev = await call(client, "experiment_evaluate", hypothesis="hangs")
        assert ev["attempt"]["decision"] == "failed" and "timed out at its 4 s limit" in ev["attempt"]["reasons"][0], ev["attempt"]["reasons"]
        assert ev["consecutive_regressions"] == 0


async def test_keep_refused_after_edits_since_evaluation(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="t10"))["worktree"]
        set_kernel(wt, 90.0, 180.0)
        await call(client, "experiment_evaluate", hypothesis="faster")
        set_kernel(wt, 85.0, 180.0)
        refused = await client.call_tool("experiment_keep", {})
        assert refused.is_error and "changed after it was evaluated" in text_of(refused)


@pytest.mark.parametrize("point", ["keep-before-commit", "keep-after-commit"])
async def test_kill_9_during_keep_leaves_the_ledger_consistent(cpu_ws, point):
    async with Client(build_server(cpu_ws)) as client:
        start = await call(client, "experiment_start", tag="t11")
        # a gain far above the runs' wall-time noise on a loaded machine, so the witness always
        # corroborates it: this test is about the kill, not the margin (a 10% gain was once left
        # uncorroborated under a heavy load, and the keep then refused instead of being killed)
        set_kernel(start["worktree"], 60.0, 120.0)
        ev = await call(client, "experiment_evaluate", hypothesis="faster")
        assert ev["attempt"]["decision"] == "keep", ev["attempt"]["reasons"]
    env = {**os.environ, "KERNEL_MCP_TEST_CRASH_AT": point}
    done = subprocess.run([PY, "-m", "kernel_mcp", "call", "--workspace", str(cpu_ws), "experiment_keep"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == -9
    async with Client(build_server(cpu_ws)) as client:
        status = await call(client, "experiment_status")
        log = await call(client, "experiment_log")
    wt_head = git.Repo(Path(start["worktree"]).parent).head.commit
    if point == "keep-after-commit":
        assert status["best_commit"] == wt_head.hexsha and log["attempts"][0]["outcome"] == "kept"
    else:
        assert status["best_commit"] == start["best_commit"] and log["attempts"][0]["outcome"] == "pending"
        async with Client(build_server(cpu_ws)) as client:
            kept = await call(client, "experiment_keep")  # the interrupted keep can simply be retried
        assert kept["best_commit"] != start["best_commit"]


async def test_bad_tags_and_no_experiment(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        none = await client.call_tool("experiment_status", {})
        assert none.is_error and "experiment_start first" in text_of(none)
        for tag in ("--force", "../x", "A B", "x" * 60):
            bad = await client.call_tool("experiment_start", {"tag": tag})
            assert bad.is_error, tag


async def test_run_benchmark_reports_classes_and_change_against_best(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        plain = await call(client, "run_benchmark", label="first")
        assert [c["key"] for c in plain["bench"]["classes"]] == ["shape=small", "shape=large"]
        assert plain["bench"]["repeats"] == 3 and len(set(plain["bench"]["seeds"])) == 3
        await call(client, "experiment_start", tag="t12")
        again = await client.call_tool("run_benchmark", {"repeats": 2})
        # the same code against BEST's recorded runs: a comparison with its interval, and a change
        # within the benchmark's own ±0.1% run-to-run noise (whether the interval excludes zero is
        # chance with 3 and 2 random runs, so it is not asserted)
        assert "vs BEST" in text_of(again) and "95% interval" in text_of(again)
        assert all(abs(c["change"]) < 0.005 for c in again.structured_content["comparisons"].values())


async def test_run_benchmark_in_the_experiment_worktree(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        refused = await client.call_tool("run_benchmark", {"in_experiment": True})
        assert refused.is_error and "experiment_start first" in text_of(refused)
        wt = (await call(client, "experiment_start", tag="t13"))["worktree"]
        set_kernel(wt, 50.0, 100.0)
        here = await call(client, "run_benchmark", repeats=1)
        there = await call(client, "run_benchmark", repeats=1, in_experiment=True)
    assert here["bench"]["classes"][0]["samples"][0] > 99 and there["bench"]["classes"][0]["samples"][0] < 51


async def test_a_keep_says_why_it_has_two_commit_ids(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="t12"))["worktree"]
        set_kernel(wt, 80.0, 160.0)
        await call(client, "experiment_evaluate", hypothesis="less work")
        kept = await client.call_tool("experiment_keep", {"why": "less work"})
    assert not kept.is_error, text_of(kept)
    best = kept.structured_content["best_commit"]
    measured = kept.structured_content["attempt"]["commit"]
    note = next(n for n in kept.structured_content["notes"] if n.startswith("kept as commit"))
    assert best[:10] in note and "the measured code" in note and "performance.md" in note
    assert f"| {note.split('(commit ')[1][:10]} | keep |" in Path(wt, "performance.md").read_text()
    assert measured is None or measured.startswith(best[:10])
