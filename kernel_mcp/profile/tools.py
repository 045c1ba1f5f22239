"""The profiling tools: profile the fixed benchmark, import profiles made elsewhere, compare two."""

from __future__ import annotations

import re
from typing import Literal

import anyio
from pydantic import Field

from kernel_mcp import profile
from kernel_mcp.errors import InvalidInput
from kernel_mcp.ledger.tools import workdir_for
from kernel_mcp.tooling import READ_ONLY, RUNS_COMMANDS, ToolContext, ToolInput, ToolSpec


class ProfileKernelsInput(ToolInput):
    kernel_regex: str | None = Field(default=None, max_length=200, description="profile only kernels matching this (default: all)")
    counters: list[str] = Field(default_factory=list, max_length=64, description="hardware counter names of the target")
    preset: Literal["memory", "compute", "lds", "mfma", "occupancy", "cache"] | None = Field(default=None, description="a named set of counters")
    in_experiment: bool = Field(default=False, description="run in the latest experiment's worktree (its current code) instead of the workspace")


class ProfileImportInput(ToolInput):
    paths: list[str] = Field(min_length=1, max_length=9, description="workspace-relative folders (read whole) or files, of the kinds above")


class ProfileCompareInput(ToolInput):
    run_a: str = Field(max_length=64, description="run id of the first profile (before)")
    run_b: str = Field(max_length=64, description="run id of the second profile (after)")


async def _profile_kernels(args: ProfileKernelsInput, ctx: ToolContext) -> profile.ProfileSummary:
    ws = ctx.workspace()
    if args.kernel_regex:
        try:
            re.compile(args.kernel_regex)
        except re.error as exc:
            raise InvalidInput(f"kernel_regex: {exc}") from None
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
        "Run the fixed benchmark under rocprofv3 (AMD) or ncu (NVIDIA) on the gated GPU: per kernel, calls, total/avg/median "
        "GPU time, share, grid and block, registers and LDS; the target kernel marked. Optional counters or a preset, with derived metrics.",
        ProfileKernelsInput,
        profile.ProfileSummary,
        _profile_kernels,
        RUNS_COMMANDS,
        ("workspace", "benchmark", "profiler", "gpu"),
    ),
    ToolSpec(
        "profile_import",
        "Summarise profiler output made elsewhere like profile_kernels does: rocprofv3 folders (every process's file merged) or CSVs, "
        "rocpd databases, rocprof-compute workloads, legacy rocprof results.csv / "
        "results.stats.csv, ncu CSV exports. The answer lists the files read and those skipped, with why.",
        ProfileImportInput,
        profile.ProfileSummary,
        _profile_import,
        READ_ONLY,
        ("workspace",),
    ),
    ToolSpec(
        "profile_compare",
        "Two profiles side by side (by run id): per kernel average GPU time before and after, calls, and the total.",
        ProfileCompareInput,
        profile.ProfileComparison,
        _profile_compare,
        READ_ONLY,
        ("workspace",),
    ),
]
