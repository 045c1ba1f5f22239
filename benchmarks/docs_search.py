"""Latency of docs_search over the shipped index plus the ingested public ROCm documents.

    python benchmarks/docs_search.py [--docs ../shared/docs/rocm] [--rounds 20] [--target gfx950]

Measures the tool as an agent calls it (in-memory MCP client, so validation and rendering are
included) and the store query alone; prints p50/p95 and the size of a typical answer. Two kinds of
question: twenty short ones in the documents' words, asked `--rounds` times, and the blind question
sets of tests/data (questions as people ask them, often a long sentence), each asked once in turn, as
a session meets them. Then, with --first N, the first search of N fresh server processes
(`python -m kernel_mcp serve` over stdio, the index already built): the time from sending the call to
its answer, which includes opening the index and the ranker's first use. With
--target the workspace's kernel-mcp.toml names that arch, which docs_search then prefers (it reads
the config on each call). Target: p95 under 20 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's kernel_mcp, not the installed one

import anyio
from mcp import Client

from kernel_mcp.docs import ingest, open_store
from kernel_mcp.server import build_server
from start_time import HANDSHAKE_VERSION  # the protocol version the start-time benchmark's handshake sends

QUERIES = [
    "LDS size per CU gfx950",
    "s_waitcnt lgkmcnt stall",
    "MFMA bf16 throughput",
    "occupancy VGPR granule",
    "sched_group_barrier mask values",
    "HBM bandwidth MI300X",
    "L2 cache hit rate counter",
    "bank conflicts LDS",
    "wavefront size",
    "Infinity Cache",
    "global load to LDS",
    "roofline ridge point",
    "TCC_HIT TCC_MISS",
    "ds_read_b128",
    "register spills scratch",
    "warp stall reasons ncu",
    "compute units per XCD",
    "How many compute units does the MI300X have",
    "VALU utilization",
    "memory clock",
]


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def blind_questions() -> list[str]:
    """Every question of the blind sets (tests/data), in the order the sets were written."""
    folder = Path(__file__).resolve().parents[1] / "tests" / "data"
    return [item["query"] for path in sorted(folder.glob("docs-questions-blind-*.json")) for item in json.loads(path.read_text())["questions"]]


async def measure(folder: Path, rounds: int) -> tuple[list[float], list[float], list[int], list[float]]:
    store = open_store(folder / ".kernel-mcp")
    direct: list[float] = []
    for _ in range(rounds):
        for q in QUERIES:
            t = time.perf_counter()
            store.search(q, None, 8)
            direct.append(time.perf_counter() - t)
    tool: list[float] = []
    sizes: list[int] = []
    async with Client(build_server(folder)) as client:
        await client.call_tool("docs_search", {"query": "warm up"})
        for _ in range(rounds):
            for q in QUERIES:
                t = time.perf_counter()
                result = await client.call_tool("docs_search", {"query": q})
                tool.append(time.perf_counter() - t)
                sizes.append(len(result.content[0].text.encode()))
        asked: list[float] = []
        for q in blind_questions():
            t = time.perf_counter()
            await client.call_tool("docs_search", {"query": q})
            asked.append(time.perf_counter() - t)
    return direct, tool, sizes, asked


def first_search(folder: Path, query: str) -> float:
    """Seconds from sending a fresh server's first docs_search call (after the handshake) to its answer."""
    command = [sys.executable, "-m", "kernel_mcp", "serve", "--workspace", str(folder)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        hello = {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": {"name": "first-search", "version": "0"}}
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n")
        proc.stdin.flush()
        if "result" not in json.loads(proc.stdout.readline() or "{}"):
            raise SystemExit("no answer to initialize")
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        call = {"name": "docs_search", "arguments": {"query": query}}
        started = time.perf_counter()
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}) + "\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline() or "{}")
        took = time.perf_counter() - started
        if answer.get("result", {}).get("isError", True):
            raise SystemExit(f"docs_search failed: {answer}")
        return took
    finally:
        proc.stdin.close()
        proc.wait(60)


# the public ROCm documents the docs benchmarks ingest, in the shared folder beside the checkout
ROCM_DOCS = str(Path(__file__).resolve().parents[2] / "shared" / "docs" / "rocm")


def docs_folder(value: str) -> Path:
    """--docs of the docs benchmarks: a folder that is not there is refused, since the index would
    then be the shipped pages alone and every figure another one, silently."""
    if not Path(value).is_dir():
        raise argparse.ArgumentTypeError(f"{value}: no such folder (the public ROCm documents the index is measured with)")
    return Path(value)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=docs_folder, default=ROCM_DOCS)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--target", help="the arch the workspace's [target] names (default: none)")
    parser.add_argument("--first", type=int, default=0, help="also time the first search of this many fresh server processes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "kernel-mcp.toml").write_text(f'[target]\narch = "{args.target}"\n' if args.target else "")
        report = ingest(open_store(folder / ".kernel-mcp"), [args.docs])
        print(f"index: {report.sources_total} sources, {report.sections_total} sections, {report.passages_total} passages")
        direct, tool, sizes, asked = anyio.run(measure, folder, args.rounds)
        firsts = [first_search(folder, QUERIES[i % len(QUERIES)]) for i in range(args.first)]
    print(f"{'path':<22} {'p50 ms':>8} {'p95 ms':>8} {'n':>6}")
    for name, samples in (("store query", direct), ("docs_search tool", tool), ("tool, blind questions", asked)):
        print(f"{name:<22} {pct(samples, 0.5) * 1e3:>8.2f} {pct(samples, 0.95) * 1e3:>8.2f} {len(samples):>6}")
    if firsts:
        print(f"first search of a fresh server, ms: {', '.join(f'{t * 1e3:.0f}' for t in firsts)} (target: 200)")
    print(f"answer size: median {statistics.median(sizes):.0f} B, max {max(sizes)} B")
    print(
        f"p95 of the tool under 20 ms: {'met' if pct(tool, 0.95) < 0.020 else 'MISSED'} (short queries), {'met' if pct(asked, 0.95) < 0.020 else 'MISSED'} (blind questions)"
    )


if __name__ == "__main__":
    main()
