"""Profiling: the GPU time of every kernel the fixed benchmark launches, and hardware counters.

profile_kernels runs the benchmark under rocprofv3 (AMD) or ncu (NVIDIA) on the gated GPU;
profile_import reads output made elsewhere (a rocprofv3 folder, an ncu CSV, rocpd databases);
profile_compare puts two runs side by side. The summary of each run is kept as profile.json so
that runs can be compared later, whatever produced them.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pandas as pd

from kernel_mcp import limits, runner, safe_files
from kernel_mcp.errors import CommandFailed, InvalidInput, KernelMcpError, WorkspaceError
from kernel_mcp.gpu import gate
from kernel_mcp.hardware import load_spec
from kernel_mcp.profile import counters as ctr
from kernel_mcp.profile import cuda, rocm
from kernel_mcp.profile.parsers import read_counter_collection
from kernel_mcp.profile.summary import CounterRow, ProfileComparison, ProfileSummary, compare_summaries, summarise
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace import Run, Workspace

SUMMARY_FILE = "profile.json"
AMD_COUNTERS_PER_PASS = 8

__all__ = ["ProfileComparison", "ProfileSummary", "profile_compare", "profile_import", "profile_kernels", "vendor_of"]


def vendor_of(ws: Workspace) -> str:
    """Where the benchmark runs: the configured platform, else the profiler this machine has
    (a gfx950 workspace can still be measured on an NVIDIA machine), else by the target."""
    from kernel_mcp import toolchain

    platform = ws.config.target.platform
    if platform in ("rocm", "cuda"):
        return platform
    if platform == "offline":
        raise WorkspaceError("platform = 'offline': nothing can be profiled here", hint="use profile_import for output made elsewhere")
    has_rocm, has_cuda = toolchain.find("rocprofv3") is not None, toolchain.find("ncu") is not None
    if has_rocm != has_cuda:
        return "rocm" if has_rocm else "cuda"
    return "cuda" if ws.config.target.arch.startswith("sm_") else "rocm"


def _peak_bw(ws: Workspace) -> float | None:
    try:
        return load_spec(ws.config.target.arch).get("hbm_bandwidth_bytes_per_s")
    except KernelMcpError:
        return None


def _counter_rows(frame: pd.DataFrame, durations: dict[str, float], derive) -> list[CounterRow]:
    rows = []
    for kernel, group in frame.groupby("kernel", sort=False):
        dispatches = group["dispatch"].nunique()
        values = group.groupby("counter")["value"].sum() / max(dispatches, 1)  # per dispatch
        counters = {k: float(v) for k, v in values.items()}
        rows.append(CounterRow(kernel=str(kernel), dispatches=int(dispatches), counters=counters, derived=derive(counters, durations.get(str(kernel)))))
    return rows


async def profile_kernels(ws: Workspace, run: Run, kernel_regex: str | None, counters: list[str], preset: str | None, progress: ProgressFn | None, cwd: Path | None = None,
                          lease: gate.Lease | None = None, lock_clocks: bool = False) -> ProfileSummary:
    cfg = ws.config.benchmark
    if cfg is None:
        raise WorkspaceError("kernel-mcp.toml has no [benchmark] table")
    vendor = vendor_of(ws)
    root = cwd or ws.root
    target = cfg.target_kernel
    notes: list[str] = []
    async with gate.use(ws.config.gate, str(root), progress, require_gpu=True, lease=lease) as lease:
        env = {cfg.seed_env: str(secrets.randbits(62)), **lease.env}
        if vendor == "cuda":
            listing = await cuda.list_metrics(root, ws.state_dir / "cache" / "ncu-metrics.txt") if (counters or preset) else None
            chosen, notes = ctr.choose("cuda", preset, counters, listing) if (counters or preset) else ([], [])
            log = run.path("ncu.csv")
            result = await runner.run(cuda.argv(log, cfg.command, kernel_regex, chosen, lock_clocks), cwd=root, timeout_s=cfg.timeout_s * 4, env=env, log_dir=run.folder, log_name="ncu", progress=progress)
            if not result.ok or not log.exists():
                raise CommandFailed(f"ncu gave {result.status()}", hint=(result.stderr.tail or result.stdout.tail)[-400:] or None)
            frame, metrics = cuda.dispatches(log.read_text())
            summary = summarise(frame, "ncu", target)
            if chosen:
                long = pd.DataFrame([{"dispatch": d, "kernel": k, "counter": name, "value": value}
                                     for d, k in zip(frame["dispatch"], frame["kernel"]) for name, value in metrics.get(int(d), {}).items() if name in chosen])
                durations = {k.name: k.avg_us / 1e6 for k in summary.kernels}
                summary.counters = _counter_rows(long, durations, lambda c, t: ctr.derived_cuda(c, t, _peak_bw(ws))) if not long.empty else []
        else:
            out_dir = run.folder / "rocprofv3"
            fmt, why = await rocm.output_format(root)
            result = await runner.run(rocm.trace_argv(out_dir, cfg.command, kernel_regex, fmt=fmt), cwd=root, timeout_s=cfg.timeout_s * 2, env=env, log_dir=run.folder, log_name="rocprofv3", progress=progress)
            if not result.ok:
                raise CommandFailed(f"rocprofv3 gave {result.status()}", hint=result.stderr.tail[-400:] or None)
            databases = sorted(out_dir.rglob("*.db"))
            if fmt == "rocpd" and databases:
                from kernel_mcp.profile import rocpd

                summary = rocpd.summary(databases, target, [p.name for p in databases])
            else:
                summary = summarise(rocm.read_trace_folder(out_dir), "rocprofv3", target)
            notes.append(f"output format {fmt}: {why}")
            if counters or preset:
                listing = await rocm.list_avail(root, ws.state_dir / "cache" / "rocprofv3-list-avail.txt")
                chosen, choose_notes = ctr.choose("rocm", preset, counters, set(listing))
                notes += choose_notes
                frames = []

                async def one_pass(group: list[str]):
                    folder = run.folder / f"pmc-{len(frames) + 1}-{secrets.token_hex(2)}"
                    res = await runner.run(rocm.trace_argv(folder, cfg.command, kernel_regex, group), cwd=root, timeout_s=cfg.timeout_s * 2, env=env, log_dir=run.folder, log_name=folder.name, progress=progress)
                    why = rocm.rejected(res)
                    if why:
                        return None, why
                    if not res.ok:
                        raise CommandFailed(f"rocprofv3 --pmc gave {res.status()}", hint=res.stderr.tail[-300:] or None)
                    frame = rocm.read_counters_folder(folder)
                    if frame is None:
                        raise CommandFailed(f"rocprofv3 --pmc wrote no counter_collection.csv for {', '.join(group)}")
                    frames.append(frame)
                    return frame, None

                _, pass_notes = await ctr.collect_in_passes(chosen, AMD_COUNTERS_PER_PASS, one_pass)
                notes += pass_notes + [f"counters collected in {len(frames)} pass(es), one profiler run each"]
                durations = {k.name: k.avg_us / 1e6 for k in summary.kernels}
                summary.counters = _counter_rows(pd.concat(frames), durations, lambda c, t: ctr.derived_amd(c, t, _peak_bw(ws), listing))
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
        summary.counters = _counter_rows(pd.concat(counter_frames), durations, lambda c, t: ctr.derived_amd(c, t, _peak_bw(ws), {}))
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
