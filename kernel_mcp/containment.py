"""Keeping every process a command starts within reach, and ending them with the server.

A command runs in its own session, but a session is no fence: a benchmark can double-fork a
`setsid` daemon that leaves both the group and the parent chain before the runner's next look.
What such a process keeps is its environment, so every command gets a unique token in
`KERNEL_MCP_RUN_TOKEN` (`<server id>.<run id>`) and the runner finds what it started by reading
the environments of this user's processes. This is the fallback the issue names for machines
where the server cannot create cgroups (cgroup v1, or v2 without delegation): a process that
clears its own environment (`env -i`) can still hide from it.

The server's commands die with the server two ways: the direct child asks the kernel for SIGKILL
when the server goes (PR_SET_PDEATHSIG), and a watchdog process, started with the first command,
holds the read end of a pipe whose write end only the server holds. When the server exits or is
killed with SIGKILL the pipe reaches EOF and the watchdog kills every process carrying this
server's token, daemons included, then exits.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable

import psutil

from kernel_mcp.sandbox import LIBC

TOKEN_ENV = "KERNEL_MCP_RUN_TOKEN"
SERVER_ID = uuid.uuid4().hex  # one per server process; a command's token starts with it

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def new_token() -> str:
    return f"{SERVER_ID}.{uuid.uuid4().hex}"


def carriers(token_prefix: str) -> list[psutil.Process]:
    """Live processes of this user whose environment carries a token starting with `token_prefix`."""
    me, uid = os.getpid(), os.getuid()
    found = []
    for proc in psutil.process_iter(["uids"]):
        try:
            uids = proc.info["uids"]
            if proc.pid == me or uids is None or uids.real != uid:
                continue
            value = proc.environ().get(TOKEN_ENV)
            if value and value.startswith(token_prefix) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue  # gone meanwhile, or a kernel thread without an environment
    return found


# the C library sandbox.py loads once, before any fork: the preexec hook must not load libraries
_prctl: Callable[..., int] | None = getattr(LIBC, "prctl", None)


# util-linux's setpriv, where the machine has it (resolved once, from the server's own PATH)
_SETPRIV = shutil.which("setpriv")


def tied_spawn(argv: list[str], cwd: str, then: Callable[[], None] | None, *, no_new_privs: bool = False) -> tuple[list[str], Callable[[], None] | None]:
    """The command line and preexec function that start `argv` tied to the server (SIGKILL when it
    goes), with `then` run in the child before exec; `no_new_privs`: `then` does no more than set
    no_new_privs (a sealed run's start with namespaces: sandbox.Sealing.hook).

    Where nothing else must run in the child, `setpriv --pdeathsig KILL [--no-new-privs] --` does it
    and execs the command in the same process (a setpriv that cannot set no_new_privs exits without
    running it), and the server passes no preexec function: Python's
    subprocess then starts the child with vfork. A preexec function makes it fork instead, which
    copies the server's page tables only for exec to drop them; for git, which the ledger calls about
    fifty times an evaluation, that was most of a call's cost (runner.run of `git rev-parse` 9 ms
    against 2.5 ms for the bare process, measured here). setpriv cannot check, as child_hook does,
    that the server still lived when it asked: a server that dies in that moment leaves the command
    to the watchdog, as it leaves daemons. A command that is no executable file is started the old
    way, so that its error stays the server's own ("could not start ...") and not setpriv's."""
    program = os.path.join(cwd, argv[0])  # a relative path: from cwd, as exec takes it
    if (then is None or no_new_privs) and _SETPRIV is not None and _prctl is not None and os.path.isfile(program) and os.access(program, os.X_OK):
        return [_SETPRIV, "--pdeathsig", "KILL", *(["--no-new-privs"] if no_new_privs else []), "--", *argv], None
    return argv, child_hook(then)


def child_hook(then: Callable[[], None] | None = None) -> Callable[[], None] | None:
    """A preexec function for the direct child: SIGKILL when the server process goes, then `then`
    (entering the run's boundary), both in the forked child before exec.

    The kernel ties the signal to the thread that forked; the runner forks from the event loop's
    thread, which lives as long as the server."""
    if _prctl is None:
        return then
    parent = os.getpid()
    prctl = _prctl

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the server died between fork and prctl
            os._exit(137)
        if then is not None:
            then()

    return hook


# The watchdog is self-contained (only psutil) so that it runs even if the package moves meanwhile.
_WATCHDOG = r"""
import os, sys, time, psutil
prefix, name, uid, server = sys.argv[1], sys.argv[2], os.getuid(), int(sys.argv[3])
try:
    while os.read(0, 4096):
        pass
except OSError:
    pass
# The pipe's end is no proof that the server went: a stray close of its end in the server (a double
# close elsewhere in the process) ends it too, and sweeping then killed the live runs of a live server
# ("killed by signal 9"). The server is gone once this process is no longer its child.
while os.getppid() == server:
    time.sleep(0.2)
quiet = 0
for _ in range(200):
    found = 0
    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.info["uids"] is None or proc.info["uids"].real != uid or proc.pid == os.getpid():
                continue
            if proc.environ().get(name, "").startswith(prefix):
                proc.kill()
                found += 1
        except psutil.Error:
            pass
    quiet = quiet + 1 if not found else 0
    if quiet >= 3:
        break
    time.sleep(0.05)
"""

_watchdog_lock = threading.Lock()
_watchdog: tuple[subprocess.Popen, int] | None = None


def ensure_watchdog() -> None:
    """Start this server's watchdog once; it lives until the server's end, however it comes."""
    global _watchdog
    with _watchdog_lock:
        if _watchdog is not None and _watchdog[0].poll() is None:
            return
        read_end, write_end = os.pipe()  # not inheritable: no command may hold the server's end
        env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}  # it must not sweep itself
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", _WATCHDOG, SERVER_ID + ".", TOKEN_ENV, str(os.getpid())],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd="/",
                start_new_session=True,  # out of reach of any group kill
            )
        except OSError:
            os.close(write_end)
            return  # without it the token sweep at each command's end still runs
        finally:
            os.close(read_end)
        _watchdog = (proc, write_end)


# ---- sealed runs' escaped processes, where runs get no namespaces -----------------------------
# A run with namespaces of its own (sandbox.isolation) leaves nothing: its PID namespace dies with
# its command. Without them: a sealed command runs with no_new_privs, which it and everything it
# starts keep for good, and the server becomes a child subreaper, so a process that double-forks and
# clears its environment (out of the token's reach) is re-parented to the server, not to init. Any
# child of the server with no_new_privs that is not a command still running is such an escapee.
# A reaper thread reaps those that end as they end (a fork-runner that re-forks every few ms leaves
# a zombie each time: they never pile up for the event loop to wade through), and kills the live
# ones, with all they started, whenever no sealed command runs, and for SWEEP_AFTER_S after each
# sealed command's end even while others run (rounds: a fork-runner's newest copy is found by the
# next round). It reads only the server's own children lists and each child's status: no /proc scan.
SWEEP_AFTER_S = 2.0
REAP_BUSY_S, REAP_IDLE_S = 0.01, 0.25  # the reaper's pause after a round that found escapees / none
_lock = threading.Lock()
_live: dict[int, bool] = {}  # direct children of commands still running -> whether sealed without namespaces
_spawning = 0  # sealed commands between fork and `started`: their child (no_new_privs already) is not in
# _live yet and would look like an escapee, so no round then (an unsealed child never has no_new_privs)
_sweep_until = 0.0
_subreaper = False
_wake = threading.Event()


def _status(pid: int | str) -> tuple[str, bool]:
    """A process's state letter ('Z': a zombie) and whether it has no_new_privs; ('', False) if gone."""
    state, nnp = "", False
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("State:"):
                    state = line.split()[1]
                elif line.startswith("NoNewPrivs:"):
                    nnp = line.split()[1] == "1"
                    break
    except OSError:
        pass
    return state, nnp


def _no_new_privs(pid: int | str) -> bool:
    return _status(pid)[1]


def _children(pid: int | str) -> list[int]:
    """Direct children of `pid`, from its threads' children lists (no scan of every process)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                found += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended meanwhile
            try:  # a kernel without the children lists
                return [c.pid for c in psutil.Process(int(pid)).children()]
            except psutil.Error:
                return []
        except (OSError, ValueError):
            continue
    return found


def become_subreaper() -> bool:
    """Make the server adopt its commands' orphans, and start the reaper (once; a no-op where the
    server itself already runs with no_new_privs, since then no child could be told apart)."""
    global _subreaper
    with _lock:
        if not _subreaper and _prctl is not None and not _no_new_privs("self"):
            _subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            if _subreaper:
                threading.Thread(target=_reaper, name="kernel-mcp-reaper", daemon=True).start()
    return _subreaper


def spawning(sealed: bool = True) -> None:
    global _spawning
    with _lock:
        _spawning += sealed


def started(pid: int | None, escapable: bool = False, sealed: bool = True) -> None:
    """The command's direct child is `pid` (None: it never started); `escapable`: a sealed command
    without namespaces, whose escapees the server adopts; `sealed` as told to `spawning`."""
    global _spawning
    with _lock:
        _spawning -= sealed
        if pid is not None:
            _live[pid] = escapable


def ended(pid: int, escapable: bool) -> list[int]:
    """The command `pid` ended: after a sealed one without namespaces, kill its escapees now adopted
    by the server (one round here, more by the reaper), and return their pids."""
    global _sweep_until
    with _lock:
        _live.pop(pid, None)
        if not escapable or not _subreaper:
            return []
        _sweep_until = time.monotonic() + SWEEP_AFTER_S
    killed, _ = sweep()
    _wake.set()
    return killed


def sweep() -> tuple[list[int], int]:
    """One round: reap the escapees that ended; kill the live ones (and what they started) when no
    sealed command without namespaces runs, or just after one ended. Returns (killed, reaped)."""
    killed: list[int] = []
    reaped = 0
    with _lock:
        if not _subreaper or _spawning:
            return killed, reaped  # a child forked but not yet known would look like an escapee
        kill = time.monotonic() < _sweep_until or not any(_live.values())
        watchdog = _watchdog[0].pid if _watchdog is not None else None
        for child in _children("self"):
            if child in _live or child == watchdog:
                continue
            state, nnp = _status(child)
            if not nnp:
                continue
            if state != "Z" and kill:
                killed += _kill_family(child)
                state = _status(child)[0]
            if state == "Z":
                try:
                    if os.waitpid(child, os.WNOHANG)[0]:
                        reaped += 1
                except ChildProcessError:
                    pass
    return killed, reaped


def _kill_family(pid: int) -> list[int]:
    """SIGKILL `pid` and its descendants (found through the children lists)."""
    killed: list[int] = []
    todo = [pid]
    while todo and len(killed) < 100_000:
        current = todo.pop()
        try:
            os.kill(current, signal.SIGKILL)
            killed.append(current)
        except (ProcessLookupError, PermissionError):
            continue
        todo += _children(current)
    return killed


def _reaper() -> None:
    while True:
        try:
            killed, reaped = sweep()
        except (OSError, ValueError, psutil.Error):  # never let the reaper die of one odd /proc entry
            killed, reaped = [], 0
        _wake.wait(REAP_BUSY_S if killed or reaped else REAP_IDLE_S)
        _wake.clear()
