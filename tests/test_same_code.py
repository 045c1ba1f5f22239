"""No work twice: a candidate whose code is BEST's, or an earlier attempt's, is decided without a run.

The fingerprint is checked on real git commits (what counts as the same code and what does not);
the ledger through the MCP client with test_many's CPU workspace, whose benchmark appends a line to
a timeline file at every run, so "nothing ran" is read from that file.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import git
import pytest
from mcp import Client

from kernel_mcp.ledger import gitops
from kernel_mcp.ledger.same_code import fingerprint, normalized_c
from kernel_mcp.server import build_server
from kernel_mcp.workspace.config import HarnessConfig

from conftest import call, commit_all, text_of
from test_many import kernel_text, make_ws

pytestmark = pytest.mark.anyio

SCALE = """// scale.hip: x[i] *= SCALE, one element per thread.
#include "scale.h"
#define SCALE 2.0f

__global__ void __launch_bounds__(256) scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= SCALE;  // in place
}
"""
# The same tokens: other comments, other line breaks and indentation.
SCALE_RECOMMENTED = """/* Scales x in place.
   One thread per element; blocks of 256. */
#include "scale.h"   // the launcher's declarations
#define SCALE 2.0f   /* the factor */
__global__ void __launch_bounds__(256)
scale(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;   // global index

    if (i < n)
        x[i] *= SCALE;
}
"""
HEADER = "// scale.h\n#pragma once\nvoid launch_scale(float* x, int n);\n"
BASE_KERNEL = kernel_text("base", 10.0, 20.0)  # 60 ms of "GPU" time per run: the runs stay short
RULES = HarnessConfig(editable=["src/*.hip", "src/*.h", "kernel.py", "notes.txt"], protected=["src/frozen.hip"])


def commit(repo: git.Repo, files: dict[str, str], message: str) -> str:
    root = Path(repo.working_tree_dir or "")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    repo.git.add("-A")
    repo.git.commit("-m", message, "--author", "t <t@example.invalid>")
    return repo.head.commit.hexsha


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    plain = git.Repo.init(tmp_path / "repo")
    commit(plain, {"ws/src/scale.hip": SCALE, "ws/src/scale.h": HEADER, "ws/src/frozen.hip": SCALE, "ws/kernel.py": BASE_KERNEL}, "base")
    return plain


def code_of(repo: git.Repo, commit: str) -> str | None:
    """The fingerprint as the ledger takes it: with its own git (every call through the runner)."""
    return fingerprint(gitops.Repo(repo.working_tree_dir), commit, "ws", RULES)


def test_comments_and_layout_are_not_code_but_every_token_and_every_other_file_is(repo):
    start = repo.head.commit.hexsha
    base = code_of(repo, start)
    assert base is not None

    def after(files: dict[str, str]) -> str | None:
        """The fingerprint of a commit on the base commit changing `files`."""
        repo.git.checkout("-q", "--force", "--detach", start)
        repo.git.clean("-fdq")
        return code_of(repo, commit(repo, files, "candidate"))

    # comments, blank lines and indentation of the kernel, its header and the Python launcher
    assert after({"ws/src/scale.hip": SCALE_RECOMMENTED, "ws/src/scale.h": "#pragma once\n\nvoid launch_scale(float* x,\n                  int n);\n"}) == base
    assert after({"ws/kernel.py": "# the launcher\n" + BASE_KERNEL.replace("\n", "  # same\n")}) == base
    # a #define the kernel uses, an operator, a launch bound: other code
    assert after({"ws/src/scale.hip": SCALE.replace("2.0f", "3.0f")}) != base
    assert after({"ws/src/scale.hip": SCALE.replace("x[i] *= SCALE", "x[i] += SCALE")}) != base
    assert after({"ws/src/scale.hip": SCALE_RECOMMENTED.replace("(256)", "(128)")}) != base
    # a comment that a line splice carries onto the next line takes that code with it
    assert after({"ws/src/scale.hip": SCALE.replace("// in place", "// in place \\")}) != base
    # an editable file that is not code, a new file, and a protected source: their exact bytes count
    assert after({"ws/notes.txt": "the benchmark may read this\n"}) != base
    assert after({"ws/src/frozen.hip": SCALE_RECOMMENTED}) != base


def test_the_same_change_made_in_two_worktrees_is_one_code(repo, tmp_path):
    """Where the files lie is no part of the code: two worktrees, two commits, other comments."""
    shas = []
    for name, text in (("a", SCALE.replace("2.0f", "4.0f")), ("b", SCALE_RECOMMENTED.replace("2.0f", "4.0f"))):
        folder = tmp_path / f"worktree-{name}"
        repo.git.worktree("add", "--detach", str(folder), "HEAD")
        shas.append(commit(git.Repo(folder), {"ws/src/scale.hip": text}, f"candidate {name}"))
    assert shas[0] != shas[1]
    assert code_of(repo, shas[0]) == code_of(repo, shas[1]) != code_of(repo, "HEAD")


def test_a_directive_keeps_its_line_end_and_strings_keep_what_looks_like_comments():
    assert normalized_c("int x;\n#define A 1\n") != normalized_c("int x; #define A 1\n")
    assert normalized_c('const char* s = "a // b /* c */";') == 'const char* s = "a // b /* c */";'
    assert normalized_c("/* never closed\nint x;") is None


def source_ws(tmp_path: Path, engine: str = "") -> Path:
    """test_many's workspace with a kernel source, its header and a notes file that may be edited."""
    ws = make_ws(tmp_path / "repo", engine)
    (ws / "src").mkdir()
    (ws / "src" / "scale.hip").write_text(SCALE)
    (ws / "src" / "scale.h").write_text(HEADER)
    (ws / "kernel.py").write_text(BASE_KERNEL)
    config = ws / "kernel-mcp.toml"
    config.write_text(config.read_text().replace('editable = ["kernel.py"]', 'editable = ["kernel.py", "src/*.hip", "src/*.h", "notes.txt"]'))
    commit_all(ws.parent, "a kernel source")
    return ws


def runs_in(timeline: Path) -> list[str]:
    return timeline.read_text().splitlines()


async def test_same_code_as_best_or_an_earlier_attempt_is_decided_without_a_run(tmp_path, monkeypatch):
    timeline = tmp_path / "timeline.txt"
    timeline.write_text("")
    monkeypatch.setenv("KMCP_TIMELINE", str(timeline))
    ws = source_ws(tmp_path)
    async with Client(build_server(ws)) as client:
        wt = Path((await call(client, "experiment_start", tag="same"))["worktree"])
        ran = len(runs_in(timeline))

        (wt / "src" / "scale.hip").write_text(SCALE_RECOMMENTED)
        (wt / "kernel.py").write_text("# the launcher, commented\n" + BASE_KERNEL)
        result = await client.call_tool("experiment_evaluate", {"hypothesis": "comments only"})
        assert not result.is_error, text_of(result)
        attempt = result.structured_content["attempt"]
        assert attempt["decision"] == "duplicate" and attempt["reasons"][0].startswith("same code as BEST"), attempt
        assert "DUPLICATE" in text_of(result) and "same code as BEST" in text_of(result)
        assert len(runs_in(timeline)) == ran  # the benchmark never ran
        await call(client, "experiment_revert")

        # a #define of the kernel and a slower launcher: measured as usual
        (wt / "src" / "scale.hip").write_text(SCALE.replace("2.0f", "3.0f"))
        (wt / "kernel.py").write_text(kernel_text("slower", 11.0, 22.0))
        slower = (await call(client, "experiment_evaluate", hypothesis="a larger factor"))["attempt"]
        assert slower["decision"] == "discard" and "measured regression" in slower["reasons"], slower
        assert len(runs_in(timeline)) > ran
        await call(client, "experiment_revert")

        # the slower change again, commented otherwise: its earlier decision stands
        ran = len(runs_in(timeline))
        (wt / "src" / "scale.hip").write_text(SCALE_RECOMMENTED.replace("2.0f", "3.0f"))
        (wt / "kernel.py").write_text(kernel_text("slower", 11.0, 22.0))
        again = await call(client, "experiment_evaluate", hypothesis="a larger factor, tidied")
        repeat = again["attempt"]
        assert repeat["decision"] == "duplicate" and repeat["reasons"][0].startswith(f"same code as attempt #{slower['id']} (discard/"), repeat
        assert len(runs_in(timeline)) == ran
        assert again["consecutive_regressions"] == 1  # a duplicate is no second regression
        refused = await client.call_tool("experiment_keep", {"attempt": repeat["id"]})
        assert refused.is_error and "ran nothing to keep" in text_of(refused)
        await call(client, "experiment_revert")

        # an editable file that is not code: measured as usual
        ran = len(runs_in(timeline))
        Path(wt, "notes.txt").write_text("a note the benchmark could read\n")
        noted = (await call(client, "experiment_evaluate", hypothesis="a note"))["attempt"]
        assert noted["decision"] != "duplicate" and len(runs_in(timeline)) > ran
        log = await call(client, "experiment_log")
    decided = {a["hypothesis"]: (a["decision"], a["outcome"]) for a in log["attempts"]}
    assert decided["comments only"] == ("duplicate", "not kept") and decided["a larger factor, tidied"] == ("duplicate", "not kept")
    assert decided["a larger factor"] == ("discard", "reverted")


def patch(old: str, new: str, rel: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/ws/{rel}", f"b/ws/{rel}"))


async def test_a_batch_measures_each_code_once(tmp_path, monkeypatch):
    timeline = tmp_path / "timeline.txt"
    timeline.write_text("")
    monkeypatch.setenv("KMCP_TIMELINE", str(timeline))
    ws = source_ws(tmp_path, '[engine]\nkind = "local"\nslots = 1\n')
    slower = patch(BASE_KERNEL, kernel_text("slower", 11.0, 22.0), "kernel.py")
    candidates = [
        {"patch": patch(SCALE, SCALE_RECOMMENTED, "src/scale.hip"), "hypothesis": "comments only"},
        {"patch": slower, "hypothesis": "slower"},
        {"patch": slower + patch(SCALE, SCALE_RECOMMENTED, "src/scale.hip"), "hypothesis": "slower, tidied"},
    ]
    async with Client(build_server(ws)) as client:
        await call(client, "experiment_start", tag="batch")
        answer = await call(client, "experiment_evaluate_many", candidates=candidates)
    rows = {r["hypothesis"]: r for r in answer["rows"]}
    assert rows["comments only"]["decision"] == "duplicate" and rows["comments only"]["reason"].startswith("same code as BEST")
    assert rows["slower"]["decision"] == "discard"
    tidied = rows["slower, tidied"]
    assert tidied["decision"] == "duplicate", tidied
    assert tidied["reason"].startswith(f"same code as candidate 1 of this batch, attempt #{rows['slower']['attempt']} (discard)")
    names = {line.split()[1] for line in runs_in(timeline)}
    assert names == {"base", "slower"}  # only BEST and the one slower code ran


async def test_a_failure_is_measured_again(tmp_path, monkeypatch):
    """A crash may not repeat (a lost node, a busy machine): the same code is run again, not quoted."""
    monkeypatch.setenv("KMCP_TIMELINE", str(tmp_path / "timeline.txt"))
    ws = source_ws(tmp_path)
    async with Client(build_server(ws)) as client:
        wt = Path((await call(client, "experiment_start", tag="crash"))["worktree"])
        (wt / "kernel.py").write_text(kernel_text("crash", fate="crash"))
        first = (await call(client, "experiment_evaluate", hypothesis="crashes"))["attempt"]
        (wt / "kernel.py").write_text("# the same crash, commented\n" + kernel_text("crash", fate="crash"))
        second = (await call(client, "experiment_evaluate", hypothesis="crashes"))["attempt"]
    assert first["decision"] == second["decision"] == "failed", (first, second)
    assert "segmentation fault (simulated)" in second["reasons"][0]
