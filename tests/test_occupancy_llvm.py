"""Occupancy as LLVM's AMDGPU backend computes it, on a table of cases, each checked three ways:
LLVM's arithmetic (the expected figure), the calculator, and, for every case marked as a probe,
the compiler's own `; Occupancy:` for a kernel compiled here (offline clang) with exactly those
resources: registers pinned by inline-asm clobbers, LDS by a __shared__ array, the workgroup by
amdgpu_flat_work_group_size(N, N) (a fixed size, as the calculator assumes)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from kernel_mcp.compile import amdgpu_asm
from kernel_mcp.errors import InvalidInput
from kernel_mcp.hardware import load_spec, occupancy
from kernel_mcp.hardware import llvm_amdgpu as llvm
from kernel_mcp.platforms import VENDORS

from conftest import REPO

PRELUDE = REPO / "kernel_mcp" / "platforms" / "offline" / "prelude"
# Extra SGPRs the compiler adds to a clobbered sN (IsaInfo::getNumExtraSGPRs, measured with the
# offline clang): VCC, XNACK and flat scratch. The table states the total the compiler reports.
EXTRA_SGPRS = {"gfx950": 6, "gfx942": 6, "gfx90a": 4}


@dataclass(frozen=True)
class Case:
    name: str
    arch: str
    llvm: int  # waves/SIMD by LLVM's arithmetic (GCNSubtarget::computeOccupancy)
    vgprs: int = 4
    agprs: int = 0
    sgprs: int = 0  # 0: whatever the probe needs (never a limit below 80)
    lds: int = 0
    block: int = 256
    why: str = ""
    probe: bool = True


CASES = [
    # gfx950: 512-register unified file, granule 8, 8 waves/SIMD, 160 KiB LDS, 16 barriers per CU
    Case("v22", "gfx950", 8, vgprs=22, why="published: 22 VGPRs -> 8"),
    Case("v72", "gfx950", 7, vgprs=72, why="512 // 72"),
    Case("v73", "gfx950", 6, vgprs=73, why="73 -> 80; 512 // 80"),
    Case("v86", "gfx950", 5, vgprs=86, why="published: 86 -> 88; 512 // 88"),
    Case("v128", "gfx950", 4, vgprs=128),
    Case("v155", "gfx950", 3, vgprs=155, why="published: 155 -> 160"),
    Case("v168", "gfx950", 3, vgprs=168, why="granule 8 (16 would give 2)"),
    Case("v169", "gfx950", 2, vgprs=169),
    Case("v256", "gfx950", 2, vgprs=256),
    Case("v9a32", "gfx950", 8, vgprs=9, agprs=32, why="align4(9) + 32 = 44 -> 48"),
    Case("v100a100", "gfx950", 2, vgprs=100, agprs=100, why="100 + 100 = 200"),
    Case("v128a128", "gfx950", 2, vgprs=128, agprs=128),
    Case("v256a256", "gfx950", 1, vgprs=256, agprs=256, why="the whole file"),
    Case("s97", "gfx950", 8, sgprs=97, why="LLVM: <= 100 SGPRs -> 8; 800 // 112 rounded gave 7"),
    Case("s100", "gfx950", 8, sgprs=100),
    Case("s101", "gfx950", 7, sgprs=101),
    Case("s87", "gfx950", 8, sgprs=87, why="<= 88 -> 9, capped at 8"),
    Case("lds50000_wg64", "gfx950", 1, lds=50000, block=64, why="3 single-wave groups = 3 waves over 4 SIMDs: LLVM 1 (was 0)"),
    Case("lds32k_wg256", "gfx950", 5, lds=32768, why="5 groups x 4 waves = 20 over 4 SIMDs"),
    Case("lds160k_wg256", "gfx950", 1, lds=163840, why="1 group x 4 waves"),
    Case("lds64k_wg1024", "gfx950", 8, lds=65536, block=1024, why="2 groups x 16 waves = 32"),
    Case("wg576", "gfx950", 7, block=576, why="9 waves: 32 // 9 = 3 groups = 27 waves -> 6-7 (was 8)"),
    Case("wg192", "gfx950", 8, block=192, why="3 waves: 10 groups = 30 waves -> 7-8"),
    Case("wg704", "gfx950", 6, block=704, why="11 waves: 2 groups = 22 waves -> 5-6"),
    Case("wg64", "gfx950", 8, block=64, why="single-wave groups need no barrier: 32 of them"),
    Case("v128_wg1024", "gfx950", 4, vgprs=128, block=1024, why="16 waves need 4 per SIMD; 128 VGPRs allow 4"),
    Case("v96_wg1024", "gfx950", 5, vgprs=96, block=1024, why="LLVM's per-SIMD minimum; whole 16-wave groups fit once: 4"),
    # gfx942: 64 KiB LDS
    Case("lds40000_wg128", "gfx942", 1, lds=40000, block=128, why="1 group x 2 waves over 4 SIMDs: LLVM 1 (was 0)"),
    Case("lds32k_wg256", "gfx942", 2, lds=32768),
    Case("lds16k_wg256", "gfx942", 4, lds=16384),
    Case("lds64k_wg64", "gfx942", 1, lds=65536, block=64),
    Case("s101", "gfx942", 7, sgprs=101),
    Case("v72", "gfx942", 7, vgprs=72),
    Case("wg320", "gfx942", 8, block=320, why="5 waves: 6 groups = 30 waves -> 7-8"),
    # gfx90a
    Case("v100a100", "gfx90a", 2, vgprs=100, agprs=100),
    Case("lds32k_wg256", "gfx90a", 2, lds=32768),
    Case("s99", "gfx90a", 8, sgprs=99),
    Case("wg960", "gfx90a", 8, block=960, why="15 waves: 2 groups = 30 waves -> 7-8"),
    # read from databases and remarks rather than compiled
    Case("s112", "gfx950", 7, sgprs=112, why="a count rounded to the 16-granule, as profilers report it", probe=False),
    Case("v300", "gfx950", 1, vgprs=300, why="above 256: read as the unified count", probe=False),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.arch}-{c.name}" for c in CASES])
def test_the_calculator_gives_llvms_occupancy(case: Case):
    occ = occupancy(load_spec(case.arch), vgprs=case.vgprs, agprs=case.agprs, sgprs=case.sgprs, lds_bytes=case.lds, block_size=case.block, vendors=VENDORS)
    assert occ.waves == case.llvm, occ.explanation
    assert occ.waves_min is not None and occ.waves_min <= occ.waves
    assert occ.explanation and occ.sources  # every limit with its figures, every figure with its source


def test_the_three_cases_that_were_wrong_and_their_explanations():
    g950, g942 = load_spec("gfx950"), load_spec("gfx942")
    wg576 = occupancy(g950, vgprs=8, block_size=576, vendors=VENDORS)
    assert (wg576.waves, wg576.waves_min, wg576.limiter) == (7, 6, ["workgroup slots"])
    assert any("3 workgroups of 9 waves" in line for line in wg576.explanation)
    lds = occupancy(g950, vgprs=8, lds_bytes=50000, block_size=64, vendors=VENDORS)
    assert (lds.waves, lds.limiter) == (1, ["LDS"]) and any("SIMDs empty" in line for line in lds.explanation)
    assert occupancy(g942, vgprs=8, lds_bytes=40000, block_size=128, vendors=VENDORS).waves == 1
    assert [occupancy(g950, vgprs=8, sgprs=s, vendors=VENDORS).waves for s in range(97, 103)] == [8, 8, 8, 8, 7, 7]
    whole = occupancy(g950, vgprs=96, block_size=1024, vendors=VENDORS)  # LLVM's 5, and what whole workgroups allow
    assert whole.waves == 5 and any("1 workgroup(s) = 16 waves, at most 4 on a SIMD" in line for line in whole.explanation)


@pytest.mark.parametrize("sgprs", range(1, 113))
def test_sgpr_rule_is_llvms_step_table(sgprs):
    """IsaInfo::getOccupancyWithNumSGPRs (GFX8/9): <=80 -> 10, <=88 -> 9, <=100 -> 8, else 7."""
    table = 10 if sgprs <= 80 else 9 if sgprs <= 88 else 8 if sgprs <= 100 else 7
    assert llvm.waves_with_sgprs(sgprs, 800, 10) == table


@pytest.mark.parametrize(
    "arch, kwargs, words",
    [
        ("gfx950", dict(vgprs=0, agprs=384), "at most 256 (a0-a255)"),  # an AGPR count read from a real database
        ("gfx942", dict(vgprs=8, agprs=257), "at most 256"),
        ("gfx950", dict(vgprs=600), "at most 512"),
        ("gfx950", dict(vgprs=300, agprs=8), "at most 256 arch VGPRs"),
        ("gfx950", dict(vgprs=8, lds_bytes=163844), "exceed the 163840"),
        ("gfx942", dict(vgprs=8, lds_bytes=65540), "exceed the 65536"),
        ("gfx950", dict(vgprs=8, block_size=1025), "outside 1..1024"),
        ("gfx950", dict(vgprs=256, block_size=1024), "can never be resident"),
        ("gfx950", dict(vgprs=-1), "must not be negative"),
    ],
)
def test_impossible_inputs_are_refused(arch, kwargs, words):
    with pytest.raises(InvalidInput) as caught:
        occupancy(load_spec(arch), **kwargs, vendors=VENDORS)
    assert words in caught.value.message


def test_readable_but_suspicious_inputs_carry_a_note():
    spec = load_spec("gfx950")
    assert "unified count" in occupancy(spec, vgprs=300, vendors=VENDORS).notes[0]
    assert "allocation granule" in occupancy(spec, vgprs=8, sgprs=112, vendors=VENDORS).notes[0]
    assert occupancy(spec, vgprs=8, sgprs=100, vendors=VENDORS).notes == []


def test_workgroup_sizes_range_as_the_compiler_reports_for_a_launch_bound():
    """__launch_bounds__(576) is the range 1..576: LLVM reports the best size in it (8), a fixed
    576-thread workgroup gets 6-7."""
    kw = dict(wave_size=64, max_waves=8, simds=4, max_barriers=16)
    assert llvm.workgroup_occupancy(163840, 0, 1, 576, **kw)[1] == 8
    assert llvm.workgroup_occupancy(163840, 0, 576, 576, **kw) == (6, 7)
    assert llvm.workgroup_occupancy(163840, 32768, 1, 256, **kw) == (1, 5)
    assert llvm.workgroup_occupancy(65536, 70000, 256, 256, **kw) == (1, 1)  # LDS above the CU's counts as 1


def _probe_source(cases: list[Case], arch: str) -> str:
    lines = ["#include <hip/hip_runtime.h>", "#define WG(n) __attribute__((amdgpu_flat_work_group_size(n, n)))"]
    for c in cases:
        clobbers = [f'"v{c.vgprs - 1}"'] + ([f'"a{c.agprs - 1}"'] if c.agprs else [])
        if c.sgprs:
            clobbers.append(f'"s{c.sgprs - 1 - EXTRA_SGPRS[arch]}"')
        body = f'asm volatile("" ::: {", ".join(clobbers)}); '
        if c.lds:
            n = c.lds // 4
            body += f"__shared__ float buf[{n}]; buf[threadIdx.x % {n}] = y[threadIdx.x]; __syncthreads(); y[threadIdx.x] = buf[({n} - 1 - threadIdx.x) % {n}];"
        else:
            body += "y[threadIdx.x] = 0;"
        lines.append(f'extern "C" __global__ WG({c.block}) void {c.name}(float* y) {{ {body} }}')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[tuple[str, str], dict]:
    """(arch, kernel) -> the compiler's figures, from one real compile per arch."""
    out: dict[tuple[str, str], dict] = {}
    folder = tmp_path_factory.mktemp("probes")
    for arch in sorted({c.arch for c in CASES if c.probe}):
        source = folder / f"probes-{arch}.hip"
        source.write_text(_probe_source([c for c in CASES if c.probe and c.arch == arch], arch))
        asm = folder / f"probes-{arch}.s"
        argv = [
            sys.executable,
            "-m",
            "ziglang",
            "clang",
            "-x",
            "hip",
            f"--offload-arch={arch}",
            "--cuda-device-only",
            "-nogpulib",
            "-nogpuinc",
            "-O3",
            "-S",
            "-Rpass-analysis=kernel-resource-usage",
            "-o",
            str(asm),
            "-isystem",
            str(PRELUDE / "include"),
            "-include",
            str(PRELUDE / "kernel_mcp_hip_prelude.h"),
            str(source),
        ]
        done = subprocess.run(argv, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        kernels, notes = amdgpu_asm.read_kernels(asm.read_text(), done.stderr)
        assert notes == []  # the remarks and the .s agree on every figure
        out.update({(arch, k.symbol): k.model_dump() for k in kernels})
    return out


PROBES = [c for c in CASES if c.probe]


@pytest.mark.parametrize("case", PROBES, ids=[f"{c.arch}-{c.name}" for c in PROBES])
def test_the_compiler_reports_the_same_occupancy(case: Case, compiled):
    k = compiled[(case.arch, case.name)]
    assert k["vgprs"] == case.vgprs and (k["agprs"] or 0) == case.agprs and k["lds_bytes"] == case.lds
    assert not case.sgprs or k["sgprs"] == case.sgprs
    assert k["max_block_size"] == case.block
    assert k["compiler_occupancy"] == case.llvm
    ours = occupancy(
        load_spec(case.arch), vgprs=k["vgprs"], agprs=k["agprs"] or 0, sgprs=k["sgprs"], lds_bytes=k["lds_bytes"], block_size=case.block, vendors=VENDORS
    )
    assert ours.waves == k["compiler_occupancy"], ours.explanation


@pytest.mark.anyio
async def test_compile_kernel_explains_a_launch_bound_the_compiler_reads_as_a_range(tmp_path):
    """__launch_bounds__(576): the compiler reports 8 (a 512-thread workgroup reaches it), the
    calculator 7 for the kernel's 576-thread workgroups, and the answer says why they differ."""
    from mcp import Client

    from kernel_mcp.server import build_server

    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    (tmp_path / "lb.hip").write_text("#include <hip/hip_runtime.h>\n__global__ __launch_bounds__(576) void lb576(float* y) { y[threadIdx.x] = 0; }\n")
    async with Client(build_server(tmp_path)) as client:
        result = await client.call_tool("compile_kernel", {"source": "lb.hip"})
    data = result.structured_content
    k = data["kernels"][0]
    assert (k["compiler_occupancy"], k["occupancy"]["waves"], k["occupancy"]["waves_min"]) == (8, 7, 6)
    assert any("best workgroup size up to the kernel's limit of 576 threads (8 with 512-thread blocks)" in n for n in data["notes"])


def test_resource_notes_flag_a_database_agpr_count_without_raising():
    from kernel_mcp.hardware import resource_notes

    assert resource_notes("gfx950", vgprs=128, agprs=384, vendors=VENDORS)[0].startswith("not a possible kernel on gfx950: 384 AGPRs")
    assert "allocation granule" in resource_notes("gfx942", vgprs=64, sgprs=112, vendors=VENDORS)[0]
    assert resource_notes("gfx950", vgprs=128, agprs=128, sgprs=48, lds_bytes=32768, block_size=256, vendors=VENDORS) == []
