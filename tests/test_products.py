"""Products beneath archs: one table per product (counts, clocks, memory, peaks) over its arch's
ISA-level facts. The GPU a benchmark really runs on decides its floor, recognised from what real
monitors and profilers print; a GPU no table describes gets no product figure at all."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp import arch_registry
from kernel_mcp.arch_registry import device_id_hex, product_for_gpu, product_named, products, products_of, registry
from kernel_mcp.bench import floor_for
from kernel_mcp.platforms.cuda.nvidia_smi import parse_nvidia_smi_xml
from kernel_mcp.models.gpu import GpuInfo
from kernel_mcp.platforms.rocm.amd_smi import parse_amd_smi_static
from kernel_mcp.hardware import load_spec
from kernel_mcp.server import build_server
from kernel_mcp.workspace import Workspace

from conftest import data, text_of, toml_list, PY

pytestmark = pytest.mark.anyio

# The products the tables must describe, by label: several per arch, so that no figure of one can
# stand for another's.
EXPECTED = {
    "H100 SXM": "sm_90",
    "H100 PCIe": "sm_90",
    "H200": "sm_90",
    "MI250X GCD": "gfx90a",
    "MI300X": "gfx942",
    "MI300A": "gfx942",
    "MI325X": "gfx942",
    "MI350X": "gfx950",
    "MI355X": "gfx950",
}
PRODUCT_FIGURES = ("compute_units", "hbm_bytes", "hbm_bandwidth_bytes_per_s")


def test_every_product_is_a_table_with_sourced_figures_beneath_its_arch():
    by_label = {p.label: p for p in products().values()}
    assert {label: by_label[label].arch for label in EXPECTED} == EXPECTED
    for arch in registry():
        assert sum(p.reference for p in products_of(arch)) <= 1, arch
    for entry in products().values():
        spec = load_spec(entry.arch, entry)
        assert spec.product_label == entry.label and spec.vendor == registry()[entry.arch].vendor
        for key in PRODUCT_FIGURES:
            assert spec.get(key), (entry.slug, key)
        assert any(k.startswith("peak_flops_") for k in spec.figures), entry.slug
        assert all(f.source.strip() for f in spec.figures.values())
        assert entry.device_ids and all(d == device_id_hex(d) for d in entry.device_ids), entry.slug
    # the arch tables hold no product figure: an arch alone has no bandwidth, no clock, no peak
    for arch in registry():
        alone = load_spec(arch, reference=False)
        assert not any(k in alone.figures for k in PRODUCT_FIGURES) and not any(k.startswith("peak_flops_") for k in alone.figures), arch


def test_peaks_agree_with_counts_clocks_and_the_arch_rates():
    """A product's peak rates as its maker prints them, against its CU/SM count x the arch's per-CU
    rate x its clock: a typo in a table (or a figure copied from a sibling product) shows here."""
    checked = 0
    for entry in products().values():
        spec = load_spec(entry.arch, entry)
        units = spec.value("compute_units")
        if spec.vendor == "amd":
            clock = spec.value("peak_engine_clock_mhz") * 1e6
            pairs = [
                ("peak_flops_bf16_matrix", spec.get("flops_per_clk_per_cu_bf16_matrix")),
                ("peak_flops_fp32_vector", spec.get("flops_per_clk_per_cu_fp32_vector")),
            ]
        else:  # 128 FP32 lanes per SM, an FMA is 2 FLOPs, at the boost clock
            clock = spec.value("boost_clock_mhz") * 1e6
            pairs = [("peak_flops_fp32_vector", 256.0)]
        for key, per_clock in pairs:
            if per_clock is None or key not in spec.figures:
                continue
            derived = units * per_clock * clock
            assert math.isclose(spec.value(key), derived, rel_tol=0.015), (entry.slug, key, spec.value(key), derived)
            checked += 1
    assert checked >= 2 * len(EXPECTED) - 3


def test_products_are_recognised_from_real_monitor_and_profiler_outputs():
    h100 = parse_nvidia_smi_xml(data("shared-fixtures/cuda/nvidia-smi-q-x.xml").read_text())[0]
    assert (h100.name, h100.device_id, h100.product) == ("NVIDIA H100 80GB HBM3", "0x2330", "H100 SXM")
    mi300x = parse_amd_smi_static(data("shared-fixtures/rocm/dellai-amdsmi-static-mi300x.json").read_text())[0]
    assert (mi300x.device_id, mi300x.compute_units, mi300x.product) == ("0x74a1", 304, "MI300X")
    # rocprofv3 agent records: an MI350X that names itself, an MI355X that calls itself "AMD Radeon Graphics"
    for path, label in (
        ("rocm/att-gfx950/vec_add/compute_viewer/big_agent_info.csv", "MI350X"),
        ("rocm/hk-ds_read_b64-out/bank_test_agent_info.csv", "MI355X"),
    ):
        with data(path).open(newline="") as handle:
            agent = next(r for r in csv.DictReader(handle) if r["Agent_Type"] in ("GPU", "2"))
        found = product_for_gpu("amd", agent["Product_Name"], agent["Device_Id"], int(agent["Cu_Count"]), agent["Name"])
        assert found is not None and found.label == label, (path, agent["Product_Name"], agent["Device_Id"])


def test_a_product_no_table_describes_is_no_product():
    assert product_for_gpu("nvidia", "NVIDIA H200", None).label == "H200"
    assert product_for_gpu("nvidia", "NVIDIA H200 NVL", None) is None  # another product of the same arch
    assert product_for_gpu("nvidia", "NVIDIA H100 80GB HBM3", "233910DE") is None  # pci.ids 2339: H100 SXM5 94GB
    assert product_for_gpu("amd", "AMD Instinct MI300X", "0x74a1", 228) is None  # the id and the CU count disagree
    assert product_for_gpu("amd", "AMD Instinct MI250X/MI250", "0x740c", 104) is None  # an MI250 GCD: no table
    assert product_for_gpu("amd", "AMD Instinct MI250X/MI250", "0x740c", 110).label == "MI250X GCD"
    with pytest.raises(Exception, match="unknown product 'B200'"):
        product_named("B200")
    assert product_named("NVIDIA H100 PCIe").label == product_named("h100-pcie").label == "H100 PCIe"


def _floor_workspace(tmp_path, extra: str = "") -> Workspace:
    (tmp_path / "kernel-mcp.toml").write_text(
        f'[target]\narch = "sm_90"\n\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\ncsv = "out/bench.csv"\nconfig_columns = ["shape"]\n'
        'correctness = { column = "err", rule = "== 0" }\nmetric = "us"\n\n[harness]\nflops_column = "flops"\nbytes_column = "bytes"\n'
        'floor_dtype = "bf16"\n' + extra
    )
    return Workspace(tmp_path)


def test_the_floor_is_the_product_that_runs_the_benchmark(tmp_path):
    """The held-out RMSNorm case: 263 us measured on an H200 was refused as impossible against the
    H100's 321 us floor. The H200's own bandwidth draws the floor now; the product is named; a GPU
    no table describes gets no floor and the answer says why."""
    ws = _floor_workspace(tmp_path)
    moved = 321e-6 * 3.35e12  # the bytes whose H100 floor was 321 us
    h100 = GpuInfo(index=0, vendor="nvidia", name="NVIDIA H100 80GB HBM3", arch="Hopper", device_id="0x2330")
    h200 = GpuInfo(index=0, vendor="nvidia", name="NVIDIA H200", arch="Hopper", device_id="0x2335")
    nvl = GpuInfo(index=0, vendor="nvidia", name="NVIDIA H200 NVL", arch="Hopper", device_id="0x233b")
    floor, whose, note = floor_for(ws, h100)
    assert whose == "H100 SXM (sm_90, this GPU), table figures" and note is None and math.isclose(floor(0.0, moved), 321e-6, rel_tol=1e-6)
    floor, whose, note = floor_for(ws, h200)
    assert whose == "H200 (sm_90, this GPU), table figures" and floor(0.0, moved) < 263e-6 < 321e-6
    floor, whose, note = floor_for(ws, nvl)
    assert floor is None and whose is None and "unknown product" in note and "NVIDIA H200 NVL" in note and "0x233b" in note
    # the user may name the product outright, whatever GPU runs
    floor, whose, note = floor_for(_floor_workspace(tmp_path, 'floor_product = "H200"\n'), nvl)
    assert whose == "H200 (sm_90, [harness] floor_product), table figures"
    # a CPU benchmark (no GPU): the workspace's product, else the arch's reference product, named as such
    assert floor_for(_floor_workspace(tmp_path), None)[1] == "H100 SXM (sm_90, the arch's reference product), table figures"
    ws = _floor_workspace(tmp_path)
    (tmp_path / "kernel-mcp.toml").write_text(
        (tmp_path / "kernel-mcp.toml").read_text().replace('arch = "sm_90"\n', 'arch = "sm_90"\nproduct = "H100 PCIe"\n', 1)
    )
    assert floor_for(Workspace(tmp_path), None)[1] == "H100 PCIe (sm_90, the workspace's product), table figures"


async def test_the_calculators_take_a_product_and_say_whose_figures_they_used(tmp_path):
    async with Client(build_server(tmp_path)) as client:
        h200 = await client.call_tool("roofline", {"product": "NVIDIA H200", "flops": 0.0, "bytes": 4.8e9, "dtype": "bf16"})
        assert not h200.is_error and text_of(h200).startswith("H200 (sm_90) bf16/matrix") and "floor 1000.00 us" in text_of(h200), text_of(h200)
        arch_only = text_of(await client.call_tool("roofline", {"arch": "sm_90", "flops": 0.0, "bytes": 3.35e9, "dtype": "bf16"}))
        assert arch_only.startswith("H100 SXM (sm_90, the arch's reference product)") and "floor 1000.00 us" in arch_only
        spec = text_of(await client.call_tool("hw_spec", {"product": "MI355X", "keys": ["peak_engine_clock_mhz", "lds_per_cu_bytes"]}))
        assert spec.startswith("MI355X (gfx950), CDNA4") and "2,400 MHz" in spec and "160 KiB" in spec, spec
        summary = text_of(await client.call_tool("hw_spec", {"arch": "gfx942"}))
        assert "gfx942 is sold as MI300A, MI300X, MI325X" in summary, summary
        wrong = await client.call_tool("hw_spec", {"arch": "gfx942", "product": "MI355X"})
        assert wrong.is_error and "MI355X is a gfx950 product, not gfx942" in text_of(wrong)
        unknown = await client.call_tool("roofline", {"product": "H200 NVL", "flops": 1.0, "bytes": 1.0})
        assert unknown.is_error and "unknown product 'H200 NVL'" in text_of(unknown)
        occupancy = text_of(await client.call_tool("occupancy", {"product": "MI300A", "vgprs": 128}))
        assert occupancy.startswith("MI300A (gfx942): 4 waves per SIMD"), occupancy


def test_the_workspace_product_must_be_one_of_its_arch(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx942"\nproduct = "MI355X"\n')
    with pytest.raises(Exception, match="MI355X is a gfx950 product"):
        _ = Workspace(tmp_path).config
    assert arch_registry.reference_product("gfx950").label == "MI350X"


SOL_BENCH = """
import csv, os
os.makedirs("out", exist_ok=True)
with open("out/bench.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["shape", "err", "us", "flops", "bytes"])
    w.writerow(["small", 0, 2000.0, 0, 3.35e9])  # the H100 SXM's floor for these bytes is 1000 us
    w.writerow(["large", 0, 1250.0, 0, 3.35e9])
"""


async def test_each_class_is_scored_against_the_speed_of_light_of_the_product(tmp_path):
    import git

    (tmp_path / "bench.py").write_text(SOL_BENCH)
    (tmp_path / "kernel.py").write_text("X = 1\n")
    (tmp_path / ".gitignore").write_text("out/\n")
    (tmp_path / "kernel-mcp.toml").write_text(
        f'[target]\narch = "sm_90"\nplatform = "offline"\n\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\ncsv = "out/bench.csv"\n'
        'config_columns = ["shape"]\ncorrectness = { column = "err", rule = "== 0" }\nmetric = "us"\nrepeats = 2\n\n'
        '[harness]\neditable = ["kernel.py"]\nflops_column = "flops"\nbytes_column = "bytes"\nfloor_dtype = "bf16"\nallow_unsealed = true\n'
    )
    repo = git.Repo.init(tmp_path)
    repo.git.add("-A")
    repo.git.commit("-m", "sol", "--author", "t <t@example.invalid>")
    async with Client(build_server(tmp_path)) as client:
        bench = await client.call_tool("run_benchmark", {})
        text = text_of(bench)
        assert not bench.is_error and "roofline floor from H100 SXM (sm_90, the arch's reference product), table figures" in text, text
        assert "shape=small: ok  us 2000, 50% of speed of light" in text and "shape=large: ok  us 1250, 80% of speed of light" in text, text
        lights = {c["key"]: c["speed_of_light"] for c in bench.structured_content["bench"]["classes"]}
        assert lights == {"shape=small": pytest.approx(0.5), "shape=large": pytest.approx(0.8)}
        start = await client.call_tool("experiment_start", {"tag": "sol"})
        assert not start.is_error, text_of(start)
        (Path(start.structured_content["worktree"]) / "kernel.py").write_text("X = 2\n")
        evaluated = text_of(await client.call_tool("experiment_evaluate", {"hypothesis": "no real change"}))
        assert (
            "speed of light (floor / time, floor from H100 SXM (sm_90, the arch's reference product), table figures): shape=small 50%; shape=large 80%"
            in evaluated
        ), evaluated
        log = text_of(await client.call_tool("experiment_log", {}))
        assert "speed of light" in log, log
