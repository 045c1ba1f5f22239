"""The MCP server: it only registers tools and resources. Each tool is one input model, one
capability call and one output model; the logic lives in the capability packages."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import anyio
from mcp.server.mcpserver import MCPServer
from pydantic import Field

from kernel_mcp import __version__, arch_registry, bench, compile as compiler, docs, doctor, hardware, ledger, profile, trace
from kernel_mcp.gpu import gate
from kernel_mcp.ledger import many
from kernel_mcp.compile import isa_view
from kernel_mcp.errors import InvalidInput, KernelMcpError
from kernel_mcp.http_security import HttpPolicy
from kernel_mcp.toolkit import DESTRUCTIVE, READ_ONLY, RUNS_COMMANDS, ServerState, ToolContext, ToolInput, ToolSpec, register
from kernel_mcp.workspace import commands

INSTRUCTIONS = """\
kernel-mcp supplies facts about GPU kernels that must not be guessed: what this machine can do
(doctor), the workspace's fixed benchmark and commands, and the raw output of every run.
Answers are short; full outputs are kept as run artifacts (run_artifacts tool, or resources
kernel-mcp://runs/<run-id>/<file>)."""


class DoctorInput(ToolInput):
    pass


class WorkspaceInfoInput(ToolInput):
    pass


class RunCommandInput(ToolInput):
    name: str = Field(
        description="a command named in kernel-mcp.toml: 'bench' (the fixed benchmark) or a [commands] entry",
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$",
        max_length=64,
    )
    timeout_s: float | None = Field(
        default=None, gt=0, le=24 * 3600, description="stop earlier than the configured timeout (seconds)"
    )


class RunArtifactsInput(ToolInput):
    run_id: str | None = Field(default=None, description="a run id; omit to list recent runs", max_length=64)
    file: str | None = Field(default=None, description="an artifact of that run; omit to list its files", max_length=128)
    offset: int = Field(default=0, ge=0, description="byte offset to read from, for paging through a large file")


# The known targets are the hardware tables in docs_index/hardware/ (kernel_mcp.arch_registry).
Arch = arch_registry.ArchName
AmdArch = arch_registry.arch_literal("amd")


class CompileKernelInput(ToolInput):
    source: str = Field(description="kernel source file, relative to the workspace (.hip, .cu, .cpp)", max_length=512)
    arch: Arch | None = Field(default=None, description="target; default: the workspace's [target] arch")
    defines: list[str] = Field(default_factory=list, max_length=64, description="preprocessor defines, NAME or NAME=VALUE")
    flags: list[str] = Field(default_factory=list, max_length=32, description="extra compiler flags from an allowlist (-O2, -ffast-math, ...)")
    block_size: int | None = Field(default=None, ge=1, le=1024, description="threads per block, for occupancy (default: the kernel's launch bounds)")


class IsaViewInput(ToolInput):
    kernel: str | None = Field(default=None, max_length=256, description="kernel name (needed when the compile had several)")
    source_line: int | None = Field(default=None, ge=1, description="show the instructions generated for this source line")
    around: str | None = Field(default=None, max_length=128, description="show the lines from this label (e.g. .LBB0_3)")
    pattern: str | None = Field(default=None, max_length=200, description="regular expression; matching instructions with context")
    context: int = Field(default=4, ge=0, le=50, description="lines of context around label/pattern matches")
    full: bool = Field(default=False, description="page through the whole listing (use offset to continue)")
    offset: int = Field(default=0, ge=0, description="first line, with full=true")
    run_id: str | None = Field(default=None, max_length=64, description="a compile run; default: the latest")


class HwSpecInput(ToolInput):
    arch: Arch = Field(description=arch_registry.describe())


class OccupancyInput(ToolInput):
    arch: Arch
    vgprs: int = Field(ge=0, le=512, description="arch VGPRs per lane (AMD) or registers per thread (NVIDIA)")
    agprs: int = Field(default=0, ge=0, le=512, description="accumulation VGPRs (AMD)")
    sgprs: int = Field(default=0, ge=0, le=112, description="SGPRs per wave (AMD)")
    lds_bytes: int = Field(default=0, ge=0, description="LDS / shared memory per workgroup")
    block_size: int = Field(default=256, ge=1, le=1024, description="threads per workgroup")


class RooflineInput(ToolInput):
    arch: Arch
    flops: float = Field(ge=0, description="floating-point operations of the kernel (FMA = 2)")
    bytes: float = Field(gt=0, description="fewest bytes it must move through device memory")
    seconds: float | None = Field(default=None, gt=0, description="measured time, to compare with the floor")
    dtype: Literal["fp64", "fp32", "tf32", "fp16", "bf16", "fp8"] = "fp32"
    engine: Literal["vector", "matrix"] | None = Field(default=None, description="vector ALUs or matrix cores; default by dtype")
    plot: bool = Field(default=False, description="also write a PNG roofline plot as a run artifact")


async def _compile_kernel(args: CompileKernelInput, ctx: ToolContext) -> compiler.CompileAnswer:
    ws = ctx.workspace()
    ws.resolve(args.source, must_exist=True)  # refuse bad paths before creating a run
    run = ctx.new_run(args.model_dump())
    return await compiler.compile_kernel(ws, run, args.source, args.arch, args.defines, args.flags, args.block_size, ctx.progress)


async def _isa_view(args: IsaViewInput, ctx: ToolContext) -> isa_view.IsaSlice:
    ws, budget = ctx.workspace(), ctx.state.budget()
    # a worker thread: a long search never holds up the other clients' calls
    return await anyio.to_thread.run_sync(lambda: isa_view.view(ws, budget, args.kernel, args.source_line, args.around, args.pattern, args.context,
                                                                  args.full, args.offset, args.run_id))


async def _hw_spec(args: HwSpecInput, ctx: ToolContext) -> hardware.HwSpecAnswer:
    return hardware.hw_spec(args.arch)


async def _occupancy(args: OccupancyInput, ctx: ToolContext) -> hardware.OccupancyAnswer:
    return hardware.occupancy_answer(args.arch, args.vgprs, args.agprs, args.sgprs, args.lds_bytes, args.block_size)


async def _roofline(args: RooflineInput, ctx: ToolContext) -> hardware.RooflineAnswer:
    plot_path = plot_name = None
    if args.plot:
        run = ctx.new_run(args.model_dump())
        plot_path, plot_name = run.path("roofline.png"), run.uri("roofline.png")
    return hardware.roofline_answer(args.arch, args.flops, args.bytes, args.dtype, args.engine, args.seconds, plot_path, plot_name)


class DocsMapInput(ToolInput):
    pass


class DocsSearchInput(ToolInput):
    query: str = Field(min_length=1, max_length=400, description="words to look for (ranked by BM25)")
    arch: Arch | None = Field(default=None, description="only sections about this target (and general ones)")
    limit: int = Field(default=8, ge=1, le=30)


class DocsReadInput(ToolInput):
    id: str = Field(min_length=1, max_length=200, description="a section id from docs_map or docs_search")
    page: int = Field(default=1, ge=1, description="page of a long section")


class IsaLookupInput(ToolInput):
    mnemonic: str = Field(min_length=2, max_length=64, pattern=r"^[A-Za-z0-9_.]+$", description="instruction, e.g. ds_read_b128")
    arch: AmdArch = arch_registry.DEFAULT_AMD_ARCH


def _docs_store(ctx: ToolContext) -> docs.DocsStore:
    ws_dir = ctx.state.workspace_dir
    state_dir = (ws_dir / ".kernel-mcp") if ws_dir is not None and ws_dir.is_dir() else None
    return docs.open_store(state_dir)


async def _docs_map(args: DocsMapInput, ctx: ToolContext) -> docs.DocsMap:
    return docs.docs_map(_docs_store(ctx))


async def _docs_search(args: DocsSearchInput, ctx: ToolContext) -> docs.SearchAnswer:
    return docs.docs_search(_docs_store(ctx), args.query, args.arch, args.limit)


async def _docs_read(args: DocsReadInput, ctx: ToolContext) -> docs.SectionAnswer:
    return docs.docs_read(_docs_store(ctx), args.id, args.page, ctx.state.budget())


async def _isa_lookup(args: IsaLookupInput, ctx: ToolContext) -> docs.SectionAnswer:
    return docs.isa_lookup(_docs_store(ctx), args.mnemonic, args.arch, ctx.state.budget())


class GpuStatusInput(ToolInput):
    pass


class RunBenchmarkInput(ToolInput):
    label: str | None = Field(default=None, max_length=120, description="a label kept with the run")
    repeats: int | None = Field(default=None, ge=1, le=100, description="runs of the command (default: [benchmark] repeats)")
    in_experiment: bool = Field(default=False, description="run in the latest experiment's worktree (its current code) instead of the workspace")


Tag = Field(default=None, max_length=48, description="the experiment's run tag (default: the latest experiment)")


class ExperimentStartInput(ToolInput):
    tag: str = Field(max_length=48, description="run tag: names the branch kernel-opt/<tag> and the worktree")
    carry_changes: bool = Field(default=False, description="bring the workspace's uncommitted changes into the experiment")


class ExperimentEvaluateInput(ToolInput):
    hypothesis: str = Field(min_length=3, max_length=500, description="the one-sentence hypothesis this change tests")
    target_class: str | None = Field(default=None, max_length=300, description="config class the change targets, e.g. 'shape=x3d_m'; omit for a global change")
    tag: str | None = Tag


class ExperimentEvaluateManyInput(ToolInput):
    candidates: list[many.Candidate] = Field(min_length=1, max_length=many.MAX_CANDIDATES,
                                             description="each a commit (sha or branch) or a unified diff against BEST, with its hypothesis")
    target_class: str | None = Field(default=None, max_length=300, description="config class the candidates target; omit for global changes")
    tag: str | None = Tag


class ExperimentKeepInput(ToolInput):
    why: str | None = Field(default=None, max_length=500, description="why it worked (goes into the commit and performance.md)")
    attempt: int | None = Field(default=None, ge=1, description="the attempt to keep (default: the latest); e.g. a winner of experiment_evaluate_many")
    tag: str | None = Tag


class ExperimentTagInput(ToolInput):
    tag: str | None = Tag


class ExperimentEndInput(ToolInput):
    reason: str = Field(min_length=3, max_length=300, description="why the experiment ends (goes into performance.md's stop summary)")
    tag: str | None = Tag


class ExperimentLogInput(ToolInput):
    tag: str | None = Tag
    limit: int = Field(default=20, ge=1, le=200)
    outcome: Literal["kept", "reverted", "pending", "not kept", "superseded", "refused"] | None = None


def _where(ws, in_experiment: bool):
    """The latest experiment's worktree (where BEST and the candidate live), or the workspace itself."""
    if not in_experiment:
        return None
    lg = ledger.Ledger(ws)
    return lg.workdir(lg.experiment(None))


async def _gpu_status(args: GpuStatusInput, ctx: ToolContext) -> gate.GpuStatus:
    ws = ctx.workspace()
    return await gate.gpu_status(ws.config.gate, str(ws.root))


async def _run_benchmark(args: RunBenchmarkInput, ctx: ToolContext) -> bench.BenchAnswer:
    ws = ctx.workspace()
    run = ctx.new_run(args.model_dump())
    result = await bench.run_benchmark(ws, run, args.label, args.repeats, ctx.progress, cwd=_where(ws, args.in_experiment))
    run.finish("failed" if result.failure else "ok")
    return ledger.compare_with_best(ws, result, run.id)


async def _experiment_start(args: ExperimentStartInput, ctx: ToolContext) -> ledger.ExperimentAnswer:
    ws = ctx.workspace()
    return await ledger.Ledger(ws).start(ctx.new_run(args.model_dump()), args.tag, args.carry_changes, ctx.progress)


async def _experiment_evaluate(args: ExperimentEvaluateInput, ctx: ToolContext) -> ledger.ExperimentAnswer:
    ws = ctx.workspace()
    return await ledger.Ledger(ws).evaluate(ctx.new_run(args.model_dump()), args.hypothesis, args.target_class, args.tag, ctx.progress)


async def _experiment_keep(args: ExperimentKeepInput, ctx: ToolContext) -> ledger.ExperimentAnswer:
    ws = ctx.workspace()
    return await ledger.Ledger(ws).keep(ctx.new_run(args.model_dump()), args.tag, args.why, ctx.progress, attempt_id=args.attempt)


async def _experiment_evaluate_many(args: ExperimentEvaluateManyInput, ctx: ToolContext) -> many.ManyAnswer:
    ws = ctx.workspace()
    return await many.evaluate_many(ledger.Ledger(ws), ctx.new_run(args.model_dump()), args.candidates, args.target_class, args.tag, ctx.progress)


async def _experiment_revert(args: ExperimentTagInput, ctx: ToolContext) -> ledger.ExperimentAnswer:
    return await ledger.Ledger(ctx.workspace()).revert(args.tag)


async def _experiment_end(args: ExperimentEndInput, ctx: ToolContext) -> ledger.ExperimentAnswer:
    return await ledger.Ledger(ctx.workspace()).end(args.tag, args.reason)


async def _experiment_status(args: ExperimentTagInput, ctx: ToolContext) -> ledger.ExperimentAnswer:
    lg = ledger.Ledger(ctx.workspace())
    return lg.status_answer(lg.experiment(args.tag))


async def _experiment_log(args: ExperimentLogInput, ctx: ToolContext) -> ledger.LogAnswer:
    return ledger.Ledger(ctx.workspace()).log(args.tag, args.limit, args.outcome)


class ProfileKernelsInput(ToolInput):
    kernel_regex: str | None = Field(default=None, max_length=200, description="profile only kernels matching this (default: all)")
    counters: list[str] = Field(default_factory=list, max_length=64, description="hardware counter names of the target")
    preset: Literal["memory", "compute", "lds", "mfma", "occupancy", "cache"] | None = Field(default=None, description="a named set of counters")
    in_experiment: bool = Field(default=False, description="run in the latest experiment's worktree (its current code) instead of the workspace")


class ProfileImportInput(ToolInput):
    paths: list[str] = Field(min_length=1, max_length=9, description="workspace-relative rocprofv3 output folders or CSVs, ncu CSVs, or rocpd .db files")


class ProfileCompareInput(ToolInput):
    run_a: str = Field(max_length=64, description="run id of the first profile (before)")
    run_b: str = Field(max_length=64, description="run id of the second profile (after)")


async def _profile_kernels(args: ProfileKernelsInput, ctx: ToolContext) -> profile.ProfileSummary:
    ws = ctx.workspace()
    if args.kernel_regex:
        import re

        try:
            re.compile(args.kernel_regex)
        except re.error as exc:
            raise InvalidInput(f"kernel_regex: {exc}") from None
    return await profile.profile_kernels(ws, ctx.new_run(args.model_dump()), args.kernel_regex, args.counters, args.preset, ctx.progress, cwd=_where(ws, args.in_experiment))


async def _profile_import(args: ProfileImportInput, ctx: ToolContext) -> profile.ProfileSummary:
    ws = ctx.workspace()
    for p in args.paths:
        ws.resolve(p, must_exist=True)
    run = ctx.new_run(args.model_dump())
    # parsing a large import is blocking work: off the event loop, so other calls are answered meanwhile
    return await anyio.to_thread.run_sync(lambda: profile.profile_import(ws, run, args.paths))


async def _profile_compare(args: ProfileCompareInput, ctx: ToolContext) -> profile.ProfileComparison:
    return profile.profile_compare(ctx.workspace(), args.run_a, args.run_b)


class ThreadTraceInput(ToolInput):
    kernel_regex: str = Field(min_length=1, max_length=200, description="the kernel to trace (regular expression)")
    dispatch: int | None = Field(default=None, ge=0, description="which launch of it to trace (default: the first)")
    options: trace.TraceOptions = Field(default_factory=trace.TraceOptions, description="rocprofv3 --att options")
    in_experiment: bool = Field(default=False, description="run in the latest experiment's worktree (its current code) instead of the workspace")


class ThreadTraceImportInput(ToolInput):
    path: str = Field(max_length=512, description="workspace-relative folder with ui_output_*/code.json, a stats_*.csv, or an ncu source CSV")
    kernel: str | None = Field(default=None, max_length=200, description="kernel name to label the summary")


class ThreadTraceCompareInput(ToolInput):
    a: str = Field(max_length=64, description="run id of the trace before")
    b: str = Field(max_length=64, description="run id of the trace after")


async def _thread_trace(args: ThreadTraceInput, ctx: ToolContext) -> trace.TraceSummary:
    import re

    try:
        re.compile(args.kernel_regex)
    except re.error as exc:
        raise InvalidInput(f"kernel_regex: {exc}") from None
    ws = ctx.workspace()
    return await trace.thread_trace(ws, ctx.new_run(args.model_dump()), args.kernel_regex, args.dispatch, args.options, ctx.progress, cwd=_where(ws, args.in_experiment))


async def _thread_trace_import(args: ThreadTraceImportInput, ctx: ToolContext) -> trace.TraceSummary:
    ws = ctx.workspace()
    ws.resolve(args.path, must_exist=True)
    run = ctx.new_run(args.model_dump())
    return await anyio.to_thread.run_sync(lambda: trace.thread_trace_import(ws, run, args.path, args.kernel))


async def _thread_trace_compare(args: ThreadTraceCompareInput, ctx: ToolContext) -> trace.TraceComparison:
    return trace.thread_trace_compare(ctx.workspace(), args.a, args.b)


async def _doctor(args: DoctorInput, ctx: ToolContext) -> doctor.DoctorResult:
    return await doctor.diagnose(ctx.state, [(s.name, s.requires) for s in TOOLS])


async def _workspace_info(args: WorkspaceInfoInput, ctx: ToolContext) -> commands.WorkspaceInfo:
    return commands.describe(ctx.workspace())


async def _run_command(args: RunCommandInput, ctx: ToolContext) -> commands.CommandOutcome:
    ws = ctx.workspace()
    commands.command_argv(ws, args.name)  # refuse unknown names before creating a run
    run = ctx.new_run(args.model_dump())
    return await commands.run_named(ws, run, args.name, args.timeout_s, ctx.progress)


async def _run_artifacts(args: RunArtifactsInput, ctx: ToolContext) -> commands.RunListing:
    ref = commands.RunRef(run_id=args.run_id, file=args.file, offset=args.offset)
    return commands.read_runs(ctx.workspace().runs, ref, ctx.state.budget())


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "doctor",
        "What this machine can do: compilers, profilers, GPU monitors and GPUs found (with versions), "
        "the platform in use, and which kernel-mcp tools are live or what to install for the others.",
        DoctorInput, doctor.DoctorResult, _doctor, READ_ONLY,
    ),
    ToolSpec(
        "workspace_info",
        "The workspace's configuration: target arch, platform, fixed benchmark command, correctness "
        "rule, metric, config columns, target kernel, named commands, recent runs.",
        WorkspaceInfoInput, commands.WorkspaceInfo, _workspace_info, READ_ONLY, ("workspace",),
    ),
    ToolSpec(
        "run_command",
        "Run a command named in kernel-mcp.toml ('bench' or a [commands] entry; no other command can run). "
        "Returns exit status, duration and output tails; the full output is kept as run artifacts.",
        RunCommandInput, commands.CommandOutcome, _run_command, RUNS_COMMANDS, ("workspace",),
    ),
    ToolSpec(
        "run_artifacts",
        "List recent runs, list one run's files, or read a slice of one file (paged by byte offset).",
        RunArtifactsInput, commands.RunListing, _run_artifacts, READ_ONLY, ("workspace",),
    ),
    ToolSpec(
        "compile_kernel",
        "Compile a kernel source of the workspace and report, per kernel: VGPRs/AGPRs/SGPRs (or registers), "
        "scratch, spills, LDS, occupancy and its limiter, code size, instruction mix (VALU, SALU, VMEM, LDS, "
        "MFMA, s_waitcnt, barriers, branches), diagnostics as file:line:col, and the change since the previous "
        "compile. Full ISA and compiler output are kept as artifacts.",
        CompileKernelInput, compiler.CompileAnswer, _compile_kernel, RUNS_COMMANDS, ("workspace", "compiler"),
    ),
    ToolSpec(
        "isa_view",
        "A slice of the latest compile's ISA for one kernel: the instructions of a source line, the lines "
        "after a label, or regex matches with context. The whole listing only with full=true, paged.",
        IsaViewInput, isa_view.IsaSlice, _isa_view, READ_ONLY, ("workspace",),
    ),
    ToolSpec(
        "hw_spec",
        f"Hardware figures of {arch_registry.describe()}, each with its primary source: "
        "CUs, SIMDs, wave size, clocks, LDS, register files and granules, caches, HBM bandwidth, peak FLOP/s.",
        HwSpecInput, hardware.HwSpecAnswer, _hw_spec, READ_ONLY,
    ),
    ToolSpec(
        "occupancy",
        "Waves per SIMD (warps per SM sub-partition on NVIDIA) for given registers, LDS and block size, "
        "which resource limits it, and the arithmetic behind it with sources.",
        OccupancyInput, hardware.OccupancyAnswer, _occupancy, READ_ONLY,
    ),
    ToolSpec(
        "roofline",
        "Roofline bound of a kernel from its FLOPs and bytes: arithmetic intensity, ridge point, memory- or "
        "compute-bound, the time floor, and (given a measured time) how far it is from the floor; optional PNG.",
        RooflineInput, hardware.RooflineAnswer, _roofline, READ_ONLY,
    ),
    ToolSpec(
        "docs_map",
        "The one-screen map of the documentation index (L0): each topic with a one-line summary and its id. Start here.",
        DocsMapInput, docs.DocsMap, _docs_map, READ_ONLY,
    ),
    ToolSpec(
        "docs_search",
        "Search the documentation index (shipped pages plus the user's ingested official documents): "
        "ranked section ids with one-line snippets. Filter by arch.",
        DocsSearchInput, docs.SearchAnswer, _docs_search, READ_ONLY,
    ),
    ToolSpec(
        "docs_read",
        "Read one section by id, within the response budget (paged), with its citation and the ids of its parent and children.",
        DocsReadInput, docs.SectionAnswer, _docs_read, READ_ONLY,
    ),
    ToolSpec(
        "isa_lookup",
        f"The entry for one instruction on {arch_registry.describe('amd')}, where the index holds entries for it: "
        "what it does, operands, which counter it moves, with its source.",
        IsaLookupInput, docs.SectionAnswer, _isa_lookup, READ_ONLY,
    ),
    ToolSpec(
        "gpu_status",
        "GPUs with utilization, memory in use and compute processes; which are idle, which locked by another run, and the most idle.",
        GpuStatusInput, gate.GpuStatus, _gpu_status, READ_ONLY, ("workspace", "gpu-monitor"),
    ),
    ToolSpec(
        "run_benchmark",
        "Run the workspace's fixed benchmark on the most idle GPU (gated, locked), repeated with fresh seeds; "
        "per config class: correctness, metric, and the change against the experiment's BEST with a confidence statement.",
        RunBenchmarkInput, bench.BenchAnswer, _run_benchmark, RUNS_COMMANDS, ("workspace", "benchmark"),
    ),
    ToolSpec(
        "experiment_start",
        "Start an optimization run: a branch kernel-opt/<tag> and its own worktree from HEAD (the user's tree is never touched), "
        "the baseline measured and recorded as BEST, performance.md created. Edit the kernel in the worktree it names.",
        ExperimentStartInput, ledger.ExperimentAnswer, _experiment_start, RUNS_COMMANDS, ("workspace", "benchmark"),
    ),
    ToolSpec(
        "experiment_evaluate",
        "Evaluate the worktree's change against BEST, with its hypothesis: BEST and the change run side by side in pairs of fresh runs "
        "(drift cancels), then keep / discard / repair-needed / split-suggested, with figures per config class and the timing source. "
        "Every attempt is recorded. Keeping is a separate step.",
        ExperimentEvaluateInput, ledger.ExperimentAnswer, _experiment_evaluate, RUNS_COMMANDS, ("workspace", "benchmark"),
    ),
    ToolSpec(
        "experiment_evaluate_many",
        "Evaluate several candidates at once (commits or diffs against BEST, each with its hypothesis): each in its own worktree on its own "
        "idle GPU (or Ray task, per [engine]), judged like experiment_evaluate; one table ranked best first, every attempt recorded. "
        "Keep a winner with experiment_keep(attempt=...).",
        ExperimentEvaluateManyInput, many.ManyAnswer, _experiment_evaluate_many, RUNS_COMMANDS, ("workspace", "benchmark"),
    ),
    ToolSpec(
        "experiment_keep",
        "Commit the evaluated change (hypothesis and figures in the message), add its row to performance.md, move BEST. "
        "Refused unless that evaluation decided keep and the worktree is unchanged since; attempt=N keeps a batch candidate.",
        ExperimentKeepInput, ledger.ExperimentAnswer, _experiment_keep, RUNS_COMMANDS, ("workspace",),
    ),
    ToolSpec(
        "experiment_revert",
        "Reset the experiment's worktree to BEST, discarding only what the attempt changed there.",
        ExperimentTagInput, ledger.ExperimentAnswer, _experiment_revert, DESTRUCTIVE, ("workspace",),
    ),
    ToolSpec(
        "experiment_end",
        "End the experiment: the worktree back to BEST, the stop summary (kept steps, recent regressions) into performance.md, committed. "
        "Refused while the worktree holds changes that were never evaluated.",
        ExperimentEndInput, ledger.ExperimentAnswer, _experiment_end, DESTRUCTIVE, ("workspace",),
    ),
    ToolSpec(
        "experiment_status",
        "The experiment's state: BEST commit and figures, the worktree, consecutive regressions and the recent ones, stop state.",
        ExperimentTagInput, ledger.ExperimentAnswer, _experiment_status, READ_ONLY, ("workspace",),
    ),
    ToolSpec(
        "experiment_log",
        "Every attempt with its parent commit, hypothesis, per-class figures and outcome: the population and its lineage.",
        ExperimentLogInput, ledger.LogAnswer, _experiment_log, READ_ONLY, ("workspace",),
    ),
    ToolSpec(
        "profile_kernels",
        "Run the fixed benchmark under rocprofv3 (AMD) or ncu (NVIDIA) on the gated GPU: per kernel, calls, total/avg/median "
        "GPU time, share, grid and block, registers and LDS; the target kernel marked. Optional counters or a preset, with derived metrics.",
        ProfileKernelsInput, profile.ProfileSummary, _profile_kernels, RUNS_COMMANDS, ("workspace", "benchmark", "profiler", "gpu"),
    ),
    ToolSpec(
        "profile_import",
        "Summarise profiler output made elsewhere (rocprofv3 folders or CSVs, ncu CSV exports, rocpd databases; several merged) like profile_kernels does.",
        ProfileImportInput, profile.ProfileSummary, _profile_import, READ_ONLY, ("workspace",),
    ),
    ToolSpec(
        "profile_compare",
        "Two profiles side by side (by run id): per kernel average GPU time before and after, calls, and the total.",
        ProfileCompareInput, profile.ProfileComparison, _profile_compare, READ_ONLY, ("workspace",),
    ),
    ToolSpec(
        "thread_trace",
        "Instruction-level view of one kernel: rocprofv3 --att (AMD) or ncu source counters (NVIDIA) on the gated GPU. "
        "Hottest instructions, time by category (VMEM/LDS waits, barriers, MFMA, VALU, SALU, branch, idle), the top waits "
        "with the instruction they wait for, compile facts, and findings stated as facts.",
        ThreadTraceInput, trace.TraceSummary, _thread_trace, RUNS_COMMANDS, ("workspace", "benchmark", "profiler", "gpu"),
    ),
    ToolSpec(
        "thread_trace_import",
        "Summarise a decoded trace made elsewhere (rocprofv3 ui_output code.json or stats CSV, or an ncu source CSV) the same way.",
        ThreadTraceImportInput, trace.TraceSummary, _thread_trace_import, READ_ONLY, ("workspace",),
    ),
    ToolSpec(
        "thread_trace_compare",
        "Two trace summaries (by run id) before/after: what moved, by category and by hot instruction.",
        ThreadTraceCompareInput, trace.TraceComparison, _thread_trace_compare, READ_ONLY, ("workspace",),
    ),
]


def build_server(workspace_dir: str | Path | None, http: HttpPolicy | None = None) -> MCPServer:
    """The server; with an HTTP policy that holds a token, every HTTP request must bear it."""
    state = ServerState(Path(workspace_dir) if workspace_dir else None)
    auth, verifier = http.auth() if http is not None else (None, None)
    server = MCPServer("kernel-mcp", version=__version__, instructions=INSTRUCTIONS, auth=auth, token_verifier=verifier)
    for spec in TOOLS:
        register(server, state, spec)

    from kernel_mcp import skills

    for skill in skills.all_skills():
        def make_prompt(skill=skill):
            def prompt(goal: str = "") -> str:
                extra = f"\n\nThe user's goal for this session: {goal}" if goal else ""
                return skill.body + extra

            return prompt

        server.prompt(name=skill.name, description=skill.description)(make_prompt())

    @server.resource("kernel-mcp://runs", name="runs", description="Recent runs of this workspace", mime_type="text/plain")
    def list_runs() -> str:
        try:
            return commands.read_runs(state.workspace().runs, commands.RunRef(), state.budget()).render()
        except KernelMcpError as exc:
            return exc.render()

    @server.resource(
        "kernel-mcp://runs/{run_id}/{name}",
        name="run-artifact",
        description="One file kept by a run (compiler output, ISA, logs, CSV, profiles)",
        mime_type="text/plain",
    )
    def run_artifact(run_id: str, name: str) -> str:
        store = state.workspace().runs
        text, _size = store.read(run_id, name, limit_bytes=16 * 2**20)
        return text

    return server
