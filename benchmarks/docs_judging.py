"""The docs answers as a reader judges them, beside the grader's figure (issue 33).

    python benchmarks/docs_judging.py prepare --out DIR [--docs ../shared/docs/rocm] [--depth 3] SET.json ...
    python benchmarks/docs_judging.py score DIR

The grader (tests/docs_question_set.answer_rank) counts a question answered when the first page
docs_read shows for one of the top 3 hits holds the author's proof words. A page that states the
same fact in other words or units ("2307 TF" for "2.31 PF") counts as a miss. This measures how
often that happens: `prepare` writes, for every question of the given blind sets (tests/data
files, which name the file each proof was taken from), the three pages a user would read, the
author's proof words and the lines of the source around them, plus decoys (another question's
pages, to see how often a judge says yes where the pages cannot answer), shuffled, in files of 60
items, with JUDGES.md, the instructions a judge reads. The judges write DIR/verdict-N.json for
DIR/items-N.json without seeing which items are decoys or what the grader said; `score` then
prints both figures, by set and by kind. A judge should have seen neither the ranker nor the
grader's result. With --depth 1 the judges see the first hit's page alone: hit@1 as read.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))  # this checkout's kernel_mcp, not whichever one the environment installed

from docs_question_set import BUDGET, proves  # noqa: E402
from docs_search import ROCM_DOCS, docs_folder  # noqa: E402

from kernel_mcp.docs import docs_read, docs_search, ingest, open_store  # noqa: E402

PER_FILE = 60
DECOYS = 0.2  # decoys per question
JUDGES = """You are judging a documentation search tool's answers. Read only the items file you were given
(item by item; it is large). Do not read any other file, do not look at any code, and do not run
any search tool.

Each item has: a question (and "target", the GPU target the asker works on, or null), a
"reference_answer" (the key words and an excerpt of the source document that answers the
question), and "pages": the pages a search tool showed first for the question (its first three
hits' pages, or its first hit's page alone).

For each item decide: does at least one of the pages give the reader the answer to the
question, i.e. state the same fact as the reference answer, possibly in other words, other units
or another format (e.g. "2307 TF" and "2.31 PF" are the same fact; "32 MiB" and "33,554,432 B"
too)? Be strict: the reader must be able to answer the question from those pages alone. A page
that is only on the topic, or states a different fact, or gives the figure for another
product/target than the question asks about, is "no". If the question asks two things, the pages
must give both (they may come from different pages).

Write your verdicts as JSON to verdict-N.json beside items-N.json: a list of {"item": N,
"verdict": "yes" or "no", "page": the page number that answers (or null), "quote": a verbatim
excerpt of at most 200 characters from that page that states the fact (or ""), "why": one short
sentence}. Cover every item in the file.
"""


def _folded(text: str) -> str:
    return " ".join(text.split()).lower()


def source_lines(path: Path, proof: list[str]) -> str:
    """The lines of the answering file around its first proof word: what the author read."""
    lines = path.read_text(errors="replace").splitlines()
    first = _folded(proof[0].split("|")[0])[:25]
    for i in range(len(lines)):
        if first in _folded(" ".join(lines[i : i + 3])):
            return "\n".join(lines[max(0, i - 3) : i + 5])[:1500]
    return "\n".join(lines[:12])[:800]


def answering_file(name: str, docs: Path) -> Path:
    """A question's "file": docs_index/... in this checkout, shared/docs/rocm/... in --docs."""
    prefix = "shared/docs/rocm/"
    return docs / name[len(prefix) :] if name.startswith(prefix) else REPO / name


def prepare(out: Path, docs: Path, set_files: list[Path], depth: int = 3) -> None:
    rng = random.Random(1128)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / ".kernel-mcp")
        ingest(store, [docs])
        for set_file in set_files:
            for item in json.loads(set_file.read_text())["questions"]:
                pages = [docs_read(store, h.id, 1, BUDGET).render() for h in docs_search(store, item["query"], item["arch"], depth).hits]
                # the grader's rank (answer_rank) read off the same pages, not searched and read again
                rank = next((i for i, page in enumerate(pages, start=1) if proves(page, tuple(item["proof"]))), None)
                rows.append((set_file.stem, item, rank, pages))
    items = [("own", row, row[3]) for row in rows]
    for row in rng.sample(rows, round(DECOYS * len(rows))):
        other = rng.choice([r for r in rows if r is not row and r[0] == row[0]])
        items.append(("decoy", row, other[3]))
    rng.shuffle(items)
    out.mkdir(parents=True, exist_ok=True)
    key, shown = {}, []
    for n, (kind, (set_name, item, rank, _own), pages) in enumerate(items, start=1):
        key[n] = {"kind": kind, "set": set_name, "query": item["query"], "question_kind": item["kind"], "graded_rank": rank, "depth": depth}
        reference = {"key_words": item["proof"], "from_the_source": source_lines(answering_file(item["file"], docs), item["proof"])}
        pages_shown = [{"page": i, "text": text} for i, text in enumerate(pages, start=1)]
        shown.append({"item": n, "question": item["query"], "target": item["arch"], "reference_answer": reference, "pages": pages_shown})
    for start in range(0, len(shown), PER_FILE):
        (out / f"items-{start // PER_FILE + 1}.json").write_text(json.dumps(shown[start : start + PER_FILE], indent=1))
    (out / "key.json").write_text(json.dumps(key, indent=1))
    (out / "JUDGES.md").write_text(JUDGES)
    print(f"{len(rows)} questions, {len(items) - len(rows)} decoys, {-(-len(shown) // PER_FILE)} files of items in {out}")


def score(folder: Path) -> None:
    key = json.loads((folder / "key.json").read_text())
    verdicts = {str(v["item"]): v["verdict"] == "yes" for f in sorted(folder.glob("verdict-*.json")) for v in json.loads(f.read_text())}
    missing = sorted(set(key) - set(verdicts), key=int)
    if missing:
        sys.exit(f"{len(missing)} items have no verdict (first: {missing[0]})")
    own = [(k, verdicts[n]) for n, k in key.items() if k["kind"] == "own"]
    depth = max(k.get("depth", 3) for k, _ in own)
    decoys = [verdicts[n] for n, k in key.items() if k["kind"] == "decoy"]
    graded = [k["graded_rank"] is not None for k, _ in own]
    judged = [yes for _, yes in own]
    print(f"{len(own)} questions: hit@{depth} graded {sum(graded) / len(own):.3f}, judged {sum(judged) / len(own):.3f}")
    both = Counter((k["graded_rank"] is not None, yes) for k, yes in own)
    print(
        f"  graded hits the judges accept {both[True, True]} of {both[True, True] + both[True, False]}; graded misses they accept {both[False, True]} of {both[False, True] + both[False, False]}"
    )
    print(f"  decoys (another question's pages) judged to answer: {sum(decoys)} of {len(decoys)}")
    for field in ("question_kind", "set"):
        for value in sorted({k[field] for k, _ in own}):
            mine = [(k, yes) for k, yes in own if k[field] == value]
            print(f"  {value}: graded {sum(k['graded_rank'] is not None for k, _ in mine)}, judged {sum(yes for _, yes in mine)} of {len(mine)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("prepare", help="the items judges read, and the key")
    make.add_argument("--out", type=Path, required=True)
    make.add_argument("--docs", type=docs_folder, default=ROCM_DOCS)
    make.add_argument("--depth", type=int, choices=(1, 2, 3), default=3, help="how many hits' pages a judge reads: 3 for hit@3, 1 for hit@1")
    make.add_argument("sets", type=Path, nargs="+", help="blind sets as tests/data holds them")
    tally = sub.add_parser("score", help="graded and judged figures from the key and the verdicts")
    tally.add_argument("folder", type=Path)
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.out, args.docs, args.sets, args.depth)
    else:
        score(args.folder)


if __name__ == "__main__":
    main()
