"""The two trees of an evaluation, checked around every run.

The boundary (sandbox.py) keeps a run from writing the other side's tree; this is the check that
would see it if it could (an unsealed machine, a process the boundary did not cover, another
program of the user's). Before every run both trees must be as the last run left them: BEST is
verified before each of its runs, the candidate before and after each of its own. After a run,
the other side's tree must be untouched. Every file counts, ignored build outputs included, by
inode, size, mtime and ctime (ctime moves on any write, even one that puts mtime back). The
candidate's protected files are hashed before each of its runs against the hashes frozen at
`experiment_start`, and each tree's `.git` pointer must still lead to the workspace's repository.
Anything else is named, and the evaluation is void.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

from kernel_mcp.ledger import gitops

Side = Literal["best", "candidate"]
Stamp = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns
MAX_FILES = 200_000  # a tree larger than this is checked on its first MAX_FILES entries
SHOWN = 6


def stamps(folder: Path) -> dict[str, Stamp]:
    """Every entry under `folder` (links not followed), by its path relative to it."""
    found: dict[str, Stamp] = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(top, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            found[os.path.relpath(path, folder)] = (st.st_ino, 0 if stat.S_ISDIR(st.st_mode) else st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            if len(found) >= MAX_FILES:
                return found
    return found


def changed(before: dict[str, Stamp], after: dict[str, Stamp]) -> list[str]:
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def named(paths: list[str]) -> str:
    return ", ".join(paths[:SHOWN]) + (f" (and {len(paths) - SHOWN} more)" if len(paths) > SHOWN else "")


class TreeGuard:
    """Checks around each run of one evaluation; `problems` lists what voids it."""

    def __init__(
        self, folders: dict[Side, Path], trees: dict[Side, Path], git_dir: Path | None, protected: dict[str, str] | None = None, protected_now=None
    ) -> None:
        self.folders = folders  # where each side runs (the workspace folder inside its tree)
        self.trees = trees  # each side's worktree (its .git pointer)
        self.git_dir = git_dir  # the workspace's repository, where every pointer must lead
        self.protected = protected  # frozen hashes of the candidate's protected files
        self.protected_now = protected_now  # () -> the candidate's protected hashes now
        self.problems: list[str] = []
        self.last = {side: stamps(folder) for side, folder in folders.items()}

    def before(self, side: Side) -> bool:
        """Both trees as the last run left them; False (and a problem named) if not."""
        for other, folder in self.folders.items():
            moved = changed(self.last[other], stamps(folder))
            if moved:
                self.problems.append(f"{_label(other)}'s tree changed between runs (before {_label(side)}'s run): {named(moved)}")
        self._pointers()
        if self.problems:
            return False  # a redirected pointer: no git command runs in that tree
        if side == "candidate" and self.protected is not None and self.protected_now is not None:
            now = self.protected_now()
            differ = sorted(p for p in set(now) | set(self.protected) if now.get(p) != self.protected.get(p))
            if differ:
                self.problems.append(f"protected files differ from the experiment's start before the candidate's run: {named(differ)}")
        return not self.problems

    def after(self, side: Side) -> bool:
        """The other side's tree untouched by `side`'s run; its own tree is what the run left."""
        for other, folder in self.folders.items():
            now = stamps(folder)
            if other != side:
                moved = changed(self.last[other], now)
                if moved:
                    self.problems.append(f"{_label(side)}'s run wrote into {_label(other)}'s tree: {named(moved)}")
            self.last[other] = now
        self._pointers()
        return not self.problems

    def _pointers(self) -> None:
        if self.git_dir is None:
            return
        for side, tree in self.trees.items():
            why = gitops.pointer_problem(tree, self.git_dir)
            if why and not any(why in p for p in self.problems):
                self.problems.append(f"{_label(side)}'s tree: {why}")


def _label(side: Side) -> str:
    return "BEST" if side == "best" else "the candidate"
