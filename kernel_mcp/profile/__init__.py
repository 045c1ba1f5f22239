"""Profiling: the GPU time of every kernel the fixed benchmark launches, and hardware counters.

profile_kernels runs the benchmark under the platform's profiler (rocprofv3 on AMD, ncu on NVIDIA)
on the gated GPU;
profile_import reads output made elsewhere (a rocprofv3 folder, an ncu CSV, rocpd databases);
profile_compare puts two runs side by side. The summary of each run is kept as profile.json so
that runs can be compared later, whatever produced them.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pandas as pd

from kernel_mcp import limits, platforms, safe_files
from kernel_mcp.errors import InvalidInput, KernelMcpError, WorkspaceError
from kernel_mcp.gpu import gate
from kernel_mcp.hardware import load_spec
from kernel_mcp.profile import counters as ctr
from kernel_mcp.profile import cuda, rocm
from kernel_mcp.profile.parsers import read_counter_collection
from kernel_mcp.profile.summary import CounterRow, ProfileComparison, ProfileSummary, compare_summaries, summarise
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace import Run, Workspace

SUMMARY_FILE = "profile.json"

__all__ = ["ProfileComparison", "ProfileSummary", "profile_compare", "profile_import", "profile_kernels"]


def peak_bandwidth(ws: Workspace) -> float | None:
    try:
        return load_spec(ws.config.target.arch).get("hbm_bandwidth_bytes_per_s")
    except KernelMcpError:
        return None


def counter_rows(frame: pd.DataFrame, durations: dict[str, float], derive) -> list[CounterRow]:
    rows = []
    for kernel, group in frame.groupby("kernel", sort=False):
        dispatches = group["dispatch"].nunique()
        values = group.groupby("counter")["value"].sum() / max(dispatches, 1)  # per dispatch
        counters = {k: float(v) for k, v in values.items()}
        rows.append(CounterRow(kernel=str(kernel), dispatches=int(dispatches), counters=counters, derived=derive(counters, durations.get(str(kernel)))))
    return rows


async def profile_kernels(ws: Workspace, run: Run, kernel_regex: str | None, counters: list[str], preset: str | None, progress: ProgressFn | None, cwd: Path | None = None,
                          lease: gate.Lease | None = None, lock_clocks: bool = False) -> ProfileSummary:
    """The benchmark run once under the workspace platform's profiler, on a gated GPU."""
    cfg = ws.config.benchmark
    if cfg is None:
        raise WorkspaceError("kernel-mcp.toml has no [benchmark] table")
    platform = platforms.runtime(ws, "profiled")
    root = cwd or ws.root
    async with gate.use(ws.config.gate, str(root), progress, require_gpu=True, lease=lease) as lease:
        env = {cfg.seed_env: str(secrets.randbits(62)), **lease.env}
        request = platforms.ProfileRequest(root=root, env=env, kernel_regex=kernel_regex, counters=counters, preset=preset, lock_clocks=lock_clocks)
        summary, notes = await platform.profile(ws, run, request, progress)
    summary.notes = notes + [f"on {lease.describe()}"]
    return _keep(run, summary)


DISPATCHES_FILE = "target_dispatches.json"


def _keep(run: Run, summary: ProfileSummary) -> ProfileSummary:
    summary.run_id = run.id
    run.write_text(SUMMARY_FILE, summary.model_dump_json())
    run.write_json(DISPATCHES_FILE, summary.target_dispatches)
    run.finish("ok", source=summary.source)
    return summary


def profile_import(ws: Workspace, run: Run, paths: list[str]) -> ProfileSummary:
    """Summaries of profiler output made elsewhere: rocprofv3 folders/CSVs, ncu CSVs, rocpd databases."""
    from kernel_mcp.profile import rocpd

    target = ws.config.benchmark.target_kernel if ws.config.benchmark else None
    resolved = [ws.resolve(p, must_exist=True) for p in paths]
    for given, path in zip(paths, resolved):
        if not path.is_dir():
            safe_files.check_regular(path, given)  # a FIFO would block the read forever
    # inside folders: regular files only, and no link leading out of the workspace
    dbs = [p for p in resolved if p.suffix == ".db" and not p.is_dir()] + [
        q for p in resolved if p.is_dir() for q in safe_files.files_under(p, "*.db", within=ws.root, relative_to=ws.root)]
    if dbs:
        return _keep(run, rocpd.summary(dbs, target, [ws.relative(p) for p in dbs]))
    frames, counter_frames, sources = [], [], set()
    for path in resolved:
        if path.is_dir():
            frame = rocm.read_trace_folder(path, within=ws.root)
            frame["origin"] = ws.relative(path)
            frames.append(frame)
            sources.add("rocprofv3")
            extra = rocm.read_counters_folder(path, within=ws.root)
            if extra is not None:
                counter_frames.append(extra)
        elif path.name.endswith("kernel_trace.csv"):
            from kernel_mcp.profile.parsers import read_kernel_trace

            frame = read_kernel_trace(path)
            frame["origin"] = ws.relative(path)
            frames.append(frame)
            sources.add("rocprofv3")
        elif path.name.endswith("counter_collection.csv"):
            counter_frames.append(read_counter_collection(path))
        elif path.suffix == ".csv":
            try:
                frame, _ = cuda.dispatches(limits.read_text(path, limits.PROFILE_CSV_MAX_BYTES, "ncu CSV"))
            except KernelMcpError as exc:  # the parser knows the text, not its file
                raise type(exc)(f"{path.name}: {exc.message}", exc.hint) from None
            frame["origin"] = ws.relative(path)
            frames.append(frame)
            sources.add("ncu")
        else:
            raise InvalidInput(f"{path.name}: not a profiler output kernel-mcp reads", hint="a rocprofv3 output folder or CSV, an ncu --csv file, or a rocpd .db")
    if not frames:
        raise InvalidInput("no kernel dispatch list among the inputs (counter files alone have no GPU times)")
    summary = summarise(pd.concat(frames, ignore_index=True), "+".join(sorted(sources)) + " (imported)", target, [ws.relative(p) for p in resolved])
    if counter_frames:
        durations = {k.name: k.avg_us / 1e6 for k in summary.kernels}
        summary.counters = counter_rows(pd.concat(counter_frames), durations, lambda c, t: ctr.derived_amd(c, t, peak_bandwidth(ws), {}))
    return _keep(run, summary)


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
