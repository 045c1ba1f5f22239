"""workspace_info: where the workspace sits in git (its top, a subfolder, a linked worktree, or no
repository), and the harness settings an experiment runs under. Real git repositories."""

from __future__ import annotations

import subprocess

import git
import pytest
from mcp import Client

from conftest import BASIC_TOML, call, text_of, write_toml
from kernel_mcp.server import build_server

pytestmark = pytest.mark.anyio

HARNESS = """
[harness]
editable = ["src/*.hip", "src/*.h"]
protected = ["src/reference.h"]
keep_metric = "csv"
suspicious_factor = 2.5
min_pairs = 4
max_pairs = 8
verify_command = ["python3", "check.py"]
flops_column = "flops"
bytes_column = "bytes"
"""


def git_run(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], check=True, capture_output=True)


def committed_repo(top):
    top.mkdir(parents=True, exist_ok=True)
    git_run("init", "-q", str(top))
    (top / "README").write_text("project\n")
    git_run("-C", str(top), "add", "README")
    git_run("-C", str(top), "commit", "-q", "-m", "first")
    return top


async def info(folder):
    async with Client(build_server(folder)) as client:
        result = await client.call_tool("workspace_info", {})
    assert not result.is_error, text_of(result)
    return text_of(result), result.structured_content


async def test_a_subfolder_of_a_repository_is_in_git(tmp_path):
    top = committed_repo(tmp_path / "project")
    ws = top / "kernels" / "conv"
    ws.mkdir(parents=True)
    write_toml(ws, BASIC_TOML)
    text, data = await info(ws)
    assert f"(git: yes, subfolder kernels/conv of {top.resolve()});" in text
    assert data["is_git"] is True and data["git"] == {"top": str(top.resolve()), "subfolder": "kernels/conv", "has_commit": True}


async def test_the_top_of_a_repository_and_a_linked_worktree(tmp_path, workspace):
    text, data = await info(workspace)  # `git init` only: no commit yet
    assert "(git: yes, its top; no commit yet)" in text and data["git"]["subfolder"] == "."
    top = committed_repo(tmp_path / "main")
    (top / "sub").mkdir()
    (top / "sub" / "x").write_text("x\n")
    git_run("-C", str(top), "add", "sub")
    git_run("-C", str(top), "commit", "-q", "-m", "sub")
    linked = tmp_path / "linked"
    git_run("-C", str(top), "worktree", "add", "-q", str(linked))
    assert (linked / ".git").is_file()  # a linked worktree's .git is a file naming the repository
    write_toml(linked / "sub", BASIC_TOML)
    text, data = await info(linked / "sub")
    assert f"(git: yes, subfolder sub of {linked.resolve()})" in text and data["git"]["has_commit"] is True


async def test_outside_any_repository(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    try:
        git.Repo(folder, search_parent_directories=True)
        pytest.skip("the test's temporary folder lies inside a git repository")
    except git.InvalidGitRepositoryError:
        pass
    write_toml(folder, BASIC_TOML)
    text, data = await info(folder)
    assert "(git: no (not inside a git repository; the ledger needs one))" in text and data["git"] is None


async def test_the_harness_settings_are_shown(workspace):
    write_toml(workspace, BASIC_TOML.replace("timeout_s = 60", "timeout_s = 60\nrepeats = 5") + HARNESS)
    text, data = await info(workspace)
    assert "harness: editable src/*.hip, src/*.h; protected src/reference.h" in text
    assert "keep metric csv; plausibility factor 2.5x" in text and "pairs 4-8" in text
    assert "repeats 5" in text and "verify: python3 check.py; roofline floor check: columns flops, bytes" in text
    assert data["harness"]["plausibility_factor"] == 2.5 and data["repeats"] == 5
    write_toml(workspace, BASIC_TOML)  # the defaults: every kernel source is editable, auto keep metric
    text, data = await info(workspace)
    assert "editable **/*.hip, **/*.cu" in text and "protected (everything not editable)" in text
    assert "keep metric auto, here " in text and "plausibility factor 3x" in text and "repeats 3" in text


async def test_recent_runs_carry_their_state(workspace):
    async with Client(build_server(workspace)) as client:
        await call(client, "run_command", name="fail")
        text = text_of(await client.call_tool("workspace_info", {}))
    assert "recent runs:" in text and "run_command    finished failed (exit 3)" in text
