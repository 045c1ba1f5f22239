"""Durable records of long tool calls run in the background, kept under `.kernel-mcp/tasks/`.

A client that may lose its connection (a session that ends, a call moved to the background) asks
for a long tool call to be run as a task: it gets a handle at once and reads the outcome later,
from this server or from the next one started on the same workspace. Each task is one JSON file,
`<task id>.json`, written whole and synced before the handle is given out, so the record exists
before anyone can ask for it and survives the server being killed.

The record names the server process that runs the task (its pid and start time, so a reused pid
is not mistaken for it). A task still `working` whose server is gone can never finish: its process
tree died with that server (see runner). Reading such a record settles it as failed, saying so.
A request to cancel a task that another live server runs is left beside the record
(`<task id>.cancel`); the running server watches for it. Nothing here speaks the protocol: the
MCP side is `mcp_tasks`.
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import psutil
from pydantic import BaseModel, ValidationError

from kernel_mcp.errors import InvalidInput

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})

# 32 random bytes, URL-safe base64: the id is the only thing that lets a caller read a task (there is
# no listing), so it must not be guessable
_ID_BYTES = 32
_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{43}")
INTERNAL_ERROR = -32603  # the JSON-RPC code of a failure that is the server's, not the caller's
_START_TIME_SLACK_S = 1.0  # psutil's start times of one process agree to well under this


def new_task_id() -> str:
    return secrets.token_urlsafe(_ID_BYTES)


def _now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _process_start(pid: int) -> float | None:
    """The start time of a live process; None for none, or for a zombie (killed, not yet reaped by its parent)."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return process.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


class TaskRecord(BaseModel):
    """One task as stored: its state, its timing hints, the server running it, and its outcome."""

    task_id: str
    tool: str
    status: TaskStatus
    status_message: str | None = None
    created_at: datetime
    last_updated_at: datetime
    ttl_ms: int | None
    poll_interval_ms: int
    owner_pid: int
    owner_started: float  # the owner's start time (psutil), so a reused pid is not taken for it
    run_ids: list[str] = []  # the runs the call opened, named when it cannot finish
    result: dict[str, Any] | None = None  # completed: what the call answers
    error: dict[str, Any] | None = None  # failed: a JSON-RPC error object (code, message, data)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def expired(self, now: datetime) -> bool:
        return self.ttl_ms is not None and now > self.created_at + timedelta(milliseconds=self.ttl_ms)


# Task ids of this process's running tasks: a record owned by this process whose id is not here was
# left by an earlier server in the same process (tests build several) and will not finish either.
_RUNNING_HERE: set[str] = set()


def mark_running(task_id: str, running: bool) -> None:
    if running:
        _RUNNING_HERE.add(task_id)
    else:
        _RUNNING_HERE.discard(task_id)


def owner_alive(record: TaskRecord) -> bool:
    if record.owner_pid == os.getpid():
        return record.task_id in _RUNNING_HERE
    started = _process_start(record.owner_pid)
    return started is not None and abs(started - record.owner_started) < _START_TIME_SLACK_S


def interrupted_error(record: TaskRecord, why: str) -> dict[str, Any]:
    runs = ", ".join(record.run_ids)
    message = (
        f"interrupted by {why} before {record.tool} finished, and its processes ended with it; nothing of the call's answer was kept"
        + (f". Its runs: {runs} (run_artifacts shows what they wrote)" if runs else "")
        + f". Call {record.tool} again to get an answer"
    )
    return {"code": INTERNAL_ERROR, "message": message, "data": {"reason": "interrupted", "tool": record.tool, "runIds": record.run_ids}}


class TaskStore:
    """The task records of one workspace, in `<state folder>/tasks/`."""

    def __init__(self, state_dir: Path) -> None:
        self.folder = state_dir / "tasks"

    def _path(self, task_id: str, suffix: str = ".json") -> Path:
        if not _ID_PATTERN.fullmatch(task_id):
            raise InvalidInput(f"no task {task_id[:60]!r}: a task id is 43 characters of A-Z, a-z, 0-9, '-' and '_'")
        return self.folder / f"{task_id}{suffix}"

    def _write(self, record: TaskRecord) -> None:
        """Replace the record whole and sync it and its folder: a reader sees the old record or the new, and
        a record once written outlives a crash of the server or the machine."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(record.task_id)
        partial = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
        data = record.model_dump_json().encode("utf-8")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(partial, path)
        folder = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)

    def create(self, tool: str, ttl_ms: int | None, poll_interval_ms: int, status_message: str | None = None) -> TaskRecord:
        """A new working task owned by this process, durably stored before it is returned."""
        self.sweep()
        now = _now()
        me = os.getpid()
        record = TaskRecord(
            task_id=new_task_id(),
            tool=tool,
            status="working",
            status_message=status_message,
            created_at=now,
            last_updated_at=now,
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_interval_ms,
            owner_pid=me,
            owner_started=_process_start(me) or 0.0,
        )
        self._write(record)
        return record

    def read(self, task_id: str) -> TaskRecord | None:
        """The record as stored, or None for an id this workspace does not know (or no longer keeps)."""
        path = self._path(task_id)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return TaskRecord.model_validate_json(text)
        except ValidationError:
            return None  # not a record this server wrote: as good as absent

    def get(self, task_id: str) -> TaskRecord | None:
        """The record, with a task whose server is gone settled as failed (it can never finish)."""
        record = self.read(task_id)
        if record is None or record.terminal or owner_alive(record):
            return record
        return self.finish(
            record,
            "failed",
            error=interrupted_error(record, "the restart: the server that ran it was stopped or killed"),
            message="interrupted by the restart: the server that ran it stopped",
        )

    def update(self, record: TaskRecord, *, message: str | None = None, run_ids: list[str] | None = None) -> TaskRecord:
        """A working task's progress: its status message and the runs it opened."""
        record = record.model_copy(
            update={
                "status_message": message if message is not None else record.status_message,
                "run_ids": run_ids if run_ids is not None else record.run_ids,
                "last_updated_at": _now(),
            }
        )
        self._write(record)
        return record

    def finish(
        self,
        record: TaskRecord,
        status: TaskStatus,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        message: str | None = None,
        run_ids: list[str] | None = None,
    ) -> TaskRecord:
        """Settle the task for good; a terminal record is never changed again."""
        stored = self.read(record.task_id)
        if stored is not None and stored.terminal:
            return stored
        record = record.model_copy(
            update={
                "status": status,
                "result": result,
                "error": error,
                "status_message": message,
                "run_ids": run_ids if run_ids is not None else record.run_ids,
                "last_updated_at": _now(),
            }
        )
        self._write(record)
        self._cancel_marker(record.task_id).unlink(missing_ok=True)
        return record

    def _cancel_marker(self, task_id: str) -> Path:
        return self._path(task_id, ".cancel")

    def request_cancel(self, task_id: str) -> None:
        """Ask the server that runs the task (another process) to cancel it."""
        self._cancel_marker(task_id).touch()

    def cancel_requested(self, task_id: str) -> bool:
        return self._cancel_marker(task_id).exists()

    def sweep(self) -> None:
        """Forget the tasks whose time to live is over: settled ones, and working ones whose server is gone."""
        if not self.folder.is_dir():
            return
        now = _now()
        for path in self.folder.glob("*.json"):
            record = self.read(path.stem) if _ID_PATTERN.fullmatch(path.stem) else None
            if record is not None and record.expired(now) and (record.terminal or not owner_alive(record)):
                path.unlink(missing_ok=True)
                self._cancel_marker(record.task_id).unlink(missing_ok=True)
