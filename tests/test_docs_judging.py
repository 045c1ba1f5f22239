"""benchmarks/docs_judging.py: the pages a judge reads, and the graded and judged figures, through
the real index and the script as a person runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "docs_judging.py"


def run(*args: str) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_judge_reads_the_pages_and_the_source_and_the_score_keeps_both_figures(tmp_path):
    docs = tmp_path / "rocm"
    docs.mkdir()
    (docs / "notes.md").write_text("# Notes\n\nThe LDS holds 160 KiB per compute unit on gfx950.\n")
    questions = [
        {"query": "LDS size per CU on gfx950", "proof": ["163840 B"], "arch": "gfx950", "kind": "named", "file": "docs_index/l1/lds.md"},
        {"query": "how big is the scratchpad on gfx950", "proof": ["no page says this"], "arch": None, "kind": "meaning", "file": "shared/docs/rocm/notes.md"},
        {"query": "bank conflicts on the LDS", "proof": ["64 banks"], "arch": None, "kind": "howto", "file": "docs_index/l1/lds.md"},
        {"query": "which counter counts waves", "proof": ["SQ_WAVES"], "arch": None, "kind": "named", "file": "docs_index/l1/lds.md"},
        {"query": "s_waitcnt lgkmcnt", "proof": ["lgkmcnt"], "arch": None, "kind": "named", "file": "docs_index/l1/lds.md"},
    ]
    set_file = tmp_path / "blind-test.json"
    set_file.write_text(json.dumps({"what": "a test set", "questions": questions}))
    out = tmp_path / "judging"
    assert "5 questions, 1 decoys, 1 files of items" in run("prepare", "--out", str(out), "--docs", str(docs), str(set_file))

    items = json.loads((out / "items-1.json").read_text())
    key = json.loads((out / "key.json").read_text())
    assert len(items) == 6 and sorted(k["kind"] for k in key.values()) == ["decoy"] + ["own"] * 5
    first = next(i for i in items if i["question"] == questions[0]["query"] and key[str(i["item"])]["kind"] == "own")
    assert len(first["pages"]) == 3 and "163840" in first["reference_answer"]["from_the_source"]  # the file's own lines
    unanswerable = next(i for i in items if i["question"] == questions[1]["query"])
    assert "160 KiB per compute unit" in unanswerable["reference_answer"]["from_the_source"]  # the --docs copy's lines
    assert key[str(first["item"])]["graded_rank"] is not None and key[str(unanswerable["item"])]["graded_rank"] is None
    assert "Do not read any other file" in (out / "JUDGES.md").read_text()

    # the judges say yes to every item: the decoy shows how far to trust them
    (out / "verdict-1.json").write_text(json.dumps([{"item": i["item"], "verdict": "yes"} for i in items]))
    report = run("score", str(out))
    assert "hit@3 graded 0.800, judged 1.000" in report and "graded misses they accept 1 of 1" in report and "judged to answer: 1 of 1" in report

    # hit@1 as read: the first hit's page alone
    first_only = tmp_path / "first"
    run("prepare", "--depth", "1", "--out", str(first_only), "--docs", str(docs), str(set_file))
    assert {len(i["pages"]) for i in json.loads((first_only / "items-1.json").read_text())} == {1}
    items = json.loads((first_only / "items-1.json").read_text())
    (first_only / "verdict-1.json").write_text(json.dumps([{"item": i["item"], "verdict": "no"} for i in items]))
    assert "hit@1 graded" in run("score", str(first_only))


def test_the_recorded_judging_reads_as_results_says():
    report = run("score", str(REPO / "benchmarks" / "data" / "docs-judged-sets-58-62"))
    assert "250 questions: hit@3 graded 0.848, judged 0.908" in report
    assert "meaning: graded 70, judged 82 of 100" in report and "named: graded 73, judged 75 of 75" in report
    report = run("score", str(REPO / "benchmarks" / "data" / "docs-judged-sets-63-67"))
    assert "250 questions: hit@3 graded 0.864, judged 0.920" in report
    assert "meaning: graded 77, judged 84 of 100" in report and "named: graded 71, judged 75 of 75" in report
    report = run("score", str(REPO / "benchmarks" / "data" / "docs-judged-first-page-sets-58-67"))
    assert "500 questions: hit@1 graded 0.612, judged 0.754" in report and "judged to answer: 1 of 100" in report
