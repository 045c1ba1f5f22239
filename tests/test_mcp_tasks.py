"""The long tools as MCP Tasks (SEP-2663): through the SDK's real Client, and as raw JSON-RPC over
the real stdio server process: 2026-07-28 envelopes with and without the extension declared, the
legacy handshake, cancelling a benchmark's process tree, and a server killed mid-task and started
again on the same workspace."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import anyio
import psutil
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import ConfigDict

from kernel_mcp.errors import InvalidInput
from kernel_mcp.mcp_tasks import LONG_TOOLS, TASKS_EXTENSION
from kernel_mcp.server import TOOLS, build_server
from kernel_mcp.tasks import TaskStore, mark_running

from conftest import PY, commit_kernel_workspace, write_toml
from run_pids import NOTE, host_pid

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
WAIT_S = 60  # generous: these are limits on a hang, not timings


# -- the SDK's client, with the client side of the extension -----------------------------------------


class TaskHandle(Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class TaskState(Result):
    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskIdParams(RequestParams):
    task_id: str


class GetTask(Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams


class TasksClient(ClientExtension):
    """Declares the extension and finishes a task handle by polling tasks/get, as a host would."""

    identifier = TASKS_EXTENSION

    def __init__(self) -> None:
        self.handles: list[TaskHandle] = []

    def claims(self):
        async def resolve(handle: TaskHandle, ctx: ClaimContext) -> CallToolResult:
            self.handles.append(handle)
            with anyio.fail_after(WAIT_S):
                while True:
                    state = await ctx.session.send_request(GetTask(params=TaskIdParams(task_id=handle.task_id)), TaskState)
                    if state.status == "completed":
                        return CallToolResult.model_validate(state.result)
                    assert state.status == "working", state
                    await anyio.sleep(0.1)

        return [ResultClaim(result_type="task", model=TaskHandle, resolve=resolve)]


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


def test_every_long_tool_is_a_tool_of_the_server():
    names = {spec.name for spec in TOOLS}
    assert set(LONG_TOOLS) <= names
    assert {
        "run_benchmark",
        "run_command",
        "profile_kernels",
        "thread_trace",
        "experiment_start",
        "experiment_evaluate",
        "experiment_evaluate_many",
        "experiment_keep",
    } == set(LONG_TOOLS)
    for timing in LONG_TOOLS.values():
        assert 0 < timing.poll_interval_ms < timing.ttl_ms


async def test_a_task_of_an_unlisted_tool_loads_its_toolset(workspace):
    """run_command is outside the core toolset (kernel_mcp.toolsets): run as a task, where the
    extension answers the call and not the tool function, it is callable all the same and listed
    from then on."""
    tasks = TasksClient()
    async with Client(build_server(workspace), mode=MODERN, extensions=[tasks]) as client:
        assert "run_command" not in {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("run_command", {"name": "hello"})
        assert not result.is_error and "hello from the workspace" in text_of(result) and len(tasks.handles) == 1
        assert {"run_command", "gpu_status"} <= {t.name for t in (await client.list_tools()).tools}


async def test_sdk_client_declaring_the_extension_gets_the_answer_through_a_task(workspace):
    tasks = TasksClient()
    async with Client(build_server(workspace), mode=MODERN, extensions=[tasks]) as client:
        result = await client.call_tool("run_command", {"name": "hello"})
        assert not result.is_error and "hello from the workspace" in text_of(result)
        assert result.structured_content["exit_code"] == 0
        assert len(tasks.handles) == 1 and tasks.handles[0].ttl_ms == LONG_TOOLS["run_command"].ttl_ms
        # a tool that is not long answers at once, task or no task
        assert not (await client.call_tool("workspace_info", {})).is_error
        assert len(tasks.handles) == 1
        # arguments the tool's input model refuses: the error at once, not a task
        for arguments in [{"name": "--help"}, {"name": "hello", "in_experiment": "x"}, {}]:
            bad = await client.call_tool("run_command", arguments)
            assert bad.is_error and len(tasks.handles) == 1, arguments
        # an error result of the tool itself is the task's completed result (the spec's isError case)
        missing = await client.call_tool("run_command", {"name": "no-such-command"})
        assert missing.is_error and "no command named 'no-such-command'" in text_of(missing) and len(tasks.handles) == 2
        # the handle itself, for a client that handles the shape
        handle = await client.session.call_tool("run_benchmark", {"repeats": 2}, allow_claimed=True)
        assert isinstance(handle, TaskHandle) and handle.status == "working"
        assert (workspace / ".kernel-mcp" / "tasks" / f"{handle.task_id}.json").is_file()
    async with Client(build_server(workspace), mode="legacy", extensions=[TasksClient()]) as client:
        plain = await client.call_tool("run_command", {"name": "hello"})
        assert isinstance(plain, CallToolResult) and "hello from the workspace" in text_of(plain)


async def test_an_experiment_evaluates_through_tasks(workspace):
    """experiment_start and experiment_evaluate as tasks: the candidate is judged and the answer carries the verdict."""
    commit_kernel_workspace(workspace)
    tasks = TasksClient()
    async with Client(build_server(workspace), mode=MODERN, extensions=[tasks]) as client:
        start = await client.call_tool("experiment_start", {"tag": "tasks"})
        assert not start.is_error, text_of(start)
        Path(start.structured_content["worktree"], "kernel.py").write_text("US = 5.0\nERR = 0\n")
        evaluated = await client.call_tool("experiment_evaluate", {"hypothesis": "half the time"})
        assert not evaluated.is_error, text_of(evaluated)
        attempt = evaluated.structured_content["attempt"]
        # the verdict is the ledger's (keep, or not corroborated where the wall time did not follow): the answer carries it
        assert attempt["hypothesis"] == "half the time" and attempt["decision"] and attempt["reasons"], attempt
    assert [h.poll_interval_ms for h in tasks.handles] == [LONG_TOOLS["experiment_start"].poll_interval_ms, LONG_TOOLS["experiment_evaluate"].poll_interval_ms]


def test_task_ids_are_unguessable_and_checked(tmp_path):
    store = TaskStore(tmp_path)
    ids = {store.create("run_command", 1000, 100).task_id for _ in range(50)}
    assert len(ids) == 50 and all(len(i) == 43 for i in ids)
    for bad in ["../../etc/passwd", "x" * 42, "x" * 43 + "/", ""]:
        with pytest.raises(InvalidInput):
            store.read(bad)
    assert store.read("y" * 43) is None


def test_records_past_their_time_to_live_are_forgotten_once_settled(tmp_path):
    store = TaskStore(tmp_path)
    day_ago = datetime.now(UTC) - timedelta(days=1)
    settled = store.finish(store.create("run_command", 1000, 100), "completed", result={"content": []})
    running = store.create("run_benchmark", 1000, 100)
    mark_running(running.task_id, True)  # as the server does while the task runs
    try:
        for record in (settled, running):
            store._write(record.model_copy(update={"created_at": day_ago}))
        fresh = store.create("run_command", 60_000, 100)  # creating sweeps
        assert store.read(settled.task_id) is None
        assert store.read(running.task_id) is not None and store.read(fresh.task_id) is not None
    finally:
        mark_running(running.task_id, False)
    # its server gone (here: no longer running it), a working task reads as failed, and says why
    state = store.get(running.task_id)
    assert state is not None and state.status == "failed" and state.error is not None and "interrupted" in state.error["message"]


# -- raw JSON-RPC over the stdio server process ---------------------------------------------------------


class RawServer:
    """The real `kernel-mcp serve` over stdio, spoken to line by line."""

    def __init__(self, workspace: Path, stderr: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            [PY, "-m", "kernel_mcp", "serve", "--workspace", str(workspace)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr.open("w") if stderr else subprocess.DEVNULL,
            text=True,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None, *, declare: bool | None = True) -> dict[str, Any]:
        """The response to one request: a 2026-07-28 envelope, declaring the extension or not; `declare=None`
        sends no envelope (the legacy handshake's requests)."""
        self.next_id += 1
        params = dict(params or {})
        if declare is not None:
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}} if declare else {},
            }
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + WAIT_S
        while True:
            message = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if message.get("id") == self.next_id:
                return message

    def poll(self, task_id: str, until: set[str]) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_S
        while True:
            state = self.request("tasks/get", {"taskId": task_id})["result"]
            if state["status"] in until or time.monotonic() > deadline:
                return state
            time.sleep(0.1)

    def leave(self) -> None:
        """What a client that goes away does: close the server's stdin, and wait for nothing."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def kill(self) -> None:
        """SIGKILL, and not reaped: a killed server that is still a zombie is as gone as one reaped."""
        self.proc.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + WAIT_S
        while psutil.Process(self.proc.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.05)


@pytest.fixture
def raw_servers():
    started: list[RawServer] = []

    def start(workspace: Path, stderr: Path | None = None) -> RawServer:
        server = RawServer(workspace, stderr)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def _same_answer(task_result: dict[str, Any], plain: dict[str, Any]) -> None:
    """The task's result is the plain call's answer: the same fields, the same verdict; only what names
    the run (its id, its timings) differs between two runs."""
    assert set(task_result) >= {"content", "structuredContent", "isError"}
    assert task_result["isError"] == plain["isError"]
    assert set(task_result["structuredContent"]) == set(plain["structuredContent"])
    assert [block["type"] for block in task_result["content"]] == [block["type"] for block in plain["content"]]


def test_declared_calls_become_tasks_with_the_plain_answer(workspace, raw_servers):
    server = raw_servers(workspace)
    discover = server.request("server/discover")["result"]
    assert discover["capabilities"]["extensions"][TASKS_EXTENSION] == {}
    for tool, arguments in [("run_benchmark", {"repeats": 2}), ("run_command", {"name": "hello"})]:
        started = time.monotonic()
        handle = server.request("tools/call", {"name": tool, "arguments": arguments})["result"]
        assert time.monotonic() - started < WAIT_S
        assert handle["resultType"] == "task" and handle["status"] == "working"
        assert handle["ttlMs"] == LONG_TOOLS[tool].ttl_ms and handle["pollIntervalMs"] == LONG_TOOLS[tool].poll_interval_ms
        assert {"createdAt", "lastUpdatedAt"} <= set(handle)
        # stored before the handle was given out
        assert (workspace / ".kernel-mcp" / "tasks" / f"{handle['taskId']}.json").is_file()
        done = server.poll(handle["taskId"], {"completed", "failed", "cancelled"})
        assert done["status"] == "completed" and done["resultType"] == "complete", done
        plain = server.request("tools/call", {"name": tool, "arguments": arguments}, declare=False)["result"]
        assert plain.get("resultType") != "task"
        _same_answer(done["result"], plain)
        if tool == "run_benchmark":
            assert done["result"]["structuredContent"]["bench"]["classes"] == plain["structuredContent"]["bench"]["classes"]
        else:
            assert done["result"]["structuredContent"]["stdout_tail"] == "hello from the workspace\n"
    assert server.request("tasks/update", {"taskId": handle["taskId"], "inputResponses": {"k": {}}})["result"]["resultType"] == "complete"
    # an id never given out
    unknown = server.request("tasks/get", {"taskId": "A" * 43})
    assert unknown["error"]["code"] == -32602
    assert server.request("tasks/cancel", {"taskId": "../" * 15})["error"]["code"] == -32602


def test_legacy_handshake_gets_plain_results_and_no_task_methods(workspace, raw_servers):
    server = raw_servers(workspace)
    init = server.request(
        "initialize",
        {"protocolVersion": "2025-11-25", "clientInfo": {"name": "raw-test", "version": "0"}, "capabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        declare=None,
    )
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert TASKS_EXTENSION not in (init["result"]["capabilities"].get("extensions") or {})  # not offered where it does not exist
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    result = server.request("tools/call", {"name": "run_command", "arguments": {"name": "hello"}}, declare=None)["result"]
    assert "taskId" not in result and result["structuredContent"]["stdout_tail"] == "hello from the workspace\n"
    assert server.request("tasks/get", {"taskId": "A" * 43}, declare=None)["error"]["code"] == -32601


def _sleeping_benchmark(workspace: Path) -> tuple[Path, Path]:
    """A benchmark that starts a child and both sleep: a process tree to kill. Each writes its pid (with its namespace)."""
    parent, child = workspace / "bench.pid", workspace / "child.pid"
    note = NOTE
    child_code = f"import os, time; open({str(child)!r}, 'w').write({note}); time.sleep(600)"
    _long_benchmark(
        workspace,
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {child_code!r}])\n"
        f"open({str(parent)!r}, 'w').write({note})\n"
        "time.sleep(600)\n",
    )
    return parent, child


def _long_benchmark(workspace: Path, code: str) -> None:
    """bench.py as `code`, with a time limit the test never reaches: what ends the run is the test's doing."""
    (workspace / "bench.py").write_text(code)
    write_toml(workspace, (workspace / "kernel-mcp.toml").read_text().replace("timeout_s = 60", "timeout_s = 900"))


def _wait_for(path: Path) -> str:
    deadline = time.monotonic() + WAIT_S
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path.name} never written"
        time.sleep(0.1)
    return path.read_text()


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _all_dead(notes: list[str]) -> bool:
    deadline = time.monotonic() + WAIT_S
    while any(_alive(host_pid(n)) for n in notes):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_cancel_kills_the_benchmarks_process_tree(workspace, raw_servers):
    parent, child = _sleeping_benchmark(workspace)
    server = raw_servers(workspace)
    handle = server.request("tools/call", {"name": "run_benchmark", "arguments": {"repeats": 1}})["result"]
    assert handle["resultType"] == "task"
    notes = [_wait_for(parent), _wait_for(child)]
    assert all(_alive(host_pid(n)) for n in notes)
    assert server.request("tasks/get", {"taskId": handle["taskId"]})["result"]["status"] == "working"
    ack = server.request("tasks/cancel", {"taskId": handle["taskId"]})
    assert "error" not in ack and ack["result"]["resultType"] == "complete"
    assert _all_dead(notes), "the benchmark's processes outlived tasks/cancel"
    state = server.poll(handle["taskId"], {"cancelled", "completed", "failed"})
    assert state["status"] == "cancelled" and "result" not in state
    # the server goes on serving, and a settled task's cancel is still acknowledged
    assert "error" not in server.request("tasks/cancel", {"taskId": handle["taskId"]})
    again = server.request("tools/call", {"name": "run_command", "arguments": {"name": "hello"}}, declare=False)["result"]
    assert again["structuredContent"]["exit_code"] == 0


def test_tasks_outlive_a_killed_server(workspace, raw_servers):
    """A finished task's answer is read back from the next server; one the kill interrupted reads as failed, saying why."""
    server = raw_servers(workspace)
    finished = server.request("tools/call", {"name": "run_command", "arguments": {"name": "hello"}})["result"]
    finished_state = server.poll(finished["taskId"], {"completed", "failed", "cancelled"})
    assert finished_state["status"] == "completed"
    parent, child = _sleeping_benchmark(workspace)
    running = server.request("tools/call", {"name": "run_benchmark", "arguments": {"repeats": 1}})["result"]
    notes = [_wait_for(parent), _wait_for(child)]
    server.kill()
    assert _all_dead(notes), "the benchmark outlived its server"

    again = raw_servers(workspace)
    state = again.request("tasks/get", {"taskId": running["taskId"]})["result"]
    assert state["status"] == "failed", state
    assert state["error"]["code"] == -32603 and "interrupted" in state["error"]["message"]
    assert "run_benchmark" in state["error"]["message"] and state["error"]["data"]["reason"] == "interrupted"
    assert "interrupted by the restart" in state["error"]["message"] and state["statusMessage"].startswith("interrupted by the restart")
    # settled for good: asked again, the same answer
    assert again.request("tasks/get", {"taskId": running["taskId"]})["result"]["error"] == state["error"]
    old = again.request("tasks/get", {"taskId": finished["taskId"]})["result"]
    assert old["status"] == "completed" and old["result"] == finished_state["result"]
    assert "error" not in again.request("tasks/cancel", {"taskId": running["taskId"]})


def test_a_cancel_sent_to_another_server_on_the_workspace_reaches_the_one_running_it(workspace, raw_servers):
    parent, child = _sleeping_benchmark(workspace)
    runner = raw_servers(workspace)
    handle = runner.request("tools/call", {"name": "run_benchmark", "arguments": {"repeats": 1}})["result"]
    notes = [_wait_for(parent), _wait_for(child)]
    other = raw_servers(workspace)
    assert other.request("tasks/get", {"taskId": handle["taskId"]})["result"]["status"] == "working"
    assert "error" not in other.request("tasks/cancel", {"taskId": handle["taskId"]})
    assert _all_dead(notes)
    assert other.poll(handle["taskId"], {"cancelled", "completed", "failed"})["status"] == "cancelled"
    assert os.path.exists(workspace / ".kernel-mcp" / "tasks" / f"{handle['taskId']}.json")


async def test_over_streamable_http(workspace):
    """Each HTTP request is answered on its own: the task's run goes on after the handle's response."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "a-loopback-token-of-enough-length"
    proc = subprocess.Popen(
        [PY, "-m", "kernel_mcp", "serve", "--workspace", str(workspace), "--http", f":{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "KERNEL_MCP_HTTP_TOKEN": token},
    )
    try:
        for _ in range(WAIT_S * 10):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await anyio.sleep(0.1)
        tasks = TasksClient()
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http), mode=MODERN, extensions=[tasks]) as client,
        ):
            result = await client.call_tool("run_benchmark", {"repeats": 2})
            assert not result.is_error, text_of(result)
            assert result.structured_content["bench"]["classes"][0]["key"] == "shape=small"
            assert len(tasks.handles) == 1
            handle = await client.session.call_tool("run_command", {"name": "hello"}, allow_claimed=True)
            assert isinstance(handle, TaskHandle)
        # a session that reconnects (a new one, on the same server) reads the task the old one started
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http), mode=MODERN, extensions=[TasksClient()]) as client,
        ):
            with anyio.fail_after(WAIT_S):
                while (state := await client.session.send_request(GetTask(params=TaskIdParams(task_id=handle.task_id)), TaskState)).status == "working":
                    await anyio.sleep(0.1)
            assert state.status == "completed" and state.result is not None
            assert state.result["structuredContent"]["stdout_tail"] == "hello from the workspace\n"
    finally:
        proc.terminate()
        proc.wait(10)


def _gated_benchmark(workspace: Path) -> tuple[Path, Path]:
    """A benchmark that says it started, then waits for the test to let it finish: no sleep decides the order."""
    started, gate = workspace / "bench.started", workspace / "bench.go"
    _long_benchmark(
        workspace,
        "import os, time\n"
        f"open({str(started)!r}, 'w').write(str(os.getpid()))\n"
        f"while not os.path.exists({str(gate)!r}):\n    time.sleep(0.05)\n"
        "os.makedirs('out', exist_ok=True)\nopen('out/bench.csv','w').write('shape,err_k,us_k\\nsmall,0,10.0\\n')\n",
    )
    return started, gate


def _exits(server: RawServer) -> int:
    try:
        return server.proc.wait(WAIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail("the server did not exit")


def test_a_client_that_leaves_mid_task_gets_the_answer_from_the_next_server(workspace, raw_servers):
    """A stdio client that closes stdin mid-benchmark: the server finishes the task, stores its answer
    and exits; meanwhile and after, another server on the workspace answers tasks/get for it."""
    started, gate = _gated_benchmark(workspace)
    server = raw_servers(workspace)
    handle = server.request("tools/call", {"name": "run_benchmark", "arguments": {"repeats": 1}})["result"]
    _wait_for(started)
    server.leave()
    # the benchmark cannot end before the gate opens, so the task is still running in the server that was left
    other = raw_servers(workspace)
    assert other.request("tasks/get", {"taskId": handle["taskId"]})["result"]["status"] == "working"
    gate.touch()
    assert _exits(server) == 0
    state = other.request("tasks/get", {"taskId": handle["taskId"]})["result"]
    assert state["status"] == "completed", state
    assert state["result"]["structuredContent"]["bench"]["classes"][0]["key"] == "shape=small"
    # and a server started after both answers the same
    again = raw_servers(workspace)
    assert again.request("tasks/get", {"taskId": handle["taskId"]})["result"]["result"] == state["result"]


def test_sigterm_after_the_client_left_interrupts_the_task_and_kills_its_processes(workspace, raw_servers, tmp_path):
    """The stdio shutdown a client may follow (close stdin, then SIGTERM): the run's tree is killed and the task reads as interrupted."""
    parent, child = _sleeping_benchmark(workspace)
    log = tmp_path / "server.err"
    server = raw_servers(workspace, stderr=log)
    handle = server.request("tools/call", {"name": "run_benchmark", "arguments": {"repeats": 1}})["result"]
    notes = [_wait_for(parent), _wait_for(child)]
    server.leave()
    deadline = time.monotonic() + WAIT_S
    while "the client left" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    server.proc.terminate()
    assert _exits(server) == 0
    assert _all_dead(notes), "the benchmark's processes outlived the server's shutdown"
    state = raw_servers(workspace).request("tasks/get", {"taskId": handle["taskId"]})["result"]
    assert state["status"] == "failed" and state["error"]["data"]["reason"] == "interrupted", state
    assert "interrupted by the shutdown" in state["error"]["message"] and state["statusMessage"].startswith("interrupted by the shutdown")


def test_an_evaluation_as_a_task_over_raw_json_rpc(workspace, raw_servers):
    """experiment_start and experiment_evaluate declared as tasks: handles, then the verdict a plain call would give."""
    commit_kernel_workspace(workspace)
    server = raw_servers(workspace)
    start = server.request("tools/call", {"name": "experiment_start", "arguments": {"tag": "raw"}})["result"]
    assert start["resultType"] == "task"
    started = server.poll(start["taskId"], {"completed", "failed", "cancelled"})
    assert started["status"] == "completed" and not started["result"]["isError"], started
    Path(started["result"]["structuredContent"]["worktree"], "kernel.py").write_text("US = 5.0\nERR = 0\n")
    evaluate = server.request("tools/call", {"name": "experiment_evaluate", "arguments": {"hypothesis": "half the time"}})["result"]
    assert evaluate["resultType"] == "task" and evaluate["status"] == "working"
    done = server.poll(evaluate["taskId"], {"completed", "failed", "cancelled"})
    assert done["status"] == "completed" and not done["result"]["isError"], done
    attempt = done["result"]["structuredContent"]["attempt"]
    assert attempt["hypothesis"] == "half the time" and attempt["decision"] and attempt["reasons"]
    plain = server.request("tools/call", {"name": "experiment_evaluate", "arguments": {"hypothesis": "again"}}, declare=False)["result"]
    _same_answer(done["result"], plain)
