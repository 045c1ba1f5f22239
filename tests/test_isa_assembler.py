"""isa_lookup knows every instruction the compiler can emit for gfx950 and gfx942: where the index
holds no entry, the target's assembler (the offline clang's, run for real) decides whether the
instruction exists, and the answer says that no description is held."""

from __future__ import annotations

import pytest
from mcp import Client

from kernel_mcp.platforms.offline import assembler
from kernel_mcp.server import build_server

from conftest import text_of

pytestmark = pytest.mark.anyio
# instructions the compiler emits (scratch_load_dword for spills, v_exp_f32 for exp2, v_lshl_add_u64
# for 64-bit addresses on gfx942 and later, ds_bpermute_b32 for cross-lane moves)
EMITTED = ["scratch_load_dword", "v_exp_f32", "v_lshl_add_u64", "ds_bpermute_b32"]


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    return tmp_path


@pytest.mark.parametrize("arch", ["gfx950", "gfx942"])
async def test_every_emitted_instruction_is_known(ws, arch):
    async with Client(build_server(ws)) as client:
        for mnemonic in EMITTED:
            answer = await client.call_tool("isa_lookup", {"mnemonic": mnemonic, "arch": arch})
            assert not answer.is_error, text_of(answer)
            assert arch in answer.structured_content["exists_on"], text_of(answer)
            text = text_of(answer)
            assert f"{mnemonic} exists on {arch} (the assembler accepts it)" in text or answer.structured_content["id"].startswith("isa-")


async def test_an_instruction_without_a_description_says_so(ws):
    async with Client(build_server(ws)) as client:
        answer = await client.call_tool("isa_lookup", {"mnemonic": "scratch_load_dword", "arch": "gfx950"})
    assert not answer.is_error
    assert "scratch_load_dword exists on gfx950 (the assembler accepts it); no description in the shipped reference" in text_of(answer)
    assert "no instruction" not in text_of(answer)
    assert assembler._cache[("scratch_load_dword", "gfx950")] == "exists"  # asked once per process


async def test_names_the_assembler_refuses(ws):
    async with Client(build_server(ws)) as client:
        unknown = await client.call_tool("isa_lookup", {"mnemonic": "v_frobnicate_b32", "arch": "gfx950"})
        elsewhere = await client.call_tool("isa_lookup", {"mnemonic": "v_lshl_add_u64", "arch": "gfx90a"})
        described = await client.call_tool("isa_lookup", {"mnemonic": "v_mfma_f32_16x16x32_bf16", "arch": "gfx942"})
    assert unknown.is_error and "no instruction 'v_frobnicate_b32' on gfx950: gfx950's assembler knows no such instruction" in text_of(unknown)
    assert elsewhere.is_error and "gfx90a's assembler knows the name for other targets only" in text_of(elsewhere)
    # an entry on gfx950 only, and gfx942's assembler lacks it too: where it exists, and that gfx942 has not
    assert described.is_error and "exists on gfx950 only" in text_of(described) and "gfx942's assembler" in text_of(described)


async def test_only_a_bare_instruction_name_reaches_the_assembler():
    assert await assembler.check(".byte", "gfx950") is None  # a directive is never assembled
    assert await assembler.check("s_endpgm", "gfx950") == "exists"  # assembles with no operands at all
    assert await assembler.check("v_mfma_f32_16x16x32_bf16", "gfx942") == "not on target"
