"""A sealed run's processes: the attacks of the security review staged for real, with the kernel's
own namespaces, Landlock and processes. A run in namespaces of its own leaves nothing behind when
its command returns, cannot name the server or a sibling run (prlimit, setpriority, kill, /proc),
and a fork-runner's thousands of short-lived children stall nothing. Where runs get no namespaces
(`KERNEL_MCP_SEAL_NAMESPACES=off`, as on a kernel that refuses them) the runs say so, and the
server's reaper still ends the escapee and reaps its zombies as they come.

Assertions are on states and counts (which processes live, whose limits changed), never on time;
the guards only bound how long a broken build may hang the suite."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import psutil
import pytest
import unprivileged
from conftest import PY
from run_pids import NOTE, host_pid

from kernel_mcp import containment, runner, sandbox
from kernel_mcp.errors import CommandFailed

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sandbox.available() is not None, reason=f"no Landlock here: {sandbox.available()}")]

GUARD_S = 60


def _namespaces() -> sandbox.Isolation:
    isolation, why = sandbox.isolation()
    if isolation is None:
        pytest.skip(f"runs get no namespaces here: {why}")
    return isolation


@pytest.fixture
def no_namespaces(monkeypatch):
    """Runs as on a kernel that refuses namespaces: Landlock only, the server's reaper for escapees."""
    monkeypatch.setenv(sandbox.NAMESPACES_ENV, "off")
    assert sandbox.isolation()[0] is None
    # A test before this one may have ended a run without namespaces moments ago: for SWEEP_AFTER_S
    # after that, the reaper kills every escapee, this test's own included (the rule leaked between
    # tests run back to back: a fork-runner's copy was killed as it started). Let that window pass.
    time.sleep(max(0.0, containment._sweep_until - time.monotonic()))


# A fork-runner: the command starts a detached copy of itself (setsid, descriptors closed,
# environment cleared) that forks and exits every `period` seconds, so the newest copy is always a
# fresh orphan; it notes each generation (its namespace and pid) in `folder`/gen. The command
# returns once `generations` have passed, leaving the runner behind (it would run for 120 s).
FORK_RUNNER = textwrap.dedent(
    r"""
    import os, sys, time
    folder, period, generations = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    # "one-zombie-at-a-time": each copy forks its next only once its parent (an orphan's zombie, the
    # server's or the run's init's) is gone, so the count of copies says how many were reaped as they came
    one_at_a_time = sys.argv[4:] == ["one-zombie-at-a-time"]
    gen_file = os.path.join(folder, "gen")
    if os.fork() == 0:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 256)
        os.environ.clear()
        born, n = time.time(), 0
        while time.time() - born < 120:
            parent = os.getpid()
            if os.fork() != 0:
                os._exit(0)  # the parent goes at once: its child is an orphan
            # (the first copy's parent is the foreground's own child, its zombie the foreground's)
            while one_at_a_time and n > 0 and os.path.exists(f"/proc/{parent}") and time.time() - born < 120:
                time.sleep(0.001)
            n += 1
            with open(gen_file + ".tmp", "w") as f:
                f.write(__NOTE__ + f" {n}")
            os.replace(gen_file + ".tmp", gen_file)
            time.sleep(period)
        os._exit(0)
    deadline, n = time.time() + 100, 0
    while time.time() < deadline and n < generations:
        try:
            with open(gen_file) as f:
                n = int(f.read().split()[3])
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.01)
    print(f"left a fork-runner behind at generation {n}", flush=True)
    """
).replace("__NOTE__", NOTE)


def _generation(folder: Path) -> tuple[str, int | None, int]:
    """The fork-runner's last note: its pid namespace, the host's pid of that copy (None: gone), its generation."""
    namespace, pid, started, n = (folder / "gen").read_text().split()
    return namespace, host_pid(f"{namespace} {pid} {started}"), int(n)


def _in_namespace(namespace: str, folder: Path) -> list[int]:
    """Host pids of every process of the run in `folder` that lives in the pid namespace `namespace`
    (zombies included). Its command lines name the folder: the kernel gives a new namespace the lowest
    free inode number, so a run started after this one's ended (another test's) may carry its name."""

    def ours(pid: int | str) -> bool:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return os.fsencode(folder) in f.read()
        except OSError:
            return False

    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/ns/pid") != namespace:
                    continue
                state, parent = psutil.Process(int(entry)).status(), psutil.Process(int(entry)).ppid()
            except (OSError, psutil.Error):
                continue
            if ours(entry) or (state == psutil.STATUS_ZOMBIE and ours(parent)):  # a zombie's own command line is empty
                found.append(int(entry))
    return found


def _server_children() -> list[tuple[int, str, bool]]:
    """This process's (the server's) children: pid, state letter, no_new_privs."""
    return [(pid, *containment._status(pid)) for pid in containment._children("self")]


def _adopted() -> list[int]:
    """Children of the server with no_new_privs that are no command of it: a sealed run's escapees."""
    return [pid for pid, _state, nnp in _server_children() if nnp and pid not in containment._live]


async def _fork_runner_run(folder: Path, period: float, generations: int, *mode: str) -> runner.RunResult:
    script = folder / "fork_runner.py"
    script.write_text(FORK_RUNNER)
    with sandbox.side(folder, folder / "state", "fork-runner") as boundary:
        with anyio.fail_after(GUARD_S * 2):
            return await runner.run([PY, str(script), str(folder), str(period), str(generations), *mode], cwd=folder, timeout_s=GUARD_S * 2, boundary=boundary)


# ---- (b) what a run leaves ends with it -----------------------------------------------------------


@pytest.mark.parametrize("period", [0.1, 0.003], ids=["a05c-every-100ms", "a05-every-3ms"])
async def test_a_reforking_escapee_is_gone_when_the_sealed_command_returns(tmp_path, period):
    _namespaces()
    result = await _fork_runner_run(tmp_path, period, generations=5)
    assert result.ok and "left a fork-runner behind" in result.stdout.tail, (result.status(), result.stderr.tail)
    assert "PID and mount namespaces" in (result.sealed or ""), result.sealed
    # at the very return: nothing of the run's PID namespace lives, the newest copy included, and
    # the server adopted nothing (the kernel ended them, no sweep of the server's)
    namespace, newest, n = _generation(tmp_path)
    assert n >= 5 and newest is None, f"generation {n} of the fork-runner is alive as pid {newest}"
    assert _in_namespace(namespace, tmp_path) == [], "processes of the ended run's namespace live on"
    assert _adopted() == [] and result.killed_pids == []


@pytest.mark.parametrize("period", [0.1, 0.003], ids=["a05c-every-100ms", "a05-every-3ms"])
async def test_without_namespaces_the_reaper_ends_a_reforking_escapee(tmp_path, no_namespaces, period):
    result = await _fork_runner_run(tmp_path, period, generations=5)
    assert result.ok and "left a fork-runner behind" in result.stdout.tail, (result.status(), result.stderr.tail)
    assert "NO namespaces" in (result.sealed or "") and result.sealed.startswith("Landlock"), result.sealed
    with anyio.move_on_after(GUARD_S):
        while _adopted() or _generation(tmp_path)[1] is not None:
            await anyio.sleep(0.1)
    _namespace, newest, n = _generation(tmp_path)
    assert newest is None, f"generation {n} of the fork-runner outlived its sealed run (pid {newest})"
    assert _adopted() == [], "escapees (or their zombies) stay with the server"


# ---- (a) nothing outside the run can be named ------------------------------------------------------

REACH = textwrap.dedent(
    r"""
    import json, os, resource, signal, sys
    def attempt(fn):
        try:
            fn()
            return "done"
        except OSError as exc:
            return exc.strerror
    def write(path, text):
        with open(path, "w") as f:
            f.write(text)
    seen = {"ppid": os.getppid(), "own_pid": os.getpid(), "visible": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
    for name, pid in (("server", int(sys.argv[1])), ("sibling", int(sys.argv[2]))):
        seen[name] = {
            "prlimit_nofile": attempt(lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (40, 40))),
            "prlimit_nproc": attempt(lambda: resource.prlimit(pid, resource.RLIMIT_NPROC, (1, 1))),
            "renice": attempt(lambda: os.setpriority(os.PRIO_PROCESS, pid, 19)),
            # the sibling is sent SIGKILL; the server only signal 0 (a failure must not end the suite)
            "kill": attempt(lambda: os.kill(pid, signal.SIGKILL if name == "sibling" else 0)),
            "autogroup": attempt(lambda: write(f"/proc/{pid}/autogroup", "19")),
            "oom_score_adj": attempt(lambda: write(f"/proc/{pid}/oom_score_adj", "1000")),
        }
    # a04 as staged: the parent it sees is the run's own init, not the server
    seen["parent_prlimit"] = attempt(lambda: resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (40, 40)))
    print(json.dumps(seen))
    """
)

SLEEPER = textwrap.dedent(
    """
    import os, sys, time
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(__NOTE__)
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    stop = sys.argv[2]
    for _ in range(6000):
        if os.path.exists(stop):
            break
        time.sleep(0.01)
    print("sibling finished", flush=True)
    """
).replace("__NOTE__", NOTE)


def _limits(pid: int) -> tuple:
    return (
        resource.prlimit(pid, resource.RLIMIT_NOFILE),
        resource.prlimit(pid, resource.RLIMIT_NPROC),
        os.getpriority(os.PRIO_PROCESS, pid),
        Path(f"/proc/{pid}/oom_score_adj").read_text(),
        Path(f"/proc/{pid}/autogroup").read_text(),
    )


async def test_a_sealed_run_cannot_reach_the_server_or_a_sibling_run(tmp_path):
    _namespaces()
    server = os.getpid()
    sibling_tree, tree = tmp_path / "best", tmp_path / "candidate"
    for folder in (sibling_tree, tree):
        folder.mkdir()
    (sibling_tree / "sleeper.py").write_text(SLEEPER)
    noted, stop = sibling_tree / "pid", sibling_tree / "stop"
    results: dict[str, runner.RunResult] = {}

    async def sibling() -> None:  # BEST's run, say, going on beside the candidate's
        with sandbox.side(sibling_tree, tmp_path / "state", "best") as boundary:
            results["sibling"] = await runner.run([PY, "sleeper.py", str(noted), str(stop)], cwd=sibling_tree, timeout_s=GUARD_S, boundary=boundary)

    with anyio.fail_after(GUARD_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(sibling)
            while not noted.exists():
                await anyio.sleep(0.05)
            sibling_pid = host_pid(noted.read_text())
            assert sibling_pid is not None and sibling_pid != server
            before = {"server": _limits(server), "sibling": _limits(sibling_pid)}
            with sandbox.side(tree, tmp_path / "state", "candidate") as boundary:
                result = await runner.run([PY, "-c", REACH, str(server), str(sibling_pid)], cwd=tree, timeout_s=GUARD_S, boundary=boundary)
            after = {"server": _limits(server), "sibling": _limits(sibling_pid)}
            sibling_alive = psutil.Process(sibling_pid).status() != psutil.STATUS_ZOMBIE
            stop.write_text("")
    assert result.ok, (result.status(), result.stderr.tail)
    seen = json.loads(result.stdout.tail)
    for name in ("server", "sibling"):
        tried = seen[name]
        assert {tried[k] for k in ("prlimit_nofile", "prlimit_nproc", "renice", "kill")} == {"No such process"}, (name, tried)
        assert tried["autogroup"] != "done" and tried["oom_score_adj"] != "done", (name, tried)
    assert after == before, "the sealed run changed the server's or its sibling's limits, priority or scores"
    assert sibling_alive and results["sibling"].ok and "sibling finished" in results["sibling"].stdout.tail
    assert seen["ppid"] == 1 and seen["own_pid"] == 2  # the command's parent is its namespace's init
    assert seen["parent_prlimit"] == "done"  # a04's prlimit(getppid()) lands on that init, not the server
    assert set(seen["visible"]) <= {1, 2, 3}, seen["visible"]  # its /proc shows its own processes only


UNPRIVILEGED = textwrap.dedent(
    r"""
    import json, os, shutil, subprocess, sys
    from pathlib import Path
    from kernel_mcp import runner, sandbox
    tree = Path(sys.argv[1])
    try:  # setpriv may have started this Python where this user could not: the seal must start it too
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(f"this user cannot start {sys.executable}: {exc}")
    neighbour = subprocess.Popen(["sleep", "60"], start_new_session=True)  # another process of this user
    inner = r'''
    import json, os, resource, sys
    seen = {"uid_map": open("/proc/self/uid_map").read().split(), "gid_map": open("/proc/self/gid_map").read().split(),
            "uid": os.getuid(), "gid": os.getgid()}
    visible = [p for p in os.listdir("/proc") if p.isdigit()]
    if os.getpid() == 2 and len(visible) <= 3:  # only where it is contained: the attack renices every process of the user
        try:
            os.setpriority(os.PRIO_USER, 0, 19)
            seen["prio_user"] = "done"
        except OSError as exc:
            seen["prio_user"] = exc.strerror  # its init keeps capabilities the command lacks: refused there only
        seen["own_nice"] = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        resource.prlimit(int(sys.argv[1]), resource.RLIMIT_NOFILE, (40, 40)); seen["prlimit"] = "done"
    except OSError as exc:
        seen["prlimit"] = exc.strerror
    open("made-inside", "w").write("x")
    print(json.dumps(seen))
    '''
    # the command has no capability: where this Python lies out of its reach, the system's runs it
    python = sys.executable if os.access(sys.executable, os.X_OK) else shutil.which("python3", path="/usr/bin:/bin")
    try:
        with sandbox.side(tree, tree / "state", "u") as boundary:
            result = runner.run_sync([python, "-c", inner, str(os.getpid())], cwd=tree, timeout_s=60, boundary=boundary)
        neighbour_nice = os.getpriority(os.PRIO_PROCESS, neighbour.pid)
    finally:
        neighbour.kill()
    print(json.dumps({"sealed": result.sealed, "ok": result.ok, "stderr": result.stderr.tail, "inside": json.loads(result.stdout.tail or "null"),
                      "uid": os.getuid(), "own_nice": os.getpriority(os.PRIO_PROCESS, 0),
                      "neighbour_nice": neighbour_nice, "owner": (tree / "made-inside").stat().st_uid if (tree / "made-inside").exists() else None,
                      "nofile": list(__import__("resource").getrlimit(__import__("resource").RLIMIT_NOFILE))}))
    """
)


def test_an_unprivileged_server_gets_a_user_namespace_mapped_to_itself(tmp_path):
    # A server without privileges (here a uid nobody else uses) makes the run's namespaces inside a
    # user namespace of its own; the uid and gid are mapped to themselves, so files made inside are
    # its own, and setpriority(PRIO_USER) renices only the run's own processes.
    _namespaces()
    if os.getuid() != 0:
        pytest.skip("the rest of this suite already runs as an unprivileged user")
    answer = unprivileged.run_server(UNPRIVILEGED, "kmcp-unpriv-", GUARD_S)
    uid = unprivileged.UID
    assert answer["ok"], answer
    assert "own user, PID and mount namespaces" in answer["sealed"] and "Unix sockets covered" in answer["sealed"], answer["sealed"]
    inside = answer["inside"]
    assert inside["uid_map"] == [str(uid), str(uid), "1"] and inside["gid_map"] == [str(uid), str(uid), "1"], inside
    assert inside["uid"] == uid and answer["owner"] == uid  # files keep their owner
    assert inside["own_nice"] == 19 and inside["prlimit"] == "No such process", inside  # PRIO_USER acted inside
    assert answer["own_nice"] == 0 and answer["neighbour_nice"] == 0, answer  # PRIO_USER reached neither
    assert answer["nofile"] != [40, 40]


# ---- a fork bomb-lite stalls nothing ---------------------------------------------------------------


async def _meanwhile(folder: Path, period: float, generations: int, sealed_others: bool, *mode: str) -> tuple[runner.RunResult, list[runner.RunResult], int]:
    """The fork-runner's run and, beside it, other calls one after the other until it returns.
    Also the largest number of zombies of sealed processes the server adopted, at any look."""
    others: list[runner.RunResult] = []
    most_zombies = 0
    done = anyio.Event()
    out: dict[str, runner.RunResult] = {}

    async def fork_runner() -> None:
        out["r"] = await _fork_runner_run(folder, period, generations, *mode)
        done.set()

    async def other_calls() -> None:
        nonlocal most_zombies
        other = folder / "other"
        other.mkdir()
        while not done.is_set():
            with sandbox.side(other, folder / "state", f"other-{len(others)}") as boundary:
                others.append(
                    await runner.run([PY, "-c", "print('other call answered')"], cwd=other, timeout_s=GUARD_S, boundary=boundary if sealed_others else None)
                )
            # zombies of sealed processes the server adopted (a command's own child, just ended, waits for its runner)
            zombies = [pid for pid, state, nnp in _server_children() if state == "Z" and nnp and pid not in containment._live]
            most_zombies = max(most_zombies, len(zombies))

    with anyio.fail_after(GUARD_S * 3):
        async with anyio.create_task_group() as tg:
            tg.start_soon(fork_runner)
            tg.start_soon(other_calls)
    return out["r"], others, most_zombies


async def test_short_lived_children_by_the_thousand_stall_no_other_call(tmp_path):
    _namespaces()
    result, others, most_zombies = await _meanwhile(tmp_path, 0.003, generations=600, sealed_others=True)
    assert result.ok, (result.status(), result.stderr.tail)
    namespace, newest, n = _generation(tmp_path)
    assert n >= 600 and newest is None and _in_namespace(namespace, tmp_path) == []
    assert others and all(o.ok and "other call answered" in o.stdout.tail for o in others), [o.status() for o in others]
    assert most_zombies == 0  # the run's init reaped them all: none ever became the server's


async def test_without_namespaces_zombies_are_reaped_as_they_come(tmp_path, no_namespaces):
    # the other calls unsealed (the server's own, say): the end of a sealed one would have its
    # escapees swept, and without namespaces the server cannot tell whose the fork-runner is
    # each copy forks its next only once its parent's zombie (the server's: the copies are orphans) is
    # gone, so 200 copies while the command still ran are 200 zombies the reaper took as they came; a
    # sweep at the command's end only (the old way) stalls the chain at its first copy
    result, others, _ = await _meanwhile(tmp_path, 0.003, 200, False, "one-zombie-at-a-time")
    assert result.ok and "at generation 200" in result.stdout.tail, (result.status(), result.stdout.tail, result.stderr.tail)
    assert others and all(o.ok and "other call answered" in o.stdout.tail for o in others), [o.status() for o in others]
    with anyio.move_on_after(GUARD_S):
        while _adopted() or _generation(tmp_path)[1] is not None:
            await anyio.sleep(0.1)
    assert _generation(tmp_path)[1] is None and _adopted() == []


# ---- the command runs as it did ----------------------------------------------------------------------

SHOW = textwrap.dedent(
    r"""
    import json, os, sys
    data = sys.stdin.read()
    with open("/proc/self/environ", "rb") as f:
        env = dict(e.decode().split("=", 1) for e in f.read().split(b"\0") if e)
    fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
    print(json.dumps({"stdin": data, "cwd": os.getcwd(), "env": env, "fds": fds, "argv": sys.argv[1:]}))
    print("to stderr", file=sys.stderr)
    sys.exit(int(sys.argv[1]))
    """
)


async def test_a_sealed_command_keeps_its_pipes_cwd_environment_and_status(tmp_path):
    _namespaces()
    with sandbox.side(tmp_path, tmp_path / "state", "show") as boundary:
        result = await runner.run(
            [PY, "-c", SHOW, "3", "a b", "ü"], cwd=tmp_path, timeout_s=GUARD_S, boundary=boundary, env={"ONE_VAR": "one value"}, stdin_data=b"from stdin"
        )
        expected = runner.build_env({"ONE_VAR": "one value"})
        expected.update(boundary.env)
    assert result.returncode == 3 and result.status() == "exit 3", (result.status(), result.stderr.tail)
    seen = json.loads(result.stdout.tail)
    assert seen["stdin"] == "from stdin" and seen["cwd"] == str(tmp_path) and seen["argv"] == ["3", "a b", "ü"]
    assert "to stderr" in result.stderr.tail
    token = seen["env"].pop(containment.TOKEN_ENV)
    assert token.startswith(containment.SERVER_ID) and seen["env"] == expected  # exactly: nothing added, nothing lost
    assert seen["fds"][:3] == [0, 1, 2] and len(seen["fds"]) == 4  # its pipes, and the folder it listed: no descriptor of the seal


async def test_a_signal_a_timeout_and_a_missing_program_end_a_sealed_command_as_before(tmp_path):
    _namespaces()
    with sandbox.side(tmp_path, tmp_path / "state", "ends") as boundary:
        killed = await runner.run([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGUSR1)"], cwd=tmp_path, timeout_s=GUARD_S, boundary=boundary)
        sleeper = tmp_path / "sleeper.py"
        sleeper.write_text(SLEEPER)
        with anyio.fail_after(GUARD_S):
            timed = await runner.run([PY, str(sleeper), str(tmp_path / "pid"), str(tmp_path / "never")], cwd=tmp_path, timeout_s=2, boundary=boundary)
        with pytest.raises(CommandFailed, match="could not start"):
            await runner.run([str(tmp_path / "no-such-program")], cwd=tmp_path, timeout_s=GUARD_S, boundary=boundary)
        script = tmp_path / "relative.sh"
        script.write_text("#!/bin/sh\necho relative ran\n")
        script.chmod(0o755)
        relative = await runner.run(["./relative.sh"], cwd=tmp_path, timeout_s=GUARD_S, boundary=boundary)  # from cwd, not the server's
    assert killed.returncode == -signal.SIGUSR1 and killed.status() == f"killed by signal {int(signal.SIGUSR1)}"
    assert not list(tmp_path.glob("core*"))  # the seal's own re-raise dumps no core
    assert timed.timed_out and "timed out" in timed.status()
    assert relative.ok and "relative ran" in relative.stdout.tail, (relative.status(), relative.stderr.tail)
    assert host_pid((tmp_path / "pid").read_text()) is None


def test_a_seal_that_cannot_enter_its_domain_runs_nothing(tmp_path):
    # seal.py given a descriptor that is no Landlock ruleset: refused, exit 126, the command never ran
    isolation = _namespaces()
    marker = tmp_path / "ran"
    argv = [
        sys.executable,
        "-I",
        "-S",
        "-B",
        str(sandbox.SEAL_PROGRAM),
        "run",
        "0",
        "2",
        "1" if isolation.user else "0",
        "1" if isolation.proc else "0",
        shutil.which("touch") or "/usr/bin/touch",
        str(marker),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=GUARD_S, check=False)
    assert done.returncode == sandbox.EXIT_NOT_SEALED and "could not seal" in done.stderr, (done.returncode, done.stderr)
    assert not marker.exists()


# ---- what the answers say ----------------------------------------------------------------------------


async def test_without_namespaces_the_runs_and_doctor_say_what_is_missing(workspace, no_namespaces):
    from conftest import call
    from mcp import Client

    from kernel_mcp.server import build_server

    tree = workspace.parent / "tree"
    tree.mkdir()
    with sandbox.side(tree, workspace.parent / "state", "fallback") as boundary:
        result = await runner.run([PY, "-c", "open('/etc/kmcp-probe', 'w')"], cwd=tree, timeout_s=GUARD_S, boundary=boundary)
    assert result.returncode != 0 and "Permission denied" in result.stderr.tail  # Landlock still holds
    assert result.sealed.startswith("Landlock ABI") and "NO namespaces" in result.sealed and "prlimit" in result.sealed
    async with Client(build_server(workspace)) as client:
        doctor = await call(client, "doctor")
    assert "NO namespaces" in doctor["boundary"]
    assert any("no namespaces of their own" in note for note in doctor["notes"]), doctor["notes"]
