#!/usr/bin/env python3
"""Fixed benchmark of the bf16 RMSNorm kernel (src/rmsnorm.cu).

    python bench.py [--shapes ROWSxCOLS,...] [--repeats N] [--warmup N] [--csv PATH]

y = x * rsqrt(mean(x^2 over the row) + eps) * w, with x and y (rows, cols) bf16,
w (cols,) bf16 and the math in fp32. Builds src/rmsnorm.cu with nvcc into a
shared library under build/ (cached by a hash of src/ and the compile
command), calls launch_rmsnorm through ctypes on PyTorch tensors, checks it
against an fp32 PyTorch reference on fresh random inputs (seed from
KERNEL_MCP_SEED) on the first call and again after timing, times it with CUDA
events (L2 flushed before every call, median of the repeats) and writes one
CSV row per shape (default out/bench.csv next to this script):

    shape,rows,cols,us,err,flops,bytes

err counts output elements outside tolerance (0 = correct), us is the median
time in microseconds, bytes the fewest a call must move (x read once, w once,
y written once) and flops about 4 per element.
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import hashlib
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
SOURCE = SRC / "rmsnorm.cu"
BUILD = HERE / "build"
DEFAULT_CSV = HERE / "out" / "bench.csv"
COLUMNS = ("shape", "rows", "cols", "us", "err", "flops", "bytes")

import torch  # noqa: E402

EPS = 1e-6
SEED_ENV = "KERNEL_MCP_SEED"
DEFAULT_SEED = 20240917
# A bf16 output of fp32 math against the fp32 reference: bf16 keeps 8 significant bits, so
# rounding costs up to half a step (2**-8 relative) and two correct kernels whose sums differ in
# the last fp32 bits can round to neighbouring values, a full step apart: 2**-7 admits that and
# no more. ATOL covers outputs near zero, where a relative bound means nothing.
RTOL = 2.0**-7
ATOL = 1e-3

# Tokens x hidden size of transformer layers. Each x is 64-128 MiB, more than the 50 MiB L2 of an
# H100 or H200 holds (kernel-mcp's product tables, after NVIDIA's H100 whitepaper and datasheet),
# so every call streams from HBM.
SHAPES = ((8192, 4096), (16384, 4096), (4096, 8192), (32768, 2048))

NO_GPU_EXIT = 2
NO_GPU_MESSAGE = "bench.py: no NVIDIA GPU visible to PyTorch (torch.cuda.is_available() is False, or a ROCm build); nothing was built or run."


def shape_name(rows: int, cols: int) -> str:
    return f"{rows}x{cols}"


def parse_shapes(text: str) -> list[tuple[int, int]]:
    shapes = []
    for word in (w.strip() for w in text.split(",")):
        parts = word.lower().split("x")
        if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise argparse.ArgumentTypeError(f"{word!r} is not ROWSxCOLS (e.g. 8192x4096)")
        shapes.append((int(parts[0]), int(parts[1])))
    return shapes


def get_seed(env=None) -> int:
    """The seed from KERNEL_MCP_SEED (decimal or 0x hex), else DEFAULT_SEED."""
    raw = str((os.environ if env is None else env).get(SEED_ENV, "")).strip()
    if not raw:
        return DEFAULT_SEED
    try:
        seed = int(raw, 0)
    except ValueError:
        raise ValueError(f"{SEED_ENV} must be an integer, got {raw!r}") from None
    if seed < 0:
        raise ValueError(f"{SEED_ENV} must be >= 0, got {seed}")
    return seed


def make_inputs(rows: int, cols: int, seed: int, device="cuda"):
    """Random bf16 x (rows, cols), normal, and w (cols,) near 1, as a trained RMSNorm's weights are."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    x = torch.randn((rows, cols), generator=gen, device=device, dtype=torch.float32)
    w = 1.0 + 0.25 * torch.randn((cols,), generator=gen, device=device, dtype=torch.float32)
    return x.to(torch.bfloat16), w.to(torch.bfloat16)


def reference(x, w, eps: float = EPS):
    """RMSNorm in fp32 from the same bf16 inputs."""
    xf = x.float()
    inv = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return xf * inv * w.float()


def count_errors(out, expect) -> tuple[int, float]:
    """(elements outside |out - expect| <= ATOL + RTOL * |expect|, the largest absolute error).
    NaN counts as an error, so an output left poisoned is caught."""
    diff = (out.float() - expect).abs()
    ok = diff <= ATOL + RTOL * expect.abs()
    bad = int(ok.numel() - int(ok.sum().item()))
    return bad, float(diff.max().item()) if diff.numel() else 0.0


def flops(rows: int, cols: int) -> int:
    """Square, add, and two multiplies per element."""
    return 4 * rows * cols


def min_bytes(rows: int, cols: int) -> int:
    """x read once, w once, y written once (bf16)."""
    return 2 * rows * cols + 2 * cols + 2 * rows * cols


# ---------------------------------------------------------------- building
def find_nvcc() -> str:
    for cand in (shutil.which("nvcc"), os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")):
        if cand and os.path.exists(cand):
            return cand
    raise RuntimeError("no nvcc found on PATH or under CUDA_HOME")


def compile_command(nvcc: str, arch: str, src: Path, out: Path) -> list[str]:
    return [nvcc, "-x", "cu", "-O3", f"-arch={arch}", "-shared", "-Xcompiler", "-fPIC", "-o", str(out), str(src)]


def sources_digest(src_dir: Path = SRC) -> str:
    """Hash of every file under src/ (names and contents)."""
    h = hashlib.sha256()
    for p in sorted(src_dir.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(src_dir)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def build(arch: str) -> Path:
    """The shared library of src/rmsnorm.cu, built unless one of these sources and command exists."""
    nvcc = find_nvcc()
    try:
        version = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    template = " ".join(compile_command("NVCC", arch, Path("SRC"), Path("OUT")))
    key = hashlib.sha256("\n".join([sources_digest(), version, template]).encode()).hexdigest()[:16]
    out = BUILD / f"rmsnorm-{key}.so"
    if out.exists():
        print(f"[build] cached {out.relative_to(HERE)}", flush=True)
        return out
    BUILD.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    cmd = compile_command(nvcc, arch, SOURCE, tmp)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"build of {SOURCE.name} failed:\n{' '.join(cmd)}\n{res.stdout}{res.stderr}")
    os.replace(tmp, out)
    print(f"[build] built {out.relative_to(HERE)}", flush=True)
    return out


class Kernel:
    """launch_rmsnorm of the built library, called on PyTorch tensors."""

    def __init__(self, path: Path):
        self.lib = ctypes.CDLL(str(path))
        self.fn = self.lib.launch_rmsnorm
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int, ctypes.c_int, ctypes.c_float, ctypes.c_void_p]

    def __call__(self, x, w, y, stream: int) -> None:
        rows, cols = x.shape
        rc = self.fn(x.data_ptr(), w.data_ptr(), y.data_ptr(), rows, cols, EPS, stream)
        if rc != 0:
            raise RuntimeError(f"launch_rmsnorm returned error code {rc}")


def gpu_arch() -> str:
    props = torch.cuda.get_device_properties(0)
    return f"sm_{props.major}{props.minor}"


def gpu_usable() -> bool:
    return torch.cuda.is_available() and not getattr(torch.version, "hip", None)


# ---------------------------------------------------------------- measuring
def median_us(fn, repeats: int, warmup: int, flush) -> float:
    """Median time of fn() in microseconds; L2 is flushed before each call and only the call lies
    between the two events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for i in range(repeats):
        flush.fill_(i % 251)  # writes more than the L2 holds
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))


def bench_shape(kernel: Kernel, rows: int, cols: int, seed: int, args, flush) -> dict:
    x, w = make_inputs(rows, cols, seed)
    expect = reference(x, w)
    y = torch.empty_like(x)
    stream = torch.cuda.current_stream().cuda_stream

    def launch():
        kernel(x, w, y, stream)

    def check() -> tuple[int, float]:
        y.fill_(float("nan"))  # anything left unwritten fails the check
        torch.cuda.synchronize()
        launch()
        torch.cuda.synchronize()
        return count_errors(y, expect)

    err1, max1 = check()  # the first call
    us = median_us(launch, args.repeats, args.warmup, flush)
    err2, max2 = check()  # again, after many calls
    return {
        "shape": shape_name(rows, cols),
        "rows": rows,
        "cols": cols,
        "us": us,
        "err": max(err1, err2),
        "flops": flops(rows, cols),
        "bytes": min_bytes(rows, cols),
        "maxabs": worst(max1, max2),
    }


def worst(a: float, b: float) -> float:
    """The larger error, NaN (an unwritten output) above any number."""
    return a if math.isnan(a) or (not math.isnan(b) and a >= b) else b


def write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(COLUMNS), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.7g}" if isinstance(v, float) else v) for k, v in row.items()})
    os.replace(tmp, path)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", type=parse_shapes, default=list(SHAPES), help="comma-separated ROWSxCOLS (default: the four below)")
    p.add_argument("--repeats", type=int, default=20, help="timed calls per shape; the median is reported (default: 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls before timing")
    p.add_argument("--csv", type=Path, default=DEFAULT_CSV, help="output CSV (default: out/bench.csv next to this script)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.repeats < 1 or args.warmup < 0:
        print("bench.py: --repeats must be >= 1 and --warmup >= 0", file=sys.stderr)
        return 1
    try:
        seed = get_seed()
    except ValueError as e:
        print(f"bench.py: {e}", file=sys.stderr)
        return 1
    if not gpu_usable():
        print(NO_GPU_MESSAGE, file=sys.stderr)
        return NO_GPU_EXIT
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name} ({gpu_arch()}), torch {torch.__version__}; seed {seed}", flush=True)
    try:
        kernel = Kernel(build(gpu_arch()))
    except RuntimeError as e:
        print(f"bench.py: {e}", file=sys.stderr)
        return 1
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    flush = torch.empty(max(2 * l2, 256 << 20) // 4, dtype=torch.float32, device="cuda")
    rows: list[dict] = []
    for n_rows, n_cols in args.shapes:
        try:
            row = bench_shape(kernel, n_rows, n_cols, seed, args, flush)
        except RuntimeError as e:  # a launch error, or a kernel fault (after which CUDA is unusable)
            print(f"{shape_name(n_rows, n_cols)}: FAILED TO RUN: {e}", flush=True)
            rows += [
                {"shape": shape_name(r, c), "rows": r, "cols": c, "us": float("nan"), "err": r * c, "flops": flops(r, c), "bytes": min_bytes(r, c)}
                for r, c in args.shapes[len(rows) :]
            ]
            write_csv(args.csv, rows)
            return 1
        print(f"{row['shape']:>12s} {row['us']:10.1f} us  err={row['err']}  maxabs={row['maxabs']:.3g}  {row['bytes'] / row['us'] / 1e3:.0f} GB/s", flush=True)
        rows.append(row)
        write_csv(args.csv, rows)  # keep what is done so far
        torch.cuda.empty_cache()
    print(f"wrote {args.csv}")
    if any(r["err"] for r in rows):
        print("INCORRECT: some shape failed the tolerance check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
