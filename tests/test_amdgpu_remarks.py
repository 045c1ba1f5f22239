"""Resource remarks and `.s` kernel info as real hipcc/amdclang print them, never seen by the parser's
author before: both orders (`file:l:c: remark:` and `remark: file:l:c:`), `SGPRs` and `TotalSGPRs`,
the cross-check against the assembly, and the ROCm compile path replaying a recorded compile."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp.compile import amdgpu_asm
from kernel_mcp.compile.amdgpu_remarks import parse_remarks, split_remark
from kernel_mcp.hardware import load_spec, occupancy
from kernel_mcp.platforms import VENDORS
from kernel_mcp.server import build_server

from conftest import fixture, install_stand_ins, text_of

pytestmark = pytest.mark.anyio
DATA = Path(__file__).parent / "data"  # copied real outputs: tests/data/SOURCES.md
TK = "_Z8micro_tk13micro_globals"


def data(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


# (file, symbol, arch the log names, figures the log prints). Block sizes: 512 where the .s of
# that kernel says so (HipKittens GEMMs), else 256; every one of these is VGPR- or SGPR-limited.
REAL_LOGS = [
    (
        "shared:rocm/hk-remarks-gfx942-attn-README.md",
        "_Z10attend_kerILi64EEv12attn_globalsIXT_EE",
        "gfx942",
        dict(sgprs=40, vgprs=90, agprs=16, scratch_bytes=0, compiler_occupancy=4, sgpr_spills=0, vgpr_spills=0, lds_bytes=1024),
    ),
    ("hk-remarks-gfx942-256_256_32_16-README.md", TK, "gfx942", dict(sgprs=34, vgprs=233, agprs=0, compiler_occupancy=2, lds_bytes=0)),
    ("hk-remarks-gfx942-256_128_64_16_persist-README.md", TK, "gfx942", dict(sgprs=48, vgprs=256, scratch_bytes=44, compiler_occupancy=2, vgpr_spills=10)),
    ("hk-remarks-gfx950-256_64-README.md", TK, "gfx950", dict(sgprs=25, vgprs=184, agprs=0, compiler_occupancy=2)),
    ("hk-remarks-gfx942-2048_256_256_64_16-README.md", TK, "gfx942", dict(sgprs=36, vgprs=102, compiler_occupancy=4)),
    (
        "hpcte-register-pressure-README.md",
        "_Z6kernelPdS_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_iiiiiiiddddddddddddddd",
        "gfx942",
        dict(sgprs=102, vgprs=102, compiler_occupancy=4),
    ),
]


def _text(source: str) -> str:
    return fixture(source.split(":", 1)[1]).read_text() if source.startswith("shared:") else data(source)


@pytest.mark.parametrize("source, symbol, arch, expected", REAL_LOGS, ids=[r[0] for r in REAL_LOGS])
def test_real_remark_logs_parse_and_the_calculator_agrees_with_them(source, symbol, arch, expected):
    figures = parse_remarks(_text(source))[symbol]
    assert {k: figures[k] for k in expected} == expected
    block = 512 if symbol == TK else 256
    occ = occupancy(
        load_spec(arch),
        vgprs=figures["vgprs"],
        agprs=figures.get("agprs", 0),
        sgprs=figures["sgprs"],
        lds_bytes=figures.get("lds_bytes", 0),
        block_size=block,
        vendors=VENDORS,
    )
    assert occ.waves == figures["compiler_occupancy"], occ.explanation


def test_both_orders_are_real_and_read_alike():
    remark_first = data("hk-remarks-gfx950-256_64-README.md")
    location_first = data("hk-remarks-gfx942-2048_256_256_64_16-README.md")
    assert "\nremark: kernel.cpp:38:0:     VGPRs: 184 [" in remark_first
    assert "\n256_256_64_16.cpp:38:1: remark:     VGPRs: 102 [" in location_first
    assert "   38 | void micro_tk" in location_first  # clang's source snippet between remark lines
    assert parse_remarks(remark_first)[TK]["location"] == "kernel.cpp:38:0"
    assert parse_remarks(location_first)[TK]["location"] == "256_256_64_16.cpp:38:1"


def test_total_sgprs_and_sgprs_name_the_same_figure_and_99_sgprs_still_give_8_waves():
    """ROCm 7.2 prints TotalSGPRs; its register_usage example reports 99 SGPRs at 8 waves/SIMD."""
    text = data("hpcte-register_usage-README.md")
    sgpr_heavy, vgpr_heavy = text.split("## Kernel heavily using VGPRs")
    sgpr = {s: (f["sgprs"], f["compiler_occupancy"]) for s, f in parse_remarks(sgpr_heavy).items()}
    assert sorted(sgpr.values()) == [(18, 8), (27, 8), (46, 8), (99, 8)]
    vgpr = sorted((f["vgprs"], f["compiler_occupancy"]) for f in parse_remarks(vgpr_heavy).values())
    assert vgpr == [(21, 8), (41, 8), (70, 7), (79, 6)]
    for arch in ("gfx90a", "gfx942", "gfx950"):  # the log names no arch; all three agree with it
        spec = load_spec(arch)
        assert occupancy(spec, vgprs=4, sgprs=99, vendors=VENDORS).waves == 8
        assert [occupancy(spec, vgprs=v, sgprs=12, vendors=VENDORS).waves for v, _ in vgpr] == [w for _, w in vgpr]


def test_remarks_without_a_function_name_are_not_attributed():
    """The MI210 block of the register-pressure README starts without its `Function Name` line."""
    remarks = parse_remarks(data("hpcte-register-pressure-README.md"))
    assert len(remarks) == 1 and next(iter(remarks.values()))["sgprs"] == 102


@pytest.mark.parametrize(
    "line, expected",
    [
        ("remark: Function Name: _Z1kPf [-Rpass-analysis=kernel-resource-usage]", (None, "Function Name", "_Z1kPf")),
        ("C:\\src\\k.hip:7:1: remark:     VGPRs: 9 [-Rpass-analysis=kernel-resource-usage]", ("C:\\src\\k.hip:7:1", "VGPRs", "9")),
        (
            "\x1b[1mk.hip:7:1: \x1b[0m\x1b[0;1;32mremark: \x1b[0m    LDS Size [bytes/block]: 64 [-Rpass-analysis=kernel-resource-usage]\x1b[0m",
            ("k.hip:7:1", "LDS Size", "64"),
        ),
        ("remark: k.hip:7:0:     Occupancy [waves/SIMD]: 8 [-Rpass-analysis=kernel-resource-usage]\r", ("k.hip:7:0", "Occupancy", "8")),
        (
            "k.hip:7:1: remark:     TotalSGPRs: max(k.num_sgpr+6, 0) [-Rpass-analysis=kernel-resource-usage]",
            ("k.hip:7:1", "TotalSGPRs", "max(k.num_sgpr+6, 0)"),
        ),
        ("k.hip:7:1: warning: VGPRs: 9 [-Wsomething]", None),
        ("   38 | void micro_tk(const micro_globals g) {", None),
    ],
)
def test_remark_line_forms(line, expected):
    assert split_remark(line) == expected


def test_an_unfolded_value_is_kept_as_text_not_a_number():
    log = (
        "remark: Function Name: k [-Rpass-analysis=kernel-resource-usage]\n"
        "remark:     TotalSGPRs: max(k.num_sgpr+6, 0) [-Rpass-analysis=kernel-resource-usage]\n"
    )
    assert parse_remarks(log)["k"]["sgprs"] == "max(k.num_sgpr+6, 0)"
    assert amdgpu_asm.read_kernels("", log)[0][0].sgprs is None


def test_kernel_info_of_a_real_save_temps_s_and_its_remarks_agree():
    asm = data("hk-savetemps-256_128_64_16_persist-gfx942.s")
    info = amdgpu_asm.parse_kernel_info(asm)[TK]
    assert info["sgprs"] == 48 and info["vgprs"] == 256 and info["compiler_occupancy"] == 2 and info["scratch_bytes"] == 44
    kernels, notes = amdgpu_asm.read_kernels(asm, data("hk-remarks-gfx942-256_128_64_16_persist-README.md"))
    assert notes == [] and kernels[0].vgpr_spills == 10 and kernels[0].code_size_bytes == info["code_size_bytes"]
    shared = fixture("rocm/hk-savetemps-256_256_32_16-gfx942.s").read_text()
    assert amdgpu_asm.read_kernels(shared, data("hk-remarks-gfx942-256_256_32_16-README.md"))[1] == []


def test_a_disagreement_between_remarks_and_assembly_is_noted():
    asm = data("hk-savetemps-256_128_64_16_persist-gfx942.s")
    log = data("hk-remarks-gfx942-256_128_64_16_persist-README.md").replace("VGPRs: 256", "VGPRs: 248").replace("[waves/SIMD]: 2", "[waves/SIMD]: 3")
    kernels, notes = amdgpu_asm.read_kernels(asm, log)
    assert kernels[0].vgprs == 256 and kernels[0].compiler_occupancy == 2  # the assembly's figures are kept
    assert any("VGPRs differ" in n and "248" in n for n in notes) and any("occupancy differ" in n for n in notes)


def test_metadata_vgpr_count_is_the_unified_count():
    """On gfx90a and later `.vgpr_count` counts AGPRs too (the offline clang: v99 + a99 -> 200)."""
    asm = (
        "\t.size\tk, .Lfunc_end0-k\n; Kernel info:\n; TotalNumSgprs: 8\n; NumVgprs: 100\n; NumAgprs: 100\n"
        "; TotalNumVgprs: 200\n; Occupancy: 2\n\t.section\t.AMDGPU.csdata\n"
        "amdhsa.kernels:\n  - .agpr_count:     100\n    .name:           k\n    .vgpr_count:     200\n"
        "amdhsa.target:   amdgcn-amd-amdhsa--gfx950\n"
    )
    assert amdgpu_asm.parse_metadata(asm)["k"]["total_vgprs"] == 200
    kernels, notes = amdgpu_asm.read_kernels(asm, "")
    assert (kernels[0].vgprs, kernels[0].agprs, notes) == (100, 100, [])
    no_info = asm.split("; Kernel info:")[0] + asm[asm.index("amdhsa.kernels:") :]
    assert amdgpu_asm.read_kernels(no_info, "")[0][0].vgprs == 100  # metadata alone: total - AGPRs


STAND_IN_HIPCC = """
import os, sys
args = sys.argv[1:]
obj = args[args.index("-o") + 1]
stem = os.path.splitext(os.path.basename(args[-1]))[0]
data = os.environ["KMCP_TEST_DATA"]
if not os.environ.get("KMCP_NO_ASM"):
    with open(os.path.join(os.path.dirname(obj), stem + "-hip-amdgcn-amd-amdhsa-gfx942.s"), "w") as out:
        out.write(open(os.path.join(data, "hk-savetemps-256_128_64_16_persist-gfx942.s")).read())
for line in open(os.path.join(data, "hk-remarks-gfx942-256_128_64_16_persist-README.md")):
    if line.startswith("remark:"):
        sys.stderr.write(line)
open(obj, "wb").close()
"""


@pytest.mark.parametrize("with_asm", [True, False])
async def test_rocm_path_reads_what_hipcc_save_temps_prints(tmp_path, monkeypatch, with_asm):
    """A stand-in hipcc replays a recorded real compile (its .s and its remark-first stderr)."""
    install_stand_ins(tmp_path, monkeypatch, {"hipcc": STAND_IN_HIPCC})
    monkeypatch.setenv("KMCP_TEST_DATA", str(DATA))
    if not with_asm:
        monkeypatch.setenv("KMCP_NO_ASM", "1")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernel-mcp.toml").write_text('[target]\narch = "gfx942"\nplatform = "rocm"\n')
    (ws / "gemm.hip").write_text("__global__ void micro_tk() {}\n")
    async with Client(build_server(ws)) as client:
        result = await client.call_tool("compile_kernel", {"source": "gemm.hip"})
    assert not result.is_error, text_of(result)
    data_ = result.structured_content
    k = data_["kernels"][0]
    assert data_["backend"] == "hipcc" and k["name"] == "micro_tk"
    assert (k["vgprs"], k["sgprs"], k["scratch_bytes"], k["vgpr_spills"], k["compiler_occupancy"]) == (256, 48, 44, 10, 2)
    assert k["occupancy"]["waves"] == 2 and not any("differ" in n or "the compiler reports" in n for n in data_["notes"])
    assert with_asm or any("resource remarks only" in n for n in data_["notes"])
