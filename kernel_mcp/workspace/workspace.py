"""A workspace: the folder (a git repository) holding the kernel, its kernel-mcp.toml and its state.

All paths a tool receives are resolved here, and nothing outside the workspace is ever read or
written: absolute paths, `..` escapes, symbolic links leading out, NUL bytes and names that a
program would take for an option are refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from kernel_mcp.errors import InvalidInput, WorkspaceError
from kernel_mcp.workspace.config import CONFIG_NAME, WorkspaceConfig, load_config
from kernel_mcp.workspace.runs import RunStore

STATE_DIR = ".kernel-mcp"


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
        return self.root / STATE_DIR

    @property
    def runs(self) -> RunStore:
        return RunStore(self.state_dir)

    @property
    def is_git(self) -> bool:
        return (self.root / ".git").exists()

    def resolve(self, relative: str, *, must_exist: bool = False) -> Path:
        """The absolute path of `relative` inside the workspace, or InvalidInput saying why not."""
        if not isinstance(relative, str) or not relative.strip():
            raise InvalidInput("empty path")
        if "\x00" in relative:
            raise InvalidInput("path contains a NUL byte")
        if relative.startswith("-"):
            raise InvalidInput(f"path {relative!r} starts with '-' and would be read as an option")
        candidate = Path(relative)
        if candidate.name.startswith(("-", "@")):
            # `./-x.hip` or `src/@opts.hip`: a program handed the bare name would take it for an
            # option or a response file of options; no kernel or output file needs such a name
            raise InvalidInput(
                f"path {relative!r}: the name {candidate.name!r} starts with {candidate.name[0]!r}, which a program would read as "
                + ("an option" if candidate.name[0] == "-" else "a response file of options"),
                hint="rename the file",
            )
        if candidate.is_absolute():
            raise InvalidInput(f"path {relative!r} is absolute; give it relative to the workspace")
        resolved = (self.root / candidate).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise InvalidInput(f"path {relative!r} leads outside the workspace")
        if must_exist and not resolved.exists():
            raise InvalidInput(f"no such file in the workspace: {relative}")
        return resolved

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.root).as_posix()

