"""The one way kernel-mcp runs an external program.

Every compiler, profiler, monitor and benchmark goes through `run`: an argument vector (never a
shell string), a timeout after which the whole process group is killed (and any descendant that
left the group), output streamed to disk up to a cap while only a bounded tail stays in memory,
and an explicit environment. Cancellation (the MCP client cancelling the request) kills the
process tree the same way as a timeout.

Containment (see `containment`): each command runs in its own session with a unique token in its
environment; at a timeout, a cancel or the command's exit every process carrying the token is
killed too, so a double-forked `setsid` daemon cannot outlive its command. After the kill the
runner waits on the pipes only briefly: a process out of reach that still holds them gets the
pipes closed under it, and the answer says so. Commands die with the server (PR_SET_PDEATHSIG for
the direct child, and a watchdog that sweeps the server's tokens when the server goes).

A sealed command (workspace code, `boundary`) runs inside namespaces of its own where the kernel
allows them (sandbox.py, seal.py): the process the runner starts is seal.py, and when the command
ends its PID namespace ends with it, so nothing of it is left for the token sweep to find.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from kernel_mcp import containment, sandbox
from kernel_mcp.errors import CommandFailed

ProgressFn = Callable[[float, float | None, str], Awaitable[None]]

DEFAULT_LOG_CAP = 256 * 1024 * 1024  # bytes kept on disk per stream; beyond this the log is cut
DEFAULT_TAIL = 64 * 1024  # bytes of each stream kept in memory for the answer
KILL_GRACE_S = 2.0  # SIGTERM first, so a benchmark can flush; SIGKILL after this
TREE_POLL_S = 0.5  # how often the process tree is snapshotted while a command runs
PIPE_GRACE_S = 2.0  # after the kill, how long the output may still drain before the pipes are dropped
_CHUNK = 64 * 1024


@dataclass
class StreamCapture:
    """One output stream: its total size, the tail in memory, and the log on disk (if any)."""

    tail_limit: int
    log_path: Path | None
    log_cap: int
    total_bytes: int = 0
    logged_bytes: int = 0
    _tail: bytearray = field(default_factory=bytearray)

    def feed(self, chunk: bytes, log) -> None:
        self.total_bytes += len(chunk)
        if log is not None and self.logged_bytes < self.log_cap:
            part = chunk[: self.log_cap - self.logged_bytes]
            log.write(part)
            self.logged_bytes += len(part)
        self._tail += chunk
        if len(self._tail) > 2 * self.tail_limit:
            del self._tail[: len(self._tail) - self.tail_limit]

    @property
    def tail(self) -> str:
        return bytes(self._tail[-self.tail_limit :]).decode("utf-8", errors="replace")

    @property
    def cut_on_disk(self) -> bool:
        return self.total_bytes > self.logged_bytes and self.log_path is not None


@dataclass
class RunResult:
    argv: list[str]
    cwd: str
    returncode: int | None
    timed_out: bool
    duration_s: float
    stdout: StreamCapture
    stderr: StreamCapture
    killed_pids: list[int] = field(default_factory=list)
    pipes_abandoned: bool = False  # a process out of reach kept the output open; reading stopped
    sealed: str | None = None  # the boundary it ran in ("Landlock ABI 7"), None when it ran unsealed
    limit_s: float | None = None  # the time limit it ran under

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def status(self) -> str:
        dropped = "; output pipes closed unread (a process out of reach held them)" if self.pipes_abandoned else ""
        if self.timed_out:
            limit = f" at its {self.limit_s:g} s limit" if self.limit_s is not None else ""
            return f"timed out{limit} (process tree killed)" + dropped
        if self.returncode is None:
            return "no exit status" + dropped
        if self.returncode < 0:
            return f"killed by signal {-self.returncode}" + dropped
        return f"exit {self.returncode}" + dropped


def resolve_executable(name: str, search_path: str | None = None) -> str:
    """Return the absolute path of `name`, or raise CommandFailed naming what is missing."""
    found = shutil.which(name, path=search_path)
    if found is None:
        raise CommandFailed(f"executable not found: {name}", hint="install it or put it on PATH")
    return found


# The server's own secrets: no command it runs has any use for them, and workspace code must not
# be able to call the server back with them.
SERVER_SECRETS = ("KERNEL_MCP_HTTP_TOKEN",)


def build_env(overrides: Mapping[str, str] | None = None, inherit: bool = True) -> dict[str, str]:
    env = dict(os.environ) if inherit else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for name in SERVER_SECRETS:
        env.pop(name, None)
    if overrides:
        for key, value in overrides.items():
            env[str(key)] = str(value)
    return env


def command_env(env: Mapping[str, str] | None, boundary: sandbox.Boundary | None, inherit: bool = True) -> dict[str, str]:
    """A command's whole environment: `env` over the server's, the boundary's temporary folders and
    caches, and a fresh containment token (every run of workspace code, forked or started, has one)."""
    full_env = build_env(env, inherit)
    if boundary is not None:
        full_env.update(boundary.env)
    full_env[containment.TOKEN_ENV] = containment.new_token()
    return full_env


def captures(log_dir: Path | None, log_name: str, tail_bytes: int = DEFAULT_TAIL, log_cap: int = DEFAULT_LOG_CAP) -> tuple[StreamCapture, StreamCapture]:
    """A command's stdout and stderr captures, logged as `log_name`.std{out,err}.log in `log_dir` (made here)."""
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
    return (
        StreamCapture(tail_bytes, log_dir / f"{log_name}.stdout.log" if log_dir else None, log_cap),
        StreamCapture(tail_bytes, log_dir / f"{log_name}.stderr.log" if log_dir else None, log_cap),
    )


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _group_members(pgid: int) -> list[psutil.Process]:
    """Processes still in the group: after the leader exits, its children are re-parented away."""
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.pid != os.getpid():
                members.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return members


class _Tree:
    """Every process seen under the command, so that none escapes the kill (not even via setsid)."""

    def __init__(self, pid: int, token: str, sweep: bool = True) -> None:
        self.pid = pid
        self.token = token
        self.sweep = sweep  # scan every process for the token (workspace code); off for the server's own git
        self.seen: dict[int, psutil.Process] = {}

    def refresh(self) -> None:
        for proc in _descendants(self.pid):
            self.seen.setdefault(proc.pid, proc)

    def group_exists(self) -> bool:
        try:
            os.killpg(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def tracked_alive(self) -> list[psutil.Process]:
        alive = []
        for proc in self.seen.values():
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except psutil.Error:
                continue
        return alive

    def alive(self) -> list[psutil.Process]:
        """Everything of the command still running: descendants, the group, and the token's carriers
        (a scan of every process's environment, so only when the command ends, not at each poll)."""
        self.refresh()
        if self.group_exists():
            for proc in _group_members(self.pid):
                self.seen.setdefault(proc.pid, proc)
        if self.sweep:
            for proc in containment.carriers(self.token):
                self.seen.setdefault(proc.pid, proc)
        return self.tracked_alive()

    def signal(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for proc in self.alive():  # descendants that moved to their own session or group
            try:
                proc.send_signal(sig)
            except psutil.Error:
                pass


async def _kill_tree(proc: asyncio.subprocess.Process, tree: _Tree) -> list[int]:
    """SIGTERM the process, its group and every descendant seen; SIGKILL what remains; return the pids."""
    tree.refresh()
    pids = [proc.pid] + [p.pid for p in tree.tracked_alive()]
    tree.signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
    except asyncio.TimeoutError:
        pass
    # Rounds of SIGKILL until nothing carries the token: a daemon may fork again while we sweep.
    deadline = time.monotonic() + KILL_GRACE_S
    while True:
        alive = tree.alive()
        pids += [p.pid for p in alive if p.pid not in pids]
        if not alive or time.monotonic() > deadline:
            break
        tree.signal(signal.SIGKILL)
        await asyncio.sleep(0.05)  # on the loop, not psutil.wait_procs, so other calls go on
    if proc.returncode is None:
        await proc.wait()
    return pids


async def _drain_or_drop(proc: asyncio.subprocess.Process, pumps: Sequence[asyncio.Future]) -> bool:
    """Let the output drain briefly; if something still holds the pipes, stop reading them.

    Returns whether the pipes were dropped unread."""
    _done, pending = await asyncio.wait(pumps, timeout=PIPE_GRACE_S)
    if not pending:
        return False
    for p in pending:
        p.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    _close_pipes(proc)
    return True


def _close_pipes(proc: asyncio.subprocess.Process) -> None:
    # asyncio gives no public way to close a subprocess's pipes; the transport owns them.
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


async def pump(stream: asyncio.StreamReader, capture: StreamCapture) -> None:
    log = open(capture.log_path, "wb") if capture.log_path is not None else None
    try:
        while True:
            chunk = await stream.read(_CHUNK)
            if not chunk:
                break
            capture.feed(chunk, log)
    finally:
        if log is not None:
            if capture.total_bytes > capture.logged_bytes:
                log.write(f"\n[kernel-mcp: log cut at {capture.logged_bytes} bytes; the stream wrote {capture.total_bytes} bytes]\n".encode())
            log.close()


async def run(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    log_dir: Path | None = None,
    log_name: str = "command",
    log_cap: int = DEFAULT_LOG_CAP,
    tail_bytes: int = DEFAULT_TAIL,
    progress: ProgressFn | None = None,
    progress_every_s: float = 5.0,
    stdin_data: bytes | None = None,
    boundary: sandbox.Boundary | None = None,
    sweep: bool = True,
    pass_fds: Sequence[int] = (),
) -> RunResult:
    """Run `argv` without a shell; see the module docstring for the guarantees. With a `boundary`
    (workspace code), the command and everything it starts may write only where it says, when the
    kernel can seal runs here; `RunResult.sealed` says whether it did. `pass_fds` stay open in the
    command (the fork server's control socket)."""
    argv = [str(a) for a in argv]
    if not argv:
        raise CommandFailed("empty command")
    full_env = command_env(env, boundary, inherit_env)
    executable = argv[0]
    if os.sep not in executable:
        executable = resolve_executable(executable, full_env.get("PATH"))
    out, err = captures(log_dir, log_name, tail_bytes, log_cap)
    token = full_env[containment.TOKEN_ENV]
    containment.ensure_watchdog()
    sealing = _sealing(boundary)
    namespaced = sealing is not None and sealing.isolation is not None
    escapable = sealing is not None and not namespaced  # its escapees are the server's to find
    if escapable:
        containment.become_subreaper()
    spawn = [executable, *argv[1:]]
    if sealing is not None:
        if namespaced:
            _check_startable(os.path.join(os.fspath(cwd), executable), argv[0], sealing)  # a relative path: from cwd, as exec takes it
        spawn = sealing.argv(executable, argv[1:])
    spawn, hook = containment.tied_spawn(spawn, os.fspath(cwd), sealing.hook() if sealing else None, no_new_privs=namespaced)
    started = time.monotonic()
    containment.spawning(sealing is not None)
    try:
        proc = await asyncio.create_subprocess_exec(
            *spawn,
            cwd=os.fspath(cwd),
            env=full_env,
            stdin=asyncio.subprocess.PIPE if stdin_data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group, so the whole tree can be killed
            preexec_fn=hook,
            pass_fds=((sealing.fd,) if sealing else ()) + tuple(pass_fds),
        )
    except BaseException as exc:
        containment.started(None, sealed=sealing is not None)
        if isinstance(exc, OSError):
            raise CommandFailed(f"could not start {argv[0]}: {exc.strerror or exc}") from exc
        raise
    finally:
        if sealing is not None:
            sealing.close()  # the child holds its own copy
    containment.started(proc.pid, escapable, sealed=sealing is not None)

    assert proc.stdout is not None and proc.stderr is not None  # both are pipes (above)
    pumps = [asyncio.ensure_future(pump(proc.stdout, out)), asyncio.ensure_future(pump(proc.stderr, err))]
    if stdin_data is not None and proc.stdin is not None:
        proc.stdin.write(stdin_data)
        proc.stdin.close()
    timed_out = False
    abandoned = False
    killed: list[int] = []
    tree = _Tree(proc.pid, token, sweep and not namespaced)  # a namespace's processes end with it: no scan
    try:
        deadline = started + timeout_s
        next_progress = started + progress_every_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            try:
                await asyncio.wait_for(asyncio.shield(proc.wait()), min(remaining, TREE_POLL_S))
                break
            except asyncio.TimeoutError:
                tree.refresh()
                if progress is not None and time.monotonic() >= next_progress:
                    next_progress += progress_every_s
                    elapsed = time.monotonic() - started
                    await progress(elapsed, timeout_s, f"{argv[0]} running for {elapsed:.0f} s")
        if timed_out:
            killed = await _kill_tree(proc, tree)
        else:
            # The main process exited; a leftover child that keeps the pipes open must not hold us.
            await asyncio.wait(pumps, timeout=KILL_GRACE_S)
            if not all(p.done() for p in pumps) or tree.alive():
                killed = await _kill_tree(proc, tree)
        abandoned = await _drain_or_drop(proc, pumps)
        for p in pumps:
            if p.done() and not p.cancelled() and (error := p.exception()) is not None:
                raise error
    except BaseException:
        # Cancelled (the client gave up) or anything unexpected: leave no process behind.
        await asyncio.shield(_kill_tree(proc, tree))
        for p in pumps:
            p.cancel()
        _close_pipes(proc)  # a process out of the token's reach may still hold them
        raise
    finally:
        for p in pumps:
            if not p.done():
                p.cancel()
        escaped = containment.ended(proc.pid, escapable)
    killed += [pid for pid in escaped if pid not in killed]
    return RunResult(
        argv=argv,
        cwd=os.fspath(cwd),
        returncode=proc.returncode,
        timed_out=timed_out,
        duration_s=time.monotonic() - started,
        stdout=out,
        stderr=err,
        killed_pids=killed,
        pipes_abandoned=abandoned,
        sealed=sandbox.mechanism() if sealing is not None else None,
        limit_s=timeout_s,
    )


def _sealing(boundary: sandbox.Boundary | None) -> sandbox.Sealing | None:
    """The Landlock ruleset for a run of workspace code, where this kernel can seal runs."""
    if boundary is None or sandbox.available() is not None:
        return None
    try:
        return sandbox.Sealing(boundary)
    except OSError as exc:
        raise CommandFailed(f"could not seal the run: {exc.strerror or exc}", hint="a folder the run may write is missing or unreadable") from exc


def _check_startable(executable: str, name: str, sealing: sandbox.Sealing) -> None:
    """seal.py starts the command, so a command that cannot start is refused here, as the kernel
    would refuse it to the runner without seal.py (else it would end as exit 127 of the run)."""
    problem = None
    if not os.path.exists(executable):
        problem = os.strerror(errno.ENOENT)
    elif os.path.isdir(executable) or not os.access(executable, os.X_OK, effective_ids=True):
        problem = os.strerror(errno.EACCES)
    if problem is not None:
        sealing.close()
        raise CommandFailed(f"could not start {name}: {problem}")


def run_sync(argv: Sequence[str], **kwargs) -> RunResult:
    """`run` for callers outside an event loop (the CLI, scripts)."""
    return asyncio.run(run(argv, **kwargs))
