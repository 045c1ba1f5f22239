"""What one profiled benchmark run costs, and where: the same benchmark run plain and under the
profiler's variants, interleaved, on one GPU.

    python benchmarks/profiler_cost.py --workspace DIR --rounds 3 [--command JSON] [--out FILE.json]

Each round runs, in turn: the benchmark alone; ncu as the keep measurement runs it today (every
kernel, its duration and launch facts, base clocks, caches flushed); ncu without the cache flush;
ncu on the target kernel only; ncu with the duration alone; and nsys's CUDA trace (no replay, no
serialisation) when nsys is installed. Printed per variant: the median wall time, the ratio to the
plain run of the same round (medians of the ratios), the launches the profiler saw and their summed
GPU time: the run's wall time minus the plain run's is what the profiler itself costs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernel_mcp.platforms.cuda import ncu  # noqa: E402
from kernel_mcp.profile.parsers import NCU_TIME, ncu_dispatches  # noqa: E402


def variants(command: list[str], target: str, log: Path) -> dict[str, list[str] | None]:
    today = ncu.argv(log, command, None, [], lock_clocks=True)
    split = today.index("--")
    head, tail = today[:split], today[split:]
    only_time = [a if a != head[head.index("--metrics") + 1] else NCU_TIME for a in head]
    nsys = shutil.which("nsys")
    return {
        "plain": command,
        "ncu (today)": today,
        "ncu, no cache flush": head + ["--cache-control", "none"] + tail,
        "ncu, target kernel only": head + ["-k", f"regex:{target}"] + tail,
        "ncu, duration only": only_time + tail,
        "ncu, target only, duration only, no flush": only_time + ["--cache-control", "none", "-k", f"regex:{target}"] + tail,
        "nsys cuda trace": [
            nsys,
            "profile",
            "--trace=cuda",
            "--sample=none",
            "--cpuctxsw=none",
            "--force-overwrite=true",
            "-o",
            str(log.with_suffix("")),
            *command,
        ]
        if nsys
        else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspace", required=True, type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--command", help="the benchmark command as a JSON list, instead of the workspace's")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    cfg = tomllib.loads((args.workspace / "kernel-mcp.toml").read_text())["benchmark"]
    command, target = (json.loads(args.command) if args.command else cfg["command"]), cfg["target_kernel"]
    subprocess.run(command, cwd=args.workspace, check=True, capture_output=True)  # builds and caches before any timed run
    rows: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "profile.csv"
        for r in range(args.rounds):
            plain_s = None
            for name, argv in variants(command, target, log).items():
                if argv is None:
                    continue
                log.unlink(missing_ok=True)
                started = time.monotonic()
                done = subprocess.run(argv, cwd=args.workspace, capture_output=True, text=True)
                wall = time.monotonic() - started
                plain_s = wall if name == "plain" else plain_s
                row = {"round": r, "wall_s": round(wall, 3), "rc": done.returncode, "ratio": round(wall / plain_s, 3) if plain_s else None}
                if name.startswith("ncu") and log.exists():
                    frame, _ = ncu_dispatches(log.read_text())
                    row["launches"] = len(frame)
                    row["kernels_s"] = round(float(frame["duration_ns"].sum()) / 1e9, 4)
                if done.returncode != 0:
                    row["error"] = (done.stderr or done.stdout)[-300:]
                rows.setdefault(name, []).append(row)
                print(name, json.dumps(row), flush=True)
    summary = {
        name: {
            "median_wall_s": round(statistics.median(r["wall_s"] for r in rs), 2),
            "median_ratio": round(statistics.median(r["ratio"] for r in rs if r["ratio"]), 3) if any(r["ratio"] for r in rs) else None,
            "launches": rs[-1].get("launches"),
            "kernels_s": rs[-1].get("kernels_s"),
        }
        for name, rs in rows.items()
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
