"""Occupancy arithmetic exactly as LLVM's AMDGPU backend does it, one function per LLVM function.

The compiler prints the result as `; Occupancy:` in the .s and `Occupancy [waves/SIMD]` in the
resource remarks (GCNSubtarget::computeOccupancy: the smallest of the workgroup/LDS, SGPR and
VGPR limits). Reimplemented from the descriptions in llvm/lib/Target/AMDGPU/Utils/
AMDGPUBaseInfo.cpp (IsaInfo::getNumWavesPerEUWithNumVGPRs, getOccupancyWithNumSGPRs,
getMaxWorkGroupsPerCU, getWavesPerEUForWorkGroup) and AMDGPUSubtarget.cpp
(getOccupancyWithWorkGroupSizes). Every number comes in as an argument (the caller reads it from
the hardware table), so nothing here names a target.
"""

from __future__ import annotations


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def round_up(value: int, granule: int) -> int:
    return ceil_div(value, granule) * granule


def unified_vgprs(arch_vgprs: int, agprs: int, agpr_offset_granule: int) -> int:
    """gfx90a and later: AGPRs start at the arch count rounded to 4 (ACCUM_OFFSET), one file."""
    return round_up(arch_vgprs, agpr_offset_granule) + agprs if agprs else arch_vgprs


def waves_with_vgprs(vgprs: int, granule: int, file_size: int, max_waves: int) -> int:
    """IsaInfo::getNumWavesPerEUWithNumVGPRs: the file over the count rounded to the granule."""
    if vgprs < granule:
        return max_waves
    return min(max(file_size // round_up(vgprs, granule), 1), max_waves)


def waves_with_sgprs(sgprs: int, file_size: int, max_waves: int) -> int:
    """IsaInfo::getOccupancyWithNumSGPRs for GFX8/GFX9 (the CDNA targets): steps at 80, 88 and
    100 SGPRs (10, 9, 8 waves, else 7). Those steps are the 800-register file divided by the
    count itself, not by the count rounded to the 16-register allocation granule: 97-100 SGPRs
    still give 8."""
    return min(max_waves, file_size // sgprs) if sgprs else max_waves


def waves_per_workgroup(block_size: int, wave_size: int) -> int:
    """IsaInfo::getWavesPerWorkGroup."""
    return ceil_div(block_size, wave_size)


def max_workgroups_per_cu(block_size: int, wave_size: int, max_waves: int, simds: int, max_barriers: int) -> int:
    """IsaInfo::getMaxWorkGroupsPerCU: wave slots, and one barrier per multi-wave workgroup."""
    slots = max_waves * simds
    n = waves_per_workgroup(block_size, wave_size)
    if n == 1:
        return slots  # a single-wave workgroup needs no barrier
    return min(slots // n, max_barriers)


def waves_per_simd_for_workgroup(block_size: int, wave_size: int, simds: int) -> int:
    """IsaInfo::getWavesPerEUForWorkGroup: waves each SIMD must hold for one workgroup to fit."""
    return ceil_div(waves_per_workgroup(block_size, wave_size), simds)


def workgroup_occupancy(
    lds_cu: int, lds_bytes: int, min_size: int, max_size: int, *, wave_size: int, max_waves: int, simds: int, max_barriers: int
) -> tuple[int, int]:
    """AMDGPUSubtarget::getOccupancyWithWorkGroupSizes: (fewest, most) waves per SIMD that
    workgroups of min_size..max_size threads reach, limited by workgroup slots, barriers and LDS.
    Waves of a CU spread over its SIMDs as evenly as possible, so the most is the ceiling and the
    fewest the floor of waves-per-CU over SIMDs, both clamped to 1..max_waves; LDS larger than
    the CU counts as 1. The compiler reports the second value."""
    groups_by_lds = lds_cu // max(lds_bytes, 1)
    if groups_by_lds == 0:
        return 1, 1

    def props(size: int) -> tuple[int, int, int]:
        per_wg = waves_per_workgroup(size, wave_size)
        groups = min(max_workgroups_per_cu(size, wave_size, max_waves, simds, max_barriers), groups_by_lds)
        return per_wg, groups, per_wg * groups

    min_waves_per_wg, max_groups, max_waves_cu = props(min_size)
    max_waves_per_wg, min_groups, min_waves_cu = props(max_size)
    if min_waves_cu >= max_waves_cu:
        min_waves_cu, max_waves_cu = max_waves_cu, min_waves_cu
    else:
        slots = max_waves * simds
        # a size below the maximum may need fewer waves for as many workgroups
        fewest_for_groups = ceil_div(slots, min_groups + 1) * min_groups
        if min_waves_cu > fewest_for_groups:
            excess_per_wg = (min_waves_cu - fewest_for_groups) // min_groups
            if excess_per_wg:
                min_waves_cu -= min_groups * min(excess_per_wg, max_waves_per_wg - min_waves_per_wg)
        # a size above the minimum may fill the slots the smallest workgroups leave over
        leftover_per_wg = (slots - max_groups * min_waves_per_wg) // max_groups
        if leftover_per_wg:
            max_waves_cu += max_groups * min(leftover_per_wg, (max_size - 1) // wave_size + 1 - min_waves_per_wg)
    clamp = lambda waves: min(max(waves, 1), max_waves)  # noqa: E731
    return clamp(min_waves_cu // simds), clamp(ceil_div(max_waves_cu, simds))
