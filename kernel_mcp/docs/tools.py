"""The documentation tools: the map of the index, search, reading a section, one ISA instruction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from kernel_mcp import docs
from kernel_mcp.errors import KernelMcpError
from kernel_mcp.tooling import READ_ONLY, ToolContext, ToolInput, ToolSpec
from kernel_mcp import arch_registry
from kernel_mcp.workspace.config import Arch  # the one definition of the targets, shared with kernel-mcp.toml
from kernel_mcp.workspace.workspace import state_folder

if TYPE_CHECKING:  # a Literal built at import time is no type to a checker: it sees the str the Literal holds
    AmdArch = str
else:
    AmdArch = arch_registry.arch_literal("amd")  # isa_lookup: the AMD tables of docs_index/hardware/


class DocsMapInput(ToolInput):
    pass


class DocsSearchInput(ToolInput):
    query: str = Field(min_length=1, max_length=400, description="words; exact instruction, counter, arch names work best")
    arch: Arch | None = Field(default=None, description="only this target's sections and general ones")
    limit: int = Field(default=8, ge=1, le=30)


class DocsReadInput(ToolInput):
    id: str = Field(min_length=1, max_length=200)  # the tool's description says which ids
    page: int = Field(default=1, ge=1)


class IsaLookupInput(ToolInput):
    mnemonic: str = Field(min_length=2, max_length=64, pattern=r"^[A-Za-z0-9_.]+$", description="e.g. ds_read_b128")
    arch: AmdArch = arch_registry.DEFAULT_AMD_ARCH or ""  # "": no docs index, which the lookup reports first


def _docs_store(ctx: ToolContext) -> docs.DocsStore:
    ws_dir = ctx.state.workspace_dir
    state_dir = state_folder(ws_dir) if ws_dir is not None and ws_dir.is_dir() else None  # the index is written there: no link out
    return docs.open_store(state_dir)


async def _docs_map(args: DocsMapInput, ctx: ToolContext) -> docs.DocsMap:
    return docs.docs_map(_docs_store(ctx))


def _workspace_target(ctx: ToolContext) -> tuple[str | None, str | None]:
    """The arch and product label the workspace's kernel-mcp.toml declares under [target] (none when it
    declares none: the schema's default arch is no statement about the workspace)."""
    try:
        target = ctx.workspace().config.target
    except KernelMcpError:
        return None, None
    if not target.model_fields_set & {"arch", "product"}:
        return None, None
    product = arch_registry.product_named(target.product).label if target.product else None
    return target.arch or None, product


async def _docs_search(args: DocsSearchInput, ctx: ToolContext) -> docs.SearchAnswer:
    return docs.docs_search(_docs_store(ctx), query=args.query, arch=args.arch, limit=args.limit, prefer=_workspace_target(ctx), budget=ctx.state.budget())


async def _docs_read(args: DocsReadInput, ctx: ToolContext) -> docs.SectionAnswer:
    return docs.docs_read(_docs_store(ctx), section_id=args.id, page=args.page, budget=ctx.state.budget())


async def _isa_lookup(args: IsaLookupInput, ctx: ToolContext) -> docs.IsaAnswer:
    store = _docs_store(ctx)
    # the target's assembler decides existence where the index holds no entry (asked only then)
    described = bool(args.arch) and bool(store.isa(args.mnemonic.strip().lower(), args.arch))
    verdict = None if described else await ctx.vendors.assembles(args.mnemonic, args.arch)
    return docs.isa_lookup(store, mnemonic=args.mnemonic, arch=args.arch, budget=ctx.state.budget(), assembler=verdict)


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "docs_map",
        "The map of the documentation index: each topic with a line and its id. Start here.",
        DocsMapInput,
        docs.DocsMap,
        _docs_map,
        READ_ONLY,
        toolset="hardware",
    ),
    ToolSpec(
        "docs_search",
        "Search the documentation (shipped pages and the user's ingested official documents): ranked passages "
        "(a counter's table row, an instruction entry, a paragraph) with snippets; docs_read(id) opens one.",
        DocsSearchInput,
        docs.SearchAnswer,
        _docs_search,
        READ_ONLY,
        toolset="core",
    ),
    ToolSpec(
        "docs_read",
        "Read a section by id from docs_map (paged), with its citation and the ids around it; a docs_search passage id opens it there.",
        DocsReadInput,
        docs.SectionAnswer,
        _docs_read,
        READ_ONLY,
        toolset="core",
    ),
    ToolSpec(
        "isa_lookup",
        "One AMD instruction: what it does, operands, counter moved, source, the targets whose assembler has it; nearest names if unknown.",
        IsaLookupInput,
        docs.IsaAnswer,
        _isa_lookup,
        READ_ONLY,
        toolset="hardware",
    ),
]
