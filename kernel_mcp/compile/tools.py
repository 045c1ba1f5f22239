"""The compile tools: compile a workspace kernel for its facts, and read slices of the ISA kept."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
from pydantic import Field

from kernel_mcp import arch_registry

from kernel_mcp import compile as compiler
from kernel_mcp.compile import imported, isa_view
from kernel_mcp.tooling import READ_ONLY, RUNS_COMMANDS, ToolContext, ToolInput, ToolSpec
from kernel_mcp.workspace.config import Arch  # the one definition of the targets, shared with kernel-mcp.toml

if TYPE_CHECKING:  # a Literal built at import time is no type to a checker: it sees the str the Literal holds
    AmdArch = str
else:
    AmdArch = arch_registry.arch_literal("amd")  # compile_import reads AMD compiler output only


class CompileKernelInput(ToolInput):
    source: str = Field(description="workspace-relative .hip, .cu or .cpp file", max_length=512)
    arch: Arch | None = Field(default=None, description="default: the workspace's [target] arch")
    defines: list[str] = Field(default_factory=list, max_length=64, description="preprocessor defines, NAME or NAME=VALUE")
    flags: list[str] = Field(default_factory=list, max_length=32, description="allowlisted, e.g. -O2, -ffast-math")
    block_size: int | None = Field(default=None, ge=1, le=1024, description="for occupancy; default: the launch bounds")
    dynamic_lds_bytes: int | None = Field(default=None, ge=0, le=1 << 20, description="per block, set at launch (extern __shared__); occupancy adds it")


class CompileImportInput(ToolInput):
    paths: list[str] = Field(min_length=1, max_length=imported.MAX_FILES, description="files in the workspace or an [imports] folder")
    arch: AmdArch | None = Field(default=None, description="if no file names it")


class IsaViewInput(ToolInput):
    kernel: str | None = Field(default=None, max_length=256, description="needed when the compile had several")
    source_line: int | None = Field(default=None, ge=1)
    around: str | None = Field(default=None, max_length=128, description="a label, e.g. .LBB0_3")
    pattern: str | None = Field(default=None, max_length=200, description="regex")
    context: int = Field(default=4, ge=0, le=50)
    full: bool = False
    offset: int = Field(default=0, ge=0, description="first line, with full=true")
    run_id: str | None = Field(default=None, max_length=64, description="a compile run; default: the latest")


async def _compile_kernel(args: CompileKernelInput, ctx: ToolContext) -> compiler.CompileAnswer:
    ws = ctx.workspace()
    ws.resolve(args.source, must_exist=True)  # refuse bad paths before creating a run
    run = ctx.new_run(args.model_dump())
    return await compiler.compile_kernel(
        ws,
        run,
        source=args.source,
        arch=args.arch,
        defines=args.defines,
        flags=args.flags,
        block_size=args.block_size,
        progress=ctx.progress,
        dynamic_lds_bytes=args.dynamic_lds_bytes,
        vendors=ctx.vendors,
    )


async def _compile_import(args: CompileImportInput, ctx: ToolContext) -> imported.CompileImportAnswer:
    ws, vendors = ctx.workspace(), ctx.vendors
    return await anyio.to_thread.run_sync(lambda: imported.compile_import(ws, args.paths, args.arch, vendors=vendors))


async def _isa_view(args: IsaViewInput, ctx: ToolContext) -> isa_view.IsaSlice:
    ws, budget = ctx.workspace(), ctx.state.budget()
    # a worker thread: a long search never holds up the other clients' calls
    return await anyio.to_thread.run_sync(
        lambda: isa_view.view(
            ws,
            budget,
            kernel=args.kernel,
            source_line=args.source_line,
            label=args.around,
            pattern=args.pattern,
            context=args.context,
            full=args.full,
            offset=args.offset,
            run_id=args.run_id,
        )
    )


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "compile_kernel",
        "Compile a kernel source: per kernel registers, spills, LDS, occupancy and its limiter, instruction mix, "
        "diagnostics, the change since the last compile. Use after every edit.",
        CompileKernelInput,
        compiler.CompileAnswer,
        _compile_kernel,
        RUNS_COMMANDS,
        ("workspace", "compiler"),
        toolset="core",
    ),
    ToolSpec(
        "compile_import",
        "compile_kernel's facts from AMD compiler output made elsewhere: --save-temps .s, resource-remark logs, Triton .amdgcn/.json.",
        CompileImportInput,
        imported.CompileImportAnswer,
        _compile_import,
        READ_ONLY,
        ("workspace",),
        toolset="hardware",
    ),
    ToolSpec(
        "isa_view",
        "Read the last compile's ISA of a kernel: a source line's instructions, the lines after a label, "
        "regex matches with context, or the whole listing paged (full=true).",
        IsaViewInput,
        isa_view.IsaSlice,
        _isa_view,
        READ_ONLY,
        ("workspace",),
        toolset="hardware",
    ),
]
