"""Ordinary HIP kernels compile offline (issue 32): twelve kernels of the kind a user writes first,
each including the headers such a kernel includes (<cmath>, <cfloat>, <climits>, <cstdint>,
cooperative groups, fp16, bf16, fp8, ...), compiled through compile_kernel with the real offline
clang, and answered with the compiler's figures. A header the offline compile does not have, or a
math function it does not define, fails with a message that says so."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp.platforms import PLATFORMS
from kernel_mcp.server import build_server

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not PLATFORMS["offline"].installed(), reason="the offline clang (ziglang) is not installed"),
]

KERNELS: dict[str, str] = {
    # a row softmax as a first kernel is written: -INFINITY and expf from <cmath>, one wave per row
    "softmax.hip": """
        #include <hip/hip_runtime.h>
        #include <cmath>
        __global__ __launch_bounds__(256) void softmax_rows(const float* x, float* y, int cols) {
          const float* row = x + (size_t)blockIdx.x * cols;
          __shared__ float red[4];
          float m = -INFINITY;
          for (int i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, row[i]);
          for (int o = 32; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor(m, o));
          if (threadIdx.x % warpSize == 0) red[threadIdx.x / warpSize] = m;
          __syncthreads();
          m = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
          __syncthreads();
          float s = 0.0f;
          for (int i = threadIdx.x; i < cols; i += blockDim.x) s += expf(row[i] - m);
          for (int o = 32; o > 0; o >>= 1) s += __shfl_xor(s, o);
          if (threadIdx.x % warpSize == 0) red[threadIdx.x / warpSize] = s;
          __syncthreads();
          float inv = 1.0f / (red[0] + red[1] + red[2] + red[3]);
          for (int i = threadIdx.x; i < cols; i += blockDim.x) y[(size_t)blockIdx.x * cols + i] = __expf(row[i] - m) * inv;
        }
    """,
    # layernorm: float4 loads, warp sums with __shfl_down, rsqrtf
    "layernorm.hip": """
        #include <hip/hip_runtime.h>
        #include <math.h>
        __device__ float wave_sum(float v) {
          for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down(v, o);
          return __shfl(v, 0);
        }
        __global__ __launch_bounds__(64) void layernorm(const float4* x, const float* gamma, const float* beta, float4* y, int n4, float eps) {
          const float4* row = x + (size_t)blockIdx.x * n4;
          float sum = 0.0f, sq = 0.0f;
          for (int i = threadIdx.x; i < n4; i += 64) {
            float4 v = row[i];
            sum += v.x + v.y + v.z + v.w;
            sq += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
          }
          float n = 4.0f * n4;
          float mean = wave_sum(sum) / n;
          float rstd = rsqrtf(wave_sum(sq) / n - mean * mean + eps);
          for (int i = threadIdx.x; i < n4; i += 64) {
            float4 v = (row[i] - mean) * rstd;
            float4 g = make_float4(gamma[4 * i], gamma[4 * i + 1], gamma[4 * i + 2], gamma[4 * i + 3]);
            float4 b = make_float4(beta[4 * i], beta[4 * i + 1], beta[4 * i + 2], beta[4 * i + 3]);
            y[(size_t)blockIdx.x * n4 + i] = v * g + b;
          }
        }
    """,
    # rmsnorm in bf16 with fp32 math, sqrtf and a block reduction in LDS
    "rmsnorm_bf16.hip": """
        #include <hip/hip_runtime.h>
        #include <hip/hip_bf16.h>
        #include <cmath>
        __global__ __launch_bounds__(256) void rmsnorm(const __hip_bfloat16* x, const __hip_bfloat16* w, __hip_bfloat16* y, int cols, float eps) {
          __shared__ float partial[256 / 64];
          const __hip_bfloat16* row = x + (size_t)blockIdx.x * cols;
          float sq = 0.0f;
          for (int i = threadIdx.x; i < cols; i += blockDim.x) {
            float v = __bfloat162float(row[i]);
            sq += v * v;
          }
          for (int o = 32; o > 0; o >>= 1) sq += __shfl_xor(sq, o);
          if (__lane_id() == 0) partial[threadIdx.x / 64] = sq;
          __syncthreads();
          float total = partial[0] + partial[1] + partial[2] + partial[3];
          float scale = 1.0f / sqrtf(total / cols + eps);
          for (int i = threadIdx.x; i < cols; i += blockDim.x)
            y[(size_t)blockIdx.x * cols + i] = __float2bfloat16(__bfloat162float(row[i]) * scale * __bfloat162float(w[i]));
        }
    """,
    # a sum with cooperative groups: the block, tiles of a wavefront, their shuffles and barriers
    "reduce_cg.hip": """
        #include <hip/hip_runtime.h>
        #include <hip/hip_cooperative_groups.h>
        namespace cg = cooperative_groups;
        __global__ __launch_bounds__(512) void block_sum(const float* x, float* out, int n) {
          cg::thread_block block = cg::this_thread_block();
          cg::thread_block_tile<64> wave = cg::tiled_partition<64>(block);
          __shared__ float per_wave[512 / 64];
          float s = 0.0f;
          for (int i = blockIdx.x * block.size() + block.thread_rank(); i < n; i += gridDim.x * block.size()) s += x[i];
          for (int o = wave.size() / 2; o > 0; o /= 2) s += wave.shfl_down(s, o);
          if (wave.thread_rank() == 0) per_wave[wave.meta_group_rank()] = s;
          block.sync();
          if (wave.meta_group_rank() == 0) {
            cg::thread_block_tile<8> eight = cg::tiled_partition<8>(wave);
            float t = wave.thread_rank() < 8 ? per_wave[wave.thread_rank()] : 0.0f;
            for (int o = 4; o > 0; o /= 2) t += eight.shfl_xor(t, o);
            if (block.thread_rank() == 0) atomicAdd(out, t);
          }
        }
    """,
    # fp16 elementwise, two halves at a time
    "axpy_half2.hip": """
        #include <hip/hip_runtime.h>
        #include <hip/hip_fp16.h>
        __global__ void axpy_half2(int n2, __half a, const __half2* x, __half2* y) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n2) y[i] = __hfma2(__half2half2(a), x[i], y[i]);
        }
    """,
    # a 32x32 GEMM tile through shared memory, padded against bank conflicts
    "gemm_tile.hip": """
        #include <hip/hip_runtime.h>
        #define TILE 32
        __global__ __launch_bounds__(TILE * TILE) void sgemm_tile(const float* A, const float* B, float* C, int M, int N, int K) {
          __shared__ float As[TILE][TILE + 1];
          __shared__ float Bs[TILE][TILE + 1];
          int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
          float acc = 0.0f;
          for (int k0 = 0; k0 < K; k0 += TILE) {
            As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.0f;
            Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
            __syncthreads();
        #pragma unroll
            for (int k = 0; k < TILE; ++k) acc = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
            __syncthreads();
          }
          if (row < M && col < N) C[row * N + col] = acc;
        }
    """,
    # a 256-bin histogram: LDS atomics, then global atomics
    "histogram.hip": """
        #include <hip/hip_runtime.h>
        #include <cstdint>
        __global__ __launch_bounds__(256) void histogram256(const uint8_t* data, size_t n, unsigned int* bins) {
          __shared__ unsigned int local[256];
          local[threadIdx.x] = 0;
          __syncthreads();
          for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
            atomicAdd(&local[data[i]], 1u);
          __syncthreads();
          if (local[threadIdx.x]) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
        }
    """,
    # arg-min with FLT_MAX and INT_MAX sentinels from <cfloat> and <climits>, fixed-width indices
    "argmin_limits.hip": """
        #include <hip/hip_runtime.h>
        #include <cfloat>
        #include <climits>
        #include <cstdint>
        #include <cstddef>
        __global__ __launch_bounds__(64) void argmin(const float* x, std::size_t n, float* best, int32_t* where) {
          float v = FLT_MAX;
          int32_t at = INT_MAX;
          for (std::size_t i = threadIdx.x; i < n; i += 64)
            if (x[i] < v) { v = x[i]; at = (int32_t)i; }
          for (int o = 32; o > 0; o >>= 1) {
            float ov = __shfl_xor(v, o);
            int32_t oat = __shfl_xor(at, o);
            if (ov < v || (ov == v && oat < at)) { v = ov; at = oat; }
          }
          if (threadIdx.x == 0) { *best = v; *where = at == INT_MAX ? -1 : at; }
          static_assert(INT32_MAX == INT_MAX && UINT8_MAX == 255 && FLT_MANT_DIG == 24, "limits");
        }
    """,
    # fp8 quantization with a scale, E4M3 (OCP on gfx950, FNUZ on gfx942)
    "quantize_fp8.hip": """
        #include <hip/hip_runtime.h>
        #include <hip/hip_fp8.h>
        #if defined(__gfx950__)
        typedef __hip_fp8_e4m3 fp8;
        #else
        typedef __hip_fp8_e4m3_fnuz fp8;
        #endif
        __global__ void quantize(const float* x, fp8* q, float* amax, float inv_scale, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i >= n) return;
          q[i] = fp8(x[i] * inv_scale);
          atomicMax((int*)amax, __float_as_int(fabsf(x[i])));
        }
    """,
    # GELU both ways: erff with M_SQRT1_2, and the tanh form with std:: math
    "gelu.hip": """
        #include <hip/hip_runtime.h>
        #include <cmath>
        __global__ void gelu(const float* x, float* exact, float* approx, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i >= n) return;
          float v = x[i];
          exact[i] = 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2));
          approx[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
        }
    """,
    # stream compaction: a vote, its popcount, and a prefix scan with __shfl_up
    "compact.hip": """
        #include <hip/hip_runtime.h>
        __global__ __launch_bounds__(64) void compact_positive(const float* x, float* out, unsigned* count, int n) {
          int i = blockIdx.x * 64 + threadIdx.x;
          bool keep = i < n && x[i] > 0.0f;
          unsigned long long votes = __ballot(keep);
          int scan = keep;
          for (int d = 1; d < 64; d <<= 1) {
            int up = __shfl_up(scan, d);
            if ((int)__lane_id() >= d) scan += up;
          }
          unsigned base = 0;
          if (__lane_id() == 0) base = atomicAdd(count, (unsigned)__popcll(votes));
          base = __shfl(base, 0);
          if (keep) out[base + scan - 1] = x[i];
        }
    """,
    # 2x2 max pooling with std::numeric_limits and a device assert
    "maxpool.hip": """
        #include <hip/hip_runtime.h>
        #include <limits>
        #include <cassert>
        __global__ void maxpool2x2(const float* x, float* y, int H, int W) {
          int ox = blockIdx.x * blockDim.x + threadIdx.x, oy = blockIdx.y * blockDim.y + threadIdx.y;
          assert(H % 2 == 0 && W % 2 == 0);
          if (ox >= W / 2 || oy >= H / 2) return;
          float m = -std::numeric_limits<float>::infinity();
          for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx) m = fmaxf(m, x[(2 * oy + dy) * W + 2 * ox + dx]);
          y[oy * (W / 2) + ox] = m;
        }
    """,
}

# What each kernel's machine code must show (a regular expression over its ISA), beside the figures
ISA_FACTS: dict[str, list[str]] = {
    "softmax.hip": [r"^v_exp_f32", r"^ds_bpermute_b32", r"^s_barrier"],
    "layernorm.hip": [r"^v_rsq_f32", r"^global_load_dwordx4"],
    "rmsnorm_bf16.hip": [r"^v_sqrt_f32|^v_rsq_f32", r"^global_load_(ushort|short_d16)"],
    "reduce_cg.hip": [r"^ds_bpermute_b32|^ds_swizzle|^v_mov_b32_dpp", r"^s_barrier", r"^global_atomic_add_f32"],
    "axpy_half2.hip": [r"^v_pk_fma_f16"],
    "gemm_tile.hip": [r"^ds_read", r"^ds_write", r"^s_barrier"],
    "histogram.hip": [r"^ds_add_u32", r"^global_atomic_add"],
    "argmin_limits.hip": [r"^ds_bpermute_b32"],
    "quantize_fp8.hip": [r"^v_cvt_pk_fp8_f32", r"^global_atomic_(s)?max"],
    "gelu.hip": [r"^v_exp_f32"],
    "compact.hip": [r"^v_cmp", r"^s_bcnt1_i32_b64", r"^global_atomic_add"],
    "maxpool.hip": [r"^v_max3?_f32", r"^s_trap"],
}
LDS_BYTES = {"gemm_tile.hip": 2 * 32 * 33 * 4, "histogram.hip": 256 * 4, "softmax.hip": 16, "reduce_cg.hip": 32}


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.fixture
def hip_ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    for name, source in KERNELS.items():
        (root / "src" / name).write_text(textwrap.dedent(source).lstrip())
    return root


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("arch", ["gfx950", "gfx942"])
async def test_an_ordinary_kernel_compiles_offline_with_its_figures(hip_ws, name, arch):
    async with Client(build_server(hip_ws)) as client:
        result = await client.call_tool("compile_kernel", {"source": f"src/{name}", "arch": arch})
        assert not result.is_error, text_of(result)
        data = result.structured_content
        assert data["ok"] and data["backend"] == "offline-clang" and data["device_only"], text_of(result)
        assert not [d for d in data["diagnostics"] if d["severity"] == "error"]
        (kernel,) = data["kernels"]
        assert kernel["vgprs"] > 0 and kernel["sgprs"] > 0 and kernel["mix"]["total"] > 10, kernel
        assert (kernel["vgpr_spills"] or 0) == 0 and (kernel["sgpr_spills"] or 0) == 0 and not kernel["scratch_bytes"], kernel
        assert kernel["occupancy"]["waves"] >= 1 and kernel["compiler_occupancy"] >= 1, kernel
        assert kernel["lds_bytes"] == LDS_BYTES.get(name, kernel["lds_bytes"]), kernel
        if name in ("reduce_cg.hip", "histogram.hip", "compact.hip", "quantize_fp8.hip"):
            assert kernel["mix"]["vmem_atomic"] + kernel["mix"]["lds_other"] > 0, kernel["mix"]
        for fact in ISA_FACTS[name]:
            seen = await client.call_tool("isa_view", {"pattern": fact, "context": 0})
            assert not seen.is_error and seen.structured_content["matches"] >= 1, (name, arch, fact, text_of(seen))


async def test_the_users_first_softmax_compiles_unchanged(tmp_path):
    """The kernel that started issue 32: INFINITY without any include but the runtime's, and a
    second file with <cmath> (which failed with "'stddef.h' file not found")."""
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    body = (
        "__global__ void softmax(const float* x, float* y, int n) {\n"
        "  float m = -INFINITY;\n  for (int i = 0; i < n; ++i) m = fmaxf(m, x[i]);\n"
        "  float s = 0.0f;\n  for (int i = 0; i < n; ++i) s += expf(x[i] - m);\n"
        "  for (int i = 0; i < n; ++i) y[i] = expf(x[i] - m) / s;\n}\n"
    )
    (tmp_path / "plain.hip").write_text("#include <hip/hip_runtime.h>\n" + body)
    (tmp_path / "with_cmath.hip").write_text("#include <hip/hip_runtime.h>\n#include <cmath>\n" + body)
    async with Client(build_server(tmp_path)) as client:
        for source in ("plain.hip", "with_cmath.hip"):
            result = await client.call_tool("compile_kernel", {"source": source})
            assert not result.is_error and result.structured_content["ok"], text_of(result)
            assert result.structured_content["kernels"][0]["name"] == "softmax"


async def test_std_min_max_clamp_swap_from_algorithm_and_utility(tmp_path):
    # what a tile loop's bounds and a register swap are written with
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    (tmp_path / "bounds.hip").write_text(
        "#include <hip/hip_runtime.h>\n#include <algorithm>\n#include <utility>\n"
        "__global__ void bounds(const float* x, float* y, int n, int tile) {\n"
        "  int lo = blockIdx.x * tile, hi = std::min(lo + tile, n);\n"
        "  float a = x[lo], b = x[std::max(hi - 1, lo)];\n"
        "  if (a > b) std::swap(a, b);\n"
        "  for (int i = lo; i < hi; ++i) y[i] = std::clamp(x[i], a, b);\n}\n"
    )
    async with Client(build_server(tmp_path)) as client:
        result = await client.call_tool("compile_kernel", {"source": "bounds.hip"})
    assert not result.is_error and result.structured_content["ok"], text_of(result)
    assert result.structured_content["kernels"][0]["name"] == "bounds"


async def test_a_header_the_offline_compile_lacks_is_named_with_what_to_do(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    (tmp_path / "host.hip").write_text("#include <hip/hip_runtime.h>\n#include <vector>\n__global__ void k(float* x) { x[0] = 1; }\n")
    (tmp_path / "lgamma.hip").write_text("#include <hip/hip_runtime.h>\n#include <cmath>\n__global__ void k(float* x) { x[0] = lgammaf(x[1]); }\n")
    async with Client(build_server(tmp_path)) as client:
        vector = await client.call_tool("compile_kernel", {"source": "host.hip"})
        lgamma = await client.call_tool("compile_kernel", {"source": "lgamma.hip"})
    assert vector.is_error and not vector.structured_content["ok"]
    text = text_of(vector)
    assert "<vector> not provided by the offline compile" in text and "[compile] include_dirs" in text and "<hip/hip_fp8.h>" in text
    assert "host.hip:2:" in text  # clang's own diagnostic, where the include is
    assert lgamma.is_error and "'lgammaf' is unavailable: lgammaf is not provided by kernel-mcp's offline math" in text_of(lgamma)


async def test_a_workspace_header_not_named_in_include_dirs_says_where_to_name_it(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "tiles.h").write_text("#pragma once\n#define TILE 64\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.hip").write_text("#include <hip/hip_runtime.h>\n#include <tiles.h>\n__global__ void k(float* x) { x[TILE] = 1; }\n")
    async with Client(build_server(tmp_path)) as client:
        missing = await client.call_tool("compile_kernel", {"source": "src/k.hip"})
        (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n[compile]\ninclude_dirs = ["include"]\n')
    async with Client(build_server(tmp_path)) as client:
        found = await client.call_tool("compile_kernel", {"source": "src/k.hip"})
    assert missing.is_error and "<tiles.h> not provided by the offline compile" in text_of(missing)
    assert "the workspace's own header folders only when kernel-mcp.toml's [compile] include_dirs names them" in text_of(missing)
    assert not found.is_error and found.structured_content["kernels"][0]["name"] == "k", text_of(found)
