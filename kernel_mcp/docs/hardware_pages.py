"""The hardware tables (docs_index/hardware/<arch>.toml) as pages of the index.

hw_spec answers "what is the HBM bandwidth of gfx90a" when the agent knows to ask it; a search for
"MI250X GCD HBM bandwidth" or "H100 tensor core count" goes to docs_search, and the figure lives in
no prose page. So each table is a page too: one section per group of figures (hw_spec's groups),
one row per figure with its value as people write it, its note, its source and any disagreement
of sources, so the row that answers opens on the first page with its citation.

The tables' comments are part of the page: the file's header comment (what the table covers, which
part it describes) goes into the page's opening, and a comment block directly above a key goes with
what the page shows of that key (a figure's row, the product's names and PCI ids), since a figure's
explanation often lives there (pci.ids 74b5 is "Instinct MI300X VF"). They are shown as quoted text
of the table, like every other document text: data, never instructions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from kernel_mcp.arch_registry import docs_index_dir
from kernel_mcp.docs.readers import Section, slug, split_headed
from kernel_mcp.docs.tables import pipe_table
from kernel_mcp.errors import InvalidInput, KernelMcpError
from kernel_mcp.hardware.quantities import EXACT, human
from kernel_mcp.hardware.spec_view import SECTIONS, grouped
from kernel_mcp.hardware.specs import HardwareSpec, products_of, read_table, registry

HEADER = ["figure", "value", "note", "source", "sources disagree"]
PAGE_PREFIX = "hardware/"  # the ids of these pages: hardware/gfx950/...
MAX_COMMENT = 1200  # characters of one comment block shown; a header longer than this is prose in the wrong place

_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)(\s*\.\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+))*\s*=""")
_TABLE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
# a figure's line as the tables write it: name = { value = 1.6384e12, unit = "bytes/s", ... }
_WRITTEN = re.compile(r"""^([A-Za-z0-9_]+)\s*=\s*\{\s*value\s*=\s*([^,}]+?)\s*(?:,\s*unit\s*=\s*("[^"]*"))?\s*[,}]""")


@dataclass
class TableComments:
    """A TOML table's comment lines: the file's header, and the block directly above each key
    ("device_ids", "figures.lds_banks") or table ("[figures]")."""

    header: str = ""
    above: dict[str, str] = field(default_factory=dict)


def _joined(block: list[str]) -> str:
    text = " ".join(" ".join(line.split()) for line in block if line.strip())
    return text if len(text) <= MAX_COMMENT else text[: MAX_COMMENT - 1].rstrip() + "\u2026"


def table_comments(text: str) -> TableComments:
    """The comments of a TOML table, by what they stand above. A block belongs to the key or
    [table] on the line right after it; a blank line between them cuts it loose (a comment that
    belongs to nothing is dropped). The comment lines the file opens with are its header, even when
    the first key follows them directly (a product's name is no explanation of its whole file).
    Comments after a value on its line are not read: the shipped tables write none."""
    found = TableComments()
    block: list[str] = []
    table = ""
    opening = True  # still in the comment lines the file starts with
    in_string = False  # inside a multi-line string, where a "#" line is text
    for line in text.splitlines():
        stripped = line.strip()
        if in_string:
            in_string = stripped.count('"""') % 2 == 0 and stripped.count("'''") % 2 == 0
            continue
        if stripped.startswith("#"):
            block.append(stripped.lstrip("#").strip())
            continue
        if opening and block:
            found.header = _joined(block)
            block = []
        opening = False
        if not stripped:
            block = []
            continue
        header = _TABLE.match(line)
        key = None if header else _KEY.match(line)
        if header:
            table = header.group(1).replace(" ", "")
            name = f"[{table}]"
        elif key:
            name = f"{table}.{key.group(0).rstrip('=').strip()}" if table else key.group(0).rstrip("=").strip()
        else:
            name = ""
        if name and block:
            found.above[name.replace(" ", "")] = _joined(block)
        block = []
        if (stripped.count('"""') + stripped.count("'''")) % 2 == 1:
            in_string = True
    return found


def written_figures(text: str) -> dict[str, str]:
    """Each figure of a table's [figures] as its file writes it, up to its unit
    ('hbm_bandwidth_bytes_per_s = { value = 1.6384e12, unit = "bytes/s" }'): the page shows the value
    as people write it (1.6384 TB/s), and a question that names the key asks for the value as the
    file and hw_spec give it, in base units and with every digit."""
    out: dict[str, str] = {}
    table = ""
    for line in text.splitlines():
        header = _TABLE.match(line)
        if header:
            table = header.group(1).replace(" ", "")
            continue
        match = _WRITTEN.match(line.strip()) if table == "figures" else None
        if match:
            key, value, unit = match.groups()
            out[key] = f"{key} = {{ value = {value}" + (f", unit = {unit}" if unit else "") + " }"
    return out


def figures_as_written(page_id: str) -> dict[str, str]:
    """`written_figures` of the shipped table a hardware page (hardware/mi300x/...) was read from."""
    page = "/".join(page_id.split("/")[:2])
    return _written_in(str(docs_index_dir() / "hardware")).get(page, {})


@lru_cache(maxsize=4)
def _written_in(folder: str) -> dict[str, dict[str, str]]:
    base = Path(folder)
    out: dict[str, dict[str, str]] = {}
    for path in [*sorted(base.glob("*.toml")), *sorted((base / "products").glob("*.toml"))]:
        try:
            out[PAGE_PREFIX + slug(path.stem)] = written_figures(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue  # the page still shows its figures as people write them
    return out


def _quoted(comment: str) -> str:
    # marked as the table's comment, so that it reads as a quotation of the file, not as the page's own voice
    return f"(comment: {comment.rstrip('.')})" if comment else ""


def read_hardware_table(path: Path, page_id: str) -> list[Section]:
    """An arch's table (hardware/<arch>.toml) or a product's (hardware/products/<product>.toml: its
    own figures, under its arch's family and vendor) as one page."""
    try:
        data = raw = read_table(path)
        comments = table_comments(path.read_text(encoding="utf-8"))
        product = path.parent.name == "products"
        if product:
            arch = registry().get(str(data.get("arch")))
            if arch is None:
                raise KernelMcpError(f"its arch {data.get('arch')!r} has no table")
            data = {**arch.model_dump(), "product": data.get("product"), "label": data.get("label"), "figures": data.get("figures") or {}}
        spec = HardwareSpec.model_validate(data)
    except (ValidationError, KernelMcpError) as exc:
        raise InvalidInput(f"{path.name} is not a hardware table: {str(exc).splitlines()[0]}") from None
    groups = grouped(spec.figures)
    blocks = []
    for group, keys in groups.items():
        rows = []
        for key in keys:
            figure = spec.figures[key]
            note = " ".join(filter(None, [figure.note or "", _quoted(comments.above.get(f"figures.{key}", ""))]))
            rows.append([key, human(figure.value, figure.unit, EXACT), note, figure.source, figure.disagreement or ""])
        what = SECTIONS[group][0] if group in SECTIONS else "other figures"
        blocks.append((2, f"{spec.label} {group}: {what}", "\n".join(pipe_table(HEADER, rows))))
    if product:
        title = f"{spec.product} ({spec.family}, {spec.arch}): sourced figures"
        intro = (
            f"The {spec.product}'s own figures (counts, clocks, memory, peak rates), each with its primary source; the ISA-level "
            f"facts it shares with every {spec.arch} product are on the {spec.arch} page. hw_spec(product={spec.label!r}) gives both."
        )
        names = [str(n) for n in raw.get("names") or [] if isinstance(n, str)]
        ids = [str(i) for i in raw.get("device_ids") or [] if isinstance(i, str)]
        if names:  # how monitors and people name it, and the PCI ids that tell it apart (gpu_status matches both)
            said = [_quoted(comments.above.get(k, "")) for k in ("names", "device_ids")]
            intro += f" Named {', '.join(names)}" + (f" {said[0]}" if said[0] else "")
            intro += (f"; PCI device ids {', '.join(ids)}" + (f" {said[1]}" if said[1] else "") + ".") if ids else "."
        origin = f"docs_index/hardware/products/{path.name}"
    else:
        sold_as = ", ".join(p.label for p in products_of(spec.arch)) or spec.label
        title = f"{spec.arch} ({spec.family}; {sold_as}): ISA-level sourced figures"
        intro = (
            f"The ISA-level figures kernel-mcp computes with for {spec.arch}, shared by its products, each with its primary source; "
            f"hw_spec(arch={spec.arch!r}) gives the same table by section or key."
        )
        origin = f"docs_index/hardware/{path.name}"
    summary = intro  # the map's line stays the page's own words; the comments open the page
    if comments.above.get("[figures]"):
        intro += f" Its figures' comment: {comments.above['[figures]']}"
    searched = len(intro)
    if comments.header:
        # shown with the opening, not searched as a passage of its own: it restates the figures
        # (6 XCDs (228 CUs), 6 TB/s), and as a hit it ranked above the rows that give them with
        # their sources, whose pages a hit on the opening does not reach
        intro += f"\n\nThe table's header comment: {comments.header}"
    sections = split_headed(page_id, title, blocks, origin, arch=[spec.arch], summary=summary, intro=intro)
    sections[0].searched = searched
    for child, group in zip(sections[1:], groups):
        child.id = f"{page_id}/{group}"  # hardware/gfx950/peak, as hw_spec names the section
    return sections
