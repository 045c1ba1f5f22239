"""What nvcc 13 and cuobjdump really print for the bundled example's kernels (sm_90), read by the
compile backend's parsers: the registers, stack and spills ptxas states, and the shared-memory
rule (CUDA 13's cuobjdump adds the 1024 B per-block reservation to SHARED for a kernel that uses
shared memory or a barrier; ptxas does not). Recorded on an H100; see tests/data/SOURCES.md."""

from __future__ import annotations

import pytest

from conftest import data
from kernel_mcp.compile import nvidia

H100_RESERVATION = 1024  # the sm_90 TOML's shared_memory_reserved_per_block_bytes


def logs(kernel: str) -> tuple[str, str]:
    folder = "cuda/nvcc13-sm90"
    return data(f"{folder}/{kernel}.ptxas.log").read_text(), data(f"{folder}/{kernel}.res-usage.log").read_text()


@pytest.mark.parametrize(
    ("kernel", "regs", "smem", "dumped"),
    [
        ("naive", 44, 0, 0),  # no shared memory, no barrier: no reservation either
        ("lds", 142, 10368, 11392),  # 10368 B of its own + the reservation
        ("mfma", 56, 0, 1024),  # a barrier but no shared array: the reservation alone
    ],
)
def test_one_kernel_per_log(kernel, regs, smem, dumped):
    ptxas_text, res_text = logs(kernel)
    ptxas, res = nvidia.parse_ptxas(ptxas_text), nvidia.parse_res_usage(res_text)
    (symbol,) = ptxas
    assert ptxas[symbol]["registers"] == res[symbol]["REG"] == regs
    assert res[symbol]["SHARED"] == dumped
    assert nvidia.static_shared(ptxas[symbol], res[symbol]) == smem
    notes = nvidia.shared_memory_notes(ptxas_text, res_text, H100_RESERVATION)
    if dumped == smem:
        assert notes == []
    else:
        (note,) = notes
        assert f"SHARED {dumped} B, ptxas {smem} B" in note and "per-block system reservation" in note


def test_eight_instantiations_with_stack_and_spills():
    ptxas_text, res_text = logs("fast")
    ptxas, res = nvidia.parse_ptxas(ptxas_text), nvidia.parse_res_usage(res_text)
    assert len(ptxas) == len(res) == 8 and set(ptxas) == set(res)
    eight_four = next(s for s in ptxas if "ILi8ELi4E" in s)
    assert ptxas[eight_four]["registers"] == 64 and ptxas[eight_four]["stack"] == 16
    assert ptxas[eight_four]["spill_stores"] + ptxas[eight_four]["spill_loads"] == 36
    notes = nvidia.shared_memory_notes(ptxas_text, res_text, H100_RESERVATION)
    (note,) = notes  # one note for the eight instantiations that differ alike
    assert note.startswith("8 kernels (conv3d_fast_kernel<8, 4>, ") and "SHARED 1024 B, ptxas 0 B" in note
    assert "per-block system reservation" in note


def test_a_difference_that_is_not_the_reservation_is_said_to_be_unexplained():
    ptxas_text, res_text = logs("lds")
    notes = nvidia.shared_memory_notes(ptxas_text, res_text, 2048)
    assert len(notes) == 1 and "not the per-block reservation" in notes[0]
