"""The real server through the SDK's real Client: in memory, over stdio, and over streamable HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from kernel_mcp.server import TOOLS, build_server

from conftest import PY, write_toml

pytestmark = pytest.mark.anyio

EXPECTED_TOOLS = {"doctor", "workspace_info", "run_command", "run_artifacts"}
# what a session lists from the start (the rest once loaded: kernel_mcp.toolsets, tests/test_toolsets.py)
CORE_TOOLS = {spec.name for spec in TOOLS if spec.toolset == "core"}


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


async def test_tool_list_names_schemas_annotations(workspace):
    async with Client(build_server(workspace, tools="all")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert EXPECTED_TOOLS <= set(tools)
    assert set(tools) == {spec.name for spec in TOOLS}
    for name, tool in tools.items():
        assert tool.description and tool.output_schema, name
        assert tool.input_schema["type"] == "object"
        assert "mcp_ctx" not in tool.input_schema.get("properties", {}), "the context must not leak into the schema"
        assert tool.annotations.open_world_hint is False
    assert tools["doctor"].annotations.read_only_hint is True
    assert tools["run_command"].annotations.read_only_hint is False
    assert tools["run_command"].input_schema["required"] == ["name"]
    assert tools["run_command"].input_schema["properties"]["name"]["pattern"]


async def test_doctor_answers_briefly_with_structure(workspace):
    async with Client(build_server(workspace)) as client:
        result = await client.call_tool("doctor", {})
    assert not result.is_error
    data = result.structured_content
    assert data["platform"] in {"rocm", "cuda", "offline"}
    names = {e["name"] for e in data["executables"]}
    assert {"hipcc", "nvcc", "rocprofv3", "ncu", "amd-smi", "nvidia-smi", "offline-clang"} <= names
    assert {t["tool"] for t in data["tools"]} == {spec.name for spec in TOOLS}
    assert len(text_of(result).encode()) <= 4096


async def test_run_command_and_artifacts(workspace):
    async with Client(build_server(workspace)) as client:
        ok = await client.call_tool("run_command", {"name": "hello"})
        assert not ok.is_error and ok.structured_content["exit_code"] == 0
        assert "hello from the workspace" in text_of(ok)
        run_id = ok.structured_content["run_id"]
        listing = await client.call_tool("run_artifacts", {"run_id": run_id})
        assert "hello.stdout.log" in listing.structured_content["files"]
        page = await client.call_tool("run_artifacts", {"run_id": run_id, "file": "hello.stdout.log"})
        assert "hello from the workspace" in page.structured_content["text"]
        resource = await client.read_resource(f"kernel-mcp://runs/{run_id}/hello.stdout.log")
        assert "hello from the workspace" in resource.contents[0].text
        bad = await client.call_tool("run_command", {"name": "fail"})
        assert not bad.is_error  # the command failed, the tool did its job and says so
        assert bad.structured_content["exit_code"] == 3 and "bad" in bad.structured_content["stderr_tail"]
        bench = await client.call_tool("run_command", {"name": "bench"})
        assert "bench done" in text_of(bench)
        runs = await client.read_resource("kernel-mcp://runs")
        assert run_id in runs.contents[0].text
    assert (workspace / ".kernel-mcp" / "runs" / run_id / "meta.json").exists()


async def test_bad_input_gets_clear_errors_and_server_keeps_serving(workspace, tmp_path):
    async with Client(build_server(workspace)) as client:
        cases = [
            ("no_such_tool", {}, "Unknown tool"),
            ("run_command", {"name": 5}, "name"),
            ("run_command", {}, "name"),
            ("run_command", {"name": "--help"}, "pattern"),
            ("run_command", {"name": "rm"}, "no command named 'rm'"),
            ("run_command", {"name": "hello", "timeout_s": -1}, "greater than 0"),
            ("run_artifacts", {"run_id": "../../etc"}, "bad run id"),
            ("run_artifacts", {"run_id": "20260101-000000-x-abcdef"}, "no run"),
            ("run_artifacts", {"offset": "many"}, "offset"),
        ]
        for tool, arguments, expected in cases:
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            assert expected in text_of(result), (tool, arguments, text_of(result))
        assert not (await client.call_tool("doctor", {})).is_error


async def test_missing_and_malformed_workspace(tmp_path):
    async with Client(build_server(tmp_path / "absent")) as client:
        result = await client.call_tool("workspace_info", {})
        assert result.is_error and "workspace folder not found" in text_of(result)
        doctor = await client.call_tool("doctor", {})
        assert not doctor.is_error
        assert "workspace folder not found" in doctor.structured_content["workspace_problem"]
        assert not any(t["live"] for t in doctor.structured_content["tools"] if t["tool"] == "run_command")
    async with Client(build_server(tmp_path)) as client:
        result = await client.call_tool("run_command", {"name": "bench"})
        assert result.is_error and "no kernel-mcp.toml" in text_of(result) and "kernel-mcp init" in text_of(result)
        write_toml(tmp_path, '[target]\narch = "gfx9000"\n')
        result = await client.call_tool("workspace_info", {})
        assert result.is_error and "target.arch" in text_of(result) and "'gfx950'" in text_of(result)
        write_toml(tmp_path, "[target\n")
        result = await client.call_tool("workspace_info", {})
        assert result.is_error and "not valid TOML" in text_of(result)
        assert not (await client.call_tool("doctor", {})).is_error


async def test_hanging_command_is_killed_and_server_keeps_serving(workspace):
    write_toml(workspace, (workspace / "kernel-mcp.toml").read_text() + f'hang = ["{PY}", "-c", "import time; time.sleep(600)"]\n'.replace("\\", "/"))
    async with Client(build_server(workspace)) as client:
        started = time.monotonic()
        progress = []

        async def on_progress(p, total, message):
            progress.append(message)

        result = await client.call_tool("run_command", {"name": "hang", "timeout_s": 1.5}, progress_callback=on_progress)
        assert time.monotonic() - started < 20
        assert result.structured_content["timed_out"] and "timed out" in text_of(result)
        assert not (await client.call_tool("workspace_info", {})).is_error


async def test_huge_output_is_capped_in_the_answer_and_kept_on_disk(workspace):
    code = "import sys\\nblock = b'y' * 65536\\nfor _ in range(1600): sys.stdout.buffer.write(block)"
    write_toml(workspace, (workspace / "kernel-mcp.toml").read_text() + f'flood = ["{PY}", "-c", "{code}"]\n')
    async with Client(build_server(workspace)) as client:
        result = await client.call_tool("run_command", {"name": "flood"})
    assert not result.is_error
    assert len(text_of(result).encode()) <= 4096
    data = result.structured_content
    assert data["stdout_bytes"] == 1600 * 65536
    log = workspace / ".kernel-mcp" / "runs" / data["run_id"] / "flood.stdout.log"
    assert log.stat().st_size == 1600 * 65536


def _stdio_params(workspace: Path) -> StdioServerParameters:
    return StdioServerParameters(command=PY, args=["-m", "kernel_mcp", "serve", "--workspace", str(workspace)], env=dict(os.environ))


async def test_over_stdio_subprocess(workspace):
    async with Client(_stdio_params(workspace)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == CORE_TOOLS
        result = await client.call_tool("doctor", {})
        assert not result.is_error and "platform" in text_of(result)
        # run_command is not listed yet: callable by name all the same, and listed from then on
        bad = await client.call_tool("run_command", {"name": "nope"})
        assert bad.is_error
        again = await client.call_tool("run_command", {"name": "hello"})
        assert "hello from the workspace" in text_of(again)
        assert {"run_command", "gpu_status"} <= {t.name for t in (await client.list_tools()).tools}  # its toolset, machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_over_streamable_http_bound_to_loopback(workspace):
    port = _free_port()
    token = "a-loopback-token-of-enough-length"  # loopback needs one too (test_http_security)
    proc = subprocess.Popen(
        [PY, "-m", "kernel_mcp", "serve", "--workspace", str(workspace), "--http", f":{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "KERNEL_MCP_HTTP_TOKEN": token},
    )
    try:
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await anyio.sleep(0.1)
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client,
        ):
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == CORE_TOOLS
            result = await client.call_tool("workspace_info", {})
            assert "target gfx950" in text_of(result)
        listening = [c.laddr.ip for c in __import__("psutil").Process(proc.pid).net_connections() if c.status == "LISTEN"]
        assert listening and all(ip == "127.0.0.1" for ip in listening)
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("transport", ["memory", "stdio"])
async def test_cancelled_call_kills_the_command(workspace, transport):
    """A client that gives up on a call (timeout or cancel) leaves no process of the command behind."""
    pid_file = workspace / "pid"
    # its pid namespace too: a sealed command has its own (tests/run_pids.py)
    from run_pids import NOTE, host_pid

    code = f"import os, time; open({str(pid_file)!r}, 'w').write({NOTE}); time.sleep(600)"
    write_toml(workspace, (workspace / "kernel-mcp.toml").read_text() + f"sleeper = {json.dumps([PY, '-c', code])}\n")
    server = build_server(workspace) if transport == "memory" else _stdio_params(workspace)
    async with Client(server) as client:
        with anyio.move_on_after(3):
            await client.call_tool("run_command", {"name": "sleeper"})
        pid = host_pid(pid_file.read_text())  # None: no process of that namespace and pid lives
        for _ in range(100):
            if not _pid_alive(pid):
                break
            await anyio.sleep(0.1)
        assert not _pid_alive(pid), "the command outlived the cancelled call"
        assert not (await client.call_tool("doctor", {})).is_error


def _pid_alive(pid: int | None) -> bool:
    import psutil

    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_structured_content_is_held_to_a_size_bound_like_the_text(workspace):
    """A benchmark with 1,500 config classes: the text keeps to its 4 KB and the structured content
    to 16 times that, cut list by list, still valid against the output schema (the client checks)."""
    rows = "\\n".join(f"c{i},0,{10 + i % 7}.0" for i in range(1500))
    (workspace / "bench.py").write_text(f"import os\nos.makedirs('out', exist_ok=True)\nopen('out/bench.csv','w').write('shape,err_k,us_k\\n{rows}\\n')\n")
    async with Client(build_server(workspace)) as client:
        result = await client.call_tool("run_benchmark", {"repeats": 2})
    assert not result.is_error, text_of(result)
    assert len(text_of(result).encode()) <= 4096 and "[structured content cut to fit 65536 bytes: bench.classes: cut to" in text_of(result)
    assert len(json.dumps(result.structured_content, separators=(",", ":"))) <= 16 * 4096
    assert 1 <= len(result.structured_content["bench"]["classes"]) < 1500
