"""Docs that answer the question as people ask it (issue 33): the vocabulary bridge from the words
people use to the documents' terms, the workspace's target and product first, and the asked quantity
within a table. Over the shipped index (docs_index/) and its data, through the real store and server.
"""

from __future__ import annotations

import re
import sys

import pytest
from mcp import Client

from kernel_mcp.arch_registry import docs_index_dir
from kernel_mcp.docs import docs_read, docs_search, open_store
from kernel_mcp.docs.ranking import analyse, asked_quantities, given_quantities, named_vendors
from kernel_mcp.docs.vocabulary import phrase_words
from kernel_mcp.server import build_server


if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

pytestmark = pytest.mark.anyio
BUDGET = 4096
WORDS = re.compile(r"[A-Za-z0-9_]+")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return open_store(tmp_path_factory.mktemp("ws") / ".kernel-mcp")


def test_every_bridge_entry_says_why_and_holds_none_of_its_own_words():
    """Each entry is explained in one line, with its source where a vendor states the equivalence;
    a phrase of several words holds no single-word term of its own entry ("clock speed" for "clock"
    let "speed" count as found wherever "clock" was)."""
    entries = tomllib.loads((docs_index_dir() / "bridge.toml").read_text())["entry"]
    assert len(entries) >= 25
    for entry in entries:
        assert set(entry) <= {"say", "docs", "counters", "why", "source", "docs_vendor"}, entry
        assert entry["say"] and (entry["docs"] or entry.get("counters")), entry
        assert entry["why"].strip() and "\n" not in entry["why"], entry
        assert entry.get("docs_vendor", "amd") in ("amd", "nvidia"), entry
        own = {t.lower() for t in entry["docs"] if len(WORDS.findall(t)) == 1}
        for phrase in entry["say"]:
            words = {w.lower() for w in WORDS.findall(phrase)}
            assert len(words) == 1 or not words & own, (phrase, words & own)


def test_a_phrase_keeps_two_words_after_the_stop_words():
    """A phrase that stop words leave one word of ("wait for all": wait) would widen every question
    holding that word; the reader leaves it out, and no shipped entry relies on one."""
    entries = tomllib.loads((docs_index_dir() / "bridge.toml").read_text())["entry"]
    for entry in entries:
        for phrase in entry["say"]:
            if len(WORDS.findall(phrase)) > 1:
                assert len(phrase_words(phrase)) > 1, phrase
    assert "wait" not in analyse("how long do I wait for the kernel", None).bridged


def shown(store, question: str, arch: str | None) -> dict[str, str]:
    """The first 3 hits' ids, each with the first page docs_read shows for it, whitespace folded."""
    return {h.id: " ".join(docs_read(store, h.id, 1, BUDGET).text.split()) for h in docs_search(store, question, arch, 3).hits}


def widened(query, term: str) -> tuple[str, ...]:
    """What a query's term is also found as: its synonyms and the bridge's words."""
    return (*query.alternatives.get(term, ()), *query.bridged.get(term, ()))


def test_the_bridge_gives_the_documents_words_for_the_question_s_own():
    query = analyse("how big is the scratchpad a thread block can claim on MI355X", None)
    assert "lds" in widened(query, "scratchpad") and "work-group" in widened(query, "thread block"), query.bridged
    assert query.archs == {"gfx950"} and query.asks == {"size"}
    # in order, one word between two of the phrase's at most: "lanes sit idle" is "lanes idle"
    query = analyse("which profiler number shows lanes that sit idle", None)
    assert "valuutilization" in query.bridged["idle"], query.bridged
    # one way: a question in the documents' own words is not widened to plain ones
    assert "scratchpad" not in str(analyse("LDS size", None).bridged)
    # per vendor: a tensor core is an MFMA on an AMD target, not on an NVIDIA one
    assert "mfma" in analyse("tensor core count", "gfx942").bridged["tensor"]
    assert "tensor" not in analyse("tensor core count", "sm_90").bridged
    assert "sm" in analyse("compute units", "sm_90").bridged.get("compute units", ())


def test_a_said_word_is_found_with_its_endings_not_as_the_start_of_another_word():
    """A word the bridge lists is found in a question with another ending ("divergent" for
    "divergence"), but not as the start of a longer word: "groups" is no "groupshared" (the LDS),
    "float" no "float4" (a 16-byte load), "multiple" no "multiplex" (counter passes)."""
    assert "valuutilization" in analyse("how much divergent branching is there", None).bridged.get("divergent", ())
    query = analyse("how many thread groups of a multiple of 64 fit, with float math", None)
    assert not {"groups", "multiple", "float"} & set(query.bridged), query.bridged
    # nor with an ending that makes another word of it: to collect is no collective (RCCL)
    assert "collect" not in analyse("how many counters can the SQ block collect in one pass", None).bridged
    # the bridge's own word still widens the question ("scratch" as people say it for the LDS)
    assert "lds" in analyse("on-chip shared scratch size per block", None).bridged.get("scratch", ())


def test_the_pages_concepts_are_found_by_the_plain_and_the_other_vendor_s_words(store):
    """The bridge holds, page by page, the names an engineer from either vendor uses for each concept
    the pages cover; each of these questions found another page first without the entry."""
    # NVIDIA's names for the copy that skips registers (TMA, cp.async) and the transposed read (ldmatrix)
    hits = docs_search(store, "is there a TMA-style bulk copy into shared memory on this GPU, and how many bytes per thread?", "gfx950", 3).hits
    assert hits[0].id.startswith("global-to-lds/forms-per-target"), [h.id for h in hits]
    hits = docs_search(store, "what does the shared-memory read that hands data back transposed, like ldmatrix, look like here?", "gfx950", 3).hits
    # the instruction's entry, or the LDS page's passage on what gfx950 changes, which names the four transposed reads
    assert hits[0].id in ("isa-gfx950/ds-read-b64-tr-b16", "lds/what-gfx950-changes"), [h.id for h in hits]
    assert "ds_read_b64_tr_b16" in docs_read(store, hits[0].id, 1, BUDGET).text
    # a peak that counts skipped zeros is the datasheet's rate with sparsity
    hits = docs_search(store, "is the spec sheet's tensor throughput counting structured zeros?", "sm_90", 3).hits
    assert hits[0].id == "roofline/where-sources-disagree", [h.id for h in hits]
    # the entries that map AMD's terms to NVIDIA's were left out: a question with no target named is
    # served by both vendors' entries, and they lifted the ncu pages over AMD's own answer
    assert "long_scoreboard" not in str(analyse("which operations does lgkmcnt count", None).bridged)
    # a plain word the documents use themselves for the thing ("marketing figures") is not bridged
    assert "marketing" not in analyse("the whole-package marketing number", "gfx90a").bridged


def test_a_question_how_a_figure_is_worked_out_finds_the_formula(store):
    """ "How do I compute X from the counters" is answered by the passage that writes X's equation, over
    the bottleneck signatures that name X and its counters."""
    assert analyse("How do I compute mean occupancy per CU from rocprofv3 counters?", None).formula
    assert analyse("how is FETCH_SIZE derived from TCC_EA0_RDREQ", None).formula
    assert not analyse("how many compute units does an MI300X have", None).formula
    hits = docs_search(store, "How do I compute mean occupancy per CU from rocprofv3 counters?", None, 3).hits
    assert hits[0].section == "rocprofv3-counters/derived-metrics", [h.id for h in hits]
    assert "MeanOccupancyPerCU = accumulated SQ_LEVEL_WAVES" in docs_read(store, hits[0].id, 1, BUDGET).text


def test_an_aside_that_says_what_is_not_meant_holds_no_terms():
    assert "matrix" not in analyse("FP64 vector (non-matrix) peak TFLOPS of MI300X", None).terms
    assert "bank" not in analyse("LDS stalls from address conflicts (not bank conflicts)", None).terms


def test_the_asked_quantity_and_the_quantity_a_row_gives():
    assert asked_quantities("fastest mi300x can stream from device memory") == {"bandwidth"}
    assert asked_quantities("h100 pcie: how many sms and what max boost clock?") == {"clock", "count"}
    assert asked_quantities("how many cycles does v_mfma_f32_32x32x8_bf16 take") == {"latency"}
    # a figure the question states is its context, and a block size counts threads
    assert asked_quantities("occupancy with 64 kb lds per workgroup") == set()
    assert asked_quantities("partially filled waves because the block size is odd") == set()
    assert given_quantities("row", "figure: hbm_bandwidth_bytes_per_s; value: 5.3 TB/s; source: x")[0] == {"bandwidth"}
    assert given_quantities("row", "figure: hbm_bytes; value: 192 GiB (206,158,430,208 B); note: y")[0] == {"size"}
    assert given_quantities("row", "figure: xcds; value: 8 XCD; source: z") == ({"count"}, {"xcd", "8"})
    assert "rate" in given_quantities("row", "Computation and Data Type: Matrix FP8; FLOPS/CLOCK/CU: 4096; Peak TFLOPS: 2614.9")[0]
    assert "size" in given_quantities("row", "Model: MI300A; L2 Cache (MiB): 4; Compute Units: 228 (38 per XCD)")[0]


def test_the_row_of_the_asked_quantity_rises_over_its_neighbours(store):
    ids = [h.id for h in docs_search(store, "fastest MI300X can stream from device memory", None, 8).hits]
    # the bandwidth row, then (if at all: the bandwidth row's page shows the product's other rows) the size row
    assert "hardware/mi300x/memory#2" in ids and ids.index("hardware/mi300x/memory#2") < (ids + ["hardware/mi300x/memory#1"]).index(
        "hardware/mi300x/memory#1"
    ), ids
    hits = docs_search(store, "how many chiplets does an MI355X have", None, 3).hits
    assert any("XCD" in h.snippet and "8" in h.snippet for h in hits), [h.snippet for h in hits]


def test_a_comparison_of_products_finds_the_passage_that_names_them_all(store):
    """Three products compared: a row about one answers a third of it; the map's line that gives all
    three (each blind set but one asked it) comes within three, not below every product's own row."""
    hits = docs_search(store, "BF16 dense peak MI350X vs MI300X vs H100", None, 3).hits
    assert "map#5" in [h.id for h in hits], [h.id for h in hits]
    page = docs_read(store, "map#5", 1, BUDGET).text
    assert all(f in page for f in ("MI350X 2.31 PF", "MI300X 1.31 PF", "H100 0.99 PF")), page


def test_of_two_products_named_the_first_is_the_subject(store):
    """ "Is the H200's bandwidth higher than the H100 SXM's": the H200's row first, the yardstick's after
    (both named alike, the H100 row ranked first); a third product named makes a comparison instead."""
    assert analyse("is the H200 memory bandwidth higher than the H100 SXM one?", None).subject == "h200"
    assert analyse("BF16 dense peak MI350X vs MI300X vs H100", None).subject == ""
    ids = [h.id for h in docs_search(store, "is the H200 memory bandwidth higher than the H100 SXM one?", None, 3).hits]
    assert ids[:2] == ["hardware/h200/memory#2", "hardware/h100-sxm/memory#2"], ids


def test_a_page_for_another_gpu_does_not_outrank_the_named_target(store):
    """The issue's case: the H100 occupancy rule ranked first for an MI300X question."""
    hits = docs_search(store, "occupancy with 64 KB LDS per workgroup on MI300X", None, 3).hits
    assert all("sm_90" not in h.arch.split(",") for h in hits), [(h.id, h.arch) for h in hits]
    assert "gfx942" in hits[0].arch.split(","), hits[0]


def test_a_product_row_opens_with_the_product_s_other_figures(store):
    """A product question often asks two figures at once ("how many SMs and what boost clock"); the
    row a hit opens at comes with the rest of the product's page, and the page names its PCI ids."""
    hit = docs_search(store, "H100 PCIe: how many SMs and what max boost clock?", None, 1).hits[0]
    assert hit.id.startswith("hardware/h100-pcie/"), hit
    page = docs_read(store, hit.id, 1, BUDGET)
    assert "114 SM" in page.text and "1,755 MHz" in page.text, page.text
    assert len(page.render().encode()) <= BUDGET
    page = docs_read(store, "hardware/mi300x", 1, BUDGET)
    assert "PCI device ids 0x74a1, 0x74b5" in page.text and "hbm_bandwidth_bytes_per_s" in page.text


async def test_the_workspace_s_target_and_product_come_first(tmp_path):
    """In a workspace whose kernel-mcp.toml targets gfx950 and the MI355X, a question that names no
    target is about them; one that names another target is about that one."""
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nproduct = "MI355X"\n')
    async with Client(build_server(tmp_path)) as client:
        answer = (await client.call_tool("docs_search", {"query": "peak bf16 TFLOPS", "limit": 3})).structured_content
        assert answer["hits"][0]["id"].startswith("hardware/mi355x/peak"), answer["hits"]
        answer = (await client.call_tool("docs_search", {"query": "MFMA bf16 throughput", "limit": 3})).structured_content
        assert all("gfx950" in h["arch"].split(",") for h in answer["hits"]), answer["hits"]
        answer = (await client.call_tool("docs_search", {"query": "peak bf16 TFLOPS of the MI300X", "limit": 3})).structured_content
        assert answer["hits"][0]["id"].startswith("hardware/mi300x/peak"), answer["hits"]
    other = tmp_path / "plain"
    other.mkdir()
    (other / "kernel-mcp.toml").write_text("")  # no [target]: the schema's default arch is no statement about the workspace
    async with Client(build_server(other)) as client:
        answer = (await client.call_tool("docs_search", {"query": "peak bf16 TFLOPS", "limit": 3})).structured_content
        assert not answer["hits"][0]["id"].startswith("hardware/mi355x/"), answer["hits"]


def test_reads_bunched_ahead_of_the_math_find_the_interleaving_pattern(store):
    """Asked in plain words (the compiler clumps the reads ahead of the arithmetic; make them alternate),
    the answer is the scheduling page's interleaving pattern with sched_group_barrier."""
    for question in (
        "the compiler clumps all my shared-memory reads ahead of the arithmetic; how do I make the two alternate?",
        "how do I stop the compiler from bunching all the reads at the top of my loop",
        "can i make the compiler spread the shared-memory loads in between the math instead of doing all the loads first and then all the compute",
    ):
        pages = shown(store, question, None)
        assert "sched_group_barrier(0x100, 1, 0)" in next(iter(pages.values())), (question, list(pages))


def test_a_turbo_clock_is_the_boost_clock(store):
    """A CPU programmer's "turbo" is the GPU's boost (peak engine) clock: the product's clock row, not
    the determinism mode's 1900 MHz cap (first without the bridge's entry) or nothing at all."""
    for question, row, figure in (
        ("max turbo clock of the MI300X", "hardware/mi300x/clocks", "2.1 GHz"),
        ("what does the H100 turbo to", "hardware/h100-sxm/clocks", "1.98 GHz"),
    ):
        hits = docs_search(store, question, None, 3).hits
        assert any(h.id.startswith(row) and figure in docs_read(store, h.id, 1, BUDGET).text for h in hits), (question, [h.id for h in hits])


def test_a_vendor_named_as_the_yardstick_of_an_analogy_is_not_the_one_asked_about(store):
    """ "like NVIDIA's", "the equivalent of ncu's": a CUDA programmer porting to AMD names NVIDIA as the
    yardstick; the question is about AMD's GPUs, not the H100's pages, which came first before."""
    assert named_vendors("is there a runtime switch for kernel parameters, like NVIDIA's constant bank?") == {"amd"}
    assert named_vendors("is there an AMD equivalent of NVIDIA's ldmatrix") == {"amd"}
    assert named_vendors("ncu shows long scoreboard stalls") == {"nvidia"}
    assert named_vendors("On the NVIDIA side my warps stall on shared memory") == {"nvidia"}
    assert named_vendors("AMD's LDS against NVIDIA's shared memory") == {"amd", "nvidia"}
    hits = docs_search(store, "how do I collect specific hardware counters per kernel launch with rocprofv3, like ncu --metrics?", None, 3).hits
    assert "rocprofv3 --pmc A B C -- ./app" in docs_read(store, hits[0].id, 1, BUDGET).text, [h.id for h in hits]


def test_a_cpu_and_accelerator_package_is_the_mi300a(rocm_store):
    """The APU described rather than named ("combined CPU-and-accelerator package, where the x86
    cores and the GPU share one memory pool") finds the MI300A's table among the ROCm documents,
    where nothing in 10 did: the MI300 overview and the CPU C-states came first."""
    question = "For AMD's combined CPU-and-accelerator package, where the x86 cores and the GPU share one memory pool, how many accelerator dies and compute blocks does it ship with?"
    hits = docs_search(rocm_store, question, None, 3).hits
    assert any("6 XCDs (228 CUs)" in docs_read(rocm_store, h.id, 1, BUDGET).text for h in hits), [h.id for h in hits]


def test_a_card_for_a_server_slot_is_the_pcie_part(store):
    """ "The Hopper card that plugs into a normal server slot ... against the mezzanine version" is the
    H100 PCIe against the SXM module: its SM count and clock, where the H200's clocks came first."""
    question = (
        "The version of the Hopper card that plugs into a normal server slot has some of its processors switched off; "
        "how many are enabled and what is its top frequency compared with the mezzanine version?"
    )
    hits = docs_search(store, question, "sm_90", 3).hits
    assert hits[0].id.startswith("hardware/h100-pcie/"), [h.id for h in hits]


def test_a_constant_offset_or_displacement_is_the_immediate_offset(rocm_store):
    """ "The constant offset in the load instruction seems to max out", "the constant displacement
    field of a scratchpad load": the DS instruction's 16-bit immediate offset, which no search found
    in 3 ("constant" alone is the bridge's word for scalar loads)."""
    for question in (
        "how do i read shared memory past the first 64KB on mi355x? the constant offset in the load instruction seems to max out",
        "Can the constant displacement field of a scratchpad load reach anywhere in the full 160K buffer, or do addresses past some point need a register?",
    ):
        hits = docs_search(rocm_store, question, "gfx950", 3).hits
        assert any("must be reached through the address VGPR" in docs_read(rocm_store, h.id, 1, BUDGET).text for h in hits), (question, [h.id for h in hits])


def test_threads_marked_more_important_are_the_wave_priority(rocm_store):
    """ "Mark one group of threads as more important so it hogs the matrix unit": s_setprio's priority,
    which nothing in 10 found (the ROCm glossary's LDS and wavefront pages came first)."""
    hits = docs_search(rocm_store, "can I mark one group of threads as more important so it hogs the matrix unit while the others do loads", None, 3).hits
    assert any("adds to its base priority" in docs_read(rocm_store, h.id, 1, BUDGET).text for h in hits), [h.id for h in hits]


def test_a_new_programmer_s_vector_variables_are_vgprs(rocm_store):
    """ "How many vector variables can one thread use on mi355x, I read 512 somewhere": the arch-VGPR
    limit (256; 512 is the arch+AGPR total), which was 5th and 7th before the entry."""
    question = "how many vector variables can one thread use on mi355x, I read 512 somewhere but the compiler complains"
    hits = docs_search(rocm_store, question, "gfx950", 3).hits
    assert any("the assembler rejects v511" in docs_read(rocm_store, h.id, 1, BUDGET).text for h in hits), [h.id for h in hits]


def test_a_fence_no_instruction_crosses_is_the_scheduling_barrier(rocm_store):
    """ "A hard fence so the compiler can't move any instruction across a given line": sched_barrier
    with mask 0, which nothing in 10 found (the glossary's LLVM target name came first)."""
    for question in (
        "I want a hard fence in my kernel so the compiler can't move any instruction across a given line, what argument does that take?",
        "stop the compiler from moving instructions across a point in my loop",
    ):
        hits = docs_search(rocm_store, question, None, 3).hits
        assert any("lets nothing cross" in docs_read(rocm_store, h.id, 1, BUDGET).text for h in hits), (question, [h.id for h in hits])


def test_of_two_products_described_the_first_described_is_the_subject():
    """Neither named, both described ("the 141 GB Hopper card ... than the 80 GB one", "NVIDIA's
    refreshed Hopper ... over the 80GB one"): the subject is the one described first. It was the
    alphabetically first model number (h100), which put the yardstick's rows above the subject's."""
    for question in (
        "the 141 GB Hopper card - how fast is its DRAM, and is the compute any different from the 80 GB one?",
        "how much more memory capacity and speed does NVIDIA's refreshed Hopper give over the 80GB one?",
    ):
        query = analyse(question, None)
        assert query is not None and query.described == ("h200", "h100") and query.subject == "h200", (question, query and query.described)


def test_a_refreshed_board_is_the_refresh_product(rocm_store):
    """ "The refreshed 300-series AMD board with the bigger memory" is the MI325X (nothing in 10 before)."""
    hits = docs_search(rocm_store, "the refreshed 300-series AMD board with the bigger memory - how much memory and how fast is it?", "gfx942", 3).hits
    assert any(h.id.startswith("hardware/mi325x/") for h in hits), [h.id for h in hits]


def test_a_metal_or_sycl_developer_s_words_are_the_amd_terms(rocm_store):
    """Metal's threadgroup memory and threadgroup, SYCL's shared local memory, sub-group and Xe-core
    (Apple 'Creating threads and threadgroups'; SYCLomatic's CUDA-to-SYCL term mapping) are the LDS,
    the work-group, the wave and the compute unit. Asked for the byte cap on threadgroup memory on a
    gfx950 target, the LDS row with the compiler's limit is among the first 3, where it was fifth."""
    for words, term in (
        ("threadgroup memory", "lds"),
        ("shared local memory", "lds"),
        ("threadgroup", "work-group"),
        ("sub-group", "wavefront"),
        ("Xe-cores", "compute unit"),
    ):
        bridged = analyse(f"how big is the {words}", "gfx950").bridged
        assert term in {t for found in bridged.values() for t in found}, (words, bridged)
    question = "what's the exact byte cap on threadgroup memory for one threadgroup before the compiler refuses to build the shader?"
    pages = shown(rocm_store, question, "gfx950")
    assert any("local memory exceeds limit (163840)" in page for page in pages.values()), list(pages)


def test_whether_the_mi250x_does_fp8_or_tf32_matrix_math_is_answered_in_plain_words(rocm_store):
    """The gfx90a page says in one sentence that the target has no TF32 (xf32) and no FP8 matrix
    instructions. Before, it said so only inside a list of what the assembler rejects, and no page in
    the first 3 said it; the question recurred in eight blind sets."""
    for question, arch in (
        ("does the MI250X support fp8 or tf32 matrix multiply?", "gfx90a"),
        ("can my MI250X run 8-bit float matmuls?", None),
        ("is there FP8 MFMA on gfx90a", None),
    ):
        pages = shown(rocm_store, question, arch)
        assert any("no TF32 (xf32) and no FP8 matrix instructions" in page for page in pages.values()), (question, list(pages))


def test_which_mi300x_die_runs_slowest_is_on_the_first_page(rocm_store):
    """The compute-units page told to use the slowest XCD for efficiency figures but not which one
    it is; the tuning guide names XCD0 the fastest and XCD7 the slowest, and now the page quotes it.
    Asked in plain words, no hit in 3 named XCD7 before; six blind questions asked it."""
    pages = shown(rocm_store, "do all the dies of an MI300X run at the same clock? which one is slowest?", None)
    assert "XCD7 has the lowest" in next(iter(pages.values())), list(pages)


def test_launch_parameters_are_the_kernel_arguments(rocm_store):
    """ "Launch parameters", "launch arguments", "dispatch parameters" are the kernel arguments,
    which AMD's documents call kernargs: asked how to keep them in device memory, the page with
    HIP_FORCE_DEV_KERNARG comes first, where it was third or not in the first 3."""
    for question in (
        "is there a setting that keeps launch parameters in device memory to cut launch latency?",
        "how do I make the launch arguments live in GPU memory so small kernels start faster",
        "dispatch parameters fetched from host memory slow my tiny kernels; fix?",
    ):
        pages = shown(rocm_store, question, None)
        assert "HIP_FORCE_DEV_KERNARG" in next(iter(pages.values())), (question, list(pages))


def test_favouring_a_wave_is_its_priority_and_the_completion_counter_is_vmcnt(rocm_store):
    """ "Favour one wave over the others" is s_setprio's wave priority (no hit in 3 named it before);
    "the completion counter" of outstanding loads is the wait counter (one hit in 3 gave its width
    before, through the question's other words; now the waitcnt pages do too); "values that share
    one multiplier" share a block scale."""
    pages = shown(rocm_store, "can a wave ask the hardware to favour it over the other waves while it issues matrix math?", None)
    assert any("s_setprio" in page for page in pages.values()), list(pages)
    pages = shown(rocm_store, "how many loads can be pending on the completion counter before a wave stalls?", None)
    assert sum("6 bits" in page for page in pages.values()) >= 2, list(pages)
    assert "scale" in str(analyse("how many values share one multiplier in MXFP4", "gfx950").bridged)


def test_webgpu_s_words_are_the_amd_terms(rocm_store):
    """WGSL's workgroupBarrier is the workgroup barrier (s_barrier), its invocations are threads
    (work-items), its workgroup memory the LDS, a storage buffer device memory (W3C WGSL). Asked
    whether the barrier also waits for memory, the barrier's page comes first, where no hit in 3
    said it."""
    for words, term in (("invocations", "work-item"), ("workgroup memory", "lds"), ("storage buffer", "hbm")):
        bridged = analyse(f"how big is the {words}", "gfx942").bridged
        assert term in {t for found in bridged.values() for t in found}, (words, bridged)
    question = "does the AMD counterpart of workgroupBarrier() also wait for earlier memory traffic to finish, or does it only line up the subgroups?"
    pages = shown(rocm_store, question, None)
    assert "does not wait for memory" in next(iter(pages.values())), list(pages)


def test_what_a_workgroup_can_claim_is_no_claim_a_source_makes(store):
    """ "Claim" in a question is mostly a verb (how much LDS a workgroup can claim). The one passage
    of the index that holds the word uses the noun (record the measurement next to the claim it
    settles), and as the question's rarest word it put that passage among the first 3 of every such
    question (2nd here, 1st for "threadgroup memory ... claim" over the shipped pages)."""
    assert "claim" not in analyse("how much LDS can one workgroup claim on MI300X", None).terms
    pages = shown(store, "how much LDS can one workgroup claim on MI300X", None)
    assert "source-conflicts/how-to-settle-one" not in pages and any(i.startswith(("hardware/gfx942/lds", "lds")) for i in pages), list(pages)
