"""Ingesting AMD's machine-readable ISA XML: seconds per file, and docs_search latency afterwards.

    python benchmarks/isa_xml_ingest.py [--xml amdgpu_isa_cdna3.xml amdgpu_isa_cdna4.xml] [--rounds 10]

Without --xml, two files are generated in the released schema at the released size
(tests/isa_xml_builder.py: CDNA 3 with 1,150 instructions, CDNA 4 with 1,240, four encodings
each, pretty-printed: about 9 MB apiece). Each file is ingested with `kernel-mcp docs ingest`'s
function into a fresh workspace index (the shipped pages already in it); the time is the ingest
call alone. Then docs_search runs the benchmarks/docs_search.py queries over the index holding
both ISAs and the ROCm documents. Target: under a minute per file; docs_search p95 under 20 ms.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

import isa_xml_builder  # noqa: E402
from docs_search import QUERIES, ROCM_DOCS, docs_folder, pct  # noqa: E402

from kernel_mcp.arch_registry import DEFAULT_AMD_ARCH  # noqa: E402
from kernel_mcp.docs import ingest, isa_lookup, open_store  # noqa: E402


def generated(folder: Path) -> list[Path]:
    b = isa_xml_builder
    return [
        b.build(folder / "amdgpu_isa_cdna3.xml", "AMD CDNA 3", b.COMMON + b.CDNA3_ONLY, filler=1150 - 5, variants=4),
        b.build(folder / "amdgpu_isa_cdna4.xml", "AMD CDNA 4", b.COMMON + b.CDNA4_ONLY, filler=1240 - 6, variants=4),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--xml", nargs="*", help="real ISA XML files (default: generated ones of the released size)")
    parser.add_argument("--docs", type=docs_folder, default=ROCM_DOCS)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = [Path(x) for x in args.xml] if args.xml else generated(folder)
        store = open_store(folder / ".kernel-mcp")
        print(f"{'file':<24} {'MB':>6} {'seconds':>8} {'entries':>8}")
        for path in files:
            before = store.stats()["sections"]
            t = time.perf_counter()
            report = ingest(store, [path])
            seconds = time.perf_counter() - t
            status = report.results[0]["status"]
            print(f"{path.name:<24} {path.stat().st_size / 1e6:>6.1f} {seconds:>8.2f} {store.stats()['sections'] - before:>8}  {status}")
        print(f"peak memory of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        ingest(store, [args.docs])
        stats = store.stats()
        print(f"index: {stats['sources']} sources, {stats['sections']} sections, {stats['passages']} passages")
        samples = []
        for _ in range(args.rounds):
            for q in QUERIES:
                t = time.perf_counter()
                store.search(q, None, 8)
                samples.append(time.perf_counter() - t)
        print(f"store query over that index: p50 {pct(samples, 0.5) * 1e3:.2f} ms, p95 {pct(samples, 0.95) * 1e3:.2f} ms ({len(samples)} queries)")
        t = time.perf_counter()
        answer = isa_lookup(store, "v_mfma_f32_16x16x16_bf16", DEFAULT_AMD_ARCH, 4096)
        print(f"isa_lookup: {(time.perf_counter() - t) * 1e3:.1f} ms, exists on {', '.join(answer.exists_on)}")


if __name__ == "__main__":
    main()
