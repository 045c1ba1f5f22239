"""Occupancy: how many waves (warps) can be resident, and which resource stops more.

AMD (gfx90a and later): the rules LLVM's AMDGPU backend uses (AMDGPUBaseInfo.cpp: the unified
VGPR file of gfx90a and later counts arch VGPRs aligned to 4 plus AGPRs, allocated in granules;
waves per SIMD are the file size over the allocation, capped at the hardware maximum), plus the
LDS limit: workgroups per CU that fit in the CU's LDS, times waves per workgroup, shared by the
CU's SIMDs. (Earlier AMD targets keep AGPRs in a file of their own: a table for one would need
that rule here.) NVIDIA (sm_90): the CUDA occupancy rules (registers per warp in allocation units,
shared memory per block plus the per-block reservation, warp and block slots per SM).
Every figure used comes from the hardware table, with its source.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from kernel_mcp.errors import InvalidInput
from kernel_mcp.hardware.specs import HardwareSpec


class OccupancyLimit(BaseModel):
    resource: str
    waves: int  # per SIMD (AMD) / per SM sub-partition (NVIDIA)
    detail: str


class Occupancy(BaseModel):
    arch: str
    unit: str
    waves: int
    max_waves: int
    limiter: list[str]
    limits: list[OccupancyLimit]
    explanation: list[str]
    sources: list[str]
    disagreements: list[str] = []

    def short(self) -> str:
        return f"{self.waves}/{self.max_waves} {self.unit} (limited by {', '.join(self.limiter)})"


def _round_up(value: int, granule: int) -> int:
    return ((value + granule - 1) // granule) * granule


def _finish(spec: HardwareSpec, unit: str, max_waves: int, limits: list[OccupancyLimit], keys: list[str]) -> Occupancy:
    waves = min(limit.waves for limit in limits)
    if waves == max_waves:
        limiter = ["hardware maximum"]  # every resource allows at least the maximum
    else:
        limiter = [limit.resource for limit in limits if limit.waves == waves]
    explanation = [f"{limit.resource}: {limit.detail} -> {limit.waves}" for limit in limits]
    explanation.append(f"result: min of the above = {waves} {unit}")
    sources = sorted({f"{key}: {spec.cite(key)}" for key in keys if key in spec.figures})
    return Occupancy(
        arch=spec.arch,
        unit=unit,
        waves=waves,
        max_waves=max_waves,
        limiter=limiter,
        limits=limits,
        explanation=explanation,
        sources=sources,
    )


def amd_occupancy(spec: HardwareSpec, vgprs: int, agprs: int, sgprs: int, lds_bytes: int, block_size: int) -> Occupancy:
    max_waves = int(spec.value("max_waves_per_simd"))
    wave_size = int(spec.value("wave_size"))
    simds = int(spec.value("simds_per_cu"))
    file_size = int(spec.value("vgprs_per_simd_lane"))
    granule = int(spec.value("vgpr_alloc_granule"))
    keys = ["max_waves_per_simd", "wave_size", "simds_per_cu", "vgprs_per_simd_lane", "vgpr_alloc_granule"]
    limits = [OccupancyLimit(resource="hardware maximum", waves=max_waves, detail="waves per SIMD")]
    disagreements: list[str] = []

    total = (_round_up(vgprs, 4) + agprs) if agprs else vgprs
    if total > file_size:
        raise InvalidInput(f"{vgprs} VGPRs + {agprs} AGPRs exceed the {file_size}-register file")
    allocated = _round_up(max(total, 1), granule)
    by_vgpr = min(max_waves, file_size // allocated)
    combined = f"align4({vgprs}) + {agprs} AGPRs = {total}" if agprs else f"{vgprs} VGPRs"
    limits.append(OccupancyLimit(resource="VGPRs", waves=by_vgpr, detail=f"{combined}, allocated {allocated} (granule {granule}); {file_size}/{allocated}"))

    sgpr_file = spec.get("sgprs_per_simd")
    sgpr_granule = spec.get("sgpr_alloc_granule")
    if sgprs and sgpr_file and sgpr_granule:
        keys += ["sgprs_per_simd", "sgpr_alloc_granule"]
        sgpr_alloc = _round_up(sgprs, int(sgpr_granule))
        limits.append(OccupancyLimit(resource="SGPRs", waves=min(max_waves, int(sgpr_file) // sgpr_alloc), detail=f"{sgprs} allocated {sgpr_alloc}; {int(sgpr_file)}/{sgpr_alloc}"))

    waves_per_group = math.ceil(block_size / wave_size)
    if lds_bytes:
        lds_cu = int(spec.value("lds_per_cu_bytes"))
        keys.append("lds_per_cu_bytes")
        per_group_max = spec.get("max_lds_per_workgroup_bytes")
        if per_group_max and lds_bytes > per_group_max:
            keys.append("max_lds_per_workgroup_bytes")
            raise InvalidInput(f"{lds_bytes} bytes of LDS exceed the {int(per_group_max)} a workgroup may use on {spec.arch}")
        groups = lds_cu // lds_bytes
        by_lds = min(max_waves, (groups * waves_per_group) // simds)
        limits.append(OccupancyLimit(resource="LDS", waves=by_lds, detail=f"{lds_cu // 1024} KiB per CU / {lds_bytes} B = {groups} workgroups x {waves_per_group} waves / {simds} SIMDs"))
        granule = spec.get("lds_alloc_granule_bytes")
        if granule:
            # Sources disagree on whether LDS is rounded up to its allocation block for occupancy: say so.
            keys.append("lds_alloc_granule_bytes")
            rounded = _round_up(lds_bytes, int(granule))
            alt = min(max_waves, ((lds_cu // rounded) * waves_per_group) // simds)
            if alt != by_lds:
                disagreements.append(
                    f"LDS: counted in {int(granule)}-byte allocation blocks ({lds_bytes} -> {rounded} B) the limit is {alt}, not {by_lds}: "
                    + (spec.figures["lds_alloc_granule_bytes"].disagreement or "sources disagree")
                )

    slots = spec.get("max_workgroups_per_cu")
    if slots and waves_per_group == 1:
        slots = spec.get("max_waves_per_cu")  # single-wave workgroups need no barrier: only wave slots bind
    if slots:
        keys.append("max_workgroups_per_cu")
        limits.append(OccupancyLimit(resource="workgroup slots", waves=min(max_waves, (int(slots) * waves_per_group) // simds), detail=f"{int(slots)} workgroups per CU x {waves_per_group} waves / {simds} SIMDs"))
    granule_note = spec.figures["vgpr_alloc_granule"].disagreement
    if granule_note:
        alt_alloc = _round_up(max(total, 1), 16)
        if min(max_waves, file_size // alt_alloc) != by_vgpr:
            disagreements.append(f"VGPRs: in blocks of 16 the limit would be {min(max_waves, file_size // alt_alloc)}: {granule_note}")
    result = _finish(spec, "waves per SIMD", max_waves, limits, keys)
    result.disagreements = disagreements
    return result


def nvidia_occupancy(spec: HardwareSpec, registers: int, shared_bytes: int, block_size: int) -> Occupancy:
    warp = int(spec.value("wave_size"))
    partitions = int(spec.value("simds_per_cu"))
    max_warps = int(spec.value("max_warps_per_sm"))
    regs_sm = int(spec.value("registers_per_sm"))
    reg_granule = int(spec.value("register_alloc_granule_per_warp"))
    max_blocks = int(spec.value("max_blocks_per_sm"))
    keys = ["wave_size", "simds_per_cu", "max_warps_per_sm", "registers_per_sm", "register_alloc_granule_per_warp", "max_blocks_per_sm"]
    if registers > spec.value("max_registers_per_thread"):
        raise InvalidInput(f"{registers} registers per thread exceed the maximum of {int(spec.value('max_registers_per_thread'))}")
    warps_per_block = math.ceil(block_size / warp)
    per_partition = max_warps // partitions

    def as_limit(resource: str, blocks: int, detail: str) -> OccupancyLimit:
        warps = min(max_warps, blocks * warps_per_block)
        return OccupancyLimit(resource=resource, waves=warps // partitions, detail=f"{detail}: {blocks} blocks x {warps_per_block} warps = {warps} warps per SM")

    limits = [OccupancyLimit(resource="hardware maximum", waves=per_partition, detail=f"{max_warps} warps per SM / {partitions}")]
    limits.append(as_limit("block slots", max_blocks, f"{max_blocks} blocks per SM"))
    limits.append(as_limit("warp slots", max_warps // warps_per_block, f"{max_warps} warps per SM"))
    if registers:
        per_warp = _round_up(registers * warp, reg_granule)
        limits.append(as_limit("registers", (regs_sm // per_warp) // warps_per_block, f"{registers} regs x {warp} rounded to {per_warp} per warp; {regs_sm}/{per_warp} warps"))
    if shared_bytes:
        smem_sm = int(spec.value("shared_memory_per_sm_bytes"))
        reserved = int(spec.get("shared_memory_reserved_per_block_bytes") or 0)
        keys += ["shared_memory_per_sm_bytes", "shared_memory_reserved_per_block_bytes"]
        block_max = spec.get("max_shared_memory_per_block_bytes")
        if block_max and shared_bytes > block_max:
            raise InvalidInput(f"{shared_bytes} bytes of shared memory exceed the {int(block_max)} a block may use")
        limits.append(as_limit("shared memory", smem_sm // (shared_bytes + reserved), f"{smem_sm} B per SM / ({shared_bytes} + {reserved} reserved)"))
    return _finish(spec, "warps per SM sub-partition", per_partition, limits, keys)


def occupancy(spec: HardwareSpec, *, vgprs: int, agprs: int = 0, sgprs: int = 0, lds_bytes: int = 0, block_size: int = 256) -> Occupancy:
    if block_size <= 0 or block_size > int(spec.get("max_workgroup_size") or 1024):
        raise InvalidInput(f"block size {block_size} is outside 1..{int(spec.get('max_workgroup_size') or 1024)}")
    if min(vgprs, agprs, sgprs, lds_bytes) < 0:
        raise InvalidInput("resource counts must not be negative")
    from kernel_mcp import platforms  # the vendor's rules live with its platform

    return platforms.for_vendor(spec.vendor).occupancy(spec, vgprs=vgprs, agprs=agprs, sgprs=sgprs, lds_bytes=lds_bytes, block_size=block_size)
