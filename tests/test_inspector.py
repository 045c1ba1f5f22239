"""An independent MCP client that no one here wrote: the official MCP Inspector's CLI mode."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import PY, REPO

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
PREFIX = REPO / ".cache" / "inspector"


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    if shutil.which("npm") is None:
        if os.environ.get("CI"):
            pytest.fail("npm is needed in CI for the MCP Inspector test")
        pytest.skip("npm not installed")
    binary = PREFIX / "node_modules" / ".bin" / "mcp-inspector"
    if not binary.exists():
        PREFIX.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", "--loglevel=error", INSPECTOR],
            check=True,
            timeout=600,
        )
    return [str(binary), "--cli"]


def _inspect(inspector: list[str], workspace: Path, *method: str, every_tool: bool = False) -> subprocess.CompletedProcess:
    """One Inspector call against a fresh server. The Inspector calls only tools the listing shows,
    and each call is a session of its own, so a tool outside the core toolset is reached with the
    server listing every tool (`serve --tools all`), as the README tells such clients."""
    argv = inspector + [PY, "-m", "kernel_mcp", "serve", "--workspace", str(workspace), *(["--tools", "all"] if every_tool else []), *method]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def _json(stdout: str):
    return json.loads(stdout[stdout.index("{") :])


def test_inspector_lists_tools(inspector, workspace):
    done = _inspect(inspector, workspace, "--method", "tools/list")
    assert done.returncode == 0, done.stderr
    tools = {t["name"]: t for t in _json(done.stdout)["tools"]}
    assert {"doctor", "workspace_info", "run_artifacts", "tools_load"} <= set(tools) and "run_command" not in tools
    assert tools["doctor"]["annotations"]["readOnlyHint"] is True
    every = _inspect(inspector, workspace, "--method", "tools/list", every_tool=True)
    assert every.returncode == 0, every.stderr
    assert {"run_command", "hw_spec", "thread_trace", "experiment_evaluate_many"} <= {t["name"] for t in _json(every.stdout)["tools"]}


def test_inspector_calls_doctor(inspector, workspace):
    done = _inspect(inspector, workspace, "--method", "tools/call", "--tool-name", "doctor")
    assert done.returncode == 0, done.stderr
    result = _json(done.stdout)
    assert not result.get("isError")
    assert result["structuredContent"]["platform"] in {"rocm", "cuda", "offline"}
    assert "platform" in result["content"][0]["text"]


def test_inspector_sees_error_result(inspector, workspace):
    done = _inspect(inspector, workspace, "--method", "tools/call", "--tool-name", "run_command", "--tool-arg", "name=nope", every_tool=True)
    assert "no command named 'nope'" in done.stdout
    assert '"isError": true' in done.stdout
