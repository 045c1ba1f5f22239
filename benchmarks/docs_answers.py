"""Does the passage that answers the question come back? hit@1 and hit@3 over tests/docs_question_set.py.

    python benchmarks/docs_answers.py [--docs ../shared/docs/rocm] [--misses]

Builds a fresh index (the shipped docs_index/ plus the public ROCm documents, ingested as a user
would), asks every question through docs_search, and opens each of the top 3 hits with docs_read
at the server's default budget: a question counts at rank k when the k-th hit's first page holds
every proof word. Target: hit@3 >= 0.95.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))  # this checkout's kernel_mcp, not whichever one the environment installed

from docs_question_set import BLIND_KINDS, SETS, score  # noqa: E402
from docs_search import ROCM_DOCS, docs_folder  # noqa: E402

from kernel_mcp.docs import ingest, open_store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=docs_folder, default=ROCM_DOCS)
    parser.add_argument("--misses", action="store_true", help="list the questions not answered at rank 1")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / ".kernel-mcp")
        report = ingest(store, [args.docs])
        print(f"index: {report.sources_total} sources, {report.sections_total} sections, {report.passages_total} passages")
        results = [(name, questions, *score(store, questions)) for name, questions in SETS.items()]
    for name, questions, at1, at3, ranks in results:
        print(f"{name}: {len(questions)}  hit@1 {at1:.2f}  hit@3 {at3:.2f}  hit@3 >= 0.95: {'met' if at3 >= 0.95 else 'MISSED'}")
        kinds = sorted({BLIND_KINDS[q.query] for q, _ in ranks if q.query in BLIND_KINDS})
        for kind in kinds:  # a set written blind: by kind of question too
            of_kind = [r for q, r in ranks if BLIND_KINDS.get(q.query) == kind]
            print(f"  {kind}: {sum(r is not None for r in of_kind)} of {len(of_kind)} within 3, {sum(r == 1 for r in of_kind)} first")
        if args.misses:
            for question, rank in ranks:
                if rank != 1:
                    print(f"  rank {rank or '-'}: {question.query!r}" + (f" (arch {question.arch})" if question.arch else ""))


if __name__ == "__main__":
    main()
