"""The CUPTI kernel tracer (platforms/cuda/kernel_trace.cpp): the keep metric's GPU kernel times
recorded inside an ordinary benchmark run, with no replay.

Off a GPU: kernel names as ncu prints them, and the reader on the tracer's recorded output (an
H100's, tests/data/cuda/kernel-trace/). On an NVIDIA GPU: the tracer is built with nvcc, loaded by
the driver into a sealed run that launches a kernel through libcuda (the same program as
test_sealed_gpu.py), and records it; a process that leaves with os._exit is named as cut short.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest
from conftest import PY, data

from kernel_mcp import runner, sandbox
from kernel_mcp.platforms.cuda import PLATFORM as CUDA
from kernel_mcp.platforms.cuda.kernel_trace import function_name, read
from kernel_mcp.workspace import Workspace


@pytest.mark.parametrize(
    ("demangled", "name"),
    [
        ("fill", "fill"),
        ("void conv3d_fast_kernel<8, 4>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, int, int)", "conv3d_fast_kernel<8, 4>"),
        (
            "void at::native::(anonymous namespace)::conv_depthwise3d_cuda_kernel<float, float, 3, 3, 3>(at::GenericPackedTensorAccessor<float, 5ul>)",
            "at::native::(anonymous namespace)::conv_depthwise3d_cuda_kernel<float, float, 3, 3, 3>",
        ),
        ("rmsnorm_onepass(float const*, int)", "rmsnorm_onepass"),
        ("void k<(anonymous namespace)::Op, 2>(int)", "k<(anonymous namespace)::Op, 2>"),
    ],
)
def test_kernel_names_read_as_ncu_prints_them(demangled, name):
    assert function_name(demangled) == name


def test_the_recorded_trace_of_an_h100_run_reads_as_launches_in_start_order():
    folder = data("cuda/kernel-trace/complete")
    frame, problems = read(folder)
    assert problems == []
    assert len(frame) > 0 and list(frame["dispatch"]) == list(range(1, len(frame) + 1))
    assert (frame["duration_ns"] > 0).all()
    assert set(frame.columns) >= {"kernel", "duration_ns", "grid_x", "wg_x", "vgprs", "lds_bytes"}


def test_a_process_that_left_without_exiting_is_named_as_cut_short(tmp_path):
    complete = data("cuda/kernel-trace/complete")
    for f in complete.glob("kernels-*.tsv"):
        lines = f.read_text().splitlines()
        (tmp_path / f.name).write_text("\n".join(lines[:-1]) + "\n")  # the same records without their end line
    _, problems = read(tmp_path)
    assert problems and "cut short" in problems[0]


def _has_cuda() -> bool:
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return shutil.which("nvcc") is not None and any(Path("/dev").glob("nvidia[0-9]*"))


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="no NVIDIA driver, GPU or nvcc here")
@pytest.mark.parametrize("leave", ["exit", "_exit"])
def test_a_sealed_run_records_its_kernel(tmp_path, leave):
    import test_sealed_gpu as cuda_check

    ws = Workspace(tmp_path)
    tracer = anyio.run(CUDA.kernel_tracer, ws)
    records = tmp_path / "records"
    records.mkdir()
    program = cuda_check.CUDA_CHECK + ("\nimport os\nos._exit(0)\n" if leave == "_exit" else "")
    with sandbox.side(tmp_path, tmp_path / "state", "trace") as boundary:
        result = runner.run_sync(
            [PY, "-c", program, cuda_check.PTX], cwd=tmp_path, timeout_s=300, env=tracer.env_for(records), boundary=boundary.with_writable(records)
        )
    assert result.ok, result.stderr.tail
    frame, problems = read(records)
    if leave == "_exit":
        assert problems and "cut short" in problems[0]
        return
    assert problems == []
    assert list(frame["kernel"]) == ["fill"]
    assert frame["duration_ns"].iloc[0] > 0 and frame["grid_x"].iloc[0] >= 1
