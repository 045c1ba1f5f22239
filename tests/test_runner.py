"""The subprocess runner: no shell, timeouts that kill the whole tree, bounded memory, full logs on disk."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import psutil
import pytest

from kernel_mcp import containment, runner
from kernel_mcp.errors import CommandFailed

from conftest import PY

pytestmark = pytest.mark.anyio


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


SPAWN_TREE = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])
escaped = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], start_new_session=True)
open(sys.argv[1], 'w').write(f'{child.pid} {escaped.pid}')
print('started', flush=True)
time.sleep(300)
"""


async def test_hang_is_killed_with_all_descendants(tmp_path):
    pids_file = tmp_path / "pids"
    started = time.monotonic()
    result = await runner.run([PY, "-c", SPAWN_TREE, str(pids_file)], cwd=tmp_path, timeout_s=2)
    assert result.timed_out and not result.ok
    assert time.monotonic() - started < 15
    assert "started" in result.stdout.tail
    child, escaped = map(int, pids_file.read_text().split())
    for pid in (child, escaped):
        assert not _alive(pid), f"descendant {pid} survived the timeout"
    assert child in result.killed_pids and escaped in result.killed_pids


async def test_cancellation_kills_the_tree(tmp_path):
    pids_file = tmp_path / "pids"
    task = asyncio.ensure_future(runner.run([PY, "-c", SPAWN_TREE, str(pids_file)], cwd=tmp_path, timeout_s=120))
    for _ in range(100):
        if pids_file.exists() and pids_file.read_text():
            break
        await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for pid in map(int, pids_file.read_text().split()):
        assert not _alive(pid)


async def test_large_output_is_capped_in_memory_and_kept_on_disk(tmp_path):
    size = 100 * 1024 * 1024
    code = (
        f"import sys\nblock = b'0123456789abcdef' * 4096\nfor _ in range({size} // len(block)): sys.stdout.buffer.write(block)\nsys.stdout.buffer.write(b'END')"
    )
    result = await runner.run([PY, "-c", code], cwd=tmp_path, timeout_s=120, log_dir=tmp_path / "logs", tail_bytes=4096)
    assert result.ok
    assert result.stdout.total_bytes == size + 3
    assert len(result.stdout.tail) == 4096 and result.stdout.tail.endswith("END")
    log = tmp_path / "logs" / "command.stdout.log"
    assert log.stat().st_size == size + 3 and not result.stdout.cut_on_disk


async def test_log_cap_cuts_the_disk_copy_and_says_so(tmp_path):
    code = "import sys; sys.stdout.write('x' * 50000)"
    result = await runner.run([PY, "-c", code], cwd=tmp_path, timeout_s=30, log_dir=tmp_path, log_cap=1000)
    text = (tmp_path / "command.stdout.log").read_text()
    assert text.startswith("x" * 1000) and "log cut at 1000 bytes" in text and "50000 bytes" in text
    assert result.stdout.cut_on_disk


async def test_no_shell_interpretation(tmp_path):
    result = await runner.run([PY, "-c", "import sys; print(sys.argv[1:])", "$(touch pwned)", ";", "rm -rf /"], cwd=tmp_path, timeout_s=30)
    assert "'$(touch pwned)', ';', 'rm -rf /'" in result.stdout.tail
    assert not (tmp_path / "pwned").exists()


async def test_environment_control(tmp_path):
    code = "import os; print(os.environ.get('KMCP_X'), os.environ.get('HOME') is not None)"
    inherited = await runner.run([PY, "-c", code], cwd=tmp_path, timeout_s=30, env={"KMCP_X": "1"})
    assert inherited.stdout.tail.split() == ["1", "True"]
    clean = await runner.run([PY, "-c", code], cwd=tmp_path, timeout_s=30, env={"KMCP_X": "2"}, inherit_env=False)
    assert clean.stdout.tail.split() == ["2", "False"]


async def test_missing_executable_is_a_clear_error(tmp_path):
    with pytest.raises(CommandFailed, match="executable not found: no-such-compiler"):
        await runner.run(["no-such-compiler", "--version"], cwd=tmp_path, timeout_s=5)


async def test_exit_code_and_signal_reported(tmp_path):
    bad = await runner.run([PY, "-c", "import sys; sys.exit(7)"], cwd=tmp_path, timeout_s=30)
    assert bad.returncode == 7 and bad.status() == "exit 7"
    killed = await runner.run([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"], cwd=tmp_path, timeout_s=30)
    assert killed.status() == "killed by signal 9"


async def test_progress_reported_while_running(tmp_path):
    seen = []

    async def progress(done, total, message):
        seen.append(message)

    await runner.run([PY, "-c", "import time; time.sleep(1.5)"], cwd=tmp_path, timeout_s=30, progress=progress, progress_every_s=0.4)
    assert seen and "running for" in seen[0]


async def test_background_child_holding_pipes_does_not_hang(tmp_path):
    code = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); print('parent done')"
    started = time.monotonic()
    result = await runner.run([PY, "-c", code], cwd=tmp_path, timeout_s=60)
    assert result.returncode == 0 and "parent done" in result.stdout.tail
    assert time.monotonic() - started < 20
    assert result.killed_pids, "the leftover child should have been killed"
    assert not any(_alive(p) for p in result.killed_pids)


async def test_a_stray_close_of_the_watchdogs_pipe_kills_no_run_of_a_live_server(tmp_path):
    """The watchdog sweeps the server's runs when the server goes; its pipe's end closing is not
    enough to say so: a double close elsewhere in the server closed it, and the watchdog then killed
    a benchmark run mid-way ("killed by signal 9", empty stderr; seen in full suites)."""
    from kernel_mcp import containment

    started = tmp_path / "started"
    task = asyncio.ensure_future(
        runner.run(
            [sys.executable, "-c", f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(2); print('done')"],
            cwd=tmp_path,
            timeout_s=60,
        )
    )
    while not started.exists():
        await asyncio.sleep(0.05)
    watchdog, end = containment._watchdog
    os.close(end)  # the stray close
    result = await task
    assert result.ok and result.stdout.tail.strip() == "done", result.status()
    assert watchdog.poll() is None  # still watching: it sweeps when the server really goes
    containment._watchdog = None  # the next command starts a watchdog with a pipe of its own
    watchdog.kill()
    watchdog.wait()


# A server without its watchdog: what remains to end its command when it is killed is the signal the
# kernel sends the command when its parent goes (PR_SET_PDEATHSIG), asked for by setpriv or in the
# forked child (containment.tied_spawn)
SERVER_WITHOUT_WATCHDOG = """
import asyncio, pathlib, sys
from kernel_mcp import containment, runner
containment.ensure_watchdog = lambda: None
note = pathlib.Path(sys.argv[1])
asyncio.run(runner.run([sys.executable, "-c", f"import os, pathlib, time; pathlib.Path({str(note)!r}).write_text(str(os.getpid())); time.sleep(300)"], cwd=note.parent, timeout_s=600))
"""


@pytest.mark.parametrize("how", ["setpriv", "preexec"])
async def test_a_command_dies_with_its_server_by_the_kernels_signal_alone(tmp_path, how):
    if how == "setpriv" and containment._SETPRIV is None:
        pytest.skip("util-linux's setpriv is not on PATH here")
    env = dict(os.environ)
    if how == "preexec":
        env["PATH"] = ""  # no setpriv to find: the forked child asks for the signal itself
    note = tmp_path / "command.pid"
    server = await asyncio.create_subprocess_exec(PY, "-c", SERVER_WITHOUT_WATCHDOG, str(note), env=env)
    try:
        for _ in range(600):
            if note.exists() and note.read_text():
                break
            await asyncio.sleep(0.05)
        command = int(note.read_text())
        assert _alive(command)
    finally:
        server.kill()
        await server.wait()
    for _ in range(100):
        if not _alive(command):
            break
        await asyncio.sleep(0.05)
    assert not _alive(command), "the command outlived its server's kill -9"


def test_an_untied_command_is_started_without_forking_the_server():
    """With setpriv on PATH, a command that needs nothing in the child before exec gets no preexec
    function (so Python starts it with vfork, not a fork that copies the server's page tables)."""
    if containment._SETPRIV is None:
        pytest.skip("util-linux's setpriv is not on PATH here")
    argv, hook = containment.tied_spawn([PY, "-c", "pass"], "/", None)
    assert hook is None and argv[:4] == [containment._SETPRIV, "--pdeathsig", "KILL", "--"] and argv[4:] == [PY, "-c", "pass"]
    argv, hook = containment.tied_spawn(["no-such-program"], "/", None)  # the server's own error for it
    assert argv == ["no-such-program"] and hook is not None
    argv, hook = containment.tied_spawn([PY], "/", lambda: None)  # something to do in the child
    assert argv == [PY] and hook is not None
    argv, hook = containment.tied_spawn([PY], "/", lambda: None, no_new_privs=True)  # that setpriv does too
    assert hook is None and argv == [containment._SETPRIV, "--pdeathsig", "KILL", "--no-new-privs", "--", PY]


async def test_a_sealed_run_starts_with_no_new_privileges(tmp_path):
    """However it is started (setpriv's --no-new-privs or the forked child's prctl), a sealed run and
    what it starts can gain no privileges by exec."""
    from kernel_mcp import sandbox

    if sandbox.available() is not None:
        pytest.skip(f"runs cannot be sealed here: {sandbox.available()}")
    result = await runner.run(
        [PY, "-c", "print(open('/proc/self/status').read())"], cwd=tmp_path, timeout_s=60, boundary=sandbox.Boundary(writable=(tmp_path,))
    )
    assert result.ok and result.sealed, result.status()
    assert "NoNewPrivs:\t1" in result.stdout.tail, result.stdout.tail
