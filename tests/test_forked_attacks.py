"""A hostile candidate against the fork servers of [benchmark] preload: each attack staged for real
(real fork servers, the kernel's namespaces and Landlock, real processes), each assertion on a state
(a file written or not, a run's result, a lock held or free), never on time.

The candidate's code runs in its runs; what it must never reach is the fork server (one Landlock
layer out of its runs, holding the control socket, alive while BEST runs), BEST's side, the runs that
come after it, or anything outside its tree."""

from __future__ import annotations

import fcntl
import os
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import forked_runs_of as _runs
from conftest import needs_root as _root
from conftest import refused_write, sealed_side
from kernel_mcp import forked_runs

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(forked_runs.unavailable() is not None, reason=f"no fork server here: {forked_runs.unavailable()}")]

LIMIT_S = 60

# Planted by the candidate: it notes where it ran. In a run its parent is the fork server; in the fork
# server itself, the parent is the namespace's init (pid 1).
PLANTED = textwrap.dedent("""
    import os
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "planted-ran"), "a") as f:
        f.write("fork server\\n" if os.getppid() == 1 else "run\\n")
    value = 666
""")


@pytest.fixture
def side(tmp_path):
    """One side's tree, its boundary, and a site folder outside it (installed modules, as torch is)."""
    # counted imports a module of the standard library: one the preload imports in turn
    with sealed_side(tmp_path, "attack-side", {"counted": "import colorsys\nvalue = 1\n"}) as (tree, boundary, site):
        yield tree, boundary, {"PYTHONPATH": str(site)}, site


def _script(tree: Path, body: str) -> list[str]:
    (tree / "bench.py").write_text(textwrap.dedent(body))
    return [sys.executable, "bench.py"]


@pytest.mark.parametrize("planted", ["counted", "colorsys"])
async def test_a_module_planted_beside_the_script_never_runs_in_the_fork_server(side, planted):
    """The attack: the fork server resolved its preload through sys.path[0] = the script's folder, so a
    candidate's `counted.py` (the preloaded name) or `colorsys.py` (a standard module the preload
    imports) ran in the fork server itself, where it could answer for its runs and keep threads alive
    while BEST runs. Now the fork server refuses to start and says why; the side's run fails."""
    tree, boundary, env, _site = side
    (tree / f"{planted}.py").write_text(PLANTED)
    command = _script(tree, "import counted\nprint('measured', counted.value)\n")
    [result] = await _runs(tree, boundary, env, ["counted"], command)
    assert not (tree / "planted-ran").exists() or "fork server" not in (tree / "planted-ran").read_text()
    assert not result.ok and "the fork server imports nothing a run could change" in result.stderr.tail, result.stderr.tail
    assert f"{planted} would be imported from {tree / planted}.py" in result.stderr.tail


@pytest.mark.parametrize("planted", ["struct", "traceback"])
async def test_the_fork_servers_own_imports_never_come_from_the_tree(side, planted):
    """The attack: the fork server (`python -c`, in the tree) imported `struct` with the working folder
    first on sys.path, and `traceback` after sys.path[0] named the script's folder: a `struct.py` or
    `traceback.py` there ran in the fork server. Now its own imports come from Python's; the runs, which
    may import what they like, find Python's in sys.modules."""
    tree, boundary, env, _site = side
    (tree / f"{planted}.py").write_text(PLANTED)
    command = _script(tree, f"import {planted}\nprint(hasattr({planted}, 'value'))\n")
    results = await _runs(tree, boundary, env, [], command, n=2)
    assert [r.stdout.tail.strip() for r in results] == ["False", "False"], [r.stderr.tail for r in results]
    assert not (tree / "planted-ran").exists()


# Stands for a fork server that answers what it likes (one whose code an attacker runs): a module of the
# site folder, outside what the runs may write, that replaces the fork server's `send`.
HOSTILE = textwrap.dedent("""
    import __main__, os, socket, sys
    mode = os.environ["HOSTILE"]
    answers = {"not json": b"\\xff{", "a list": b'["status"]', "a word": b'{"status": "zero"}',
               "a huge number": b'{"status": 1180591620717411303424}', "a stopped process": b'{"status": 4991}'}
    if mode == "ready as a list":
        data = b'["ready"]'
        socket.socket(fileno=int(sys.argv[1])).sendall(__main__.HEADER.pack(len(data)) + data)
    real = __main__.send
    def send(sock, message):
        if "status" not in message:
            return real(sock, message)
        sock.sendall(__main__.HEADER.pack(len(answers[mode])) + answers[mode])
    __main__.send = send
""")


@pytest.mark.parametrize("mode", ["not json", "a list", "a word", "a huge number", "a stopped process", "ready as a list"])
async def test_a_hostile_answer_fails_the_run_with_the_reason_and_never_the_evaluation(side, mode):
    """The attack: answers were trusted to be a JSON object with a wait status; anything else raised out of
    the run (TypeError, ValueError, OverflowError, AttributeError) and ended the whole evaluation."""
    tree, boundary, env, site = side
    (site / "hostile.py").write_text(HOSTILE)
    command = _script(tree, "print('measured')\n")
    [result] = await _runs(tree, boundary, {**env, "HOSTILE": mode}, ["hostile"], command)
    assert not result.ok and result.returncode is None
    assert "the fork server" in result.stderr.tail and "answered" in result.stderr.tail, result.stderr.tail


async def test_a_root_run_cannot_change_the_kernels_settings(side):
    """The attack: a root server's runs keep their capabilities, and /proc was writable for the GPU
    driver: /proc/sys/kernel/core_pattern (a program the kernel runs as root, outside every seal, when
    any process dumps core), the other sysctls (the scheduler's, the memory's), IRQ affinity. The run's
    /proc/sys and its kin are read-only now. (The test writes back the value there is: no change.)"""
    _root()
    tree, boundary, env, _site = side
    command = _script(
        tree,
        """
        import os
        seen = []
        for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/vm/swappiness"):
            value = open(path).read()
            try:
                with open(path, "w") as f:
                    f.write(value)
                seen.append("written")
            except OSError as exc:
                seen.append(exc.strerror)
        with open("/proc/self/oom_score_adj", "w") as f:  # the run's own entries stay its own
            f.write("0")
        print(seen)
        """,
    )
    [result] = await _runs(tree, boundary, env, [], command)
    assert result.ok, result.stderr.tail
    assert result.stdout.tail.strip() == "['Read-only file system', 'Read-only file system']"


async def test_a_root_run_cannot_make_device_files(side):
    """The attack: a root run could mknod a device file in its tree or in the machine's /dev (a raw disk,
    /dev/mem), and through it write outside its tree; a node made in /dev outlived the run."""
    _root()
    tree, boundary, env, _site = side
    command = _script(
        tree,
        """
        import os, stat
        seen = []
        for path, kind in (("disk", stat.S_IFBLK), ("mem", stat.S_IFCHR), ("/dev/kmcp-attack-mem", stat.S_IFCHR)):
            try:
                os.mknod(path, kind | 0o600, os.makedev(1, 1))
                seen.append("made")
            except OSError as exc:
                seen.append(exc.strerror)
        print(seen)
        """,
    )
    try:
        [result] = await _runs(tree, boundary, env, [], command)
    finally:
        made = os.path.lexists("/dev/kmcp-attack-mem")
        if made:
            os.unlink("/dev/kmcp-attack-mem")
    assert result.ok, result.stderr.tail
    assert result.stdout.tail.strip() == str(["Permission denied"] * 2 + [refused_write()]) and not made


async def test_a_leftover_in_a_nested_pid_namespace_is_gone_before_the_answer(side, tmp_path):
    """Blocked already: a root run starts a PID namespace of its own and leaves a process there (its
    parent the nested init, not the fork server) holding a lock. kill(-1) reaches nested namespaces and
    the nested init is the fork server's to reap: the lock is free when the answer comes."""
    _root()
    tree, boundary, env, _site = side
    lock = tmp_path / "lock"
    lock.touch()
    command = _script(
        tree,
        f"""
        import ctypes, fcntl, os, time
        r, w = os.pipe()
        if os.fork() == 0:
            assert ctypes.CDLL(None, use_errno=True).unshare(0x20000000) == 0  # CLONE_NEWPID
            if os.fork() == 0:  # pid 1 of the nested namespace
                if os.fork() == 0:
                    os.setsid()
                    f = open({str(lock)!r})
                    fcntl.flock(f, fcntl.LOCK_EX)
                    os.write(w, b"locked")
                    time.sleep(600)
                time.sleep(600)
            os._exit(0)
        print(os.read(r, 6).decode())
        """,
    )
    server = forked_runs.ForkServer(command, [], cwd=tree, boundary=boundary, log_dir=tmp_path / "logs", log_name="forkserver")
    try:
        result = await server.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, log_dir=None, log_name="run")
        assert result.ok and result.stdout.tail.strip() == "locked", result.stderr.tail
        with open(lock, "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError while the leftover lives
    finally:
        await server.close()


async def test_a_run_holds_nothing_of_its_fork_server_but_its_own_pipes(side):
    """Blocked already: after the fork, a run holds no descriptor of the fork server's (only its own
    stdin, stdout and stderr) and no memory shared with it, so nothing it writes reaches the next run;
    the fork server's memory and descriptors are out of its reach (its own Landlock layer)."""
    tree, boundary, env, _site = side
    command = _script(
        tree,
        """
        import os
        server = os.getppid()
        fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))[:-1]  # the last: the listing's own
        shared = [line for line in open("/proc/self/maps") if line.split()[1].endswith("s") and "w" in line.split()[1]]
        reach = []
        for entry in ("mem", "fd/0"):
            try:
                os.stat(f"/proc/{server}/{entry}") if entry == "mem" and open(f"/proc/{server}/mem", "rb") else os.readlink(f"/proc/{server}/{entry}")
                reach.append(entry)
            except OSError:
                pass
        print(fds, shared, reach)
        """,
    )
    results = await _runs(tree, boundary, env, ["colorsys"], command, n=2)
    assert [r.stdout.tail.strip() for r in results] == ["[0, 1, 2] [] []"] * 2, [r.stderr.tail for r in results]
