"""A workspace: the folder (a git repository) holding the kernel, its kernel-mcp.toml and its state.

All paths a tool receives are resolved here, and nothing outside the workspace is ever read or
written: absolute paths, `..` escapes, symbolic links leading out, NUL bytes and names that a
program would take for an option are refused. The one exception is reading: the import tools may
read the folders the workspace's own `[imports] folders` names.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel

from kernel_mcp.errors import InvalidInput, WorkspaceError
from kernel_mcp.workspace.config import CONFIG_NAME, WorkspaceConfig, load_config
from kernel_mcp.workspace.runs import RunStore

STATE_DIR = ".kernel-mcp"


def state_folder(root: Path) -> Path:
    """`root`'s state folder, where the server writes run folders and logs, the ledger, worktrees and
    each run's private sandbox folder. A symbolic link there (the folder itself, or runs/, worktrees/,
    sandbox/, the ledger's database in it) would have all of that written wherever it leads, outside
    the workspace and outside what a sealed run may write: refused, as is a state folder that is no
    folder. Checked at each use, since the workspace's own commands can plant one meanwhile."""
    state = root / STATE_DIR
    try:
        info = os.lstat(state)
    except FileNotFoundError:
        return state  # made on first use, as a real folder
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
        raise WorkspaceError(
            f"the state folder {STATE_DIR} is {what}; the server writes its runs, logs, worktrees and sandboxes only into a real folder inside the workspace",
            hint=f"remove {root / STATE_DIR} (the server makes the folder itself)",
        )
    with os.scandir(state) as entries:
        links = sorted(entry.name for entry in entries if entry.is_symlink())
    if links:
        raise WorkspaceError(
            f"{STATE_DIR}/{links[0]} is a symbolic link"
            + (f" (and {len(links) - 1} more)" if len(links) > 1 else "")
            + "; the server writes only into real folders and files inside the workspace",
            hint=f"remove the link{'s' if len(links) > 1 else ''} in {state} (the server makes what it needs itself)",
        )
    return state


class GitPlace(BaseModel):
    """Where the workspace sits in its git repository."""

    top: str  # the repository's working tree
    subfolder: str  # the workspace inside it; "." at the top
    has_commit: bool  # the ledger needs one to start an experiment


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def open(cls, folder: str | os.PathLike[str] | None) -> Workspace:
        if folder is None or str(folder) == "":
            raise WorkspaceError("no workspace given", hint="start the server with --workspace DIR")
        root = Path(folder).expanduser()
        if not root.exists():
            raise WorkspaceError(f"workspace folder not found: {root}")
        if not root.is_dir():
            raise WorkspaceError(f"workspace is not a folder: {root}")
        return cls(root.resolve())

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_NAME

    @cached_property
    def config(self) -> WorkspaceConfig:
        return load_config(self.config_path)

    @property
    def state_dir(self) -> Path:
        return state_folder(self.root)

    @property
    def runs(self) -> RunStore:
        return RunStore(self.state_dir)

    def git(self) -> GitPlace | None:
        """The git repository holding the workspace, which may be the workspace itself or a folder
        above it (a workspace is often a subfolder of a project); None outside any repository."""
        import git  # GitPython: finds the repository by reading files, no git process

        try:
            repo = git.Repo(self.root, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            return None
        try:
            top = Path(repo.working_tree_dir).resolve() if repo.working_tree_dir else None
            has_commit = not repo.bare and repo.head.is_valid()
        except (OSError, ValueError, git.GitError):
            top, has_commit = None, False
        if top is None:
            return GitPlace(top=str(repo.git_dir), subfolder=".", has_commit=False)
        try:
            sub = self.root.relative_to(top).as_posix()
        except ValueError:  # reached through a link from outside the tree: say where the tree is
            sub = str(self.root)
        return GitPlace(top=str(top), subfolder=sub or ".", has_commit=has_commit)

    @property
    def is_git(self) -> bool:
        return self.git() is not None

    def sealed_side(self, tree: Path, key: str):
        """The boundary of one run (or one side of an evaluation) in `tree`: that tree, a private
        folder under the state folder, and the folders `[harness] writable` names."""
        from kernel_mcp import sandbox

        extra = []
        for entry in self.config.harness.writable:
            folder = Path(entry).expanduser()
            folder = folder if folder.is_absolute() else self.root / folder
            if folder.is_dir():
                extra.append(folder.resolve())
        return sandbox.side(tree, self.state_dir, key, extra)

    def resolve(self, relative: str, *, must_exist: bool = False) -> Path:
        """The absolute path of `relative` inside the workspace, or InvalidInput saying why not."""
        candidate = _checked_name(relative)
        if candidate.is_absolute():
            raise InvalidInput(f"path {relative!r} is absolute; give it relative to the workspace")
        resolved = (self.root / candidate).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise InvalidInput(f"path {relative!r} leads outside the workspace")
        if must_exist and not resolved.exists():
            raise InvalidInput(f"no such file in the workspace: {relative}")
        return resolved

    def import_path(self, given: str) -> tuple[Path, Path]:
        """Where an import tool may read `given`, and the folder its links must stay in: a path
        relative to the workspace as `resolve` takes it (the workspace), or an absolute or ~ path
        that, every link followed, lies in a folder `[imports] folders` names (that folder)."""
        candidate = _checked_name(given)
        if not (candidate.is_absolute() or given == "~" or given.startswith("~/")):  # `~name/x` stays a workspace path, as before
            return self.resolve(given, must_exist=True), self.root
        try:
            expanded = candidate.expanduser()
            folders = [Path(entry).expanduser().resolve() for entry in self.config.imports.folders]
        except RuntimeError:  # `~` with no home folder to stand for
            raise InvalidInput(f"path {given!r}: the server's user has no home folder for ~ to name") from None
        resolved = expanded.resolve()
        for folder in folders:
            if resolved == folder or folder in resolved.parents:
                if not resolved.exists():
                    raise InvalidInput(f"no such file: {given}")
                return resolved, folder
        raise InvalidInput(
            f"path {given!r} is absolute and lies in no folder that [imports] folders in {CONFIG_NAME} names"
            + (" (links followed)" if resolved != expanded else ""),
            hint=f'add its folder to {CONFIG_NAME}: [imports] folders = ["/path/to/logs"], or give a path relative to the workspace',
        )

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.root).as_posix()


def _checked_name(given: str) -> Path:
    """`given` as a path, or InvalidInput when it is empty, holds a NUL byte, or it or its last
    name would be read as an option by a program handed it."""
    if not isinstance(given, str) or not given.strip():
        raise InvalidInput("empty path")
    if "\x00" in given:
        raise InvalidInput("path contains a NUL byte")
    if given.startswith("-"):
        raise InvalidInput(f"path {given!r} starts with '-' and would be read as an option")
    candidate = Path(given)
    if candidate.name.startswith(("-", "@")):
        # `./-x.hip` or `src/@opts.hip`: a program handed the bare name would take it for an
        # option or a response file of options; no kernel or output file needs such a name
        raise InvalidInput(
            f"path {given!r}: the name {candidate.name!r} starts with {candidate.name[0]!r}, which a program would read as "
            + ("an option" if candidate.name[0] == "-" else "a response file of options"),
            hint="rename the file",
        )
    return candidate


@dataclass(frozen=True)
class PinnedWorkspace(Workspace):
    """The same workspace with its config fixed: a running experiment's, as frozen at its start, so
    that editing the checkout's kernel-mcp.toml (a correctness rule, a threshold) cannot change the
    rules of an experiment under way."""

    pinned: WorkspaceConfig | None = None

    @property
    def config(self) -> WorkspaceConfig:
        assert self.pinned is not None
        return self.pinned
