#!/usr/bin/env python3
"""Fixed benchmark for the depthwise conv3d steps.

    python bench.py [--impls naive,ndhwc,lds,mfma,lds_sgb,fast|all]
                    [--shapes name,...] [--csv PATH] [--repeats N]

Builds each selected kernel (src/<impl>.hip) into a shared library under
build/ (cached by a hash of everything in src/ and the compile command),
checks it against an fp32 PyTorch reference on fresh random bf16 inputs
(seed from KERNEL_MCP_SEED), times it with CUDA/HIP events and writes one CSV
row per shape (default out/bench.csv next to this script):

    shape,N,C,D,H,W,us_torch,err_<impl>,maxabs_<impl>,us_<impl>,...

err_<impl> counts output elements outside tolerance (0 = correct),
maxabs_<impl> is the largest absolute error, us_<impl> the median time in
microseconds of the kernel alone. For the channels-last step (ndhwc) the
NCDHW -> NDHWC copies of input and weights are made before timing and are
not part of us_ndhwc. us_torch times F.conv3d on the NCDHW bf16 tensors.
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
BUILD = HERE / "build"
DEFAULT_CSV = HERE / "out" / "bench.csv"

if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import torch  # noqa: E402

import reference as ref  # noqa: E402  (needs the path above)

NO_GPU_EXIT = 2
NO_GPU_MESSAGE = (
    "bench.py: no GPU visible to PyTorch (torch.cuda.is_available() is False); "
    "nothing was built or run."
)


@dataclass(frozen=True)
class Impl:
    name: str
    source: str
    symbol: str
    layout: str  # "ncdhw" or "ndhwc"
    title: str


IMPLS: tuple[Impl, ...] = (
    Impl("naive", "naive.hip", "launch_conv3d_naive", "ncdhw", "1 naive"),
    Impl("ndhwc", "ndhwc.hip", "launch_conv3d_ndhwc", "ndhwc", "2 channels-last"),
    Impl("lds", "lds.hip", "launch_conv3d_lds", "ncdhw", "3 LDS tile"),
    Impl("mfma", "mfma.hip", "launch_conv3d_mfma", "ncdhw", "4 matrix core"),
    Impl("lds_sgb", "lds_sgb.hip", "launch_conv3d_lds_sgb", "ncdhw", "5 LDS + sched hints"),
    Impl("fast", "fast.hip", "launch_conv3d_fast", "ncdhw", "6 fast"),
)
IMPLS_BY_NAME = {i.name: i for i in IMPLS}
ROW_FIELDS = ("err", "maxabs", "us")


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------
def parse_impls(text: str) -> list[str]:
    if text.strip() == "all":
        return [i.name for i in IMPLS]
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in IMPLS_BY_NAME]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown impl(s) {unknown}; choose from {[i.name for i in IMPLS]} or 'all'")
    # Keep the canonical step order and drop repeats.
    return [i.name for i in IMPLS if i.name in names]


def parse_shapes(text: str) -> list[ref.Shape]:
    if text.strip() == "all":
        return list(ref.SHAPES)
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in ref.SHAPES_BY_NAME]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown shape(s) {unknown}; choose from {list(ref.SHAPES_BY_NAME)}")
    return [ref.SHAPES_BY_NAME[n] for n in names]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--impls", type=parse_impls, default=parse_impls("all"),
                   help="comma-separated steps or 'all' (default: all)")
    p.add_argument("--shapes", type=parse_shapes, default=list(ref.SHAPES),
                   help="comma-separated shape names (default: all)")
    p.add_argument("--csv", type=Path, default=DEFAULT_CSV,
                   help="output CSV (default: out/bench.csv next to this script)")
    p.add_argument("--repeats", type=int, default=20,
                   help="timed repeats per kernel; the median is reported (default: 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls before timing")
    return p


# --------------------------------------------------------------------------
# CSV and table (no GPU needed)
# --------------------------------------------------------------------------
def csv_columns(impls: list[str]) -> list[str]:
    cols = ["shape", "N", "C", "D", "H", "W", "flops", "bytes", "us_torch"]
    for name in impls:
        cols += [f"{field}_{name}" for field in ROW_FIELDS]
    return cols


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.7g}"  # nan and inf print as such
    return str(value)


def make_row(shape: ref.Shape, us_torch: float, results: dict[str, dict]) -> dict:
    """One CSV row. results[impl] = {"err": int, "maxabs": float, "us": float}."""
    row = {"shape": shape.name, "N": shape.N, "C": shape.C, "D": shape.D,
           "H": shape.H, "W": shape.W, "flops": ref.flops(shape),
           "bytes": ref.min_bytes(shape), "us_torch": us_torch}
    for name, res in results.items():
        for field in ROW_FIELDS:
            row[f"{field}_{name}"] = res[field]
    return row


def write_csv(path: Path, rows: list[dict], impls: list[str]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = csv_columns(impls)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=cols)
        writer.writeheader()
        for row in rows:
            writer.writerow({c: _fmt(row.get(c, "")) for c in cols})
    os.replace(tmp, path)


def format_table(rows: list[dict], impls: list[str]) -> str:
    """Median microseconds per shape and step; '!' marks a failed check."""
    head = ["shape", "torch"] + impls + ["best", "x torch"]
    lines = []
    for row in rows:
        cells = [row["shape"], f"{row['us_torch']:.1f}"]
        best_name, best_us = "-", math.inf
        for name in impls:
            us, err = row[f"us_{name}"], row[f"err_{name}"]
            ok = err == 0 and not math.isnan(us)
            cells.append(f"{us:.1f}" + ("" if ok else "!"))
            if ok and us < best_us:
                best_name, best_us = name, us
        speed = row["us_torch"] / best_us if best_us < math.inf else float("nan")
        cells += [best_name, f"{speed:.1f}"]
        lines.append(cells)
    widths = [max(len(str(r[i])) for r in [head] + lines) for i in range(len(head))]
    out = ["  ".join(str(h).rjust(w) for h, w in zip(head, widths))]
    out += ["  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in lines]
    out.append("times in us (median); '!' = failed correctness or did not run; "
               "ndhwc excludes the layout conversion")
    return "\n".join(out)


# --------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------
def detect_platform() -> tuple[str, str]:
    """('cuda', 'sm_90') or ('rocm', 'gfx950') for device 0."""
    props = torch.cuda.get_device_properties(0)
    if getattr(torch.version, "hip", None):
        return "rocm", str(getattr(props, "gcnArchName", "gfx950")).split(":")[0]
    return "cuda", f"sm_{props.major}{props.minor}"


def find_compiler(platform: str) -> str:
    if platform == "rocm":
        cands = [shutil.which("hipcc"),
                 os.path.join(os.environ.get("ROCM_PATH", "/opt/rocm"), "bin", "hipcc")]
    else:
        cands = [shutil.which("nvcc"),
                 os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")]
    for c in cands:
        if c and os.path.exists(c):
            return c
    raise RuntimeError(f"no {'hipcc' if platform == 'rocm' else 'nvcc'} found on PATH")


def compile_command(platform: str, compiler: str, arch: str, src: Path, out: Path) -> list[str]:
    if platform == "rocm":
        return [compiler, "-O3", f"--offload-arch={arch}", "-shared", "-fPIC",
                "-o", str(out), str(src)]
    return [compiler, "-x", "cu", "-O3", f"-arch={arch}", "-shared",
            "-Xcompiler", "-fPIC", "-o", str(out), str(src)]


def sources_digest(src_dir: Path = SRC) -> str:
    """Hash of every file under src/ (names and contents)."""
    h = hashlib.sha256()
    for p in sorted(src_dir.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(src_dir)).encode() + b"\0")
            h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def build_all(impls: list[str], platform: str, arch: str) -> dict[str, Path]:
    compiler = find_compiler(platform)
    try:
        version = subprocess.run([compiler, "--version"], capture_output=True,
                                 text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    digest = sources_digest()
    BUILD.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> tuple[str, Path, str]:
        impl = IMPLS_BY_NAME[name]
        template = compile_command(platform, "CC", arch, Path(impl.source), Path("OUT"))
        key = hashlib.sha256("\n".join([digest, version, " ".join(template)]).encode())
        out = BUILD / f"{name}-{key.hexdigest()[:16]}.so"
        if out.exists():
            return name, out, "cached"
        tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
        cmd = compile_command(platform, compiler, arch, SRC / impl.source, tmp)
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise RuntimeError(f"build of {impl.source} failed:\n{' '.join(cmd)}\n"
                               f"{res.stdout}{res.stderr}")
        os.replace(tmp, out)
        return name, out, "built"

    paths = {}
    with ThreadPoolExecutor(max_workers=max(1, len(impls))) as pool:
        for name, path, how in pool.map(one, impls):
            print(f"[build] {name}: {how} {path.relative_to(HERE)}", flush=True)
            paths[name] = path
    return paths


class Kernel:
    """A step's launcher loaded through ctypes."""

    def __init__(self, impl: Impl, path: Path):
        self.impl = impl
        self.lib = ctypes.CDLL(str(path))
        self.fn = getattr(self.lib, impl.symbol)
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 5 + [ctypes.c_void_p]

    def launch(self, x, w, y, dims, stream) -> None:
        rc = self.fn(x.data_ptr(), w.data_ptr(), y.data_ptr(), *dims, stream)
        if rc != 0:
            raise RuntimeError(f"{self.impl.name}: launcher returned error code {rc}")

    def config(self, dims) -> str:
        """The fast step's chosen tile configuration, when it exposes one."""
        fn = getattr(self.lib, "conv3d_fast_config", None)
        if fn is None:
            return ""
        cfg = (ctypes.c_int * 10)()
        if fn(*dims, cfg) != 0:
            return "no config"
        rh, segs, hch, td, groups, threads, smem = list(cfg)[:7]
        return (f"RH={rh} tile={td}x{rh * hch * groups}x{4 * segs} (DxHxW) "
                f"threads={threads} smem={smem}B")


# --------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------
def median_us(fn, repeats: int, warmup: int, flush) -> float:
    """Median time of fn() in microseconds; L2 is flushed before each repeat
    and only the call itself lies between the two events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for i in range(repeats):
        flush.fill_(i % 251)  # write more than the L2 holds
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))


def layout_inputs(impl: Impl, x, w):
    """Input, weight and an empty output in the layout the kernel expects."""
    if impl.layout == "ndhwc":
        C = x.shape[1]
        xl = x.permute(0, 2, 3, 4, 1).contiguous()             # N, D, H, W, C
        wl = w.reshape(C, ref.TAPS).t().contiguous()            # (3*5*5, C)
        return xl, wl, torch.empty_like(xl)
    return x.contiguous(), w.contiguous(), torch.empty_like(x)


def as_ncdhw(impl: Impl, y):
    return y.permute(0, 4, 1, 2, 3) if impl.layout == "ndhwc" else y


def bench_shape(shape: ref.Shape, kernels: dict, seed: int, args, flush) -> dict:
    dims = shape.dims
    x, w = ref.make_inputs(shape, seed, device="cuda")
    expect = ref.conv3d_reference_fp32(x, w)
    stream = torch.cuda.current_stream().cuda_stream

    us_torch = median_us(lambda: ref.conv3d_reference(x, w),
                         args.repeats, args.warmup, flush)
    results = {}
    for name, kern in kernels.items():
        impl = kern.impl
        xl, wl, y = layout_inputs(impl, x, w)

        def launch():
            kern.launch(xl, wl, y, dims, stream)

        def check():
            y.fill_(float("nan"))  # anything left unwritten fails the check
            launch()
            torch.cuda.synchronize()
            return ref.count_errors(as_ncdhw(impl, y), expect)

        try:
            err1, max1 = check()                       # first call
            us = median_us(launch, args.repeats, args.warmup, flush)
            err2, max2 = check()                       # again, after many calls
            err = max(err1, err2)
            maxabs = max1 if (math.isnan(max1) or max1 >= max2) else max2
        except RuntimeError as e:  # launch error: the step did not run
            print(f"  {name}: FAILED TO RUN: {e}", flush=True)
            err, maxabs, us = shape.outputs, float("nan"), float("nan")
        results[name] = {"err": err, "maxabs": maxabs, "us": us}
        extra = kern.config(dims)
        print(f"  {name:8s} {us:10.1f} us  err={err}  maxabs={maxabs:.3g}"
              + (f"  [{extra}]" if extra else ""), flush=True)
        del xl, wl, y
    del x, w, expect
    return make_row(shape, us_torch, results)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.repeats < 1:
        print("bench.py: --repeats must be >= 1", file=sys.stderr)
        return 1
    try:
        seed = ref.get_seed()
    except ValueError as e:
        print(f"bench.py: {e}", file=sys.stderr)
        return 1

    if not torch.cuda.is_available():
        print(NO_GPU_MESSAGE, file=sys.stderr)
        return NO_GPU_EXIT

    platform, arch = detect_platform()
    props = torch.cuda.get_device_properties(0)
    src_env = "from " + ref.SEED_ENV if os.environ.get(ref.SEED_ENV, "").strip() else "default"
    print(f"device: {props.name} ({platform} {arch}), torch {torch.__version__}", flush=True)
    print(f"seed: {seed} ({src_env})", flush=True)

    try:
        paths = build_all(args.impls, platform, arch)
    except RuntimeError as e:
        print(f"bench.py: {e}", file=sys.stderr)
        return 1
    kernels = {n: Kernel(IMPLS_BY_NAME[n], paths[n]) for n in args.impls}

    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    flush = torch.empty(max(2 * l2, 256 << 20) // 4, dtype=torch.float32, device="cuda")

    rows = []
    for shape in args.shapes:
        print(f"{shape.name}: N={shape.N} C={shape.C} D={shape.D} H={shape.H} W={shape.W}",
              flush=True)
        row = bench_shape(shape, kernels, seed, args, flush)
        print(f"  {'torch':8s} {row['us_torch']:10.1f} us", flush=True)
        rows.append(row)
        write_csv(args.csv, rows, args.impls)  # keep what is done so far
        torch.cuda.empty_cache()

    print(f"\nwrote {args.csv}")
    print(format_table(rows, args.impls))
    failed = [n for r in rows for n in args.impls if r[f"err_{n}"] != 0]
    if failed:
        print(f"INCORRECT: {sorted(set(failed))} failed the tolerance check on some shape")
    return 0


if __name__ == "__main__":
    sys.exit(main())
