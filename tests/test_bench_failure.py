"""run_benchmark: a failed benchmark is an error answer (isError) that says why and names its run,
whose logs, CSVs and summary stay readable; the run lists as finished failed. Real benchmark
processes through the SDK's in-memory client."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from conftest import call, text_of
from kernel_mcp.server import build_server

pytestmark = pytest.mark.anyio

# Succeeds on its first run, crashes on the second: the state file counts the runs.
SECOND_RUN_CRASHES = """
import os, sys
n = int(open('count').read()) + 1 if os.path.exists('count') else 1
open('count', 'w').write(str(n))
if n >= 2:
    print('segfault in k_main (simulated by the benchmark script)', file=sys.stderr)
    sys.exit(139)
os.makedirs('out', exist_ok=True)
open('out/bench.csv', 'w').write('shape,err_k,us_k\\nsmall,0,10.0\\nlarge,0,20.0\\n')
"""


async def test_a_crash_is_an_error_naming_the_run_that_keeps_its_output(workspace):
    (workspace / "bench.py").write_text(SECOND_RUN_CRASHES)
    async with Client(build_server(workspace)) as client:
        result = await client.call_tool("run_benchmark", {"repeats": 3})
        text = text_of(result)
        assert result.is_error, text
        assert text.startswith("benchmark failed: run 2: the benchmark exit 139: segfault in k_main"), text
        assert "1 repeat(s) completed before the failure" in text
        assert "shape=small: ok  us_k 10" in text and "shape=large: ok  us_k 20" in text  # what the first repeat measured
        assert len(text.encode()) <= 4096
        run_id = text.split("\nrun ", 1)[1].split(":", 1)[0]
        assert f'hint: its output is kept: run_artifacts(run_id="{run_id}")' in text
        assert f"kernel-mcp://runs/{run_id}/bench-2.stderr.log" in text
        files = (await call(client, "run_artifacts", run_id=run_id))["files"]
        assert {"bench-1.csv", "bench-2.stderr.log", "summary.json", "meta.json"} <= set(files)
        log = await call(client, "run_artifacts", run_id=run_id, file="bench-2.stderr.log")
        assert "segfault in k_main" in log["text"]
        summary = json.loads((await call(client, "run_artifacts", run_id=run_id, file="summary.json"))["text"])
        assert summary["repeats"] == 1 and summary["failure"].startswith("run 2: the benchmark exit 139")
        listing = text_of(await client.call_tool("run_artifacts", {}))
        line = next(row for row in listing.splitlines() if row.startswith(run_id))
        assert "finished failed: run 2: the benchmark exit 139" in line


async def test_a_benchmark_that_works_is_not_an_error(workspace):
    async with Client(build_server(workspace)) as client:
        result = await client.call_tool("run_benchmark", {"repeats": 2})
        assert not result.is_error and "FAILED" not in text_of(result)
        run_id = result.structured_content["run_id"]
        runs = (await call(client, "run_artifacts"))["runs"]
        assert next(r for r in runs if r["run_id"] == run_id)["state"]["ok"] is True
