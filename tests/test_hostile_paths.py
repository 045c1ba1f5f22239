"""Hostile names and files through the real MCP client: no argument becomes a compiler option or a
response file, no symbolic link is followed out of the workspace or a run folder, no FIFO blocks
the server, and no refusal echoes what a refused file holds.

The compiles run the real offline clang; links and FIFOs are real (os.symlink, os.mkfifo). A FIFO
that a regression opened would block the event loop, which no timeout inside that loop can
interrupt: a watchdog thread opens the FIFO's writing end after a while, which ends the hang and
makes the test fail instead of freezing the suite.
"""

from __future__ import annotations

import errno
import os
import shutil
import threading
from contextlib import contextmanager, nullcontext
from pathlib import Path

import anyio
import pytest
from mcp import Client

from kernel_mcp.server import build_server

from conftest import PY, call, fixture, text_of, toml_list, write_toml

pytestmark = pytest.mark.anyio
SECRET = "TOP-SECRET-LINE,never,to,be,echoed"
KERNEL = "#include <hip/hip_runtime.h>\n__global__ void plain(float* x) { x[threadIdx.x] = 1.0f; }\n"
GUARD_S = 20  # generous: a refusal takes milliseconds, a hang takes forever


@pytest.fixture
def kernel_ws(tmp_path: Path) -> Path:
    root = tmp_path / "kws"
    root.mkdir()
    (root / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    return root


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the workspace that nothing may serve."""
    path = tmp_path / "secret.csv"
    path.write_text(SECRET + "\n1,2,3,4,5\n")
    return path


@contextmanager
def fifo_watchdog(path: Path, after_s: float = GUARD_S):
    """Yield a dict whose 'unblocked' says whether a reader had to be freed from the FIFO (every
    reader that waits after `after_s` is freed, until the block ends)."""
    state = {"unblocked": False}
    stop = threading.Event()

    def watch() -> None:
        if stop.wait(after_s):
            return
        while not stop.wait(0.2):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # succeeds only while a reader waits
            except OSError as exc:
                if exc.errno in (errno.ENXIO, errno.ENOENT):
                    continue
                return
            state["unblocked"] = True
            os.close(fd)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join(5)


async def refused(client, tool: str, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} {arguments} was not refused: {text_of(result)}"
    return text_of(result)


# ---------------------------------------------------------------- names that look like options -------
async def test_response_file_source_is_refused_and_nothing_is_written_outside(kernel_ws, tmp_path):
    sentinel = tmp_path / "written-by-clang.s"
    # what clang would read as options, had it been handed "@opts.hip": its output redirected outside
    (kernel_ws / "@opts.hip").write_text(f"-o {sentinel}\n")
    (kernel_ws / "src").mkdir()
    (kernel_ws / "src" / "@opts.hip").write_text(f"-o {sentinel}\n")
    async with Client(build_server(kernel_ws)) as client:
        for source in ("@opts.hip", "./@opts.hip", "src/@opts.hip"):
            text = await refused(client, "compile_kernel", source=source)
            assert "invalid input" in text and "response file" in text
        # a link whose name is harmless reaches clang as an absolute path: compiled as source, never as options
        os.symlink("@opts.hip", kernel_ws / "innocent.hip")
        result = await client.call_tool("compile_kernel", {"source": "innocent.hip"})
        assert result.structured_content["ok"] is False  # "-o ..." is not HIP
    assert not sentinel.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kws"]


async def test_dash_source_is_refused_and_never_reaches_clang_as_an_option(kernel_ws):
    (kernel_ws / "-Wno-everything.hip").write_text(KERNEL)
    (kernel_ws / "-x.hip").write_text(KERNEL)
    async with Client(build_server(kernel_ws)) as client:
        for source in ("./-x.hip", "./-Wno-everything.hip", "src/../-x.hip"):
            text = await refused(client, "compile_kernel", source=source)
            assert "invalid input" in text and "would read as an option" in text
        # the same file through a link: clang gets the absolute path and compiles it as the input
        os.symlink("-x.hip", kernel_ws / "plain.hip")
        done = await call(client, "compile_kernel", source="plain.hip")
    assert done["ok"] and [k["name"] for k in done["kernels"]] == ["plain"]
    assert done["source"] == "-x.hip"


async def test_names_starting_with_dash_or_at_are_refused_by_every_importer(workspace):
    (workspace / "-k.csv").write_text("a\n")
    (workspace / "@k.csv").write_text("a\n")
    async with Client(build_server(workspace)) as client:
        for name in ("./-k.csv", "./@k.csv"):
            for tool, arguments in [("profile_import", {"paths": [name]}), ("thread_trace_import", {"path": name})]:
                text = await refused(client, tool, **arguments)
                assert "invalid input" in text and "which a program would read as" in text, text


async def test_a_tag_with_a_trailing_newline_is_refused(workspace):
    async with Client(build_server(workspace)) as client:
        text = await refused(client, "experiment_start", tag="t\n")
    assert "run tag" in text
    assert not (workspace / ".kernel-mcp" / "worktrees").exists()


# ---------------------------------------------------------------- symbolic links ------------------------
async def _one_run(client) -> str:
    done = await call(client, "run_command", name="hello")
    return done["run_id"]


async def test_a_run_file_replaced_by_a_link_is_not_served(workspace, secret):
    async with Client(build_server(workspace)) as client:
        run_id = await _one_run(client)
        log = workspace / ".kernel-mcp" / "runs" / run_id / "hello.stdout.log"
        log.unlink()
        os.symlink(secret, log)
        text = await refused(client, "run_artifacts", run_id=run_id, file="hello.stdout.log")
        assert "symbolic link" in text and "TOP-SECRET" not in text
        listing = await call(client, "run_artifacts", run_id=run_id)
        assert "hello.stdout.log" not in listing["files"]
        with pytest.raises(Exception) as info:
            resource = await client.read_resource(f"kernel-mcp://runs/{run_id}/hello.stdout.log")
            assert "TOP-SECRET" not in resource.contents[0].text  # reached only if not refused
        assert "TOP-SECRET" not in str(info.value)


async def test_a_run_folder_replaced_by_a_link_is_not_served(workspace, tmp_path, secret):
    async with Client(build_server(workspace)) as client:
        run_id = await _one_run(client)
        folder = workspace / ".kernel-mcp" / "runs" / run_id
        elsewhere = tmp_path / "elsewhere"
        shutil.move(folder, elsewhere)
        shutil.copy(secret, elsewhere / "hello.stdout.log")
        os.symlink(elsewhere, folder)
        text = await refused(client, "run_artifacts", run_id=run_id, file="hello.stdout.log")
        assert "symbolic link" in text and "TOP-SECRET" not in text
        assert "symbolic link" in await refused(client, "run_artifacts", run_id=run_id)
        recent = await call(client, "run_artifacts")
        assert run_id not in [r["run_id"] for r in recent["runs"]]
        with pytest.raises(Exception) as info:
            resource = await client.read_resource(f"kernel-mcp://runs/{run_id}/hello.stdout.log")
            assert "TOP-SECRET" not in resource.contents[0].text
        assert "TOP-SECRET" not in str(info.value)


async def test_a_link_inside_an_imported_folder_leading_out_is_refused_without_echo(workspace, secret):
    prof = workspace / "prof"
    prof.mkdir()
    os.symlink(secret, prof / "kmcp_kernel_trace.csv")
    traces = workspace / "traces" / "ui_output_agent_1_dispatch_1"
    traces.mkdir(parents=True)
    os.symlink(secret, traces / "code.json")
    os.symlink(secret, workspace / "linked.csv")
    async with Client(build_server(workspace)) as client:
        for tool, arguments in [
            ("profile_import", {"paths": ["prof"]}),
            ("thread_trace_import", {"path": "traces"}),
            ("profile_import", {"paths": ["linked.csv"]}),
            ("thread_trace_import", {"path": "linked.csv"}),
        ]:
            text = await refused(client, tool, **arguments)
            assert "outside the workspace" in text, text
            assert "TOP-SECRET" not in text


async def test_a_link_staying_inside_the_workspace_is_still_read(workspace):
    real = workspace / "real"
    real.mkdir()
    shutil.copy(fixture("rocm/sdk2508-kernel_trace.csv"), real / "kmcp_kernel_trace.csv")
    prof = workspace / "prof"
    prof.mkdir()
    os.symlink(real / "kmcp_kernel_trace.csv", prof / "kmcp_kernel_trace.csv")
    async with Client(build_server(workspace)) as client:
        summary = await call(client, "profile_import", paths=["prof"])
    assert summary["kernels"]


# ---------------------------------------------------------------- FIFOs ---------------------------------
async def test_a_fifo_as_an_imported_csv_is_refused_at_once(workspace):
    fifo = workspace / "x.csv"
    os.mkfifo(fifo)
    (workspace / "traces").mkdir()
    os.mkfifo(workspace / "traces" / "stats_x.csv")
    with fifo_watchdog(fifo) as guard, fifo_watchdog(workspace / "traces" / "stats_x.csv") as guard2:
        with anyio.fail_after(GUARD_S * 2):
            async with Client(build_server(workspace)) as client:
                for tool, arguments in [
                    ("profile_import", {"paths": ["x.csv"]}),
                    ("thread_trace_import", {"path": "x.csv"}),
                    ("thread_trace_import", {"path": "traces"}),
                ]:
                    text = await refused(client, tool, **arguments)
                    assert "FIFO" in text and "only regular files" in text, text
    assert not guard["unblocked"] and not guard2["unblocked"], "a read blocked on the FIFO"


ATT_DISPATCH = Path(__file__).resolve().parent / "data/rocm/att-gfx950/fused_rope_cache/att_viewer/big/ui_output_agent_4253_dispatch_8781"


async def test_planted_wave_files_are_refused_by_name(workspace, secret):
    """Wave files are read for the decoder's wait records: a FIFO or a link out named like one is
    refused, naming the file, before anything opens it."""
    for name, plant in (("se9_sm0_sl0_wv0.json", os.mkfifo), ("se9_sm0_sl0_wv1.json", lambda p: os.symlink(secret, p))):
        folder = workspace / name.split(".")[0] / ATT_DISPATCH.name
        shutil.copytree(ATT_DISPATCH, folder)
        plant(folder / name)
        with fifo_watchdog(folder / name) if name.endswith("wv0.json") else nullcontext() as guard:
            with anyio.fail_after(GUARD_S * 2):
                async with Client(build_server(workspace)) as client:
                    text = await refused(client, "thread_trace_import", path=name.split(".")[0])
        assert name in text and ("FIFO" in text or "outside the workspace" in text) and "TOP-SECRET" not in text, text
        assert guard is None or not guard["unblocked"]


async def test_a_fifo_as_the_benchmark_csv_fails_the_run(workspace):
    write_toml(
        workspace,
        f"""
        [target]
        arch = "gfx950"
        platform = "offline"

        [benchmark]
        command = {toml_list(PY, "-c", "import os; os.utime('x.csv')")}
        csv = "x.csv"
        config_columns = ["shape"]
        correctness = {{ column = "err_k", rule = "== 0" }}
        metric = "us_k"
        timeout_s = 60
    """,
    )
    fifo = workspace / "x.csv"
    os.mkfifo(fifo)
    with fifo_watchdog(fifo) as guard:
        with anyio.fail_after(GUARD_S * 2):
            async with Client(build_server(workspace)) as client:
                result = await client.call_tool("run_benchmark", {"repeats": 1})
    assert not guard["unblocked"], "the CSV read blocked on the FIFO"
    text = text_of(result)
    assert result.is_error and text.startswith("benchmark failed: ") and "FIFO" in text and "0 repeat(s) completed" in text, text


async def test_a_fifo_as_kernel_mcp_toml_is_refused_and_the_server_keeps_serving(workspace):
    config = workspace / "kernel-mcp.toml"
    config.unlink()
    os.mkfifo(config)
    with fifo_watchdog(config) as guard:
        with anyio.fail_after(GUARD_S * 2):
            async with Client(build_server(workspace)) as client:
                text = await refused(client, "workspace_info")
                assert "kernel-mcp.toml" in text and "FIFO" in text
                assert (await client.call_tool("hw_spec", {"arch": "gfx950"})).is_error is False
    assert not guard["unblocked"], "loading the config blocked on the FIFO"
