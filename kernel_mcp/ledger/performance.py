"""performance.md: the human-readable record of an experiment — the baseline and each real kept
improvement, one table row each, and a stop summary when a stop condition ends the run."""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp.errors import WorkspaceError
from kernel_mcp.untrusted import inline

if TYPE_CHECKING:
    from kernel_mcp.ledger.state import Attempt, Experiment

FILE_NAME = "performance.md"
HEADER = (
    "# Performance log\n\nKept results only (baseline and proven improvements), written by kernel-mcp's ledger.\n\n"
    "| date | commit | status | command | target class / dispatch | kernel | metric | GPU time | change vs best | why |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
)


def cell(value: object) -> str:
    """`value` as one table cell: the why, the hypothesis, class keys and file names are the agent's or
    the workspace's, and a lone \r or U+2028 ends a line for a Markdown reader as \n does (a forged
    row or heading); every control character is escaped, and | would end the cell."""
    return inline(value).replace("|", "/")


@dataclass
class Row:
    commit: str
    status: str
    command: str
    target: str
    kernel: str
    metric: str
    gpu_time: str
    change: str
    why: str

    def markdown(self) -> str:
        cells = [
            time.strftime("%Y-%m-%d %H:%M"),
            self.commit,
            self.status,
            f"`{self.command}`",
            self.target,
            self.kernel,
            self.metric,
            self.gpu_time,
            self.change,
            self.why,
        ]
        return "| " + " | ".join(map(cell, cells)) + " |\n"


# The server writes this file itself, outside any boundary: it must never follow a link a candidate
# put in its place (a link to a .pth file of the server's own environment ran code at its next start).
_NO_LINK = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def regular_or_absent(path: Path) -> bool:
    """True when the record is a plain file or not there; False for a link, a FIFO, a folder..."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return True


def _refuse_unless_regular(path: Path) -> None:
    if not regular_or_absent(path):
        raise WorkspaceError(
            f"{FILE_NAME} in {path.parent} is not a regular file (a link?): it is the ledger's own record, never written through",
            hint="experiment_revert restores BEST's copy",
        )


def _read(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | _NO_LINK)
    with os.fdopen(fd, "r", encoding="utf-8") as handle:
        return handle.read()


def _write(path: Path, text: str, append: bool = False) -> None:
    flags = os.O_WRONLY | os.O_CREAT | _NO_LINK | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def ensure(folder: Path) -> Path:
    path = folder / FILE_NAME
    _refuse_unless_regular(path)
    if not path.exists():
        _write(path, HEADER)
    elif "| date | commit | status |" not in _read(path):
        _write(path, "\n" + HEADER, append=True)
    return path


def append_row(folder: Path, row: Row) -> None:
    """Add the row (once: a keep retried after a crash does not add it twice)."""
    path = ensure(folder)
    text = _read(path)
    if f"| {row.commit} | {row.status} |" in text:
        return
    marker = "\n## Stop summary"
    head, sep, tail = text.partition(marker)
    _write(path, head.rstrip("\n") + "\n" + row.markdown() + (sep + tail if sep else ""))


def append_stop(folder: Path, reason: str, exp: Experiment, recent: list[Attempt], kept: list[Attempt] | None = None) -> None:
    """The stop summary: why, BEST, the kept steps, and the regressions that led to the stop."""
    path = ensure(folder)
    lines = [
        "\n## Stop summary\n",
        f"- stopped: {time.strftime('%Y-%m-%d %H:%M')}",
        f"- reason: {inline(reason)}",  # the agent's words: a newline in them would write lines of the summary
        f"- BEST commit: {exp.best_commit}",
        f"- kept: {len(kept or [])} attempt(s) including the baseline",
        "- figure compared: per pair of runs, the geometric mean of the scope's classes' benchmark metric, or the target "
        "kernel's total GPU time in us where the profiler was the keep metric; BEST -> candidate are medians over the pairs",
        "",
        "| attempt | scope | hypothesis | changed files | figure compared, BEST -> candidate | change | notes |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for a in recent:
        overall = a.evidence.overall
        metric = f"{overall.best_median:.4g} -> {overall.candidate_median:.4g}" if overall else "-"
        delta = f"{overall.change:+.2%}" if overall else "-"
        scope = f"target {a.target_class}" if a.target_class else "global"
        cells = [a.id, scope, a.hypothesis, ", ".join(a.files[:4]), metric, delta, "; ".join(a.reasons)[:200]]
        lines.append("| " + " | ".join(map(cell, cells)) + " |")
    _write(path, "\n".join(lines) + "\n", append=True)
