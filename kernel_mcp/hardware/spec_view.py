"""hw_spec's answer: a summary of a target's figures that fits the answer budget, grouped into
sections, and the full entries (exact value, note, source, disagreement) of one section or of
named keys on request.

A table holds 35 to 50 sourced figures, 8 to 15 KB with their sources: the whole of it never fit
the 4 KB answer, and cutting it from the end lost the peak rates. So the summary gives every value
(written as people write them, see quantities.py) without the sources, and the details come a
section or a few keys at a time, each entry whole or not at all.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import PrivateAttr

from kernel_mcp.errors import InvalidInput
from kernel_mcp.hardware.quantities import EXACT, human
from kernel_mcp.hardware.specs import Figure, HardwareSpec, products_of
from kernel_mcp.tooling import DEFAULT_BUDGET, ToolOutput

# section -> (what it holds, the key patterns that belong to it); a key goes to the first match
SECTIONS: dict[str, tuple[str, str]] = {
    "compute": (
        "compute units, SIMDs, waves and workgroup limits",
        r"^(compute_units|xcds|cus_per_xcd|gcds_per_package|simds_per_cu|wave_size|max_waves|max_warps|max_blocks|max_workgroup|tensor_cores)",
    ),
    "registers": ("register files, per-wave limits and allocation granules", r"(gpr|register)"),
    "caches": ("L1, L2 and last-level caches", r"^(l1_|l2_|infinity_cache)"),
    "lds": ("LDS / shared memory: sizes, granule, banks, rate", r"(lds|shared_memory)"),
    "memory": ("device memory size and bandwidth", r"^hbm_"),
    "clocks": ("engine clocks", r"clock"),
    "peak": ("peak FLOP/s and FLOP per clock per CU, by data type and engine", r"flops"),
    "ridge": ("ridge points of the roofline", r"^ridge_point"),
}
Section = Literal["compute", "registers", "caches", "lds", "memory", "clocks", "peak", "ridge", "other"]
MAX_KEYS = 16
TRAILER_BYTES = 400  # kept free for the line that names what was left out


def section_of(key: str) -> str:
    for name, (_, pattern) in SECTIONS.items():
        if re.search(pattern, key):
            return name
    return "other"


def grouped(figures: dict[str, Figure]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {name: [] for name in [*SECTIONS, "other"]}
    for key in figures:
        groups[section_of(key)].append(key)
    return {name: keys for name, keys in groups.items() if keys}


class HwSpecAnswer(ToolOutput):
    arch: str
    product: str
    family: str
    figures_of: str  # whose counts, clocks, memory and peaks: "MI355X (gfx950)"
    products: list[str] = []  # every product of the arch, by label
    section: str | None = None  # the section whose entries are shown whole
    keys: list[str] | None = None  # or the keys asked for
    figures: dict[str, Figure]  # those of the answer: all for the summary, else the ones selected
    _budget: int = PrivateAttr(DEFAULT_BUDGET)

    def with_budget(self, budget: int) -> HwSpecAnswer:
        self._budget = budget
        return self

    def render(self) -> str:
        if self.section is None and self.keys is None:
            return self._summary()
        return self._details()

    def _summary(self) -> str:
        disputed = [key for key, fig in self.figures.items() if fig.disagreement]
        lines = [
            f"{self.figures_of}, {self.family}; {len(self.figures)} figures, each from a primary source. "
            "Sources, notes and exact values: hw_spec(..., section=...) or keys=[...]"
        ]
        if len(self.products) > 1:
            lines.append(f"{self.arch} is sold as {', '.join(self.products)}: product=... for another's figures")
        if disputed:
            lines.append(f"sources disagree on {len(disputed)} figure{'s' if len(disputed) > 1 else ''} (marked *): {', '.join(disputed)}")
        for name, keys in grouped(self.figures).items():
            lines.append(f"[{name}]" + (f" {SECTIONS[name][0]}" if name in SECTIONS else ""))
            for key in keys:
                fig = self.figures[key]
                lines.append(f"  {key} = {human(fig.value, fig.unit)}" + (" *" if fig.disagreement else ""))
        return "\n".join(lines)

    def _details(self) -> str:
        what = f"section {self.section}" if self.section else f"{len(self.figures)} figure(s)"
        lines = [f"{self.figures_of}, {self.family}; {what}: value, note, source"]
        used = len(lines[0].encode("utf-8")) + 1
        room = self._budget - min(TRAILER_BYTES, self._budget // 4)
        left_out: list[str] = []
        for key, fig in self.figures.items():
            entry = _entry(key, fig)
            size = len(entry.encode("utf-8")) + 1
            if len(lines) == 1 and used + size > room:
                # one entry larger than a whole answer (a small configured budget): cut, never skipped,
                # or asking for it by key would never show it
                entry = entry.encode("utf-8")[: max(0, room - used - 6)].decode("utf-8", errors="ignore") + " [cut]"
                size = len(entry.encode("utf-8")) + 1
            elif left_out or used + size > room:
                left_out.append(key)  # whole entries only, in table order
                continue
            lines.append(entry)
            used += size
        if left_out:
            lines.append(f"not shown, to fit the {self._budget}-byte answer: {', '.join(left_out)}; ask for them with keys=[...]")
        return "\n".join(lines)


def _entry(key: str, fig: Figure) -> str:
    shown = human(fig.value, fig.unit, EXACT)
    lines = [f"{key} = {shown}"]
    if fig.note:
        lines.append(f"  note: {fig.note}")
    lines.append(f"  source: {fig.source}")
    if fig.disagreement:
        lines.append(f"  sources disagree: {fig.disagreement}")
    return "\n".join(lines)


def hw_spec_answer(spec: HardwareSpec, section: str | None = None, keys: list[str] | None = None) -> HwSpecAnswer:
    head: dict[str, Any] = dict(
        arch=spec.arch, product=spec.product, family=spec.family, figures_of=spec.whose(), products=[p.label for p in products_of(spec.arch)]
    )
    if section is not None and keys:
        raise InvalidInput("give a section or keys, not both")
    if section is not None:
        chosen = grouped(spec.figures).get(section)
        if not chosen:
            have = ", ".join(grouped(spec.figures))
            raise InvalidInput(f"{spec.arch} has no figures in section {section!r}", hint=f"sections of {spec.arch}: {have}")
        return HwSpecAnswer(**head, section=section, figures={k: spec.figures[k] for k in chosen})
    if keys:
        unknown = [k for k in keys if k not in spec.figures]
        if unknown:
            near = [k for k in spec.figures if any(part in k for u in unknown for part in u.split("_") if len(part) > 2)]
            raise InvalidInput(
                f"{spec.arch} has no figure {', '.join(repr(k) for k in unknown)}",
                hint=("similar keys: " + ", ".join(near[:12])) if near else "hw_spec(arch) lists every key",
            )
        return HwSpecAnswer(**head, keys=list(dict.fromkeys(keys)), figures={k: spec.figures[k] for k in dict.fromkeys(keys)})
    return HwSpecAnswer(**head, figures=dict(spec.figures))
