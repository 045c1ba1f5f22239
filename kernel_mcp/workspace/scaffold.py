"""`kernel-mcp init DIR`: a kernel-mcp.toml fitted to the folder, and a .gitignore for what runs leave.

Two things made a fresh workspace unusable before: the example's `editable` globs named `.hip`
files, so a CUDA kernel was protected like the harness, and nothing ignored the benchmark's
outputs, so Python's bytecode caches and the CSV folder counted as "files added outside the
editable set" and every candidate was refused. Init now looks for the kernel sources that are
really there and writes the ignore lines a benchmark needs.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kernel_mcp.errors import WorkspaceError
from kernel_mcp.workspace.config import CONFIG_NAME, example_config
from kernel_mcp.workspace.workspace import STATE_DIR

# GPU and C++ kernel sources. Python files are left out on purpose: in a Python workspace they are
# almost always the harness (the benchmark, the reference, the shape list), which must stay protected.
KERNEL_SUFFIXES = (".hip", ".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".c")
# Folders that hold no kernel under optimization: git's and the server's state, build and benchmark
# outputs, caches, and vendored code (a library beside the kernel is not the agent's to edit).
SKIP_DIRS = {".git", STATE_DIR, "build", "out", "__pycache__", "node_modules", "third_party", "vendor", "external"}
# A source that looks like part of the harness (a C++ benchmark driver, a reference kernel, a
# test) stays protected: its folder's editable files are then named one by one instead of by glob.
HARNESS_NAME = re.compile(r"^(bench|benchmark|reference|ref|test|tests|check|verify|harness|main|driver)([_.-]|$)", re.I)
# What every workspace's runs leave behind: the server's state, Python caches, benchmark outputs.
IGNORE_LINES = [f"{STATE_DIR}/", "__pycache__/", "*.pyc", "out/", "build/"]
# The example's editable line, replaced by what was found.
EXAMPLE_EDITABLE = re.compile(r"^editable = .*$", re.M)


@dataclass
class Initialized:
    """What `init` wrote: the config, the editable globs it found, and the ignore lines it added."""

    config_path: Path
    editable: list[str] = field(default_factory=list)  # empty: none found, the example's globs stay
    protected_sources: list[str] = field(default_factory=list)  # sources left protected as harness-like
    ignore_path: Path | None = None
    ignore_added: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"wrote {self.config_path}"]
        if self.editable:
            out.append(f"[harness] editable = {json.dumps(self.editable)} (the kernel sources found; everything else is protected)")
        else:
            out.append(
                "no kernel sources (" + " ".join(KERNEL_SUFFIXES) + ") found: [harness] editable keeps the example's "
                "globs; set it to your kernel's files before experiment_start"
            )
        if self.protected_sources:
            out.append("left protected, as they look like the harness: " + ", ".join(self.protected_sources[:8]))
        if self.ignore_added and self.ignore_path is not None:  # both or neither
            out.append(f"{self.ignore_path.name}: added {' '.join(self.ignore_added)}")
        out.append("commit kernel-mcp.toml and .gitignore with the kernel before experiment_start")
        return out


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in SKIP_DIRS


def find_kernel_sources(root: Path) -> list[str]:
    """Kernel source files under `root`, relative and sorted, outside the skipped folders."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _skipped(d))
        base = Path(folder).relative_to(root)
        found += [(base / f).as_posix() for f in files if f.endswith(KERNEL_SUFFIXES) and not f.startswith(".")]
    return sorted(found)


def editable_globs(sources: list[str]) -> tuple[list[str], list[str]]:
    """Globs by folder and extension for `sources` (e.g. `src/*.cu`), and the harness-like sources
    left out. Top-level files are named one by one: fnmatch's `*` crosses `/`, so a top-level `*.cu`
    would make every `.cu` file in every folder editable. For the same reason a folder's glob is
    given up for names when it would reach a harness-like file, in that folder or below it."""
    protected = [rel for rel in sources if HARNESS_NAME.match(rel.rpartition("/")[2])]
    by_folder: dict[str, list[str]] = {}
    for rel in sources:
        if rel not in protected:
            folder, _, name = rel.rpartition("/")
            by_folder.setdefault(folder, []).append(name)
    globs: list[str] = []
    for folder, names in by_folder.items():
        named = [f"{folder}/{n}" if folder else n for n in names]
        wide = sorted({f"{folder}/*{Path(n).suffix}" for n in names}) if folder else []
        if wide and not any(fnmatch.fnmatch(p, g) for p in protected for g in wide):
            globs += wide
        else:
            globs += named
    return globs, protected


def _covers(existing: set[str], line: str) -> bool:
    """Whether an ignore line the file already has does the same job (`/out`, `out`, `*.py[cod]`)."""
    core = line.strip("/")
    if core in existing:
        return True
    return line == "*.pyc" and bool({"*.py[cod]", "*.py[co]", "*.py[cd]"} & existing)


def update_gitignore(root: Path) -> tuple[Path, list[str]]:
    """Append the missing IGNORE_LINES to root/.gitignore (created if absent); never rewrite a line."""
    path = root / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    existing = {line.strip().strip("/") for line in text.splitlines() if line.strip() and not line.startswith("#")}
    missing = [line for line in IGNORE_LINES if not _covers(existing, line)]
    if missing:
        lead = "" if not text or text.endswith("\n") else "\n"
        header = "# kernel-mcp: the server's state, Python caches and benchmark outputs are not the kernel\n"
        with path.open("a", encoding="utf-8") as handle:
            handle.write(lead + header + "\n".join(missing) + "\n")
    return path, missing


def initialize(folder: str | os.PathLike[str], *, force: bool = False) -> Initialized:
    """Write kernel-mcp.toml (editable set from the sources found) and the .gitignore lines."""
    root = Path(folder).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    target = root / CONFIG_NAME
    if target.exists() and not force:
        raise WorkspaceError(f"{target} already exists", hint="pass --force to overwrite it")
    globs, protected = editable_globs(find_kernel_sources(root))
    text = example_config()
    if globs:
        line = "# Found by `kernel-mcp init` in this folder; add or remove globs to fit.\neditable = " + json.dumps(globs)
        text = EXAMPLE_EDITABLE.sub(lambda _: line, text, count=1)
    target.write_text(text, encoding="utf-8")
    ignore, added = update_gitignore(root)
    return Initialized(config_path=target, editable=globs, protected_sources=protected, ignore_path=ignore, ignore_added=added)


def init_workspace(folder: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write a kernel-mcp.toml fitted to the folder and its .gitignore lines; return the config path."""
    return initialize(folder, force=force).config_path
