"""The shell entry point does what the agent can: init, doctor, call any tool, list tools."""

from __future__ import annotations

import json
import subprocess

from conftest import PY


def kmcp(*args, cwd=None):
    return subprocess.run([PY, "-m", "kernel_mcp", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_init_then_doctor(tmp_path):
    done = kmcp("init", str(tmp_path / "w"))
    assert done.returncode == 0 and (tmp_path / "w" / "kernel-mcp.toml").exists()
    again = kmcp("init", str(tmp_path / "w"))
    assert again.returncode == 2 and "already exists" in again.stderr
    doctor = kmcp("doctor", "--workspace", str(tmp_path / "w"))
    assert doctor.returncode == 0 and "platform:" in doctor.stdout and "live tools:" in doctor.stdout


def test_call_runs_a_tool_with_key_value_arguments(workspace):
    done = kmcp("call", "--workspace", str(workspace), "run_command", "name=hello")
    assert done.returncode == 0, done.stderr
    assert "hello from the workspace" in done.stdout
    structured = kmcp("call", "--workspace", str(workspace), "--json", "run_command", "name=hello", "timeout_s=30")
    assert json.loads(structured.stdout)["exit_code"] == 0
    # the options after the tool's name, as people also write them
    after = kmcp("call", "run_command", "--workspace", str(workspace), "name=hello", "--json", "timeout_s=30")
    assert after.returncode == 0 and json.loads(after.stdout)["exit_code"] == 0, after.stderr
    unknown = kmcp("call", "run_command", "--workspace", str(workspace), "name=hello", "--bogus")
    assert unknown.returncode == 2 and "unrecognized arguments:" in unknown.stderr and "--bogus" in unknown.stderr


def test_call_errors_exit_nonzero(workspace, tmp_path):
    done = kmcp("call", "--workspace", str(workspace), "run_command", "name=nope")
    assert done.returncode == 1 and "no command named 'nope'" in done.stderr
    missing = kmcp("call", "--workspace", str(tmp_path / "absent"), "workspace_info")
    assert missing.returncode == 2 and "workspace folder not found" in missing.stderr
    malformed = kmcp("call", "--workspace", str(workspace), "run_command", "oops")
    assert malformed.returncode != 0 and "not key=value" in malformed.stderr


def test_a_failed_compile_exits_nonzero(tmp_path):
    """A compile that does not build is an error (exit 1, the answer on stderr), as the agent's
    error answer is; with --json its structured answer still comes on stdout. A clean compile of
    the same workspace exits 0."""
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    (tmp_path / "typo.hip").write_text("#include <hip/hip_runtime.h>\n__global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n")
    (tmp_path / "fine.hip").write_text("#include <hip/hip_runtime.h>\n__global__ void k(float* x) {\n  x[0] = 1.0f;\n}\n")
    failed = kmcp("call", "--workspace", str(tmp_path), "compile_kernel", "source=typo.hip")
    assert failed.returncode == 1 and "FAILED" in failed.stderr and "typo.hip:3:" in failed.stderr and "undefined_name" in failed.stderr
    as_json = kmcp("call", "--workspace", str(tmp_path), "--json", "compile_kernel", "source=typo.hip")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["ok"] is False
    fine = kmcp("call", "--workspace", str(tmp_path), "compile_kernel", "source=fine.hip")
    assert fine.returncode == 0 and "ok" in fine.stdout, fine.stderr


def test_tools_lists_every_tool():
    done = kmcp("tools")
    assert done.returncode == 0
    assert {line.split()[0] for line in done.stdout.splitlines()} >= {"doctor", "run_command"}


def test_bad_http_address():
    done = kmcp("serve", "--http", "localhost:notaport")
    assert done.returncode == 2 and "HOST:PORT" in done.stderr
