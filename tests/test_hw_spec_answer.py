"""hw_spec answers within the 4 KB budget, numbers written as people write them (50 MiB, 2.2 GHz,
8 TB/s, never 5.24288e+07), a summary of every value, and whole entries (note, source,
disagreement) a section or a few keys at a time. The shipped tables, through the real client."""

from __future__ import annotations

import re

import pytest
from mcp import Client

from conftest import text_of, write_toml
from kernel_mcp.arch_registry import arch_names
from kernel_mcp.hardware import hw_spec, load_spec
from kernel_mcp.hardware.quantities import EXACT, human, plain
from kernel_mcp.hardware.spec_view import grouped
from kernel_mcp.server import build_server

pytestmark = pytest.mark.anyio
EXPONENT = re.compile(r"\d(\.\d+)?e[+-]?\d", re.IGNORECASE)  # 5.24288e+07, 3.35e12


@pytest.mark.parametrize(
    "value, unit, shown",
    [
        (52428800, "bytes", "50 MiB (52,428,800 B)"),
        (163840, "bytes", "160 KiB (163,840 B)"),
        (309237645312, "bytes", "288 GiB (309,237,645,312 B)"),
        (1280, "bytes", "1,280 B"),  # no whole number of KiB: stays in bytes
        (65535, "bytes", "65,535 B"),  # a count is never rounded
        (8e12, "bytes/s", "8 TB/s"),
        (3.35e12, "bytes/s", "3.35 TB/s"),
        (2200, "MHz", "2.2 GHz"),
        (1980, "MHz", "1.98 GHz"),
        (7.21e13, "FLOP/s", "72.1 TFLOP/s"),
        (2.3069e15, "FLOP/s", "2.307 PFLOP/s"),
        (288.4, "FLOP/byte", "288.4 FLOP/B"),
        (65536, "32-bit registers", "65,536 32-bit registers"),
        (256, "bytes/clk", "256 B/clk"),
    ],
)
def test_figures_as_people_write_them(value, unit, shown):
    assert human(value, unit) == shown


def test_exact_figures_keep_every_digit_of_the_table():
    assert human(2.3069e15, "FLOP/s", EXACT) == "2.3069 PFLOP/s" and human(1.6384e12, "bytes/s", EXACT) == "1.6384 TB/s"
    assert plain(0.0125) == "0.0125" and plain(1234.5678) == "1,235" and plain(1234.5678, EXACT) == "1,234.5678"


@pytest.mark.parametrize("arch", arch_names())
def test_the_summary_gives_every_value_within_the_budget(arch):
    spec = load_spec(arch)
    text = hw_spec(arch).render()
    assert len(text.encode()) <= 4096 and not EXPONENT.search(text), text
    for key, fig in spec.figures.items():
        assert f"  {key} = {human(fig.value, fig.unit)}" in text, key
    assert all(f"[{name}]" in text for name in grouped(spec.figures))
    assert "source:" not in text  # sources are in the sections' details


@pytest.mark.parametrize("arch", arch_names())
def test_every_section_shows_its_entries_whole_within_the_budget(arch):
    spec = load_spec(arch)
    for section, keys in grouped(spec.figures).items():
        text = hw_spec(arch, section=section).render()
        assert len(text.encode()) <= 4096 and "not shown" not in text, (arch, section)
        assert text.count("  source: ") == len(keys), (arch, section)
        for key in keys:
            fig = spec.figures[key]
            assert f"{key} = {human(fig.value, fig.unit, EXACT)}\n" in text + "\n"
            assert fig.source in text and (fig.disagreement or "") in text


async def test_through_the_client(tmp_path):
    async with Client(build_server(tmp_path)) as client:
        summary = await client.call_tool("hw_spec", {"arch": "sm_90"})
        text = text_of(summary)
        assert not summary.is_error and "answer cut" not in text
        assert "l2_cache_bytes = 50 MiB (52,428,800 B)" in text and "5.24288e+07" not in text
        assert "hbm_bandwidth_bytes_per_s = 3.35 TB/s" in text and "boost_clock_mhz = 1.98 GHz *" in text
        assert "peak_flops_bf16_matrix = 989.4 TFLOP/s" in text
        picked = await client.call_tool("hw_spec", {"arch": "sm_90", "keys": ["l2_cache_bytes", "boost_clock_mhz"]})
        text = text_of(picked)
        assert "l2_cache_bytes = 50 MiB (52,428,800 B)\n  note: '50 MB' = 50 MiB" in text
        assert "  sources disagree: the whitepaper's tensor-core peaks imply 1830 MHz" in text
        assert set(picked.structured_content["figures"]) == {"l2_cache_bytes", "boost_clock_mhz"}
        lds = await client.call_tool("hw_spec", {"arch": "gfx950", "section": "lds"})
        assert "lds_banks = 64 banks\n" in text_of(lds) and "llvm-project PR #220632" in text_of(lds)
        unknown = await client.call_tool("hw_spec", {"arch": "gfx950", "keys": ["l2_cache_size"]})
        assert unknown.is_error and "no figure 'l2_cache_size'" in text_of(unknown) and "l2_cache_bytes" in text_of(unknown)
        both = await client.call_tool("hw_spec", {"arch": "gfx950", "section": "lds", "keys": ["lds_banks"]})
        assert both.is_error and "not both" in text_of(both)
        absent = await client.call_tool("hw_spec", {"arch": "sm_90", "section": "other"})
        assert absent.is_error and "sections of sm_90: compute" in text_of(absent)


async def test_a_smaller_configured_budget_names_what_it_left_out(tmp_path):
    write_toml(tmp_path, "[server]\nresponse_budget_bytes = 1024\n")
    async with Client(build_server(tmp_path)) as client:
        result = await client.call_tool("hw_spec", {"arch": "gfx950", "section": "lds"})
        text = text_of(result)
        assert not result.is_error and len(text.encode()) <= 1024 and "answer cut" not in text, text
        assert "not shown, to fit the 1024-byte answer: " in text and "lds_banks" in text.split("not shown")[1]
        alone = text_of(await client.call_tool("hw_spec", {"arch": "gfx950", "keys": ["lds_banks"]}))
        assert alone.startswith("MI350X (gfx950, the arch's reference product), CDNA4; ") and "lds_banks = 64 banks" in alone and len(alone.encode()) <= 1024
