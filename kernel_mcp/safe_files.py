"""Opening a file that a tool was pointed at: regular files only, and no symbolic link out of the
folder the file must stay in.

Opening a FIFO for reading blocks until a writer appears (forever, for an agent's trap), and a
device can stream without end; so the type is checked with lstat before anything opens the file,
and `open_regular` also opens with O_NONBLOCK (a FIFO swapped in after the check cannot block the
open) and checks the open descriptor again. A link is followed only to a target inside `within`;
where links are not allowed at all (run artifacts), O_NOFOLLOW makes the kernel refuse one.
Messages name the file and what is wrong with it, never anything read from it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from kernel_mcp.errors import InvalidInput


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def is_inside(path: Path, root: Path) -> bool:
    """Whether `path`, every link on the way followed, ends inside `root`."""
    resolved, top = path.resolve(), root.resolve()
    return resolved == top or top in resolved.parents


def check_regular(path: Path, label: str | None = None, *, within: Path | None = None, where: str = "the workspace", follow_links: bool = True) -> Path:
    """`path` when it is a regular file; otherwise InvalidInput saying why. A symbolic link is
    refused when `follow_links` is off, and otherwise followed only to a target under `within`."""
    label = label or path.name
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise InvalidInput(f"{label} is not a file: nothing is there") from None
    except OSError as exc:
        raise InvalidInput(f"{label} cannot be read: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        if not follow_links:
            raise InvalidInput(f"{label} is a symbolic link; links are not followed here")
        try:
            info = os.stat(path)
        except OSError:
            raise InvalidInput(f"{label} is a broken symbolic link") from None
    if within is not None and not is_inside(path, within):
        raise InvalidInput(f"{label} leads outside {where} through a symbolic link; it is not read")
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput(f"{label} is {_kind(info.st_mode)}; only regular files are read")
    return path


def open_regular(path: Path, label: str | None = None, *, within: Path | None = None, where: str = "the workspace", follow_links: bool = True) -> BinaryIO:
    """`path` opened for binary reading, after `check_regular`; the check is repeated on the open
    descriptor, so a file replaced in between is still refused."""
    label = label or path.name
    check_regular(path, label, within=within, where=where, follow_links=follow_links)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidInput(f"{label} is a symbolic link; links are not followed here") from None
        raise InvalidInput(f"{label} cannot be read: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InvalidInput(f"{label} is {_kind(mode)}; only regular files are read")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_text(path: Path, label: str | None = None, **checks) -> str:
    """The whole text of a checked regular file (UTF-8, undecodable bytes replaced)."""
    with open_regular(path, label, **checks) as handle:
        return handle.read().decode("utf-8", errors="replace")


def files_under(folder: Path, pattern: str, *, within: Path | None = None, where: str = "the workspace", relative_to: Path | None = None) -> list[Path]:
    """The files under `folder` whose names match `pattern` (recursively), sorted. Real folders
    that match are passed over; anything else that is not a regular file inside `within` (default:
    `folder` itself) is refused by name, so one planted link or FIFO cannot be read or block."""
    base = relative_to or folder
    found = []
    for path in sorted(folder.rglob(pattern)):
        if path.is_dir() and not path.is_symlink():
            continue
        try:
            label = path.relative_to(base).as_posix()
        except ValueError:
            label = path.name
        found.append(check_regular(path, label, within=within or folder, where=where))
    return found
