"""Questions a kernel engineer asks the documentation index, each with the words that prove the answer.

Over the shipped docs_index/ plus the public ROCm documents of the shared docs folder (after
`kernel-mcp docs ingest`). A question is answered at rank k when the first page that `docs_read`
shows for the k-th `docs_search` hit holds every proof word (case-insensitive, whitespace folded;
"a|b" accepts either). The set was written before the ranking was changed and is not consulted by
it; benchmarks/docs_answers.py prints hit@1 and hit@3, tests/test_docs_retrieval.py holds the floor.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernel_mcp.docs import DocsStore, docs_read, docs_search

BUDGET = 4096  # the server's default response budget: what an agent sees of one page


@dataclass(frozen=True)
class Question:
    query: str
    proof: tuple[str, ...]
    arch: str | None = None


def q(query: str, *proof: str, arch: str | None = None) -> Question:
    return Question(query, proof, arch)


QUESTIONS: list[Question] = [
    # ---- the shipped index: hardware figures, rules, instructions
    q("What is the LDS size per CU on gfx950", "163840|160 KiB"),
    q("LDS allocation granularity on MI300X", "512 B|512-byte"),
    q("how many LDS banks and how wide is each", "32 banks", "4 bytes"),
    q("VGPR allocation granule on CDNA3", "granule", "8 registers|granules of 8"),
    q("maximum resident waves per SIMD", "8 waves|8 per SIMD|max 8"),
    q("occupancy of a kernel using 155 VGPRs on MI350X", "155", "512/160"),
    q("maximum number of SGPRs a wave can use", "102"),
    q("How many compute units does the MI355X have", "256"),
    q("active CUs per XCD on gfx950", "per XCD", "32"),
    q("s_waitcnt vmcnt maximum value", "0-63"),
    q("which operations does lgkmcnt count", "lgkmcnt", "scalar memory|scalar loads"),
    q("sched_group_barrier mask value for MFMA", "0x8", "MFMA"),
    q("MFMA bf16 instructions on CDNA4", "v_mfma_f32_16x16x32_bf16"),
    q("cycles of v_mfma_f32_32x32x8_bf16 on gfx942", "32 cycles"),
    q("scaled MFMA for MX formats on MI355X", "v_mfma_scale_f32", "scale"),
    q("HBM bandwidth of the MI300X", "5.3 TB"),
    q("L2 cache size per XCD", "4 MiB per XCD|4 MB|4 per XCD|4096 KB"),
    q("Infinity Cache size on MI350X", "Infinity Cache|L3", "256"),
    q("roofline ridge point for bf16 on gfx950", "288"),
    q("shared memory per SM on H100", "228 KiB|233472|228 KB"),
    q("what does the long_scoreboard stall reason mean", "long_scoreboard", "L1TEX"),
    q("LDS size of an MI250X GCD", "64 KiB|LDS (KiB): 64"),
    q("bytes per lane of direct global-to-LDS loads on gfx950", "12 and 16"),
    q("LDS transpose read instruction for MFMA operands", "ds_read_b64_tr_b16"),
    q("is the xf32 TF32 MFMA supported on gfx950", "xf32", "rejected|gone"),
    q("how to compute MFMA utilization", "SQ_VALU_MFMA_BUSY_CYCLES"),
    q("L2 cache hit rate formula", "TCC_HIT", "TCC_MISS"),
    q("s_setprio priority range", "0..3"),
    q("FLOPs from the MFMA MOPS counters", "MOPS", "512"),
    q("how many counters per pass can the SQ block collect", "SQ 8"),
    q("occupancy rule on Hopper registers per warp", "regs_per_warp", "256"),
    q("HBM bandwidth per MI250X GCD", "1.6384"),
    q("LDS size", "163840|160 KiB", arch="gfx950"),
    q("wave size", "64", arch="gfx942"),
    q("counter for matrix unit busy cycles", "SQ_VALU_MFMA_BUSY_CYCLES", arch="gfx942"),
    # ---- the ingested ROCm documents: counters, specifications, tuning guides
    q("SQ_INSTS_MFMA counter", "SQ_INSTS_MFMA", "matrix FMA instructions issued|MFMA instructions"),
    q("which counter counts L2 cache hits", "TCC_HIT", "L2 cache hits|L2 hits"),
    q("SQ_WAVES counter definition", "SQ_WAVES", "dispatched"),
    q("counter for cycles LDS is stalled by bank conflicts", "SQ_LDS_BANK_CONFLICT"),
    q("vector L1 cache total accesses counter", "TCP_TOTAL_CACHE_ACCESSES"),
    q("how to compute LDS latency with level counters", "SQ_ACCUM_PREV_HIRES", "SQ_INSTS_LDS"),
    q("ALUStalledByLDS derived metric", "ALUStalledByLDS", "input queue"),
    q("metric for thread divergence in a wave", "VALUUtilization"),
    q("counter for L2 read requests to HBM", "RDREQ_DRAM"),
    q("How many CUs per XCD on MI300X", "38"),
    q("MI300X peak BF16 matrix TFLOPS", "1307"),
    q("FP8 matrix FLOPS per clock per CU on MI300X", "4096"),
    q("compute units per GCD on MI250X", "110"),
    q("L2 cache size of MI300A", "MI300A", "24"),
    q("wavefront size of the MI100", "MI100", "64"),
    q("VGPR file size on MI300X", "VGPR File", "512"),
    q("disable NUMA auto-balancing", "numa_balancing"),
    q("IOMMU pass-through kernel parameter", "iommu=pt"),
    q("how does waves_per_eu reduce VGPR usage for occupancy", "waves_per_eu", "176"),
    q("num_stages setting for flash attention kernels in Triton", "num_stages", "two GEMMs fused"),
    q("minimum number of workgroups in a grid for MI300X", "1024"),
    q("clock speed differences between XCDs", "3% to 10%|3-10%"),
    q("HIP_FORCE_DEV_KERNARG", "HIP_FORCE_DEV_KERNARG=1"),
    q("how to enable PyTorch TunableOp", "PYTORCH_TUNABLEOP_ENABLED"),
    q("matrix_instr_nonkdim MFMA size", "matrix_instr_nonkdim = 16|matrix_instr_nonkdim = 32"),
    q("GRBM_GUI_ACTIVE", "GPU active cycles|GPU busy cycles"),
    q("counter for wavefronts dispatched by the SPI", "SPI_CSN_WAVE"),
    q("LLVM target name for MI210", "MI210", "gfx90a"),
    q("instruction cache size shared between CUs", "64 per 2 CUs|64 KiB per 2 CUs"),
    q("Infinity Fabric links per MI300X GPU", "seven"),
    q("unit of SQ_INSTS_VALU_MFMA_MOPS_BF16", "SQ_INSTS_VALU_MFMA_MOPS_BF16", "512"),
    q("average L2 read latency to the efficiency arbiter", "RDREQ_LEVEL"),
    q("quad-cycles waves wait for any instruction to issue", "SQ_WAIT_INST_ANY"),
]


def _folded(text: str) -> str:
    return " ".join(text.split()).lower()


def proves(text: str, proof: tuple[str, ...]) -> bool:
    page = _folded(text)
    return all(any(_folded(alt) in page for alt in word.split("|")) for word in proof)


def answer_rank(store: DocsStore, question: Question, depth: int = 3) -> int | None:
    """1-based rank of the first hit whose first page proves the answer; None when none of `depth` does."""
    hits = docs_search(store, question.query, question.arch, depth).hits
    for rank, hit in enumerate(hits[:depth], start=1):
        if proves(docs_read(store, hit.id, 1, BUDGET).render(), question.proof):
            return rank
    return None


def score(store: DocsStore, questions: list[Question] = QUESTIONS) -> tuple[float, float, list[tuple[Question, int | None]]]:
    """(hit@1, hit@3, each question with its rank)."""
    ranks = [(question, answer_rank(store, question)) for question in questions]
    at1 = sum(1 for _q, r in ranks if r == 1) / len(ranks)
    at3 = sum(1 for _q, r in ranks if r is not None) / len(ranks)
    return at1, at3, ranks
