"""The git side of the ledger, through GitPython, confined to the experiment's own worktree.

No value from a tool argument ever reaches git as an option: tags are validated names, paths are
passed after `--`, and resets happen only inside the dedicated worktree.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import git

from kernel_mcp.errors import InvalidInput, WorkspaceError

# \Z, not $: `$` also matches before a trailing newline, so "t\n" would pass as a name
TAG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,47}\Z")
LEDGER_MARK = "Kernel-MCP-Attempt"


def check_tag(tag: str) -> str:
    if not isinstance(tag, str) or not TAG.fullmatch(tag) or ".." in tag or tag.endswith((".", ".lock")):
        raise InvalidInput(f"run tag {tag!r} must be lowercase letters, digits, '.', '_' or '-' (at most 48, not starting with '-')")
    return tag


def repo_of(folder: Path) -> tuple[git.Repo, str]:
    """The repository holding the workspace, and the workspace's path inside it ('.' at the top)."""
    try:
        repo = git.Repo(folder, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise WorkspaceError(f"{folder} is not inside a git repository", hint="git init the workspace and commit the kernel first") from None
    if repo.bare or not repo.head.is_valid():
        raise WorkspaceError("the workspace's repository has no commit yet", hint="commit the kernel and its benchmark first")
    top = Path(repo.working_tree_dir).resolve()
    sub = folder.resolve().relative_to(top).as_posix()
    return repo, sub or "."


def require_identity(repo: git.Repo) -> None:
    """Refuse to start when git could not commit here: a keep commits in the experiment's worktree,
    and finding out then would lose the measured attempt. Asks git itself (`git var
    GIT_COMMITTER_IDENT`), so the repository's and the user's config, GIT_COMMITTER_NAME/EMAIL and
    git's own guess from the host all count, exactly as for a commit."""
    try:
        repo.git.var("GIT_COMMITTER_IDENT")
    except git.GitCommandError as exc:
        lines = [line.strip() for line in (exc.stderr or "").splitlines() if line.strip()]
        why = next((line.removeprefix("stderr: ").strip("'").strip() for line in reversed(lines) if "fatal:" in line), "")
        raise WorkspaceError(
            "git has no committer identity for the workspace's repository"
            + (f" ({why.removeprefix('fatal: ')})" if why else "") + ", and the ledger commits every kept change",
            hint='git config user.name "Your Name" && git config user.email you@example.com '
                 "(in the workspace's repository, or with --global), or set GIT_COMMITTER_NAME and GIT_COMMITTER_EMAIL",
        ) from None


def ignore_state_folder(repo: git.Repo, subdir: str) -> None:
    """Keep `.kernel-mcp/` (worktrees, runs, ledger) out of the user's `git status`, via .git/info/exclude."""
    pattern = "/" + ("" if subdir == "." else subdir.rstrip("/") + "/") + ".kernel-mcp/"
    exclude = Path(repo.git_dir) / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    lines = exclude.read_text().splitlines() if exclude.exists() else []
    if pattern not in lines:
        exclude.write_text("\n".join(lines + [pattern]) + "\n")


def dirty_paths(repo: git.Repo) -> list[str]:
    out = repo.git.status("--porcelain", "--untracked-files=all")
    return [line[3:] for line in out.splitlines() if line.strip()]


def add_worktree(repo: git.Repo, path: Path, branch: str, start: str) -> git.Repo:
    if branch in [h.name for h in repo.heads]:
        raise InvalidInput(f"branch {branch} already exists", hint="choose another run tag")
    repo.git.worktree("add", "-b", branch, "--", str(path), start)
    return git.Repo(path)


def carry_changes(repo: git.Repo, worktree: git.Repo) -> list[str]:
    """Bring the user's uncommitted changes (tracked diffs and untracked files) into the worktree."""
    patch = repo.git.diff("HEAD", "--binary")
    if patch:
        worktree.git.execute(["git", "apply", "--index", "-"], istream=_Stdin(patch + "\n"))
    copied = []
    for rel in repo.git.ls_files("--others", "--exclude-standard").splitlines():
        src = Path(repo.working_tree_dir) / rel
        dst = Path(worktree.working_tree_dir) / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(src.read_bytes())
        copied.append(rel)
    return copied


def _Stdin(text: str):
    """A real file for GitPython's `istream` (subprocess needs a file descriptor)."""
    handle = tempfile.TemporaryFile()
    handle.write(text.encode())
    handle.seek(0)
    return handle


# The ledger writes performance.md itself; it is never part of what an attempt changed.
NOT_THE_ATTEMPTS = ":(exclude,glob)**/performance.md"


def changed_files(wt: git.Repo, base: str) -> list[str]:
    """Files that differ from `base` in the worktree (modified, added, deleted, untracked)."""
    tracked = wt.git.diff("--name-only", base, "--", ".", NOT_THE_ATTEMPTS).splitlines()
    untracked = wt.git.ls_files("--others", "--exclude-standard", "--", ".", NOT_THE_ATTEMPTS).splitlines()
    return sorted(set(tracked) | set(untracked))


def commit_all(wt: git.Repo, message: str) -> str:
    wt.git.add("-A", "--", ".")
    wt.git.commit("--no-verify", "--allow-empty", "-F", "-", istream=_Stdin(message))
    return wt.head.commit.hexsha


def reset_to(wt: git.Repo, commit: str) -> None:
    wt.git.reset("--hard", commit)
    wt.git.clean("-fd", "--", ".")  # untracked files the attempt added; ignored build outputs stay


# ---- candidates of experiment_evaluate_many ----------------------------------------------------
SHA = re.compile(r"^[0-9a-f]{7,40}\Z")  # \Z: matched in full, a trailing newline included
REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}\Z")


def resolve_commit(repo: git.Repo, name: str) -> str:
    """A commit named by sha or branch/tag name, resolved without the git CLI seeing it as an option."""
    if not REF.fullmatch(name) or ".." in name or name.endswith((".lock", "/")):
        raise InvalidInput(f"{name!r} is not a commit sha or a branch name")
    try:
        return repo.commit(name).hexsha
    except (git.BadName, ValueError, git.GitCommandError):
        raise InvalidInput(f"no commit {name!r} in the workspace's repository") from None


def add_detached_worktree(repo: git.Repo, path: Path, commit: str) -> git.Repo:
    repo.git.worktree("add", "--detach", "--", str(path), commit)
    return git.Repo(path)


def apply_patch(wt: git.Repo, patch: str) -> None:
    """Apply a unified diff to the worktree and its index (git refuses paths outside the tree)."""
    try:
        wt.git.execute(["git", "apply", "--index", "--whitespace=nowarn", "-"], istream=_Stdin(patch if patch.endswith("\n") else patch + "\n"))
    except git.GitCommandError as exc:
        raise InvalidInput("the patch does not apply to BEST: " + (exc.stderr or "").strip()[-300:]) from None


def pin(repo: git.Repo, ref: str, commit: str) -> None:
    """Keep a candidate's commit reachable (and nameable in a bundle) under refs/kernel-mcp/."""
    repo.git.update_ref(ref, commit)


def bundle(repo: git.Repo, refs: list[str], path: Path) -> bytes:
    repo.git.bundle("create", str(path), *refs)
    return path.read_bytes()


def diff_between(wt: git.Repo, base: str, commit: str) -> str:
    return wt.git.diff("--binary", base, commit, "--", ".", NOT_THE_ATTEMPTS)


def prune_worktrees(repo: git.Repo) -> None:
    repo.git.worktree("prune")


# ---- what runs write, and the candidate as it was before its runs ------------------------------
def dirty_state(wt: git.Repo) -> dict[str, tuple[int, int] | None]:
    """Every file of the worktree that git lists (tracked, and new ones it does not ignore) with its
    (mtime, size); None for a tracked one that is missing. Compared before and after a run, it says
    what the run wrote, whatever happens to HEAD meanwhile (another server keeping)."""
    out = wt.git.ls_files("-z", "--cached", "--others", "--exclude-standard")
    state: dict[str, tuple[int, int] | None] = {}
    top = Path(wt.working_tree_dir)
    for rel in out.split("\0"):
        if not rel:
            continue
        try:
            st = (top / rel).lstat()
            state[rel] = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            state[rel] = None
    return state


def written_between(before: dict[str, tuple[int, int] | None], after: dict[str, tuple[int, int] | None]) -> set[str]:
    return {p for p in set(before) | set(after) if before.get(p, "absent") != after.get(p, "absent")}


def tracked_in(wt: git.Repo, commit: str, paths: set[str]) -> set[str]:
    if not paths:
        return set()
    listed = wt.git.execute(["git", "ls-tree", "-r", "--name-only", "-z", commit], with_extended_output=False)
    return paths & set(listed.split("\0"))


def snapshot(wt: git.Repo, base: str, leave_out: set[str], message: str) -> str:
    """The worktree as a commit on top of `base` (tracked changes and new files that git does not
    ignore), without touching the worktree's index or branch; `leave_out` (what runs wrote) keeps
    `base`'s version. This commit, not the worktree, is what gets measured and kept."""
    with tempfile.TemporaryDirectory(prefix="kernel-mcp-index-") as tmp:
        index = Path(tmp) / "index"
        env = {"GIT_INDEX_FILE": str(index), "GIT_LITERAL_PATHSPECS": "1"}
        own = Path(wt.git_dir) / "index"
        with wt.git.custom_environment(**env):
            if own.is_file():
                # a copy of the worktree's own index carries its file stats: only changed files are hashed again
                shutil.copy2(own, index)  # with its mtime: git trusts a file stat only if older than the index (racy git)
                wt.git.reset("-q", base, "--", ".")  # index entries only: HEAD stays where it is
            else:
                wt.git.read_tree(base)
            wt.git.add("-A", "--", ".")
            if leave_out:
                listing = Path(tmp) / "leave-out"
                listing.write_bytes(b"\0".join(p.encode() for p in sorted(leave_out)) + b"\0")
                wt.git.reset("-q", base, f"--pathspec-from-file={listing}", "--pathspec-file-nul")
            tree = wt.git.write_tree()
            return wt.git.commit_tree(tree, "-p", base, "-F", "-", istream=_Stdin(message))


def tree_of(wt: git.Repo, commit: str) -> str:
    return wt.git.rev_parse(f"{commit}^{{tree}}")


def files_between(wt: git.Repo, base: str, commit: str) -> list[str]:
    listed = wt.git.diff("--name-only", "-z", base, commit, "--", ".", NOT_THE_ATTEMPTS)
    return sorted(p for p in listed.split("\0") if p)


def restore(wt: git.Repo, commit: str, paths: set[str]) -> None:
    """Give tracked files that a run rewrote their content at `commit` back (paths read literally)."""
    if not paths:
        return
    with tempfile.TemporaryDirectory(prefix="kernel-mcp-paths-") as tmp:
        listing = Path(tmp) / "paths"
        listing.write_bytes(b"\0".join(p.encode() for p in sorted(paths)) + b"\0")
        with wt.git.custom_environment(GIT_LITERAL_PATHSPECS="1"):
            wt.git.checkout(commit, f"--pathspec-from-file={listing}", "--pathspec-file-nul")


def branch_head(wt: git.Repo, branch: str) -> str:
    return wt.git.rev_parse("--verify", f"refs/heads/{branch}^{{commit}}")


def advance_branch(wt: git.Repo, branch: str, commit: str, expected: str) -> None:
    """Point the branch at `commit` only if it still points at `expected` (git checks and swaps
    under its own ref lock): a second server keeping at the same moment cannot move BEST twice."""
    try:
        wt.git.update_ref(f"refs/heads/{branch}", commit, expected)
    except git.GitCommandError as exc:
        raise WorkspaceError(f"the experiment's branch {branch} moved while this step ran", hint=(exc.stderr or "").strip()[-200:] or None) from None


def sync_index(wt: git.Repo) -> None:
    """The worktree's index to its HEAD, files untouched (after the branch was moved directly)."""
    wt.git.reset("-q")
