"""Document readers: each turns one file into layered sections (L1 page, L2 sections, entries).

Formats: Markdown (the shipped index, with TOML front matter between `+++` lines, and plain
Markdown), reStructuredText (ROCm docs), HTML, PDF (split by its outline, else by page); AMD's
machine-readable ISA XML is read by isa_xml.py. Tables of every format become pipe tables
(tables.py), so that passages.py can make one entry per row.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from kernel_mcp import limits
from kernel_mcp.arch_registry import alias_words
from kernel_mcp.docs.tables import pipe_table, rewrite_myst_tables, rewrite_rst_tables
from kernel_mcp.errors import InvalidInput

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".html": "html", ".htm": "html", ".pdf": "pdf", ".xml": "isa-xml"}


@dataclass
class Section:
    id: str
    title: str
    layer: int
    body: str
    parent: str | None = None
    arch: list[str] = field(default_factory=list)
    summary: str = ""
    citation: str = ""
    mnemonic: str | None = None
    # the body's first `searched` characters are cut into search passages; the rest is shown by
    # docs_read only (a hardware table's header comment, which restates the rows below it)
    searched: int | None = None


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "section"


def first_sentence(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    match = re.match(r"(.{20,}?[.!?])\s", flat + " ")
    out = match.group(1) if match else flat
    return out[:limit]


def guess_arch(text: str) -> list[str]:
    """The targets a text names: each hardware table's arch and aliases (docs_index/hardware/)."""
    lowered = text.lower()
    return [arch for arch, words in alias_words().items() if any(word in lowered for word in words)]


def unique_id(base: str, taken: set[str]) -> str:
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    taken.add(candidate)
    return candidate


def split_headed(
    page_id: str, title: str, blocks: list[tuple[int, str, str]], citation: str, arch: list[str] | None = None, summary: str | None = None, intro: str = ""
) -> list[Section]:
    """A page (L1) and one L2 section per heading, at every level: a `###` under a `##` is its
    own section whose parent is the `##` one, so that a search hit is the subsection that holds
    the answer, not the page-long section around it."""
    arch = arch if arch is not None else guess_arch(title + " " + intro + " ".join(b for _l, _t, b in blocks[:5]))
    taken: set[str] = set()
    children: list[Section] = []
    open_levels: list[tuple[int, str]] = []  # (level, id) of the headings that enclose the next one
    for level, heading, body in blocks:
        while open_levels and open_levels[-1][0] >= level:
            open_levels.pop()
        parent = open_levels[-1][1] if open_levels else page_id
        sid = unique_id(f"{page_id}/{slug(heading)}", taken)
        children.append(
            Section(
                id=sid,
                title=heading,
                layer=2,
                body=body.strip(),
                parent=parent,
                arch=arch,
                summary=first_sentence(body) or heading,
                citation=f"{citation}, section '{heading}'",
            )
        )
        open_levels.append((level, sid))
    overview = intro.strip() or "\n".join(f"- {c.title}: {c.summary}" for c in children if c.parent == page_id)
    page = Section(
        id=page_id, title=title, layer=1, body=overview, parent="map", arch=arch, summary=summary or first_sentence(intro or overview), citation=citation
    )
    return [page] + children


_BOLD_PARAGRAPH = re.compile(r"^\s*\*\*([^*]{1,100})\*\*\s*$")


def bold_heading(lines: list[str], i: int) -> str | None:
    """The text of a paragraph that is nothing but bold ("**LLVM target name**" in a glossary,
    "**AMD Instinct MI300 series**" over a list of links): it heads what follows it as a heading
    one level below the enclosing one would, so each glossary term is a section of its own."""
    match = _BOLD_PARAGRAPH.match(lines[i])
    if match is None:
        return None
    text = match.group(1).strip()
    before = lines[i - 1] if i > 0 else ""
    after = lines[i + 1] if i + 1 < len(lines) else ""
    return text if text and not before.strip() and not after.strip() else None


# ---------------------------------------------------------------- Markdown -------------------
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def markdown_blocks(text: str) -> tuple[str | None, str, list[tuple[int, str, str]]]:
    """(first H1 title, text before the first other heading, [(level, heading, body)])."""
    title = None
    intro: list[str] = []
    blocks: list[tuple[int, str, list[str]]] = []
    fenced = False
    lines = rewrite_myst_tables(text.splitlines())
    enclosing = 1  # the level of the last real heading: a bold paragraph heads one level below it
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        match = None if fenced else _MD_HEADING.match(line)
        bold = None if fenced or match else bold_heading(lines, i)
        if match:
            level, heading = len(match.group(1)), match.group(2).strip()
            if level == 1 and title is None and not blocks:
                title = heading
                continue
            blocks.append((level, heading, []))
            enclosing = level
        elif bold:
            blocks.append((enclosing + 1, bold, []))
        elif blocks:
            blocks[-1][2].append(line)
        else:
            intro.append(line)
    return title, "\n".join(intro), [(lvl, h, "\n".join(body)) for lvl, h, body in blocks]


def read_front_matter(text: str) -> tuple[dict | None, str]:
    if not text.startswith("+++"):
        return None, text
    end = text.find("\n+++", 3)
    if end < 0:
        raise InvalidInput("front matter opened with +++ is never closed")
    if limits.nesting_problem(text[3:end], limits.TOML_MAX_DEPTH, limits.TOML_MAX_DOTS_PER_LINE) is not None:
        raise InvalidInput("front matter nests too deeply (arrays, tables or dotted keys)")
    try:
        meta = tomllib.loads(text[3:end])
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"front matter is not valid TOML: {exc}") from None
    return meta, text[end + 4 :]


_FRONT_MATTER_TYPES = {"id": str, "title": str, "summary": str, "parent": str, "sources": list, "arch": list, "layer": int}


def _check_front_matter(meta: dict, path: Path) -> None:
    """Keys of the wrong type are refused with the key named (a string `layer` or a number `id`
    raised TypeError or ValueError, which aborted a whole folder's ingestion)."""
    for key, kind in _FRONT_MATTER_TYPES.items():
        if key in meta and (type(meta[key]) is not kind):
            raise InvalidInput(f"{path.name}: front matter {key} is {type(meta[key]).__name__}, not {'text' if kind is str else kind.__name__}")
    for key in ("sources", "arch"):
        if any(type(item) is not str for item in meta.get(key, [])):
            raise InvalidInput(f"{path.name}: front matter {key} must be a list of text")
    if meta.get("layer", 1) not in (0, 1, 2):
        raise InvalidInput(f"{path.name}: front matter layer must be 0, 1 or 2")
    if "id" in meta and not re.fullmatch(r"[a-z0-9][a-z0-9/_.-]{0,120}", meta["id"]):
        raise InvalidInput(f"{path.name}: front matter id {meta['id'][:60]!r} must be lower-case letters, digits, '/', '_', '.', '-'")


def read_markdown(path: Path, text: str, page_id: str) -> list[Section]:
    meta, body = read_front_matter(text)
    title, intro, blocks = markdown_blocks(body)
    if meta is None:
        return split_headed(page_id, title or path.stem, blocks, f"{path.name}", intro=intro)
    _check_front_matter(meta, path)
    sources = meta.get("sources", [])
    citation = "; ".join(sources) if sources else f"kernel-mcp docs_index {path.name}"
    arch = meta.get("arch", [])
    page_id = meta.get("id", page_id)
    layer = meta.get("layer", 1)
    if layer == 0:
        return [Section(id=page_id, title=meta.get("title", "map"), layer=0, body=body.strip(), arch=arch, summary=meta.get("summary", ""), citation=citation)]
    sections = split_headed(page_id, meta.get("title", title or path.stem), blocks, citation, arch=arch, summary=meta.get("summary"), intro=intro)
    sections[0].parent = meta.get("parent", "map")
    sections[0].layer = min(layer, 1) if layer != 2 else 1
    if page_id.startswith("isa-"):
        for child in sections[1:]:  # an entry is headed by its mnemonic; other headings are notes
            first = child.title.split()[0].lower() if child.title.split() else ""
            child.mnemonic = first if re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9.]+)+", first) else None
    return sections


# ---------------------------------------------------------------- reStructuredText ----------
_RST_ADORN = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")


_RST_ROLE = re.compile(r":(?:[\w+-]+:)?[\w+-]+:`([^`<]*)(?:<[^`>]*>)?`")  # :ref:`text <target>` -> text
_RST_LINK = re.compile(r"`([^`<]*)<([^`>]*)>`_{1,2}")  # `text <url>`_ -> text (or the url alone)
_RST_LITERAL = re.compile(r"``([^`]+)``")
_RST_DIRECTIVE = re.compile(r"^(\s*)\.\. ([\w:-]+)::\s*(.*)$")
_RST_KEEPS_ARGUMENT = {"tab-item", "rubric", "topic", "admonition"}  # the argument is a title worth reading


def rst_plain(lines: list[str]) -> list[str]:
    """Tables as pipe tables; roles, links and literals as their text; directive lines and their
    options dropped (their indented content stays), tab titles kept (an MI300 table vs MI200)."""
    out: list[str] = []
    in_options = False
    for line in rewrite_rst_tables(lines):
        directive = _RST_DIRECTIVE.match(line)
        if directive:
            name, argument = directive.group(2), directive.group(3).strip()
            if name in _RST_KEEPS_ARGUMENT and argument:
                out.append(directive.group(1) + argument)
            in_options = True
            continue
        if in_options and re.match(r"\s*:[\w-]+:(\s|$)", line):
            continue
        in_options = False
        if re.match(r"\s*\.\. ", line):  # a label (.. _name:) or a comment
            continue
        line = _RST_ROLE.sub(lambda m: m.group(1).strip().lstrip("~"), line)
        line = _RST_LINK.sub(lambda m: m.group(1).strip() or m.group(2).strip(), line)
        line = _RST_LITERAL.sub(r"\1", line)
        out.append(line if _BOLD_PARAGRAPH.match(line) else line.replace("**", ""))  # read_rst reads it as a heading
    return out


def read_rst(path: Path, text: str, page_id: str) -> list[Section]:
    lines = rst_plain(text.splitlines())
    order: list[str] = []
    blocks: list[tuple[int, str, list[str]]] = []
    title = None
    intro: list[str] = []
    enclosing = 1  # the level of the last real heading: a bold paragraph heads one level below it
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        over = _RST_ADORN.match(line) and i + 2 < len(lines) and _RST_ADORN.match(lines[i + 2]) and lines[i + 1].strip()
        if over:
            key, heading, skip = "over" + line.strip()[0], lines[i + 1].strip(), 3
        elif line.strip() and not _RST_ADORN.match(line) and _RST_ADORN.match(nxt) and len(nxt.strip()) >= len(line.strip()):
            key, heading, skip = nxt.strip()[0], line.strip(), 2
        else:
            bold = bold_heading(lines, i)
            if bold:
                blocks.append((enclosing + 1, bold, []))
            else:
                (blocks[-1][2] if blocks else intro).append(line.replace("**", ""))  # a bold line that heads nothing
            i += 1
            continue
        if key not in order:
            order.append(key)
        level = order.index(key) + 1
        if level == 1 and title is None and not blocks:
            title = heading
        else:
            blocks.append((level, heading, []))
        enclosing = level
        i += skip
    clean_intro = "\n".join(line for line in intro if not line.strip().startswith(("..", ":")))
    return split_headed(page_id, title or path.stem, [(lvl, h, "\n".join(b)) for lvl, h, b in blocks], path.name, intro=clean_intro)


# ---------------------------------------------------------------- HTML ----------------------
class _HtmlText(HTMLParser):
    SKIP = {"script", "style", "nav", "header", "footer", "noscript"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[int, str, list[str]]] = []
        self.title = ""
        self.intro: list[str] = []
        self._skip = 0
        self._heading: int | None = None
        self._heading_text: list[str] = []
        self._in_title = False
        # the table being read: its rows of cells, the header row (from <th> cells), the open cell
        self._rows: list[list[str]] | None = None
        self._header: list[str] = []
        self._cell: list[str] | None = None
        self._row_is_header = False

    def _emit(self, text: str) -> None:
        (self.blocks[-1][2] if self.blocks else self.intro).append(text)

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self._skip += 1
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._heading, self._heading_text = int(tag[1]), []
        elif tag == "title":
            self._in_title = True
        elif tag == "table" and self._rows is None:  # a nested table is read as cells of the outer one
            self._rows, self._header = [], []
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
            self._row_is_header = True
        elif tag in ("td", "th") and self._rows is not None:
            if not self._rows:
                self._rows.append([])
            self._cell = []
            self._row_is_header = self._row_is_header and tag == "th"

    def handle_endtag(self, tag):
        if tag in self.SKIP and self._skip:
            self._skip -= 1
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6") and self._heading is not None:
            text = " ".join("".join(self._heading_text).split()).rstrip("#¶ ")
            if text:
                self.blocks.append((self._heading, text, []))
            self._heading = None
        elif tag == "title":
            self._in_title = False
        elif tag in ("td", "th") and self._cell is not None and self._rows:
            self._rows[-1].append(" ".join(" ".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._rows and self._row_is_header and not self._header and len(self._rows) == 1:
            self._header = self._rows.pop()  # a first row of <th> cells is the header
        elif tag == "table" and self._rows is not None:
            self._emit("\n".join([""] + pipe_table(self._header, self._rows) + [""]))
            self._rows, self._cell = None, None

    def handle_data(self, data):
        if self._skip:
            return
        if self._in_title:
            self.title += data
        elif self._heading is not None:
            self._heading_text.append(data)
        elif self._cell is not None:
            self._cell.append(data)
        elif data.strip() and self._rows is None:
            self._emit(data.strip())


def read_html(path: Path, text: str, page_id: str) -> list[Section]:
    parser = _HtmlText()
    parser.feed(text)
    blocks = parser.blocks
    title = parser.title.strip()
    if blocks and blocks[0][0] == 1:
        title = title or blocks[0][1]
        parser.intro += blocks[0][2]
        blocks = blocks[1:]
    return split_headed(page_id, title or path.stem, [(lvl, h, "\n".join(b)) for lvl, h, b in blocks], path.name, intro="\n".join(parser.intro))


# ---------------------------------------------------------------- PDF -----------------------
def read_pdf(path: Path, data: bytes, page_id: str) -> list[Section]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise InvalidInput("PDF ingestion needs pypdf (pip install pypdf)") from exc
    import io

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
        outline = _pdf_outline(reader)
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise InvalidInput(f"{path.name} is not a readable PDF: {exc}") from None
    if not any(p.strip() for p in pages):
        raise InvalidInput(f"{path.name}: the PDF has no extractable text (scanned?)")
    title = (reader.metadata.title if reader.metadata and reader.metadata.title else None) or path.stem
    blocks: list[tuple[int, str, str]] = []
    if outline:
        starts = outline + [(None, len(pages))]
        for (heading, first), (_n, nxt) in zip(outline, starts[1:]):
            body = "\n".join(pages[first : max(first + 1, nxt)])
            blocks.append((2, f"{heading} (p. {first + 1})", body))
    else:
        blocks = [(2, f"page {n + 1}", text) for n, text in enumerate(pages) if text.strip()]
    return split_headed(page_id, title, blocks, path.name)


def _pdf_outline(reader) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []

    def walk(items):
        for item in items:
            if isinstance(item, list):
                continue  # deeper levels fold into their parent's pages
            try:
                out.append((item.title, reader.get_destination_page_number(item)))
            except Exception:
                continue

    walk(reader.outline or [])
    return sorted(out, key=lambda x: x[1])
