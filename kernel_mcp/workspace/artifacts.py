"""A run artifact as a resource: its MIME type, its bytes or its text, and a large text in pages.

Binary artifacts (plots, profiler reports, SQLite databases, archives) are served whole as bytes
with their type. Text is served in pages cut at UTF-8 character boundaries; a file of one page comes
back verbatim (a JSON or CSV artifact stays parseable), and a page of a longer one starts with a line
that says which page it is, how many there are and the URI of the next one.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import PurePosixPath

from kernel_mcp.errors import InvalidInput
from kernel_mcp.workspace.runs import RunStore, run_uri

# A page is this many tool answers' worth of text: 64 KiB at the default 4 KB answer budget, the
# same bound the tool answers' structured content has. An agent reads a resource on purpose, so a
# page may be larger than an answer; but a 3.1 MB kernel.s in one message floods a context window,
# while 64 KiB pages read it in about fifty steps and most logs and ISA listings in one or two.
PAGE_PER_BUDGET = 16
# A binary artifact is sent whole or not at all (half a PNG or SQLite file is of no use); beyond
# this, base64 makes a message too large for a client to hold, and the answer says where it is.
BINARY_LIMIT = 16 * 2**20
SNIFF_BYTES = 8192  # enough to tell text from binary for a name with no known extension

BINARY_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
    ".gz": "application/gzip",
    ".zip": "application/zip",
    ".tar": "application/x-tar",
    ".xz": "application/x-xz",
    ".zst": "application/zstd",
    ".db": "application/vnd.sqlite3",
    ".sqlite": "application/vnd.sqlite3",
    ".sqlite3": "application/vnd.sqlite3",
    # vendor profiles and code objects: no registered type, so the generic one
    ".ncu-rep": "application/octet-stream",
    ".nsys-rep": "application/octet-stream",
    ".qdrep": "application/octet-stream",
    ".cubin": "application/octet-stream",
    ".fatbin": "application/octet-stream",
    ".hsaco": "application/octet-stream",
    ".co": "application/octet-stream",
    ".o": "application/octet-stream",
    ".bin": "application/octet-stream",
    ".npy": "application/octet-stream",
    ".pftrace": "application/octet-stream",
    ".otf2": "application/octet-stream",
}
TEXT_TYPES = {
    ".json": "application/json",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".md": "text/markdown",
    ".html": "text/html",
    ".xml": "application/xml",
    ".svg": "image/svg+xml",
    ".toml": "application/toml",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
}
SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class ArtifactPage:
    uri: str  # of the artifact, without a page
    mime_type: str
    content: str | bytes  # bytes for a binary artifact
    size: int  # of the whole file, in bytes
    page: int
    pages: int
    start: int = 0  # the page's bytes in the file
    end: int = 0

    def next_uri(self) -> str | None:
        return f"{self.uri}?page={self.page + 1}" if self.page < self.pages else None

    def meta(self) -> dict[str, object]:
        """The page's place in the file, for a client that reads `_meta` rather than the text."""
        meta: dict[str, object] = {"kernel-mcp/page": self.page, "kernel-mcp/pages": self.pages, "kernel-mcp/size": self.size}
        if self.next_uri():
            meta["kernel-mcp/next"] = self.next_uri()  # absent on the last page
        return meta


def _looks_binary(head: bytes) -> bool:
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 3  # a character cut by the sniff's end is still text
    return False


def content_type(name: str, head: bytes) -> tuple[str, bool]:
    """The MIME type of an artifact and whether it is text: by its extension, else by its first bytes."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in BINARY_TYPES:
        return BINARY_TYPES[suffix], False
    if head.startswith(SQLITE_HEADER):
        return "application/vnd.sqlite3", False
    if suffix in TEXT_TYPES:
        return TEXT_TYPES[suffix], True
    if _looks_binary(head):
        return "application/octet-stream", False
    return "text/plain", True


def parse_page(value: str | int | None) -> int:
    if value is None or value == "":
        return 1
    try:
        page = int(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"page must be a whole number, got {value!r}") from None
    if page < 1:
        raise InvalidInput(f"pages are numbered from 1, got {page}")
    return page


def _char_start(data: bytes, index: int) -> int:
    """The first position at or after `index` where a UTF-8 character starts (continuation bytes,
    at most three, belong to the character before)."""
    position = index
    while position < len(data) and position - index < 3 and 0x80 <= data[position] < 0xC0:
        position += 1
    return position


def read_artifact(store: RunStore, run_id: str, name: str, page: int | str | None = 1, page_bytes: int = 64 * 1024) -> ArtifactPage:
    """One page of one artifact (the whole file when it is binary or short enough)."""
    number = parse_page(page)
    run = store.get(run_id)
    if not os.path.lexists(run.path(name)):
        files = run.files()
        raise InvalidInput(f"run {run.id} has no file {name!r}", hint="its files: " + (", ".join(files) if files else "none"))
    uri = run_uri(run.id, name)
    with run.open(name) as handle:  # a regular file of the run: no link, no FIFO
        size = os.fstat(handle.fileno()).st_size
        mime, is_text = content_type(name, handle.read(SNIFF_BYTES))
        handle.seek(0)
        if not is_text:
            if number != 1:
                raise InvalidInput(f"{run.id}/{name} is binary ({mime}) and comes whole: it has no page {number}")
            if size > BINARY_LIMIT:
                raise InvalidInput(
                    f"{run.id}/{name} is {size} bytes of {mime}, over the {BINARY_LIMIT} bytes a resource sends",
                    hint=f"open it on this machine: {run.folder / name}",
                )
            return ArtifactPage(uri, mime, handle.read(), size, 1, 1, 0, size)
        pages = max(1, math.ceil(size / page_bytes))
        if number > pages:
            raise InvalidInput(f"{run.id}/{name} has {pages} page(s) of {page_bytes} bytes; there is no page {number}", hint=f"the first page: {uri}")
        raw_start, raw_end = (number - 1) * page_bytes, min(number * page_bytes, size)
        handle.seek(raw_start)
        chunk = handle.read(raw_end - raw_start + 3)  # three more bytes: the end may fall inside a character
    start = _char_start(chunk, 0) if raw_start else 0
    end = _char_start(chunk, raw_end - raw_start) if raw_end < size else len(chunk)
    text = chunk[start:end].decode("utf-8", errors="replace")
    if pages == 1:
        return ArtifactPage(uri, mime, text, size, 1, 1, 0, size)
    first, last = raw_start + start, raw_start + end
    where = f"next page: {uri}?page={number + 1}" if number < pages else "this is the last page"
    header = f"[{name}: page {number} of {pages}, bytes {first}-{last - 1} of {size} ({mime} in pages of {page_bytes} bytes); {where}]\n"
    # a page of a JSON or CSV file is not a whole document: it goes as plain text, its header first
    return ArtifactPage(uri, "text/plain", header + text, size, number, pages, first, last)
