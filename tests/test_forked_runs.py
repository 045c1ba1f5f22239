"""Runs forked from a fork server that imported the benchmark's heavy modules once
([benchmark] preload): real processes in the kernel's namespaces and Landlock, real pipes.

A forked run must be what `python script.py` is (argv, cwd, environment, __main__, exit status,
output), start from the same clean state every time (nothing a run changed or left alive reaches
the next one), and reach nothing outside its own side. Assertions are on states and counts, never
on time."""

from __future__ import annotations

import fcntl
import json
import sys
import textwrap
from pathlib import Path

import pytest


from conftest import sealed_side
from kernel_mcp import forked_runs, sandbox
from kernel_mcp.errors import CommandFailed
from kernel_mcp.workspace.config import BenchmarkConfig

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(forked_runs.unavailable() is not None, reason=f"no fork server here: {forked_runs.unavailable()}")]

LIMIT_S = 60

# a module whose every import is counted in a file: imported once by the fork server, never by a run
COUNTED = textwrap.dedent("""
    import os
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("imported\\n")
    value = 1
""")


@pytest.fixture
def side(tmp_path):
    """One side's tree (with the scripts below), its boundary, and the environment of its runs."""
    with sealed_side(tmp_path, "test-side", {"counted": COUNTED}) as (tree, boundary, site):
        yield tree, boundary, {"PYTHONPATH": str(site), "COUNT_FILE": str(tree / "count")}


def _script(tree: Path, name: str, body: str) -> list[str]:
    (tree / name).write_text(textwrap.dedent(body))
    return [sys.executable, name]


async def _server(tree, boundary, modules, command, logs):
    return forked_runs.ForkServer(command, modules, cwd=tree, boundary=boundary, log_dir=logs, log_name="forkserver")


async def test_a_forked_run_is_what_python_script_py_is(side, tmp_path):
    tree, boundary, env = side
    (tree / "sub").mkdir()
    command = _script(
        tree,
        "bench.py",
        """
        import json, os, sys
        print(json.dumps({"name": __name__, "argv": sys.argv, "cwd": os.getcwd(), "seed": os.environ.get("SEED"),
                          "path0": sys.path[0], "file": __file__}))
        print("to stderr", file=sys.stderr)
        sys.exit(int(os.environ["SEED"]) % 7)
        """,
    )
    server = await _server(tree, boundary, ["counted"], command, tmp_path / "logs")
    try:
        result = await server.run(
            [*command, "--shapes", "a b"], cwd=tree, timeout_s=LIMIT_S, env={**env, "SEED": "10"}, log_dir=tmp_path / "logs", log_name="run-1"
        )
    finally:
        await server.close()
    seen = json.loads(result.stdout.tail)
    assert seen == {
        "name": "__main__",
        "argv": ["bench.py", "--shapes", "a b"],
        "cwd": str(tree),
        "seed": "10",
        "path0": str(tree.resolve()),
        "file": str(tree / "bench.py"),
    }
    assert result.returncode == 3 and not result.timed_out and result.status() == "exit 3"
    assert "to stderr" in result.stderr.tail
    assert (tmp_path / "logs" / "run-1.stdout.log").read_text().startswith('{"name": "__main__"')
    assert result.sealed == sandbox.mechanism()


async def test_the_preloaded_module_is_imported_once_and_each_run_starts_from_its_clean_state(side, tmp_path):
    tree, boundary, env = side
    command = _script(
        tree,
        "bench.py",
        """
        import sys
        already = "counted" in sys.modules
        import counted
        print(already, counted.value)
        counted.value = 42  # a run's change dies with it
        """,
    )
    server = await _server(tree, boundary, ["counted"], command, tmp_path / "logs")
    try:
        results = [await server.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run") for _ in range(3)]
    finally:
        await server.close()
    assert [r.stdout.tail.strip() for r in results] == ["True 1"] * 3
    assert (tree / "count").read_text() == "imported\n"


async def test_a_run_ends_as_the_interpreter_ends_its_atexit_functions_and_the_c_librarys_run(side, tmp_path):
    """A profiler's injected library (CUPTI's) writes its records from a C atexit function: a run that
    left with os._exit lost them ("cut short", seen on an H100)."""
    tree, boundary, env = side
    command = _script(
        tree,
        "bench.py",
        """
        import atexit, ctypes, sys
        atexit.register(lambda: print("python atexit", flush=True))
        libc = ctypes.CDLL(None)
        libc.fputs(b"in the C library's buffer until exit(3) flushes it\\n", ctypes.c_void_p.in_dll(libc, "stdout"))
        print("buffered, not flushed", end="")
        sys.exit(5)
        """,
    )
    for modules in ([], ["ctypes"]):
        server = await _server(tree, boundary, modules, command, tmp_path / "logs")
        try:
            result = await server.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run")
        finally:
            await server.close()
        assert result.returncode == 5
        # the order `python bench.py | cat` prints them in, too
        assert result.stdout.tail == "in the C library's buffer until exit(3) flushes it\nbuffered, not flushedpython atexit\n"


async def test_nothing_a_run_left_alive_reaches_the_next_run(side, tmp_path):
    """The run leaves a detached daemon that holds a lock on a file: by the time its result comes
    back, the fork server has killed and reaped it, so the lock is free."""
    tree, boundary, env = side
    lock = tmp_path / "lock"
    lock.touch()
    command = _script(
        tree,
        "bench.py",
        f"""
        import fcntl, os, sys, time
        r, w = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                f = open({str(lock)!r})  # read-only: the file is outside the run's tree
                fcntl.flock(f, fcntl.LOCK_EX)
                os.write(w, b"locked")
                time.sleep(600)
            os._exit(0)
        print(os.read(r, 6).decode())
        """,
    )
    server = await _server(tree, boundary, [], command, tmp_path / "logs")
    try:
        result = await server.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run")
        assert result.ok and result.stdout.tail.strip() == "locked"
        with open(lock, "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError while the daemon lives
        again = await server.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run")
        assert again.ok
    finally:
        await server.close()


async def test_a_run_cannot_take_the_fork_servers_descriptors_nor_end_it(side, tmp_path):
    """The fork server holds the control socket: a run that took it (pidfd_getfd, /proc/<pid>/fd; a root
    server's runs hold CAP_SYS_PTRACE) could answer for the runs of its side. Its own Landlock layer
    keeps it out."""
    tree, boundary, env = side
    command = _script(
        tree,
        "bench.py",
        """
        import ctypes, os, signal, sys
        libc = ctypes.CDLL(None, use_errno=True)
        server = os.getppid()
        pidfd = libc.syscall(434, ctypes.c_int(server), ctypes.c_uint(0))  # pidfd_open
        taken = [n for n in range(64) if libc.syscall(438, ctypes.c_int(pidfd), ctypes.c_int(n), ctypes.c_uint(0)) >= 0]  # pidfd_getfd
        links = []
        for n in range(64):
            try:
                links.append(os.readlink(f"/proc/{server}/fd/{n}"))
            except OSError:
                pass
        print("denied" if pidfd >= 0 and not taken and not links else f"reached {taken} {links}")
        if sys.argv[1:] == ["kill"]:
            try:
                os.kill(os.getppid(), signal.SIGKILL)
            except PermissionError:
                print("refused")
        """,
    )
    server = await _server(tree, boundary, [], command, tmp_path / "logs")
    try:
        peek = await server.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run")
        assert peek.ok and peek.stdout.tail.strip() == "denied"  # whatever the run's capabilities (a root server's too)
        serving = server.task
        killer = await server.run([*command, "kill"], cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run")
        if sandbox.landlock_abi() >= 6:  # signals scoped to the run's own layer
            assert killer.ok and killer.stdout.tail.split() == ["denied", "refused"] and server.task is serving
        else:  # the run can end its own side's fork server: it fails alone, and the next run starts a new one
            assert not killer.ok and "the fork server ended before the run did" in killer.stderr.tail
        after = await server.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run")
        assert after.ok and after.stdout.tail.strip() == "denied"
    finally:
        await server.close()


async def test_kill_everything_in_one_side_reaches_nothing_of_the_other(tmp_path):
    trees = {name: tmp_path / name for name in ("best", "candidate")}
    for tree in trees.values():
        tree.mkdir()
    command = [sys.executable, "bench.py"]
    (trees["best"] / "bench.py").write_text("print('fine')\n")
    (trees["candidate"] / "bench.py").write_text("import os, signal\nos.kill(-1, signal.SIGKILL)\n")
    with sandbox.side(trees["best"], tmp_path / "state", "best") as best_b, sandbox.side(trees["candidate"], tmp_path / "state", "cand") as cand_b:
        forks = forked_runs.ForkServers(command, [], tmp_path / "logs")
        try:
            best, cand = forks.of(trees["best"], best_b, "best"), forks.of(trees["candidate"], cand_b, "candidate")
            first = await best.run(command, cwd=trees["best"], timeout_s=LIMIT_S, env=None, log_dir=None, log_name="b1")
            serving = best.task
            hostile = await cand.run(command, cwd=trees["candidate"], timeout_s=LIMIT_S, env=None, log_dir=None, log_name="c1")
            assert cand.alive  # kill(-1) in a run's namespace spares its fork server too
            second = await best.run(command, cwd=trees["best"], timeout_s=LIMIT_S, env=None, log_dir=None, log_name="b2")
            assert best.task is serving  # BEST's fork server lived through it: no restart
        finally:
            await forks.close()
    assert first.ok and second.ok and second.stdout.tail.strip() == "fine"
    assert hostile.ok  # kill(-1) spares its caller: the run ends as it would


async def test_a_run_past_its_limit_is_killed_with_its_fork_server_and_the_next_starts_a_new_one(side, tmp_path):
    tree, boundary, env = side
    command = _script(tree, "bench.py", "import sys, time\nif sys.argv[1:] == ['hang']:\n    time.sleep(600)\nprint('done')\n")
    server = await _server(tree, boundary, [], command, tmp_path / "logs")
    try:
        hung = await server.run([*command, "hang"], cwd=tree, timeout_s=1, env=env, log_dir=None, log_name="run")
        assert hung.timed_out and not hung.ok and "timed out at its 1 s limit" in hung.status()
        assert not server.alive
        after = await server.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run")
        assert after.ok and after.stdout.tail.strip() == "done"
    finally:
        await server.close()


async def test_an_uncaught_exception_exits_1_with_its_traceback(side, tmp_path):
    tree, boundary, env = side
    command = _script(tree, "bench.py", "raise ValueError('no such shape')\n")
    server = await _server(tree, boundary, [], command, tmp_path / "logs")
    try:
        result = await server.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run")
    finally:
        await server.close()
    assert result.returncode == 1
    assert "Traceback" in result.stderr.tail and "ValueError: no such shape" in result.stderr.tail


async def test_each_run_draws_fresh_numpy_random_inputs_as_a_new_interpreter_would(side, tmp_path):
    tree, boundary, env = side
    command = _script(tree, "bench.py", "import numpy, random\nprint(numpy.random.rand(), random.random())\n")
    server = await _server(tree, boundary, ["numpy"], command, tmp_path / "logs")
    try:
        draws = [(await server.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run")).stdout.tail.split() for _ in range(3)]
    finally:
        await server.close()
    assert len({d[0] for d in draws}) == 3 and len({d[1] for d in draws}) == 3, draws


async def test_a_module_that_cannot_be_imported_is_a_clear_error(side, tmp_path):
    tree, boundary, env = side
    command = _script(tree, "bench.py", "print('never')\n")
    server = await _server(tree, boundary, ["no_such_module_here"], command, tmp_path / "logs")
    with pytest.raises(CommandFailed, match="importing no_such_module_here: ModuleNotFoundError"):
        await server.start(env, LIMIT_S)
    result = await server.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run")  # the run fails with the reason
    await server.close()
    assert not result.ok and "importing no_such_module_here: ModuleNotFoundError" in result.stderr.tail and "never" not in result.stdout.tail


def test_preload_needs_a_python_script_command():
    base = {"csv": "out.csv", "correctness": {"column": "err", "rule": "== 0"}, "metric": "us"}
    assert BenchmarkConfig.model_validate({**base, "command": ["python3", "bench.py", "--all"], "preload": ["torch", "numpy.linalg"]}).preload
    for command in (["./bench"], ["python3", "-m", "bench"], ["bash", "bench.py"]):
        with pytest.raises(ValueError, match=r"python script\.py"):
            BenchmarkConfig.model_validate({**base, "command": command, "preload": ["torch"]})
    with pytest.raises(ValueError, match="not a module name"):
        BenchmarkConfig.model_validate({**base, "command": ["python3", "bench.py"], "preload": ["torch; rm"]})


def test_without_namespaces_the_runs_start_plainly_and_say_why(monkeypatch):
    """kill(-1) is confined to a run only in a PID namespace of its own: without one, no fork server."""
    from kernel_mcp.bench import _forking

    cfg = BenchmarkConfig.model_validate(
        {"command": ["python3", "bench.py"], "csv": "out.csv", "correctness": {"column": "err", "rule": "== 0"}, "metric": "us", "preload": ["torch"]}
    )
    assert _forking(cfg, None) == (True, "torch imported once per side by a fork server; each run a fork of it")
    monkeypatch.setenv(sandbox.NAMESPACES_ENV, "off")
    forked, note = _forking(cfg, None)
    assert not forked and note is not None
    assert note.startswith("torch imported by every run: no fork server, runs get no PID namespace of their own here (turned off")


UNPRIVILEGED = textwrap.dedent(
    """
    import asyncio, json, os, shutil, sys
    from pathlib import Path
    from kernel_mcp import forked_runs, sandbox

    tree = Path(sys.argv[1])
    (tree / "bench.py").write_text(
        "import ctypes, os, sys\\n"
        "libc = ctypes.CDLL(None, use_errno=True)\\n"
        "pidfd = libc.syscall(434, ctypes.c_int(os.getppid()), ctypes.c_uint(0))\\n"
        "taken = [n for n in range(64) if libc.syscall(438, ctypes.c_int(pidfd), ctypes.c_int(n), ctypes.c_uint(0)) >= 0]\\n"
        "print(json_taken := repr(taken), os.getuid(), 'colorsys' in sys.modules)\\n"
    )

    if forked_runs.unavailable():  # this uid cannot start this Python without the right to read it: try again with it
        sys.exit(forked_runs.unavailable())

    # the runs have no capability: where this Python lies out of their reach, the system's runs them
    python = sys.executable if os.access(sys.executable, os.X_OK) else shutil.which("python3", path="/usr/bin:/bin")

    async def main():
        with sandbox.side(tree, tree / "state", "u") as boundary:
            server = forked_runs.ForkServer([python, "bench.py"], ["colorsys"], cwd=tree, boundary=boundary, log_dir=tree / "logs", log_name="fs")
            try:
                runs = [await server.run([python, "bench.py"], cwd=tree, timeout_s=60, env=None, log_dir=None, log_name="r") for _ in range(2)]
            finally:
                await server.close()
        print(json.dumps({"unavailable": forked_runs.unavailable(), "sealed": runs[0].sealed, "ok": [r.ok for r in runs],
                          "out": [r.stdout.tail.strip() for r in runs], "err": [r.stderr.tail[-300:] for r in runs]}))

    asyncio.run(main())
    """
)


def test_an_unprivileged_servers_fork_server_works_in_its_user_namespace(tmp_path):
    """Most users' servers are not root: the fork server runs in the run's user namespace, without
    capabilities, and its runs still cannot take its descriptors."""
    import os

    import unprivileged

    if os.getuid() != 0:
        pytest.skip("the rest of this suite already runs as an unprivileged user")
    answer = unprivileged.run_server(UNPRIVILEGED, "kmcp-fork-", LIMIT_S)
    assert answer["unavailable"] is None and "own user, PID and mount namespaces" in (answer["sealed"] or ""), answer["err"]
    assert answer["ok"] == [True, True], answer
    assert answer["out"] == [f"[] {unprivileged.UID} True"] * 2, answer
