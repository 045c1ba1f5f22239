"""Pictures reach the client: plots and charts come back as image content, run artifacts as
resources of their own MIME type (binary ones as blobs), large text artifacts in pages, and a read
of something that is not there as a clear error. All through the SDK's real in-memory client, with
real matplotlib and real files."""

from __future__ import annotations

import base64
import io
import json
import sqlite3
from pathlib import Path

import git
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

import test_ledger
from kernel_mcp import cli
from kernel_mcp.bench import ClassRun
from kernel_mcp.ledger import chart
from kernel_mcp.ledger.state import Attempt, Experiment
from kernel_mcp.server import build_server

from conftest import PY, call, toml_list

pytestmark = pytest.mark.anyio

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG, decoded by matplotlib (a broken file raises)."""
    import matplotlib.image

    pixels = matplotlib.image.imread(io.BytesIO(data), format="png")
    return pixels.shape[1], pixels.shape[0]


def images_of(result) -> list:
    return [block for block in result.content if block.type == "image"]


async def test_roofline_plot_comes_back_as_an_image(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text("")
    async with Client(build_server(tmp_path)) as client:
        plain = await client.call_tool("roofline", {"arch": "gfx950", "flops": 1e12, "bytes": 1e9})
        assert images_of(plain) == []  # no plot asked, no picture
        result = await client.call_tool("roofline", {"arch": "gfx950", "flops": 1e12, "bytes": 1e9, "seconds": 1e-3, "plot": True})
    assert not result.is_error
    assert result.content[0].type == "text" and "plot: kernel-mcp://runs/" in result.content[0].text
    [image] = images_of(result)
    assert image.mime_type == "image/png"
    data = base64.b64decode(image.data)
    assert data.startswith(PNG_SIGNATURE)
    width, height = png_size(data)
    assert width > 300 and height > 200
    kept = tmp_path / ".kernel-mcp" / "runs" / result.structured_content["roofline"]["plot"].split("/")[-2] / "roofline.png"
    assert kept.read_bytes() == data  # the picture sent is the one kept
    assert image.meta["kernel-mcp/file"] == str(kept)
    assert "image" not in str(result.structured_content)  # structured content stays plain data


# ------------------------------------------------------------------- the experiment's history ----
def make_experiment_ws(root: Path) -> Path:
    """The ledger tests' CPU benchmark (two config classes, a kernel file whose figures a test sets)
    in a git repository under `root`."""
    ws = root / "repo" / "ws"
    ws.mkdir(parents=True)
    (ws / "bench.py").write_text(test_ledger.BENCH)
    (ws / "kernel.py").write_text(test_ledger.KERNEL)
    (ws / "kernel-mcp.toml").write_text(
        f'[target]\narch = "gfx950"\nplatform = "offline"\n\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\n'
        'csv = "out/bench.csv"\nconfig_columns = ["shape"]\ncorrectness = { column = "err_k", rule = "== 0" }\n'
        'metric = "us_k"\ntarget_kernel = "k"\nnoise_threshold = 0.01\ntimeout_s = 20\nrepeats = 3\n'
        '[harness]\neditable = ["kernel.py"]\n'
    )
    (ws / ".gitignore").write_text("out/\n__pycache__/\n")
    repo = git.Repo.init(ws.parent)
    repo.git.add("-A")
    repo.git.commit("-m", "kernel and benchmark", "--author", "t <t@example.invalid>")
    return ws


@pytest.fixture
def experiment_ws(tmp_path: Path) -> Path:
    return make_experiment_ws(tmp_path)


async def test_experiment_log_draws_the_history_as_an_image(experiment_ws):
    async with Client(build_server(experiment_ws)) as client:
        wt = (await call(client, "experiment_start", tag="pics"))["worktree"]
        test_ledger.set_kernel(wt, 90.0, 180.0)
        assert (await call(client, "experiment_evaluate", hypothesis="less work"))["attempt"]["decision"] == "keep"
        await call(client, "experiment_keep", why="less work")
        test_ledger.set_kernel(wt, 110.0, 220.0)
        assert (await call(client, "experiment_evaluate", hypothesis="more work"))["attempt"]["decision"] == "discard"
        await call(client, "experiment_revert")
        plain = await client.call_tool("experiment_log", {})
        assert images_of(plain) == [] and plain.structured_content.get("chart") is None
        result = await client.call_tool("experiment_log", {"chart": True, "limit": 1})
    assert not result.is_error
    text = result.content[0].text
    assert len(text.encode()) <= 4096 and "chart (every attempt, per config class): kernel-mcp://runs/" in text
    assert len(result.structured_content["attempts"]) == 1  # `limit` cuts the text, not the chart
    [image] = images_of(result)
    assert image.mime_type == "image/png"
    data = base64.b64decode(image.data)
    assert data.startswith(PNG_SIGNATURE) and png_size(data) == (800, 480)
    run_id = result.structured_content["chart"].split("/")[-2]
    kept = experiment_ws / ".kernel-mcp" / "runs" / run_id / "history.png"
    assert kept.read_bytes() == data


def test_history_chart_from_ledger_records():
    """The chart function alone, on the ledger's own models: more classes than it draws, a wrong
    attempt, one still pending; PNG bytes out."""
    classes = [f"shape=s{i}" for i in range(12)]

    def attempt(number: int, outcome: str, scale: float, correct: bool = True) -> Attempt:
        figures = {
            k: ClassRun(key=k, rows=1, correct=correct, failing_rows=0 if correct else 1, worst_error=0.0, samples=[scale * (i + 1) * 10.0] * 3)
            for i, k in enumerate(classes)
        }
        return Attempt(
            id=number,
            tag="t",
            parent_commit="a" * 40,
            hypothesis=f"h{number}",
            figures=figures,
            decision="keep" if outcome == "kept" else "discard",
            outcome=outcome,
            created="2026-01-01T00:00:00",
        )

    experiment = Experiment(
        tag="t",
        branch="kernel-opt/t",
        worktree="wt",
        subdir=".",
        base_commit="a" * 40,
        best_commit="b" * 40,
        best_attempt=3,
        status="running",
        created="2026-01-01T00:00:00",
    )
    history = [attempt(4, "pending", 0.8), attempt(1, "kept", 1.0), attempt(2, "reverted", 1.1, correct=False), attempt(3, "kept", 0.9)]
    assert chart.drawn_classes(history) == (classes[: chart.MAX_CLASSES], 12)
    assert chart.best_steps(sorted(history, key=lambda a: a.id), classes[0]) == ([1, 3, 4], [10.0, 9.0, 9.0])
    data = chart.history_png(experiment, history, metric="us_k")
    assert data.startswith(PNG_SIGNATURE) and png_size(data) == (800, 480)
    empty = chart.history_png(experiment, [], metric="us_k")  # an experiment with nothing measured still draws
    assert empty.startswith(PNG_SIGNATURE)


def test_class_names_are_drawn_as_plain_text_on_one_line():
    """Class names are the CSV's cells: a `$` is a dollar sign, not mathtext (an unbalanced one made
    the chart fail), TeX is off, a newline is escaped, and a name starting with `_` still has its
    legend entry (matplotlib leaves such labels out)."""
    classes = ["shape=$\\frac{1}{$", "_hidden", "two\nlines", "shape=$x^2$"]
    figures = {k: ClassRun(key=k, rows=1, correct=True, failing_rows=0, worst_error=0.0, samples=[10.0 + i]) for i, k in enumerate(classes)}
    first = Attempt(
        id=1, tag="t", parent_commit="a" * 40, hypothesis="baseline", figures=figures, decision="baseline", outcome="kept", created="2026-01-01T00:00:00"
    )
    experiment = Experiment(
        tag="t",
        branch="kernel-opt/t",
        worktree="wt",
        subdir=".",
        base_commit="a" * 40,
        best_commit="a" * 40,
        best_attempt=1,
        status="running",
        created="2026-01-01T00:00:00",
    )
    figure = chart.history_figure(experiment, [first], metric="us_$k")
    [axes] = figure.axes
    texts = axes.get_legend().get_texts()
    assert [t.get_text() for t in texts] == ["shape=$\\frac{1}{$", "_hidden", "two\\nlines", "shape=$x^2$", "kept", "not kept", "wrong results"]
    plain = [axes.title, axes.xaxis.label, axes.yaxis.label, *texts]
    assert all(not t.get_parse_math() and not t.get_usetex() for t in plain)
    data = chart.history_png(experiment, [first], metric="us_$k")
    assert data.startswith(PNG_SIGNATURE) and png_size(data) == (800, 480)


# ------------------------------------------------------------------------- run artifacts as resources ----
def blob_of(read) -> bytes:
    [contents] = read.contents
    return base64.b64decode(contents.blob)


async def test_binary_artifact_is_a_blob_of_its_type(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text("")
    async with Client(build_server(tmp_path)) as client:
        plot = (await call(client, "roofline", arch="sm_90", flops=1e12, bytes=1e9, plot=True))["roofline"]["plot"]
        run_id = plot.split("/")[-2]
        folder = tmp_path / ".kernel-mcp" / "runs" / run_id
        # a profiler's SQLite output, named as rocprofv3 names it: a real database, read back whole
        db = sqlite3.connect(folder / "results.db")
        db.execute("CREATE TABLE kernels (name TEXT)")
        db.commit()
        db.close()
        (folder / "trace.json").write_text('{"kernels": []}')
        png = await client.read_resource(plot)
        sqlite_read = await client.read_resource(f"kernel-mcp://runs/{run_id}/results.db")
        json_read = await client.read_resource(f"kernel-mcp://runs/{run_id}/trace.json")
        meta = await client.read_resource(f"kernel-mcp://runs/{run_id}/meta.json")
    assert png.contents[0].mime_type == "image/png"
    data = blob_of(png)
    assert data == (folder / "roofline.png").read_bytes() and data.startswith(PNG_SIGNATURE) and png_size(data)[0] > 300
    assert sqlite_read.contents[0].mime_type == "application/vnd.sqlite3"
    assert blob_of(sqlite_read) == (folder / "results.db").read_bytes()
    # a short text comes verbatim with its own type, so it still parses
    assert json_read.contents[0].mime_type == "application/json" and json.loads(json_read.contents[0].text) == {"kernels": []}
    assert json.loads(meta.contents[0].text)["tool"] == "roofline"
    assert json_read.contents[0].meta["kernel-mcp/pages"] == 1


async def test_large_text_artifact_comes_in_pages(workspace):
    page_bytes = 16 * 4096  # the default budget: 4 KB answers, pages of 16 of them
    lines = [f"{i:07d}    v_fma_f32 v1, v2, v3, v4 ; é\n" for i in range(8000)]  # 41 bytes each, é two of them
    pad = (page_bytes - 39) % 41  # so that the first page ends inside an é
    listing = ";" + "-" * (pad - 2) + "\n" + "".join(lines)  # about 330 KB: six pages
    assert listing.encode()[page_bytes] & 0xC0 == 0x80  # a continuation byte: the cut must move past it
    async with Client(build_server(workspace)) as client:
        run_id = (await call(client, "run_command", name="hello"))["run_id"]
        folder = workspace / ".kernel-mcp" / "runs" / run_id
        (folder / "kernel.s").write_text(listing, encoding="utf-8")
        uri = f"kernel-mcp://runs/{run_id}/kernel.s"
        first = (await client.read_resource(uri)).contents[0]
        pages = [first]
        while "kernel-mcp/next" in pages[-1].meta:
            pages.append((await client.read_resource(pages[-1].meta["kernel-mcp/next"])).contents[0])
        again = (await client.read_resource(uri + "?page=2")).contents[0]
    size = len(listing.encode())
    count = -(-size // page_bytes)
    assert len(pages) == count >= 5
    header, _, body = first.text.partition("\n")
    assert header.startswith(f"[kernel.s: page 1 of {count}, bytes 0-") and f"next page: {uri}?page=2" in header
    assert len(body.encode()) <= page_bytes + 3  # capped: a page, not the file
    assert first.mime_type == "text/plain" and first.meta["kernel-mcp/pages"] == count
    assert "this is the last page" in pages[-1].text.partition("\n")[0] and pages[-1].meta["kernel-mcp/page"] == count
    assert again.text == pages[1].text
    # the pages put together are the file: nothing lost or doubled at a boundary, no character cut
    assert "".join(p.text.partition("\n")[2] for p in pages) == listing


async def test_unknown_run_file_or_page_is_a_clear_error(workspace):
    async with Client(build_server(workspace)) as client:
        run_id = (await call(client, "run_command", name="hello"))["run_id"]
        cases = [
            ("kernel-mcp://runs/20260101-000000-x-abcdef/hello.stdout.log", ["no run '20260101-000000-x-abcdef'", run_id]),
            ("kernel-mcp://runs/not-a-run/x.log", ["bad run id 'not-a-run'", run_id]),
            (f"kernel-mcp://runs/{run_id}/nothing.txt", ["has no file 'nothing.txt'", "hello.stdout.log", "meta.json"]),
            (f"kernel-mcp://runs/{run_id}/meta.json?page=9", ["there is no page 9"]),
            (f"kernel-mcp://runs/{run_id}/meta.json?page=two", ["page must be a whole number"]),
        ]
        for uri, expected in cases:
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            message = caught.value.error.message
            assert "Error creating resource" not in message, uri
            assert all(word in message for word in expected), (uri, message)
            assert caught.value.error.code == INVALID_PARAMS
        # the server keeps serving
        assert "hello from the workspace" in (await client.read_resource(f"kernel-mcp://runs/{run_id}/hello.stdout.log")).contents[0].text


def test_command_line_names_the_picture_file(tmp_path, capsys):
    (tmp_path / "kernel-mcp.toml").write_text("")
    assert cli.main(["call", "--workspace", str(tmp_path), "roofline", "arch=sm_90", "flops=1e12", "bytes=1e9", "plot=true"]) == 0
    printed = capsys.readouterr().out
    [line] = [text for text in printed.splitlines() if text.startswith("[image image/png: ")]
    path = Path(line.removeprefix("[image image/png: ").removesuffix("]"))
    assert path.read_bytes().startswith(PNG_SIGNATURE) and tmp_path / ".kernel-mcp" / "runs" in path.parents
    assert "iVBORw0KGgo" not in printed  # no base64 PNG at the terminal


async def test_run_artifacts_points_a_binary_file_to_its_resource(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text("")
    async with Client(build_server(tmp_path)) as client:
        plotted = await client.call_tool("roofline", {"arch": "gfx950", "flops": 1e12, "bytes": 1e9, "seconds": 1e-3, "plot": True})
        run_id = plotted.structured_content["roofline"]["plot"].split("/")[-2]
        shown = await client.call_tool("run_artifacts", {"run_id": run_id, "file": "roofline.png"})
        meta = await client.call_tool("run_artifacts", {"run_id": run_id, "file": "meta.json"})
    assert shown.is_error and "is binary (image/png" in shown.content[0].text
    assert f"kernel-mcp://runs/{run_id}/roofline.png" in shown.content[0].text  # where to read it instead
    assert not meta.is_error and '"tool"' in meta.content[0].text  # text files are shown as before
