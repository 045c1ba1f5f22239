"""Parse and summarise one million kernel dispatches: a rocprofv3 kernel_trace.csv and a rocpd database.

    python benchmarks/profile_parse.py [--dispatches 1000000]

Both inputs are generated in the real formats (the column set of rocprofv3's kernel_trace.csv as
recorded in the shared fixtures; the rocpd database from the official DDL, filled as rocprofv3
fills it). Each case is timed in a fresh process that also reports its peak memory (VmHWM).
Targets: under 5 s and under 1 GB each.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO.parent / "shared" / "fixtures" / "rocm" / "rocpd-schema"
HEADER = [
    "Kind",
    "Agent_Id",
    "Queue_Id",
    "Stream_Id",
    "Thread_Id",
    "Dispatch_Id",
    "Kernel_Id",
    "Kernel_Name",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Workgroup_Size_X",
    "Workgroup_Size_Y",
    "Workgroup_Size_Z",
    "Grid_Size_X",
    "Grid_Size_Y",
    "Grid_Size_Z",
]
NAMES = [f"void conv3d_fast_kernel<{r}>(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16*, int, int, int, int, FastGeom)" for r in (4, 6, 7, 8)] + [
    f"void at::native::elementwise_kernel<128, 4, {i}>(int, at::native::gpu_kernel_impl_nocast<...>)" for i in range(12)
]

MEASURE = """
import json, resource, sys, time
sys.path.insert(0, {repo!r}); sys.path.insert(0, {tests!r})
t = time.perf_counter()
kind, path = sys.argv[1], sys.argv[2]
if kind == "csv":
    from kernel_mcp.profile.parsers import read_kernel_trace
    from kernel_mcp.profile.summary import summarise
    s = summarise(read_kernel_trace(__import__("pathlib").Path(path)), "rocprofv3", "conv3d_fast")
else:
    from kernel_mcp.profile import rocpd
    s = rocpd.summary([__import__("pathlib").Path(path)], "conv3d_fast", ["bench.db"])
seconds = time.perf_counter() - t
# VmHWM is this process image's own peak (ru_maxrss would carry the parent's peak across exec)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps({{"seconds": seconds, "peak_mb": int(hwm) / 1024, "dispatches": s.dispatches, "kernels": s.kernels_total}}))
"""


def make_csv(path: Path, n: int) -> None:
    rng = random.Random(1)
    t = 1_550_151_853_029_637
    with path.open("w", newline="") as handle:
        w = csv.writer(handle, quoting=csv.QUOTE_NONNUMERIC)
        w.writerow(HEADER)
        for i in range(n):
            name = NAMES[i % len(NAMES)]
            d = rng.randint(2_000, 400_000)
            w.writerow(["KERNEL_DISPATCH", "Agent 4", 1, 1, 834304, i + 1, i % len(NAMES) + 10, name, i + 1, t, t + d, 0, 0, 64, 0, 48, 256, 1, 1, 65536, 1, 1])
            t += d + 500


def make_db(path: Path, n: int) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from rocpd_builder import build

    rng = random.Random(1)
    t = 0
    rows = []
    for i in range(n):
        d = rng.randint(2_000, 400_000)
        rows.append({"name": NAMES[i % len(NAMES)], "start": t, "end": t + d, "wg": 256, "grid": 65536, "vgprs": 64, "sgprs": 48})
        t += d + 500
    build(path, SCHEMA, rows)


def measure(kind: str, path: Path) -> dict:
    code = MEASURE.format(repo=str(REPO), tests=str(REPO / "tests"))
    done = subprocess.run([sys.executable, "-c", code, kind, str(path)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dispatches", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        make_csv(folder / "kernel_trace.csv", args.dispatches)
        make_db(folder / "bench.db", args.dispatches)
        print(
            f"generated {args.dispatches} dispatches in each format in {time.perf_counter() - t:.1f} s "
            f"(csv {(folder / 'kernel_trace.csv').stat().st_size / 2**20:.0f} MiB, db {(folder / 'bench.db').stat().st_size / 2**20:.0f} MiB)"
        )
        print(f"{'input':<22} {'seconds':>8} {'peak MB':>8} {'dispatches':>11} {'kernels':>8}  target <5 s, <1 GB")
        for kind, name in (("csv", "kernel_trace.csv"), ("db", "bench.db")):
            r = measure(kind, folder / name)
            ok = "met" if r["seconds"] < 5 and r["peak_mb"] < 1024 else "MISSED"
            print(f"{name:<22} {r['seconds']:>8.2f} {r['peak_mb']:>8.0f} {r['dispatches']:>11} {r['kernels']:>8}  {ok}")


if __name__ == "__main__":
    main()
