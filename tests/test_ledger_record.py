"""The ledger's own record (performance.md) is written by the server, outside every boundary: a
candidate that puts a link in its place must not make the server write where the link points."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp.server import build_server

from conftest import call, text_of
from test_ledger import cpu_ws, set_kernel  # noqa: F401  (cpu_ws is a fixture)

pytestmark = pytest.mark.anyio


async def test_a_linked_performance_record_is_refused_and_never_written_through(cpu_ws, tmp_path):
    outside = tmp_path / "outside" / "planted.pth"
    outside.parent.mkdir()
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="link"))["worktree"]
        record = Path(wt, "performance.md")
        record.unlink()
        os.symlink(outside, record)
        set_kernel(wt, 80.0, 160.0)  # a real gain beside it, so that only the link can refuse it
        ev = await call(client, "experiment_evaluate", hypothesis="faster, and the record linked away")
        assert ev["attempt"]["decision"] not in ("keep", "suspicious"), ev["attempt"]
        assert any("performance.md is not a regular file" in r for r in ev["attempt"]["reasons"]), ev["attempt"]["reasons"]
        refused = await client.call_tool("experiment_keep", {"why": "x"})
        assert refused.is_error, text_of(refused)
        ended = await client.call_tool("experiment_end", {"reason": "done\nimport os"})
        reverted = await client.call_tool("experiment_revert", {})
    assert not outside.exists(), "the server wrote through the candidate's link"
    assert not record.is_symlink() or reverted.is_error or ended.is_error
