"""GPU monitors' real recorded outputs parse unchanged (nvidia-smi XML, amd-smi 26.x JSON, banners)."""

from __future__ import annotations

import pytest

from kernel_mcp.errors import CommandFailed
from kernel_mcp.platforms.cuda.nvidia_smi import parse_nvidia_smi_xml
from kernel_mcp.platforms.rocm.amd_smi import parse_amd_smi_static
from kernel_mcp.toolchain import PROBES, extract_version, parse_amd_smi_version

from conftest import fixture


def test_nvidia_smi_xml_h100():
    gpus = parse_nvidia_smi_xml(fixture("cuda/nvidia-smi-q-x.xml").read_text())
    assert len(gpus) == 1
    g = gpus[0]
    assert (g.index, g.vendor, g.name, g.arch) == (0, "nvidia", "NVIDIA H100 80GB HBM3", "Hopper")
    assert g.memory_total_mib == 81559 and g.memory_used_mib == 0
    assert g.utilization_pct == 3 and g.processes == []
    assert g.uuid.startswith("GPU-2ff7243f") and g.bus_id == "00000000:00:06.0"


def test_amd_smi_static_mi300x_root():
    gpus = parse_amd_smi_static(fixture("rocm/dellai-amdsmi-static-mi300x.json").read_text())
    assert len(gpus) == 8
    assert {g.arch for g in gpus} == {"gfx942"}
    assert all(g.name == "AMD Instinct MI300X" and g.compute_units == 304 for g in gpus)
    assert gpus[0].memory_total_mib == 196592 and gpus[0].bus_id == "0000:1b:00.0"
    assert gpus[0].memory_used_mib is None  # `static` does not say; unknown is never 0


def test_amd_smi_static_with_permission_banner():
    text = fixture("rocm/dellai-amdsmi-static-mi300x-nonroot.txt").read_text()
    assert text.lstrip().startswith("Permission")
    gpus = parse_amd_smi_static(text)
    assert len(gpus) == 8


def test_amd_smi_version_root_and_nonroot():
    assert parse_amd_smi_version(fixture("rocm/dellai-amdsmi-version.json").read_text()) == "26.2.2 (ROCm 7.2.1)"
    assert parse_amd_smi_version(fixture("rocm/dellai-amdsmi-version-nonroot.json").read_text()).startswith("26.")


def test_version_lines_of_other_tools():
    """Version banners as the tools print them (nvcc 13.0, Nsight Compute 2025.3.1 on the H100 device)."""
    by_name = {p.name: p for p in PROBES}
    nvcc = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n"
    assert extract_version(by_name["nvcc"], nvcc) == "13.0"
    ncu = "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\nVersion 2025.3.1.0 (build 36398880) (public-release)\n"
    assert extract_version(by_name["ncu"], ncu) == "2025.3.1.0"


@pytest.mark.parametrize("text", ["", "not json at all", "<xml/>", '{"something": 1}'])
def test_garbage_gives_clear_errors(text):
    with pytest.raises(CommandFailed):
        parse_amd_smi_static(text)
    with pytest.raises(CommandFailed):
        parse_nvidia_smi_xml(text)
