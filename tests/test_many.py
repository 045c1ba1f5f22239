"""experiment_evaluate_many on real git repositories, with a real CPU benchmark command.

Eight candidates (two faster, one slower, a tie, a wrong one, a split, a crash and a hang) are
measured on two slots by the local engine and by the Ray engine (a local Ray cluster started here,
with two logical GPUs), and each batch's decisions must equal those of evaluating the same
candidates one by one with experiment_evaluate. The benchmark writes a timeline (slot, start, end)
so the tests can prove that a slot never ran two candidates at once and that two ran in parallel.
"""

from __future__ import annotations

import contextlib
import os
import signal
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import anyio
import git
import psutil
import pytest
from mcp import Client

from kernel_mcp.server import build_server

from conftest import PY, call, text_of, toml_list
from run_pids import NOTE, host_pid

pytestmark = pytest.mark.anyio

BENCH = textwrap.dedent(
    """
    import csv, os, random, signal, sys, time
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kernel
    rng = random.Random(int(os.environ["KERNEL_MCP_SEED"]))
    start = time.time()
    if kernel.FATE == "hang":
        time.sleep(600)
    if kernel.FATE == "crash":
        sys.exit("segmentation fault (simulated)")
    if kernel.FATE == "lose-worker":
        # the process that runs the benchmark dies, as on a lost node: killed from outside (the
        # sealed benchmark may not signal it, nor even name it from its PID namespace), by the test,
        # once the benchmark names itself here (tests/run_pids.py)
        with open(os.path.join(os.path.dirname(os.environ["KMCP_TIMELINE"]), "lose-worker.pid"), "w") as f:
            f.write(__NOTE__)
        time.sleep(60)
    # the "GPU" time, 2 ms per unit of the reported figure: overlapping runs show in the timeline, and
    # the server's witness (each run's wall time) sees what the CSV says, clear of the noise of two
    # slots at once on a small machine
    time.sleep(sum(kernel.TIME.values()) * 2e-3)
    os.makedirs("out", exist_ok=True)
    with open("out/bench.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["shape", "err_k", "us_k"])
        for shape in ("small", "large"):
            w.writerow([shape, kernel.ERR, kernel.TIME[shape] * (1 + rng.uniform(-0.001, 0.001))])
    with open(os.environ["KMCP_TIMELINE"], "a") as log:
        log.write(f"{os.environ.get('KERNEL_MCP_SLOT')} {kernel.NAME} {start} {time.time()}\\n")
    """
).replace("__NOTE__", NOTE)


def kernel_text(name: str, small: float = 100.0, large: float = 200.0, err: int = 0, fate: str = "run") -> str:
    return f'NAME = "{name}"\nTIME = {{"small": {small}, "large": {large}}}\nERR = {err}\nFATE = "{fate}"\n'


# name, kernel.py, decision expected whichever way it is evaluated
CANDIDATES = [
    ("faster10", kernel_text("faster10", 90.0, 180.0), "keep"),
    ("slower10", kernel_text("slower10", 110.0, 220.0), "discard"),
    ("same", kernel_text("same"), "discard"),
    ("wrong", kernel_text("wrong", 80.0, 160.0, err=1), "repair-needed"),
    ("split", kernel_text("split", 70.0, 210.0), "split-suggested"),
    ("faster20", kernel_text("faster20", 80.0, 160.0), "keep"),
    ("crash", kernel_text("crash", fate="crash"), "failed"),
    ("hang", kernel_text("hang", fate="hang"), "failed"),
]


def make_ws(root: Path, engine: str) -> Path:
    ws = root / "ws"
    ws.mkdir(parents=True)
    (ws / "bench.py").write_text(BENCH)
    (ws / "kernel.py").write_text(kernel_text("base"))
    (ws / "kernel-mcp.toml").write_text(
        f'[target]\narch = "gfx950"\nplatform = "offline"\n\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\n'
        'csv = "out/bench.csv"\nconfig_columns = ["shape"]\ncorrectness = { column = "err_k", rule = "== 0" }\n'
        'metric = "us_k"\ntarget_kernel = "k"\nnoise_threshold = 0.01\ntimeout_s = 4\nrepeats = 3\n'
        '[harness]\neditable = ["kernel.py"]\n'
        # the timeline every run appends to lies outside the workspace (next to it, or in the Ray cluster's folder)
        f"writable = {toml_list(str(root.parent), str(Path(os.environ.get('KMCP_TIMELINE', root)).parent))}\n" + engine
    )
    (ws / ".gitignore").write_text("out/\n__pycache__/\n")
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.git.commit("-m", "kernel and benchmark", "--author", "t <t@example.invalid>")
    return ws


def commit_candidate(repo_root: Path, base: str, name: str, text: str) -> str:
    """A candidate as a branch on top of BEST, made in a scratch worktree (as an agent would)."""
    repo = git.Repo(repo_root)
    scratch = repo_root.parent / f"scratch-{name}"
    repo.git.worktree("add", "--detach", str(scratch), base)
    (scratch / "ws" / "kernel.py").write_text(text)
    wt = git.Repo(scratch)
    wt.git.commit("-am", name, "--author", "t <t@example.invalid>")
    repo.git.branch(f"cand/{name}", wt.head.commit.hexsha)
    repo.git.worktree("remove", "--force", str(scratch))
    return f"cand/{name}"


def patch_for(text: str) -> str:
    old = kernel_text("base").splitlines(keepends=True)
    import difflib

    return "".join(difflib.unified_diff(old, text.splitlines(keepends=True), "a/ws/kernel.py", "b/ws/kernel.py"))


def read_timeline(path: Path) -> list[tuple[str, str, float, float]]:
    """The candidates' benchmark runs (the baseline's, measured before the batch, left out)."""
    rows = []
    for line in path.read_text().splitlines():
        slot, name, start, end = line.split()
        if name != "base":
            rows.append((slot, name, float(start), float(end)))
    return rows


def assert_slots_never_shared(timeline, slots: int) -> None:
    by_slot: dict[str, list] = {}
    for slot, name, start, end in timeline:
        by_slot.setdefault(slot, []).append((start, end, name))
    assert len(by_slot) <= slots, by_slot.keys()
    for slot, spans in by_slot.items():
        spans.sort()
        for (_s1, e1, n1), (s2, _e2, n2) in zip(spans, spans[1:]):
            assert s2 >= e1, f"slot {slot} ran {n1} and {n2} at once"
    events = sorted([(s, 1) for _, _, s, _ in timeline] + [(e, -1) for _, _, _, e in timeline])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert peak == slots, f"at most {peak} candidates ran at once, with {slots} slots"


async def one_by_one(ws: Path, tag: str) -> dict[str, str]:
    """The reference: each candidate evaluated alone in the experiment worktree, then reverted."""
    decisions = {}
    async with Client(build_server(ws)) as client:
        start = await call(client, "experiment_start", tag=tag)
        for name, text, _ in CANDIDATES:
            Path(start["worktree"], "kernel.py").write_text(text)
            ev = await call(client, "experiment_evaluate", hypothesis=f"candidate {name}")
            decisions[name] = ev["attempt"]["decision"]
            await call(client, "experiment_revert")
    return decisions


async def batch(ws: Path, tag: str) -> dict:
    async with Client(build_server(ws)) as client:
        start = await call(client, "experiment_start", tag=tag)
        repo_root = Path(start["worktree"]).parent
        best = git.Repo(repo_root).head.commit.hexsha
        candidates = []
        for i, (name, text, _) in enumerate(CANDIDATES):  # half as branches, half as diffs
            if i % 2 == 0:
                candidates.append({"commit": commit_candidate(ws.parent, best, f"{tag}-{name}", text), "hypothesis": f"candidate {name}"})
            else:
                candidates.append({"patch": patch_for(text), "hypothesis": f"candidate {name}"})
        answer = await call(client, "experiment_evaluate_many", candidates=candidates)
        log = await call(client, "experiment_log", limit=50)
    return {"answer": answer, "log": log, "best": best}


def check_batch(result: dict, reference: dict[str, str], timeline: Path, slots: int) -> None:
    rows = result["answer"]["rows"]
    got = {r["hypothesis"].removeprefix("candidate "): r["decision"] for r in rows}
    assert got == reference == {name: want for name, _, want in CANDIDATES}
    assert [r["hypothesis"] for r in rows[:2]] == ["candidate faster20", "candidate faster10"]  # ranked best first
    assert {r["rank"] for r in rows} == set(range(1, 9))
    hang = next(r for r in rows if r["hypothesis"] == "candidate hang")
    assert "timed out" in hang["reason"] or "timeout" in hang["reason"], hang
    crash = next(r for r in rows if r["hypothesis"] == "candidate crash")
    assert "segmentation fault (simulated)" in crash["reason"], crash
    recorded = [a for a in result["log"]["attempts"] if a["hypothesis"].startswith("candidate ")]
    assert len(recorded) == 8 and all(a["parent"] == result["best"] and a["commit"] for a in recorded)  # lineage
    runs = read_timeline(timeline)
    assert sorted({name for _, name, _, _ in runs}) == sorted(n for n, _, d in CANDIDATES if d != "failed")
    assert_slots_never_shared(runs, slots)


# The one-by-one decisions do not depend on the batch engine: measured once per test session (by
# whichever engine test runs first, on a workspace of its own) and compared with every engine's batch.
_REFERENCE: dict[str, str] = {}


async def engine_batch_matches_one_by_one(tmp_path: Path, timeline: Path, engine: str, tag: str) -> tuple[Path, dict]:
    """The same eight candidates, one by one and then as one batch on two slots: same decisions."""
    if not _REFERENCE:
        _REFERENCE.update(await one_by_one(make_ws(tmp_path / "sequential", ""), "seq"))
    reference = dict(_REFERENCE)
    ws = make_ws(tmp_path / "repo", engine)
    timeline.write_text("")
    result = await batch(ws, tag)
    check_batch(result, reference, timeline, slots=2)
    return ws, result


@pytest.mark.slow
async def test_local_engine_two_slots_matches_one_by_one(tmp_path, monkeypatch):
    timeline = tmp_path / "timeline.txt"
    monkeypatch.setenv("KMCP_TIMELINE", str(timeline))
    ws, result = await engine_batch_matches_one_by_one(tmp_path, timeline, '[engine]\nkind = "local"\nslots = 2\n', "many")
    assert all(r["where"].startswith(("slot 0", "slot 1")) for r in result["answer"]["rows"] if r["decision"] != "failed" or r["where"])

    # Keeping a winner is a separate, explicit step, and puts exactly that candidate into BEST.
    rows = result["answer"]["rows"]
    winner = rows[0]
    loser = next(r for r in rows if r["decision"] == "discard")
    async with Client(build_server(ws)) as client:
        refused = await client.call_tool("experiment_keep", {"attempt": loser["attempt"]})
        assert refused.is_error and "not keep" in text_of(refused)
        status = await call(client, "experiment_status")
        Path(status["worktree"], "kernel.py").write_text(kernel_text("unevaluated", 50.0, 50.0))
        refused = await client.call_tool("experiment_keep", {"attempt": winner["attempt"]})
        assert refused.is_error and "not evaluated" in text_of(refused)  # the agent's own edit is never overwritten
        await call(client, "experiment_revert")
        kept = await call(client, "experiment_keep", attempt=winner["attempt"], why="less work")
        assert kept["best_commit"] != result["best"]
        assert Path(status["worktree"], "kernel.py").read_text() == CANDIDATES[5][1]
        log = await call(client, "experiment_log", limit=50)
        outcomes = {a["hypothesis"]: a["outcome"] for a in log["attempts"] if a["id"] in {r["attempt"] for r in rows}}
        assert outcomes["candidate faster20"] == "kept" and outcomes["candidate faster10"] == "not kept"
        again = await client.call_tool("experiment_keep", {"attempt": winner["attempt"]})
        assert again.is_error and "already kept" in text_of(again)
    assert "| keep |" in Path(status["worktree"], "performance.md").read_text()


async def test_bad_candidates_are_refused_without_reaching_git(tmp_path, monkeypatch):
    monkeypatch.setenv("KMCP_TIMELINE", str(tmp_path / "timeline.txt"))
    ws = make_ws(tmp_path / "repo", "[engine]\nslots = 2\n")
    outside = tmp_path / "outside.txt"
    traversal = "--- a/../outside.txt\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+escaped\n"
    bench_edit = "--- a/ws/bench.py\n+++ b/ws/bench.py\n@@ -1,1 +1,2 @@\n+# faster\n \n"
    async with Client(build_server(ws)) as client:
        await call(client, "experiment_start", tag="bad")
        both = await client.call_tool("experiment_evaluate_many", {"candidates": [{"commit": "HEAD", "patch": "x", "hypothesis": "both given"}]})
        assert both.is_error and "exactly one of commit or patch" in text_of(both)
        answer = await call(
            client,
            "experiment_evaluate_many",
            candidates=[
                {"commit": "--output=/tmp/pwned", "hypothesis": "flag injection"},
                {"commit": "no-such-branch", "hypothesis": "missing commit"},
                {"patch": traversal, "hypothesis": "path traversal"},
                {"patch": bench_edit, "hypothesis": "edit the benchmark"},
            ],
        )
    by = {r["hypothesis"]: r for r in answer["rows"]}
    assert by["flag injection"]["decision"] == "failed" and "not a commit sha" in by["flag injection"]["reason"]
    assert by["missing commit"]["decision"] == "failed" and "no commit" in by["missing commit"]["reason"]
    assert by["path traversal"]["decision"] == "failed" and "does not apply" in by["path traversal"]["reason"]
    assert by["edit the benchmark"]["decision"] == "refused" and "frozen" in by["edit the benchmark"]["reason"]
    assert not outside.exists() and not Path("/tmp/pwned").exists()
    assert not list((ws / ".kernel-mcp" / "worktrees").glob("bad.*"))  # candidate worktrees are cleaned up


# ---- Ray ----------------------------------------------------------------------------------------
ray = pytest.importorskip("ray", reason="the ray extra is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


RAY_ENGINE: dict[str, str] = {}  # the engine section joining this module's cluster (set by ray_cluster)
CLUSTER_MARK = "KMCP_TEST_RAY_CLUSTER"


def _environ(proc: psutil.Process) -> dict[str, str]:
    try:
        return proc.environ()
    except psutil.Error:
        return {}


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A real local Ray cluster (head node, 2 CPUs, 2 logical GPUs), started and stopped here. It
    has a folder and an address of its own and is stopped by killing its own processes: `ray stop
    --force` would stop every Ray cluster of the machine (another test run's too) and
    `address = "auto"` would join whichever started last."""
    timeline = tmp_path_factory.mktemp("ray") / "timeline.txt"
    timeline.write_text("")
    cli = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    folder = tempfile.mkdtemp(prefix="kmcp-ray-")  # short: Ray's Unix sockets live under it
    # Every process of this cluster inherits the marker (the raylet's workers from the raylet). A command
    # line naming the folder is no mark: a sealed run of another test lists the machine's sockets (Ray's
    # among them) in its own command line, and was killed here mid-benchmark ("killed by signal 9").
    env = {**os.environ, "KMCP_TIMELINE": str(timeline), "RAY_USAGE_STATS_ENABLED": "0", CLUSTER_MARK: folder}
    port = _free_port()
    subprocess.run(
        [
            cli,
            "start",
            "--head",
            "--port",
            str(port),
            "--temp-dir",
            folder,
            "--num-cpus",
            "2",
            "--num-gpus",
            "2",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        check=True,
        env=env,
        capture_output=True,
        timeout=180,
    )
    RAY_ENGINE["text"] = f'[engine]\nkind = "ray"\naddress = "127.0.0.1:{port}"\n'
    try:
        yield timeline
    finally:
        if ray.is_initialized():
            ray.shutdown()
        ours = [p for p in psutil.process_iter() if _environ(p).get(CLUSTER_MARK) == folder]
        for proc in ours:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(ours, timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
async def test_ray_engine_two_gpus_matches_one_by_one(tmp_path, monkeypatch, ray_cluster):
    monkeypatch.setenv("KMCP_TIMELINE", str(ray_cluster))
    ws, result = await engine_batch_matches_one_by_one(tmp_path, ray_cluster, RAY_ENGINE["text"], "ray")
    assert all("Ray node" in r["where"] for r in result["answer"]["rows"] if r["decision"] not in ("failed",))
    runs = list((ws / ".kernel-mcp" / "runs").glob("*candidate*"))
    assert any((run / "candidate-1-1.csv").exists() for run in runs)  # the raw files came back to this node


@pytest.mark.slow
async def test_ray_worker_lost_mid_candidate_is_contained(tmp_path, monkeypatch, ray_cluster):
    monkeypatch.setenv("KMCP_TIMELINE", str(ray_cluster))
    ws = make_ws(tmp_path / "repo", RAY_ENGINE["text"])
    async with Client(build_server(ws)) as client:
        await call(client, "experiment_start", tag="lost")
        pid_file = ray_cluster.parent / "lose-worker.pid"
        pid_file.unlink(missing_ok=True)

        async def kill_the_worker() -> None:
            with anyio.fail_after(120):
                while not pid_file.exists() or not pid_file.read_text():
                    await anyio.sleep(0.1)
            # the benchmark's nearest ancestor that is no part of its seal (seal.py and its init)
            bench = psutil.Process(host_pid(pid_file.read_text()))
            worker = next(p for p in bench.parents() if not any(str(a).endswith("seal.py") for a in p.cmdline()))
            os.kill(worker.pid, signal.SIGKILL)

        async with anyio.create_task_group() as group:
            group.start_soon(kill_the_worker)
            answer = await call(
                client,
                "experiment_evaluate_many",
                candidates=[
                    {"patch": patch_for(kernel_text("lost", fate="lose-worker")), "hypothesis": "candidate lost"},
                    {"patch": patch_for(kernel_text("fine", 90.0, 180.0)), "hypothesis": "candidate fine"},
                ],
            )
    by = {r["hypothesis"]: r for r in answer["rows"]}
    assert by["candidate fine"]["decision"] == "keep"
    assert by["candidate lost"]["decision"] == "failed" and "died" in by["candidate lost"]["reason"], by["candidate lost"]


# A candidate whose kernel, once imported by the benchmark, rewrites the benchmark in its own tree
# (its run may write there) so that every later run reports half the time it took.
REWRITES_ITS_HARNESS = kernel_text("rewriter") + (
    "import pathlib\n"
    "_bench = pathlib.Path(__file__).with_name('bench.py')\n"
    "_text = _bench.read_text()\n"
    "if '/ 2  # rewritten' not in _text:\n"
    "    _bench.write_text(_text.replace('kernel.TIME[shape] * (1', 'kernel.TIME[shape] / 2  # rewritten\\n    * (1'))\n"
)


@pytest.mark.parametrize("engine", ["local", "ray"])
async def test_a_candidate_that_rewrites_its_own_harness_is_refused_on_either_engine(tmp_path, monkeypatch, engine, request):
    timeline = request.getfixturevalue("ray_cluster") if engine == "ray" else tmp_path / "timeline.txt"
    monkeypatch.setenv("KMCP_TIMELINE", str(timeline))
    kind = RAY_ENGINE["text"] if engine == "ray" else '[engine]\nkind = "local"\nslots = 1\n'
    ws = make_ws(tmp_path / "repo", kind)
    async with Client(build_server(ws)) as client:
        await call(client, "experiment_start", tag=f"rewrite-{engine}")
        answer = await call(
            client,
            "experiment_evaluate_many",
            candidates=[
                {"patch": patch_for(REWRITES_ITS_HARNESS), "hypothesis": "a kernel that edits the benchmark"},
            ],
        )
    row = answer["rows"][0]
    assert row["decision"] == "refused", row
    assert "protected files differ" in row["reason"] and "bench.py" in row["reason"], row["reason"]


async def test_a_revert_after_a_batch_leaves_its_candidates_keepable(tmp_path, monkeypatch):
    """Resetting the worktree touches no batch candidate (each was measured in a worktree of its own):
    the one recorded last, here the only one, stays pending and can still be kept."""
    monkeypatch.setenv("KMCP_TIMELINE", str(tmp_path / "timeline.txt"))
    ws = make_ws(tmp_path / "repo", '[engine]\nkind = "local"\nslots = 1\n')
    async with Client(build_server(ws)) as client:
        await call(client, "experiment_start", tag="one")
        name, text, _ = CANDIDATES[5]  # faster20
        answer = await call(client, "experiment_evaluate_many", candidates=[{"patch": patch_for(text), "hypothesis": f"candidate {name}"}])
        (row,) = answer["rows"]
        assert row["decision"] == "keep", row
        reverted = await call(client, "experiment_revert")
        assert reverted["attempt"]["outcome"] == "pending", reverted["attempt"]
        kept = await call(client, "experiment_keep", attempt=row["attempt"], why="less work")
        assert kept["best"]["id"] == row["attempt"], kept["best"]


def _sigkill_pending(pid: int) -> bool:
    """Whether a SIGKILL waits for `pid` (its thread's or its process's pending signals)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        masks = [int(line.split()[1], 16) for line in status if line.startswith(("SigPnd:", "ShdPnd:"))]
    return any(mask & (1 << (signal.SIGKILL - 1)) for mask in masks)


@pytest.mark.slow
def test_a_private_ray_instance_outlives_the_thread_that_asked_for_it(tmp_path, monkeypatch):
    """`address = "local"`: ray.init starts the instance's processes with PR_SET_PDEATHSIG, tied by
    the kernel to the calling thread, and the engine used to call it from anyio's worker threads, which
    end when idle: the instance was killed under the experiment. Here the asking thread ends for sure
    (its kernel thread is gone, so any signal its end sends is sent) and the instance lives."""
    from kernel_mcp.ledger.engines import on_ray

    monkeypatch.setenv("HOME", str(tmp_path))  # a private instance writes ~/.ray/auth_token, which other clusters' drivers would then send
    if ray.is_initialized():
        ray.shutdown()  # this module's cluster, joined by an earlier test: a private instance is wanted here
    before = {p.pid for p in psutil.Process().children()}
    caller = threading.Thread(target=on_ray.connect, args=("local",))
    caller.start()
    caller.join()
    try:
        for _ in range(100_000):  # the thread's Python side is done; wait for its kernel side to end
            if not os.path.exists(f"/proc/self/task/{caller.native_id}"):
                break
            os.sched_yield()
        assert not os.path.exists(f"/proc/self/task/{caller.native_id}")
        started = [p for p in psutil.Process().children() if p.pid not in before]
        assert any(p.name() == "gcs_server" for p in started), [p.name() for p in started]
        for proc in started:
            assert proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE and not _sigkill_pending(proc.pid), (proc.name(), proc.pid)

        def worker_pid() -> int:  # nested: it travels by value, the worker need not import this module
            return os.getpid()

        assert ray.get(ray.remote(worker_pid).remote(), timeout=120) != os.getpid()  # and the instance answers
    finally:
        ray.shutdown()
