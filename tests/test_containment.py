"""Containment: a command's daemons die with the command, the runner never waits forever on pipes,
and the server's commands die with the server, through the real MCP client."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import anyio
import psutil
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from kernel_mcp import runner
from kernel_mcp.server import build_server

from conftest import PY, text_of, write_toml
from run_pids import NOTE, host_pid

pytestmark = pytest.mark.anyio

GUARD_S = 60  # generous: a regression hangs for minutes, a pass takes seconds

# Double-forks a setsid daemon that keeps stdout open and sleeps for minutes; the parent then
# sleeps too ("hang") or exits at once ("exit"). Pids go to files: parent, daemon.
DAEMON = r"""
import os, sys, time
folder, mode = sys.argv[1], sys.argv[2]
def note(name):  # the pid namespace too: a sealed run has its own (tests/run_pids.py)
    with open(os.path.join(folder, name + ".tmp"), "w") as f:
        f.write(__NOTE__)
    os.rename(os.path.join(folder, name + ".tmp"), os.path.join(folder, name))
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        if mode == "hidden":  # clears its environment: out of the token's reach, still holding stdout
            os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)"], {})
        note("daemon")
        time.sleep(300)
    os._exit(0)
os.wait()
note("parent")
print("parent ready", flush=True)
if mode == "hang":
    time.sleep(300)
""".replace("__NOTE__", NOTE)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def _gone(pid: int | None) -> bool:
    """Whether `pid` ends within the guard (the kill is asynchronous to the answer only by moments)."""
    if pid is None:
        return True  # no process of that namespace and pid lives
    with anyio.move_on_after(GUARD_S):
        while _alive(pid):
            await anyio.sleep(0.1)
    return not _alive(pid)


def _noted(path: Path) -> int | None:
    """The host's pid of the process a pid file names (None: it is gone)."""
    return host_pid(path.read_text())


async def _pid(path: Path) -> int:
    with anyio.fail_after(GUARD_S):
        while not path.exists():
            await anyio.sleep(0.05)
    pid = _noted(path)
    assert pid is not None, f"{path.name} ended before the test could look at it"
    return pid


def _with_daemon(workspace: Path, mode: str) -> Path:
    folder = workspace.parent / f"pids-{mode}"
    folder.mkdir()
    script = workspace.parent / "daemon.py"
    script.write_text(DAEMON)
    extra = f"daemon = {json.dumps([PY, str(script), str(folder), mode])}\n"
    extra += f"\n[harness]\nwritable = {json.dumps([str(folder)])}\n"  # the pid files are written outside the workspace
    write_toml(workspace, (workspace / "kernel-mcp.toml").read_text() + extra)
    return folder


async def test_daemon_dies_at_the_timeout_and_the_call_answers(workspace):
    folder = _with_daemon(workspace, "hang")
    async with Client(build_server(workspace)) as client:
        with anyio.fail_after(GUARD_S):
            result = await client.call_tool("run_command", {"name": "daemon", "timeout_s": 2})
        assert not result.is_error, text_of(result)
        assert result.structured_content["timed_out"] and "timed out" in text_of(result)
        assert "parent ready" in result.structured_content["stdout_tail"]
        daemon = _noted(folder / "daemon")
        assert await _gone(daemon), "the setsid daemon survived the timeout"
        assert await _gone(_noted(folder / "parent"))


async def test_daemon_dies_when_the_call_is_cancelled(workspace):
    folder = _with_daemon(workspace, "hang")
    async with Client(build_server(workspace)) as client:
        with anyio.fail_after(GUARD_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "run_command", {"name": "daemon"})
                daemon = await _pid(folder / "daemon")
                await _pid(folder / "parent")
                tg.cancel_scope.cancel()
        assert await _gone(daemon), "the setsid daemon survived the cancel"
        assert await _gone(_noted(folder / "parent"))
        assert not (await client.call_tool("workspace_info", {})).is_error


async def test_daemon_left_behind_at_exit_is_killed_and_the_call_answers(workspace):
    folder = _with_daemon(workspace, "exit")
    async with Client(build_server(workspace)) as client:
        with anyio.fail_after(GUARD_S):
            result = await client.call_tool("run_command", {"name": "daemon"})
        data = result.structured_content
        assert not result.is_error and data["exit_code"] == 0 and not data["timed_out"], text_of(result)
        assert "parent ready" in data["stdout_tail"]
        assert await _gone(_noted(folder / "daemon"))


async def test_pipes_held_out_of_reach_are_dropped_not_waited_on(tmp_path):
    """A daemon that cleared its environment cannot be found; the runner must answer anyway."""
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON)
    started = time.monotonic()
    hidden = set()
    try:
        with anyio.fail_after(GUARD_S):
            result = await runner.run([PY, str(script), str(tmp_path), "hidden"], cwd=tmp_path, timeout_s=60)
        assert result.returncode == 0 and result.pipes_abandoned and "closed unread" in result.status()
        assert "parent ready" in result.stdout.tail
        assert time.monotonic() - started < GUARD_S
    finally:
        # The hidden sleeper is this test's own leftover: find it by its command line and its folder
        # (the command line alone would match another test's sleeper) and end it.
        for proc in psutil.process_iter(["cmdline"]):
            if proc.info["cmdline"] == [sys.executable, "-c", "import time; time.sleep(300)"]:
                try:
                    if not proc.environ() and proc.cwd() == str(tmp_path):
                        hidden.add(proc.pid)
                        proc.kill()
                except psutil.Error:
                    pass


async def test_killing_the_server_kills_its_command_and_daemons(workspace):
    folder = _with_daemon(workspace, "hang")
    params = StdioServerParameters(command=PY, args=["-m", "kernel_mcp", "serve", "--workspace", str(workspace)], env=dict(os.environ))
    with anyio.fail_after(GUARD_S):
        async with Client(params) as client:
            async with anyio.create_task_group() as tg:

                async def call_and_ignore() -> None:
                    try:
                        await client.call_tool("run_command", {"name": "daemon"})
                    except Exception:
                        pass  # the server is gone; the call cannot answer

                tg.start_soon(call_and_ignore)
                daemon = await _pid(folder / "daemon")
                parent = await _pid(folder / "parent")
                server = next((p for p in psutil.Process(parent).parents() if "serve" in p.cmdline()), None)
                assert server is not None, psutil.Process(parent).parents()
                server.send_signal(signal.SIGKILL)
                assert await _gone(parent), "the command outlived the server's kill -9"
                assert await _gone(daemon), "the command's daemon outlived the server's kill -9"
                tg.cancel_scope.cancel()


EVAL_BENCH = r"""
import csv, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel
if kernel.DAEMON:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(os.path.join(kernel.DAEMON, f"daemon-{os.getpid()}"), "w") as f:
                f.write(__NOTE__)
            time.sleep(300)
        os._exit(0)
    os.wait()
    time.sleep(300)
os.makedirs("out", exist_ok=True)
with open("out/bench.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["shape", "err_k", "us_k"])
    w.writerow(["small", 0, 100.0])
""".replace("__NOTE__", NOTE)


async def test_evaluate_of_a_daemonizing_benchmark_records_a_failed_attempt(tmp_path):
    """Before, the runner waited on the daemon's pipe and the evaluation ended in an internal error."""
    import git

    from conftest import call, toml_list

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "bench.py").write_text(EVAL_BENCH)
    (ws / "kernel.py").write_text("DAEMON = ''\n")
    (ws / "kernel-mcp.toml").write_text(
        f'[target]\narch = "gfx950"\nplatform = "offline"\n\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\n'
        'csv = "out/bench.csv"\nconfig_columns = ["shape"]\ncorrectness = { column = "err_k", rule = "== 0" }\n'
        'metric = "us_k"\ntarget_kernel = "k"\ntimeout_s = 3\nrepeats = 1\n[harness]\neditable = ["kernel.py"]\n'
        f"writable = {toml_list(str(tmp_path / 'pids'))}\n"  # the daemons' pid files lie outside the workspace
    )
    (ws / ".gitignore").write_text("out/\n__pycache__/\n")
    repo = git.Repo.init(ws)
    repo.git.add("-A")
    repo.git.commit("-m", "kernel and benchmark", "--author", "t <t@example.invalid>")
    pids = tmp_path / "pids"
    pids.mkdir()
    async with Client(build_server(ws)) as client:
        worktree = (await call(client, "experiment_start", tag="daemon"))["worktree"]
        Path(worktree, "kernel.py").write_text(f"DAEMON = {str(pids)!r}\n")
        with anyio.fail_after(GUARD_S * 3):
            result = await client.call_tool("experiment_evaluate", {"hypothesis": "daemonize"})
        assert not result.is_error, text_of(result)
        attempt = result.structured_content["attempt"]
        assert attempt["decision"] == "failed" and "timed out" in attempt["reasons"][0], attempt
    daemons = [_noted(p) for p in pids.iterdir()]
    assert daemons
    for pid in daemons:
        assert await _gone(pid), "a benchmark's daemon survived the evaluation"
