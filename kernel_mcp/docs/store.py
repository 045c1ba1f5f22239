"""The documentation store: SQLite, sections for reading and passages for search (FTS5, BM25).

A source file is re-read only when its content hash changed; its sections and their passages are
replaced in one transaction, so a failed ingestion leaves the index as it was. A store written by
an older layout is rebuilt on open, the user's documents re-read from where they were ingested.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# the package's modules by their full names: the package imports this one (see test_architecture.py)
import kernel_mcp.docs.passages as passages
import kernel_mcp.docs.ranking as ranking
import kernel_mcp.docs.vocabulary as vocabulary
from kernel_mcp import safe_files
from kernel_mcp.docs.hardware_pages import PAGE_PREFIX, read_hardware_table
from kernel_mcp.docs.isa_xml import read_isa_xml
from kernel_mcp.docs.readers import SUFFIXES, Section, read_html, read_markdown, read_pdf, read_rst, slug
from kernel_mcp.errors import InvalidInput, KernelMcpError

MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
LAYOUT = 6  # PRAGMA user_version, of the tables and the reading rules: 1 had one search entry per section,
# 2 one per passage, 3 reads a bold paragraph as a heading (a glossary term), 4 names the hardware
# tables' sections by group, 5 names a product's names and PCI ids on its page, 6 shows the hardware
# tables' comments with their rows and the header comment in the page's opening; a store of another is
# rebuilt on open (a shipped file's hash is unchanged)
CANDIDATES = 100  # passages BM25 hands to the re-ranking
COMMON = 400  # a term in more passages than this (and than a tenth of them) is common: see _common
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
CREATE TABLE IF NOT EXISTS passages (
  rowid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, section TEXT NOT NULL REFERENCES sections(id) ON DELETE CASCADE,
  ord INTEGER NOT NULL, kind TEXT NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL, layer INTEGER NOT NULL,
  path TEXT NOT NULL, title TEXT NOT NULL, context TEXT NOT NULL, text TEXT NOT NULL, arch TEXT NOT NULL, mentions TEXT NOT NULL,
  keys TEXT NOT NULL, defines TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS passages_section ON passages(section);
CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(
  path, title, context, text, keys, defines, content='passages', content_rowid='rowid', tokenize='porter unicode61');
CREATE TRIGGER IF NOT EXISTS passages_ai AFTER INSERT ON passages BEGIN
  INSERT INTO passages_fts(rowid, path, title, context, text, keys, defines) VALUES (new.rowid, new.path, new.title, new.context, new.text, new.keys, new.defines); END;
CREATE TRIGGER IF NOT EXISTS passages_ad AFTER DELETE ON passages BEGIN
  INSERT INTO passages_fts(passages_fts, rowid, path, title, context, text, keys, defines) VALUES ('delete', old.rowid, old.path, old.title, old.context, old.text, old.keys, old.defines); END;
"""
# BM25 column weights (path, title, context, text, keys, defines): the passage's own heading or an
# exact name says more than a word of the running text; the headings above it, shared by every
# passage of the page, say less
WEIGHTS = "1.5, 3.0, 1.0, 1.0, 2.0, 8.0"


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _heading_paths(sections: list[Section]) -> dict[str, str]:
    """'Page > Section' above each section of one document (empty for the page itself)."""
    by_id = {s.id: s for s in sections}
    paths: dict[str, str] = {}
    for s in sections:
        parts: list[str] = []
        seen: set[str] = set()
        node: Section | None = s
        while node is not None and node.id not in seen and len(parts) < 8:
            seen.add(node.id)
            parts.append(node.title)
            node = by_id.get(node.parent or "")
        paths[s.id] = " > ".join(reversed(parts[1:]))[:240]
    return paths


def passage_rows(section: Section, path: str) -> list[tuple]:
    """(id, ord, kind, start, end, path, title, context, text, mentions, keys, defines) of one section."""
    if section.mnemonic:  # an instruction entry is read whole: one passage that defines its name
        found = [passages.Passage("entry", section.body, "", 0, len(section.body), defines=section.mnemonic)]
    else:
        body = section.body if section.searched is None else section.body[: section.searched]
        found = passages.split(body) if body.strip() else []
    rows = []
    for n, p in enumerate(found, start=1):
        # a section of one paragraph is its own passage; a table row always opens as a row
        pid = section.id if len(found) == 1 and p.kind != "row" else f"{section.id}#{n}"
        names = vocabulary.identifiers(" ".join((section.title, p.context, p.text)))
        defines = {vocabulary.compact(k) for k in vocabulary.identifiers(p.defines) or ([p.defines] if section.mnemonic else [])}
        if vocabulary.identifiers(section.title) == [section.title.strip()]:
            defines.add(vocabulary.compact(section.title.strip()))  # a section named after one instruction
        mentions = vocabulary.archs_mentioned(" ".join((path, section.title, p.context, p.text)))
        # the names, compacted, then the words of the CamelCase ones, which the FTS tokenizer cannot
        # split ("LibraryLogic" answers "library logic"; SQ_WAVES is split at its underscore already)
        keys = " ".join(dict.fromkeys([vocabulary.compact(k) for k in names] + vocabulary.name_parts(" ".join(names))))[:4000]
        rows.append((pid, n, p.kind, p.start, p.end, path, section.title, p.context, p.text, ",".join(sorted(mentions)), keys, " ".join(sorted(defines))))
    return rows


class DocsStore:
    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self._words: dict[int, tuple] = {}  # passage rowid -> its words, for ranking.rank
        self._count: int | None = None  # passages in the index
        self._holding: dict[tuple[str, int], int] = {}  # (a term as FTS5, a cap) -> the passages holding it, up to the cap
        self._version: int | None = None  # PRAGMA data_version when the above were last known good
        # what docs_read and docs_search's page check read of the sections and passages, by id: a
        # search reads the pages of its hits, and the same pages recur across a session's questions
        self._rows: dict[tuple[str, str, int], Any] = {}
        try:
            self.db = sqlite3.connect(self.path, timeout=30)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA foreign_keys = ON")
            self.db.execute("PRAGMA journal_mode = WAL") if self.path != ":memory:" else None
            stale = self._older_layout()
            self.db.executescript(SCHEMA)
            self.db.execute(f"PRAGMA user_version = {LAYOUT}")
        except sqlite3.DatabaseError as exc:
            raise KernelMcpError(f"the documentation index {self.path} is unreadable: {exc}", hint="delete it; it is rebuilt on the next call") from None
        for path, kind in stale:  # the user's documents, re-read into the new layout where they still are
            try:
                self.ingest(Path(path), kind=kind)
            except (KernelMcpError, OSError, ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
                continue

    def _older_layout(self) -> list[tuple[str, str]]:
        """Drops the tables of an older layout; returns the (path, kind) of its user documents."""
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        has_tables = self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'sources'").fetchone() is not None
        if version == LAYOUT or not has_tables:
            return []
        stale = [(r["path"], r["kind"]) for r in self.db.execute("SELECT path, kind FROM sources WHERE kind != 'shipped'")]
        self.db.execute("PRAGMA foreign_keys = OFF")  # dropping, not deleting: no cascades, no triggers
        objects = self.db.execute(
            "SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE type IN ('trigger', 'table') AND name NOT LIKE 'sqlite%'"
        ).fetchall()
        # triggers first, then the FTS tables (which take their shadow tables along), then the rest
        order = sorted(objects, key=lambda o: (o[0] != "trigger", not o[2].upper().startswith("CREATE VIRTUAL")))
        with self.db:
            for kind, name, _sql in order:
                if self.db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone():
                    self.db.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')
        self.db.execute("PRAGMA foreign_keys = ON")
        return stale

    def close(self) -> None:
        self.db.close()

    # ---- ingestion --------------------------------------------------------------------------
    def ingest(self, path: Path, kind: str = "user") -> tuple[str, int]:
        """Add or refresh one file; returns (what happened, number of sections)."""
        fmt = SUFFIXES.get(path.suffix.lower())
        if kind == "shipped" and path.suffix.lower() == ".toml":
            fmt = "hardware-table"  # the shipped hardware tables only: a user's TOML is no document
        if fmt is None:
            raise InvalidInput(f"{path.name}: unsupported format", hint="Markdown, reStructuredText, HTML, PDF, or AMD ISA XML")
        safe_files.check_regular(path, str(path))  # a FIFO would block the read forever
        size = path.stat().st_size
        if size == 0:
            raise InvalidInput(f"{path.name} is empty")
        if size > MAX_DOCUMENT_BYTES:
            raise InvalidInput(
                f"{path.name} is {size / 2**20:.0f} MiB, over the {MAX_DOCUMENT_BYTES // 2**20} MiB limit per document",
                hint="split it, or ingest the official files one by one",
            )
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
        headings = _heading_paths(sections)
        with self.db:
            self.db.execute("DELETE FROM sources WHERE path = ?", (key,))
            cur = self.db.execute(
                "INSERT INTO sources(path, kind, format, sha256, sections, ingested_at) VALUES (?,?,?,?,?,?)",
                (key, kind, fmt, digest, len(sections), time.strftime("%Y-%m-%dT%H:%M:%S")),
            )
            source_id = cur.lastrowid
            for order, s in enumerate(sections):
                arch = ",".join(s.arch)
                self.db.execute("DELETE FROM sections WHERE id = ?", (s.id,))  # a page moved to another file
                self.db.execute(
                    "INSERT INTO sections(id, source_id, parent, layer, ord, title, arch, summary, body, citation, mnemonic) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (s.id, source_id, s.parent, s.layer, order, s.title, arch, s.summary, s.body, s.citation, s.mnemonic),
                )
                self.db.executemany(
                    "INSERT INTO passages(id, section, ord, kind, start, end, path, title, context, text, mentions, keys, defines, layer, arch) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [(r[0], s.id) + r[1:] + (s.layer, arch) for r in passage_rows(s, headings[s.id])],
                )
        self._forget()
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
        if fmt == "hardware-table":
            return read_hardware_table(path, PAGE_PREFIX + slug(path.stem))
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
                    raise InvalidInput(
                        f"{path.name}: the id {s.id!r} belongs to a shipped page", hint="give the front matter another id (ingested pages live under user/)"
                    )

    def forget_missing(self, kind: str, present: set[str]) -> None:
        with self.db:
            for row in self.db.execute("SELECT path FROM sources WHERE kind = ?", (kind,)).fetchall():
                if row["path"] not in present:
                    self.db.execute("DELETE FROM sources WHERE path = ?", (row["path"],))
        self._forget()

    def _forget(self) -> None:
        """Drops what was learnt of the index's passages: they changed."""
        self._words.clear()
        self._holding.clear()
        self._rows.clear()
        self._count = None

    def sync(self) -> None:
        """Forgets the passages' words and counts, and the rows read, when another connection changed
        the index (the CLI's `docs ingest` while the server runs): a re-ingested passage can take a
        dropped one's rowid. A search, docs_read and docs_map call it once, then read through the caches."""
        version = self.db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            self._forget()
            self._version = version

    def _holding_count(self, term_fts: str, cap: int) -> int:
        """How many passages hold a term, counted up to `cap`; a term recurs across a session's questions."""
        key = (term_fts, cap)
        if key not in self._holding:
            count = "SELECT count(*) FROM (SELECT 1 FROM passages_fts WHERE passages_fts MATCH ? LIMIT ?)"
            self._holding[key] = self.db.execute(count, key).fetchone()[0]
        return self._holding[key]

    # ---- search -----------------------------------------------------------------------------
    def search(self, text: str, arch: str | None, limit: int, prefer: tuple[str | None, str | None] = (None, None)) -> list[dict]:
        """Passages ranked for the query: BM25 candidates, then ranking.py's order, at most two per section,
        each with a snippet. `prefer`: the workspace's target arch and product, preferred where the query names none."""
        query, found = self.ranked(text, arch, limit, prefer)
        return [{**hit, "snippet": ranking.snippet(passage, query)} for hit, passage in found]

    def ranked(
        self, text: str, arch: str | None, limit: int, prefer: tuple[str | None, str | None] = (None, None)
    ) -> tuple[ranking.Query, list[tuple[dict, str]]]:
        """`search`'s hits without their snippets, each with its passage's text, and the analysed
        query that ranking.snippet takes: docs_search cuts a snippet only for the hits it keeps."""
        query = ranking.analyse(text, arch, prefer)
        if query is None:
            raise InvalidInput("the query has no words to search for")
        self.sync()
        arch_clause = "AND (p.arch = '' OR p.arch LIKE '%all%' OR (',' || p.arch || ',') LIKE ?)" if arch else ""
        params: list = [query.fts(self._common(query))] + ([f"%,{arch},%"] if arch else []) + [CANDIDATES]
        rows = self.db.execute(
            f"""SELECT p.rowid, p.id, p.section, p.kind, p.start, p.end, p.layer, p.path, p.title, p.context, p.text, p.arch, p.mentions, p.keys, p.defines,
                       bm25(passages_fts, {WEIGHTS}) AS bm25
                FROM passages_fts JOIN passages p ON p.rowid = passages_fts.rowid
                WHERE passages_fts MATCH ? {arch_clause} ORDER BY bm25 LIMIT ?""",
            params,
        ).fetchall()
        hits: list[tuple[dict, str]] = []
        per_section: dict[str, int] = {}
        ranked = ranking.rank(query, rows, self._words)
        opened: set[str] = set()  # passages a better hit already opens at
        sections: dict[str, list] = {}  # the candidates of each section, where a hit may open instead
        for _value, r in ranked:
            sections.setdefault(r["section"], []).append(r)
        for value, r in ranked:
            if per_section.get(r["section"], 0) >= 2 or r["id"] in opened:
                continue
            start = ranking.opening(query, r, sections[r["section"]], self._words)
            if start["id"] in opened:
                continue
            per_section[r["section"]] = per_section.get(r["section"], 0) + 1
            opened.update((start["id"], r["id"]))
            hits.append(
                (
                    {"id": start["id"], "section": r["section"], "title": r["title"], "layer": r["layer"], "arch": r["arch"], "score": round(value, 4)},
                    r["text"],
                )
            )
            if len(hits) >= limit:
                break
        return query, hits

    def _common(self, query: ranking.Query) -> set[str]:
        """The query's terms found in more than a tenth of the passages (at least COMMON of them):
        scoring them over thousands of matches (every ISA entry says "register") costs
        milliseconds and selects nothing, so candidates must hold them all, or a rarer term.
        The counts (capped there) also weigh the terms by rarity for the re-ranking."""
        if len(query.terms) < 2:
            return set()
        total = self._passage_count()
        limit = max(COMMON, total // 10)
        query.settle_bridge(
            {term: self._holding_count(query.term_fts(term, bridged=False), ranking.OWN_WORD) for term in query.terms[:24] if term in query.bridged}
        )
        found = {term: self._holding_count(query.term_fts(term), limit + 1) for term in query.terms[:24]}
        query.weigh(found, total)
        return {term for term, count in found.items() if count > limit}

    def _passage_count(self) -> int:
        if self._count is None:
            self._count = self.db.execute("SELECT count(*) FROM passages").fetchone()[0]
        return self._count

    # ---- reading ----------------------------------------------------------------------------
    def _cached(self, what: str, key: str, limit: int, read: Callable[[], Any]) -> Any:
        at = (what, key, limit)
        if at not in self._rows:
            self._rows[at] = read()
        return self._rows[at]

    def get(self, section_id: str) -> sqlite3.Row:
        row = self._cached("section", section_id, 0, lambda: self.db.execute("SELECT * FROM sections WHERE id = ?", (section_id,)).fetchone())
        if row is None:
            close = self.db.execute(
                "SELECT id FROM sections WHERE id LIKE ? ORDER BY layer, id LIMIT 8", (f"%{section_id.split('/')[-1].split('#')[0][:40]}%",)
            ).fetchall()
            raise InvalidInput(f"no section {section_id!r}", hint=("close: " + ", ".join(r["id"] for r in close)) if close else "docs_search finds ids")
        return row

    def passage(self, passage_id: str) -> sqlite3.Row | None:
        return self._cached("passage", passage_id, 0, lambda: self.db.execute("SELECT * FROM passages WHERE id = ?", (passage_id,)).fetchone())

    def following(self, section_id: str, limit: int = 8) -> list[sqlite3.Row]:
        """The sections after one in its document's reading order (its children first, then the
        sections after it), at most `limit`."""
        return list(
            self._cached(
                "following",
                section_id,
                limit,
                lambda: self.db.execute(
                    """SELECT s.* FROM sections s JOIN sections c ON c.source_id = s.source_id
               WHERE c.id = ? AND s.ord > c.ord ORDER BY s.ord LIMIT ?""",
                    (section_id, limit),
                ).fetchall(),
            )
        )

    def children(self, section_id: str) -> list[str]:
        return list(
            self._cached(
                "children", section_id, 0, lambda: [r["id"] for r in self.db.execute("SELECT id FROM sections WHERE parent = ? ORDER BY ord", (section_id,))]
            )
        )

    def isa(self, mnemonic: str, arch: str) -> list[sqlite3.Row]:
        """The entries for an instruction on one arch, the shipped (curated) ones first."""
        return self.db.execute(
            """SELECT s.*, src.kind AS source_kind, src.format AS source_format FROM sections s JOIN sources src ON src.id = s.source_id
               WHERE s.mnemonic = ? AND (',' || s.arch || ',') LIKE ? ORDER BY src.kind != 'shipped', s.layer""",
            (mnemonic.lower(), f"%,{arch},%"),
        ).fetchall()

    def isa_archs_of(self, mnemonic: str) -> dict[str, list[str]]:
        """Every arch that has an entry for the instruction, with the entries' ids."""
        out: dict[str, list[str]] = {}
        for r in self.db.execute("SELECT id, arch FROM sections WHERE mnemonic = ?", (mnemonic.lower(),)):
            for a in filter(None, r["arch"].split(",")):
                out.setdefault(a, []).append(r["id"])
        return out

    def has_isa(self, arch: str) -> bool:
        row = self.db.execute("SELECT 1 FROM sections WHERE mnemonic IS NOT NULL AND (',' || arch || ',') LIKE ? LIMIT 1", (f"%,{arch},%",)).fetchone()
        return row is not None

    def complete_isa(self, arch: str) -> str | None:
        """The ingested machine-readable ISA file that lists every instruction of `arch`, if any."""
        row = self.db.execute(
            """SELECT src.path FROM sources src JOIN sections s ON s.source_id = src.id
               WHERE src.format = 'isa-xml' AND s.layer = 1 AND (',' || s.arch || ',') LIKE ? LIMIT 1""",
            (f"%,{arch},%",),
        ).fetchone()
        return Path(row["path"]).name if row else None

    def mentioned_in(self, mnemonic: str, arch: str) -> tuple[str, str] | None:
        """(section id, the words around it) where a page about `arch` names an instruction that it
        has no entry for (the shipped gfx942 entries list the forms gfx942 rejects); sections
        beside instruction entries first."""
        row = self.db.execute(
            """SELECT s.id, s.body FROM sections s WHERE s.mnemonic IS NULL AND (',' || s.arch || ',') LIKE ? AND instr(lower(s.body), ?) > 0
               ORDER BY EXISTS (SELECT 1 FROM sections e WHERE e.parent = s.parent AND e.mnemonic IS NOT NULL) DESC, s.layer DESC LIMIT 1""",
            (f"%,{arch},%", mnemonic.lower()),
        ).fetchone()
        if row is None:
            return None
        paragraph = next(p for p in row["body"].split("\n\n") if mnemonic.lower() in p.lower())  # instr() found one
        flat = " ".join(paragraph.split())
        if len(flat) <= 320:
            return row["id"], flat
        at = flat.lower().find(mnemonic.lower())
        start = max(at - 200, 0)
        return row["id"], ("... " if start else "") + flat[start : at + len(mnemonic) + 100] + " ..."

    def isa_archs(self) -> list[str]:
        """The targets that instruction entries are tagged with (shipped or ingested)."""
        rows = self.db.execute("SELECT DISTINCT arch FROM sections WHERE mnemonic IS NOT NULL").fetchall()
        return sorted({a for r in rows for a in r["arch"].split(",") if a})

    def mnemonics(self, arch: str | None = None) -> list[str]:
        if arch is None:
            return [r[0] for r in self.db.execute("SELECT DISTINCT mnemonic FROM sections WHERE mnemonic IS NOT NULL")]
        return [
            r[0] for r in self.db.execute("SELECT DISTINCT mnemonic FROM sections WHERE mnemonic IS NOT NULL AND (',' || arch || ',') LIKE ?", (f"%,{arch},%",))
        ]

    def stats(self) -> dict[str, int]:
        row = self.db.execute(
            "SELECT (SELECT count(*) FROM sources) AS sources, (SELECT count(*) FROM sections) AS sections, (SELECT count(*) FROM passages) AS passages"
        ).fetchone()
        return dict(row)
