"""Profiling: the GPU time of every kernel the fixed benchmark launches, and hardware counters.

profile_kernels runs the benchmark under the platform's profiler (rocprofv3 on AMD, ncu on NVIDIA)
on the gated GPU, the platform being the one the caller's `Vendors` picks for the workspace;
profile_import reads output made elsewhere (a rocprofv3 folder, an ncu CSV, rocpd databases);
profile_compare puts two runs side by side. The summary of each run is kept as profile.json so
that runs can be compared later, whatever produced them.
"""

from __future__ import annotations

import json
import secrets
import shutil
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp import limits, safe_files, sandbox
from kernel_mcp.errors import InvalidInput, KernelMcpError, WorkspaceError
from kernel_mcp.gpu import gate
from kernel_mcp.models.gpu import GpuInfo
from kernel_mcp.hardware import load_spec
from kernel_mcp.models.platform import ProfileRequest
from kernel_mcp.models.profile import CounterRow, ProfileSummary
from kernel_mcp.profile import counters as ctr
from kernel_mcp.profile import gather, tables, vendor_metrics
from kernel_mcp.profile.summary import ProfileComparison, compare_summaries, summarise, summarise_stats
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace import Run, Workspace

if TYPE_CHECKING:  # pandas is imported where a table is read: a server's start does not wait for it
    import pandas as pd
    from kernel_mcp.models.platform import Vendors

SUMMARY_FILE = "profile.json"

__all__ = ["ProfileComparison", "ProfileSummary", "profile_compare", "profile_import", "profile_kernels"]


def peak_bandwidth(ws: Workspace, gpu: GpuInfo | None = None) -> float | None:
    """The HBM bandwidth a profile's shares of peak divide by: the profiled GPU's own product's, and
    none for a GPU no product table describes; for outputs made elsewhere (no GPU here), the
    workspace's product, else none: an arch's products differ (H100 SXM 3.35 TB/s, H200 4.8)."""
    try:
        if gpu is not None:
            entry = gpu.product_entry()
            return load_spec(entry.arch, entry).get("hbm_bandwidth_bytes_per_s") if entry else None
        target = ws.config.target
        return load_spec(target.arch, target.product).get("hbm_bandwidth_bytes_per_s") if target.product else None
    except KernelMcpError:
        return None


def counter_rows(frame: pd.DataFrame, durations: dict[str, float], derive) -> list[CounterRow]:
    """Long counter rows (kernel, dispatch, counter, value; origin when several files) -> per kernel
    the per-dispatch mean of every counter, with the derived metrics."""
    return rows_from_sums(tables.counter_sums(frame), durations, derive)


def rows_from_sums(sums: pd.DataFrame, durations: dict[str, float], derive) -> list[CounterRow]:
    """Per kernel and counter: the sum over the dispatches that carry it, divided by their number
    (passes collect different counters of the same dispatches; processes add dispatches)."""
    rows: list[CounterRow] = []
    if sums is None or sums.empty:
        return rows
    merged = sums.groupby(["kernel", "counter"], sort=False)[["value_sum", "n"]].sum().reset_index()
    for kernel, group in merged.groupby("kernel", sort=False):
        group = group[group["n"] > 0]
        counters = {str(c): float(v) / float(n) for c, v, n in zip(group["counter"], group["value_sum"], group["n"])}
        dispatches = int(group["n"].max()) if len(group) else 0
        rows.append(CounterRow(kernel=str(kernel), dispatches=dispatches, counters=counters, derived=derive(counters, durations.get(str(kernel)), str(kernel))))
    return rows


async def profile_kernels(
    ws: Workspace,
    run: Run,
    kernel_regex: str | None,
    counters: list[str],
    preset: str | None,
    progress: ProgressFn | None,
    cwd: Path | None = None,
    lease: gate.Lease | None = None,
    lock_clocks: bool = False,
    boundary: sandbox.Boundary | None = None,
    *,
    vendors: Vendors,
) -> ProfileSummary:
    """The benchmark run once under the workspace platform's profiler, on a gated GPU, sealed:
    `boundary` (the ledger's side) or its own folder and a private one; the profiler may also write
    this run's folder, where it leaves its output."""
    cfg = ws.config.benchmark
    if cfg is None:
        raise WorkspaceError("kernel-mcp.toml has no [benchmark] table")
    platform = vendors.runtime(ws, "profiled")
    root = cwd or ws.root
    with ExitStack() as stack:
        if boundary is None:
            boundary = stack.enter_context(ws.sealed_side(root, run.id))
        async with gate.use(ws.config.gate, str(root), progress, require_gpu=True, lease=lease, vendors=vendors) as lease:
            env = {cfg.seed_env: str(secrets.randbits(62)), **lease.env}
            request = ProfileRequest(
                root=root,
                env=env,
                kernel_regex=kernel_regex,
                counters=counters,
                preset=preset,
                lock_clocks=lock_clocks,
                boundary=boundary.with_writable(run.folder),
                gpu=lease.gpu,
            )
            summary, notes = await platform.profile(ws, run, request, progress)
    summary.notes = notes + [f"on {lease.describe()}"] + impossible_resources(ws, summary, vendors)
    return _keep(run, summary)


DISPATCHES_FILE = "target_dispatches.json"
MAX_RESOURCE_NOTES = 4


def impossible_resources(ws: Workspace, summary: ProfileSummary, vendors: Vendors) -> list[str]:
    """Register counts no wave can have on the GPU the profile came from (a database row with 384
    AGPRs, say), named rather than passed on. The arch is the one the profile's origins name, else
    the workspace's target when its vendor is the profiler's."""
    from kernel_mcp.arch_registry import arch_names, registry
    from kernel_mcp.hardware import resource_notes

    named = [a for a in arch_names() if any(a in origin for origin in summary.origins)]
    arch = named[0] if len(named) == 1 else ws.config.target.arch
    if registry()[arch].vendor != vendors.of_tool(summary.source).gpu_vendor and not named:
        return []  # an NVIDIA profile against an AMD target (or the reverse): no table to judge it by
    notes = []
    for k in summary.kernels:
        if k.vgprs is None:
            continue
        for note in resource_notes(arch, vgprs=int(k.vgprs), agprs=int(k.agprs or 0), sgprs=int(k.sgprs or 0), vendors=vendors):
            if note.startswith("not a possible kernel"):
                notes.append(f"{k.name[:60]}: {note}")
    return notes[:MAX_RESOURCE_NOTES]


def _keep(run: Run, summary: ProfileSummary) -> ProfileSummary:
    summary.run_id = run.id
    run.write_text(SUMMARY_FILE, summary.model_dump_json())
    run.write_json(DISPATCHES_FILE, summary.target_dispatches)
    run.finish("ok", source=summary.source)
    return summary


def profile_import(ws: Workspace, run: Run, paths: list[str], *, vendors: Vendors) -> ProfileSummary:
    """Summaries of profiler output made elsewhere: every file of the folders and files named is
    read (or reported as skipped, with the reason) and merged; see gather.py for the order of sources."""
    target = ws.config.benchmark.target_kernel if ws.config.benchmark else None
    targets = []
    for given in paths:
        path, within = ws.import_path(given)  # the workspace, or a folder [imports] names
        if not path.is_dir():
            safe_files.check_regular(path, given)  # a FIFO would block the read forever
        targets.append((given, path, within))
    scratch = run.folder / "sqlite-copies"  # databases with a write-ahead log are read from copies here, removed once read
    try:
        return _import(ws, run, gather.gather(targets, ws.root, scratch), target, vendors)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _import(ws: Workspace, run: Run, g: gather.Gathered, target: str | None, vendors: Vendors) -> ProfileSummary:
    from kernel_mcp.profile import rocpd

    if g.rocpd:
        summary = rocpd.summary(g.rocpd, target, g.rocpd_labels)
    elif g.dispatches is not None:
        g.dispatches.attrs["inputs"] = g.inputs
        summary = summarise(g.dispatches, "+".join(g.sources) + " (imported)", target, g.origins)
    elif g.stats is not None:
        summary = summarise_stats(g.stats, "+".join(g.sources) + " (imported)", target, g.origins)
    else:
        raise InvalidInput(
            "no kernel GPU times among the inputs: " + _found(g),
            hint="counter files without Start_Timestamp/End_Timestamp (rocprofv3 before ROCm 7) carry no GPU times: import the "
            "kernel_trace.csv of the same run with them",
        )
    summary.inputs = g.inputs
    summary.notes = g.notes + summary.notes
    if g.counter_sums is not None and not g.rocpd:
        durations = {k.name: k.avg_us / 1e6 for k in summary.kernels}
        peak = peak_bandwidth(ws)
        arch = g.arch
        machine, machine_notes = import_machine(ws, g, arch)
        summary.notes += machine_notes + [machine.note()]
        if arch:
            summary.notes.append(
                f"derived metrics: {vendor_metrics.compute_version()} definitions for {arch}, the target {', '.join(g.arches[arch][:2])} names"
                + ("" if arch in vendor_metrics.arches() else f" (none shipped for {arch}: only the project's own figures)")
            )
        else:
            summary.notes.append(
                f"derived metrics: no input names the GPU target (sysinfo.csv, agent_info.csv): only the {vendor_metrics.compute_version()} "
                f"metrics defined alike for {', '.join(vendor_metrics.arches())}"
            )
        columns: dict[str, vendor_metrics.KernelColumns | None] = {}

        def derive(c: dict[str, float], t: float | None, kernel: str) -> list:
            columns[kernel] = vendor_metrics.kernel_columns(g.dispatch_tables, kernel)
            return ctr.derived_amd(c, t, peak, {}, arch, machine.values, columns[kernel])

        summary.counters = rows_from_sums(g.counter_sums, durations, derive)
        passes = max((c.passes for c in columns.values() if c), default=1)
        if passes > 1:
            summary.notes.append(
                f"derived metrics: the counters of {passes} files of different counters (passes) are joined per dispatch as rocprof-compute "
                "joins its passes: the n-th dispatch of a kernel and grid size in one is the n-th in the others"
            )
    summary.notes += impossible_resources(ws, summary, vendors)
    return _keep(run, summary)


def import_machine(ws: Workspace, g: gather.Gathered, arch: str | None) -> tuple[vendor_metrics.Machine, list[str]]:
    """The machine figures of an import: a workload's sysinfo.csv, else the GPU agents its
    agent_info.csv files list, else the hardware tables of the product kernel-mcp.toml names (of the
    same target), else of the target alone."""
    sysinfo = vendor_metrics.machine_vars(g.machine, g.machine_label) if g.machine else vendor_metrics.Machine({}, {})
    target = ws.config.target
    return vendor_metrics.machine_figures(arch, sysinfo, g.agents, target.product if target.arch == arch else None)


def _found(g: gather.Gathered) -> str:
    """What the inputs held instead, in a line: each file once, at most a few."""
    parts = [f"{f.path} ({f.used_for or f.skipped})" for f in g.inputs[:6]]
    more = f"; +{len(g.inputs) - 6} more" if len(g.inputs) > 6 else ""
    return ("; ".join(parts) + more) if parts else "no files"


def load_summary(ws: Workspace, run_id: str) -> ProfileSummary:
    run = ws.runs.get(run_id)
    path = run.path(SUMMARY_FILE)
    if not path.exists():
        raise InvalidInput(f"run {run_id} holds no profile", hint="give the run id of a profile_kernels or profile_import call")
    try:
        # through the run (never a link), within a size the server itself would write
        limits.check_size(path, 64 * 2**20, "profile summary")
        summary = ProfileSummary.model_validate(json.loads(run.read_text(SUMMARY_FILE)))
        extra = run.path(DISPATCHES_FILE)
        if extra.exists():
            limits.check_size(extra, 256 * 2**20, "target dispatches")
            summary.target_dispatches = json.loads(run.read_text(DISPATCHES_FILE))
    except (ValueError, RecursionError) as exc:  # JSON or schema errors of a damaged or edited run file
        raise InvalidInput(f"run {run_id}: its profile files are not what profile_import wrote ({str(exc).splitlines()[0][:160]})") from None
    return summary


def profile_compare(ws: Workspace, run_a: str, run_b: str) -> ProfileComparison:
    return compare_summaries(load_summary(ws, run_a), load_summary(ws, run_b), run_a, run_b)
