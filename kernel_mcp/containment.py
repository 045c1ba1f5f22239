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
prefix, name, uid = sys.argv[1], sys.argv[2], os.getuid()
try:
    while os.read(0, 4096):
        pass
except OSError:
    pass
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
                [sys.executable, "-c", _WATCHDOG, SERVER_ID + ".", TOKEN_ENV],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=env, cwd="/", start_new_session=True,  # out of reach of any group kill
            )
        except OSError:
            os.close(write_end)
            return  # without it the token sweep at each command's end still runs
        finally:
            os.close(read_end)
        _watchdog = (proc, write_end)


# ---- sealed runs' escaped processes ---------------------------------------------------------
# A sealed command runs with no_new_privs, which it and everything it starts keep for good, and
# the server becomes a child subreaper: a process that double-forks and clears its environment
# (out of the token's reach) is re-parented to the server, not to init. So after a sealed command
# ends, any child of the server with no_new_privs that is not a command still running is such an
# escapee, and is killed with what it started.
_live: set[int] = set()  # direct children of commands still running
_spawning = 0  # commands between fork and `started`: their child is not in _live yet, so no sweep then
_subreaper = False


def _no_new_privs(pid: int | str) -> bool:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            return any(line.startswith("NoNewPrivs:") and line.split()[1] == "1" for line in status)
    except OSError:
        return False


def become_subreaper() -> bool:
    """Make the server adopt its commands' orphans (once; a no-op where the server itself already
    runs with no_new_privs, since then no child could be told apart)."""
    global _subreaper
    if not _subreaper and _prctl is not None and not _no_new_privs("self"):
        _subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _subreaper


def spawning() -> None:
    global _spawning
    _spawning += 1


def started(pid: int | None) -> None:
    """The command's direct child is `pid` (None: it never started)."""
    global _spawning
    _spawning -= 1
    if pid is not None:
        _live.add(pid)


def ended(pid: int, sealed: bool) -> list[int]:
    """The command `pid` ended: after a sealed one, kill and reap the sealed escapees now adopted by
    the server (only a sealed command can leave one, so the server's own commands skip the scan)."""
    _live.discard(pid)
    if not sealed or not _subreaper or _spawning:
        return []  # a child forked but not yet known would look like an escapee: the next command's end sweeps
    watchdog = _watchdog[0].pid if _watchdog is not None else None
    killed = []
    try:
        children = psutil.Process().children()
    except psutil.Error:
        return []
    for child in children:
        if child.pid in _live or child.pid == watchdog or not _no_new_privs(child.pid):
            continue
        try:
            family = [child, *child.children(recursive=True)]
        except psutil.Error:
            family = [child]
        for proc in family:
            try:
                proc.kill()
                killed.append(proc.pid)
            except psutil.Error:
                pass
        _reap(child.pid)
    return killed


def _reap(pid: int, wait_s: float = 1.0) -> None:
    """The server is the killed escapee's parent now: reap it, or it stays a zombie (briefly polled:
    a process stuck in the kernel is left, never waited on)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done or time.monotonic() > deadline:
            return
        time.sleep(0.01)
