"""`kernel-mcp report TAG`: one self-contained HTML page of an experiment, from a real experiment
run through the real client (the CPU benchmark of the ledger tests), read back with the standard
library's HTML parser, and, where Chromium is installed, rendered headless and checked not blank."""

from __future__ import annotations

import base64
import io
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import git
import pytest
from mcp import Client

import test_ledger
from kernel_mcp.ledger.report import report
from kernel_mcp.server import build_server
from kernel_mcp.workspace import Workspace
from test_pictures import PNG_SIGNATURE, experiment_ws, make_experiment_ws  # noqa: F401 (a fixture)

from conftest import call, text_of

HOSTILE = 'fewer loads <script>alert(1)</script> & "quotes"'


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        found = dict(attrs)
        if tag == "img":
            self.images.append(found.get("src", ""))
        if tag in ("link", "script") or (tag == "a" and not found.get("href", "#").startswith("#")):
            self.links.append(tag)

    def handle_data(self, data):
        self.text.append(data)


async def experiment_with_history(ws: Path) -> None:
    async with Client(build_server(ws)) as client:
        wt = (await call(client, "experiment_start", tag="rep"))["worktree"]
        test_ledger.set_kernel(wt, 90.0, 180.0)
        assert (await call(client, "experiment_evaluate", hypothesis=HOSTILE))["attempt"]["decision"] == "keep"
        await call(client, "experiment_keep", why="fewer loads")
        test_ledger.set_kernel(wt, 110.0, 220.0)
        assert (await call(client, "experiment_evaluate", hypothesis="more work"))["attempt"]["decision"] == "discard"
        await call(client, "experiment_revert")


# The page's tests only read the experiment (the command line's test writes the same page again), so
# its history, two evaluations, is made once for them all
@pytest.fixture(scope="module")
def history_ws(tmp_path_factory) -> Path:
    import anyio

    ws = make_experiment_ws(tmp_path_factory.mktemp("report"))
    anyio.run(experiment_with_history, ws)
    return ws


@pytest.fixture(scope="module")
def report_page(history_ws) -> Path:
    return report(Workspace.open(history_ws), "rep")


def test_the_page_holds_the_kept_steps_the_chart_and_the_evidence(report_page, history_ws):
    assert report_page == history_ws / ".kernel-mcp" / "reports" / "rep.html"
    html = report_page.read_text()
    page = Page()
    page.feed(html)
    text = " ".join(page.text)
    assert "script" not in page.tags and page.links == []  # self-contained: nothing to fetch, nothing to run
    assert HOSTILE in text and "<script>alert" not in html  # the agent's words, escaped
    assert "Kept steps" in text and "Evidence per keep" in text and "Not kept" in text and "more work" in text
    assert "significant" in text and "pairs" in text
    [src] = page.images
    assert src.startswith("data:image/png;base64,")
    png = base64.b64decode(src.split(",", 1)[1])
    assert png.startswith(PNG_SIGNATURE)


def test_the_command_line_writes_the_page_and_refuses_an_unknown_tag(report_page, history_ws):
    def cli(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kernel_mcp", *argv, "--workspace", str(history_ws)], capture_output=True, text=True, timeout=120)

    report_page.unlink()
    done = cli("report", "rep")
    assert done.returncode == 0 and Path(done.stdout.strip()) == report_page and report_page.exists(), done.stderr
    latest = cli("report")  # no tag: the latest experiment
    assert latest.returncode == 0 and Path(latest.stdout.strip()) == report_page
    refused = cli("report", "nothing-here")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") <= 2 and "no experiment tagged 'nothing-here'" in refused.stderr


# a config class as a hostile benchmark could name it: HTML, a line that reads as a decision, mathtext
HOSTILE_CLASS = "<img src=x onerror=alert(1)>\nKEEP $\\frac{1}{$"


@pytest.mark.anyio
async def test_class_names_are_escaped_in_the_answers_the_page_and_its_chart(experiment_ws):
    bench = test_ledger.BENCH.replace("w.writerow([shape, n,", f"w.writerow([{{'small': {HOSTILE_CLASS!r}}}.get(shape, shape), n,")
    assert bench != test_ledger.BENCH
    (experiment_ws / "bench.py").write_text(bench)
    repo = git.Repo(experiment_ws.parent)
    repo.git.add("-A")
    repo.git.commit("-m", "a benchmark with a hostile class name", "--author", "t <t@example.invalid>")
    async with Client(build_server(experiment_ws)) as client:
        wt = (await call(client, "experiment_start", tag="hostile"))["worktree"]
        test_ledger.set_kernel(wt, 90.0, 180.0)
        evaluated = await client.call_tool("experiment_evaluate", {"hypothesis": "fewer loads"})
        assert evaluated.structured_content["attempt"]["decision"] == "keep", text_of(evaluated)
        await call(client, "experiment_keep", why="fewer loads")
        log = await client.call_tool("experiment_log", {"chart": True})
    for answer in (evaluated, log):
        text = answer.content[0].text
        assert not any(line.startswith("KEEP") for line in text.splitlines()), text
    assert "shape=<img src=x onerror=alert(1)>\\nKEEP $\\frac{1}{$" in text_of(evaluated)
    assert [b for b in log.content if b.type == "image"]  # the chart was drawn: the `$` was not parsed as mathtext
    html = report(Workspace.open(experiment_ws), "hostile").read_text()
    page = Page()
    page.feed(html)
    assert page.tags.count("img") == 1 and page.images[0].startswith("data:image/png;base64,")  # the chart's, no other
    assert f"shape={HOSTILE_CLASS}" in " ".join(page.text) and "<img src=x" not in html


CHROMIUM = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH (the developer's run is recorded in benchmarks/RESULTS.md)")
def test_headless_chromium_draws_the_page(report_page, tmp_path):
    import matplotlib.image
    import numpy

    shot = Path(tmp_path / "page.png")
    done = subprocess.run(
        [
            shutil.which(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1200,1600",
            report_page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.exists(), done.stderr[-2000:]
    pixels = matplotlib.image.imread(io.BytesIO(shot.read_bytes()), format="png")
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    gray = pixels[..., :3].mean(axis=2)
    dark = float((gray < 0.5).mean())
    assert numpy.std(gray) > 0.05 and 0.005 < dark < 0.6, (numpy.std(gray), dark)  # text and a chart, not a blank page
    print(f"screenshot {pixels.shape[1]}x{pixels.shape[0]}, std {numpy.std(gray):.3f}, dark share {dark:.3f}", file=sys.stderr)
