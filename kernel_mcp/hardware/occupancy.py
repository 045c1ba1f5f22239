"""Occupancy: how many waves (warps) can be resident, and which resource stops more.

AMD (gfx90a and later): the arithmetic of LLVM's AMDGPU backend, so the answer is the number the
compiler prints as `; Occupancy:` (llvm_amdgpu.py names the LLVM function behind each step):
the unified VGPR file (arch VGPRs aligned to 4 plus AGPRs, in allocation granules), SGPRs (the
800-register file over the count, no granule), and whole workgroups per CU (wave slots, one
barrier per multi-wave workgroup, LDS), whose waves spread over the CU's SIMDs: the compiler
counts the busiest SIMD, and `waves_min` says when another SIMD holds one fewer. Counts no wave
can have are refused (InvalidInput) or, where a tool may report them that way, read and noted.
(Earlier AMD targets keep AGPRs in a file of their own: a table for one would need that rule.)
NVIDIA (sm_90): the CUDA occupancy rules (registers per warp in allocation units, shared memory
per block plus the per-block reservation, warp and block slots per SM).
Every figure used comes from the hardware table, with its source.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import kernel_mcp.hardware.llvm_amdgpu as llvm  # the module itself, not the package's namespace (which imports this one)
from kernel_mcp.errors import InvalidInput
from kernel_mcp.hardware.specs import HardwareSpec
from kernel_mcp.models.occupancy import Occupancy, OccupancyLimit

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors


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
        figures_of=spec.whose() if spec.product_by != "the arch's reference product" else None,
        unit=unit,
        waves=waves,
        max_waves=max_waves,
        limiter=limiter,
        limits=limits,
        explanation=explanation,
        sources=sources,
    )


def _amd_inputs(spec: HardwareSpec, vgprs: int, agprs: int, sgprs: int, lds_bytes: int, keys: list[str]) -> list[str]:
    """Refuse what no AMD kernel can have; note what a tool may report but a wave cannot use."""
    notes: list[str] = []
    arch_max = int(spec.get("max_arch_vgprs_per_wave") or 256)
    total_max = int(spec.get("max_total_vgprs_per_wave") or spec.value("vgprs_per_simd_lane"))
    agpr_max = int(spec.get("max_agprs_per_wave") or total_max - arch_max)
    keys += [k for k in ("max_arch_vgprs_per_wave", "max_total_vgprs_per_wave", "max_agprs_per_wave") if k in spec.figures]
    if agprs > agpr_max:
        raise InvalidInput(
            f"{agprs} AGPRs: a wave on {spec.arch} addresses at most {agpr_max} (a0-a{agpr_max - 1}); "
            "an accumulation-register count above that (some profiler databases report one) is not a count of AGPRs"
        )
    if vgprs > total_max:
        raise InvalidInput(f"{vgprs} VGPRs: a wave on {spec.arch} has at most {total_max} vector registers, AGPRs included")
    if agprs and vgprs > arch_max:
        raise InvalidInput(f"{vgprs} arch VGPRs beside {agprs} AGPRs: a wave on {spec.arch} addresses at most {arch_max} arch VGPRs (v0-v{arch_max - 1})")
    if vgprs > arch_max:
        notes.append(
            f"{vgprs} VGPRs is more than the {arch_max} arch VGPRs a wave addresses: read as the unified count "
            "(arch VGPRs + AGPRs), the way code-object metadata (.vgpr_count) reports it"
        )
    sgpr_max = spec.get("max_sgprs_per_wave")
    if sgpr_max and sgprs > sgpr_max:
        keys.append("max_sgprs_per_wave")
        notes.append(
            f"{sgprs} SGPRs is more than the {int(sgpr_max)} a wave addresses (VCC and the other extras included): "
            f"perhaps a count rounded up to the {int(spec.get('sgpr_alloc_granule') or 16)}-register allocation granule, as profilers report it"
        )
    per_group_max = spec.get("max_lds_per_workgroup_bytes")
    if per_group_max and lds_bytes > per_group_max:
        keys.append("max_lds_per_workgroup_bytes")
        raise InvalidInput(f"{lds_bytes} bytes of LDS exceed the {int(per_group_max)} a workgroup may use on {spec.arch}")
    return notes


def _spread(waves_cu: int, simds: int, max_waves: int) -> tuple[int, int]:
    """Fewest and most waves on one SIMD when a CU holds waves_cu (LLVM clamps both to 1..max)."""
    clamp = lambda waves: min(max(waves, 1), max_waves)  # noqa: E731
    return clamp(waves_cu // simds), clamp(llvm.ceil_div(waves_cu, simds))


def amd_occupancy(spec: HardwareSpec, vgprs: int, agprs: int, sgprs: int, lds_bytes: int, block_size: int) -> Occupancy:
    """Waves per SIMD as LLVM's GCNSubtarget::computeOccupancy counts them (the compiler's
    `; Occupancy:`): the least of the VGPR, SGPR and workgroup/LDS limits (llvm_amdgpu.py)."""
    max_waves = int(spec.value("max_waves_per_simd"))
    wave_size = int(spec.value("wave_size"))
    simds = int(spec.value("simds_per_cu"))
    file_size = int(spec.value("vgprs_per_simd_lane"))
    granule = int(spec.value("vgpr_alloc_granule"))
    barriers = int(spec.value("max_workgroups_per_cu"))
    lds_cu = int(spec.value("lds_per_cu_bytes"))
    keys = ["max_waves_per_simd", "wave_size", "simds_per_cu", "vgprs_per_simd_lane", "vgpr_alloc_granule", "max_workgroups_per_cu"]
    notes = _amd_inputs(spec, vgprs, agprs, sgprs, lds_bytes, keys)
    limits = [OccupancyLimit(resource="hardware maximum", waves=max_waves, detail="waves per SIMD")]
    disagreements: list[str] = []

    total = llvm.unified_vgprs(vgprs, agprs, int(spec.get("agpr_offset_granule") or 4))
    if total > file_size:
        raise InvalidInput(f"{vgprs} VGPRs + {agprs} AGPRs exceed the {file_size}-register file")
    by_vgpr = llvm.waves_with_vgprs(total, granule, file_size, max_waves)
    combined = f"align4({vgprs}) + {agprs} AGPRs = {total}" if agprs else f"{vgprs} VGPRs"
    allocated = llvm.round_up(max(total, 1), granule)
    limits.append(OccupancyLimit(resource="VGPRs", waves=by_vgpr, detail=f"{combined}, allocated {allocated} (granule {granule}); {file_size}/{allocated}"))

    by_sgpr = max_waves
    sgpr_file = spec.get("sgprs_per_simd")
    if sgprs and sgpr_file:
        keys.append("sgprs_per_simd")
        by_sgpr = llvm.waves_with_sgprs(sgprs, int(sgpr_file), max_waves)
        limits.append(
            OccupancyLimit(resource="SGPRs", waves=by_sgpr, detail=f"{int(sgpr_file)} // {sgprs} (LLVM steps at 80/88/100 SGPRs, no granule rounding)")
        )
    by_registers = min(by_vgpr, by_sgpr)

    per_wg = llvm.waves_per_workgroup(block_size, wave_size)
    need = llvm.waves_per_simd_for_workgroup(block_size, wave_size, simds)
    if by_registers < need:
        raise InvalidInput(
            f"a {block_size}-thread workgroup is {per_wg} waves, {need} on each of the {simds} SIMDs, but these registers allow "
            f"{by_registers} per SIMD: it can never be resident, so the launch fails (the compiler keeps registers lower "
            "when the kernel's launch bound admits this size)"
        )
    slot_groups = llvm.max_workgroups_per_cu(block_size, wave_size, max_waves, simds, barriers)
    why = "single-wave: wave slots only" if per_wg == 1 else f"min({max_waves * simds} wave slots // {per_wg}, {barriers} barriers)"
    hi = _spread(slot_groups * per_wg, simds, max_waves)[1]
    limits.append(
        OccupancyLimit(
            resource="workgroup slots",
            waves=hi,
            detail=f"{slot_groups} workgroups of {per_wg} waves per CU ({why}) = {slot_groups * per_wg} waves over {simds} SIMDs",
        )
    )
    groups = slot_groups
    if lds_bytes:
        keys.append("lds_per_cu_bytes")
        lds_groups = lds_cu // lds_bytes
        lds_hi = _spread(lds_groups * per_wg, simds, max_waves)[1]
        limits.append(
            OccupancyLimit(
                resource="LDS",
                waves=lds_hi,
                detail=f"{lds_cu} B per CU // {lds_bytes} B = {lds_groups} workgroups x {per_wg} waves = {lds_groups * per_wg} waves over {simds} SIMDs",
            )
        )
        groups = min(groups, lds_groups)
        lds_granule = spec.get("lds_alloc_granule_bytes")
        if lds_granule:
            # Sources disagree on whether LDS is rounded up to its allocation block for occupancy: say so.
            keys.append("lds_alloc_granule_bytes")
            rounded = llvm.round_up(lds_bytes, int(lds_granule))
            alt = min(
                llvm.workgroup_occupancy(lds_cu, rounded, block_size, block_size, wave_size=wave_size, max_waves=max_waves, simds=simds, max_barriers=barriers)[
                    1
                ],
                by_registers,
            )
            mine = min(lds_hi, hi, by_registers)
            if alt != mine:
                disagreements.append(
                    f"LDS: counted in {int(lds_granule)}-byte allocation blocks ({lds_bytes} -> {rounded} B) the limit is {alt}, not {mine}: "
                    + (spec.figures["lds_alloc_granule_bytes"].disagreement or "sources disagree")
                )
    waves_lo, waves_hi = _spread(groups * per_wg, simds, max_waves)
    # LLVM takes the minimum of per-SIMD limits; whole workgroups under a register limit can
    # leave fewer waves than that (16-wave groups in 5 waves/SIMD of registers: one group, 4).
    whole = (by_registers * simds) // per_wg
    placed = _spread(whole * per_wg, simds, max_waves)[1] if per_wg > 1 and whole < groups else None
    granule_note = spec.figures["vgpr_alloc_granule"].disagreement
    if granule_note:
        alt_alloc = llvm.round_up(max(total, 1), 16)
        if min(max_waves, file_size // alt_alloc) != by_vgpr:
            disagreements.append(f"VGPRs: in blocks of 16 the limit would be {min(max_waves, file_size // alt_alloc)}: {granule_note}")
    result = _finish(spec, "waves per SIMD", max_waves, limits, keys)
    result.waves_min = min(waves_lo, result.waves)
    if result.waves_min < result.waves:
        result.explanation.append(
            f"waves do not divide evenly over the {simds} SIMDs: some hold {result.waves_min} (LLVM's range "
            f"{result.waves_min}-{result.waves}; the compiler reports {result.waves})"
        )
    if placed is not None and placed < min(waves_hi, by_registers):
        result.explanation.append(
            f"LLVM takes the per-SIMD minimum ({result.waves}); placed as whole workgroups, the registers "
            f"of a CU hold {whole} workgroup(s) = {whole * per_wg} waves, at most {placed} on a SIMD"
        )
    if groups * per_wg < simds:
        result.explanation.append(
            f"{groups * per_wg} waves per CU leave {simds - groups * per_wg} of its {simds} SIMDs empty; LLVM counts such a CU as 1 wave per SIMD"
        )
    result.disagreements = disagreements
    result.notes = notes
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
        return OccupancyLimit(
            resource=resource, waves=warps // partitions, detail=f"{detail}: {blocks} blocks x {warps_per_block} warps = {warps} warps per SM"
        )

    limits = [OccupancyLimit(resource="hardware maximum", waves=per_partition, detail=f"{max_warps} warps per SM / {partitions}")]
    limits.append(as_limit("block slots", max_blocks, f"{max_blocks} blocks per SM"))
    limits.append(as_limit("warp slots", max_warps // warps_per_block, f"{max_warps} warps per SM"))
    if registers:
        per_warp = _round_up(registers * warp, reg_granule)
        limits.append(
            as_limit(
                "registers", (regs_sm // per_warp) // warps_per_block, f"{registers} regs x {warp} rounded to {per_warp} per warp; {regs_sm}/{per_warp} warps"
            )
        )
    if shared_bytes:
        smem_sm = int(spec.value("shared_memory_per_sm_bytes"))
        reserved = int(spec.get("shared_memory_reserved_per_block_bytes") or 0)
        keys += ["shared_memory_per_sm_bytes", "shared_memory_reserved_per_block_bytes"]
        block_max = spec.get("max_shared_memory_per_block_bytes")
        if block_max and shared_bytes > block_max:
            raise InvalidInput(f"{shared_bytes} bytes of shared memory exceed the {int(block_max)} a block may use")
        limits.append(as_limit("shared memory", smem_sm // (shared_bytes + reserved), f"{smem_sm} B per SM / ({shared_bytes} + {reserved} reserved)"))
    return _finish(spec, "warps per SM sub-partition", per_partition, limits, keys)


def occupancy(spec: HardwareSpec, *, vgprs: int, agprs: int = 0, sgprs: int = 0, lds_bytes: int = 0, block_size: int = 256, vendors: Vendors) -> Occupancy:
    if block_size <= 0 or block_size > int(spec.get("max_workgroup_size") or 1024):
        raise InvalidInput(f"block size {block_size} is outside 1..{int(spec.get('max_workgroup_size') or 1024)}")
    if min(vgprs, agprs, sgprs, lds_bytes) < 0:
        raise InvalidInput("resource counts must not be negative")
    # the vendor's rules live with its platform, which the caller was handed
    return vendors.for_vendor(spec.vendor).occupancy(spec, vgprs=vgprs, agprs=agprs, sgprs=sgprs, lds_bytes=lds_bytes, block_size=block_size)
