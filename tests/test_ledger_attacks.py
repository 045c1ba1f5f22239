"""The ledger's git side under attack, each attack staged for real: real git repositories, real
processes racing the server, the real Landlock boundary and the SDK's client against the real server
(a CPU workspace: tests/test_ledger.py's). What must hold: the user's repository is never touched, no
program a nested repository names ever runs, what is kept is what was measured, and the rules of an
experiment are the ones it started with."""

from __future__ import annotations

import importlib._bootstrap_external as bootstrap
import importlib.util
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp import sandbox
from kernel_mcp.server import build_server

from conftest import PY, REPO, call, text_of
from test_ledger import KERNEL, cpu_ws, set_kernel  # noqa: F401  (cpu_ws is a fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sandbox.available() is not None, reason=f"no Landlock here: {sandbox.available()}")]


def git(*args: str, cwd: Path) -> str:
    """The real git CLI, as the user runs it (none of the server's hardening)."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def user_state(ws: Path) -> dict[str, str]:
    """What the user's repository is: branch, HEAD, index, status, reflog, worktrees."""
    root = ws.parent
    return {
        "branch": git("symbolic-ref", "-q", "HEAD", cwd=root),
        "HEAD": git("rev-parse", "HEAD", cwd=root),
        "index": git("ls-files", "-s", cwd=root),
        "status": git("status", "--porcelain", cwd=root),
        "reflog": git("reflog", cwd=root),
        "config": git("config", "--local", "-l", cwd=root),
    }


# ---- 1. the worktree's .git pointer, flipped while a step runs its git calls ---------------------
FLIP = textwrap.dedent(
    """
    import os, sys, time
    pointer, good, evil = sys.argv[1:4]
    i = 0
    while True:
        for text in (good, evil):
            tmp = f"{pointer}.tmp{i}"
            i += 1
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, pointer)
            time.sleep(0.003)
    """
)


async def test_a_pointer_flipped_during_a_call_never_moves_the_users_repository(cpu_ws):
    # The pointer is checked once per step and then many git calls follow (diff, reset --hard,
    # clean): a process flipping it to the user's repository every 3 ms made them act there, moving
    # the user's branch to the experiment's commit and rewriting the user's index.
    before = user_state(cpu_ws)
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="race"))["worktree"]
        pointer = Path(wt).parent / ".git"
        good = pointer.read_text()
        flipper = subprocess.Popen([PY, "-c", FLIP, str(pointer), good, f"gitdir: {cpu_ws.parent / '.git'}\n"])
        try:
            for _ in range(12):
                set_kernel(wt, 110.0, 220.0)  # something for the revert to discard
                await client.call_tool("experiment_revert", {})  # refused when it sees the flipped pointer: either is fine
        finally:
            flipper.kill()
            flipper.wait()
        pointer.write_text(good)
        await call(client, "experiment_revert")
    assert user_state(cpu_ws) == before
    assert Path(wt, "kernel.py").read_text() == KERNEL


# ---- 2. a repository nested in the candidate's tree, with a filter in its own config ---------------
def _nested_repo(folder: Path) -> None:
    """A repository of its own at `folder`, one commit with a file its attributes send through a
    filter named `evil` (defined by no config yet)."""
    folder.mkdir(exist_ok=True)
    git("init", "-q", cwd=folder)
    (folder / "f.txt").write_text("x\n")
    (folder / ".gitattributes").write_text("* filter=evil\n")
    git("add", "f.txt", ".gitattributes", cwd=folder)
    git("-c", "user.name=a", "-c", "user.email=a@example.invalid", "commit", "-q", "-m", "nested", cwd=folder)


def _arm(folder: Path, marker: Path, victim: Path) -> None:
    """The nested repository's own config defines the filter: it writes `marker` and appends to
    `victim` wherever git runs it; its file is modified, so git runs it to compare the file."""
    git("config", "filter.evil.clean", f"sh -c 'echo ran unsealed in $PWD >> {marker}; echo PWNED >> {victim}; cat'", cwd=folder)
    (folder / "f.txt").write_text("y\n")


async def test_a_nested_repository_in_the_candidate_is_refused_by_name_and_its_filter_never_runs(cpu_ws, tmp_path):
    # An editable name as a folder holding its own repository: it was committed as a gitlink, and
    # a later `git diff` entered it and ran its filter, unsealed, writing the user's checkout.
    marker, victim = tmp_path / "marker", cpu_ws / "kernel.py"
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="nest"))["worktree"]
        set_kernel(wt, 85.0, 170.0)  # genuinely faster
        _nested_repo(Path(wt, "notes.txt"))
        _arm(Path(wt, "notes.txt"), marker, victim)
        refused = await client.call_tool("experiment_evaluate", {"hypothesis": "less work"})
        assert refused.is_error and "ws/notes.txt/.git" in text_of(refused) and "repository of its own" in text_of(refused), text_of(refused)
        reverted = await call(client, "experiment_revert")
        assert "ws/notes.txt" in reverted["notes"][0], reverted["notes"]
        set_kernel(wt, 85.0, 170.0)
        ev = await call(client, "experiment_evaluate", hypothesis="less work, no nested repository")
        assert ev["attempt"]["decision"] == "keep", ev["attempt"]["reasons"]
        await call(client, "experiment_keep", why="less work")
    assert not Path(wt, "notes.txt").exists() and not marker.exists() and victim.read_text() == KERNEL


async def test_the_workspace_folder_made_a_repository_is_refused_and_revert_removes_it(cpu_ws, tmp_path):
    # The candidate's own workspace folder made a repository (<worktree>/ws/.git): git itself never
    # removes a .git inside a tracked folder, so revert left it in place without naming it.
    marker = tmp_path / "marker"
    async with Client(build_server(cpu_ws)) as client:
        wt = Path((await call(client, "experiment_start", tag="wsgit"))["worktree"])
        set_kernel(wt, 85.0, 170.0)
        git("init", "-q", str(wt), cwd=tmp_path)
        git("config", "filter.evil.clean", f"sh -c 'echo ran in $PWD >> {marker}; cat'", cwd=wt)
        refused = await client.call_tool("experiment_evaluate", {"hypothesis": "nested repository at ws"})
        assert refused.is_error and "ws/.git" in text_of(refused), text_of(refused)
        reverted = await call(client, "experiment_revert")
        assert "ws/.git" in reverted["notes"][0], reverted["notes"]
        assert not (wt / ".git").exists()
        set_kernel(wt, 100.0, 200.0)  # BEST's figures, in other code (BEST's own code would be a duplicate, never run)
        ev = await call(client, "experiment_evaluate", hypothesis="after the revert")
        assert ev["attempt"]["decision"] == "discard", ev["attempt"]["reasons"]
    assert not marker.exists()


async def test_the_servers_git_never_enters_a_submodule_of_the_users(cpu_ws, tmp_path):
    # The user's repository has a submodule entry (a gitlink, not initialized in the worktree). The
    # candidate checks the submodule's commit out there, with a filter in its config and a modified
    # file: the server's git diff and status must not enter it (git runs the filter to see whether
    # the submodule is dirty), whatever the configs say.
    root = cpu_ws.parent
    _nested_repo(cpu_ws / "vendor")
    git("add", "ws/vendor", cwd=root)
    git("-c", "user.name=a", "-c", "user.email=a@example.invalid", "commit", "-q", "-m", "a submodule entry", cwd=root)
    git("config", "diff.ignoreSubmodules", "none", cwd=root)  # the user's config asks git to look inside
    git("config", "status.submoduleSummary", "true", cwd=root)
    marker, victim = tmp_path / "marker", cpu_ws / "kernel.py"
    async with Client(build_server(cpu_ws)) as client:
        wt = Path((await call(client, "experiment_start", tag="sub"))["worktree"])
        assert (wt / "vendor").is_dir() and not any((wt / "vendor").iterdir())  # an entry, not a checkout
        git("clone", "-q", str(cpu_ws / "vendor"), str(wt / "vendor"), cwd=tmp_path)  # at the entry's commit
        _arm(wt / "vendor", marker, victim)
        reverted = await call(client, "experiment_revert")  # git diff and status with the submodule entry in the index
        assert "ws/vendor/.git" in reverted["notes"][0], reverted["notes"]
    assert not marker.exists() and victim.read_text() == KERNEL


# ---- 3. ignored files are measured, never committed -----------------------------------------------
async def test_what_is_measured_is_the_candidates_commit_not_an_ignored_bytecode_cache(cpu_ws):
    # The whole visible change is a line nothing reads (a comment would be BEST's code, never run); a
    # forged __pycache__/kernel.*.pyc (ignored by git) whose header matches the new kernel.py's mtime
    # and size makes the run fast. It was measured ~20% faster and kept, and the kept commit was the
    # old, slow kernel.
    async with Client(build_server(cpu_ws)) as client:
        wt = Path((await call(client, "experiment_start", tag="pyc"))["worktree"])
        source = wt / "kernel.py"
        source.write_text(KERNEL + "RETUNED = True\n")
        st = source.stat()
        fast = compile('TIME = {"small": 80.0, "large": 160.0}\nERR = 0\n', str(source), "exec")
        pyc = Path(importlib.util.cache_from_source(str(source)))  # the benchmark's python is this one
        pyc.parent.mkdir(exist_ok=True)
        pyc.write_bytes(bootstrap._code_to_timestamp_pyc(fast, int(st.st_mtime), st.st_size))
        assert git("check-ignore", str(pyc), cwd=wt)  # git never sees it
        ev = await call(client, "experiment_evaluate", hypothesis="retune the schedule")
    assert ev["attempt"]["decision"] not in ("keep", "suspicious"), ev["attempt"]["reasons"]
    assert any("measured exactly the candidate's commit" in n and "ws/__pycache__/" in n for n in ev["notes"]), ev["notes"]


async def test_a_file_planted_in_bests_tree_between_evaluations_is_not_measured(cpu_ws):
    # BEST's tree lives on between evaluations under the state folder. Anyone with the user's rights
    # (the agent's own shell, outside every run) could plant an ignored bytecode file there whose
    # header matches BEST's kernel.py, making BEST slow: an unchanged candidate would then look 50%
    # faster. BEST's tree holds exactly its commit before each evaluation, so it measures as itself.
    async with Client(build_server(cpu_ws)) as client:
        wt = Path((await call(client, "experiment_start", tag="plant"))["worktree"])
        (wt / "notes.txt").write_text("first look\n")
        await call(client, "experiment_evaluate", hypothesis="a note only")  # BEST's tree now exists
        await call(client, "experiment_revert")
        best_source = cpu_ws / ".kernel-mcp" / "best" / "plant" / "main" / "ws" / "kernel.py"
        assert best_source.is_file()
        st = best_source.stat()
        slow = compile('TIME = {"small": 200.0, "large": 400.0}\nERR = 0\n', str(best_source), "exec")
        pyc = Path(importlib.util.cache_from_source(str(best_source)))
        pyc.parent.mkdir(exist_ok=True)
        pyc.write_bytes(bootstrap._code_to_timestamp_pyc(slow, int(st.st_mtime), st.st_size))
        (wt / "notes.txt").write_text("nothing that changes the kernel\n")
        ev = await call(client, "experiment_evaluate", hypothesis="the same kernel")
    assert ev["attempt"]["decision"] == "discard" and "tie within noise" in ev["attempt"]["reasons"], ev["attempt"]["reasons"]
    assert not pyc.exists()


# ---- 4. a config git ignores is frozen too --------------------------------------------------------
async def test_a_gitignored_config_is_frozen_in_the_ledger(cpu_ws):
    # With kernel-mcp.toml ignored, the start commit had no config, and every later step read the
    # checkout's: loosening its correctness rule got a wrong candidate kept.
    root = cpu_ws.parent
    (cpu_ws / ".gitignore").write_text("out/\n__pycache__/\nkernel-mcp.toml\n")
    git("rm", "-q", "--cached", "ws/kernel-mcp.toml", cwd=root)
    git("-c", "user.name=a", "-c", "user.email=a@example.invalid", "commit", "-qam", "the config is local", cwd=root)
    async with Client(build_server(cpu_ws)) as client:
        start = await call(client, "experiment_start", tag="cfg")
        assert subprocess.run(["git", "cat-file", "-e", f"{start['best_commit']}:ws/kernel-mcp.toml"], cwd=root).returncode != 0
        toml = cpu_ws / "kernel-mcp.toml"
        toml.write_text(toml.read_text().replace('rule = "== 0"', 'rule = "<= 1000"'))
        set_kernel(start["worktree"], 40.0, 80.0, err=7)  # wrong, and "faster"
        ev = await call(client, "experiment_evaluate", hypothesis="wrong but fast")
        refused = await client.call_tool("experiment_keep", {})
    assert ev["attempt"]["decision"] == "repair-needed", ev["attempt"]
    assert any("differs from the one this experiment started with" in n for n in ev["notes"]), ev["notes"]
    assert refused.is_error


# ---- 5. the user's own worktrees are never pruned -------------------------------------------------
async def test_a_users_worktree_whose_folder_is_away_keeps_its_record(cpu_ws, tmp_path):
    # `git worktree prune` on the user's repository forgot a worktree of the user's whose folder was
    # absent for a moment (an unmounted drive), with its HEAD and index.
    root = cpu_ws.parent
    users = tmp_path / "user-feature"
    git("worktree", "add", "-q", "--detach", str(users), cwd=root)
    (users / "ws" / "idea.txt").write_text("the user's work\n")
    git("add", "ws/idea.txt", cwd=users)
    git("-c", "user.name=a", "-c", "user.email=a@example.invalid", "commit", "-qm", "the user's detached commit", cwd=users)
    detached = git("rev-parse", "HEAD", cwd=users)
    away = users.with_name("user-feature.unmounted")
    users.rename(away)
    async with Client(build_server(cpu_ws)) as client:
        wt = (await call(client, "experiment_start", tag="pr"))["worktree"]
        # the server's own stale record is still forgotten: BEST's tree, gone, is made again
        best = cpu_ws / ".kernel-mcp" / "best" / "pr" / "main"
        shutil.rmtree(best)
        set_kernel(wt, 110.0, 220.0)
        ev = await call(client, "experiment_evaluate", hypothesis="slower")
        assert ev["attempt"]["decision"] == "discard" and (best / ".git").is_file()
    away.rename(users)
    assert str(users) in git("worktree", "list", cwd=root)
    assert git("rev-parse", "HEAD", cwd=users) == detached and git("status", "--porcelain", cwd=users) == ""


# ---- 6. one judge per workspace, the baseline included --------------------------------------------
HOLD_JUDGE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from kernel_mcp.ledger import recover
    with recover.judging(Path(sys.argv[1]), "experiment_evaluate of experiment a"):
        print("held", flush=True)
        sys.stdin.read()
    """
)


async def test_a_baseline_is_not_measured_while_another_judge_measures(cpu_ws):
    # Another server process measures in this workspace (it holds the judge lock): a start's baseline
    # was measured at the same time, sharing the machine and the outputs.
    holder = subprocess.Popen(
        [PY, "-c", HOLD_JUDGE, str(cpu_ws / ".kernel-mcp")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        async with Client(build_server(cpu_ws)) as client:
            refused = await client.call_tool("experiment_start", {"tag": "b"})
            assert refused.is_error and f"another kernel-mcp judge is measuring in this workspace: process {holder.pid}" in text_of(refused), text_of(refused)
            holder.stdin.close()
            holder.wait()
            started = await call(client, "experiment_start", tag="b")  # nothing of the refused start was left behind
            assert started["status"] == "running"
    finally:
        holder.kill()
        holder.wait()


# ---- 7. what carry_changes brings ----------------------------------------------------------------
async def test_carry_changes_brings_a_link_as_a_link_and_refuses_a_nested_repository(cpu_ws, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the user's private key\n")
    os.symlink(secret, cpu_ws / "notes.txt")
    before = user_state(cpu_ws)
    async with Client(build_server(cpu_ws)) as client:
        start = await call(client, "experiment_start", tag="c1", carry_changes=True)
        carried = Path(start["worktree"], "notes.txt")
        assert carried.is_symlink() and os.readlink(carried) == str(secret)
        entry = git("ls-tree", start["best_commit"], "ws/notes.txt", cwd=cpu_ws.parent)
        assert entry.startswith("120000 ")  # committed as a link: its target's name, never the key
        assert "private key" not in git("cat-file", "-p", entry.split()[2], cwd=cpu_ws)
        (cpu_ws / "notes.txt").unlink()
        (cpu_ws / "vendor").mkdir()
        git("init", "-q", cwd=cpu_ws / "vendor")
        (cpu_ws / "vendor" / "a.txt").write_text("a")
        for _ in range(2):  # refused by name, and nothing half-made is left to refuse the next try otherwise
            refused = await client.call_tool("experiment_start", {"tag": "c2", "carry_changes": True})
            assert refused.is_error and "untracked git repository of its own at ws/vendor" in text_of(refused), text_of(refused)
    after = user_state(cpu_ws)
    assert {k: v for k, v in after.items() if k != "status"} == {k: v for k, v in before.items() if k != "status"}
    assert git("branch", "--list", "kernel-opt/c2", cwd=cpu_ws.parent) == ""
