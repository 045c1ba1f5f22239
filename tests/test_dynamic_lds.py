"""Dynamic LDS (extern __shared__, HIP_DYNAMIC_SHARED): sized at launch, so no compiler figure holds
it. compile_kernel says it is unknown, or counts the size given as dynamic_lds_bytes, and says which.
AMD: the real offline clang on the example's fast.hip and on small kernels; NVIDIA: the recorded
nvcc 13 / cuobjdump logs of the same kernel (tests/data/cuda/nvcc13-sm90), through the same code."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mcp import Client

from conftest import REPO, data, text_of
from kernel_mcp.compile import CompileAnswer, with_occupancy, dynamic_lds, nvidia, with_dynamic_lds
from kernel_mcp.platforms import VENDORS
from kernel_mcp.server import build_server

pytestmark = pytest.mark.anyio
EXAMPLE = REPO / "kernels" / "conv3d_depthwise"


@pytest.fixture
def kernel_ws(tmp_path: Path) -> Path:
    root = tmp_path / "kws"
    shutil.copytree(EXAMPLE / "src", root / "src")
    (root / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    (root / "include").mkdir()
    (root / "include" / "tile.h").write_text(
        "#pragma once\n#include <hip/hip_runtime.h>\n"
        "// extern __shared__ in this comment is not a declaration\n"
        "__device__ inline float* tile() { extern __shared__ float dyn[]; return dyn; }\n"
    )
    (root / "in_header.hip").write_text(
        '#include "include/tile.h"\n'
        "__global__ __launch_bounds__(256) void scale(const float* x, float* y) {\n"
        "  float* t = tile();\n  t[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n"
        "  y[threadIdx.x] = t[255 - threadIdx.x];\n}\n"
    )
    (root / "macro.hip").write_text(
        "#include <hip/hip_runtime.h>\n"
        "__global__ __launch_bounds__(128) void rev(const int* x, int* y) {\n"
        "  HIP_DYNAMIC_SHARED(int, buf)\n  buf[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n"
        "  y[threadIdx.x] = buf[127 - threadIdx.x];\n}\n"
    )
    (root / "static_only.hip").write_text(
        "#include <hip/hip_runtime.h>\n"
        "__global__ __launch_bounds__(256) void copy(const float* x, float* y) {\n"
        "  __shared__ float s[256];\n  s[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n"
        "  y[threadIdx.x] = s[255 - threadIdx.x];\n}\n"
    )
    return root


async def compile_(client, **arguments):
    result = await client.call_tool("compile_kernel", arguments)
    assert not result.is_error, text_of(result)
    return result.structured_content, text_of(result)


def test_declarations_are_found_in_the_source_and_its_quoted_headers(kernel_ws):
    assert dynamic_lds.declarations(kernel_ws / "src" / "fast.hip", kernel_ws) == ["src/fast.hip:246"]
    assert dynamic_lds.declarations(kernel_ws / "src" / "mfma.hip", kernel_ws) == ["src/mfma.hip:97"]  # with an attribute after __shared__
    assert dynamic_lds.declarations(kernel_ws / "src" / "lds.hip", kernel_ws) == []  # a static __shared__ array only
    assert dynamic_lds.declarations(kernel_ws / "in_header.hip", kernel_ws) == ["include/tile.h:4"]  # not the comment on line 3
    assert dynamic_lds.declarations(kernel_ws / "macro.hip", kernel_ws) == ["macro.hip:3"]


async def test_dynamic_lds_is_unknown_unless_given_and_occupancy_says_what_it_counted(kernel_ws):
    async with Client(build_server(kernel_ws)) as client:
        unknown, text = await compile_(client, source="src/fast.hip")
        assert unknown["kernels"] and all(k["dynamic_lds"] == "unknown" and k["lds_bytes"] == 0 for k in unknown["kernels"])
        assert "LDS 0 B static + dynamic unknown" in text and "LDS 0 B," not in text
        assert "the source declares dynamic LDS (src/fast.hip:246), sized at launch" in text
        assert "give dynamic_lds_bytes" in text and "occupancy counts static LDS only" in text
        assert len(text.encode()) <= 4096 and "answer cut" not in text

        given, text = await compile_(client, source="src/fast.hip", dynamic_lds_bytes=65536, block_size=256)
        first = given["kernels"][0]
        assert first["dynamic_lds"] == "given" and first["dynamic_lds_bytes"] == 65536
        assert "LDS 0 B static + 65,536 B dynamic (given)" in text
        assert "occupancy counts 65,536 B of dynamic LDS per workgroup on top of each kernel's static LDS" in text
        assert "(the dynamic_lds_bytes argument; the source declares it at src/fast.hip:246)" in text
        assert len(text.encode()) <= 4096 and "answer cut" not in text  # alike notes of the 4 instantiations are one
        assert "4 kernels (conv3d_fast_kernel<4, 4>, " in text
        occ = first["occupancy"]
        assert "LDS" in occ["limiter"] and any("163840 B per CU // 65536 B = 2 workgroups" in line for line in occ["explanation"])
        assert first["occupancy"]["waves"] < unknown["kernels"][0]["occupancy"]["waves"]
        if first["compiler_occupancy"] is not None and first["compiler_occupancy"] != occ["waves"]:
            assert "the compiler's occupancy counts static LDS only; the calculator adds the 65,536 B" in text  # it never sees the launch


async def test_a_header_declaration_the_macro_and_a_static_only_kernel(kernel_ws):
    async with Client(build_server(kernel_ws)) as client:
        header, text = await compile_(client, source="in_header.hip")
        assert header["kernels"][0]["dynamic_lds"] == "unknown" and "(include/tile.h:4)" in text
        macro, text = await compile_(client, source="macro.hip", dynamic_lds_bytes=512)
        assert macro["ok"] and "LDS 0 B static + 512 B dynamic (given)" in text
        plain, text = await compile_(client, source="static_only.hip")
        k = plain["kernels"][0]
        assert k["dynamic_lds"] == "none" and "LDS 1,024 B," in text and "dynamic" not in text
        told, text = await compile_(client, source="static_only.hip", dynamic_lds_bytes=2048)
        assert "LDS 1,024 B static + 2,048 B dynamic (given)" in text
        assert "though the source declares no extern __shared__" in text
        assert any("// 3072 B" in line for line in told["kernels"][0]["occupancy"]["explanation"])
        refused = await client.call_tool("compile_kernel", {"source": "macro.hip", "dynamic_lds_bytes": -1})
        assert refused.is_error


def test_nvidia_recorded_logs_of_the_same_kernel():
    """ptxas's `bytes smem` is the static part too: the eight instantiations of conv3d_fast_kernel
    (nvcc 13, sm_90) report none, and the source declares dynamic shared memory."""
    folder = "cuda/nvcc13-sm90"
    ptxas, res_usage = data(f"{folder}/fast.ptxas.log").read_text(), data(f"{folder}/fast.res-usage.log").read_text()
    declared = dynamic_lds.declarations(EXAMPLE / "src" / "fast.hip", EXAMPLE)

    def answer(dynamic: int | None) -> tuple[list, str]:
        kernels = nvidia.kernels_from(ptxas, res_usage, "")
        notes = with_dynamic_lds(kernels, declared, dynamic) + with_occupancy(kernels, "sm_90", 256, VENDORS)
        text = CompileAnswer(
            source="src/fast.hip",
            arch="sm_90",
            backend="nvcc",
            device_only=False,
            ok=True,
            status="exit 0",
            kernels=kernels,
            kernels_total=len(kernels),
            diagnostics=[],
            diagnostics_total=0,
            notes=notes,
            run_id="recorded",
            artifacts=[],
        ).render()
        return kernels, text

    kernels, text = answer(None)
    assert len(kernels) == 8 and all(k.lds_bytes == 0 and k.dynamic_lds == "unknown" for k in kernels)
    assert text.count("LDS 0 B static + dynamic unknown") == 8 and "(src/fast.hip:246)" in text
    static_waves = {k.symbol: k.occupancy.waves for k in kernels}
    kernels, text = answer(100 * 1024)
    assert text.count("LDS 0 B static + 102,400 B dynamic (given)") == 8
    for k in kernels:  # 233472 B per SM / (102400 + 1024 reserved) = 2 blocks of 8 warps: 4 warps per sub-partition
        assert k.occupancy.limiter == ["shared memory"] and k.occupancy.waves == 4 < static_waves[k.symbol]
        assert any("(102400 + 1024 reserved)" in line for line in k.occupancy.explanation)
