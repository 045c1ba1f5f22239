"""The documentation store: SQLite with an FTS5 index (BM25), filled incrementally.

A source file is re-read only when its content hash changed; its sections are replaced in one
transaction, so a failed ingestion leaves the index as it was.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import time
from pathlib import Path

from kernel_mcp import safe_files
from kernel_mcp.docs.readers import SUFFIXES, Section, read_html, read_isa_xml, read_markdown, read_pdf, read_rst, slug
from kernel_mcp.errors import InvalidInput, KernelMcpError

MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (
  id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, kind TEXT NOT NULL, format TEXT NOT NULL,
  sha256 TEXT NOT NULL, sections INTEGER NOT NULL, ingested_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sections (
  rowid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
  parent TEXT, layer INTEGER NOT NULL, ord INTEGER NOT NULL, title TEXT NOT NULL, arch TEXT NOT NULL,
  summary TEXT NOT NULL, body TEXT NOT NULL, citation TEXT NOT NULL, mnemonic TEXT);
CREATE INDEX IF NOT EXISTS sections_parent ON sections(parent);
CREATE INDEX IF NOT EXISTS sections_mnemonic ON sections(mnemonic);
CREATE VIRTUAL TABLE IF NOT EXISTS sections_fts USING fts5(
  title, summary, body, content='sections', content_rowid='rowid', tokenize='porter unicode61');
CREATE TRIGGER IF NOT EXISTS sections_ai AFTER INSERT ON sections BEGIN
  INSERT INTO sections_fts(rowid, title, summary, body) VALUES (new.rowid, new.title, new.summary, new.body); END;
CREATE TRIGGER IF NOT EXISTS sections_ad AFTER DELETE ON sections BEGIN
  INSERT INTO sections_fts(sections_fts, rowid, title, summary, body) VALUES ('delete', old.rowid, old.title, old.summary, old.body); END;
"""


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i in is it its many much of on or should the "
    "there this to was what when where which who why will with".split()
)


def fts_query(text: str, any_word: bool) -> str:
    words = re.findall(r"[A-Za-z0-9_]+", text.lower())
    if not words:
        raise InvalidInput("the query has no words to search for")
    words = [w for w in words if w not in STOPWORDS] or words
    quoted = [f'"{w}"' for w in words[:24]]
    return (" OR " if any_word else " AND ").join(quoted)


class DocsStore:
    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        try:
            self.db = sqlite3.connect(self.path, timeout=30)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA foreign_keys = ON")
            self.db.execute("PRAGMA journal_mode = WAL") if self.path != ":memory:" else None
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise KernelMcpError(f"the documentation index {self.path} is unreadable: {exc}", hint="delete it; it is rebuilt on the next call") from None

    def close(self) -> None:
        self.db.close()

    # ---- ingestion --------------------------------------------------------------------------
    def ingest(self, path: Path, kind: str = "user") -> tuple[str, int]:
        """Add or refresh one file; returns (what happened, number of sections)."""
        fmt = SUFFIXES.get(path.suffix.lower())
        if fmt is None:
            raise InvalidInput(f"{path.name}: unsupported format", hint="Markdown, reStructuredText, HTML, PDF, or AMD ISA XML")
        safe_files.check_regular(path, str(path))  # a FIFO would block the read forever
        size = path.stat().st_size
        if size == 0:
            raise InvalidInput(f"{path.name} is empty")
        if size > MAX_DOCUMENT_BYTES:
            raise InvalidInput(f"{path.name} is {size / 2**20:.0f} MiB, over the {MAX_DOCUMENT_BYTES // 2**20} MiB limit per document", hint="split it, or ingest the official files one by one")
        with safe_files.open_regular(path, str(path)) as handle:
            data = handle.read(MAX_DOCUMENT_BYTES + 1)
        digest = _hash(data)
        key = str(path.resolve())
        row = self.db.execute("SELECT sha256, sections FROM sources WHERE path = ?", (key,)).fetchone()
        if row is not None and row["sha256"] == digest:
            return "unchanged", row["sections"]
        sections = self._read(path, fmt, data, kind)
        if kind != "shipped":
            self._refuse_shipped_ids(path, sections)
        with self.db:
            self.db.execute("DELETE FROM sources WHERE path = ?", (key,))
            cur = self.db.execute(
                "INSERT INTO sources(path, kind, format, sha256, sections, ingested_at) VALUES (?,?,?,?,?,?)",
                (key, kind, fmt, digest, len(sections), time.strftime("%Y-%m-%dT%H:%M:%S")),
            )
            source_id = cur.lastrowid
            for order, s in enumerate(sections):
                self.db.execute("DELETE FROM sections WHERE id = ?", (s.id,))  # a page moved to another file
                self.db.execute(
                    "INSERT INTO sections(id, source_id, parent, layer, ord, title, arch, summary, body, citation, mnemonic) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (s.id, source_id, s.parent, s.layer, order, s.title, ",".join(s.arch), s.summary, s.body, s.citation, s.mnemonic),
                )
        return ("updated" if row is not None else "added"), len(sections)

    def _read(self, path: Path, fmt: str, data: bytes, kind: str) -> list[Section]:
        prefix = "" if kind == "shipped" else "user/"
        page_id = prefix + slug(path.stem)
        if fmt == "pdf":
            if not data.startswith(b"%PDF"):
                raise InvalidInput(f"{path.name} does not start like a PDF (%PDF)")
            return read_pdf(path, data, page_id)
        if fmt == "isa-xml":
            return read_isa_xml(path, page_id)
        if b"\x00" in data[:8192]:
            raise InvalidInput(f"{path.name} looks binary, not {fmt} text")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(f"{path.name} is not UTF-8 text") from None
        if fmt == "markdown":
            return read_markdown(path, text, page_id)
        if fmt == "rst":
            return read_rst(path, text, page_id)
        return read_html(path, text, page_id)

    def _refuse_shipped_ids(self, path: Path, sections: list[Section]) -> None:
        """A user's document may not take the id of a shipped page: an ingested `id = "map"` replaced
        the map for good (the shipped file, unchanged, is never re-read)."""
        for s in sections:
            if not isinstance(s.id, str) or not s.id.strip():
                raise InvalidInput(f"{path.name}: a section has the id {s.id!r}; ids are non-empty text")
            if s.id == "map" or not s.id.startswith("user/"):
                row = self.db.execute("SELECT src.kind FROM sections s JOIN sources src ON src.id = s.source_id WHERE s.id = ?", (s.id,)).fetchone()
                if s.id == "map" or (row is not None and row["kind"] == "shipped"):
                    raise InvalidInput(f"{path.name}: the id {s.id!r} belongs to a shipped page", hint="give the front matter another id (ingested pages live under user/)")

    def forget_missing(self, kind: str, present: set[str]) -> None:
        with self.db:
            for row in self.db.execute("SELECT path FROM sources WHERE kind = ?", (kind,)).fetchall():
                if row["path"] not in present:
                    self.db.execute("DELETE FROM sources WHERE path = ?", (row["path"],))

    # ---- reading ----------------------------------------------------------------------------
    def search(self, query: str, arch: str | None, limit: int) -> list[sqlite3.Row]:
        arch_clause = "AND (s.arch = '' OR s.arch LIKE '%all%' OR (',' || s.arch || ',') LIKE ?)" if arch else ""
        for any_word in (False, True):
            params: list = [fts_query(query, any_word)]
            if arch:
                params.append(f"%,{arch},%")
            params.append(limit)
            rows = self.db.execute(
                f"""SELECT s.id, s.title, s.layer, s.arch, s.citation,
                           snippet(sections_fts, 2, '[', ']', ' ... ', 14) AS snippet,
                           bm25(sections_fts, 5.0, 2.0, 1.0) AS score
                    FROM sections_fts JOIN sections s ON s.rowid = sections_fts.rowid
                    WHERE sections_fts MATCH ? {arch_clause}
                    ORDER BY score LIMIT ?""",
                params,
            ).fetchall()
            if rows:
                return rows
        return []

    def get(self, section_id: str) -> sqlite3.Row:
        row = self.db.execute("SELECT * FROM sections WHERE id = ?", (section_id,)).fetchone()
        if row is None:
            close = self.db.execute("SELECT id FROM sections WHERE id LIKE ? ORDER BY layer, id LIMIT 8", (f"%{section_id.split('/')[-1][:40]}%",)).fetchall()
            raise InvalidInput(f"no section {section_id!r}", hint=("close: " + ", ".join(r["id"] for r in close)) if close else "docs_search finds ids")
        return row

    def children(self, section_id: str) -> list[str]:
        return [r["id"] for r in self.db.execute("SELECT id FROM sections WHERE parent = ? ORDER BY ord", (section_id,))]

    def isa(self, mnemonic: str, arch: str) -> list[sqlite3.Row]:
        return self.db.execute(
            "SELECT * FROM sections WHERE mnemonic = ? AND (',' || arch || ',') LIKE ? ORDER BY layer",
            (mnemonic.lower(), f"%,{arch},%"),
        ).fetchall()

    def has_isa(self, arch: str) -> bool:
        row = self.db.execute("SELECT 1 FROM sections WHERE mnemonic IS NOT NULL AND (',' || arch || ',') LIKE ? LIMIT 1", (f"%,{arch},%",)).fetchone()
        return row is not None

    def isa_archs(self) -> list[str]:
        """The targets that instruction entries are tagged with (shipped or ingested)."""
        rows = self.db.execute("SELECT DISTINCT arch FROM sections WHERE mnemonic IS NOT NULL").fetchall()
        return sorted({a for r in rows for a in r["arch"].split(",") if a})

    def mnemonics_like(self, mnemonic: str, arch: str, limit: int = 8) -> list[str]:
        stem = re.sub(r"_[^_]*$", "", mnemonic.lower())
        rows = self.db.execute(
            "SELECT DISTINCT mnemonic FROM sections WHERE mnemonic LIKE ? AND (',' || arch || ',') LIKE ? ORDER BY mnemonic LIMIT ?",
            (f"{stem}%", f"%,{arch},%", limit),
        ).fetchall()
        return [r["mnemonic"] for r in rows]

    def stats(self) -> dict[str, int]:
        row = self.db.execute("SELECT (SELECT count(*) FROM sources) AS sources, (SELECT count(*) FROM sections) AS sections").fetchone()
        return dict(row)
