"""The MCP Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663, Final) for the long tools.

Specification: seps/2663-tasks-extension.md in the modelcontextprotocol/modelcontextprotocol
repository (docs/extensions/tasks/overview.mdx there; the capability example is
schema/2026-07-28/examples/ServerCapabilities/extensions-tasks.json). What it asks, and where here:

- the server advertises `{"io.modelcontextprotocol/tasks": {}}` under `capabilities.extensions`
  of `server/discover` (`TasksExtension.settings`);
- a client declares it in each request's `_meta["io.modelcontextprotocol/clientCapabilities"]`;
  only then, and only on the 2026-07-28 protocol (the extension does not exist under the
  `initialize` handshake), may a `tools/call` be answered with a `CreateTaskResult`: the `Task`
  fields with `resultType: "task"`. The server alone decides: here, for the tools in `LONG_TOOLS`
  whose arguments are valid (an invalid call gets its plain error result at once);
- the task is durably created before the handle is returned (`kernel_mcp.tasks`);
- `tasks/get` answers the task with `resultType: "complete"`: `result` (the whole `CallToolResult`
  the plain call would have returned, an `isError` one included) when completed, `error` (a
  JSON-RPC error) when failed; `tasks/cancel` and `tasks/update` answer an empty acknowledgement,
  and an unknown `taskId` a JSON-RPC error.

A task's status text is not shown to the model, so nothing the caller needs is only there: the
final result is the tool's complete answer. Progress goes to the status message (the spec sends no
`notifications/progress` for tasks). A call that does not declare the extension runs exactly as
before, with progress notifications.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolRequestParams, CallToolResult, RequestParams
from mcp_types import methods as wire_methods
from mcp_types.jsonrpc import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field, ValidationError

from kernel_mcp.errors import KernelMcpError
from kernel_mcp.mcp_adapter import call_handler, unknown_arguments
from kernel_mcp.tasks import INTERNAL_ERROR, TaskRecord, TaskStatus, TaskStore, interrupted_error, iso, mark_running
from kernel_mcp.tooling import ServerState, ToolContext, ToolSpec

log = logging.getLogger("kernel_mcp")

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


@dataclass(frozen=True)
class TaskTiming:
    """How long a tool's task is kept, and how often a client should ask after it."""

    ttl_ms: int  # from creation; longer than any run of the tool, so the answer is still there when asked for
    poll_interval_ms: int  # about a tenth of a typical run: a finished answer waits little, the server is asked little


HOUR_MS = 3_600_000
# The tools that run the workspace's programs. A day to read the answer back covers a session that
# ends overnight; a batch of evaluations (many candidates, each paired runs) gets three.
LONG_TOOLS: dict[str, TaskTiming] = {
    "run_command": TaskTiming(24 * HOUR_MS, 2_000),
    "run_benchmark": TaskTiming(24 * HOUR_MS, 5_000),
    "profile_kernels": TaskTiming(24 * HOUR_MS, 5_000),
    "thread_trace": TaskTiming(24 * HOUR_MS, 5_000),
    "experiment_start": TaskTiming(24 * HOUR_MS, 2_000),
    "experiment_evaluate": TaskTiming(24 * HOUR_MS, 5_000),
    "experiment_evaluate_many": TaskTiming(72 * HOUR_MS, 10_000),
    "experiment_keep": TaskTiming(24 * HOUR_MS, 5_000),
}

PROGRESS_WRITE_S = 1.0  # a progress message is stored at most this often (each is a synced file write)
CANCEL_WATCH_S = 0.5  # how often a running task looks for a cancel left by another server process
CANCEL_WAIT_S = 15.0  # how long tasks/cancel waits for the run's processes to be killed before it acknowledges


class TaskIdParams(RequestParams):
    task_id: str = Field(alias="taskId")


class TaskUpdateParams(TaskIdParams):
    input_responses: dict[str, Any] = Field(default_factory=dict, alias="inputResponses")


def declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request declared the extension; never on the handshake protocol, where it does not exist."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    return bool(capabilities and capabilities.extensions and TASKS_EXTENSION in capabilities.extensions)


def keep_out_of_the_handshake(server: MCPServer) -> None:
    """Advertise the extension in `server/discover` only. The SDK puts every extension into the
    `initialize` answer too, but under the handshake protocol this one does not exist (the SEP's
    backward-compatibility table): a legacy client must not read it as offered."""
    lowlevel = server._lowlevel_server  # the SDK offers no other way to shape the handshake's capabilities
    make = lowlevel.create_initialization_options

    def create(notification_options: Any = None, experimental_capabilities: Any = None, extensions: Any = None) -> Any:
        offered = extensions if extensions is not None else lowlevel.extensions
        return make(notification_options, experimental_capabilities, {k: v for k, v in offered.items() if k != TASKS_EXTENSION})

    lowlevel.create_initialization_options = create  # type: ignore[method-assign]


def task_fields(record: TaskRecord) -> dict[str, Any]:
    """The `Task` of the specification."""
    fields: dict[str, Any] = {"taskId": record.task_id, "status": record.status}
    if record.status_message:
        fields["statusMessage"] = record.status_message
    fields |= {
        "createdAt": iso(record.created_at),
        "lastUpdatedAt": iso(record.last_updated_at),
        "ttlMs": record.ttl_ms,
        "pollIntervalMs": record.poll_interval_ms,
    }
    return fields


def detailed_task(record: TaskRecord) -> dict[str, Any]:
    """What `tasks/get` answers: the task, with its result when completed and its error when failed."""
    answer = {"resultType": "complete", **task_fields(record)}
    if record.status == "completed" and record.result is not None:
        answer["result"] = record.result
    if record.status == "failed" and record.error is not None:
        answer["error"] = record.error
    return answer


def _unknown_task(task_id: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=f"no task {task_id[:60]!r} in this workspace (never made here, or its time to live is over)")


class TasksExtension(Extension):
    """Runs the long tools as tasks for a request that declares the extension; serves tasks/get, tasks/cancel, tasks/update."""

    identifier = TASKS_EXTENSION

    def __init__(self, state: ServerState, tools: Sequence[ToolSpec]) -> None:
        self.state = state
        self.specs = {spec.name: spec for spec in tools if spec.name in LONG_TOOLS}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._cancelling: set[str] = set()

    def methods(self) -> Sequence[MethodBinding]:
        modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("tasks/get", TaskIdParams, self._get, protocol_versions=modern),
            MethodBinding("tasks/cancel", TaskIdParams, self._cancel, protocol_versions=modern),
            MethodBinding("tasks/update", TaskUpdateParams, self._update, protocol_versions=modern),
        )

    def store(self) -> TaskStore:
        return TaskStore(self.state.workspace().state_dir)

    def _known(self, task_id: str) -> tuple[TaskStore, TaskRecord]:
        try:
            store = self.store()
            record = store.get(task_id)
        except KernelMcpError as exc:
            raise MCPError(code=INVALID_PARAMS, message=exc.render()) from None
        if record is None:
            raise _unknown_task(task_id)
        return store, record

    # -- tools/call ---------------------------------------------------------------------------------

    async def intercept_tool_call(self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        spec = self.specs.get(params.name)
        if spec is None or not declares_tasks(ctx) or unknown_arguments(spec, dict(params.arguments or {})) is not None:
            return await call_next(ctx)
        arguments = dict(params.arguments or {})
        timing = LONG_TOOLS[spec.name]
        try:
            spec.input_model.model_validate(arguments)
            store = self.store()
            record = store.create(spec.name, timing.ttl_ms, timing.poll_interval_ms, status_message=f"{spec.name} started")
        except (ValidationError, KernelMcpError, OSError):
            # arguments the tool refuses, or no workspace to keep a record in: the plain call answers at once
            return await call_next(ctx)
        mark_running(record.task_id, True)
        self._running[record.task_id] = asyncio.get_running_loop().create_task(
            self._work(store, record, spec, arguments, ctx.protocol_version), name=f"task {spec.name} {record.task_id[:8]}"
        )
        return {"resultType": "task", **task_fields(record)}

    async def _work(self, store: TaskStore, record: TaskRecord, spec: ToolSpec, arguments: dict[str, Any], version: str) -> None:
        last_write = 0.0
        tool_ctx: ToolContext

        async def progress(done: float, total: float | None, message: str) -> None:
            nonlocal record, last_write
            if time.monotonic() - last_write < PROGRESS_WRITE_S:
                return
            last_write = time.monotonic()
            share = f" ({done:g}/{total:g})" if total else ""
            with contextlib.suppress(OSError):
                record = store.update(record, message=f"{message}{share}"[:500], run_ids=[run.id for run in tool_ctx.runs_made])

        tool_ctx = ToolContext(state=self.state, tool=spec.name, progress=progress)
        watcher = asyncio.get_running_loop().create_task(self._watch_cancel(store, record.task_id))
        try:
            result = await call_handler(spec, self.state, arguments, tool_ctx)
            runs = [run.id for run in tool_ctx.runs_made]
            self._settle(
                store,
                record,
                "completed",
                result=self._wire_result(result, version),
                run_ids=runs,
                message=f"{spec.name} finished" + (" with an error result" if result.is_error else ""),
            )
        except asyncio.CancelledError:
            runs = [run.id for run in tool_ctx.runs_made]
            if record.task_id in self._cancelling:
                self._settle(store, record, "cancelled", message="cancelled by tasks/cancel; its processes were killed", run_ids=runs)
            else:  # the server is shutting down: the run's processes die with it
                stopped = record.model_copy(update={"run_ids": runs})
                self._settle(
                    store,
                    stopped,
                    "failed",
                    error=interrupted_error(stopped, "the shutdown of the server that ran it"),
                    message="interrupted by the shutdown of the server that ran it",
                )
            raise
        except Exception as exc:  # call_handler answers every failure of the tool; this is ours
            log.exception("task %s of %s failed", record.task_id[:8], spec.name)
            self._settle(
                store,
                record,
                "failed",
                error={"code": INTERNAL_ERROR, "message": f"internal error in {spec.name}: {type(exc).__name__}: {exc}"[:2000]},
                message="failed: internal error",
            )
        finally:
            watcher.cancel()
            mark_running(record.task_id, False)
            self._running.pop(record.task_id, None)
            self._cancelling.discard(record.task_id)

    @staticmethod
    def _settle(store: TaskStore, record: TaskRecord, status: TaskStatus, **outcome: Any) -> None:
        """Store the task's end; a record that cannot be written (a full disk) is logged, and the next
        server reads the task as interrupted."""
        try:
            store.finish(record, status, **outcome)
        except OSError:
            log.exception("task %s of %s: its %s end could not be stored", record.task_id[:8], record.tool, status)

    @staticmethod
    def _wire_result(result: CallToolResult, version: str) -> dict[str, Any]:
        """The `CallToolResult` exactly as the plain call sends it at this protocol version."""
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return wire_methods.serialize_server_result("tools/call", version, dumped)

    async def _watch_cancel(self, store: TaskStore, task_id: str) -> None:
        """Honour a cancel left by another server process on this workspace (see tasks.TaskStore.request_cancel)."""
        while True:
            await asyncio.sleep(CANCEL_WATCH_S)
            with contextlib.suppress(OSError, KernelMcpError):
                if store.cancel_requested(task_id):
                    await self._cancel_here(task_id)
                    return

    async def finish_running(self) -> None:
        """Wait for the tasks still running to end and store their answers: called once the stdio client
        has left, so that a session closed mid-run loses nothing (the next server reads the answer back).
        SIGTERM stops the wait: the tasks are cancelled, their process trees killed, and each is stored
        as failed, interrupted by the shutdown. Every run has its own time limit, so the wait is bounded."""
        running = [task for task in self._running.values() if not task.done()]
        if not running:
            return
        loop = asyncio.get_running_loop()

        def stop() -> None:
            for task in running:
                task.cancel()  # not in _cancelling: stored as interrupted by the shutdown, not as cancelled

        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signal handlers off the main thread
            loop.add_signal_handler(signal.SIGTERM, stop)
        # said once SIGTERM is handled: from here on it settles the tasks (before, it ended the process at once)
        names = ", ".join(sorted(task.get_name() for task in running))
        log.warning(
            "kernel-mcp: the client left; finishing %d task(s) (%s) before exiting; tasks/get reads their answers from the next server", len(running), names
        )
        try:
            await asyncio.wait(running)
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGTERM)

    async def _cancel_here(self, task_id: str) -> None:
        """Cancel a task this server runs and wait (a while) for the runner to kill its process tree."""
        running = self._running.get(task_id)
        if running is None or running.done():
            return
        self._cancelling.add(task_id)
        running.cancel()
        await asyncio.wait([running], timeout=CANCEL_WAIT_S)

    # -- tasks/* ------------------------------------------------------------------------------------

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        _, record = self._known(params.task_id)
        return detailed_task(record)

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        store, record = self._known(params.task_id)
        if not record.terminal:
            if params.task_id in self._running:
                await self._cancel_here(params.task_id)
            else:  # another live server process runs it (a dead one's task was settled by the read)
                store.request_cancel(params.task_id)
        return {}

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: TaskUpdateParams) -> HandlerResult:
        self._known(params.task_id)
        return {}  # these tasks never ask for input: every response is for a key not outstanding, ignored as the spec says
