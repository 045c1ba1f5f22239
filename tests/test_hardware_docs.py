"""Hardware calculators and the layered documentation index, through the real server."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp.arch_registry import arch_names
from kernel_mcp.docs import DocsStore, docs_read, ingest, open_store
from kernel_mcp.hardware import load_spec, occupancy
from kernel_mcp.platforms import VENDORS
from kernel_mcp.server import build_server

from conftest import rocm_docs

pytestmark = pytest.mark.anyio


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.mark.parametrize("vgprs, waves", [(22, 8), (155, 3), (86, 5)])
def test_published_gfx950_vgpr_cases(vgprs, waves):
    assert occupancy(load_spec("gfx950"), vgprs=vgprs, block_size=256, vendors=VENDORS).waves == waves


def test_lds_32k_workgroup_gfx950_vs_gfx942():
    cdna4 = occupancy(load_spec("gfx950"), vgprs=32, lds_bytes=32768, block_size=256, vendors=VENDORS)
    cdna3 = occupancy(load_spec("gfx942"), vgprs=32, lds_bytes=32768, block_size=256, vendors=VENDORS)
    assert (cdna4.waves, cdna4.limiter) == (5, ["LDS"])
    assert cdna3.waves < cdna4.waves and cdna3.limiter == ["LDS"]
    # the sources disagree on the gfx950 LDS allocation block: the answer says so
    assert any("1280" in d and "4" in d for d in cdna4.disagreements)


def test_agprs_count_in_the_unified_file():
    spec = load_spec("gfx942")
    assert occupancy(spec, vgprs=9, agprs=32, block_size=256, vendors=VENDORS).limits[1].detail.startswith("align4(9) + 32 AGPRs = 44")
    assert occupancy(spec, vgprs=128, agprs=128, block_size=256, vendors=VENDORS).waves == 2


def test_every_figure_has_a_source():
    for arch in arch_names():  # every table in docs_index/hardware/
        spec = load_spec(arch)
        assert len(spec.figures) > 20
        assert all(f.source.strip() for f in spec.figures.values()), arch


def test_notes_cite_sources_not_documents_of_this_project():
    # an agent was told "the project brief's template proposed 512": a note names where a figure
    # comes from or why sources disagree, never a document of this project or its user
    shipped = Path(__file__).resolve().parents[1] / "docs_index"
    for page in [*shipped.glob("hardware/**/*.toml"), *shipped.glob("l1/*.md")]:
        text = page.read_text().lower()
        assert "project brief" not in text and "brief's template" not in text and "user's case study" not in text, page


async def test_hips_launch_bounds_second_argument_is_waves_per_execution_unit(docs_ws):
    async with Client(build_server(docs_ws)) as client:
        hits = await client.call_tool("docs_search", {"query": "HIP __launch_bounds__ second argument minimum", "arch": "gfx950"})
        top = [h["id"] for h in hits.structured_content["hits"]][:3]
        pages = [text_of(await client.call_tool("docs_read", {"id": i})) for i in top]
    assert any("MIN_WARPS_PER_EXECUTION_UNIT" in page and "hip_porting_guide" in page for page in pages), top


async def test_hardware_tools(tmp_path):
    async with Client(build_server(tmp_path)) as client:
        spec = await client.call_tool("hw_spec", {"arch": "gfx950"})
        assert "lds_per_cu_bytes = 160 KiB (163,840 B)" in text_of(spec) and "sources disagree" in text_of(spec)
        occ = await client.call_tool("occupancy", {"arch": "gfx950", "vgprs": 155})
        assert occ.structured_content["occupancy"]["waves"] == 3 and "limited by VGPRs" in text_of(occ)
        nv = await client.call_tool("occupancy", {"arch": "sm_90", "vgprs": 40, "block_size": 256})
        assert nv.structured_content["occupancy"]["waves"] == 12
        bad = await client.call_tool("hw_spec", {"arch": "gfx1100"})
        assert bad.is_error
        too_big = await client.call_tool("occupancy", {"arch": "gfx942", "vgprs": 64, "lds_bytes": 70000})
        assert too_big.is_error and "exceed" in text_of(too_big)


async def test_roofline_bounds_and_plot(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text("")
    async with Client(build_server(tmp_path)) as client:
        mem = await client.call_tool("roofline", {"arch": "sm_90", "flops": 1e9, "bytes": 1e9, "seconds": 1e-3})
        r = mem.structured_content["roofline"]
        assert r["bound"] == "memory" and r["floor_seconds"] == pytest.approx(1e9 / 3.35e12)
        assert r["times_floor"] == pytest.approx(1e-3 / (1e9 / 3.35e12))
        comp = await client.call_tool("roofline", {"arch": "gfx950", "flops": 1e15, "bytes": 1e9, "dtype": "bf16", "plot": True})
        r = comp.structured_content["roofline"]
        assert r["bound"] == "compute" and r["engine"] == "matrix" and r["plot"].endswith("roofline.png")
        runs = sorted((tmp_path / ".kernel-mcp" / "runs").iterdir())
        png = runs[-1] / "roofline.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- the documentation index ----
@pytest.fixture
def docs_ws(tmp_path) -> Path:
    (tmp_path / "kernel-mcp.toml").write_text("")
    return tmp_path


async def test_map_search_read_and_isa_from_the_shipped_index(docs_ws):
    async with Client(build_server(docs_ws)) as client:
        docs_map = await client.call_tool("docs_map", {})
        assert "lds" in text_of(docs_map) and len(text_of(docs_map).encode()) <= 4096
        hits = await client.call_tool("docs_search", {"query": "sched_group_barrier mask", "arch": "gfx950"})
        ids = [h["id"] for h in hits.structured_content["hits"]]
        assert any(i.startswith("scheduling-hints") for i in ids[:3]), ids
        page = await client.call_tool("docs_read", {"id": "lds"})
        data = page.structured_content
        assert data["parent"] == "map" and data["children"] and data["citation"]
        child = await client.call_tool("docs_read", {"id": data["children"][0]})
        assert child.structured_content["parent"] == "lds"
        isa = await client.call_tool("isa_lookup", {"mnemonic": "ds_read_b128", "arch": "gfx950"})
        assert not isa.is_error and "lgkmcnt" in text_of(isa).lower()
        close = await client.call_tool("isa_lookup", {"mnemonic": "ds_read_b96x", "arch": "gfx950"})
        assert close.is_error and "ds_read" in text_of(close)


QUESTIONS = [
    ("How many compute units does the MI300X have", ("304",)),
    ("LDS bank conflict counter", ("SQ_LDS_BANK_CONFLICT", "bank conflict")),
    ("wavefront size of Instinct accelerators", ("64",)),
    ("Infinity Cache MI300", ("Infinity Cache", "256")),
    ("vector L1 cache hit rate", ("TCP", "L1")),
]


async def test_ingested_rocm_documents_answer_questions(docs_ws):
    store = open_store(docs_ws / ".kernel-mcp")
    docs = rocm_docs()
    report = ingest(store, [docs])
    assert all(r["status"] == "added" for r in report.results), report.results
    again = ingest(store, [docs])
    assert all(r["status"] == "unchanged" for r in again.results)
    async with Client(build_server(docs_ws)) as client:
        for question, expected in QUESTIONS:
            hits = (await client.call_tool("docs_search", {"query": question, "limit": 5})).structured_content["hits"]
            assert hits, question
            texts = []
            for hit in hits[:5]:
                texts.append(text_of(await client.call_tool("docs_read", {"id": hit["id"]})))
            assert any(word.lower() in t.lower() for t in texts for word in expected), (question, [h["id"] for h in hits])


def _pdf(path: Path, words: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    fig.text(0.1, 0.5, words)
    fig.savefig(path, format="pdf")
    plt.close(fig)
    return path


def test_a_search_sees_what_another_connection_ingested(tmp_path):
    """The server keeps each passage's words and each term's count between searches, while
    `kernel-mcp docs ingest` in a shell writes the same index through a connection of its own: a
    re-read passage takes the dropped one's rowid, and a term that no passage held now has one."""
    path = tmp_path / "d.sqlite"
    server = DocsStore(path)
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nThe widget flux capacitor needs tuning.\n")
    ingest(server, [notes])
    before = server.search("gizmo resonator widget", None, 5)
    notes.write_text("# Notes\n\nThe gizmo resonator replaced the widget.\n")
    ingest(DocsStore(path), [notes])
    after = server.search("gizmo resonator widget", None, 5)
    assert after == DocsStore(path).search("gizmo resonator widget", None, 5)
    assert after[0]["score"] > before[0]["score"]


def test_a_page_read_shows_what_another_connection_ingested(tmp_path):
    """docs_read keeps the sections and passages it read (a search reads its hits' pages, and they
    recur), but a document that `kernel-mcp docs ingest` re-read through another connection is
    shown as it is now, by search and by docs_read alike."""
    path = tmp_path / "d.sqlite"
    server = DocsStore(path)
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nThe widget flux capacitor needs tuning.\n")
    ingest(server, [notes])
    [hit] = server.search("widget flux capacitor", None, 1)
    assert "flux capacitor" in docs_read(server, hit["id"], 1, 4096).text
    notes.write_text("# Notes\n\nThe widget gizmo resonator needs tuning.\n")
    ingest(DocsStore(path), [notes])
    shown = docs_read(server, hit["id"], 1, 4096).text
    assert "gizmo resonator" in shown and "flux capacitor" not in shown


def test_pdf_html_and_isa_xml_ingest(tmp_path):
    """The ISA XML follows AMD's machine-readable ISA schema (GPUOpen-Tools/isa_spec_manager,
    documentation/spec_documentation.md: Spec > ISA > Instructions > Instruction > InstructionName,
    Description, InstructionEncodings > InstructionEncoding > EncodingName, Opcode, Operands)."""
    store = DocsStore(tmp_path / "d.sqlite")
    _pdf(tmp_path / "guide.pdf", "Wave occupancy depends on the unified register file")
    (tmp_path / "page.html").write_text(
        "<html><head><title>Tuning</title><script>x()</script></head><body><h1>Tuning</h1><p>intro</p><h2>LDS padding</h2><p>Pad rows to avoid bank conflicts.</p></body></html>"
    )
    (tmp_path / "amdgpu_isa_cdna4.xml").write_text(
        "<?xml version='1.0'?><Spec><Document><ReleaseDate>2025</ReleaseDate><SchemaVersion>1.1.1</SchemaVersion></Document>"
        "<ISA><Architecture><ArchitectureName>CDNA 4</ArchitectureName></Architecture><Instructions>"
        "<Instruction><InstructionName>V_PK_FMA_F32</InstructionName><Description>Packed fused multiply-add of two single-precision pairs.</Description>"
        "<InstructionEncodings><InstructionEncoding><EncodingName>VOP3P</EncodingName><Opcode>48</Opcode><Operands>"
        "<Operand Input='False' Output='True'><FieldName>VDST</FieldName><DataFormatName>FMT_NUM_F32</DataFormatName><OperandType>OPR_VGPR</OperandType><OperandSize>64</OperandSize></Operand>"
        "</Operands></InstructionEncoding></InstructionEncodings></Instruction></Instructions></ISA></Spec>"
    )
    report = ingest(store, [tmp_path / "guide.pdf", tmp_path / "page.html", tmp_path / "amdgpu_isa_cdna4.xml"])
    assert [r["status"] for r in report.results] == ["added"] * 3, report.results
    assert store.search("unified register file", None, 5)
    assert store.search("pad rows bank conflicts", None, 5)[0]["title"] == "LDS padding"
    entry = store.isa("v_pk_fma_f32", "gfx950")
    assert entry and "VOP3P" in entry[0]["body"]


def test_bad_documents_get_clear_errors_and_the_index_stays_usable(tmp_path):
    store = DocsStore(tmp_path / "d.sqlite")
    (tmp_path / "ok.md").write_text("# Fine\n\n## Section\nworks fine\n")
    (tmp_path / "empty.md").write_text("")
    (tmp_path / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 20)
    (tmp_path / "notpdf.pdf").write_bytes(b"hello, not a pdf")
    (tmp_path / "junk.html").write_bytes(b"\x00\xff\xfe" * 1000)
    (tmp_path / "bad.xml").write_text("<Spec><ISA>")
    big = tmp_path / "huge.md"
    with big.open("w") as handle:
        for i in range(50 * 1024):
            handle.write(f"## section {i}\n" + "x" * 1000 + "\n")
    (tmp_path / "table.csv").write_text("a,b\n")
    paths = [tmp_path / n for n in ("ok.md", "empty.md", "corrupt.pdf", "notpdf.pdf", "junk.html", "bad.xml", "huge.md", "table.csv", "missing.md")]
    report = ingest(store, paths)
    status = {Path(r["path"]).name: r["status"] for r in report.results}
    assert status["ok.md"] == "added"
    assert "empty" in status["empty.md"]
    assert "not a readable PDF" in status["corrupt.pdf"] or "no extractable text" in status["corrupt.pdf"]
    assert "does not start like a PDF" in status["notpdf.pdf"]
    assert "binary" in status["junk.html"] or "UTF-8" in status["junk.html"]
    assert "not well-formed XML" in status["bad.xml"]
    assert "limit" in status["huge.md"]
    assert "unsupported format" in status["table.csv"]
    assert "not a file" in status["missing.md"]
    assert store.search("works fine", None, 3)


async def test_bad_queries_and_ids(docs_ws):
    async with Client(build_server(docs_ws)) as client:
        for tool, arguments, expected in [
            ("docs_read", {"id": "no-such-section"}, "no section"),
            ("docs_read", {"id": "lds", "page": 99}, "page"),
            ("docs_search", {"query": "lds", "arch": "gfx1100"}, "arch"),
            ("docs_search", {"query": "!!! ???"}, "no words"),
            ("isa_lookup", {"mnemonic": "v_fma_f32", "arch": "sm_90"}, "arch"),
        ]:
            result = await client.call_tool(tool, arguments)
            assert result.is_error and expected in text_of(result), (tool, text_of(result))
        assert not (await client.call_tool("docs_search", {"query": "LDS"})).is_error


def test_cli_ingest(docs_ws, tmp_path):
    import subprocess

    from conftest import PY

    folder = tmp_path / "mine"
    folder.mkdir()
    shutil.copy(rocm_docs() / "mi300.md", folder / "mi300.md")
    done = subprocess.run([PY, "-m", "kernel_mcp", "docs", "ingest", "--workspace", str(docs_ws), str(folder)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "mi300.md: added" in done.stdout


def test_lds_banks_and_the_rates_computed_from_them():
    g950 = load_spec("gfx950")
    assert g950.value("lds_banks") == 64
    assert "CDNA4 ISA Reference Guide" in g950.cite("lds_banks") and "#220632" in g950.cite("lds_banks")
    assert "lds_banks_per_cu = 32" in g950.figures["lds_banks"].disagreement  # the profiler has not followed
    for arch in arch_names("amd"):
        spec = load_spec(arch)
        assert spec.value("lds_bytes_per_clk_per_cu") == 4 * spec.value("lds_banks"), arch
        assert spec.value("max_agprs_per_wave") == 256
    lds_page = (Path(__file__).parents[1] / "docs_index" / "l1" / "lds.md").read_text()
    assert "| banks (4 bytes each) | 64 | 32 |" in lds_page and "256 B/clk" in lds_page


def test_profiler_peaks_are_quoted_as_the_current_configs_have_them():
    g950, g942 = load_spec("gfx950"), load_spec("gfx942")
    assert g950.value("flops_per_clk_per_cu_fp8_matrix") == 8192 and g950.figures["flops_per_clk_per_cu_fp8_matrix"].disagreement is None
    assert "MFMA FLOPs (F64)' peak 128" in g950.cite("peak_flops_fp64_matrix") and g950.figures["peak_flops_fp64_matrix"].disagreement is None
    assert "16834" in g950.figures["peak_flops_fp6_fp4_matrix"].disagreement
    bf16 = g942.figures["flops_per_clk_per_cu_bf16_matrix"]
    assert bf16.value == 2048 and "'MFMA FLOPs (BF16)' peak 2048" in bf16.source and bf16.disagreement is None
