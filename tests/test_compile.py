"""compile_kernel and isa_view with the real offline clang (gfx950, gfx942) and, where installed, nvcc."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp.server import build_server

from conftest import REPO, fixture

pytestmark = pytest.mark.anyio
EXAMPLE = REPO / "kernels" / "conv3d_depthwise"
EXAMPLE_KERNELS = sorted(p.name for p in (EXAMPLE / "src").glob("*.hip"))


@pytest.fixture
def kernel_ws(tmp_path: Path) -> Path:
    """A workspace holding a copy of the example kernels and a few kernels written to provoke facts."""
    root = tmp_path / "kws"
    shutil.copytree(EXAMPLE / "src", root / "src")
    (root / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    (root / "bad.hip").write_text("#include <hip/hip_runtime.h>\n__global__ void broken(float* x) {\n  x[0] = 1.0f\n}\n")
    (root / "lds32k.hip").write_text(
        "#include <hip/hip_runtime.h>\n"
        "__global__ __launch_bounds__(256) void lds32k(const float* x, float* y) {\n"
        "  __shared__ float buf[8192];\n"
        "  for (int i = threadIdx.x; i < 8192; i += 256) buf[i] = x[blockIdx.x * 8192 + i];\n"
        "  __syncthreads();\n"
        "  y[blockIdx.x * 256 + threadIdx.x] = buf[(threadIdx.x * 33) % 8192];\n}\n"
    )
    (root / "spill.hip").write_text(
        "#include <hip/hip_runtime.h>\n"
        "__global__ __launch_bounds__(1024) void spill(const float* x, float* y, int n) {\n"
        "  float acc[256];\n"
        "  #pragma unroll\n  for (int j = 0; j < 256; ++j) acc[j] = x[threadIdx.x + j];\n"
        "  for (int i = 0; i < n; ++i) {\n"
        "    #pragma unroll\n    for (int j = 0; j < 256; ++j) acc[j] = acc[j] * acc[(j + 1) & 255] + x[i];\n  }\n"
        "  float s = 0;\n  #pragma unroll\n  for (int j = 0; j < 256; ++j) s += acc[j];\n"
        "  y[threadIdx.x] = s;\n}\n"
    )
    (root / "noisy.hip").write_text(
        "#include <hip/hip_runtime.h>\n" + '#warning "a very noisy header line"\n' * 30000 + "__global__ void quiet(float* x) { x[0] = 0; }\n"
    )
    return root


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


async def compile_(client, **arguments):
    result = await client.call_tool("compile_kernel", arguments)
    assert not result.is_error, text_of(result)
    return result.structured_content, text_of(result)


@pytest.mark.parametrize("arch", ["gfx950", "gfx942"])
async def test_example_kernels_compile_with_real_figures(kernel_ws, arch):
    async with Client(build_server(kernel_ws)) as client:
        for name in EXAMPLE_KERNELS:
            data, text = await compile_(client, source=f"src/{name}", arch=arch)
            assert data["ok"] and data["device_only"] and data["backend"] == "offline-clang", text
            assert data["kernels"], f"{name}: no kernel found"
            for k in data["kernels"]:
                assert k["vgprs"] > 0 and k["sgprs"] > 0 and k["mix"]["total"] > 50, (name, k)
                assert k["occupancy"]["waves"] >= 1
            assert len(text.encode()) <= 4096
            mixes = [k["mix"] for k in data["kernels"]]
            if name.startswith("lds"):
                assert all(k["lds_bytes"] > 0 for k in data["kernels"]) and all(m["lds_read"] > 0 for m in mixes)
            if name == "mfma.hip":
                assert all(m["mfma"] > 0 for m in mixes), "the matrix-core step must use MFMA instructions"
            if name == "naive.hip":
                assert all(m["vmem_load"] >= 75 for m in mixes), "naive: every tap is a global load"


async def test_syntax_error_gives_file_line(kernel_ws):
    async with Client(build_server(kernel_ws)) as client:
        result = await client.call_tool("compile_kernel", {"source": "bad.hip"})
    data, text = result.structured_content, text_of(result)
    assert result.is_error and not data["ok"]  # an error answer that still carries the compile's answer
    first = data["diagnostics"][0]
    assert (first["file"], first["line"], first["severity"]) == ("bad.hip", 3, "error")
    assert "bad.hip:3:" in text and "expected ';'" in text


async def test_32k_lds_reports_bytes_and_occupancy_limit(kernel_ws):
    async with Client(build_server(kernel_ws)) as client:
        cdna4, _ = await compile_(client, source="lds32k.hip", arch="gfx950")
        cdna3, _ = await compile_(client, source="lds32k.hip", arch="gfx942")
    k4, k3 = cdna4["kernels"][0], cdna3["kernels"][0]
    assert k4["lds_bytes"] == 32768 and k3["lds_bytes"] == 32768
    assert k4["occupancy"]["waves"] == 5 and k4["occupancy"]["limiter"] == ["LDS"]
    assert k3["occupancy"]["waves"] == 2 and k3["occupancy"]["limiter"] == ["LDS"]


async def test_spilling_kernel_reports_the_spill(kernel_ws):
    async with Client(build_server(kernel_ws)) as client:
        data, text = await compile_(client, source="spill.hip")
    k = data["kernels"][0]
    assert (k["vgpr_spills"] or 0) > 0 and k["scratch_bytes"] > 0
    assert "SPILLS" in text


async def test_megabytes_of_warnings_give_a_bounded_answer(kernel_ws):
    async with Client(build_server(kernel_ws)) as client:
        data, text = await compile_(client, source="noisy.hip")
    assert data["ok"] and data["kernels"][0]["name"] == "quiet"
    assert data["diagnostics_total"] == 30000 and len(data["diagnostics"]) == 20
    assert len(text.encode()) <= 4096
    log = kernel_ws / ".kernel-mcp" / "runs" / data["run_id"] / "compiler.stderr.log"
    assert log.stat().st_size > 1_000_000


async def test_change_against_previous_compile(kernel_ws):
    src = kernel_ws / "lds32k.hip"
    async with Client(build_server(kernel_ws)) as client:
        await compile_(client, source="lds32k.hip")
        src.write_text(src.read_text().replace("buf[8192]", "buf[4096]").replace("8192", "4096"))
        data, text = await compile_(client, source="lds32k.hip")
    assert "LDS 32768 -> 16384" in data["kernels"][0]["changes"]
    assert "occupancy 5 -> 8" in data["kernels"][0]["changes"]
    assert "vs previous:" in text


@pytest.mark.parametrize(
    "arguments, expected",
    [
        ({"source": "../outside.hip"}, "outside the workspace"),
        ({"source": "/etc/passwd"}, "absolute"),
        ({"source": "-o.hip"}, "option"),
        ({"source": "kernel-mcp.toml"}, "not a kernel source"),
        ({"source": "lds32k.hip", "flags": ["-o", "/tmp/x"]}, "not allowed"),
        ({"source": "lds32k.hip", "flags": ["-fplugin=/tmp/evil.so"]}, "not allowed"),
        ({"source": "lds32k.hip", "flags": ["@/tmp/response"]}, "not allowed"),
        ({"source": "lds32k.hip", "flags": ["-Xclang", "-load"]}, "not allowed"),
        ({"source": "lds32k.hip", "defines": ["X;touch /tmp/p"]}, "define"),
        ({"source": "lds32k.hip", "arch": "gfx1100"}, "arch"),
    ],
)
async def test_unsafe_or_bad_arguments_refused(kernel_ws, arguments, expected):
    async with Client(build_server(kernel_ws)) as client:
        result = await client.call_tool("compile_kernel", arguments)
    assert result.is_error and expected in text_of(result)


async def test_allowed_flags_and_defines_reach_the_compiler(kernel_ws):
    async with Client(build_server(kernel_ws)) as client:
        data, _ = await compile_(client, source="lds32k.hip", flags=["-O1", "-ffast-math"], defines=["UNUSED=3"])
    argv = (kernel_ws / ".kernel-mcp" / "runs" / data["run_id"] / "meta.json").read_text()
    assert data["ok"] and "-O1" in argv


async def test_isa_view_slices(kernel_ws):
    async with Client(build_server(kernel_ws)) as client:
        none = await client.call_tool("isa_view", {"pattern": "ds_read"})
        assert none.is_error and "compile_kernel first" in text_of(none)
        await compile_(client, source="lds32k.hip")
        by_line = await client.call_tool("isa_view", {"source_line": 4})
        assert not by_line.is_error and "[L4]" in text_of(by_line)
        assert "global_load" in text_of(by_line)
        by_pattern = await client.call_tool("isa_view", {"pattern": r"^ds_read", "context": 1})
        assert by_pattern.structured_content["matches"] >= 1 and "ds_read" in text_of(by_pattern)
        label = await client.call_tool("isa_view", {"around": ".LBB0_1"})
        assert not label.is_error or "no label" in text_of(label)
        whole = await client.call_tool("isa_view", {"full": True})
        assert len(text_of(whole).encode()) <= 4096
        if whole.structured_content.get("next_offset"):
            more = await client.call_tool("isa_view", {"full": True, "offset": whole.structured_content["next_offset"]})
            assert not more.is_error
        nothing = await client.call_tool("isa_view", {})
        assert nothing.is_error and "say what to show" in text_of(nothing)
        missing = await client.call_tool("isa_view", {"source_line": 999})
        assert missing.is_error and "no instruction comes from line 999" in text_of(missing)


# -- [compile] include_dirs: the workspace's own header folders, the only ones a compile is given --------


async def test_include_dirs_of_the_workspace_reach_the_compiler(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n\n[compile]\ninclude_dirs = ["include", "third_party/kit"]\n')
    (tmp_path / "include" / "mylib").mkdir(parents=True)
    (tmp_path / "include" / "mylib" / "activations.h").write_text("#pragma once\n__device__ inline float silu(float v) { return v / (1.0f + expf(-v)); }\n")
    (tmp_path / "third_party" / "kit").mkdir(parents=True)
    (tmp_path / "third_party" / "kit" / "kit_tiles.h").write_text("#pragma once\n#define KIT_TILE 128\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "silu.hip").write_text(
        '#include <hip/hip_runtime.h>\n#include <mylib/activations.h>\n#include "kit_tiles.h"\n'
        "__global__ __launch_bounds__(KIT_TILE) void silu_kernel(const float* x, float* y, int n) {\n"
        "  int i = blockIdx.x * KIT_TILE + threadIdx.x;\n  if (i < n) y[i] = silu(x[i]);\n}\n"
    )
    async with Client(build_server(tmp_path)) as client:
        result = await client.call_tool("compile_kernel", {"source": "src/silu.hip"})
    assert not result.is_error, text_of(result)
    (kernel,) = result.structured_content["kernels"]  # both headers were found: one in each folder
    assert kernel["name"] == "silu_kernel" and kernel["max_block_size"] == 128 and kernel["vgprs"] > 0
    assert kernel["mix"]["valu"] > 0 and (kernel["vgpr_spills"] or 0) == 0
    # without the setting the same source does not find its headers, and the answer says where to name them
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    async with Client(build_server(tmp_path)) as client:
        without = await client.call_tool("compile_kernel", {"source": "src/silu.hip"})
    assert without.is_error and "'mylib/activations.h' file not found" in text_of(without)


@pytest.mark.parametrize(
    "entries, expected",
    [
        ('["/usr/include"]', "is absolute"),
        ('["../outside"]', "leads outside the workspace"),
        ('["inc/../../outside"]', "leads outside the workspace"),
        ('["-Iinclude"]', "read it as an option"),
        ('["~/include"]', "is absolute"),
    ],
)
async def test_include_dirs_outside_the_workspace_are_refused_by_the_config(tmp_path, entries, expected):
    (tmp_path / "kernel-mcp.toml").write_text(f'[target]\narch = "gfx950"\nplatform = "offline"\n[compile]\ninclude_dirs = {entries}\n')
    (tmp_path / "k.hip").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    async with Client(build_server(tmp_path)) as client:
        result = await client.call_tool("compile_kernel", {"source": "k.hip"})
    assert result.is_error and "compile.include_dirs" in text_of(result) and expected in text_of(result), text_of(result)


async def test_an_include_dir_that_is_missing_or_links_outside_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "escape").symlink_to(outside)
    (ws / "a_file").write_text("")
    (ws / "k.hip").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    for entry, expected in (("escape", "leads outside the workspace"), ("absent", "no such file"), ("a_file", "is not a folder")):
        (ws / "kernel-mcp.toml").write_text(f'[target]\narch = "gfx950"\nplatform = "offline"\n[compile]\ninclude_dirs = ["{entry}"]\n')
        async with Client(build_server(ws)) as client:
            result = await client.call_tool("compile_kernel", {"source": "k.hip"})
        assert result.is_error and "[compile] include_dirs" in text_of(result) and expected in text_of(result), text_of(result)


def test_resource_remarks_match_the_metadata(kernel_ws):
    """The remarks and the code-object metadata of one compile agree (two independent readings)."""
    from kernel_mcp.compile import amdgpu_asm

    out = kernel_ws / "k.s"
    argv = [
        __import__("sys").executable,
        "-m",
        "ziglang",
        "clang",
        "-x",
        "hip",
        "--offload-arch=gfx950",
        "--cuda-device-only",
        "-nogpulib",
        "-nogpuinc",
        "-O3",
        "-S",
        "-Rpass-analysis=kernel-resource-usage",
        "-o",
        str(out),
        "-isystem",
        str(REPO / "kernel_mcp/platforms/offline/prelude/include"),
        "-include",
        str(REPO / "kernel_mcp/platforms/offline/prelude/kernel_mcp_hip_prelude.h"),
        str(kernel_ws / "src" / "lds.hip"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    remarks = amdgpu_asm.parse_remarks(done.stderr)
    asm = out.read_text()
    meta, info = amdgpu_asm.parse_metadata(asm), amdgpu_asm.parse_kernel_info(asm)
    assert remarks.keys() == meta.keys() == info.keys()
    for symbol, figures in remarks.items():
        assert figures["vgprs"] == info[symbol]["vgprs"] and figures["sgprs"] == info[symbol]["sgprs"] == meta[symbol]["sgprs"]
        assert figures["lds_bytes"] == meta[symbol]["lds_bytes"] == info[symbol]["lds_bytes"]
        assert figures["compiler_occupancy"] == info[symbol]["compiler_occupancy"]
    assert amdgpu_asm.read_kernels(asm, done.stderr)[1] == []  # no disagreement to note


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@needs_nvcc
async def test_cuda_path_registers_and_sass_mix(kernel_ws):
    shutil.copy(fixture("cuda/conv3d_naive.cu"), kernel_ws / "conv3d_naive.cu")
    async with Client(build_server(kernel_ws)) as client:
        result = await client.call_tool("compile_kernel", {"source": "conv3d_naive.cu", "arch": "sm_90"})
        assert result.is_error and "platform" in text_of(result)  # the workspace says offline
    (kernel_ws / "kernel-mcp.toml").write_text('[target]\narch = "sm_90"\nplatform = "auto"\n')
    async with Client(build_server(kernel_ws)) as client:
        data, text = await compile_(client, source="conv3d_naive.cu")
        assert data["backend"] == "nvcc" and not data["device_only"]
        k = data["kernels"][0]
        assert k["name"] == "dwconv3d_naive" and k["vgprs"] == 40  # as ptxas reported it in the recorded fixture
        assert k["occupancy"]["unit"] == "warps per SM sub-partition"
        if shutil.which("cuobjdump") or "sass" in " ".join(data["artifacts"]):
            assert k["mix"]["total"] > 100 and k["mix"]["vmem_load"] > 0
        for name in ("naive.hip", "lds.hip", "fast.hip"):
            example, text = await compile_(client, source=f"src/{name}")
            assert example["ok"] and example["kernels"], text


def test_ptxas_and_res_usage_fixtures_parse():
    from kernel_mcp.compile import nvidia

    ptxas = nvidia.parse_ptxas(fixture("cuda/ptxas.txt").read_text())
    assert ptxas == {"dwconv3d_naive": {"stack": 0, "spill_stores": 0, "spill_loads": 0, "registers": 40, "barriers": 0}}
    res = nvidia.parse_res_usage(fixture("cuda/cuobjdump-res-usage.txt").read_text())
    assert res["dwconv3d_naive"]["REG"] == 40 and res["dwconv3d_naive"]["SHARED"] == 0


async def test_a_backtracking_pattern_is_cut_off_and_other_calls_go_on(kernel_ws):
    """`^(\\S+\\s?)+$X` froze the server with Python's re: it must be answered within 2 s (the regex
    module's search fails it fast, or its time budget cuts it off with a clear error), and a call
    made meanwhile must be answered (the search runs off the event loop)."""
    import time

    import anyio

    async with Client(build_server(kernel_ws)) as client:
        await compile_(client, source="lds32k.hip")
        answered: dict[str, float] = {}
        started = time.monotonic()

        async def hostile() -> None:
            result = await client.call_tool("isa_view", {"pattern": r"^(\S+\s?)+$X"})
            assert not result.is_error or "took longer than" in text_of(result)
            answered["hostile"] = time.monotonic() - started

        async def meanwhile() -> None:
            await anyio.sleep(0.1)
            result = await client.call_tool("hw_spec", {"arch": "gfx950"})
            assert not result.is_error
            answered["meanwhile"] = time.monotonic() - started

        with anyio.fail_after(30):  # a regression fails here instead of hanging the suite
            async with anyio.create_task_group() as group:
                group.start_soon(hostile)
                group.start_soon(meanwhile)
    assert answered["hostile"] < 2.0 + 1.0  # the 1 s search budget, plus the call itself on a busy machine
    assert "meanwhile" in answered


def test_an_agent_pattern_out_of_time_is_invalid_input():
    from kernel_mcp.errors import InvalidInput
    from kernel_mcp.patterns import AgentPattern

    assert AgentPattern("ds_read").matching(["v_add_f32 v1, v2, v3", "ds_read_b128 v[0:3], v4"]) == [1]
    with pytest.raises(InvalidInput, match="took longer than 0 s"):
        AgentPattern("ds_read", budget_s=0.0).matching(["ds_read_b128 v[0:3], v4"])
    with pytest.raises(InvalidInput, match="bad regular expression"):
        AgentPattern("(unclosed")
