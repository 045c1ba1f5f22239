"""Time the server adds to a tool call that runs a trivial command.

Side by side in one run: the trivial command (`true`) started directly with subprocess, and the
same command run through the `run_command` tool, in memory and over stdio (a real server
process). Prints medians of many calls and the time added per call. Target: under 20 ms added.

    python benchmarks/overhead.py [--calls 200]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from kernel_mcp.server import build_server


def make_workspace(folder: Path) -> None:
    true = shutil.which("true")
    (folder / "kernel-mcp.toml").write_text(f"[commands]\nnoop = {json.dumps([true])}\n")


def time_direct(calls: int) -> list[float]:
    true = shutil.which("true")
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        subprocess.run([true], check=True)
        samples.append(time.perf_counter() - start)
    return samples


async def time_client(client: Client, calls: int) -> list[float]:
    for _ in range(5):  # warm-up: imports, first-call caches
        await client.call_tool("run_command", {"name": "noop"})
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        result = await client.call_tool("run_command", {"name": "noop"})
        samples.append(time.perf_counter() - start)
        assert not result.is_error, result.content
    return samples


async def measure(folder: Path, calls: int) -> dict[str, list[float]]:
    out = {"direct": time_direct(calls)}
    async with Client(build_server(folder)) as client:
        out["in-memory"] = await time_client(client, calls)
    params = StdioServerParameters(command=sys.executable, args=["-m", "kernel_mcp", "serve", "--workspace", str(folder)], env=dict(os.environ))
    async with Client(params) as client:
        out["stdio"] = await time_client(client, calls)
    out["direct (again)"] = time_direct(calls)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_workspace(folder)
        results = anyio.run(measure, folder, args.calls)
    direct = statistics.median(results["direct"] + results["direct (again)"])
    print(f"{'path':<16} {'median ms':>10} {'p90 ms':>8} {'added ms':>9} {'ratio':>6}")
    for name, samples in results.items():
        med = statistics.median(samples)
        p90 = statistics.quantiles(samples, n=10)[-1]
        print(f"{name:<16} {med * 1e3:>10.2f} {p90 * 1e3:>8.2f} {(med - direct) * 1e3:>9.2f} {med / direct:>6.2f}")
    worst = max(statistics.median(results[k]) for k in ("in-memory", "stdio")) - direct
    print(f"added per call (worst path): {worst * 1e3:.2f} ms; target < 20 ms: {'met' if worst < 0.020 else 'MISSED'}")


if __name__ == "__main__":
    main()
