"""A protected harness that includes or imports an editable file runs the candidate's code, and so
can have its clock redefined without a protected byte changing: reach.py finds those paths, and
the timing symbols a change defines. Real sources in a real workspace, real `git diff` output,
and the real preprocessor's dependency list where a C compiler is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import git
import pytest

from kernel_mcp.ledger import reach
from kernel_mcp.ledger.harness import workspace_files
from kernel_mcp.ledger.reach import (
    Reach,
    TimingSymbol,
    describe,
    reaching_files,
    timing_symbols,
)
from kernel_mcp.workspace.config import HarnessConfig

KERNEL_H = textwrap.dedent("""\
    #pragma once
    #include <cuda_runtime.h>
    void launch_saxpy(float a, const float *x, float *y, int n, cudaStream_t stream);
""")
KERNEL_CU = textwrap.dedent("""\
    #include "kernel.h"
    __global__ void saxpy(float a, const float *x, float *y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
    void launch_saxpy(float a, const float *x, float *y, int n, cudaStream_t stream) {
        saxpy<<<(n + 255) / 256, 256, 0, stream>>>(a, x, y, n);
    }
""")
BENCH_CPP = textwrap.dedent("""\
    // the fixed benchmark: times launch_saxpy with the host clock
    #include <cstdio>
    #include <time.h>
    #include "kernel.h"

    static double now_s() {
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec * 1e-9;
    }

    int main() {
        const int n = 1 << 20;
        float *x, *y;
        cudaMalloc(&x, n * sizeof(float));
        cudaMalloc(&y, n * sizeof(float));
        double start = now_s();
        for (int i = 0; i < 100; ++i) launch_saxpy(2.0f, x, y, n, 0);
        cudaDeviceSynchronize();
        std::printf("saxpy,%f\\n", (now_s() - start) / 100 * 1e6);
    }
""")
KERNEL_PY = textwrap.dedent("""\
    import torch

    def softmax(x: torch.Tensor) -> torch.Tensor:
        shifted = x - x.max(dim=-1, keepdim=True).values
        e = shifted.exp()
        return e / e.sum(dim=-1, keepdim=True)
""")
BENCH_PY = textwrap.dedent("""\
    import csv
    import sys

    import torch

    import kernel
    from reference import softmax_ref


    def time_ms(fn, *args, iters=50):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn(*args)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / iters


    def main():
        x = torch.randn(4096, 4096, device="cuda")
        err = (kernel.softmax(x) - softmax_ref(x)).abs().max().item()
        csv.writer(sys.stdout).writerow(["softmax", err, time_ms(kernel.softmax, x)])


    if __name__ == "__main__":
        main()
""")
REFERENCE_PY = textwrap.dedent("""\
    import torch

    def softmax_ref(x):
        return torch.softmax(x, dim=-1)
""")


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def line_of(path: Path, needle: str) -> int:
    # split on newlines only, as git and the compiler count lines (splitlines also breaks at a form feed)
    return next(number for number, text in enumerate(path.read_text().split("\n"), 1) if needle in text)


def all_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink())


def git_repo(root: Path) -> None:
    for args in (["init", "-q"], ["config", "user.name", "Test"], ["config", "user.email", "test@example.com"], ["config", "core.autocrlf", "false"]):
        subprocess.run(["git", *args], cwd=root, check=True)


def commit_all(root: Path, message: str) -> None:
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=root, check=True)


def diff(root: Path) -> str:
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    return subprocess.run(["git", "diff", "--cached"], cwd=root, check=True, capture_output=True, text=True).stdout


# --- reaching_files --------------------------------------------------------------------------


def test_a_c_harness_including_the_kernel_header_is_reached(tmp_path):
    write(tmp_path, "kernel.h", KERNEL_H)
    write(tmp_path, "kernel.cu", KERNEL_CU)
    bench = write(tmp_path, "bench.cpp", BENCH_CPP)
    git_repo(tmp_path)
    harness = HarnessConfig(editable=["kernel.h", "kernel.cu"])
    # the file list the ledger itself uses: tracked and untracked-not-ignored
    found = reaching_files(tmp_path, workspace_files(git.Repo(tmp_path), "."), harness)
    assert found == [Reach(protected="bench.cpp", editable="kernel.h", how='#include "kernel.h"', line=line_of(bench, '"kernel.h"'), via=[])]


def test_a_sealed_harness_reaches_nothing(tmp_path):
    # the harness declares the kernel's entry point itself and links the kernel's object file
    write(tmp_path, "kernel.cu", KERNEL_CU.replace('#include "kernel.h"', "#include <cuda_runtime.h>"))
    write(tmp_path, "bench.cpp", BENCH_CPP.replace('#include "kernel.h"', "void launch_saxpy(float, const float *, float *, int, cudaStream_t);"))
    assert reaching_files(tmp_path, all_files(tmp_path), HarnessConfig(editable=["kernel.cu"])) == []


def test_a_pytorch_bench_importing_the_kernel_module_is_reached(tmp_path):
    write(tmp_path, "kernel.py", KERNEL_PY)
    write(tmp_path, "reference.py", REFERENCE_PY)
    bench = write(tmp_path, "bench.py", BENCH_PY)
    found = reaching_files(tmp_path, all_files(tmp_path), HarnessConfig(editable=["kernel.py"]))
    # reference.py is protected and imports nothing editable: followed, not reported
    assert found == [Reach(protected="bench.py", editable="kernel.py", how="import kernel", line=line_of(bench, "import kernel"))]


def test_a_triton_harness_runs_the_package_init_and_the_module(tmp_path):
    write(tmp_path, "kernels/__init__.py", "from .softmax import softmax\n")
    write(
        tmp_path,
        "kernels/softmax.py",
        textwrap.dedent("""\
        import triton
        import triton.language as tl

        @triton.jit
        def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            offs = tl.arange(0, BLOCK)
            x = tl.load(in_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
            e = tl.exp(x - tl.max(x, axis=0))
            tl.store(out_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)

        def softmax(x):
            ...
    """),
    )
    bench = write(
        tmp_path,
        "bench/bench_softmax.py",
        textwrap.dedent("""\
        import torch
        import triton
        from kernels.softmax import softmax

        x = torch.randn(1823, 781, device="cuda")
        ms = triton.testing.do_bench(lambda: softmax(x))
        print(f"softmax,{ms * 1e3:.3f}")
    """),
    )
    found = reaching_files(tmp_path, all_files(tmp_path), HarnessConfig(editable=["kernels/*.py"]))
    line = line_of(bench, "from kernels")
    how = "from kernels.softmax import softmax"
    # importing kernels.softmax runs kernels/__init__.py first: both are the candidate's code
    assert found == [
        Reach(protected="bench/bench_softmax.py", editable="kernels/__init__.py", how=how, line=line),
        Reach(protected="bench/bench_softmax.py", editable="kernels/softmax.py", how=how, line=line),
    ]


def test_relative_lazy_and_importlib_imports(tmp_path):
    write(tmp_path, "suite/__init__.py", "")
    write(tmp_path, "suite/fast.py", "def run(): ...\n")
    write(tmp_path, "suite/plugins/fused.py", "def run(): ...\n")
    write(tmp_path, "suite/util.py", "from .fast import run\n")  # protected, imports an editable module
    bench = write(
        tmp_path,
        "suite/bench.py",
        textwrap.dedent("""\
        import importlib
        from . import util

        def candidate(name):
            try:
                from .plugins import fused
            except ImportError:
                fused = None
            return importlib.import_module(name) if fused is None else fused

        BACKEND = importlib.import_module("suite.plugins.fused")
    """),
    )
    harness = HarnessConfig(editable=["suite/fast.py", "suite/plugins/*.py"])
    found = {(r.protected, r.editable, r.how, r.line, tuple(r.via)) for r in reaching_files(tmp_path, all_files(tmp_path), harness)}
    assert found == {
        ("suite/bench.py", "suite/fast.py", "from . import util", line_of(bench, "from . import util"), ("suite/util.py",)),
        ("suite/bench.py", "suite/plugins/fused.py", "from .plugins import fused", line_of(bench, "from .plugins"), ()),
        ("suite/util.py", "suite/fast.py", "from .fast import run", 1, ()),
    }


def test_a_protected_header_chain_reports_its_first_file_and_the_editable_end(tmp_path):
    write(tmp_path, "kernel.cuh", "#pragma once\n__global__ void gemm(const float *a, const float *b, float *c, int n);\n")
    write(tmp_path, "common/timer.h", '#pragma once\n#include <chrono>\n#include "../kernel.cuh"\n')
    bench = write(tmp_path, "bench.cu", '#include <cstdio>\n#include "common/timer.h"\nint main() { return 0; }\n')
    harness = HarnessConfig(editable=["kernel.cuh"], protected=["bench.cu", "common/**"])
    assert reaching_files(tmp_path, all_files(tmp_path), harness) == [
        Reach(protected="bench.cu", editable="kernel.cuh", how='#include "common/timer.h"', line=line_of(bench, "timer.h"), via=["common/timer.h"]),
        Reach(protected="common/timer.h", editable="kernel.cuh", how='#include "../kernel.cuh"', line=3),
    ]


def test_a_cycle_of_includes_ends(tmp_path):
    write(tmp_path, "a.h", '#pragma once\n#include "b.h"\n#include "a.h"\n')
    write(tmp_path, "b.h", '#pragma once\n#include "a.h"\n#include <kernel.h>\n')  # angle form, found at the root
    write(tmp_path, "kernel.h", "#pragma once\n")
    write(tmp_path, "bench.c", '#include "a.h"\nint main(void) { return 0; }\n')
    found = reaching_files(tmp_path, all_files(tmp_path), HarnessConfig(editable=["kernel.h"]))
    assert [(r.protected, r.editable, r.via) for r in found] == [("a.h", "kernel.h", ["b.h"]), ("b.h", "kernel.h", []), ("bench.c", "kernel.h", ["a.h", "b.h"])]
    assert found[1].how == "#include <kernel.h>"


def test_commented_includes_are_not_followed_but_conditional_ones_are(tmp_path):
    write(tmp_path, "kernel.h", "#pragma once\n")
    write(tmp_path, "tuned.h", "#pragma once\n")
    bench = write(
        tmp_path,
        "bench.c",
        textwrap.dedent("""\
        /* the old kernel:
        #include "kernel.h"
        */
        // #include "kernel.h"
        #if USE_TUNED
        #  include "tuned.h"
        #endif
        int main(void) { return 0; }
    """),
    )
    found = reaching_files(tmp_path, all_files(tmp_path), HarnessConfig(editable=["*.h"]))
    # an editable header could define USE_TUNED: the condition is not the harness's to rely on
    assert [(r.editable, r.how, r.line) for r in found] == [("tuned.h", '#include "tuned.h"', line_of(bench, "tuned.h"))]


def test_a_file_that_does_not_parse_or_decode_is_skipped(tmp_path):
    write(tmp_path, "kernel.py", KERNEL_PY)
    write(tmp_path, "legacy_bench.py", 'import kernel\nprint "python 2"\n')
    (tmp_path / "blob.h").write_bytes(b'\xff\xfe\x00#include "kernel.h"\n\x80\x81')
    write(tmp_path, "bench.py", BENCH_PY)
    write(tmp_path, "reference.py", REFERENCE_PY)
    (tmp_path / "deep.py").write_text("x = " + "(" * 5000 + ")" * 5000 + "\nimport kernel\n")
    found = reaching_files(tmp_path, all_files(tmp_path), HarnessConfig(editable=["kernel.py"]))
    assert [r.protected for r in found] == ["bench.py"]


def test_a_symlink_out_of_the_workspace_is_not_read(tmp_path):
    outside, workspace = tmp_path / "outside", tmp_path / "ws"
    write(outside, "vendor.h", '#pragma once\n#include "kernel.h"\n')
    write(workspace, "kernel.h", KERNEL_H)
    write(workspace, "bench.c", '#include "vendor.h"\n#include "inside.h"\nint main(void) { return 0; }\n')
    (workspace / "vendor.h").symlink_to(outside / "vendor.h")
    (workspace / "inside.h").symlink_to("kernel.h")  # a link within the workspace is the file it names
    found = reaching_files(workspace, all_files(workspace), HarnessConfig(editable=["kernel.h"]))
    assert found == [Reach(protected="bench.c", editable="kernel.h", how='#include "inside.h"', line=2)]
    # the same header copied inside is read, so it was the link that stopped the walk
    (workspace / "vendor.h").unlink()
    shutil.copy(outside / "vendor.h", workspace / "vendor.h")
    found = reaching_files(workspace, all_files(workspace), HarnessConfig(editable=["kernel.h"]))
    assert ("vendor.h", "kernel.h") in [(r.protected, r.editable) for r in found]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_like_a_header_does_not_block(tmp_path):
    write(tmp_path, "kernel.h", KERNEL_H)
    os.mkfifo(tmp_path / "trap.h")
    write(tmp_path, "bench.c", '#include "trap.h"\n#include "kernel.h"\n')
    found = reaching_files(tmp_path, ["bench.c", "kernel.h", "trap.h"], HarnessConfig(editable=["kernel.h"]))
    assert [(r.protected, r.editable) for r in found] == [("bench.c", "kernel.h")]


def test_the_work_is_bounded(tmp_path, monkeypatch):
    write(tmp_path, "kernel.h", KERNEL_H)
    write(tmp_path, "late.c", "int pad;\n" * 200 + '#include "kernel.h"\n')
    for i in range(5):
        write(tmp_path, f"h{i}.c", '#include "kernel.h"\n')
    monkeypatch.setattr(reach, "MAX_BYTES", 100)
    found = reaching_files(tmp_path, all_files(tmp_path), HarnessConfig(editable=["kernel.h"]))
    assert "late.c" not in [r.protected for r in found]  # the include lies past the bytes read
    monkeypatch.setattr(reach, "MAX_FILES", 2)
    assert len(reaching_files(tmp_path, all_files(tmp_path), HarnessConfig(editable=["kernel.h"]))) == 2


def test_the_preprocessor_opens_the_same_files(tmp_path):
    compiler = shutil.which("clang") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("neither clang nor gcc is installed")
    write(tmp_path, "kernel.h", "#pragma once\nvoid scale(float *x, int n, float a);\n")
    write(tmp_path, "config.h", "#pragma once\n#define N 4096\n")
    write(tmp_path, "util/detail.h", "#pragma once\nstatic inline int ceil_div(int a, int b) { return (a + b - 1) / b; }\n")
    write(tmp_path, "util/common.h", '#pragma once\n#include "detail.h"\n#include "config.h"\n#include <stdio.h>\n')
    write(
        tmp_path,
        "bench.c",
        textwrap.dedent("""\
        #include <stdio.h>
        #include "util/common.h"
        /* #include "missing.h" */
        #include "kernel.h"
        #include "kernel.h"
        int main(void) { float x[N]; scale(x, N, 2.0f); printf("%d\\n", ceil_div(N, 256)); return 0; }
    """),
    )
    harness = HarnessConfig(editable=["kernel.h", "config.h", "util/detail.h"])
    found = [r for r in reaching_files(tmp_path, all_files(tmp_path), harness) if r.protected == "bench.c"]
    ours = {r.editable for r in found} | {v for r in found for v in r.via}
    # -iquote .: the workspace root is searched for quoted includes, as reach.py does
    done = subprocess.run([compiler, "-MM", "-iquote", ".", "bench.c"], cwd=tmp_path, capture_output=True, text=True, check=True)
    listed = done.stdout.replace("\\\n", " ").split(":", 1)[1].split()
    assert ours == {os.path.normpath(p) for p in listed} - {"bench.c"} == {"kernel.h", "config.h", "util/common.h", "util/detail.h"}


def test_describe_words_each_reach_and_caps_the_list():
    reaches = [
        Reach(protected="bench.cpp", editable="kernel.h", how='#include "kernel.h"', line=3),
        Reach(protected="bench.py", editable="kernel.py", how="import kernel", line=5),
        Reach(protected="bench.cu", editable="kernel.cuh", how='#include "timer.h"', line=2, via=["common/timer.h"]),
    ]
    assert describe(reaches) == [
        "bench.cpp includes kernel.h (editable): the harness is not sealed against it",
        "bench.py imports kernel.py (editable): the harness is not sealed against it",
        "bench.cu includes kernel.cuh (editable) through common/timer.h: the harness is not sealed against it",
    ]
    many = [Reach(protected=f"bench_{i}.py", editable="d/" * 120 + "kernel.py", how="import kernel", line=1) for i in range(20)]
    lines = describe(many, limit=5)
    assert len(lines) == 5 and lines[-1] == "(and 16 more)"
    assert all(len(line) < 200 for line in lines)
    assert describe([]) == []


# --- timing_symbols ----------------------------------------------------------------------------


def test_a_change_that_redefines_clocks_is_found_and_calls_are_not(tmp_path):
    git_repo(tmp_path)
    write(tmp_path, "kernel.h", KERNEL_H)
    write(tmp_path, "kernel.cu", KERNEL_CU)
    write(tmp_path, "kernel.py", KERNEL_PY)
    commit_all(tmp_path, "baseline")
    header = write(tmp_path, "kernel.h", KERNEL_H + "#include <time.h>\n#define clock_gettime(id, ts) fake_clock_gettime(id, ts)\n")
    source = write(
        tmp_path,
        "kernel.cu",
        textwrap.dedent("""\
        #include "kernel.h"
        #include <chrono>
        #include <dlfcn.h>

        extern "C" cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                                    cudaEvent_t end) {
            *ms = 0.001f;
            return cudaSuccess;
        }

        static void *real_record = dlsym(RTLD_NEXT, "cudaEventRecord");

        __global__ void saxpy(float a, const float *x, float *y, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = a * x[i] + y[i];
        }
        void launch_saxpy(float a, const float *x, float *y, int n, cudaStream_t stream) {
            cudaEvent_t done;
            cudaEventCreate(&done);
            auto t0 = std::chrono::steady_clock::now();
            saxpy<<<(n + 255) / 256, 256, 0, stream>>>(a, x, y, n);
            cudaEventRecord(done, stream);
            CHECK(cudaEventSynchronize(done));
        }
    """),
    )
    module = write(
        tmp_path,
        "kernel.py",
        KERNEL_PY
        + textwrap.dedent("""\

        import time

        _real = time.perf_counter
        time.perf_counter = lambda: _real() * 0.5
        setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 0.01)


        class Timer:
            def __init__(self):
                self.elapsed_time = 0.0
                self.start = torch.cuda.Event(enable_timing=True)

            def measure(self, end):
                t0 = time.perf_counter()
                self.elapsed_time = self.start.elapsed_time(end) + time.perf_counter() - t0
                return self.elapsed_time
    """),
    )
    found = timing_symbols(diff(tmp_path))
    assert found == sorted(
        [
            TimingSymbol(symbol="clock_gettime", file="kernel.h", line=line_of(header, "#define clock_gettime")),
            TimingSymbol(symbol="cudaEventElapsedTime", file="kernel.cu", line=line_of(source, "cudaError_t cudaEventElapsedTime")),
            TimingSymbol(symbol="cudaEventRecord", file="kernel.cu", line=line_of(source, "dlsym")),
            TimingSymbol(symbol="elapsed_time", file="kernel.py", line=line_of(module, "setattr(")),
            TimingSymbol(symbol="time.perf_counter", file="kernel.py", line=line_of(module, "time.perf_counter = ")),
        ],
        key=lambda s: (s.symbol, s.file),
    )


def test_an_ordinary_kernel_change_has_no_timing_symbols(tmp_path):
    git_repo(tmp_path)
    write(tmp_path, "kernel.cu", KERNEL_CU)
    write(tmp_path, "bench.py", BENCH_PY)
    commit_all(tmp_path, "baseline")
    write(
        tmp_path,
        "kernel.cu",
        KERNEL_CU.replace("256", "512")
        + textwrap.dedent("""\
        // prototypes only: declaring what the runtime already defines changes nothing
        cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
        cudaError_t cudaEventElapsedTime(float *ms,
                                         cudaEvent_t start, cudaEvent_t end);
        float time_launch(cudaEvent_t a, cudaEvent_t b, cudaStream_t s) {
            float ms = 0;
            cudaEventRecord(a, s);
            if (cudaEventRecord(b, s) != cudaSuccess) return -1;
            cudaEventSynchronize(b);
            cudaEventElapsedTime(&ms, a, b);
            long t = clock();
            double scaled = 2.0 *
                clock();
            auto t1 = std::chrono::high_resolution_clock::now();
            return ms;
        }
    """),
    )
    write(
        tmp_path,
        "bench.py",
        BENCH_PY.replace("iters=50", "iters=100")
        + textwrap.dedent("""\
        # define clock_gettime semantics in the notes: a comment, not a macro
        def report(start, end, timer):
            t = time.perf_counter()
            timer.time = time.time()
            ms = triton.testing.do_bench(lambda: None)
            same = time.perf_counter == t
            return start.elapsed_time(end), torch.cuda.Event(enable_timing=True), ms, same
    """),
    )
    assert timing_symbols(diff(tmp_path)) == []


def test_code_that_looked_like_a_definition_to_an_earlier_rule_is_no_finding(tmp_path):
    # each of these was a finding once, on real headers and packages; none defines a clock
    git_repo(tmp_path)
    write(tmp_path, "README.md", "kernels\n")
    commit_all(tmp_path, "baseline")
    write(
        tmp_path,
        "profile.h",
        textwrap.dedent("""\
        #include <chrono>
        using namespace std::chrono;
        namespace chrono = std::chrono;
        struct Datapoint {
            explicit Datapoint(int sr)
                : sr(sr), start(std::chrono::steady_clock::now()) {}
            int sr;
            std::chrono::steady_clock::time_point start;
        };
    """),
    )
    write(
        tmp_path,
        "util.py",
        textwrap.dedent('''\
        import builtins

        def use_deterministic(mode: builtins.bool, *, warn_only: builtins.bool = False) -> None:
            """
            >>> builtins.Some = Some
            """

        class TestSlices:
            def monotonic(self, request):
                self.monotonic = request.param == "increasing"
                return request.param
    '''),
    )
    assert timing_symbols(diff(tmp_path)) == []


def test_a_form_feed_inside_a_line_does_not_shift_line_numbers(tmp_path):
    git_repo(tmp_path)
    write(tmp_path, "kernel.h", KERNEL_H)
    commit_all(tmp_path, "baseline")
    header = write(tmp_path, "kernel.h", KERNEL_H + "/* section \f break */\n#define gettimeofday(tv, tz) fake(tv)\n")
    assert timing_symbols(diff(tmp_path)) == [TimingSymbol(symbol="gettimeofday", file="kernel.h", line=line_of(header, "#define gettimeofday"))]


def test_the_scan_is_linear_in_the_diff():
    # a pattern that scanned on from every line start took minutes on 32,000 such lines
    lines = ["int a b", "struct steady_clock x", "/* dlsym(a", "int clock(", "class A(b"] * 8000
    text = "+++ b/big.c\n@@ -0,0 +1,40000 @@\n" + "".join(f"+{line}\n" for line in lines)
    started = time.monotonic()
    assert timing_symbols(text) == []
    assert time.monotonic() - started < 20


def test_an_unclosed_comment_in_a_large_harness_is_read_once(tmp_path):
    write(tmp_path, "kernel.h", KERNEL_H)
    write(tmp_path, "bench.c", '#include "kernel.h"\n' + "/* " * 200_000)
    started = time.monotonic()
    found = reaching_files(tmp_path, all_files(tmp_path), HarnessConfig(editable=["kernel.h"]))
    assert [(r.protected, r.editable) for r in found] == [("bench.c", "kernel.h")]
    assert time.monotonic() - started < 20


def test_removed_definitions_are_not_findings(tmp_path):
    git_repo(tmp_path)
    write(tmp_path, "kernel.h", KERNEL_H + "#define clock_gettime fake_clock_gettime\n")
    write(tmp_path, "kernel.py", KERNEL_PY + "import time\ntime.perf_counter = lambda: 0.0\n")
    commit_all(tmp_path, "a hack")
    write(tmp_path, "kernel.h", KERNEL_H)
    write(tmp_path, "kernel.py", KERNEL_PY)
    assert timing_symbols(diff(tmp_path)) == []


def test_other_ways_of_replacing_a_clock(tmp_path):
    git_repo(tmp_path)
    write(tmp_path, "README.md", "kernels\n")
    commit_all(tmp_path, "baseline")
    write(
        tmp_path,
        "patches.py",
        textwrap.dedent("""\
        import builtins, sys, time
        from unittest import mock
        import torch, triton

        patcher = mock.patch("time.perf_counter_ns", return_value=0)
        monkey.setattr(time, "monotonic", lambda: 0.0)
        time.time = lambda: 0.0
        torch.cuda.Event = FakeEvent
        triton.testing.do_bench = lambda fn, **kw: 0.001
        builtins.__import__ = hooked_import
        sys.modules["time"] = fake_time

        class FastEvent(torch.cuda.Event):
            pass

        def perf_counter():
            return 0.0

        CUDA_SRC = '''
        #define cudaEventRecord(e, s) cudaSuccess
        '''
        flags = ["-O3", "-Dgettimeofday=fake_gettimeofday"]
    """),
    )
    write(
        tmp_path,
        "chrono_hack.hpp",
        textwrap.dedent("""\
        #pragma weak clock
        int __attribute__((weak)) timespec_get(struct timespec *ts, int base);
        namespace std { namespace chrono {
        struct steady_clock {
            static time_point now() noexcept;
        };
        } }
        std::chrono::high_resolution_clock::time_point std::chrono::high_resolution_clock::now() noexcept {
            return {};
        }
    """),
    )
    write(tmp_path, "kr.c", "#include <sys/time.h>\nint\ngettimeofday(struct timeval *tv, void *tz)\n{\n    return 0;\n}\n")
    # an added line reading "++ x" would look like a file header to a reader that counts no lines
    write(tmp_path, "weird name.c", "int calls;\nvoid f(void) {\n++ calls;\n}\n#undef hipEventSynchronize\n")
    found = {(s.symbol, s.file) for s in timing_symbols(diff(tmp_path))}
    assert found == {
        ("time.perf_counter_ns", "patches.py"),
        ("time.monotonic", "patches.py"),
        ("time.time", "patches.py"),
        ("torch.cuda.Event", "patches.py"),
        ("triton.testing.do_bench", "patches.py"),
        ("builtins.__import__", "patches.py"),
        ("sys.modules['time']", "patches.py"),
        ("perf_counter", "patches.py"),
        ("cudaEventRecord", "patches.py"),
        ("gettimeofday", "patches.py"),
        ("clock", "chrono_hack.hpp"),
        ("timespec_get", "chrono_hack.hpp"),
        ("std::chrono", "chrono_hack.hpp"),
        ("std::chrono::steady_clock", "chrono_hack.hpp"),
        ("std::chrono::high_resolution_clock", "chrono_hack.hpp"),
        ("hipEventSynchronize", "weird name.c"),
        ("gettimeofday", "kr.c"),
    }
    weird = [s for s in timing_symbols(diff(tmp_path)) if s.file == "weird name.c"]
    assert [s.line for s in weird] == [5]


def test_a_diff_that_is_not_a_diff_finds_nothing():
    assert timing_symbols("") == []
    assert timing_symbols("#define clock_gettime fake\n+time.perf_counter = f\n") == []  # no file, no hunk
    assert timing_symbols("+++ b/x.py\n@@ -0,0 +1 @@\n+time.perf_counter = f\n") == [TimingSymbol(symbol="time.perf_counter", file="x.py", line=1)]
