"""Progressive discovery: the tools come in toolsets, and tools/list shows the "core" set from the
start and each other set once it is loaded.

A client gives the model every listed tool's name, description and input schema on every turn;
the whole catalog was 16.8 KB of it, the core set with `tools_load` is 8.5 KB. `tools_load`'s
description is the catalog of the rest: each toolset with its tools in a few words, so a model
knows what exists without their schemas, and loads a set when its work needs it. Loading lists
the set's tools for the rest of the session and tells the client the list changed; every tool
stays callable by name whether listed or not, and calling one loads its set too (the MCP side of
this is `mcp_adapter.CompactToolsServer`). `[server] tools = "all"` lists everything from the start.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from kernel_mcp.tooling import READ_ONLY, Toolset, ToolContext, ToolInput, ToolOutput, ToolSpec

TOOLS_LOAD = "tools_load"
CORE: Toolset = "core"
Loadable = Literal["profiling", "hardware", "machine", "batch"]

# Each loadable toolset: what an engineer does with it, and its tools in a few words (the tools'
# own descriptions come with their listing). Every tool outside the core set is named here, and
# nothing else (tests/test_toolsets.py).
CATALOG: dict[str, tuple[str, dict[str, str]]] = {
    "profiling": (
        "profiles and traces beyond profile_kernels",
        {
            "profile_import": "profiler output made elsewhere",
            "profile_compare": "two profile runs",
            "thread_trace": "instruction-level trace of one dispatch",
            "thread_trace_import": "a trace made elsewhere",
            "thread_trace_compare": "two traces",
            "roofline": "bound and time floor from FLOPs and bytes",
        },
    ),
    "hardware": (
        "facts of the GPU and the compiled code",
        {
            "hw_spec": "sourced hardware figures",
            "occupancy": "waves from registers, LDS, block size",
            "isa_view": "the last compile's ISA",
            "isa_lookup": "one AMD instruction",
            "compile_import": "compiler output made elsewhere",
            "docs_map": "the docs' topics",
        },
    ),
    "machine": (
        "this machine",
        {
            "gpu_status": "which GPUs are busy",
            "run_command": "a command named in kernel-mcp.toml",
        },
    ),
    "batch": ("several candidates at once", {"experiment_evaluate_many": "evaluate candidates in parallel"}),
}


class ToolsLoadInput(ToolInput):
    toolsets: list[Loadable] = Field(min_length=1, max_length=len(CATALOG), description="the toolsets to list")


class LoadedTool(BaseModel):
    name: str
    toolset: str
    description: str


class ToolsLoadAnswer(ToolOutput):
    loaded: list[str]
    tools: list[LoadedTool] = Field(description="the tools of the loaded toolsets, now listed")

    def render(self) -> str:
        lines = [f"Listed now: the tools of {', '.join(self.loaded)} (each is callable by name whether listed or not)."]
        lines += [f"- {tool.name} ({tool.toolset}): {tool.description}" for tool in self.tools]
        return "\n".join(lines)


def catalog_text() -> str:
    """tools_load's description: every toolset beyond the core one, with its tools in a few words."""
    sets = "; ".join(f"{name} ({purpose}): " + ", ".join(f"{tool} ({what})" for tool, what in tools.items()) for name, (purpose, tools) in CATALOG.items())
    return f"List more tools; each is callable by name anyway. Toolsets: {sets}."


def requested(arguments: Any) -> set[str]:
    """The toolsets a tools_load call with these arguments loads (none when the arguments are refused)."""
    try:
        return set(ToolsLoadInput.model_validate(arguments).toolsets)
    except ValidationError:
        return set()


def toolsets_of(tools: Iterable[ToolSpec]) -> dict[str, list[ToolSpec]]:
    found: dict[str, list[ToolSpec]] = {}
    for spec in tools:
        found.setdefault(spec.toolset, []).append(spec)
    return found


def tools_load_spec(tools: Sequence[ToolSpec]) -> ToolSpec:
    """The tools_load tool over `tools` (the server's other tools)."""
    by_set = toolsets_of(tools)

    async def load(args: ToolsLoadInput, ctx: ToolContext) -> ToolsLoadAnswer:
        # the listing itself is the MCP layer's (per session); the answer says what it now holds
        names: list[str] = [name for name in CATALOG if name in args.toolsets]
        listed = [LoadedTool(name=spec.name, toolset=name, description=spec.description) for name in names for spec in by_set.get(name, [])]
        return ToolsLoadAnswer(loaded=names, tools=listed)

    return ToolSpec(TOOLS_LOAD, catalog_text(), ToolsLoadInput, ToolsLoadAnswer, load, READ_ONLY, toolset=CORE)
