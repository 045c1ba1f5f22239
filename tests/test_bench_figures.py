"""A benchmark CSV whose metric is not a finite positive number is a failed run with the reason, never
a NaN figure: one NaN in the ledger made every later answer fail its own output schema in the
client. Through the real MCP client, which checks each structured result against the tool's schema."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from mcp import Client

from kernel_mcp.bench import ClassRun, worse
from kernel_mcp.bench.results import figures
from kernel_mcp.errors import CommandFailed
from kernel_mcp.server import build_server
from kernel_mcp.workspace import parse_config

from conftest import BASIC_TOML, call, commit_kernel_workspace, text_of

pytestmark = pytest.mark.anyio


def bench_writing(rows: str) -> str:
    """A benchmark script writing these CSV rows under the workspace's header (shape,err_k,us_k)."""
    return f"import os\nos.makedirs('out', exist_ok=True)\nopen('out/bench.csv','w').write('shape,err_k,us_k\\n' + {rows!r})\n"


async def run_bench(root):
    async with Client(build_server(root)) as client:
        result = await client.call_tool("run_benchmark", {"repeats": 2})
    # the client validated the structured result against run_benchmark's output schema already
    assert not result.is_error, text_of(result)
    return result.structured_content, text_of(result)


async def failed_bench(root) -> tuple[str, dict]:
    """A run_benchmark that must fail: its error text, and the summary its run kept."""
    async with Client(build_server(root)) as client:
        result = await client.call_tool("run_benchmark", {"repeats": 2})
        text = text_of(result)
        assert result.is_error and text.startswith("benchmark failed: "), text
        run_id = text.split("\nrun ", 1)[1].split(":", 1)[0]
        summary = await call(client, "run_artifacts", run_id=run_id, file="summary.json")
    return text, json.loads(summary["text"])


@pytest.mark.parametrize("cell, shown", [("nan", "NaN"), ("", "NaN"), ("inf", "inf"), ("-inf", "-inf"), ("fast", "'fast'"), ("0", "0.0")])
async def test_a_metric_that_is_not_a_time_fails_the_run_naming_column_class_and_value(workspace, cell, shown):
    (workspace / "bench.py").write_text(bench_writing(f"small,0,10.0\nlarge,0,{cell}\n"))
    text, kept = await failed_bench(workspace)
    failure = kept["failure"]
    assert failure and f"the metric column us_k holds {shown} in shape=large (row 2 of 2)" in failure, failure
    assert kept["classes"] == [] and kept["repeats"] == 0  # no figure was made of it
    assert f"benchmark failed: run 1: the metric column us_k holds {shown} in shape=large" in text


async def test_the_failure_says_when_the_row_was_also_wrong(workspace):
    (workspace / "bench.py").write_text(bench_writing("small,0,10.0\nlarge,3,nan\nhuge,0,nan\n"))
    text, kept = await failed_bench(workspace)
    assert "holds NaN in shape=large (row 2 of 3)" in kept["failure"] and "holds NaN in shape=large (row 2 of 3)" in text
    assert "that row's err_k 3.0 also fails == 0; 2 rows in all" in kept["failure"]


@pytest.mark.parametrize("cell, shown", [("nan", "NaN"), ("inf", "inf"), ("bad", "'bad'")])
async def test_a_wrong_class_with_an_error_that_is_not_a_number_says_so_in_text(workspace, cell, shown):
    (workspace / "bench.py").write_text(bench_writing(f"small,0,10.0\nlarge,0.5,20.0\nlarge,{cell},20.0\n"))
    answer, text = await run_bench(workspace)
    assert answer["bench"]["failure"] is None
    large = next(c for c in answer["bench"]["classes"] if c["key"] == "shape=large")
    assert large["correct"] is False and large["failing_rows"] == 2 and large["worst_error"] == shown
    assert all(math.isfinite(s) for s in large["samples"])
    assert f"shape=large: WRONG (2 rows, worst {shown})" in text


@pytest.mark.parametrize(
    "kernel, reason",
    [
        ("US = float('nan')\nERR = 0\n", "the metric column us_k holds NaN in shape=small"),
        ("US = 10.0\nERR = float('nan')\n", "worst err_k NaN"),
    ],
)
async def test_an_experiment_goes_on_after_a_candidate_wrote_nan(workspace, kernel, reason):
    """The user's case: a kernel whose benchmark wrote NaN; evaluate, revert and log still answer
    (and their structured results validate)."""
    commit_kernel_workspace(workspace)
    async with Client(build_server(workspace)) as client:
        start = await call(client, "experiment_start", tag="nan")
        Path(start["worktree"], "kernel.py").write_text(kernel)
        evaluated = await client.call_tool("experiment_evaluate", {"hypothesis": "a kernel that came out NaN"})
        assert not evaluated.is_error, text_of(evaluated)
        reasons = evaluated.structured_content["attempt"]["reasons"]
        assert any(reason in r for r in reasons), reasons
        await call(client, "experiment_revert")
        await call(client, "experiment_log", limit=5)
        await call(client, "experiment_status")


def test_figures_refuse_non_finite_metrics_before_any_class_is_made():
    cfg = parse_config(BASIC_TOML).benchmark
    frame = pd.DataFrame({"shape": ["a", "b"], "err_k": [0, 0], "us_k": [1.0, float("inf")]})
    with pytest.raises(CommandFailed, match=r"us_k holds inf in shape=b \(row 2 of 2\): not a finite number"):
        figures(frame, cfg)
    good = figures(frame.assign(us_k=[4.0, 9.0]), cfg)
    assert [c.metric for c in good.classes] == pytest.approx([4.0, 9.0])


def test_worst_errors_that_are_not_numbers_win_and_old_records_read_as_text():
    assert worse(None, 0.5) == 0.5 and worse(0.5, 2.0) == 2.0 and worse(0.5, None) == 0.5
    assert worse(0.5, "NaN") == "NaN" and worse("inf", 9.0) == "inf" and worse("NaN", "inf") == "NaN"
    old = ClassRun.model_validate({"key": "shape=a", "rows": 1, "correct": False, "failing_rows": 1, "worst_error": float("nan"), "samples": [1.0]})
    assert old.worst_error == "NaN" and '"worst_error":"NaN"' in old.model_dump_json()


@pytest.mark.parametrize("body", ["shape,err_k\nsmall,0,10\nsmall,0,11\n", "shape,err_k,us_k\nsmall,0,10,99\n"])
def test_a_row_longer_than_the_header_is_a_failed_run_not_an_internal_error(tmp_path, body):
    """pandas would make a header one field short into row labels (repeated ones broke the figures
    with a TypeError the fuzz run found) or drop the extra fields: both are refused, by name."""
    from kernel_mcp.bench.results import read_csv

    path = tmp_path / "bench.csv"
    path.write_text(body)
    with pytest.raises(CommandFailed, match=r"bench\.csv could not be read: Length of header"):
        read_csv(path)
