"""Hardware facts per target, read from `docs_index/hardware/<arch>.toml`.

Every figure there carries its value, unit and primary source (and a note of disagreement where
sources differ), so each number a tool computes with can be traced back to where it came from.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kernel_mcp.errors import InvalidInput, KernelMcpError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KNOWN_ARCHS = ("gfx950", "gfx942", "sm_90")
DOCS_INDEX_ENV = "KERNEL_MCP_DOCS_INDEX"


def shipped_folder(name: str, env: str) -> Path:
    """A folder shipped beside the package (docs_index/, skills/): $env, the source tree, or the installed share/."""
    configured = os.environ.get(env)
    candidates = [Path(configured)] if configured else []
    candidates += [Path(__file__).resolve().parents[2] / name, Path(sys.prefix) / "share" / "kernel-mcp" / name]
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.iterdir()):
            return candidate
    raise KernelMcpError(f"the shipped folder {name}/ was not found", hint=f"set {env}")


def docs_index_dir() -> Path:
    return shipped_folder("docs_index", DOCS_INDEX_ENV)


class Figure(BaseModel):
    value: float | int | str
    unit: str | None = None
    source: str
    note: str | None = None
    disagreement: str | None = None


class HardwareSpec(BaseModel):
    arch: str
    product: str
    family: str
    vendor: str
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


def check_arch(arch: str) -> str:
    if arch not in KNOWN_ARCHS:
        raise InvalidInput(f"unknown arch {arch!r}", hint="known: " + ", ".join(KNOWN_ARCHS))
    return arch


@lru_cache(maxsize=None)
def _load(path: str) -> HardwareSpec:
    data: dict[str, Any] = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    return HardwareSpec.model_validate(data)


def load_spec(arch: str) -> HardwareSpec:
    path = docs_index_dir() / "hardware" / f"{check_arch(arch)}.toml"
    if not path.exists():
        raise KernelMcpError(f"no hardware table for {arch} ({path.name} missing from docs_index/hardware)")
    return _load(str(path))
