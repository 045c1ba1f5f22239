"""The boundary around workspace code, with the kernel's real Landlock: what a run may write, what it
may not, what it cannot signal, and that an escaped process of a sealed run does not outlive it.
Then the ledger's side: attacks staged as a hostile candidate would, through the real MCP client,
real git and real processes."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import anyio
import psutil
import pytest
from mcp import Client

from kernel_mcp import runner, sandbox
from kernel_mcp.server import build_server

from conftest import PY, call, commit_all, refused_write, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sandbox.available() is not None, reason=f"no Landlock here: {sandbox.available()}")]

PROBE = textwrap.dedent(
    """
    import json, os, signal, sys, tempfile
    def write(path):
        try:
            with open(path, "w") as f:
                f.write("x")
            return "written"
        except OSError as exc:
            return exc.strerror
    result = {name: write(path) for name, path in json.loads(sys.argv[1]).items()}
    try:
        os.kill(int(sys.argv[2]), 0)
        result["signal"] = "delivered"
    except OSError as exc:
        result["signal"] = exc.strerror
    result["tmp"] = tempfile.gettempdir()
    print(json.dumps(result))
    """
)


async def test_a_sealed_run_writes_its_own_tree_and_private_folder_only(tmp_path):
    import json

    tree, other, state = tmp_path / "tree", tmp_path / "other", tmp_path / "state"
    for folder in (tree, other, state):
        folder.mkdir()
    (tmp_path / ".git").mkdir()
    targets = {
        "own": str(tree / "out.csv"),
        "other": str(other / "bench.py"),
        "state": str(state / "ledger.sqlite"),
        "git": str(tmp_path / ".git" / "HEAD"),
        "devnull": "/dev/null",
    }
    with sandbox.side(tree, state, "run-1") as boundary:
        result = await runner.run([PY, "-c", PROBE, json.dumps(targets), str(os.getpid())], cwd=tree, timeout_s=30, boundary=boundary)
        private = state / sandbox.PRIVATE_DIR / "run-1"
        assert private.is_dir()
        own_tmp = (private / "tmp").resolve()  # the folder itself, or the short one its link names (sandbox.SOCKET_ROOM)
    assert result.ok and result.sealed and result.sealed.startswith("Landlock"), result.stderr.tail
    seen = json.loads(result.stdout.tail)
    assert seen["own"] == "written" and seen["devnull"] == "written"
    assert seen["other"] == seen["state"] == seen["git"] == refused_write()
    assert Path(seen["tmp"]).resolve() == own_tmp  # temporary files go to the side's own folder
    assert not own_tmp.exists()  # and go with it
    if sandbox.isolation()[0] is not None:
        assert seen["signal"] == "No such process"  # the server is outside its PID namespace: not even a name
    elif sandbox.landlock_abi() >= 6:
        assert seen["signal"] == "Operation not permitted"  # the server is outside its domain
    assert not private.exists()  # removed with the side
    assert not (other / "bench.py").exists() and not (tmp_path / ".git" / "HEAD").exists()


DEVICES = textwrap.dedent(
    """
    import json, os, sys
    seen = {}
    for path in sys.argv[1:]:
        try:
            os.close(os.open(path, os.O_WRONLY))  # opened, never written
            seen[path] = "opened"
        except OSError as exc:
            seen[path] = exc.strerror
    print(json.dumps(seen))
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may open the machine's disks for writing at all")
async def test_a_root_run_cannot_open_a_disk_or_the_kernel_log_for_writing(tmp_path):
    """The attack: a root run opened the machine's disk (or a loop device) for writing through a
    writable /dev, and could so change any file beneath every boundary; or wrote the kernel's log.
    /dev/null and /dev/shm stay writable."""
    import json

    disks = sorted(str(entry) for entry in Path("/dev").iterdir() if entry.is_block_device())
    if not disks:
        pytest.skip("no block device in /dev here")
    targets = [disks[0], "/dev/kmsg", "/dev/null"]
    with sandbox.side(tmp_path, tmp_path / "state", "dev") as boundary:
        result = await runner.run([PY, "-c", DEVICES, *targets], cwd=tmp_path, timeout_s=30, boundary=boundary)
        shm = await runner.run(
            [PY, "-c", "import os; os.close(os.open('/dev/shm/kmcp-probe', os.O_CREAT | os.O_WRONLY)); os.unlink('/dev/shm/kmcp-probe')"],
            cwd=tmp_path,
            timeout_s=30,
            boundary=boundary,
        )
    assert result.ok and result.sealed, result.stderr.tail
    seen = json.loads(result.stdout.tail)
    assert seen == {disks[0]: "Permission denied", "/dev/kmsg": "Permission denied", "/dev/null": "opened"}
    assert shm.ok, shm.stderr.tail


CAPABILITIES = textwrap.dedent(
    """
    import ctypes, json, os
    libc = ctypes.CDLL(None, use_errno=True)

    class Timex(ctypes.Structure):
        _fields_ = [("modes", ctypes.c_uint), ("rest", ctypes.c_long * 64)]

    seen = {}
    now = Timex()
    libc.adjtimex(ctypes.byref(now))
    now.modes = 0x4000  # ADJ_TICK, to the value it has: no change, but only CAP_SYS_TIME may ask
    seen["clock"] = "set" if libc.adjtimex(ctypes.byref(now)) >= 0 else os.strerror(ctypes.get_errno())
    seen["priority"] = "raised" if libc.setpriority(0, 0, -1) == 0 else os.strerror(ctypes.get_errno())
    print(json.dumps(seen))
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root holds the capabilities at all")
@pytest.mark.parametrize("namespaces", ["on", "off"])
async def test_a_root_run_cannot_slew_the_clock_or_raise_its_priority(tmp_path, monkeypatch, namespaces):
    """The attack: a root run slewed the clock the server's own timings are read by (adjtimex: a
    slower clock makes the run look faster to the server's witness and the benchmark's timer
    alike), or raised its priority over the other side's runs."""
    import json

    monkeypatch.setenv(sandbox.NAMESPACES_ENV, namespaces)
    with sandbox.side(tmp_path, tmp_path / "state", "caps") as boundary:
        result = await runner.run([PY, "-c", CAPABILITIES], cwd=tmp_path, timeout_s=30, boundary=boundary)
    assert result.ok and result.sealed, result.stderr.tail
    assert json.loads(result.stdout.tail) == {"clock": "Operation not permitted", "priority": "Permission denied"}


LEAVE_SHARED_MEMORY = textwrap.dedent(
    """
    import ctypes, json, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    key, name = int(sys.argv[2]), sys.argv[3]
    if sys.argv[1] == "leave":
        with open(name, "w") as f:
            f.write("left for the other side")
        print(json.dumps({"segment": libc.shmget(key, 4096, 0o1600)}))  # IPC_CREAT | 0600
    else:
        print(json.dumps({"file": os.path.exists(name), "segment": libc.shmget(key, 0, 0)}))
    """
)


async def test_shared_memory_a_run_leaves_is_its_own(tmp_path):
    """The attack: a candidate's run left a file in /dev/shm and a System V segment that the next run
    (BEST's, of the same machine) met, and that outlived the evaluation. With namespaces of its own,
    a run's shared memory is its own and goes with it."""
    import ctypes
    import json

    if sandbox.isolation()[0] is None or not sandbox.isolation()[0].proc:
        pytest.skip("runs get no namespaces (or no /proc) of their own here")
    key, name = 0x4B4D4350 + os.getpid() % 4096, f"/dev/shm/kmcp-left-{os.getpid()}"
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        with sandbox.side(tmp_path, tmp_path / "state", "shm") as boundary:
            left = await runner.run([PY, "-c", LEAVE_SHARED_MEMORY, "leave", str(key), name], cwd=tmp_path, timeout_s=30, boundary=boundary)
            found = await runner.run([PY, "-c", LEAVE_SHARED_MEMORY, "look", str(key), name], cwd=tmp_path, timeout_s=30, boundary=boundary)
        assert left.ok and json.loads(left.stdout.tail)["segment"] >= 0, left.stderr.tail
        assert found.ok and json.loads(found.stdout.tail) == {"file": False, "segment": -1}, found.stdout.tail
        assert not os.path.exists(name) and libc.shmget(key, 0, 0) == -1  # nothing outlived the runs
    finally:
        if os.path.exists(name):
            os.unlink(name)
        if (segment := libc.shmget(key, 0, 0)) >= 0:
            libc.shmctl(segment, 0, None)  # IPC_RMID


async def test_an_escaped_process_of_a_sealed_run_is_ended_with_it(tmp_path):
    # A double-forked daemon that clears its environment is out of the token's reach; the server,
    # a child subreaper, adopts it, and its no_new_privs marks it as a sealed run's.
    script = tmp_path / "escape.py"
    script.write_text(
        textwrap.dedent(
            """
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", "escaped-sleeper"], {})
            os._exit(0)
        os.wait()
        print("parent done", flush=True)
        """
        )
    )
    with sandbox.side(tmp_path, tmp_path / "state", "esc") as boundary:
        result = await runner.run([PY, str(script)], cwd=tmp_path, timeout_s=30, boundary=boundary)
    assert result.ok and "parent done" in result.stdout.tail

    def sleepers() -> list[psutil.Process]:
        found = []
        for proc in psutil.process_iter(["cmdline"]):
            if (proc.info["cmdline"] or [])[-1:] == ["escaped-sleeper"] and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        return found

    with anyio.move_on_after(10):
        while sleepers():
            await anyio.sleep(0.1)
    left = sleepers()
    for proc in left:
        proc.kill()
    assert not left, "the escaped sleeper outlived its sealed run"


async def test_a_run_that_cannot_enter_its_domain_does_not_run(tmp_path):
    # Landlock refuses a ruleset on a folder that is gone: the run is refused, never run unsealed.
    gone = tmp_path / "gone"
    boundary = sandbox.Boundary(writable=(gone,), env={})
    from kernel_mcp.errors import CommandFailed

    with pytest.raises(CommandFailed, match="could not seal"):
        await runner.run([PY, "-c", "print('ran')"], cwd=tmp_path, timeout_s=30, boundary=boundary)


def test_the_server_token_never_reaches_a_command(monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_HTTP_TOKEN", "s" * 32)
    result = runner.run_sync([PY, "-c", "import os; print(os.environ.get('KERNEL_MCP_HTTP_TOKEN', 'absent'))"], cwd="/", timeout_s=30)
    assert result.stdout.tail.strip() == "absent"


async def test_doctor_names_the_boundary(workspace):
    async with Client(build_server(workspace)) as client:
        doctor = await call(client, "doctor")
    assert doctor["boundary"].startswith("Landlock ABI")
    assert sys.platform.startswith("linux")


# ---- the ledger under attack (a CPU workspace: tests/test_ledger.py's) ----------------------------
from test_ledger import KERNEL, cpu_ws, set_kernel  # noqa: E402,F401  (cpu_ws is a fixture)


@pytest.fixture(params=["plain", "forked"])
def attacked_ws(cpu_ws, request):
    """The CPU workspace with its runs started plainly, and forked from a fork server per side
    (`[benchmark] preload`): every attack must fail both ways."""
    if request.param == "forked":
        if sandbox.isolation()[0] is None:
            pytest.skip("runs get no PID namespace here: no fork server")
        toml = cpu_ws / "kernel-mcp.toml"
        toml.write_text(toml.read_text().replace("repeats = 3\n", 'repeats = 3\npreload = ["csv"]\n'))
        commit_all(cpu_ws.parent, "runs forked from a fork server")
    return cpu_ws


def _forked_as_asked(ws: Path, ev: dict) -> None:
    asked = "preload" in (ws / "kernel-mcp.toml").read_text()
    assert ("fork server" in ev["attempt"]["measured"]) == asked, ev["attempt"]["measured"]


def _hostile_kernel(worktree: str, body: str, small: float = 100.0, large: float = 200.0) -> None:
    """An editable kernel module whose import runs `body` inside the benchmark's process."""
    Path(worktree, "kernel.py").write_text(f'TIME = {{"small": {small}, "large": {large}}}\nERR = 0\nimport os, pathlib\n' + textwrap.dedent(body))


async def test_a_candidate_cannot_rewrite_best_during_the_pairs(attacked_ws):
    async with Client(build_server(attacked_ws)) as client:
        wt = (await call(client, "experiment_start", tag="rw"))["worktree"]
        best_kernel = attacked_ws / ".kernel-mcp" / "best" / "rw" / "main" / "ws" / "kernel.py"
        before, users = best_kernel.read_text(), (attacked_ws / "kernel.py").read_text()
        # BEST made 10x slower from inside the candidate's run (it would look 90% faster), and the
        # user's own checkout and the ledger's database written too
        _hostile_kernel(
            wt,
            f"""
            for target in ({str(best_kernel)!r}, {str(attacked_ws / "kernel.py")!r}, {str(attacked_ws / ".kernel-mcp" / "ledger.sqlite")!r}):
                try:
                    pathlib.Path(target).write_text('TIME = {{"small": 1000.0, "large": 2000.0}}\\nERR = 0\\n')
                except OSError as exc:
                    print("refused:", exc.strerror)
            """,
        )
        ev = await call(client, "experiment_evaluate", hypothesis="rewrite BEST")
        log = await call(client, "experiment_log")  # the ledger's database still reads
    assert best_kernel.read_text() == before and (attacked_ws / "kernel.py").read_text() == users and log["attempts"]
    _forked_as_asked(attacked_ws, ev)
    assert ev["attempt"]["decision"] not in ("keep", "suspicious"), ev["attempt"]


async def test_a_redirected_git_pointer_is_refused_and_repaired_by_revert(attacked_ws):
    import git

    user = git.Repo(attacked_ws.parent)
    branch_before, reflog_before = user.head.commit.hexsha, len(user.git.reflog().splitlines())
    async with Client(build_server(attacked_ws)) as client:
        wt = (await call(client, "experiment_start", tag="ptr"))["worktree"]
        pointer = Path(wt).parent / ".git"  # the workspace is a subfolder: the pointer sits at the worktree's top
        _hostile_kernel(
            wt,
            f"""
            pathlib.Path({str(pointer)!r}).write_text("gitdir: {attacked_ws.parent / ".git"}\\n")
            """,
            90.0,
            180.0,
        )
        ev = await client.call_tool("experiment_evaluate", {"hypothesis": "redirect .git"})
        attempt = (ev.structured_content or {}).get("attempt") or {}
        assert ev.is_error or attempt.get("decision") not in ("keep", "suspicious"), text_of(ev)
        # the pointer itself, rewritten from outside any run (as an agent could): every git step refuses
        pointer.write_text(f"gitdir: {attacked_ws.parent / '.git'}\n")
        refused = await client.call_tool("experiment_evaluate", {"hypothesis": "through the redirected pointer"})
        assert refused.is_error and ".git pointer" in text_of(refused), text_of(refused)
        repaired = await call(client, "experiment_revert")
        assert repaired["status"] == "running"
        set_kernel(wt, 100.0, 200.0)  # BEST's figures, in other code (BEST's own code would be a duplicate, never run)
        again = await call(client, "experiment_evaluate", hypothesis="after the repair")
        assert again["attempt"]["decision"] == "discard"
    assert user.head.commit.hexsha == branch_before and len(user.git.reflog().splitlines()) == reflog_before


async def test_the_checkout_config_cannot_change_a_running_experiment(attacked_ws):
    async with Client(build_server(attacked_ws)) as client:
        wt = (await call(client, "experiment_start", tag="cfg"))["worktree"]
        toml = attacked_ws / "kernel-mcp.toml"
        toml.write_text(toml.read_text().replace('rule = "== 0"', 'rule = "<= 1000"'))
        set_kernel(wt, 50.0, 100.0, err=7)  # wrong, and 2x "faster"
        ev = await call(client, "experiment_evaluate", hypothesis="wrong but fast")
    assert ev["attempt"]["decision"] == "repair-needed", ev["attempt"]
    assert any("differs from the one this experiment started with" in n for n in ev["notes"]), ev["notes"]


async def test_tags_are_exact_names(cpu_ws):
    async with Client(build_server(cpu_ws)) as client:
        t_bx = (await call(client, "experiment_start", tag="t.bx"))["worktree"]
        Path(t_bx, "scratch.txt").write_text("uncommitted work of t.bx")
        await call(client, "experiment_start", tag="t")
        await call(client, "experiment_status", tag="t")
        best_like = await call(client, "experiment_start", tag="t--best")
        await call(client, "experiment_status", tag="t--best")
    assert Path(t_bx, "scratch.txt").read_text() == "uncommitted work of t.bx"
    assert Path(best_like["worktree"]).is_dir() and (cpu_ws / ".kernel-mcp" / "best" / "t" / "main").is_dir()


async def test_a_timer_the_candidate_reaches_is_not_corroborated(attacked_ws):
    async with Client(build_server(attacked_ws)) as client:
        wt = (await call(client, "experiment_start", tag="clock"))["worktree"]
        # reports a tenth of the time, and spends the rest at import: the wall time does not move
        _hostile_kernel(wt, "import time\ntime.sleep(0.27)\n", 10.0, 20.0)
        ev = await call(client, "experiment_evaluate", hypothesis="a faster clock")
    assert ev["attempt"]["decision"] == "not-corroborated", (ev["attempt"]["reasons"], ev["attempt"]["measured"])
    assert any("not corroborated" in r for r in ev["attempt"]["reasons"])
    _forked_as_asked(attacked_ws, ev)


def test_servers_git_runs_no_hook_no_fsmonitor_and_no_filter(tmp_path):
    import subprocess

    from kernel_mcp.ledger import gitops

    repo_dir = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(repo_dir)], check=True)
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\nsleep 25\n")
    script.chmod(0o755)
    subprocess.run(["git", "-C", str(repo_dir), "config", "core.fsmonitor", str(script)], check=True)
    subprocess.run(["git", "-C", str(repo_dir), "config", "filter.evil.clean", str(script)], check=True)
    (repo_dir / ".gitattributes").write_text("*.txt filter=evil\n")
    hooks = repo_dir / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in ("post-checkout", "pre-commit", "post-commit", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\necho {hook} >> {marker}\nsleep 25\n")
        (hooks / hook).chmod(0o755)
    (repo_dir / "a.txt").write_text("a\n")
    repo = gitops.Repo(repo_dir)
    repo.git.add("-A")
    repo.git.commit("-m", "one", "--author", "t <t@example.invalid>")
    gitops.dirty_paths(repo)
    gitops.add_detached_worktree(repo, tmp_path / "wt", gitops.head_sha(repo))
    assert not marker.exists(), marker.read_text()


def test_one_judge_at_a_time(tmp_path):
    from kernel_mcp.errors import WorkspaceError
    from kernel_mcp.ledger import recover

    with recover.judging(tmp_path, "experiment_evaluate of experiment a"):
        with pytest.raises(WorkspaceError, match="another kernel-mcp judge is measuring in this workspace: process"):
            with recover.judging(tmp_path, "experiment_evaluate of experiment b"):
                pass
    with recover.judging(tmp_path, "free again"):
        pass
