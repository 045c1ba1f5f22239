#!/usr/bin/env python3
"""Roofline ceilings for this workspace, measured on the device, and a report.

    python roofline.py measure [--out out/peaks.json]
        Copy bandwidth: a large device-to-device copy, bytes read + written.
        FP32 FMA rate: a small kernel of independent fmaf chains (CUDA cores /
        VALU), built with the same compiler command as bench.py.
        BF16 matrix rate: a large torch.matmul (tensor cores / MFMA), for
        reference and for the matrix-core step.

    python roofline.py report [--csv out/bench.csv] [--peaks out/peaks.json]
        Markdown tables: time per step and shape, speedup over PyTorch, and
        each kernel's distance to its bound
            bound = max(FLOPs / arithmetic peak, minimal bytes / bandwidth)
        using the fp32 FMA peak for the CUDA-core steps and the bf16 matrix
        peak for the matrix-core step (its FLOPs are the useful 150 per
        output; the zeros of its banded matrices are not counted).
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import hashlib
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import reference as ref  # noqa: E402

MATRIX_STEPS = {"mfma"}

FMA_SOURCE = r"""
#include "portable.h"
#define CHAINS 8
#define INNER 64
extern "C" __global__ void __launch_bounds__(256)
fma_peak_kernel(float* out, float a, float b, int iters) {
  float v[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) v[k] = threadIdx.x * 1e-3f + k;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < INNER; ++u) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) v[k] = fmaf(v[k], a, b);
    }
  }
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) s += v[k];
  out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = s;
}
extern "C" int launch_fma_peak(float* out, float a, float b, int iters,
                               int blocks, void* stream) {
  fma_peak_kernel<<<blocks, 256, 0, (hipStream_t)stream>>>(out, a, b, iters);
  return (int)hipGetLastError();
}
"""
FMA_PER_THREAD_ITER = 8 * 64  # CHAINS * INNER


def _events_median_ms(torch, fn, repeats=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def measure_bandwidth(torch, nbytes=2 << 30):
    a = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    ms = _events_median_ms(torch, lambda: b.copy_(a))
    assert torch.equal(a[:4096], b[:4096])
    return 2 * nbytes / (ms * 1e-3)


def measure_fp32_fma(torch):
    import bench

    platform, arch = bench.detect_platform()
    compiler = bench.find_compiler(platform)
    bench.BUILD.mkdir(parents=True, exist_ok=True)
    src = bench.BUILD / "fma_peak.hip"
    src.write_text(FMA_SOURCE)
    key = hashlib.sha256((FMA_SOURCE + (bench.SRC / "portable.h").read_text() + arch)
                         .encode()).hexdigest()[:16]
    lib_path = bench.BUILD / f"fma_peak-{key}.so"
    if not lib_path.exists():
        cmd = bench.compile_command(platform, compiler, arch, src, lib_path)
        cmd[1:1] = ["-I", str(bench.SRC)]
        subprocess.run(cmd, check=True)
    lib = ctypes.CDLL(str(lib_path))
    fn = lib.launch_fma_peak
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_float, ctypes.c_int,
                   ctypes.c_int, ctypes.c_void_p]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    blocks, iters = sms * 16, 2048
    out = torch.empty(blocks * 256, dtype=torch.float32, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream

    def run():
        rc = fn(out.data_ptr(), 0.999, 0.001, iters, blocks, stream)
        if rc != 0:
            raise RuntimeError(f"fma_peak launch failed: {rc}")

    ms = _events_median_ms(torch, run, repeats=10)
    assert torch.isfinite(out).all()
    fl = 2.0 * blocks * 256 * iters * FMA_PER_THREAD_ITER
    return fl / (ms * 1e-3)


def measure_bf16_matmul(torch, n=8192):
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    a = torch.randn(n, n, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(n, n, device="cuda", generator=g).to(torch.bfloat16)
    ms = _events_median_ms(torch, lambda: a @ b, repeats=10)
    return 2.0 * n ** 3 / (ms * 1e-3)


def cmd_measure(args):
    import torch

    if not torch.cuda.is_available():
        print("roofline.py: no GPU visible", file=sys.stderr)
        return 2
    props = torch.cuda.get_device_properties(0)
    peaks = {
        "device": props.name,
        "sms": props.multi_processor_count,
        "copy_bytes_per_s": measure_bandwidth(torch),
        "fp32_fma_flops_per_s": measure_fp32_fma(torch),
        "bf16_matmul_flops_per_s": measure_bf16_matmul(torch),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(peaks, indent=2) + "\n")
    print(f"copy bandwidth   {peaks['copy_bytes_per_s'] / 1e12:.2f} TB/s (read + write)")
    print(f"fp32 FMA rate    {peaks['fp32_fma_flops_per_s'] / 1e12:.1f} TFLOP/s")
    print(f"bf16 matmul rate {peaks['bf16_matmul_flops_per_s'] / 1e12:.0f} TFLOP/s")
    return 0


def bound_us(shape: ref.Shape, peaks: dict, impl: str) -> tuple[float, str]:
    """(bound in us, which term sets it) for one step on one shape."""
    arith = peaks["bf16_matmul_flops_per_s" if impl in MATRIX_STEPS else "fp32_fma_flops_per_s"]
    t_flop = ref.flops(shape) / arith * 1e6
    t_mem = ref.min_bytes(shape) / peaks["copy_bytes_per_s"] * 1e6
    return (t_flop, "arith") if t_flop >= t_mem else (t_mem, "memory")


def cmd_report(args):
    peaks = json.loads(Path(args.peaks).read_text())
    with open(args.csv) as f:
        rows = list(csv.DictReader(f))
    impls = [c[3:] for c in rows[0] if c.startswith("us_") and c != "us_torch"]
    out = []
    out.append("| shape | PyTorch | " + " | ".join(impls) + " | best | speedup |")
    out.append("|---" * (len(impls) + 4) + "|")
    for r in rows:
        cells, best, best_us = [], "-", float("inf")
        for i in impls:
            us, err = float(r[f"us_{i}"]), int(float(r[f"err_{i}"]))
            cells.append(f"{us:.1f}" + ("" if err == 0 else " (wrong)"))
            if err == 0 and us < best_us:
                best, best_us = i, us
        out.append(f"| {r['shape']} | {float(r['us_torch']):.1f} | " + " | ".join(cells)
                   + f" | {best} | {float(r['us_torch']) / best_us:.1f}x |")
    out.append("")
    out.append("| shape | FLOPs | min bytes | fp32 bound (us) | tensor bound (us) | "
               + " | ".join(f"{i} % of bound" for i in impls) + " |")
    out.append("|---" * (len(impls) + 5) + "|")
    for r in rows:
        shape = ref.SHAPES_BY_NAME.get(r["shape"]) or ref.Shape(
            r["shape"], *(int(r[k]) for k in "NCDHW"))
        b_fp32, t_fp32 = bound_us(shape, peaks, "fast")
        b_mat, t_mat = bound_us(shape, peaks, "mfma")
        pcts = []
        for i in impls:
            b, _ = bound_us(shape, peaks, i)
            pcts.append(f"{100.0 * b / float(r[f'us_{i}']):.1f}%")
        out.append(f"| {shape.name} | {ref.flops(shape) / 1e9:.2f} G | "
                   f"{ref.min_bytes(shape) / 1e6:.0f} MB | {b_fp32:.1f} ({t_fp32}) | "
                   f"{b_mat:.1f} ({t_mat}) | " + " | ".join(pcts) + " |")
    text = "\n".join(out)
    print(text)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", default=str(HERE / "out" / "peaks.json"))
    r = sub.add_parser("report")
    r.add_argument("--csv", default=str(HERE / "out" / "bench.csv"))
    r.add_argument("--peaks", default=str(HERE / "out" / "peaks.json"))
    args = p.parse_args(argv)
    return cmd_measure(args) if args.cmd == "measure" else cmd_report(args)


if __name__ == "__main__":
    sys.exit(main())
