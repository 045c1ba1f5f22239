"""The command line as a person meets it at a terminal: a tool's arguments and schema can be
read, lists can be typed plainly, an error is one line. Every case runs the real command line in a
subprocess."""

from __future__ import annotations

import json
import subprocess

from conftest import PY

TIMEOUT_S = 120  # generous: the tests wait for output, never for time to pass


def kmcp(*args, cwd=None):
    return subprocess.run([PY, "-m", "kernel_mcp", *args], capture_output=True, text=True, timeout=TIMEOUT_S,
                          stdin=subprocess.DEVNULL, cwd=cwd)


def one_error(done: subprocess.CompletedProcess) -> str:
    """The error of a failed command: one line on stderr, perhaps a hint line, nothing on stdout."""
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert len(lines) in (1, 2) and (len(lines) == 1 or lines[1].startswith("hint: ")), done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    return lines[0]


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
