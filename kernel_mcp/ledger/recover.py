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
                    raise WorkspaceError(f"another kernel-mcp process held the ledger of this workspace for {wait_s:.0f} s",
                                         hint="wait for its step to finish, or stop the other server") from None
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


def orphan_folders(parent: Path, prefix: str) -> list[Path]:
    """Folders under `parent` named `prefix*` whose owning process is gone."""
    if not parent.is_dir():
        return []
    found = []
    for folder in parent.glob(prefix + "*"):
        owner = folder / OWNER_FILE
        token = owner.read_text().strip() if owner.is_file() else None
        if folder.is_dir() and not owner_alive(token):
            found.append(folder)
    return found


def remove_folder(repo: git.Repo, folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    repo.git.worktree("prune")
