"""The architectures kernel-mcp knows: one TOML per target in `docs_index/hardware/`.

Adding a target is adding its table. The file is named after the arch (`gfx90a.toml` is "gfx90a"),
and besides its sourced figures a table says who makes it (`vendor`), how tool descriptions name
it (`label`), which words mark a document as being about it (`aliases`), and which GPU names a
monitor reports for the product the figures describe (`gpu_names`). Tool input schemas, the
workspace config, the documentation tagger and the benchmark's choice of roofline table all read
this registry, so no code lists arch names.

This module imports nothing of kernel_mcp but its errors: the workspace config builds its arch
type from it, and `kernel_mcp.hardware` imports the MCP toolkit, which imports the workspace.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from kernel_mcp.errors import InvalidInput, KernelMcpError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DOCS_INDEX_ENV = "KERNEL_MCP_DOCS_INDEX"


def shipped_folder(name: str, env: str) -> Path:
    """A folder the server reads at run time (docs_index/, skills/): $env when set, else the copy a
    wheel carries inside the package (`kernel_mcp/shipped/`, made by setup.py), else the folder at the
    root of a source checkout (an editable install, or PYTHONPATH=.)."""
    configured = os.environ.get(env)
    candidates = [Path(configured)] if configured else []
    package = Path(__file__).resolve().parent
    candidates += [package / "shipped" / name, package.parent / name]
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.iterdir()):
            return candidate
    raise KernelMcpError(f"the shipped folder {name}/ was not found", hint=f"set {env}")


def docs_index_dir() -> Path:
    return shipped_folder("docs_index", DOCS_INDEX_ENV)


class ArchEntry(BaseModel):
    """What the registry reads of a hardware table: which target it is, not its figures."""

    arch: str
    product: str
    family: str
    vendor: str
    label: str  # the product's short name in tool descriptions, e.g. "MI300X"
    aliases: list[str] = []  # lower-case words that mark a document as being about this target
    gpu_names: list[str] = []  # parts of a monitor-reported GPU name the figures describe
    default_target: bool = False  # the workspace default (and isa_lookup's); one table at most


def read_table(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise KernelMcpError(f"hardware table {path.name} cannot be read: {exc}") from None


@cache
def _entries_in(folder: str) -> tuple[ArchEntry, ...]:
    entries = []
    for path in sorted(Path(folder).glob("*.toml")):
        try:
            entry = ArchEntry.model_validate(read_table(path))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise KernelMcpError(f"hardware table {path.name}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        if entry.arch != path.stem:
            raise KernelMcpError(f"hardware table {path.name} says arch = {entry.arch!r}: a table is named after its arch")
        entries.append(entry)
    if not entries:
        raise KernelMcpError(f"no hardware tables (*.toml) in {folder}")
    if sum(e.default_target for e in entries) > 1:
        raise KernelMcpError("more than one hardware table sets default_target = true")
    # A stable order for schemas and descriptions: by vendor, then by name from the highest (for
    # today's AMD names that is newest first, so the main target leads).
    entries.sort(key=lambda e: e.arch, reverse=True)
    entries.sort(key=lambda e: e.vendor)
    return tuple(entries)


def registry() -> dict[str, ArchEntry]:
    """The tables under the docs index in use now, by arch (read once per folder)."""
    return {e.arch: e for e in _entries_in(str(docs_index_dir() / "hardware"))}


def arch_names(vendor: str | None = None) -> tuple[str, ...]:
    return tuple(a for a, e in registry().items() if vendor is None or e.vendor == vendor)


def default_arch(vendor: str | None = None) -> str:
    """The table marked default_target (if it is of `vendor`), else the first of the registry's order."""
    names = arch_names(vendor)
    marked = [a for a in names if registry()[a].default_target]
    return (marked or list(names))[0]


def check_arch(arch: str) -> str:
    if arch not in registry():
        raise InvalidInput(f"unknown arch {arch!r}", hint="known: " + ", ".join(arch_names()))
    return arch


def alias_words() -> dict[str, tuple[str, ...]]:
    """Per arch, the lower-case words that mark a text as being about it: its name and its aliases."""
    return {a: tuple(dict.fromkeys(w.lower() for w in (a, *e.aliases))) for a, e in registry().items()}


def arch_for_gpu(vendor: str | None, name: str | None, reported_arch: str | None) -> str | None:
    """The table that describes a GPU a monitor reports: the one of its vendor whose arch it reports
    (an AMD GPU names its gfx target; the feature suffix after ':' does not change the table) or
    whose gpu_names occur in its name. None when no table fits: better no figure than a wrong one."""
    target = (reported_arch or "").split(":")[0]
    lowered = (name or "").lower()
    for arch, entry in registry().items():
        if entry.vendor != vendor:
            continue
        if arch == target or any(part.lower() in lowered for part in entry.gpu_names):
            return arch
    return None


def describe(vendor: str | None = None) -> str:
    """'gfx950 (MI350X), gfx942 (MI300X) or sm_90 (H100)', for tool descriptions."""
    try:
        parts = [f"{a} ({registry()[a].label})" for a in arch_names(vendor)]
    except KernelMcpError:
        return "the targets of docs_index/hardware/ (not found)"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def arch_literal(vendor: str | None = None) -> Any:
    """Literal[...] of the known archs (of one vendor), so tool and config schemas carry an enum.
    Without a docs index there is nothing to list: plain str, and every use then says what is missing."""
    try:
        names = arch_names(vendor)
    except KernelMcpError:
        return str
    return Literal[names] if names else str


def _at_import(read, fallback):
    try:
        return read()
    except KernelMcpError:
        return fallback


# Taken when the package is imported: the types, enums and defaults of tool and config schemas.
KNOWN_ARCHS: tuple[str, ...] = _at_import(arch_names, ())
DEFAULT_ARCH: str | None = _at_import(default_arch, None)
DEFAULT_AMD_ARCH: str | None = _at_import(lambda: default_arch("amd"), None)  # isa_lookup's
ArchName = arch_literal()
