"""The profiling tools: profile the fixed benchmark, import profiles made elsewhere, compare two."""

from __future__ import annotations

from typing import Literal

import anyio
from pydantic import Field

from kernel_mcp import profile
from kernel_mcp.ledger.tools import workdir_for
from kernel_mcp.patterns import AgentPattern
from kernel_mcp.tooling import IN_EXPERIMENT, READ_ONLY, RUNS_COMMANDS, ToolContext, ToolInput, ToolSpec


class ProfileKernelsInput(ToolInput):
    kernel_regex: str | None = Field(default=None, max_length=200, description="default: every kernel")
    counters: list[str] = Field(default_factory=list, max_length=64, description="the target's hardware counter names")
    preset: Literal["memory", "compute", "lds", "mfma", "occupancy", "cache"] | None = Field(default=None, description="a set of counters")
    in_experiment: bool = Field(default=False, description=IN_EXPERIMENT)


class ProfileImportInput(ToolInput):
    paths: list[str] = Field(min_length=1, max_length=9, description="folders (read whole) or files, in the workspace or an [imports] folder")


class ProfileCompareInput(ToolInput):
    run_a: str = Field(max_length=64, description="before")
    run_b: str = Field(max_length=64, description="after")


async def _profile_kernels(args: ProfileKernelsInput, ctx: ToolContext) -> profile.ProfileSummary:
    ws = ctx.workspace()
    if args.kernel_regex:
        AgentPattern(args.kernel_regex, what="kernel_regex")  # refused here, by name, not by the profiler
    return await profile.profile_kernels(
        ws,
        ctx.new_run(args.model_dump()),
        kernel_regex=args.kernel_regex,
        counters=args.counters,
        preset=args.preset,
        progress=ctx.progress,
        cwd=workdir_for(ws, args.in_experiment),
        vendors=ctx.vendors,
    )


async def _profile_import(args: ProfileImportInput, ctx: ToolContext) -> profile.ProfileSummary:
    ws = ctx.workspace()
    for p in args.paths:
        ws.import_path(p)  # refuse bad paths before creating a run
    run = ctx.new_run(args.model_dump())
    # parsing a large import is blocking work: off the event loop, so other calls are answered meanwhile
    return await anyio.to_thread.run_sync(lambda: profile.profile_import(ws, run, args.paths, vendors=ctx.vendors))


async def _profile_compare(args: ProfileCompareInput, ctx: ToolContext) -> profile.ProfileComparison:
    return profile.profile_compare(ctx.workspace(), args.run_a, args.run_b)


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "profile_kernels",
        "Profile the fixed benchmark (rocprofv3 or ncu): per kernel GPU time, calls, share, grid and block, registers, LDS; counters or a preset optional.",
        ProfileKernelsInput,
        profile.ProfileSummary,
        _profile_kernels,
        RUNS_COMMANDS,
        ("workspace", "benchmark", "profiler", "gpu"),
        toolset="core",
    ),
    ToolSpec(
        "profile_import",
        "profile_kernels' summary of profiler output made elsewhere: rocprofv3 folders or CSVs, rocpd databases, "
        "rocprof-compute workloads, legacy rocprof CSVs, ncu CSV exports.",
        ProfileImportInput,
        profile.ProfileSummary,
        _profile_import,
        READ_ONLY,
        ("workspace",),
        toolset="profiling",
    ),
    ToolSpec(
        "profile_compare",
        "Two profile runs side by side: per kernel average GPU time before and after, calls, the total.",
        ProfileCompareInput,
        profile.ProfileComparison,
        _profile_compare,
        READ_ONLY,
        ("workspace",),
        toolset="profiling",
    ),
]
