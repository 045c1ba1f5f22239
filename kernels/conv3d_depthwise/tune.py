#!/usr/bin/env python3
"""Sweep the fast kernel's tile configurations on the GPU (a tuning aid).

    python tune.py [--shapes name,...] [--top 5] [--json PATH]

For each shape, runs every candidate (RH, segs, hch, td, groups), for every
kernel instance of that RH (CUDA: both register budgets, RH + 400 being the
64-register instance; ROCm: the one instance per RH), through
launch_conv3d_fast_with, checks each against the fp32 reference (poisoned
output, same tolerance as bench.py) and times it like bench.py (events,
L2 flushed between repeats, median). Prints the best candidates next to the
launcher's own choice; --json keeps every measurement, e.g. to refit the
cost model in src/fast.hip.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from pathlib import Path

import bench
import reference as ref


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def candidates(shape: ref.Shape) -> list[tuple[int, int, int, int, int]]:
    """The first-pass search space of fast_plan.h's fast_choose (plain RH; see
    with_budgets for the register budgets)."""
    _, _, D, H, W = shape.dims
    s0 = ceil_div(W, 4)
    out = []
    for rh in (4, 6, 7, 8):
        for segs in sorted({ceil_div(s0, k) for k in (1, 2, 3, 4)}):
            TW = 4 * segs
            if ceil_div(W, TW) * TW * 20 > 23 * W:
                continue
            for hch in range(1, 33):
                for groups in (1, 2, 3, 4):
                    TH = rh * hch * groups
                    if TH >= H + rh * hch or ceil_div(H, TH) * TH * 20 > 23 * H:
                        continue
                    for td in range(1, 17):
                        threads = segs * hch * td
                        if td > D or ceil_div(D, td) * td * 20 > 23 * D:
                            continue
                        if threads % 32 == 0 and 128 <= threads <= 256:
                            out.append((rh, segs, hch, td, groups))
    return out


CODE_64 = 400  # fast_plan.h's FAST_CODE_64


def with_budgets(cands, platform: str = "cuda"):
    """Each candidate for every instance of its RH that fast_choose searches
    (see launch_conv3d_fast_with): on CUDA cfg[0] = RH runs the 80-register
    instance, 400 + RH the 64-register one; the ROCm build has one instance
    per RH, which plain RH names."""
    if platform == "rocm":
        return list(cands)
    return [(code,) + tuple(cfg[1:]) for cfg in cands for code in (cfg[0], CODE_64 + cfg[0])]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", type=bench.parse_shapes, default=list(ref.SHAPES))
    p.add_argument("--top", type=int, default=5)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    torch = bench.torch
    if not torch.cuda.is_available():
        print(bench.NO_GPU_MESSAGE.replace("bench.py", "tune.py"), file=sys.stderr)
        return bench.NO_GPU_EXIT
    platform, arch = bench.detect_platform()
    lib = ctypes.CDLL(str(bench.build_all(["fast"], platform, arch)["fast"]))
    run = lib.launch_conv3d_fast_with
    run.restype = ctypes.c_int
    run.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 5 + [ctypes.c_void_p] * 2
    flush = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    seed = ref.get_seed()
    results = {}
    for shape in args.shapes:
        x, w = ref.make_inputs(shape, seed, "cuda")
        expect = ref.conv3d_reference_fp32(x, w)
        y = torch.empty_like(x)
        auto = (ctypes.c_int * 10)()
        lib.conv3d_fast_config(*shape.dims, auto)
        # cfg[0] of conv3d_fast_config is the plain RH; conv3d_fast_code adds
        # the register budget the launcher picked.
        lib.conv3d_fast_code.restype = ctypes.c_int
        auto_cfg = (lib.conv3d_fast_code(*shape.dims),) + tuple(list(auto)[1:5])
        cands = with_budgets(candidates(shape), platform)
        if auto_cfg not in cands:
            cands.insert(0, auto_cfg)
        rows = []
        for cfg in cands:
            arr = (ctypes.c_int * 5)(*cfg)

            def launch():
                rc = run(x.data_ptr(), w.data_ptr(), y.data_ptr(), *shape.dims, arr, stream)
                if rc != 0:
                    raise RuntimeError(rc)

            y.fill_(float("nan"))
            try:
                launch()
            except RuntimeError:
                continue  # does not fit (shared memory, threads, ...)
            torch.cuda.synchronize()
            err, _ = ref.count_errors(y, expect)
            rows.append((bench.median_us(launch, args.repeats, 1, flush), cfg, err))
        rows.sort()
        auto_us = next((r[0] for r in rows if r[1] == auto_cfg), float("nan"))
        wrong = sum(r[2] != 0 for r in rows)
        print(f"{shape.name}: {len(rows)} configs, {wrong} wrong; launcher's choice "
              f"{auto_cfg} {auto_us:.1f} us; (RH [CUDA +400: 64 regs], segs, hch, td, groups) fastest:")
        for us, cfg, err in rows[: args.top]:
            print(f"    {us:8.1f} us  {cfg}" + ("" if err == 0 else f"  WRONG ({err})"))
        results[shape.name] = [{"us": us, "cfg": cfg, "err": err} for us, cfg, err in rows]
        del x, w, expect, y
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
