"""compile_import: compile_kernel's per-kernel facts from compiler output made elsewhere, through the
MCP client. The offline clang makes real `--save-temps` assembly and resource remarks (both forms
clang prints them) and the import must give what compile_kernel gives for the same source;
hipcc's output (HipKittens) and Triton's cache (`.amdgcn`, metadata `.json`) are recorded real
outputs (tests/data/SOURCES.md)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp import toolchain
from kernel_mcp.platforms.offline.clang import include_flags
from kernel_mcp.server import build_server

from conftest import call, text_of

pytestmark = pytest.mark.anyio
DATA = Path(__file__).parent / "data"
TRITON = "triton-gemm_afp4_wfp4-gfx950"
HK_S = "hk-savetemps-256_128_64_16_persist-gfx942.s"
HK_LOG = "hk-remarks-gfx942-256_128_64_16_persist-README.md"

KERNELS = """\
#include <hip/hip_runtime.h>
__global__ void __launch_bounds__(256) reverse(float* out, const float* in, float a, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  if (i < n) out[i] = a * tile[255 - threadIdx.x];
}
__global__ void __launch_bounds__(128) dot(double* out, const double* x, const double* y, int n) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i] * y[i] + __builtin_sqrt(x[i]);
  out[threadIdx.x] = acc;
}
"""
# what compile_kernel and compile_import both read from a compile, field by field
COMPARED = (
    "name",
    "symbol",
    "vgprs",
    "agprs",
    "sgprs",
    "scratch_bytes",
    "vgpr_spills",
    "sgpr_spills",
    "lds_bytes",
    "max_block_size",
    "compiler_occupancy",
    "code_size_bytes",
    "mix",
    "occupancy",
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    (root / "src" / "k.hip").write_text(KERNELS)
    return root


def _clang(root: Path, *extra: str) -> str:
    """Compile src/k.hip for gfx950 with the offline clang as a user would by hand (same level and
    headers as compile_kernel); the resource remarks it prints on stderr."""
    argv = [
        *toolchain.offline_clang_argv(),
        "-x",
        "hip",
        "--offload-arch=gfx950",
        "--cuda-device-only",
        "-nogpulib",
        "-O3",
        "-S",
        "-Rpass-analysis=kernel-resource-usage",
        *include_flags(),
        *extra,
        "k.hip",
    ]
    done = subprocess.run(argv, cwd=root / "src", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


def _facts(kernels: list[dict]) -> dict[str, dict]:
    return {k["symbol"]: {f: k[f] for f in COMPARED} for k in kernels}


async def test_save_temps_and_remarks_give_what_compile_kernel_gives(ws):
    (ws / "build").mkdir()
    (ws / "build" / "remarks-save-temps.log").write_text(_clang(ws, "-save-temps"))  # `remark: k.hip:2:0: ...`
    (ws / "build" / "remarks.log").write_text(_clang(ws, "-o", "plain.s"))  # `k.hip:2:1: remark: ...`
    asm = "src/k-hip-amdgcn-amd-amdhsa-gfx950.s"
    assert (ws / asm).is_file()
    assert "remark: k.hip:" in (ws / "build" / "remarks-save-temps.log").read_text()
    assert "k.hip:2:1: remark:" in (ws / "build" / "remarks.log").read_text()
    async with Client(build_server(ws)) as client:
        compiled = await call(client, "compile_kernel", source="src/k.hip")
        log_first = await call(client, "compile_import", paths=["build/remarks-save-temps.log", asm])
        asm_first = await call(client, "compile_import", paths=[asm, "build/remarks-save-temps.log"])
        other_form = await call(client, "compile_import", paths=["build/remarks.log"], arch="gfx950")
        alone = await client.call_tool("compile_import", {"paths": [asm]})
    expected = _facts(compiled["kernels"])
    assert len(expected) == 2 and all(f["occupancy"] for f in expected.values())
    assert _facts(log_first["kernels"]) == expected == _facts(asm_first["kernels"])
    assert log_first["arch"] == "gfx950" and log_first["arch_from"] == asm  # the remarks name no target; the .s does
    assert log_first["files"] == ["build/remarks-save-temps.log (resource remarks)", f"{asm} (assembly)"]
    # the remarks alone: every figure they carry, the same (no instruction mix: that is in the .s)
    from_remarks = {k["symbol"]: k for k in other_form["kernels"]}
    assert other_form["arch_from"] == "the arch argument"
    for symbol, facts in expected.items():
        for field in ("vgprs", "agprs", "sgprs", "scratch_bytes", "vgpr_spills", "sgpr_spills", "lds_bytes", "compiler_occupancy"):
            assert from_remarks[symbol][field] == facts[field], (symbol, field)
        assert from_remarks[symbol]["occupancy"]["waves"] == facts["occupancy"]["waves"]
    # the static LDS the source declares is stated by the compile: shown as it is, never "sized at launch"
    assert "LDS 1,024 B" in text_of(alone) and "sized at launch" not in text_of(alone)


async def test_triton_amdgcn_lds_is_sized_at_launch_or_read_from_its_metadata(ws):
    for suffix in (".amdgcn", ".json"):
        shutil.copy(DATA / (TRITON + suffix), ws / (TRITON + suffix))
    async with Client(build_server(ws)) as client:
        alone = await client.call_tool("compile_import", {"paths": [TRITON + ".amdgcn"]})
        both = await call(client, "compile_import", paths=[TRITON + ".json", TRITON + ".amdgcn"])
    assert not alone.is_error, text_of(alone)
    kernel = alone.structured_content["kernels"][0]
    # the file's own figures (; Kernel info:), and LDS never read as the 0 B Triton writes there
    assert (kernel["name"], kernel["vgprs"], kernel["agprs"], kernel["sgprs"], kernel["compiler_occupancy"]) == ("_gemm_afp4_wfp4_kernel", 67, 8, 41, 6)
    assert kernel["mix"]["lds_read"] > 0 and kernel["mix"]["lds_write"] > 0
    assert kernel["lds_bytes"] is None and kernel["dynamic_lds"] == "unknown"
    assert "LDS sized at launch, not in this file" in text_of(alone) and "LDS 0 B" not in text_of(alone)
    assert alone.structured_content["arch_from"] == TRITON + ".amdgcn"
    # with Triton's metadata its 'shared' counts: gfx950's 160 KiB of LDS per CU (the hardware table) holds one
    # workgroup of 96 KiB, 4 waves of 64 lanes over 4 SIMDs
    kernel = both["kernels"][0]
    assert kernel["dynamic_lds"] == "given" and kernel["dynamic_lds_bytes"] == 98304 and kernel["max_block_size"] == 256
    assert kernel["occupancy"]["limiter"] == ["LDS"] and kernel["occupancy"]["waves"] == 1 and kernel["compiler_occupancy"] == 6
    assert any("98,304 B" in note and TRITON + ".json" in note for note in both["notes"])


async def test_hipcc_save_temps_with_its_remarks_in_either_order(ws):
    for name in (HK_S, HK_LOG):
        shutil.copy(DATA / name, ws / name)
    async with Client(build_server(ws)) as client:
        one = await call(client, "compile_import", paths=[HK_LOG, HK_S])
        other = await call(client, "compile_import", paths=[HK_S, HK_LOG])
        log_only = await call(client, "compile_import", paths=[HK_LOG])
    assert one["kernels"] == other["kernels"] and one["arch"] == "gfx942"
    kernel = one["kernels"][0]
    assert (kernel["name"], kernel["vgprs"], kernel["sgprs"], kernel["scratch_bytes"], kernel["vgpr_spills"], kernel["compiler_occupancy"]) == (
        "micro_tk",
        256,
        48,
        44,
        10,
        2,
    )
    assert kernel["occupancy"]["waves"] == 2 and kernel["mix"]["mfma"] > 0
    # the log names its target in the hipcc command line it holds
    assert log_only["arch"] == "gfx942" and log_only["arch_from"] == HK_LOG and log_only["kernels"][0]["vgprs"] == 256


@pytest.mark.parametrize(
    "paths, expected",
    [
        (["/etc/hosts"], "absolute"),
        (["../outside.s"], "outside the workspace"),
        (["missing.s"], "no such file"),
        (["notes.txt"], "holds no [-Rpass-analysis=kernel-resource-usage] remarks"),
        (["other.json"], "not Triton kernel metadata"),
        ([HK_S, TRITON + ".amdgcn"], "different targets"),
    ],
)
async def test_bad_files_are_refused_with_the_reason(ws, paths, expected):
    (ws / "notes.txt").write_text("nothing from a compiler here\n")
    (ws / "other.json").write_text('{"name": "x"}')
    shutil.copy(DATA / HK_S, ws / HK_S)
    shutil.copy(DATA / (TRITON + ".amdgcn"), ws / (TRITON + ".amdgcn"))
    async with Client(build_server(ws)) as client:
        answer = await client.call_tool("compile_import", {"paths": paths})
    assert answer.is_error and expected in text_of(answer), text_of(answer)
