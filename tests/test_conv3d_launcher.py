"""The conv3d_depthwise example's launcher (src/fast_plan.h, src/fast.hip) against the devices it
plans for, offline.

The planning code is plain C++: a small driver built with the offline clang (the ziglang wheel)
calls the real fast_choose / fast_regs / fast_waves_per_simd with a device's limits, taken from the
project's sourced hardware tables (what cudaGetDeviceProperties / hipGetDeviceProperties report).

- H100: the plan reproduces the choices the launcher made when the H100's limits were written into
  it (recorded in tests/data/conv3d/fast-choices-h100.txt), except where the device's real 233472 B
  of shared memory per SM (the old code counted 232448 B, the per-block opt-in limit) fits one more
  block of the new choice.
- gfx950: fast.hip compiled through compile_kernel with the real offline clang; every kernel
  instance the launcher can pick compiles without spills, within the registers the plan counts on,
  at the occupancy it plans, and each benchmark shape's plan fits the compiled kernel (registers
  and LDS, by kernel-mcp's occupancy calculator).
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp.hardware import occupancy, spec_for
from kernel_mcp.hardware.llvm_amdgpu import unified_vgprs
from kernel_mcp.platforms import VENDORS
from kernel_mcp.server import build_server

from conftest import REPO, data

pytestmark = pytest.mark.anyio
EXAMPLE = REPO / "kernels" / "conv3d_depthwise"

# Reads the limits from argv, then answers stdin lines: "choose N C D H W" and "instances".
DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fast_plan.h"

int main(int argc, char** argv) {
  if (argc != 11) return 2;
  FastLimits lim;
  lim.sms = atoi(argv[1]);
  lim.warp = atoi(argv[2]);
  lim.regs_per_sm = atoll(argv[3]);
  lim.threads_per_sm = atoi(argv[4]);
  lim.smem_per_sm = atoll(argv[5]);
  lim.smem_reserved = atoll(argv[6]);
  lim.smem_per_block = atoll(argv[7]);
  lim.schedulers = atoi(argv[8]);
  lim.lanes = atoi(argv[9]);
  lim.per_simd_bounds = atoi(argv[10]);
  if (!fast_limits_ok(lim)) return 3;
  char what[32];
  while (scanf("%31s", what) == 1) {
    if (strcmp(what, "instances") == 0) {
      const FastInstance* list = 0;
      const int n = fast_instances(lim, &list);
      for (int i = 0; i < n; ++i)
        printf("%d %d %d %d\n", list[i].rh, list[i].minb, fast_regs(lim, list[i].minb),
               fast_waves_per_simd(lim, list[i].minb));
      printf("end\n");
      continue;
    }
    int N, C, D, H, W;
    if (scanf("%d %d %d %d %d", &N, &C, &D, &H, &W) != 5) return 4;
    FastChoice ch;
    if (!fast_shape_ok(N, C, D, H, W) || !fast_choose(lim, N, C, D, H, W, &ch)) {
      printf("%d %d %d %d %d -1\n", N, C, D, H, W);
      continue;
    }
    printf("%d %d %d %d %d %d %d %d %d %d %d %d %d %d\n", N, C, D, H, W, fast_encode(lim, ch),
           ch.g.segs, ch.g.hch, ch.g.td, ch.g.groups, ch.threads, ch.smem, ch.minb, ch.resident);
  }
  return 0;
}
"""


def device_limits(arch: str, product: str, *, smem_per_sm: int | None = None) -> list[int]:
    """FastLimits as the launcher reads them from the runtime, from the sourced hardware tables.
    HIP reports regsPerMultiprocessor = VGPRs per SIMD lane x wave size x SIMDs per CU, nothing
    reserved per block, and the CU's LDS as the per-block limit. The FP32 lanes per scheduler
    (no property reports them) are portable.h's: 32 per H100 sub-partition, 16 per CDNA SIMD."""
    spec = spec_for(arch, product)
    v = spec.value
    warp, schedulers = int(v("wave_size")), int(v("simds_per_cu"))
    if spec.vendor == "amd":
        regs = int(v("vgprs_per_simd_lane")) * warp * schedulers
        threads = int(v("max_waves_per_cu")) * warp
        smem, reserved, per_block, lanes, per_simd = int(v("lds_per_cu_bytes")), 0, int(v("max_lds_per_workgroup_bytes")), 16, 1
    else:
        regs = int(v("registers_per_sm"))
        threads = int(v("max_warps_per_sm")) * warp
        smem, reserved = int(v("shared_memory_per_sm_bytes")), int(v("shared_memory_reserved_per_block_bytes"))
        per_block, lanes, per_simd = int(v("max_shared_memory_per_block_bytes")), 32, 0
    if smem_per_sm is not None:
        smem = smem_per_sm
    return [int(v("compute_units")), warp, regs, threads, smem, reserved, per_block, schedulers, lanes, per_simd]


def portable_figure(name: str, platform: str) -> int:
    """A per-platform figure portable.h gives the launcher (the HIP branch comes first)."""
    text = (EXAMPLE / "src" / "portable.h").read_text()
    hip, cuda = text.split("#elif defined(__CUDACC__)", 1)
    found = re.search(rf"#define {name} (\d+)", hip if platform == "hip" else cuda)
    assert found, name
    return int(found.group(1))


@pytest.fixture(scope="module")
def planner(tmp_path_factory) -> Path:
    """The planning code of fast.hip built as a host program by the offline clang (C headers only,
    no C++ library to build; contraction off like the x86-64 builds of nvcc's and hipcc's host
    pass, so that equal costs stay equal and ties resolve the same way)."""
    folder = tmp_path_factory.mktemp("planner")
    (folder / "driver.cpp").write_text(DRIVER)
    exe = folder / "plan"
    argv = [
        sys.executable,
        "-m",
        "ziglang",
        "cc",
        "-x",
        "c++",
        "-std=c++17",
        "-O2",
        "-ffp-contract=off",
        "-fno-exceptions",
        "-fno-rtti",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-I",
        str(EXAMPLE / "src"),
        "-o",
        str(exe),
        str(folder / "driver.cpp"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return exe


def run_plan(exe: Path, limits: list[int], requests: list[str]) -> list[str]:
    done = subprocess.run([str(exe), *map(str, limits)], input="\n".join(requests) + "\n", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def recorded_h100() -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    rows = []
    for line in data("conv3d/fast-choices-h100.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            nums = tuple(int(x) for x in line.split())
            rows.append((nums[:5], nums[5:]))
    return rows


def choices(exe: Path, limits: list[int], shapes) -> list[tuple[int, ...]]:
    lines = run_plan(exe, limits, [f"choose {' '.join(map(str, s))}" for s in shapes])
    assert len(lines) == len(shapes)
    return [tuple(int(x) for x in line.split()) for line in lines]


def test_portable_h_figures_are_the_ones_the_test_plans_with():
    assert portable_figure("KMCP_LANES_PER_SCHEDULER", "hip") == 16 and portable_figure("KMCP_LANES_PER_SCHEDULER", "cuda") == 32
    assert portable_figure("KMCP_SCHEDULERS_PER_SM", "hip") == 4 == portable_figure("KMCP_SCHEDULERS_PER_SM", "cuda")
    assert portable_figure("KMCP_PER_SIMD_BOUNDS", "hip") == 1 and portable_figure("KMCP_PER_SIMD_BOUNDS", "cuda") == 0


def test_h100_plans_are_the_recorded_ones(planner):
    """With the one figure the old code had differently (232448 B of shared memory per SM), every
    recorded choice comes back exactly: the limits replaced constants and changed nothing else."""
    recorded = recorded_h100()
    assert len(recorded) > 600
    old_figure = device_limits("sm_90", "H100 SXM", smem_per_sm=232448)
    got = choices(planner, old_figure, [shape for shape, _ in recorded])
    for (shape, want), line in zip(recorded, got):
        assert line[:5] == shape and line[5:12] == want, (shape, want, line)


# Shapes (of the recorded ones) whose H100 choice changes with the device's own 233472 B per SM:
# the new box fits one more block than the old code counted (5 where it counted 4, 3 for 2,
# 6 for 5, 16 for 15), so the model now prefers it. {shape: new (code, segs, hch, td, groups, threads, smem)}
H100_CHANGED = {
    (1, 256, 2, 128, 128): (4, 32, 2, 2, 2, 128, 45552),
    (2, 118, 66, 141, 139): (4, 12, 4, 4, 3, 192, 76544),
    (1, 128, 2, 128, 128): (4, 32, 2, 2, 2, 128, 45552),
    (1, 192, 1, 7, 7): (4, 2, 12, 1, 1, 24, 13520),
    (7, 204, 13, 54, 187): (7, 16, 4, 2, 1, 128, 37792),
    (1, 8, 34, 144, 256): (4, 32, 2, 2, 2, 128, 45552),
}


def test_h100_plans_with_the_device_figures(planner):
    """With what an H100 reports, the benchmark and check.py shapes keep their choices, and the
    few that change do so only because the device holds one more block of the new box."""
    recorded = recorded_h100()
    limits = device_limits("sm_90", "H100 SXM")
    smem_sm, reserved = limits[4], limits[5]
    assert (smem_sm, reserved, limits[2], limits[1], limits[0]) == (233472, 1024, 65536, 32, 132)
    got = choices(planner, limits, [shape for shape, _ in recorded])
    changed = {}
    for (shape, want), line in zip(recorded, got):
        if line[5:12] != want:
            changed[shape] = line[5:12]
            smem = line[11]
            assert smem_sm // (smem + reserved) > 232448 // (smem + reserved), (shape, line)
            assert line[-1] == smem_sm // (smem + reserved), (shape, line)  # shared memory sets its residency
    assert changed == H100_CHANGED
    assert not any(shape in changed for shape, _ in recorded[:13])  # bench.py's and check.py's shapes


def kernels_by_name(compiled: dict) -> dict[str, dict]:
    return {k["name"]: k for k in compiled["kernels"]}


@pytest.mark.parametrize(("arch", "product"), [("gfx950", "MI350X"), ("gfx942", "MI300X")])
async def test_amd_instances_compile_without_spills_at_the_planned_occupancy(planner, tmp_path, arch, product):
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE / "src", root / "src")
    (root / "kernel-mcp.toml").write_text(f'[target]\narch = "{arch}"\nplatform = "offline"\n')
    async with Client(build_server(root)) as client:
        result = await client.call_tool("compile_kernel", {"source": "src/fast.hip", "arch": arch})
    assert not result.is_error
    compiled = result.structured_content
    assert compiled["ok"] and compiled["backend"] == "offline-clang", compiled
    kernels = kernels_by_name(compiled)
    limits = device_limits(arch, product)
    lines = run_plan(planner, limits, ["instances"])
    assert lines[-1] == "end"
    planned = {}
    for line in lines[:-1]:
        rh, minb, regs, waves = map(int, line.split())
        planned[f"conv3d_fast_kernel<{rh}, {minb}>"] = (regs, waves)
    # Every instance the launcher can pick is in the build, and nothing else is.
    assert set(kernels) == set(planned)
    spec = spec_for(arch, product)
    for name, (regs, waves) in planned.items():
        k = kernels[name]
        assert k["vgpr_spills"] == 0 and k["sgpr_spills"] == 0 and k["scratch_bytes"] == 0, (name, k)
        assert unified_vgprs(k["vgprs"], k["agprs"], int(spec.value("agpr_offset_granule"))) <= regs, (name, k, regs)
        assert k["compiler_occupancy"] >= waves and k["occupancy"]["waves"] >= waves, (name, k["occupancy"], waves)
    # Each benchmark and check.py shape's plan: the compiled kernel it launches holds the blocks the
    # plan counts on, with its registers and the plan's shared memory (kernel-mcp's calculator).
    shapes = [shape for shape, _ in recorded_h100()[:13]]
    simds, wave = int(spec.value("simds_per_cu")), int(spec.value("wave_size"))
    for line in choices(planner, limits, shapes):
        _, _, _, _, _, code, segs, hch, td, groups, threads, smem, minb, resident = line
        rh = code % 100
        k = kernels[f"conv3d_fast_kernel<{rh}, {minb}>"]
        assert smem <= int(spec.value("max_lds_per_workgroup_bytes"))
        occ = occupancy(spec, vgprs=k["vgprs"], agprs=k["agprs"], sgprs=k["sgprs"], lds_bytes=smem, block_size=threads, vendors=VENDORS)
        assert occ.waves >= math.ceil(resident * math.ceil(threads / wave) / simds), (line, occ.explanation)
