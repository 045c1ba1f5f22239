"""The layered documentation index: map (L0), topic pages (L1), sections and instructions (L2).

The shipped pages in docs_index/ are the project's own words with a citation for every figure;
a user adds official documents (`kernel-mcp docs ingest`). Everything is served from one SQLite
FTS5 index kept in the workspace's state folder, so searches are ranked (BM25) and need no network.
"""

from __future__ import annotations

from pathlib import Path

from kernel_mcp import safe_files
from kernel_mcp.docs.store import DocsStore
from kernel_mcp.errors import InvalidInput, KernelMcpError
from kernel_mcp.arch_registry import arch_names, check_arch, docs_index_dir
from kernel_mcp.tooling import ToolOutput

DB_NAME = "docs.sqlite"


def shipped_files(index: Path) -> list[Path]:
    return sorted(p for p in index.rglob("*.md") if p.name not in ("SOURCES.md", "README.md"))


_OPEN: dict[str, DocsStore] = {}


def open_store(state_dir: Path | None) -> DocsStore:
    """The workspace's index (created on first use), synced with the shipped pages once per process."""
    key = str(state_dir / DB_NAME) if state_dir is not None else ":memory:"
    if key in _OPEN:
        return _OPEN[key]
    if state_dir is not None:
        state_dir.mkdir(parents=True, exist_ok=True)
    store = DocsStore(key)
    index = docs_index_dir()
    files = shipped_files(index)
    for path in files:
        store.ingest(path, kind="shipped")
    store.forget_missing("shipped", {str(p.resolve()) for p in files})
    _OPEN[key] = store
    return store


class DocsMap(ToolOutput):
    text: str

    def render(self) -> str:
        return self.text


class SearchHit(ToolOutput):
    id: str
    title: str
    layer: int
    arch: str
    snippet: str


class SearchAnswer(ToolOutput):
    query: str
    arch: str | None
    hits: list[SearchHit]

    def render(self) -> str:
        if not self.hits:
            return f"no section matches {self.query!r}" + (f" for {self.arch}" if self.arch else "")
        return "\n".join(f"{h.id} (L{h.layer}{', ' + h.arch if h.arch else ''}): {h.title} -- {h.snippet}" for h in self.hits)


class SectionAnswer(ToolOutput):
    id: str
    title: str
    layer: int
    arch: str
    citation: str
    parent: str | None
    children: list[str]
    page: int
    pages: int
    text: str

    def render(self) -> str:
        head = f"{self.id}: {self.title} (L{self.layer}{', ' + self.arch if self.arch else ''}; page {self.page}/{self.pages})"
        lines = [head, f"source: {self.citation}", "", self.text]
        if self.parent:
            lines.append(f"\nparent: {self.parent}")
        if self.children:
            lines.append("children: " + ", ".join(self.children))
        return "\n".join(lines)


def docs_map(store: DocsStore) -> DocsMap:
    row = store.get("map")
    return DocsMap(text=row["body"])


def docs_search(store: DocsStore, query: str, arch: str | None, limit: int) -> SearchAnswer:
    if arch is not None:
        check_arch(arch)
    rows = store.search(query, arch, limit)
    hits = [SearchHit(id=r["id"], title=r["title"], layer=r["layer"], arch=r["arch"], snippet=" ".join(r["snippet"].split())[:220]) for r in rows]
    return SearchAnswer(query=query, arch=arch, hits=hits)


def docs_read(store: DocsStore, section_id: str, page: int, budget: int) -> SectionAnswer:
    row = store.get(section_id)
    body = row["body"]
    size = max(400, budget - 600)
    pages = max(1, -(-len(body) // size))
    if page < 1 or page > pages:
        raise InvalidInput(f"{section_id} has {pages} page(s); asked for page {page}")
    children = store.children(section_id)
    shown = children[:30] + ([f"... {len(children) - 30} more"] if len(children) > 30 else [])
    return SectionAnswer(
        id=row["id"], title=row["title"], layer=row["layer"], arch=row["arch"], citation=row["citation"][:400],
        parent=row["parent"], children=shown, page=page, pages=pages, text=body[(page - 1) * size : page * size],
    )


def isa_lookup(store: DocsStore, mnemonic: str, arch: str, budget: int) -> SectionAnswer:
    check_arch(arch)
    if arch not in arch_names("amd"):
        raise InvalidInput(f"isa_lookup covers AMD targets ({', '.join(arch_names('amd'))})")
    if not store.has_isa(arch):
        # a known target whose instruction entries are neither shipped nor ingested: say so plainly
        covered = ", ".join(store.isa_archs()) or "no target"
        raise InvalidInput(f"the documentation index holds no instruction entries for {arch} (it has them for {covered})",
                           hint=f"ingest AMD's machine-readable ISA XML for {arch} (kernel-mcp docs ingest); hw_spec and docs_search cover {arch}")
    rows = store.isa(mnemonic.strip(), arch)
    if not rows:
        close = store.mnemonics_like(mnemonic, arch)
        raise InvalidInput(f"no entry for {mnemonic!r} on {arch}", hint=("close: " + ", ".join(close)) if close else "ingest AMD's ISA XML for full coverage (kernel-mcp docs ingest)")
    return docs_read(store, rows[0]["id"], 1, budget)


class IngestAnswer(ToolOutput):
    results: list[dict]
    sections_total: int
    sources_total: int

    def render(self) -> str:
        lines = [f"{r['path']}: {r['status']}" + (f" ({r['sections']} sections)" if "sections" in r else "") for r in self.results]
        lines.append(f"index: {self.sources_total} sources, {self.sections_total} sections")
        return "\n".join(lines)


def ingest(store: DocsStore, paths: list[Path]) -> IngestAnswer:
    """Each file (or every supported file under a folder) is added; one bad file does not stop the rest."""
    results = []
    files: list[tuple[Path, Path | None]] = []  # each file, and the folder it was found in
    for path in paths:
        if path.is_dir():
            # links are listed too, so that one leading out of the folder is reported, not read
            files += [(p, path) for p in sorted(path.rglob("*"))
                      if not (p.is_dir() and not p.is_symlink()) and p.suffix.lower() in (".md", ".rst", ".html", ".htm", ".pdf", ".xml")]
        else:
            files.append((path, None))
    for path, folder in files:
        try:
            # a regular file (a FIFO would block the read forever), inside the folder it was found in
            safe_files.check_regular(path, str(path), within=folder, where=f"the folder {folder}")
            status, count = store.ingest(path)
            results.append({"path": str(path), "status": status, "sections": count})
        except KernelMcpError as exc:
            results.append({"path": str(path), "status": f"error: {exc.message}"})
        except OSError as exc:
            results.append({"path": str(path), "status": f"error: {exc}"})
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as exc:
            # A reader tripped on something malformed this file holds: reported, and the rest go on.
            results.append({"path": str(path), "status": f"error: malformed document ({type(exc).__name__}: {str(exc)[:200]})"})
    stats = store.stats()
    return IngestAnswer(results=results, sections_total=stats["sections"], sources_total=stats["sources"])
