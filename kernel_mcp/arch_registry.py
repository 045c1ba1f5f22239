"""The architectures and products kernel-mcp knows: one TOML per target in `docs_index/hardware/`,
one per product in `docs_index/hardware/products/`.

An arch is not a product: gfx950 is sold as MI350X (2.2 GHz) and MI355X (2.4 GHz), sm_90 as H100
SXM, H100 PCIe and H200 (3.35, 2.0 and 4.8 TB/s). An arch table holds the ISA-level facts every
product of it shares (registers, LDS, wave size, granules, per-CU rates); a product table holds its
counts, clocks, memory and peak rates, the names monitors and people give it and its PCI device ids.
Adding a target or a product is adding its table: tool input schemas, the workspace config, the
documentation tagger and the benchmark's floor all read this registry, so no code lists them.

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


# the folder found for (name, $env as set): a search reads the hardware tables' folder for every
# hit it shows, and looking again costs a directory listing each time; a folder not found is looked
# for again on the next call
_SHIPPED: dict[tuple[str, str | None], Path] = {}


def shipped_folder(name: str, env: str) -> Path:
    """A folder the server reads at run time (docs_index/, skills/): $env when set, else the copy a
    wheel carries inside the package (`kernel_mcp/shipped/`, made by setup.py), else the folder at the
    root of a source checkout (an editable install, or PYTHONPATH=.)."""
    configured = os.environ.get(env)
    found = _SHIPPED.get((name, configured))
    if found is not None:
        return found
    candidates = [Path(configured)] if configured else []
    package = Path(__file__).resolve().parent
    candidates += [package / "shipped" / name, package.parent / name]
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.iterdir()):
            _SHIPPED[(name, configured)] = candidate
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


class ProductEntry(BaseModel):
    """What the registry reads of a product table: which GPU it is and how to recognise it."""

    slug: str  # the file's name, e.g. "h200"
    product: str  # the maker's full name
    label: str  # short, as people write it: "H200", "MI355X"
    arch: str
    vendor: str = ""  # the arch's, filled in by the registry
    reference: bool = False  # the arch's product when a tool names the arch alone (one per arch)
    names: list[str]  # as monitors and people write it, compared whole without the maker's words
    device_ids: list[str] = []  # PCI device ids ("0x2335"): the surest match where a monitor reports one
    compute_units: int | None = None  # its figures' CU/SM count, which a monitor's count must agree with
    keys: set[str] = set()  # its slug, label and names as product_key() writes them, filled in by the registry


# Words a monitor or a person may put around a product's name that do not tell products apart.
_MAKER_WORDS = ("nvidia", "amd", "instinct", "tensor core gpu", "graphics", "gpu", "accelerator")


def product_key(name: str) -> str:
    """'NVIDIA H200' -> 'h200', 'AMD Instinct MI300X OAM' -> 'mi300x oam', ' h100-pcie ' -> 'h100 pcie'."""
    text = " " + " ".join(name.lower().replace("-", " ").replace("_", " ").split()) + " "
    for word in _MAKER_WORDS:
        text = text.replace(f" {word} ", " ")
    return " ".join(text.split())


def device_id_hex(value: object) -> str | None:
    """A PCI device id as the tables write it ("0x2335"), from what the tools print: amd-smi "0x74a1",
    rocminfo/rocprofv3 decimal 30115, nvidia-smi's "233510DE" (device id above the vendor id)."""
    if isinstance(value, bool) or value is None:
        return None
    text = str(value).strip().lower()
    try:
        if isinstance(value, int) or text.isdigit():
            number = int(text)
        elif text.startswith("0x"):
            number = int(text, 16)
        elif len(text) == 8 and all(c in "0123456789abcdef" for c in text):
            number = int(text, 16) >> 16  # nvidia-smi pci_device_id: device id, then vendor id
        else:
            return None
    except ValueError:
        return None
    return f"0x{number:04x}" if 0 < number <= 0xFFFF else None


@cache
def _products_in(folder: str) -> tuple[ProductEntry, ...]:
    archs = registry()
    entries = []
    for path in sorted(Path(folder).glob("*.toml")):
        data = read_table(path)
        count = (data.pop("figures", None) or {}).get("compute_units") or {}
        try:
            entry = ProductEntry.model_validate({**data, "slug": path.stem, "compute_units": count.get("value") if isinstance(count, dict) else None})
        except ValidationError as exc:
            first = exc.errors()[0]
            raise KernelMcpError(f"product table {path.name}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        if entry.arch not in archs:
            raise KernelMcpError(f"product table {path.name}: arch {entry.arch!r} has no table in hardware/")
        entry.vendor = archs[entry.arch].vendor
        entry.device_ids = [device_id_hex(d) or d for d in entry.device_ids]
        entries.append(entry)
    for arch in archs:
        marked = [e.slug for e in entries if e.arch == arch and e.reference]
        if len(marked) > 1:
            raise KernelMcpError(f"more than one product of {arch} sets reference = true: {', '.join(marked)}")
    for entry in entries:
        entry.keys = {product_key(name) for name in (entry.slug, entry.label, *entry.names)}
    claimed: dict[str, str] = {}
    for entry in entries:
        for key in entry.keys:
            if claimed.setdefault(key, entry.slug) != entry.slug:
                raise KernelMcpError(f"product name {key!r} is claimed by both {claimed[key]} and {entry.slug}")
    return tuple(entries)


def products() -> dict[str, ProductEntry]:
    """Every product table, by slug (read once per folder)."""
    folder = docs_index_dir() / "hardware" / "products"
    return {e.slug: e for e in _products_in(str(folder))} if folder.is_dir() else {}


def products_of(arch: str) -> list[ProductEntry]:
    return [p for p in products().values() if p.arch == arch]


def reference_product(arch: str) -> ProductEntry | None:
    return next((p for p in products_of(arch) if p.reference), None)


def product_named(name: str) -> ProductEntry:
    """The product a person or a tool argument names: "NVIDIA H200", "MI355X", "h100-pcie"."""
    key = product_key(name)
    for entry in products().values():
        if key in entry.keys:
            return entry
    known = ", ".join(p.label for p in products().values())
    raise InvalidInput(f"unknown product {name!r}", hint=f"known: {known}; a product no table describes gets no product figure")


def product_for_gpu(
    vendor: str | None, name: str | None, device_id: object = None, compute_units: int | None = None, reported_arch: str | None = None
) -> ProductEntry | None:
    """The product table of a GPU a monitor or a profiler reports, or None: better no figure than
    another product's. The device id decides where one is reported (a recorded MI355X calls itself
    "AMD Radeon Graphics"); else the whole name must be one of a product's names (so "NVIDIA H200
    NVL" is not an H200); a reported gfx target and CU/SM count must agree with the table."""
    candidates = [p for p in products().values() if p.vendor == vendor]
    target = (reported_arch or "").split(":")[0]
    if target in registry():
        candidates = [p for p in candidates if p.arch == target]
    wanted = device_id_hex(device_id)
    if wanted:
        candidates = [p for p in candidates if wanted in p.device_ids]
    else:
        key = product_key(name or "")
        candidates = [p for p in candidates if key and key in p.keys]
    if compute_units:
        candidates = [p for p in candidates if p.compute_units in (None, compute_units)]
    return candidates[0] if len(candidates) == 1 else None


def arch_for_gpu(vendor: str | None, name: str | None, reported_arch: str | None, device_id: object = None, compute_units: int | None = None) -> str | None:
    """The arch table of a GPU a monitor reports: the gfx target it reports (the feature suffix after
    ':' does not change the table), else its product's arch, else the one arch of the family it
    reports (nvidia-smi says "Hopper"). None when nothing fits. A known arch does not make a known
    product: an H200 NVL is sm_90, and no product table describes it."""
    target = (reported_arch or "").split(":")[0]
    entry = registry().get(target)
    if entry is not None and entry.vendor == vendor:
        return target
    product = product_for_gpu(vendor, name, device_id, compute_units)
    if product is not None:
        return product.arch
    family = [a for a, e in registry().items() if e.vendor == vendor and target and e.family.lower() == target.lower()]
    return family[0] if len(family) == 1 else None


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
