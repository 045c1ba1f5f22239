"""Hardware facts per target and product: `docs_index/hardware/<arch>.toml` (what every product of
the arch shares) beneath `docs_index/hardware/products/<product>.toml` (its counts, clocks, memory
and peak rates).

Every figure there carries its value, unit and primary source (and a note of disagreement where
sources differ), so each number a tool computes with can be traced back to where it came from. A
spec says whose product figures it holds: the product named, the GPU's, the arch's reference
product (named in every answer), or none, when the GPU is a product no table describes.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel

# The registry of targets (which tables exist, their vendors, aliases...) lives in
# kernel_mcp.arch_registry, importable without this package; its names are offered here too.
from kernel_mcp.arch_registry import (  # noqa: F401
    DEFAULT_ARCH,
    DOCS_INDEX_ENV,
    KNOWN_ARCHS,
    ArchEntry,
    ArchName,
    ProductEntry,
    alias_words,
    arch_for_gpu,
    arch_literal,
    arch_names,
    check_arch,
    default_arch,
    describe,
    docs_index_dir,
    product_for_gpu,
    product_named,
    products,
    products_of,
    read_table,
    reference_product,
    registry,
    shipped_folder,
)
from kernel_mcp.errors import InvalidInput
from kernel_mcp.errors import KernelMcpError


class Figure(BaseModel):
    value: float | int | str
    unit: str | None = None
    source: str
    note: str | None = None
    disagreement: str | None = None


class HardwareSpec(ArchEntry):
    figures: dict[str, Figure]
    # whose counts, clocks, memory and peaks the figures hold: a product's label, or None (the arch's facts only)
    product_label: str | None = None
    product_by: str | None = None  # "named", "this GPU", "the arch's reference product"

    def whose(self) -> str:
        """'H200 (sm_90)' or 'sm_90, no product figures', for the answers that use the figures."""
        if self.product_label is None:
            return f"{self.arch}, no product figures"
        by = "" if self.product_by in (None, "named") else f", {self.product_by}"
        return f"{self.product_label} ({self.arch}{by})"

    def product_hint(self) -> str:
        return f"name a product of {self.arch}: " + ", ".join(p.label for p in products_of(self.arch))

    def value(self, key: str) -> float:
        figure = self.figures.get(key)
        if figure is None:
            if self.product_label is None and key in _PRODUCT_KEYS:
                raise KernelMcpError(f"{self.arch}: {key!r} is a product's figure, and no product is known here", hint=self.product_hint())
            raise KernelMcpError(f"{self.whose()}: no sourced figure for {key!r} in the hardware tables")
        if not isinstance(figure.value, (int, float)):
            raise KernelMcpError(f"{self.arch}: figure {key!r} is not a number ({figure.value!r})")
        return figure.value

    def get(self, key: str) -> float | None:
        figure = self.figures.get(key)
        return figure.value if figure is not None and isinstance(figure.value, (int, float)) else None

    def cite(self, key: str) -> str:
        figure = self.figures[key]
        return figure.source


# The figures a product table holds (counts, clocks, memory, peaks): an arch-only spec has none of them.
_PRODUCT_KEYS = ("compute_units", "hbm_bandwidth_bytes_per_s", "hbm_bytes", "peak_engine_clock_mhz", "boost_clock_mhz")


@cache
def _load(path: str, product_path: str | None, by: str | None) -> HardwareSpec:
    spec = HardwareSpec.model_validate(read_table(Path(path)))
    if product_path is None:
        return spec
    product = read_table(Path(product_path))
    figures = {**spec.figures, **{k: Figure.model_validate(v) for k, v in (product.get("figures") or {}).items()}}
    return spec.model_copy(
        update={"figures": figures, "product": product["product"], "label": product["label"], "product_label": product["label"], "product_by": by}
    )


def load_spec(arch: str, product: str | ProductEntry | None = None, *, reference: bool = True, by: str | None = None) -> HardwareSpec:
    """The arch's facts with one product's figures laid over them: the product named (a name as
    people or monitors write it, or a registry entry), else the arch's reference product (the
    answer says so) unless `reference` is False, which gives the arch's facts alone."""
    folder = docs_index_dir() / "hardware"
    path = folder / f"{check_arch(arch)}.toml"
    entry = product_named(product) if isinstance(product, str) else product
    if entry is not None and entry.arch != arch:
        raise InvalidInput(f"{entry.label} is a {entry.arch} product, not {arch}", hint=f"products of {arch}: " + ", ".join(p.label for p in products_of(arch)))
    if entry is None and reference:
        entry, by = reference_product(arch), "the arch's reference product"
    if entry is None:
        return _load(str(path), None, None)
    return _load(str(path), str(folder / "products" / f"{entry.slug}.toml"), by or "named")
