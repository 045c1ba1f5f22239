#!/usr/bin/env python3
"""Correctness of the RMSNorm kernel on awkward shapes (GPU): widths that are not a multiple of
8 (rows that start off a 16-byte boundary, a tail after the last whole vector), rows narrower
than one vector, a single row, very wide rows and more rows than one grid holds. The benchmark's
shapes are all regular; this catches what they never exercise.

    python check.py [--csv out/verify.csv]      exit code 0 only if every shape is correct
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import bench

SHAPES = (
    ("tail4", 64, 4100),
    ("tail1", 1000, 4097),
    ("tail7", 33, 1031),
    ("narrow", 5, 7),
    ("one_row", 1, 64),
    ("few_rows", 3, 5120),
    ("wide_tail", 3, 20003),
    ("very_wide", 2, 70000),
    ("many_rows", 70000, 16),
)
COLUMNS = ("shape", "rows", "cols", "err", "maxabs")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", type=Path, default=bench.HERE / "out" / "verify.csv", help="where to write the result (default: out/verify.csv)")
    args = p.parse_args(argv)
    torch = bench.torch
    if not bench.gpu_usable():
        print(bench.NO_GPU_MESSAGE.replace("bench.py", "check.py"), file=sys.stderr)
        return bench.NO_GPU_EXIT
    try:
        seed = bench.get_seed()
        kernel = bench.Kernel(bench.build(bench.gpu_arch()))
    except (ValueError, RuntimeError) as e:
        print(f"check.py: {e}", file=sys.stderr)
        return 1
    stream = torch.cuda.current_stream().cuda_stream
    rows: list[dict] = []
    for name, n_rows, n_cols in SHAPES:
        x, w = bench.make_inputs(n_rows, n_cols, seed)
        expect = bench.reference(x, w)
        y = torch.empty_like(x)
        y.fill_(float("nan"))  # anything left unwritten fails the check
        torch.cuda.synchronize()
        try:
            kernel(x, w, y, stream)
            torch.cuda.synchronize()
            err, maxabs = bench.count_errors(y, expect)
        except RuntimeError as e:  # -1: the correctness rule (== 0) fails on a kernel that did not run
            print(f"{name}: FAILED TO RUN: {e}")
            err, maxabs = -1, float("nan")
        rows.append({"shape": name, "rows": n_rows, "cols": n_cols, "err": err, "maxabs": f"{maxabs:.4g}"})
        print(f"{name:10s} {n_rows:6d} x {n_cols:<6d} err={err}  maxabs={maxabs:.3g}", flush=True)
        if err == -1:
            break  # a kernel fault leaves CUDA unusable in this process
    rows += [{"shape": name, "rows": r, "cols": c, "err": -1, "maxabs": "nan"} for name, r, c in SHAPES[len(rows) :]]
    failures = sum(row["err"] != 0 for row in rows)
    args.csv.parent.mkdir(parents=True, exist_ok=True)
    with open(args.csv, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    print("all correct" if failures == 0 else f"{failures} shape(s) WRONG")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
