"""Run artifacts: the full raw output of every tool call, kept under `.kernel-mcp/runs/<run-id>/`.

Tool answers are short; what they leave out stays here and is served as MCP resources
(`kernel-mcp://runs/<run-id>/<file>`), so nothing a tool saw is lost. Only what a run wrote is
served: a run folder or a file in it that is a symbolic link (or a FIFO, or anything but a regular
file) is refused, since whoever can edit the workspace could plant one pointing anywhere.

Each run's meta.json says which process made it (host, pid and that process's start time), and
`finish` records the outcome: so a listing tells a finished run (ok or failed, with its exit) from
one still running and from one whose server died before finishing it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

import psutil
from pydantic import BaseModel

from kernel_mcp import safe_files
from kernel_mcp.errors import InvalidInput, KernelMcpError

RESOURCE_SCHEME = "kernel-mcp"
# \Z, not $: `$` also matches before a trailing newline
_RUN_ID = re.compile(r"^\d{8}-\d{6}-[a-z0-9_]+-[0-9a-f]{6}\Z")
_FILE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")


def run_uri(run_id: str, name: str | None = None) -> str:
    return f"{RESOURCE_SCHEME}://runs/{run_id}" + (f"/{name}" if name else "")


@dataclass(frozen=True)
class Run:
    id: str
    folder: Path

    def path(self, name: str) -> Path:
        if not isinstance(name, str) or not _FILE.fullmatch(name):
            raise InvalidInput(f"bad artifact name {name!r}")
        return self.folder / name

    def open(self, name: str) -> BinaryIO:
        """One artifact opened for reading: a regular file of this run, never through a link."""
        _real_folder(self.folder, self.id)
        return safe_files.open_regular(self.path(name), f"{self.id}/{name}", follow_links=False)

    def read_text(self, name: str) -> str:
        with self.open(name) as handle:
            return handle.read().decode("utf-8", errors="replace")

    def write_text(self, name: str, text: str) -> Path:
        return self.write_bytes(name, text.encode("utf-8"))

    def write_bytes(self, name: str, data: bytes) -> Path:
        target = self.path(name)
        # never through a link or into a FIFO planted in the run folder: O_NOFOLLOW refuses the
        # one, O_NONBLOCK makes opening the other fail at once instead of waiting for a reader
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(target, flags, 0o644)
        except OSError as exc:
            raise InvalidInput(f"{self.id}/{name} cannot be written ({exc.strerror}): is it a link or a FIFO?") from None
        with os.fdopen(fd, "wb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InvalidInput(f"{self.id}/{name} is not a regular file; nothing was written")
            os.set_blocking(fd, True)
            handle.write(data)
        return target

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, default=str))

    def uri(self, name: str | None = None) -> str:
        return run_uri(self.id, name)

    def files(self) -> list[str]:
        """The regular files of the run: what `open` would serve."""
        return sorted(p.name for p in self.folder.iterdir() if not p.is_symlink() and p.is_file())

    def finish(self, status: str, *, ok: bool | None = None, **extra: Any) -> None:
        """Record the run's outcome: `status` as its tool says it ("exit 3", "failed"...), and
        whether that is a success (by default: "ok" or "exit 0" are)."""
        meta = self.meta()
        meta.update(status=status, ok=_is_ok(status) if ok is None else ok, finished=time.strftime("%Y-%m-%dT%H:%M:%S"), **extra)
        self.write_json("meta.json", meta)

    def fail(self, exc: BaseException) -> None:
        """Record that the work of this run raised `exc` (the run stays readable, marked failed)."""
        why = exc.message if isinstance(exc, KernelMcpError) else (f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        self.finish("failed", ok=False, error=why[:500])

    @property
    def finished(self) -> bool:
        return "finished" in self.meta()

    def state(self) -> RunState:
        return run_state(self.meta())

    def meta(self) -> dict[str, Any]:
        try:
            meta = json.loads(self.read_text("meta.json"))
        except (OSError, ValueError, InvalidInput):
            return {}
        return meta if isinstance(meta, dict) else {}


def _is_ok(status: str) -> bool:
    return status in ("ok", "exit 0")


def _this_process() -> dict[str, Any]:
    """Who makes a run: enough to tell later whether that process still lives (a pid alone could
    have been reused by another program since)."""
    me = psutil.Process()
    return {"host": socket.gethostname(), "pid": me.pid, "pid_started": round(me.create_time(), 2)}


class RunState(BaseModel):
    """Where a run stands: finished (ok or failed), running in a live process, or interrupted
    (its process ended unfinished)."""

    state: Literal["finished", "running", "interrupted", "unknown"]
    ok: bool | None = None
    status: str | None = None  # as the tool recorded it: "exit 0", "failed", "timed out ..."
    exit_code: int | None = None
    error: str | None = None
    detail: str | None = None  # why running / interrupted / unknown

    def label(self) -> str:
        if self.state == "finished":
            outcome = "ok" if self.ok else "failed"
            exit_part = f"exit {self.exit_code}" if self.exit_code is not None else (self.status if self.status not in (None, "ok", "failed") else None)
            why = f": {' '.join(self.error.split())}" if self.error and not self.ok else ""  # one line per run
            return f"finished {outcome}" + (f" ({exit_part})" if exit_part else "") + why
        return f"{self.state} ({self.detail})" if self.detail else self.state


def _alive(pid: int, started: float | None) -> bool:
    try:
        process = psutil.Process(pid)
        # the same pid with another start time is another program that got the number later
        return started is None or abs(process.create_time() - started) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


def run_state(meta: dict[str, Any]) -> RunState:
    if "finished" in meta or ("status" in meta and "pid" not in meta):
        status = meta.get("status")
        ok = meta.get("ok")
        code = meta.get("exit_code")
        return RunState(
            state="finished",
            status=status if isinstance(status, str) else None,
            ok=ok if isinstance(ok, bool) else (isinstance(status, str) and _is_ok(status)),
            exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            error=str(meta["error"])[:300] if meta.get("error") else None,
        )
    pid, host = meta.get("pid"), meta.get("host")
    if not isinstance(pid, int) or isinstance(pid, bool):
        return RunState(state="unknown", detail="never finished, and no process recorded to check")
    if host != socket.gethostname():
        return RunState(state="unknown", detail=f"started by pid {pid} on host {host}, not this one: cannot check")
    started = meta.get("pid_started")
    if _alive(pid, started if isinstance(started, (int, float)) else None):
        return RunState(state="running", detail=f"pid {pid}")
    return RunState(state="interrupted", detail=f"pid {pid} is no longer alive and never finished the run")


def _real_folder(folder: Path, run_id: str) -> None:
    """A run folder must be a folder the server made, not a link to one elsewhere."""
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        raise InvalidInput(f"no run {run_id!r} in this workspace") from None
    if stat.S_ISLNK(mode):
        raise InvalidInput(f"run {run_id} is a symbolic link, not a run folder; it is not read")
    if not stat.S_ISDIR(mode):
        raise InvalidInput(f"run {run_id} is not a folder")


class RunStore:
    def __init__(self, state_dir: Path) -> None:
        self.root = state_dir / "runs"

    def create(self, tool: str, arguments: dict[str, Any] | None = None) -> Run:
        slug = re.sub(r"[^a-z0-9_]", "_", tool.lower()) or "run"
        run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-{secrets.token_hex(3)}"
        folder = self.root / run_id
        folder.mkdir(parents=True, exist_ok=False)
        run = Run(run_id, folder)
        run.write_json(
            "meta.json",
            {"run_id": run_id, "tool": tool, "arguments": arguments or {}, "started": time.strftime("%Y-%m-%dT%H:%M:%S"), **_this_process()},
        )
        return run

    def get(self, run_id: str) -> Run:
        if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
            raise InvalidInput(f"bad run id {run_id!r}", hint=self.known())
        folder = self.root / run_id
        if not os.path.lexists(folder):
            raise InvalidInput(f"no run {run_id!r} in this workspace", hint=self.known())
        _real_folder(folder, run_id)
        return Run(run_id, folder)

    def known(self, shown: int = 5) -> str:
        """What does exist, for a message about a run that does not: the newest run ids."""
        recent = self.recent(shown)
        if not recent:
            return "this workspace has no runs yet"
        return f"the newest runs: {', '.join(r.id for r in recent)} (all: {RESOURCE_SCHEME}://runs)"

    def recent(self, limit: int = 20) -> list[Run]:
        if not self.root.is_dir():
            return []
        ids = sorted((p.name for p in self.root.iterdir() if _RUN_ID.fullmatch(p.name) and not p.is_symlink() and p.is_dir()), reverse=True)
        return [Run(i, self.root / i) for i in ids[:limit]]
