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
from kernel_mcp.hardware.specs import HardwareSpec, read_table

HEADER = ["figure", "value", "note", "source", "sources disagree"]
PAGE_PREFIX = "hardware/"  # the ids of these pages: hardware/gfx950/...


def read_hardware_table(path: Path, page_id: str) -> list[Section]:
    try:
        spec = HardwareSpec.model_validate(read_table(path))
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
    title = f"{spec.product} ({spec.family}, {spec.arch}): sourced figures"
    intro = (f"The figures kernel-mcp computes with for {spec.arch} ({spec.product}), each with its primary source; "
             f"hw_spec(arch={spec.arch!r}) gives the same table by section or key.")
    sections = split_headed(page_id, title, blocks, f"docs_index/hardware/{path.name}", arch=[spec.arch], summary=intro, intro=intro)
    for child, group in zip(sections[1:], groups):
        child.id = f"{page_id}/{group}"  # hardware/gfx950/peak, as hw_spec names the section
    return sections
