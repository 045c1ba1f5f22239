"""The ledger's git side under attack, each attack staged for real: real git repositories, real
processes racing the server, the real Landlock boundary and the SDK's client against the real server
(a CPU workspace: tests/test_ledger.py's). What must hold: the user's repository is never touched, no
program a nested repository names ever runs, what is kept is what was measured, and the rules of an
experiment are the ones it started with."""

from __future__ import annotations

import importlib._bootstrap_external as bootstrap
import importlib.util
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp import sandbox
from kernel_mcp.server import build_server

from conftest import PY, REPO, call, text_of
from test_ledger import KERNEL, cpu_ws, set_kernel  # noqa: F401  (cpu_ws is a fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sandbox.available() is not None, reason=f"no Landlock here: {sandbox.available()}")]


def git(*args: str, cwd: Path) -> str:
    """The real git CLI, as the user runs it (none of the server's hardening)."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def user_state(ws: Path) -> dict[str, str]:
    """What the user's repository is: branch, HEAD, index, status, reflog, worktrees."""
    root = ws.parent
    return {"branch": git("symbolic-ref", "-q", "HEAD", cwd=root), "HEAD": git("rev-parse", "HEAD", cwd=root),
            "index": git("ls-files", "-s", cwd=root), "status": git("status", "--porcelain", cwd=root),
            "reflog": git("reflog", cwd=root), "config": git("config", "--local", "-l", cwd=root)}


# ---- 1. the worktree's .git pointer, flipped while a step runs its git calls ---------------------
FLIP = textwrap.dedent(
    """
    import os, sys, time
    pointer, good, evil = sys.argv[1:4]
    i = 0
    while True:
        for text in (good, evil):
            tmp = f"{pointer}.tmp{i}"
            i += 1
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, pointer)
            time.sleep(0.003)
    """
)


async def test_a_pointer_flipped_during_a_call_never_moves_the_users_repository(cpu_ws):
    # The pointer is checked once per step and then many git calls follow (diff, reset --hard,
    # clean): a process flipping it to the user's repository every 3 ms made them act there, moving
    # the user's branch to the experiment's commit and rewriting the user's index.
    before = user_state(cpu_ws)
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="race"))["worktree"]
        pointer = Path(wt).parent / ".git"
        good = pointer.read_text()
        flipper = subprocess.Popen([PY, "-c", FLIP, str(pointer), good, f"gitdir: {cpu_ws.parent / '.git'}\n"])
        try:
            for _ in range(12):
                set_kernel(wt, 110.0, 220.0)  # something for the revert to discard
                await client.call_tool("experiment_revert", {})  # refused when it sees the flipped pointer: either is fine
        finally:
            flipper.kill()
            flipper.wait()
        pointer.write_text(good)
        await call(client, "experiment_revert")
    assert user_state(cpu_ws) == before
    assert Path(wt, "kernel.py").read_text() == KERNEL
