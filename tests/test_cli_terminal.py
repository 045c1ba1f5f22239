"""The command line as a person meets it at a terminal: `serve` on a terminal says what it waits for
and Ctrl-C ends it at once; a missing workspace is refused at start; a tool's arguments and schema
can be read; lists can be typed plainly; an error is one line; a closed pipe ends quietly; run
files are shown as paths. Every case runs the real command line in a subprocess."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp.server import build_server

from conftest import PY

TIMEOUT_S = 120  # generous: the tests wait for output, never for time to pass


def kmcp(*args, cwd=None):
    return subprocess.run([PY, "-m", "kernel_mcp", *args], capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL, cwd=cwd)


def read_until(fd: int, marker: bytes, seen: bytes = b"") -> bytes:
    """Read `fd` until `marker` has come (or the timeout, then fail with what did come)."""
    deadline = time.monotonic() + TIMEOUT_S
    while marker not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {marker!r} within {TIMEOUT_S} s; got {seen!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            assert chunk, f"end of output before {marker!r}; got {seen!r}"
            seen += chunk
    return seen


def one_error(done: subprocess.CompletedProcess) -> str:
    """The error of a failed command: one line on stderr, perhaps a hint line, nothing on stdout."""
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert len(lines) in (1, 2) and (len(lines) == 1 or lines[1].startswith("hint: ")), done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    return lines[0]


def test_serve_on_a_terminal_says_what_it_waits_for_and_ctrl_c_ends_it(workspace):
    terminal, its_end = pty.openpty()
    proc = subprocess.Popen(
        [PY, "-m", "kernel_mcp", "serve", "--workspace", str(workspace)], stdin=its_end, stdout=its_end, stderr=subprocess.PIPE, start_new_session=True
    )
    os.close(its_end)
    try:
        said = read_until(proc.stderr.fileno(), b"Ctrl-C stops.")
        assert b"MCP client" in said and b"JSON-RPC" in said and b"claude mcp add kernel-mcp -- " in said
        # a client's first message, typed at the terminal: the answer proves the server reads stdin,
        # and after it the server waits on stdin for the next line
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        }
        os.write(terminal, json.dumps(hello).encode() + b"\n")
        read_until(terminal, b'"serverInfo"')
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends its foreground group on Ctrl-C
        assert proc.wait(timeout=TIMEOUT_S) == 130
        said += proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
        os.close(terminal)
    assert b"Traceback" not in said and b"KeyboardInterrupt" not in said


def test_serve_says_nothing_to_a_client_and_refuses_a_missing_workspace(workspace, tmp_path):
    done = kmcp("serve", "--workspace", str(workspace))  # stdin not a terminal, and at its end at once
    assert done.returncode == 0 and "JSON-RPC" not in done.stderr
    assert "workspace folder not found" in one_error(kmcp("serve", "--workspace", str(tmp_path / "absent")))
    (tmp_path / "a-file").write_text("")
    assert "not a folder" in one_error(kmcp("serve", "--workspace", str(tmp_path / "a-file")))


def test_a_tools_arguments_and_schema():
    described = kmcp("call", "compile_kernel", "--help")
    assert described.returncode == 0, described.stderr
    lines = described.stdout.splitlines()
    assert any(line.split()[:3] == ["source", "str,", "required"] for line in lines)
    assert any(line.split()[:5] == ["defines", "list", "of", "str,", "default"] for line in lines)
    assert "preprocessor defines" in described.stdout  # the field's description
    assert kmcp("tools", "compile_kernel").stdout == described.stdout

    listing = kmcp("tools")
    names = [line.split()[0] for line in listing.stdout.splitlines()]
    assert listing.returncode == 0 and "run_command" in names
    schemas = json.loads(kmcp("tools", "--schema").stdout)
    assert list(schemas) == names
    one = json.loads(kmcp("tools", "run_command", "--schema").stdout)
    assert one == schemas["run_command"] and one["required"] == ["name"]
    assert "call" in kmcp("call", "--help").stdout


def test_list_arguments_plain_repeated_or_json(workspace):
    for name in ("p1", "p2", "p3"):
        (workspace / name).mkdir()
    for typed in (["paths=p1,p2", "paths=p3"], ['paths=["p1", "p2", "p3"]'], ["paths=p1", 'paths=["p2","p3"]']):
        done = kmcp("call", "--workspace", str(workspace), "profile_import", *typed)
        assert done.returncode == 1, done.stderr  # the tool's refusal (empty folders), after the run recorded its arguments
    runs = sorted((workspace / ".kernel-mcp" / "runs").glob("*profile_import*"))
    assert len(runs) == 3
    for run in runs:
        assert json.loads((run / "meta.json").read_text())["arguments"]["paths"] == ["p1", "p2", "p3"]


def test_each_error_is_one_line(workspace):
    assert "no tool named 'run_comand'" in one_error(kmcp("call", "--workspace", str(workspace), "run_comand", "name=x"))
    assert "no argument 'bogus'" in one_error(kmcp("call", "--workspace", str(workspace), "run_command", "bogus=1"))
    assert "name: Field required" in one_error(kmcp("call", "--workspace", str(workspace), "run_command"))
    assert "timeout_s" in one_error(kmcp("call", "--workspace", str(workspace), "run_command", "name=hello", "timeout_s=soon"))
    refused = kmcp("call", "--workspace", str(workspace), "run_command", "name=nope")  # the tool's own error result
    assert refused.returncode == 1 and "no command named 'nope'" in one_error(refused)


@pytest.mark.parametrize("command", [["tools"], ["call", "run_command", "name=hello"]])
def test_a_closed_pipe_ends_quietly(workspace, command):
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before a line is written, as after `| head -0`
    try:
        proc = subprocess.Popen([PY, "-m", "kernel_mcp", *command], stdout=writer, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=workspace, text=True)
    finally:
        os.close(writer)
    _, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 141 and err == "", err


@pytest.mark.anyio
async def test_run_files_are_paths_at_the_shell_and_uris_to_a_client(workspace):
    done = kmcp("call", "run_command", "name=hello", cwd=workspace)
    assert done.returncode == 0 and "kernel-mcp://" not in done.stdout
    shown = done.stdout.split("full output: ", 1)[1].split()[0].rstrip(",")
    assert shown.startswith(".kernel-mcp/runs/") and (workspace / shown).is_file()
    structured = json.loads(kmcp("call", "--json", "--workspace", str(workspace), "run_command", "name=hello", cwd=workspace.parent).stdout)
    assert structured["artifacts"] and all(Path(workspace.parent, p).is_file() for p in structured["artifacts"])
    async with Client(build_server(workspace)) as client:
        answer = await client.call_tool("run_command", {"name": "hello"})
    assert all(uri.startswith("kernel-mcp://runs/") for uri in answer.structured_content["artifacts"])
