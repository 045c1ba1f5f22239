"""Run states in the runs listing (run_artifacts and the kernel-mcp://runs resource): a finished run
says ok or failed with its exit, a run whose process died unfinished says interrupted, and only a
run whose process still lives says running. The processes are real ones, started and ended here."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest
from mcp import Client

from conftest import PY, REPO, call, text_of
from kernel_mcp.server import build_server

pytestmark = pytest.mark.anyio

# A separate Python process that opens a run in the workspace and never finishes it.
OPEN_A_RUN = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from kernel_mcp.workspace import RunStore
    run = RunStore(Path(sys.argv[2]) / ".kernel-mcp").create("run_benchmark")
    print(run.id, flush=True)
    if sys.argv[3] == "wait":
        time.sleep(60)
""")


def open_run(workspace, mode: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([PY, "-c", OPEN_A_RUN, str(REPO), str(workspace), mode], stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


def listed(text: str, run_id: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(run_id))


async def test_finished_runs_say_ok_or_failed_with_their_exit(workspace):
    async with Client(build_server(workspace)) as client:
        ok = (await call(client, "run_command", name="hello"))["run_id"]
        bad = (await call(client, "run_command", name="fail"))["run_id"]
        listing = await client.call_tool("run_artifacts", {})
        text = text_of(listing)
        assert "running?" not in text
        assert listed(text, ok).endswith("run_command    finished ok (exit 0)")
        assert listed(text, bad).endswith("run_command    finished failed (exit 3)")
        states = {r["run_id"]: r["state"] for r in listing.structured_content["runs"]}
        assert states[ok]["state"] == "finished" and states[ok]["ok"] is True and states[ok]["exit_code"] == 0
        assert states[bad]["ok"] is False and states[bad]["exit_code"] == 3
        resource = (await client.read_resource("kernel-mcp://runs")).contents[0].text
        assert "finished failed (exit 3)" in listed(resource, bad)
        one = await client.call_tool("run_artifacts", {"run_id": bad})
        assert text_of(one).startswith(f"run {bad} (finished failed (exit 3)): ")


async def test_a_tool_that_fails_after_opening_its_run_finishes_it_failed(workspace):
    """experiment_start opens its run, then finds the repository has no commit: the run is
    finished as failed, with the reason, instead of staying 'running' while the server lives."""
    async with Client(build_server(workspace)) as client:
        refused = await client.call_tool("experiment_start", {"tag": "t1"})
        assert refused.is_error
        runs = (await call(client, "run_artifacts"))["runs"]
        (started,) = [r for r in runs if r["tool"] == "experiment_start"]
        assert started["state"]["state"] == "finished" and started["state"]["ok"] is False
        assert "no commit" in started["state"]["error"]
        assert "finished failed: workspace error: " in text_of(await client.call_tool("run_artifacts", {}))
        plotted = await call(client, "roofline", arch="gfx950", flops=1e9, bytes=1e9, plot=True)
        assert "roofline.png" in plotted["roofline"]["plot"]
        roofline_run = next(r for r in (await call(client, "run_artifacts"))["runs"] if r["tool"] == "roofline")
        assert roofline_run["state"]["state"] == "finished" and roofline_run["state"]["ok"] is True


async def test_a_live_process_is_running_and_a_dead_one_interrupted(workspace):
    waiting, live_id = open_run(workspace, "wait")
    gone, dead_id = open_run(workspace, "exit")
    gone.wait(timeout=30)
    try:
        async with Client(build_server(workspace)) as client:
            text = text_of(await client.call_tool("run_artifacts", {}))
            assert listed(text, live_id).endswith(f"running (pid {waiting.pid})")
            assert listed(text, dead_id).endswith(f"interrupted (pid {gone.pid} is no longer alive and never finished the run)")
            waiting.kill()
            waiting.wait(timeout=30)
            runs = {r["run_id"]: r["state"] for r in (await call(client, "run_artifacts"))["runs"]}
            assert runs[live_id]["state"] == "interrupted"
    finally:
        waiting.kill()
        waiting.wait(timeout=30)


async def test_a_reused_pid_or_another_host_is_not_taken_for_the_run(workspace):
    """A pid alive now but started after the run's process is another program; a run made on
    another host cannot be checked from here; a run from before states were kept is unknown."""
    import os

    from kernel_mcp.workspace import RunStore

    store = RunStore(workspace / ".kernel-mcp")
    reused, elsewhere, older = (store.create("compile_kernel") for _ in range(3))
    meta = reused.meta()
    reused.write_json("meta.json", {**meta, "pid": os.getpid(), "pid_started": meta["pid_started"] - 3600})
    elsewhere.write_json("meta.json", {**elsewhere.meta(), "host": "another-node"})
    older.write_json("meta.json", {k: v for k, v in older.meta().items() if k not in ("pid", "host", "pid_started")})
    assert reused.state().state == "interrupted"
    assert elsewhere.state().state == "unknown" and "another-node" in elsewhere.state().label()
    assert older.state().label() == "unknown (never finished, and no process recorded to check)"
    older.finish("exit 0")
    assert older.state().label() == "finished ok (exit 0)"
    assert json.loads((older.folder / "meta.json").read_text())["ok"] is True
