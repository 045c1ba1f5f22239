"""The ledger under the conditions that broke it for users: a GPU whose speed drifts, a Python
harness with no .gitignore, a verification that edits files, two servers on one workspace, and
a process killed at each step. Real git, real subprocess benchmarks, the SDK's real Client (in
memory and over stdio)."""

from __future__ import annotations

import os
import subprocess
import textwrap
import time
from pathlib import Path

import anyio
import git
import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters

from kernel_mcp.server import build_server

from conftest import PY, call, text_of, toml_list

pytestmark = pytest.mark.anyio

# The "GPU" gets slower by 1% every 10 s of wall-clock time from the workspace's creation: a
# candidate judged against BEST measured earlier would lose by drift alone.
DRIFTING_BENCH = textwrap.dedent(
    """
    import csv, os, random, sys, time
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    import kernel
    t0 = float(open(os.path.join(here, "t0.txt")).read())
    speed = 1 + 0.001 * (time.time() - t0)
    rng = random.Random(int(os.environ["KERNEL_MCP_SEED"]))
    time.sleep(0.6 * kernel.FACTOR * speed)  # the "kernel" takes the time it reports: the server's witness sees it too
    os.makedirs("out", exist_ok=True)
    with open("out/bench.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["shape", "err_k", "us_k"])
        for shape, base in (("small", 100.0), ("large", 200.0)):
            w.writerow([shape, kernel.ERR, base * kernel.FACTOR * speed * (1 + rng.uniform(-0.001, 0.001))])
    """
)
KERNEL = "FACTOR = 1.0\nERR = 0\n"


def make_ws(root: Path, bench: str, gitignore: str | None, extra_toml: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "bench.py").write_text(bench)
    (root / "kernel.py").write_text(KERNEL)
    (root / "t0.txt").write_text(f"{time.time():.3f}\n")
    if gitignore is not None:
        (root / ".gitignore").write_text(gitignore)
    (root / "kernel-mcp.toml").write_text(
        f'[target]\narch = "gfx950"\nplatform = "offline"\n\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\n'
        'csv = "out/bench.csv"\nconfig_columns = ["shape"]\ncorrectness = { column = "err_k", rule = "== 0" }\n'
        'metric = "us_k"\ntarget_kernel = "k"\nnoise_threshold = 0.01\ntimeout_s = 30\nrepeats = 2\n'
        '[harness]\neditable = ["kernel.py"]\n' + extra_toml
    )
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.git.commit("-m", "workspace", "--author", "t <t@example.invalid>")
    return root


def set_factor(worktree: str, factor: float) -> None:
    Path(worktree, "kernel.py").write_text(f"FACTOR = {factor}\nERR = 0\n")


async def test_drifting_gpu_gives_ties_in_a_a_and_still_detects_5_percent(tmp_path):
    # A/A measures BEST against itself on purpose: unchanged code is otherwise decided without a run
    ws = make_ws(tmp_path / "drift", DRIFTING_BENCH, "out/\n__pycache__/\n", "measure_same_code = true\n")
    async with Client(build_server(ws)) as client:
        start = await call(client, "experiment_start", tag="drift")
        for _ in range(3):
            same = await call(client, "experiment_evaluate", hypothesis="A/A: unchanged")
            attempt = same["attempt"]
            assert attempt["decision"] == "discard" and "tie within noise" in attempt["reasons"][-1], attempt
            assert "pairs" in attempt["change"] and "BEST and candidate side by side" in attempt["measured"]
        set_factor(start["worktree"], 1.05)
        slower = await call(client, "experiment_evaluate", hypothesis="5% more work")
        assert slower["attempt"]["decision"] == "discard" and "measured regression" in slower["attempt"]["reasons"]
        set_factor(start["worktree"], 0.95)
        faster = await call(client, "experiment_evaluate", hypothesis="5% less work")
        assert faster["attempt"]["decision"] == "keep"
        assert set(faster["attempt"]["per_class"]) == {"shape=small", "shape=large"}
        log = await call(client, "experiment_log")
    outcomes = [a["outcome"] for a in log["attempts"]]
    assert outcomes[0] == "pending" and outcomes.count("pending") == 1  # each new evaluation supersedes the last


async def test_python_harness_without_gitignore_is_judged_not_refused(tmp_path):
    """The benchmark leaves __pycache__/ and out/bench.csv in the worktree: outputs, never edits."""
    ws = make_ws(tmp_path / "py", DRIFTING_BENCH, gitignore=None)
    async with Client(build_server(ws)) as client:
        start = await call(client, "experiment_start", tag="nogi")
        set_factor(start["worktree"], 0.9)
        ev = await call(client, "experiment_evaluate", hypothesis="10% less work")
        assert ev["attempt"]["decision"] == "keep", ev["attempt"]["reasons"]
        assert ev["attempt"]["files"] == ["kernel.py"]
        kept = await call(client, "experiment_keep", why="less work")
    head = git.Repo(start["worktree"]).head.commit
    assert kept["best_commit"] == head.hexsha
    committed = {d.a_path or d.b_path for d in head.diff(head.parents[0])}
    assert committed == {"kernel.py", "performance.md"}  # no __pycache__, no out/bench.csv
    measured = git.Repo(ws).commit(f"refs/kernel-mcp/nogi/attempt-{ev['attempt']['id']}")  # the code that was measured, pinned
    assert measured.tree.hexsha != head.tree.hexsha and not head.diff(measured, paths=["kernel.py"])  # same code, plus the performance row
    perf = Path(start["worktree"], "performance.md").read_text()
    assert f"| {measured.hexsha[:10]} | keep |" in perf and "attempt #" not in perf
    assert "not measured (keep metric: the benchmark's timer)" in perf


async def _keep_a_ten_percent_gain(client):
    """Start, evaluate a real 10% gain (decided keep) and ask to keep it: what the verification then says."""
    start = await call(client, "experiment_start", tag="ver")
    set_factor(start["worktree"], 0.9)
    ev = await call(client, "experiment_evaluate", hypothesis="10% less work")
    assert ev["attempt"]["decision"] == "keep"
    return start, await client.call_tool("experiment_keep", {})


@pytest.mark.parametrize("victim", ["kernel.py", "bench.py"])
async def test_a_verification_that_edits_files_cannot_get_them_kept(tmp_path, victim):
    editor = f"import pathlib; p = pathlib.Path({victim!r}); p.write_text(p.read_text() + '\\n# touched by the verification\\n')"
    ws = make_ws(tmp_path / "verify", DRIFTING_BENCH, "out/\n__pycache__/\n", extra_toml=f"verify_command = {toml_list(PY, '-c', editor)}\n")
    async with Client(build_server(ws)) as client:
        start, refused = await _keep_a_ten_percent_gain(client)
        assert refused.is_error and "the verification changed files of the candidate" in text_of(refused) and victim in text_of(refused)
        status = await call(client, "experiment_status")
    assert status["best_commit"] == start["best_commit"]
    assert git.Repo(start["worktree"]).head.commit.hexsha == start["best_commit"]
    assert status["attempt"] is None or status["attempt"]["outcome"] != "kept"


# A check written the common way: it writes every shape's error count and exits 1 when one is wrong.
FAILING_CHECK = textwrap.dedent(
    """
    import csv, os, sys
    os.makedirs("out", exist_ok=True)
    with open("out/verify.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["shape", "err_k"])
        w.writerow(["tail4097", 12])
        w.writerow(["square", 0])
    sys.exit(1)
    """
)


async def test_a_verification_that_exits_1_names_the_wrong_shapes_it_wrote(tmp_path):
    # seen on the device: a tail bug refused with "the verification command exit 1:" and nothing more
    ws = make_ws(
        tmp_path / "verify", DRIFTING_BENCH, "out/\n__pycache__/\n", extra_toml=f'verify_command = {toml_list(PY, "check.py")}\nverify_csv = "out/verify.csv"\n'
    )
    (ws / "check.py").write_text(FAILING_CHECK)
    repo = git.Repo(ws)
    repo.git.add("-A")
    repo.git.commit("-m", "a check", "--author", "t <t@example.invalid>")
    async with Client(build_server(ws)) as client:
        _, refused = await _keep_a_ten_percent_gain(client)
    text = text_of(refused)
    assert refused.is_error and "wrong results on tail4097 (err_k = 12)" in text and "exit 1" in text and "square" not in text


def _stdio(ws: Path, crash_at: str | None = None) -> StdioServerParameters:
    env = dict(os.environ)
    if crash_at:
        env["KERNEL_MCP_TEST_CRASH_AT"] = crash_at
    return StdioServerParameters(command=PY, args=["-m", "kernel_mcp", "serve", "--workspace", str(ws)], env=env)


# The verification of a keep waits (up to a minute) for a "go" file, so the test knows it is mid-way.
BARRIER = textwrap.dedent(
    """
    import os, pathlib, sys, time
    folder = pathlib.Path(sys.argv[1])
    (folder / str(os.getpid())).write_text("here")
    deadline = time.time() + 60
    while not (folder / "go").exists() and time.time() < deadline:
        time.sleep(0.05)
    """
)


async def test_two_server_processes_keeping_the_same_attempt_commit_it_once(tmp_path):
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    verify = toml_list(PY, "-c", BARRIER, str(barrier))
    ws = make_ws(tmp_path / "two", DRIFTING_BENCH, "out/\n__pycache__/\n", extra_toml=f"verify_command = {verify}\nwritable = {toml_list(str(barrier))}\n")
    async with Client(build_server(ws)) as client:
        start = await call(client, "experiment_start", tag="two")
        set_factor(start["worktree"], 0.9)
        await call(client, "experiment_evaluate", hypothesis="10% less work")
    answers = []

    async def keep_from_its_own_server() -> None:
        async with Client(_stdio(ws)) as client:
            answers.append(await client.call_tool("experiment_keep", {}))

    async with anyio.create_task_group() as group:
        group.start_soon(keep_from_its_own_server)
        with anyio.fail_after(60):
            while not list(barrier.iterdir()):  # the first keep's verification is running
                await anyio.sleep(0.05)
        async with Client(_stdio(ws)) as client:  # a second server: one judge at a time, and it is named
            second = await client.call_tool("experiment_keep", {})
        (barrier / "go").write_text("go")
    assert second.is_error and "another kernel-mcp judge is measuring in this workspace: process" in text_of(second), text_of(second)
    assert [a.is_error for a in answers] == [False], [text_of(a) for a in answers]
    messages = [c.message for c in git.Repo(start["worktree"]).iter_commits(f"{start['best_commit']}..HEAD")]
    assert len(messages) == 1 and "Kernel-MCP-Attempt: 2\n" in messages[0]


async def _crash(ws: Path, point: str, tool: str, arguments: dict) -> None:
    with pytest.raises(ExceptionGroup) as crashed:  # the client's task groups wrap the lost connection
        async with Client(_stdio(ws, point)) as client:
            await client.call_tool(tool, arguments)
    assert crashed.group_contains(MCPError, match="Connection closed")


@pytest.mark.parametrize("point", ["start-during-baseline", "evaluate-during-runs", "keep-before-commit", "keep-after-commit", "many-after-first-record"])
async def test_kill_9_at_each_step_leaves_a_ledger_the_next_call_works_with(tmp_path, point):
    ws = make_ws(tmp_path / "kill", DRIFTING_BENCH, "out/\n__pycache__/\n")
    if point == "start-during-baseline":
        await _crash(ws, point, "experiment_start", {"tag": "k"})
        async with Client(build_server(ws)) as client:
            again = await call(client, "experiment_start", tag="k")  # the half-made experiment is cleaned up
        assert again["status"] == "running"
        return
    async with Client(build_server(ws)) as client:
        start = await call(client, "experiment_start", tag="k")
        set_factor(start["worktree"], 0.9)
        if point.startswith("keep"):
            await call(client, "experiment_evaluate", hypothesis="10% less work")
    if point == "many-after-first-record":
        repo = git.Repo(ws)
        diff = "--- a/kernel.py\n+++ b/kernel.py\n@@ -1,2 +1,2 @@\n-FACTOR = 1.0\n+FACTOR = 0.8\n ERR = 0\n"
        await _crash(
            ws,
            point,
            "experiment_evaluate_many",
            {"candidates": [{"patch": diff, "hypothesis": "20% less work"}, {"patch": diff, "hypothesis": "the same, again"}]},
        )
        left = list((ws / ".kernel-mcp" / "batches" / "k").iterdir())
        assert left  # the killed batch left its candidate worktrees...
        async with Client(build_server(ws)) as client:
            await call(client, "experiment_status")
        assert not list((ws / ".kernel-mcp" / "batches" / "k").iterdir())  # ...and the next call removed them
        assert "k.b" not in repo.git.worktree("list")
        return
    tool = "experiment_keep" if point.startswith("keep") else "experiment_evaluate"
    await _crash(ws, point, tool, {} if point.startswith("keep") else {"hypothesis": "10% less work"})
    async with Client(build_server(ws)) as client:
        status = await call(client, "experiment_status")
        wt = git.Repo(start["worktree"])
        assert not (Path(wt.git_dir) / "index.lock").exists()
        if point == "keep-after-commit":
            assert status["best_commit"] == wt.head.commit.hexsha != start["best_commit"]
            assert (await call(client, "experiment_log"))["attempts"][0]["outcome"] == "kept"
        else:
            assert status["best_commit"] == start["best_commit"] == wt.head.commit.hexsha
            if point == "evaluate-during-runs":
                await call(client, "experiment_evaluate", hypothesis="10% less work")
            kept = await call(client, "experiment_keep")
            assert kept["best_commit"] != start["best_commit"]
        assert wt.git.status("--porcelain", "--untracked-files=no") == ""


async def test_end_writes_the_stop_summary_and_refuses_unevaluated_changes(tmp_path):
    ws = make_ws(tmp_path / "end", DRIFTING_BENCH, "out/\n__pycache__/\n")
    async with Client(build_server(ws)) as client:
        start = await call(client, "experiment_start", tag="e")
        set_factor(start["worktree"], 0.9)
        refused = await client.call_tool("experiment_end", {"reason": "done for today"})
        assert refused.is_error and "never evaluated" in text_of(refused) and "kernel.py" in text_of(refused)
        await call(client, "experiment_evaluate", hypothesis="10% less work")
        await call(client, "experiment_keep")
        ended = await call(client, "experiment_end", reason="done for today")
        assert ended["status"] == "ended"
        after = await client.call_tool("experiment_evaluate", {"hypothesis": "more"})
        assert after.is_error and "ended" in text_of(after)
    perf = Path(start["worktree"], "performance.md").read_text()
    assert "## Stop summary" in perf and "done for today" in perf and "kept: 2 attempt(s)" in perf
    assert subprocess.run(["git", "-C", start["worktree"], "status", "--porcelain"], capture_output=True, text=True).stdout == ""


def test_a_ledger_written_before_the_typed_state_opens_with_defaults(tmp_path):
    """An older ledger (no run_outputs, owner or intent commit columns; evidence with keys this
    version does not know) is read as typed records, with nothing recorded dropped."""
    import json
    import sqlite3

    from kernel_mcp.ledger.store import LedgerStore

    path = tmp_path / "ledger.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""
    CREATE TABLE experiments (tag TEXT PRIMARY KEY, branch TEXT NOT NULL, worktree TEXT NOT NULL, subdir TEXT NOT NULL,
      base_commit TEXT NOT NULL, best_commit TEXT NOT NULL, best_attempt INTEGER, status TEXT NOT NULL, stop_reason TEXT,
      consecutive_regressions INTEGER NOT NULL DEFAULT 0, protected TEXT NOT NULL DEFAULT '{}', created TEXT NOT NULL);
    CREATE TABLE attempts (id INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL, parent_commit TEXT NOT NULL, commit_sha TEXT,
      diff_hash TEXT, files TEXT NOT NULL DEFAULT '[]', hypothesis TEXT NOT NULL, target_class TEXT, figures TEXT NOT NULL DEFAULT '{}',
      comparisons TEXT NOT NULL DEFAULT '{}', decision TEXT NOT NULL, reasons TEXT NOT NULL DEFAULT '[]', regression INTEGER NOT NULL DEFAULT 0,
      repair_count INTEGER NOT NULL DEFAULT 0, evidence TEXT NOT NULL DEFAULT '{}', outcome TEXT NOT NULL, created TEXT NOT NULL, closed TEXT);
    CREATE TABLE intents (tag TEXT NOT NULL, action TEXT NOT NULL, attempt_id INTEGER, started TEXT NOT NULL);
    """)
    db.execute(
        "INSERT INTO experiments VALUES ('old', 'kernel-opt/old', '/x', '.', 'a1', 'b2', 1, 'running', NULL, 0, '{\"bench.py\": \"ff\"}', '2026-11-01T00:00:00')"
    )
    figures = {"shape=small": {"key": "shape=small", "rows": 1, "correct": True, "failing_rows": 0, "worst_error": 0.0, "samples": [10.0, 11.0]}}
    evidence = {"seeds": [1, 2], "noise": {"level": 0.004, "statement": "A/A +0.1%"}, "direction": -1}
    db.execute(
        "INSERT INTO attempts (tag, parent_commit, hypothesis, figures, decision, evidence, outcome, created) VALUES (?,?,?,?,?,?,?,?)",
        ("old", "a1", "baseline", json.dumps(figures), "baseline", json.dumps(evidence), "kept", "2026-11-01T00:00:00"),
    )
    db.commit()
    db.close()
    store = LedgerStore(path)
    exp = store.experiment("old")
    assert exp.run_outputs == [] and exp.owner is None and exp.protected == {"bench.py": "ff"}
    attempt = store.attempt(1)
    assert attempt.figures["shape=small"].median == 10.5 and attempt.evidence.seeds == [1, 2] and attempt.evidence.direction == -1
    assert attempt.evidence.model_extra["noise"]["level"] == 0.004  # an older key is kept as it was
    store.add_intent("old", "keep", 1, "c3")
    assert store.intents("old")[0].commit_sha == "c3"


async def test_marker_text_in_a_hypothesis_cannot_fool_crash_recovery(tmp_path):
    """The previous keep's message quotes the marker of the next attempt; a keep killed before it
    moved the branch must still be seen as not done (recovery compares commits, not text)."""
    ws = make_ws(tmp_path / "marker", DRIFTING_BENCH, "out/\n__pycache__/\n")
    async with Client(build_server(ws)) as client:
        start = await call(client, "experiment_start", tag="m")
        set_factor(start["worktree"], 0.9)
        await call(client, "experiment_evaluate", hypothesis="less work\n\nKernel-MCP-Attempt: 3")
        first = await call(client, "experiment_keep")
        set_factor(start["worktree"], 0.8)
        third = await call(client, "experiment_evaluate", hypothesis="even less work")
    assert third["attempt"]["id"] == 3 and "Kernel-MCP-Attempt: 3" in git.Repo(start["worktree"]).head.commit.message
    await _crash(ws, "keep-before-commit", "experiment_keep", {})
    async with Client(build_server(ws)) as client:
        status = await call(client, "experiment_status")
        log = await call(client, "experiment_log")
    assert status["best_commit"] == first["best_commit"]
    assert [a["outcome"] for a in log["attempts"]][:2] == ["pending", "kept"]
