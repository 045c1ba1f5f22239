"""Hardware facts per target, read from `docs_index/hardware/<arch>.toml`.

Every figure there carries its value, unit and primary source (and a note of disagreement where
sources differ), so each number a tool computes with can be traced back to where it came from.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel

# The registry of targets (which tables exist, their vendors, aliases...) lives in
# kernel_mcp.arch_registry, importable without this package; its names are offered here too.
from kernel_mcp.arch_registry import (  # noqa: F401
    DEFAULT_ARCH, DOCS_INDEX_ENV, KNOWN_ARCHS, ArchEntry, ArchName, alias_words, arch_for_gpu, arch_literal, arch_names,
    check_arch, default_arch, describe, docs_index_dir, read_table, registry, shipped_folder,
)
from kernel_mcp.errors import KernelMcpError


class Figure(BaseModel):
    value: float | int | str
    unit: str | None = None
    source: str
    note: str | None = None
    disagreement: str | None = None


class HardwareSpec(ArchEntry):
    figures: dict[str, Figure]

    def value(self, key: str) -> float:
        figure = self.figures.get(key)
        if figure is None:
            raise KernelMcpError(f"{self.arch}: no sourced figure for {key!r} in the hardware table")
        if not isinstance(figure.value, (int, float)):
            raise KernelMcpError(f"{self.arch}: figure {key!r} is not a number ({figure.value!r})")
        return figure.value

    def get(self, key: str) -> float | None:
        figure = self.figures.get(key)
        return figure.value if figure is not None and isinstance(figure.value, (int, float)) else None

    def cite(self, key: str) -> str:
        figure = self.figures[key]
        return figure.source


@cache
def _load(path: str) -> HardwareSpec:
    return HardwareSpec.model_validate(read_table(Path(path)))


def load_spec(arch: str) -> HardwareSpec:
    path = docs_index_dir() / "hardware" / f"{check_arch(arch)}.toml"
    return _load(str(path))
