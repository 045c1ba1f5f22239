#!/usr/bin/env python3
"""Correctness of every step on awkward shapes (GPU): odd and tiny sizes,
widths that are not a multiple of 4, single planes. The benchmark shapes are
all regular; this catches edge handling they never exercise.

    python check.py [--impls ...]      exit code 0 only if every step passes
"""

from __future__ import annotations

import argparse
import sys

import bench
import reference as ref

SHAPES = (
    ref.Shape("odd_w", 1, 3, 5, 13, 30),
    ref.Shape("tiny", 1, 3, 1, 3, 3),
    ref.Shape("point", 2, 5, 3, 1, 1),
    ref.Shape("wide", 1, 2, 2, 70, 131),
    ref.Shape("mixed", 2, 17, 7, 33, 36),
    ref.Shape("c33", 1, 33, 9, 28, 60),
    ref.Shape("short_h", 3, 4, 20, 9, 100),
)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--impls", type=bench.parse_impls, default=bench.parse_impls("all"))
    p.add_argument("--csv", type=bench.Path, default=None,
                   help="also write the result as a CSV (shape columns, err_<impl>, maxabs_<impl>)")
    args = p.parse_args(argv)
    torch = bench.torch
    if not torch.cuda.is_available():
        print(bench.NO_GPU_MESSAGE.replace("bench.py", "check.py"), file=sys.stderr)
        return bench.NO_GPU_EXIT
    platform, arch = bench.detect_platform()
    paths = bench.build_all(args.impls, platform, arch)
    kernels = {n: bench.Kernel(bench.IMPLS_BY_NAME[n], paths[n]) for n in args.impls}
    stream = torch.cuda.current_stream().cuda_stream
    seed = ref.get_seed()
    failures = 0
    rows = []
    for shape in SHAPES:
        x, w = ref.make_inputs(shape, seed, "cuda")
        expect = ref.conv3d_reference_fp32(x, w)
        cells = []
        row = {"shape": shape.name, "N": shape.N, "C": shape.C, "D": shape.D, "H": shape.H, "W": shape.W}
        for name, kern in kernels.items():
            xl, wl, y = bench.layout_inputs(kern.impl, x, w)
            y.fill_(float("nan"))
            try:
                kern.launch(xl, wl, y, shape.dims, stream)
                torch.cuda.synchronize()
                err, maxabs = ref.count_errors(bench.as_ncdhw(kern.impl, y), expect)
            except RuntimeError as e:
                err, maxabs = f"failed to run ({e})", float("nan")
            failures += err != 0
            cells.append(f"{name}={err}")
            # a launch failure is written as -1 so that the CSV's correctness rule (== 0) fails
            row[f"err_{name}"] = err if isinstance(err, int) else -1
            row[f"maxabs_{name}"] = maxabs
        rows.append(row)
        print(f"{shape.name:8s} {str(shape.dims):22s} " + " ".join(cells))
    if args.csv is not None:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        with open(args.csv, "w", newline="") as f:
            writer = bench.csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["shape"])
            writer.writeheader()
            writer.writerows(rows)
    print("all correct" if failures == 0 else f"{failures} FAILURES")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
