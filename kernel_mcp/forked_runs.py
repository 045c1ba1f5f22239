"""Runs of a Python benchmark forked from a process that imported its heavy modules once.

`[benchmark] preload = ["torch"]` names modules every run of the benchmark imports. For each side of a
measurement (BEST's tree, the candidate's) the runner starts forkserver.py once, sealed exactly as a
run of that side would be (its tree, its private folder, namespaces of its own), with the benchmark's
interpreter; it imports those modules, and each run is then a fork of it that runs the script. A run
is still a fresh process with nothing of the previous run alive (the fork server kills and reaps every
process a run left before it answers), and BEST's and the candidate's fork servers are in separate
namespaces and Landlock domains, as their runs always were.

What a run costs the server to start is unchanged; what it no longer pays is the import, seconds of
a PyTorch benchmark's run. The fork server is used only where runs get PID namespaces of their own
(where they do not, kill(-1) could not be confined to the run): elsewhere the runs start plainly and
`unavailable()` says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import socket
import struct
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from kernel_mcp import runner, sandbox
from kernel_mcp.errors import CommandFailed

PROGRAM = Path(__file__).with_name("forkserver.py")
HEADER = struct.Struct(">I")
MAX_ANSWER = 64 * 1024
CLOSE_GRACE_S = 5.0  # after the control socket closes, the fork server ends at once; then it is killed


def unavailable() -> str | None:
    """Why runs cannot be forked from a fork server here, or None when they can."""
    why = sandbox.available()
    if why:
        return f"runs are not sealed here ({why})"
    iso, missing = sandbox.isolation()
    if iso is None:
        return f"runs get no PID namespace of their own here ({missing})"
    return None


def script_of(command: Sequence[str]) -> str | None:
    """The script of a `python script.py args` command, or None for any other shape."""
    if len(command) < 2 or not os.path.basename(command[0]).startswith("python"):
        return None
    return command[1] if command[1].endswith(".py") and not command[1].startswith("-") else None


def _same(protocol: asyncio.StreamReaderProtocol) -> asyncio.StreamReaderProtocol:
    return protocol


def _exit_code(answer: dict | None) -> int | None:
    """The run's exit code (negative: the signal that ended it) from an answer's wait status; None
    for no answer, or a status no ended process has."""
    status = (answer or {}).get("status")
    if not isinstance(status, int) or isinstance(status, bool) or not 0 <= status <= 0xFFFF:
        return None
    try:
        return os.waitstatus_to_exitcode(status)
    except ValueError:  # stopped, not ended
        return None


class ForkServer:
    """One side's fork server: started at its first run, ended by `close`."""

    def __init__(self, command: Sequence[str], modules: Sequence[str], *, cwd: Path, boundary: sandbox.Boundary, log_dir: Path, log_name: str) -> None:
        script = script_of(command)
        if script is None:
            raise CommandFailed(f"[benchmark] preload needs a command of the form python script.py ...; got {list(command)[:2]}")
        self.command, self.modules, self.cwd, self.boundary = list(command), list(modules), cwd, boundary
        self.log_dir, self.log_name = log_dir, log_name
        self.script_dir = os.path.dirname(os.path.realpath(cwd / script))
        self.control: socket.socket | None = None
        self.task: asyncio.Task[runner.RunResult] | None = None
        self.ready: dict = {}

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done() and self.control is not None

    async def start(self, env: Mapping[str, str] | None, timeout_s: float) -> None:
        """Start the fork server and wait until its modules are imported (CommandFailed with its
        reason when it cannot)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        theirs.set_inheritable(True)
        source = PROGRAM.read_text(encoding="utf-8")
        writable = json.dumps([os.fspath(folder) for folder in (*self.boundary.writable, *sandbox.ALWAYS_WRITABLE, sandbox.DEV)])  # /dev/shm among them
        argv = [self.command[0], "-c", source, str(theirs.fileno()), self.script_dir, writable, *self.modules]
        self.task = asyncio.ensure_future(
            runner.run(
                argv,
                cwd=self.cwd,
                timeout_s=24 * 3600,  # each run has its own limit (run); close() ends the server
                env=env,
                log_dir=self.log_dir,
                log_name=self.log_name,
                boundary=self.boundary,
                pass_fds=(theirs.fileno(),),
            )
        )
        ours.setblocking(False)
        self.control = ours
        receiving = asyncio.ensure_future(self._receive())
        try:
            # the answer, or the fork server's end (its socket's other copy, ours, stays open until then)
            await asyncio.wait({receiving, self.task}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            theirs.close()
        if not receiving.done():
            receiving.cancel()
            if not self.task.done():
                await self.close()
                raise CommandFailed(f"the fork server did not import {', '.join(self.modules)} within {timeout_s:g} s")
            answer = None  # it ended: why, from its result, below (before close forgets it)
        else:
            answer = receiving.result()
        if answer is None or not answer.get("ready"):
            why = (answer or {}).get("error") or await self._ended_why()
            await self.close()
            raise CommandFailed(
                f"the fork server could not start: {why}", hint=f"remove the module from [benchmark] preload, or see {self.log_name}.stderr.log in the run"
            )
        self.ready = answer

    async def run(
        self, argv: Sequence[str], *, cwd: Path, timeout_s: float, env: Mapping[str, str] | None, log_dir: Path | None, log_name: str
    ) -> runner.RunResult:
        """One run of the benchmark (`argv` as the plain run has it), forked; the same result a
        plain run gives, its wall time measured from the request to the fork server's answer."""
        out, err = runner.captures(log_dir, log_name)
        if not self.alive:
            try:
                await self.start(env, timeout_s)
            except CommandFailed as exc:  # the run fails, as a plain run whose imports fail does
                err.feed(f"kernel-mcp: {exc.message}\n".encode(), None)
                return runner.RunResult(
                    argv=list(argv), cwd=os.fspath(cwd), returncode=None, timed_out=False, duration_s=0.0, stdout=out, stderr=err, limit_s=timeout_s
                )
        assert self.control is not None
        full_env = runner.command_env(env, self.boundary)
        loop = asyncio.get_running_loop()
        pipes = [os.pipe(), os.pipe()]
        pumps = []
        transports = []
        for (read_end, _write_end), capture in zip(pipes, (out, err), strict=True):
            reader = asyncio.StreamReader()
            protocol = asyncio.StreamReaderProtocol(reader)
            transport, _ = await loop.connect_read_pipe(functools.partial(_same, protocol), os.fdopen(read_end, "rb", 0))
            transports.append(transport)
            pumps.append(asyncio.ensure_future(runner.pump(reader, capture)))
        request = json.dumps({"argv": list(argv[1:]), "cwd": os.fspath(cwd), "env": full_env}).encode()
        started = time.monotonic()
        try:
            socket.send_fds(self.control, [HEADER.pack(len(request)) + request], [pipes[0][1], pipes[1][1]])
        finally:
            for _read_end, write_end in pipes:
                os.close(write_end)
        timed_out = False
        try:
            answer = await asyncio.wait_for(self._receive(), timeout_s)
        except asyncio.TimeoutError:
            timed_out, answer = True, None
            await self.close(kill=True)
        duration = time.monotonic() - started
        returncode = _exit_code(answer)
        if returncode is None and not timed_out:
            if answer is None:
                said = f"the fork server ended before the run did: {await self._ended_why()}"
            else:
                said = f"the fork server answered no exit status for the run: {answer.get('error') or repr(answer)[:200]}"
            err.feed(f"\nkernel-mcp: {said}\n".encode(), None)
            await self.close(kill=True)
        _done, pending = await asyncio.wait(pumps, timeout=runner.PIPE_GRACE_S)
        for pump in pending:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        for transport in transports:
            transport.close()
        return runner.RunResult(
            argv=list(argv),
            cwd=os.fspath(cwd),
            returncode=returncode,
            timed_out=timed_out,
            duration_s=duration,
            stdout=out,
            stderr=err,
            pipes_abandoned=bool(pending),
            sealed=sandbox.mechanism(),
            limit_s=timeout_s,
        )

    async def _receive(self) -> dict | None:
        """One answer of the fork server; None when it has gone."""
        head = await self._read_exactly(HEADER.size)
        if head is None:
            return None
        (size,) = HEADER.unpack(head)
        if size > MAX_ANSWER:
            return {"error": f"an answer of {size} bytes"}
        body = await self._read_exactly(size)
        if body is None:
            return None
        # an answer is checked, never trusted to be well formed: a fork server that misbehaves fails the
        # run with what it said, and never raises out of the evaluation
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        return answer if isinstance(answer, dict) else {"error": f"it answered {bytes(body[:200])!r}, not a JSON object"}

    async def _read_exactly(self, size: int) -> bytes | None:
        """`size` bytes from the control socket; None when the fork server has gone first."""
        assert self.control is not None
        loop = asyncio.get_running_loop()
        data = b""
        while len(data) < size:
            more = await loop.sock_recv(self.control, size - len(data))
            if not more:
                return None
            data += more
        return data

    async def _ended_why(self) -> str:
        if self.task is None:
            return "it never started"
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.task), CLOSE_GRACE_S)
        if not self.task.done() or self.task.cancelled():
            return "it stopped answering"
        if (error := self.task.exception()) is not None:
            return str(error)
        result = self.task.result()
        return f"it {result.status()}: {result.stderr.tail.strip()[-300:]}"

    async def close(self, kill: bool = False) -> None:
        """End the fork server: closing its socket ends it; killed (its whole namespace) if it does not
        end within a few seconds, or at once with `kill`."""
        if self.control is not None:
            self.control.close()
            self.control = None
        task, self.task = self.task, None
        if task is None or task.done():
            return
        if not kill:
            with contextlib.suppress(asyncio.TimeoutError, CommandFailed):
                await asyncio.wait_for(asyncio.shield(task), CLOSE_GRACE_S)
        if not task.done():
            task.cancel()  # the runner kills the process tree, and so the namespace
            with contextlib.suppress(asyncio.CancelledError, CommandFailed):
                await task


def servers_for(command: Sequence[str], modules: Sequence[str], log_dir: Path) -> ForkServers | None:
    """The fork servers of a measurement whose benchmark preloads `modules`, or None where its runs
    start plainly (nothing to preload, or no PID namespace to confine a fork server's kill(-1))."""
    return ForkServers(command, modules, log_dir) if modules and unavailable() is None else None


class ForkServers:
    """The fork servers of one measurement, one per side (tree and boundary), ended together."""

    def __init__(self, command: Sequence[str], modules: Sequence[str], log_dir: Path) -> None:
        self.command, self.modules, self.log_dir = list(command), list(modules), log_dir
        self.servers: dict[tuple[str, tuple[Path, ...], tuple[tuple[str, str], ...]], ForkServer] = {}

    def of(self, cwd: Path, boundary: sandbox.Boundary, name: str) -> ForkServer:
        """The fork server of this tree and boundary: a run whose boundary differs gets its own."""
        key = (os.fspath(cwd), boundary.writable, tuple(sorted(boundary.env.items())))
        if key not in self.servers:
            self.servers[key] = ForkServer(self.command, self.modules, cwd=cwd, boundary=boundary, log_dir=self.log_dir, log_name=f"forkserver-{name}")
        return self.servers[key]

    async def start_all(self, sides: Sequence[tuple[Path, sandbox.Boundary, str, Mapping[str, str] | None]], timeout_s: float) -> None:
        """Start the fork servers of these sides at once, before the first timed run (the imports
        overlap); one that fails is tried again by its first run, which then fails with the reason."""
        servers = [(self.of(cwd, boundary, name), env) for cwd, boundary, name, env in sides]
        await asyncio.gather(*(server.start(env, timeout_s) for server, env in servers if not server.alive), return_exceptions=True)

    async def close(self) -> None:
        for server in self.servers.values():
            await server.close()
        self.servers.clear()
