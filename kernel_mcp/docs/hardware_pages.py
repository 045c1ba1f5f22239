"""The hardware tables (docs_index/hardware/<arch>.toml) as pages of the index.

hw_spec answers "what is the HBM bandwidth of gfx90a" when the agent knows to ask it; a search for
"MI250X GCD HBM bandwidth" or "H100 tensor core count" goes to docs_search, and the figure lives in
no prose page. So each table is a page too: one section per group of figures (hw_spec's groups),
one row per figure with its value as people write it, its note, its source and any disagreement
of sources, so the row that answers opens on the first page with its citation.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from kernel_mcp.docs.readers import Section, split_headed
from kernel_mcp.docs.tables import pipe_table
from kernel_mcp.errors import InvalidInput, KernelMcpError
from kernel_mcp.hardware.quantities import EXACT, human
from kernel_mcp.hardware.spec_view import SECTIONS, grouped
from kernel_mcp.hardware.specs import HardwareSpec, products_of, read_table, registry

HEADER = ["figure", "value", "note", "source", "sources disagree"]
PAGE_PREFIX = "hardware/"  # the ids of these pages: hardware/gfx950/...


def read_hardware_table(path: Path, page_id: str) -> list[Section]:
    """An arch's table (hardware/<arch>.toml) or a product's (hardware/products/<product>.toml: its
    own figures, under its arch's family and vendor) as one page."""
    try:
        data = raw = read_table(path)
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
            rows.append([key, human(figure.value, figure.unit, EXACT), figure.note or "", figure.source, figure.disagreement or ""])
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
            intro += f" Named {', '.join(names)}" + (f"; PCI device ids {', '.join(ids)}." if ids else ".")
        origin = f"docs_index/hardware/products/{path.name}"
    else:
        sold_as = ", ".join(p.label for p in products_of(spec.arch)) or spec.label
        title = f"{spec.arch} ({spec.family}; {sold_as}): ISA-level sourced figures"
        intro = (
            f"The ISA-level figures kernel-mcp computes with for {spec.arch}, shared by its products, each with its primary source; "
            f"hw_spec(arch={spec.arch!r}) gives the same table by section or key."
        )
        origin = f"docs_index/hardware/{path.name}"
    sections = split_headed(page_id, title, blocks, origin, arch=[spec.arch], summary=intro, intro=intro)
    for child, group in zip(sections[1:], groups):
        child.id = f"{page_id}/{group}"  # hardware/gfx950/peak, as hw_spec names the section
    return sections
