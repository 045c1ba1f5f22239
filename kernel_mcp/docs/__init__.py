"""The layered documentation index: map (L0), topic pages (L1), sections and instructions (L2).

The shipped pages in docs_index/ are the project's own words with a citation for every figure;
a user adds official documents (`kernel-mcp docs ingest`). Everything is served from one SQLite
FTS5 index kept in the workspace's state folder, so searches are ranked (BM25, then ranking.py)
and need no network. Search returns passages (a table row, a chunk of prose, an instruction entry)
and docs_read opens the section at the passage.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from kernel_mcp import safe_files
import kernel_mcp.docs.ranking as ranking
from kernel_mcp.docs.hardware_pages import PAGE_PREFIX as HARDWARE_PAGES
from kernel_mcp.docs.hardware_pages import figures_as_written
from kernel_mcp.docs.store import DocsStore
from kernel_mcp.errors import InvalidInput, KernelMcpError
from kernel_mcp.arch_registry import arch_names, check_arch, docs_index_dir
from kernel_mcp.tooling import DEFAULT_BUDGET, ToolOutput

DB_NAME = "docs.sqlite"


def shipped_files(index: Path) -> list[Path]:
    """The shipped pages and the hardware tables, archs' and products' (read as pages too: hardware_pages.py)."""
    pages = sorted(p for p in index.rglob("*.md") if p.name not in ("SOURCES.md", "README.md"))
    return pages + sorted((index / "hardware").glob("*.toml")) + sorted((index / "hardware" / "products").glob("*.toml"))


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
    id: str  # the passage: docs_read opens the section at it
    section: str  # the section it belongs to
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


class IsaAnswer(SectionAnswer):
    mnemonic: str
    exists_on: list[str]  # every target the index has an entry for this instruction on

    def render(self) -> str:
        return f"{self.mnemonic} exists on: {', '.join(self.exists_on)}\n" + super().render()


def docs_map(store: DocsStore) -> DocsMap:
    store.sync()
    row = store.get("map")
    return DocsMap(text=row["body"])


def docs_search(
    store: DocsStore, query: str, arch: str | None, limit: int, prefer: tuple[str | None, str | None] = (None, None), budget: int = DEFAULT_BUDGET
) -> SearchAnswer:
    """`prefer`: the workspace's target arch and product label, which rank first where the query names
    no target or product of its own (a filter `arch` is stricter: other targets' pages are left out).
    A passage that the first page of a better hit shows (docs_read at `budget`) is no hit of its own:
    the place goes to one the reader has not seen."""
    if arch is not None:
        check_arch(arch)
    analysed, found = store.ranked(query, arch, 2 * limit + 4, prefer)
    hits: list[SearchHit] = []
    pages: list[str] = []  # the first pages of the hits kept, folded
    for h, passage in found:
        own = _folded(_passage_text(store, h["id"], h["section"]))
        if own and any(own in page for page in pages):
            continue
        hits.append(SearchHit(**{k: h[k] for k in ("id", "section", "title", "layer", "arch")}, snippet=ranking.snippet(passage, analysed)))
        if len(hits) >= limit:
            break
        pages.append(_folded(docs_read(store, h["id"], 1, budget).text))
    return SearchAnswer(query=query, arch=arch, hits=hits)


def _folded(text: str) -> str:
    return " ".join(text.split())


def _passage_text(store: DocsStore, passage_id: str, section_id: str) -> str:
    """A hit's own text as its section holds it (a row as its table line, as docs_read shows it)."""
    body = store.get(section_id)["body"]
    passage = store.passage(passage_id) if "#" in passage_id else None
    return body[passage["start"] : passage["end"]] if passage is not None else body


def _page_size(budget: int) -> int:
    return max(400, budget - 600)  # room for the id, the citation and the children around the text


def _as_written(text: str, written: dict[str, str]) -> str:
    """A hardware table's rows with each figure's name as its file writes the figure (name = { value
    = 1.6384e12, unit = "bytes/s" }) beside the value as people write it (1.6384 TB/s)."""
    if not written:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("| "):
            key = line[2:].split(" |", 1)[0]
            if key in written:
                lines[i] = "| " + written[key] + line[2 + len(key) :]
        elif line.startswith("row: figure: "):
            key = line[len("row: figure: ") :].split(";", 1)[0]
            if key in written:
                lines[i] = "row: figure: " + written[key] + line[len("row: figure: ") + len(key) :]
    return "\n".join(lines)


def _other_figures(store: DocsStore, page_id: str, shown: str = "", before: int = 0) -> str:
    """The rest of a hardware table's page, a row a line: a question about a product often asks two
    of its figures at once ("how many SMs and what boost clock"), and a hit opens at one. `shown`:
    the section the hit opened, of which only the rows above offset `before` are still to show."""
    lines = []
    for child in store.children(page_id):
        section = store.get(child)
        body = section["body"][:before] if child == shown else section["body"]
        rows = [line for line in body.splitlines() if line.startswith("|") and not line.startswith(("| figure |", "| ---"))]
        lines += [f"{section['title']}:"] + rows if rows else []
    return ("\n\nthe page's other figures:\n" + "\n".join(lines)) if lines else ""


HEADER_COMMENT = "The table's header comment: "


def _table_header(store: DocsStore, page_id: str) -> str:
    """What a hardware table's file says it describes (an APU, 6 XCDs (228 CUs) beside 24 Zen 4
    cores): a row's page shows what the table is about, which its page's opening holds and a hit on
    a row does not reach."""
    opening = store.get(page_id)["body"]
    at = opening.find(HEADER_COMMENT)
    return f"\n\nthe table's header comment: {opening[at + len(HEADER_COMMENT) :].strip()}" if at >= 0 else ""


def _read_on(store: DocsStore, section_id: str, room: int) -> str:
    """The sections that follow one in its document, each headed by its id and title, within
    `room` bytes: a page's opening paragraph or a short section leaves most of a page empty, and the
    answer to a question asked of it is often in the section after it (the three counters after
    the page that introduces s_waitcnt)."""
    out = ""
    for section in store.following(section_id):
        out += f"\n\n[{section['id']}] {section['title']}\n{section['body'].strip()}"
        if len(out.encode()) > room:
            cut = out.encode()[: max(0, room - 4)].decode(errors="ignore")
            return cut.rsplit(" ", 1)[0] + " ..."
    return out


def docs_read(store: DocsStore, section_id: str, page: int, budget: int) -> SectionAnswer:
    """A section, paged; or a passage (an id from docs_search): its section from that passage on,
    a table row first as 'header: value' pairs, so that the answer is on the first page. A section
    shorter than a page goes on with the sections after it, up to the budget."""
    store.sync()
    passage = store.passage(section_id) if "#" in section_id else None
    row = store.get(passage["section"] if passage else section_id)
    body = row["body"]
    if passage is None:
        stream, parent, children = body, row["parent"], store.children(section_id)
        if row["id"].startswith(HARDWARE_PAGES) and row["layer"] == 1:
            stream += _other_figures(store, row["id"]).replace("the page's other figures", "its figures")
    else:
        if passage["kind"] == "row":
            stream = f"table: {passage['context']}\nrow: {passage['text']}\n\nthe section from that row on:\n{body[passage['end'] :].lstrip()}"
            if row["id"].startswith(HARDWARE_PAGES) and row["parent"]:
                stream += _table_header(store, row["parent"]) + _other_figures(store, row["parent"], row["id"], passage["start"])
        elif len(body) <= _page_size(budget):
            # the whole section fits on the page: from its start, whose opening paragraph often
            # states what a chunk further down only refers to (the bank count before the conflicts)
            stream = body
        else:
            stream = ("... " if passage["start"] > 0 else "") + body[passage["start"] :]
        parent, children = row["id"], []
    if row["id"].startswith(HARDWARE_PAGES):
        stream = _as_written(stream, figures_as_written(row["id"]))
    size = _page_size(budget)
    pages = max(1, -(-len(stream) // size))
    if page < 1 or page > pages:
        raise InvalidInput(f"{section_id} has {pages} page(s); asked for page {page}")
    shown = children[:30] + ([f"... {len(children) - 30} more"] if len(children) > 30 else [])
    answer = SectionAnswer(
        id=section_id,
        title=row["title"],
        layer=row["layer"],
        arch=row["arch"],
        citation=row["citation"][:400],
        parent=parent,
        children=shown,
        page=page,
        pages=pages,
        text=stream[(page - 1) * size : page * size],
    )
    # the map and the hardware tables' pages show their own rest (the topics, the other figures)
    if pages == 1 and row["layer"] != 0 and not row["id"].startswith(HARDWARE_PAGES):
        room = budget - len(answer.render().encode()) - 8
        if room >= 300:
            answer.text += _read_on(store, row["id"], room)
    return answer


# encodings the compiler writes after a name (v_add_f32_e32): the entries describe the instruction
_ENCODING_SUFFIX = re.compile(r"_(?:e32|e64|sdwa|dpp|dpp8)$")


def _assembled(store: DocsStore, name: str, arch: str, exists_on: dict[str, list[str]]) -> IsaAnswer:
    """An instruction the target's assembler accepts and the index holds no entry for on it."""
    elsewhere = [f"{a}: {ids[0]}" for a, ids in sorted(exists_on.items())]
    text = f"{name} exists on {arch} (the assembler accepts it); no description in the shipped reference"
    if elsewhere:
        text += "; entries on other targets: " + "; ".join(elsewhere)
    if not store.has_isa(arch):
        text += f"; the index holds no instruction entries for {arch}: ingest AMD's machine-readable ISA XML for it (kernel-mcp docs ingest)"
    return IsaAnswer(
        id="(no entry)",
        title=name,
        layer=2,
        arch=arch,
        parent=None,
        page=1,
        pages=1,
        text=text,
        citation=f"LLVM's AMDGPU assembler for -mcpu={arch} (the offline clang)",
        children=[ids[0] for ids in exists_on.values()][:5],
        mnemonic=name,
        exists_on=sorted({arch, *exists_on}),
    )


def isa_lookup(store: DocsStore, mnemonic: str, arch: str, budget: int, assembler: str | None = None) -> IsaAnswer:
    """The index's entry for `mnemonic` on `arch`; `assembler` is the target's assembler's verdict on
    the name ('exists', 'not on target', 'unknown'; None: not asked), which decides existence where
    the index holds no entry."""
    check_arch(arch)
    if arch not in arch_names("amd"):
        raise InvalidInput(f"isa_lookup covers AMD targets ({', '.join(arch_names('amd'))})")
    name = mnemonic.strip().lower()
    exists_on = store.isa_archs_of(name)
    rows = store.isa(name, arch)
    base = _ENCODING_SUFFIX.sub("", name)
    if not rows and base != name and store.isa(base, arch):
        name, exists_on, rows = base, store.isa_archs_of(base), store.isa(base, arch)
    if rows:
        fields = docs_read(store, rows[0]["id"], 1, budget).model_dump()
        fields["children"] += [f"also: {r['id']}" for r in rows[1:5]]  # e.g. the machine-readable ISA's entry
        return IsaAnswer(**fields, mnemonic=name, exists_on=sorted(exists_on))
    if assembler == "exists":
        return _assembled(store, name, arch, exists_on)
    judged = {"not on target": f"{arch}'s assembler knows the name for other targets only", "unknown": f"{arch}'s assembler knows no such instruction"}.get(
        assembler or ""
    )
    if judged and exists_on:
        where = "; ".join(f"{a}: {ids[0]}" for a, ids in sorted(exists_on.items()))
        raise InvalidInput(f"{name} exists on {', '.join(sorted(exists_on))} only: {judged}", hint=f"entries: {where}")
    if judged:
        close = difflib.get_close_matches(name, store.mnemonics(arch), n=6, cutoff=0.6) or difflib.get_close_matches(name, store.mnemonics(), n=6, cutoff=0.6)
        raise InvalidInput(f"no instruction {name!r} on {arch}: {judged}", hint=("nearest names: " + ", ".join(close)) if close else None)
    if not store.has_isa(arch):
        # a known target whose instruction entries are neither shipped nor ingested: say so plainly
        covered = ", ".join(store.isa_archs()) or "no target"
        elsewhere = f"; entries for {name}: " + ", ".join(f"{a} ({ids[0]})" for a, ids in sorted(exists_on.items())) if exists_on else ""
        raise InvalidInput(
            f"the documentation index holds no instruction entries for {arch} (it has them for {covered})",
            hint=f"ingest AMD's machine-readable ISA XML for {arch} (kernel-mcp docs ingest); hw_spec and docs_search cover {arch}{elsewhere}",
        )
    if exists_on:
        # known on other targets: say where, and how sure the absence on this one is
        where = "; ".join(f"{a}: {ids[0]}" for a, ids in sorted(exists_on.items()))
        complete = store.complete_isa(arch)
        mention = store.mentioned_in(name, arch)
        if complete:
            raise InvalidInput(
                f"{name} exists on {', '.join(sorted(exists_on))} only: {arch}'s machine-readable ISA ({complete}) does not list it", hint=f"entries: {where}"
            )
        if mention:
            raise InvalidInput(
                f"{name} exists on {', '.join(sorted(exists_on))} only: {arch}'s entries name it in {mention[0]}: {mention[1]}", hint=f"entries: {where}"
            )
        raise InvalidInput(
            f"{name}: no {arch} entry; the index has it on {', '.join(sorted(exists_on))}",
            hint=f"{arch}'s entries are a selection, so this is no proof that {arch} lacks it: ingest AMD's ISA XML for {arch} to be sure; entries: {where}",
        )
    close = difflib.get_close_matches(name, store.mnemonics(arch), n=6, cutoff=0.6) or difflib.get_close_matches(name, store.mnemonics(), n=6, cutoff=0.6)
    complete = store.complete_isa(arch)
    mention = store.mentioned_in(name, arch)
    said = f"; {arch}'s pages name it in {mention[0]}: {mention[1]}" if mention else ""
    raise InvalidInput(
        f"no instruction {name!r} on {arch}" + (f" in {complete}" if complete else " among the index's entries") + said,
        hint=("nearest names: " + ", ".join(close)) if close else "ingest AMD's ISA XML for full coverage (kernel-mcp docs ingest)",
    )


class IngestAnswer(ToolOutput):
    results: list[dict]
    sections_total: int
    sources_total: int
    passages_total: int = 0

    def render(self) -> str:
        lines = [f"{r['path']}: {r['status']}" + (f" ({r['sections']} sections)" if "sections" in r else "") for r in self.results]
        lines.append(f"index: {self.sources_total} sources, {self.sections_total} sections, {self.passages_total} passages")
        return "\n".join(lines)


def ingest(store: DocsStore, paths: list[Path]) -> IngestAnswer:
    """Each file (or every supported file under a folder) is added; one bad file does not stop the rest."""
    results = []
    files: list[tuple[Path, Path | None]] = []  # each file, and the folder it was found in
    for path in paths:
        if path.is_dir():
            # links are listed too, so that one leading out of the folder is reported, not read
            files += [
                (p, path)
                for p in sorted(path.rglob("*"))
                if not (p.is_dir() and not p.is_symlink()) and p.suffix.lower() in (".md", ".rst", ".html", ".htm", ".pdf", ".xml")
            ]
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
    return IngestAnswer(results=results, sections_total=stats["sections"], sources_total=stats["sources"], passages_total=stats["passages"])
