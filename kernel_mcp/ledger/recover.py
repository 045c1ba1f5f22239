"""What keeps the ledger whole when several server processes share a workspace, or one is killed.

- One lock per workspace (`flock` on `.kernel-mcp/ledger.lock`), shared by every server process:
  the steps that change git or the ledger hold it, so two servers cannot keep the same attempt
  twice or move BEST under each other.
- Owners: a step that takes minutes without the lock (an experiment's baseline, a batch of
  candidates) records its process (pid and start time); what a dead owner left half-made is
  removed by the next call.
- A git `index.lock` left in the ledger's own worktree by a killed step is stale once the
  workspace lock is held (only the ledger runs git there), and is removed.
"""

from __future__ import annotations

import fcntl
import shutil
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import git
import psutil

from kernel_mcp.errors import WorkspaceError

LOCK_NAME = "ledger.lock"
LOCK_WAIT_S = 300.0
OWNER_FILE = "owner"
STALE_INDEX_LOCK_S = 5.0


@asynccontextmanager
async def workspace_lock(state_dir: Path, wait_s: float = LOCK_WAIT_S):
    """Hold the workspace's ledger lock (polling, so the event loop never blocks on it)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    handle = (state_dir / LOCK_NAME).open("a")
    deadline = time.monotonic() + wait_s
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise WorkspaceError(
                        f"another kernel-mcp process held the ledger of this workspace for {wait_s:.0f} s",
                        hint="wait for its step to finish, or stop the other server",
                    ) from None
                await anyio.sleep(0.05)
        yield
    finally:
        handle.close()  # closing releases the flock


@contextmanager
def lock_if_free(state_dir: Path):
    """The workspace lock if no other process holds it now (yields True), else yields False at once:
    a step holding it is mid-way and will finish, or the next call repairs what it left."""
    state_dir.mkdir(parents=True, exist_ok=True)
    handle = (state_dir / LOCK_NAME).open("a")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            got = True
        except BlockingIOError:
            got = False
        yield got
    finally:
        handle.close()


JUDGE_LOCK = "judge.lock"


@contextmanager
def judging(state_dir: Path, what: str):
    """One judge at a time in a workspace: BEST's trees, the private folders and the outputs the
    benchmark writes in them are shared by every server on it, so a measurement refuses to start
    while another holds this lock, and names it (process, step, since when)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    handle = (state_dir / JUDGE_LOCK).open("a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read(300).strip() or "another process"
            raise WorkspaceError(
                f"another kernel-mcp judge is measuring in this workspace: {holder}",
                hint="wait for its step to answer; two judges on one workspace would share BEST's tree and its outputs",
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {owner_token().split(':')[0]} ({what}, since {time.strftime('%H:%M:%S')})")
        handle.flush()
        yield
    finally:
        handle.close()  # closing releases the flock; the text stays for nobody once free


def owner_token() -> str:
    """This process, as pid and start time (a pid alone can be reused)."""
    me = psutil.Process()
    return f"{me.pid}:{me.create_time():.2f}"


def owner_alive(token: str | None) -> bool:
    if not token:
        return False
    try:
        pid, created = token.split(":")
        proc = psutil.Process(int(pid))
        return abs(proc.create_time() - float(created)) < 0.02 and proc.status() != psutil.STATUS_ZOMBIE
    except (ValueError, psutil.Error):
        return False


def clear_stale_index_lock(wt: git.Repo) -> bool:
    """Remove the worktree's index.lock left by a killed step (call with the workspace lock held)."""
    lock = Path(wt.git_dir) / "index.lock"
    try:
        if time.time() - lock.stat().st_mtime >= STALE_INDEX_LOCK_S:
            lock.unlink()
            return True
    except FileNotFoundError:
        pass
    return False


def mark_owner(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / OWNER_FILE).write_text(owner_token())


def orphan_folders(parent: Path) -> list[Path]:
    """The ledger's own folders directly under `parent` (each marked with its owner when made) whose
    owning process is gone. Names are never matched by pattern: a folder without the ledger's
    owner mark is not the ledger's, and is left alone."""
    if not parent.is_dir():
        return []
    found = []
    for folder in sorted(parent.iterdir()):
        owner = folder / OWNER_FILE
        if folder.is_symlink() or not folder.is_dir() or not owner.is_file():
            continue
        if not owner_alive(owner.read_text().strip()):
            found.append(folder)
    return found


def _worktrees_in(folder: Path) -> list[Path]:
    """`folder` itself when it is a worktree (BEST's), else the worktrees directly in it (a batch's)."""
    if (folder / ".git").is_file():
        return [folder]
    return sorted(p for p in folder.iterdir() if (p / ".git").is_file()) if folder.is_dir() else []


def remove_folder(repo: git.Repo, folder: Path, recovery: str | None = None) -> list[str]:
    """Remove a folder of the ledger's worktrees. With `recovery` (a ref prefix), uncommitted work in
    any worktree found there is first committed under `recovery/<folder>-<worktree>`, never lost;
    returns those refs."""
    from kernel_mcp.ledger import gitops

    saved: list[str] = []
    git_dir = Path(repo.common_dir).resolve()
    for tree in _worktrees_in(folder) if recovery else []:
        if gitops.pointer_problem(tree, git_dir):
            continue  # not a worktree of this repository: nothing of it can be committed here
        wt = gitops.open_worktree(git_dir, tree)
        if gitops.dirty_paths(wt):
            commit = gitops.snapshot(wt, gitops.head_sha(wt) or "HEAD", set(), f"Recovered uncommitted work of {tree.relative_to(folder.parent)}\n")
            ref = f"{recovery}/{folder.name}-{tree.name}" if tree != folder else f"{recovery}/{folder.name}"
            gitops.pin(repo, ref, commit)
            saved.append(ref)
    shutil.rmtree(folder, ignore_errors=True)
    gitops.prune_worktrees(repo, folder)  # the records of what was in it, never one of the user's
    return saved
