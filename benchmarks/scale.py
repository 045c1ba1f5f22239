"""Throughput of experiment_evaluate_many with 1, 2, 4 and 8 worker slots.

A CPU-only stand-in for a GPU benchmark: each run of the fixed command waits `--gpu-s` seconds
(the part a GPU would spend, which does not load this machine's CPUs) and writes a CSV. Each slot
count evaluates the same `--candidates` diffs through the real server (in-memory MCP client) on the
local engine with simulated slots, and the script prints candidates per minute and the speedup
against one slot, side by side in one run. With `--engine ray` the same batches run as Ray tasks
on a local Ray cluster started by the script (with as many logical GPUs as slots).

    python benchmarks/scale.py [--candidates 16] [--gpu-s 0.5] [--engine local|ray]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import git
from mcp import Client

from kernel_mcp.server import build_server

BENCH = """
import csv, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel
time.sleep(float(os.environ.get("SCALE_GPU_S", "0.5")))
os.makedirs("out", exist_ok=True)
with open("out/bench.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["shape", "err_k", "us_k"])
    w.writerow(["one", 0, kernel.US])
"""


def make_workspace(root: Path, engine: str, slots: int) -> Path:
    if root.exists():
        shutil.rmtree(root)
    ws = root / "ws"
    ws.mkdir(parents=True)
    (ws / "bench.py").write_text(BENCH)
    (ws / "kernel.py").write_text("US = 100.0\n")
    engine_table = f'[engine]\nkind = "{engine}"\nslots = {slots}\n' + ('address = "auto"\n' if engine == "ray" else "")
    (ws / "kernel-mcp.toml").write_text(
        f'[target]\narch = "gfx950"\nplatform = "offline"\n\n[benchmark]\ncommand = {json.dumps([sys.executable, "bench.py"])}\n'
        'csv = "out/bench.csv"\nconfig_columns = ["shape"]\ncorrectness = { column = "err_k", rule = "== 0" }\n'
        'metric = "us_k"\nrepeats = 2\ntimeout_s = 60\n[harness]\neditable = ["kernel.py"]\n' + engine_table
    )
    (ws / ".gitignore").write_text("out/\n__pycache__/\n")
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.git.commit("-m", "scale benchmark workspace", "--author", "b <b@example.invalid>")
    return ws


def candidates(n: int) -> list[dict]:
    return [
        {"patch": f"--- a/ws/kernel.py\n+++ b/ws/kernel.py\n@@ -1 +1 @@\n-US = 100.0\n+US = {100.0 - 0.5 * i - 1:.1f}\n", "hypothesis": f"candidate {i}"}
        for i in range(n)
    ]


async def one_batch(root: Path, engine: str, slots: int, n: int) -> dict:
    ws = make_workspace(root / f"slots{slots}", engine, slots)
    async with Client(build_server(ws)) as client:
        started = await client.call_tool("experiment_start", {"tag": f"scale{slots}"})
        assert not started.is_error, started.content[0].text
        t0 = time.perf_counter()
        result = await client.call_tool("experiment_evaluate_many", {"candidates": candidates(n)})
        elapsed = time.perf_counter() - t0
    assert not result.is_error, result.content[0].text
    rows = result.structured_content["rows"]
    failed = [r for r in rows if r["decision"] == "failed"]
    return {
        "slots": slots,
        "candidates": n,
        "seconds": elapsed,
        "per_minute": 60 * n / elapsed,
        "failed": len(failed),
        "slots_used": result.structured_content["slots"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=16)
    parser.add_argument("--gpu-s", type=float, default=0.5)
    parser.add_argument("--engine", choices=["local", "ray"], default="local")
    parser.add_argument("--slots", default="1,2,4,8")
    args = parser.parse_args()
    os.environ["SCALE_GPU_S"] = str(args.gpu_s)
    slot_counts = [int(s) for s in args.slots.split(",")]
    root = Path(tempfile.mkdtemp(prefix="kernel-mcp-scale-"))
    ray_cli = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    results = []
    try:
        for slots in slot_counts:
            if args.engine == "ray":
                subprocess.run(
                    [
                        ray_cli,
                        "start",
                        "--head",
                        "--num-cpus",
                        str(max(slots, 2)),
                        "--num-gpus",
                        str(slots),
                        "--include-dashboard=false",
                        "--disable-usage-stats",
                    ],
                    check=True,
                    capture_output=True,
                )
            try:
                results.append(anyio.run(one_batch, root, args.engine, slots, args.candidates))
            finally:
                if args.engine == "ray":
                    import ray

                    if ray.is_initialized():
                        ray.shutdown()
                    subprocess.run([ray_cli, "stop", "--force"], capture_output=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = results[0]["per_minute"]
    print(f"engine {args.engine}; {args.candidates} candidates per batch; each benchmark run waits {args.gpu_s} s, 2 runs per candidate")
    print("slots  used  seconds  candidates/min  speedup vs 1 slot  failed")
    for r in results:
        print(f"{r['slots']:>5}  {r['slots_used']:>4}  {r['seconds']:7.1f}  {r['per_minute']:14.1f}  {r['per_minute'] / base:17.2f}  {r['failed']:>6}")


if __name__ == "__main__":
    main()
