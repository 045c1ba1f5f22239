"""thread_trace: where a kernel's instructions wait, from rocprofv3 --att (AMD) or ncu's source
counters (NVIDIA); thread_trace_import for traces decoded elsewhere; thread_trace_compare."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from pydantic import BaseModel, Field

from kernel_mcp import limits, safe_files
from kernel_mcp.errors import CommandFailed, InvalidInput, WorkspaceError
from kernel_mcp.runner import ProgressFn
from kernel_mcp.trace.analysis import TraceComparison, TraceSummary, compare, summarise
from kernel_mcp.trace.readers import accumulate_code_json, read_code_json, read_ncu_source, read_stats_csv
from kernel_mcp.workspace import Run, Workspace

SUMMARY_FILE = "trace.json"

__all__ = ["TraceComparison", "TraceOptions", "TraceSummary", "thread_trace", "thread_trace_compare", "thread_trace_import"]


class TraceOptions(BaseModel):
    target_cu: int | None = Field(default=None, ge=0, le=15, description="rocprofv3 --att-target-cu")
    shader_engine_mask: str | None = Field(default=None, pattern=r"^0x[0-9a-fA-F]{1,8}$", description="--att-shader-engine-mask, e.g. 0x1")
    simd_select: str | None = Field(default=None, pattern=r"^0x[0-9a-fA-F]$", description="--att-simd-select")
    buffer_size: str | None = Field(default=None, pattern=r"^0x[0-9a-fA-F]{1,8}$", description="--att-buffer-size in bytes, hex")
    serialize_all: bool = Field(default=False, description="--att-serialize-all")
    activity: int | None = Field(default=None, ge=1, le=16, description="--att-activity (gfx9 perfcounter streaming)")


def summarise_folder(folder: Path, kernel: str, label: str, within: Path | None = None) -> TraceSummary:
    """Every decoded dispatch under the folder (code.json preferred, else stats CSVs, else ncu source CSVs).

    Only regular files whose links stay inside `within` (default: the folder) are read: a planted
    link could lead anywhere, and a FIFO would block the read forever."""
    within = within or folder

    def found(pattern: str) -> list[Path]:
        return safe_files.files_under(folder, pattern, within=within, relative_to=within)

    codes = found("code.json")
    if codes:
        program: dict = {}
        for path in codes:
            accumulate_code_json(path, program)
        rows = program.values()
        fmt = "rocprofv3 thread trace"
        meta = [_filenames(p, within) for p in (c.with_name("filenames.json") for c in codes) if os.path.lexists(p)]
        if meta and any(m.get("pc_sampling") for m in meta) and not any(m.get("thread_trace") for m in meta):
            fmt = "rocprofv3 PC sampling"
        summary = summarise(kernel, fmt, rows)
        waves = sum(len(m.get("wave_filenames") or []) for m in meta)
        summary.facts.append(f"{len(codes)} dispatch(es) decoded" + (f", {waves} wave files" if waves else ""))
        return summary
    stats = found("stats_*.csv")
    if stats:
        return summarise(kernel, "rocprofv3 thread trace stats", (r for p in stats for r in read_stats_csv(p)))
    ncu = found("*.csv")
    if ncu:
        return summarise(kernel, "ncu source counters", (r for p in ncu for r in read_ncu_source(
            limits.read_text(p, limits.PROFILE_CSV_MAX_BYTES, "ncu source", within=within), p.name)))
    raise InvalidInput(f"no decoded trace under {label}", hint="expected ui_output_*/code.json, stats_*.csv, or an ncu source CSV")


def _filenames(path: Path, within: Path) -> dict:
    """A dispatch's filenames.json (metadata beside code.json); small, a regular file inside
    `within`, and refused when malformed (its content is never echoed)."""
    try:
        meta = json.loads(limits.read_text(path, 2**20, "thread trace metadata", within=within))
    except (ValueError, RecursionError):
        raise InvalidInput(f"{path.parent.name}/{path.name} is not valid JSON") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("wave_filenames") or [], list):
        raise InvalidInput(f"{path.parent.name}/{path.name} is not rocprofv3 trace metadata (an object with wave_filenames)")
    return meta


def _compile_facts(ws: Workspace, kernel: str) -> list[str]:
    """The kernel's resource usage from the latest compile of it, with its occupancy limiter."""
    path = ws.state_dir / "compile-history.json"
    if not path.exists():
        return []
    history = json.loads(path.read_text())
    for key, k in history.items():
        if kernel and (kernel in k.get("symbol", "") or kernel in k.get("name", "")):
            occ = k.get("occupancy") or {}
            regs = f"VGPR {k.get('vgprs')} AGPR {k.get('agprs')} SGPR {k.get('sgprs')}" if k.get("sgprs") is not None else f"registers {k.get('vgprs')}"
            return [f"compile ({key.split(':')[0]}): {regs}, LDS {k.get('lds_bytes')} B, occupancy {occ.get('waves')}/{occ.get('max_waves')} limited by {', '.join(occ.get('limiter', []))}"]
    return []


def _keep(run: Run, summary: TraceSummary) -> TraceSummary:
    summary.run_id = run.id
    run.write_text(SUMMARY_FILE, summary.model_dump_json())
    run.finish("ok", source=summary.source)
    return summary


async def thread_trace(ws: Workspace, run: Run, kernel_regex: str, dispatch: int | None, options: TraceOptions, progress: ProgressFn | None, cwd: Path | None = None) -> TraceSummary:
    from kernel_mcp import platforms
    from kernel_mcp.gpu import gate  # imported here: summarising a trace needs neither

    cfg = ws.config.benchmark
    if cfg is None:
        raise WorkspaceError("kernel-mcp.toml has no [benchmark] table")
    platform = platforms.runtime(ws, "traced")
    out = run.folder / "trace"
    root = cwd or ws.root
    async with gate.acquire(ws.config.gate, str(root), progress, require_gpu=True) as lease:
        env = {cfg.seed_env: str(secrets.randbits(62)), **lease.env}
        request = platforms.TraceRequest(root=root, env=env, kernel_regex=kernel_regex, dispatch=dispatch, options=options, out=out)
        result = await platform.trace(ws, run, request, progress)
    if not result.ok:
        raise CommandFailed(f"the trace run gave {result.status()}", hint=(result.stderr.tail or result.stdout.tail)[-400:] or None)
    summary = summarise_folder(out, kernel_regex, run.id)
    summary.facts += _compile_facts(ws, kernel_regex) + [f"on {lease.describe()}"]
    return _keep(run, summary)


def thread_trace_import(ws: Workspace, run: Run, path: str, kernel: str | None) -> TraceSummary:
    target = ws.resolve(path, must_exist=True)
    name = kernel or (ws.config.benchmark.target_kernel if ws.config.benchmark else target.name)
    if not target.is_dir():
        safe_files.check_regular(target, path)  # a FIFO would block the read forever
    if target.is_dir():
        summary = summarise_folder(target, name, path, within=ws.root)
    elif target.name == "code.json":
        summary = summarise(name, "rocprofv3 thread trace", read_code_json(target))
    elif target.name.startswith("stats_") and target.suffix == ".csv":
        summary = summarise(name, "rocprofv3 thread trace stats", read_stats_csv(target))
    elif target.suffix == ".csv":
        summary = summarise(name, "ncu source counters", read_ncu_source(limits.read_text(target, limits.PROFILE_CSV_MAX_BYTES, "ncu source", label=path), target.name))
    else:
        raise InvalidInput(f"{path}: not a decoded trace", hint="a folder with ui_output_*/code.json, a stats_*.csv, or an ncu source CSV")
    summary.facts += _compile_facts(ws, name)
    return _keep(run, summary)


def load(ws: Workspace, run_id: str) -> TraceSummary:
    run = ws.runs.get(run_id)
    if not run.path(SUMMARY_FILE).exists():
        raise InvalidInput(f"run {run_id} holds no trace summary")
    try:
        limits.check_size(run.path(SUMMARY_FILE), 64 * 2**20, "trace summary")
        return TraceSummary.model_validate_json(run.read_text(SUMMARY_FILE))  # through the run: never a link
    except ValueError as exc:  # pydantic's ValidationError is one: a damaged or edited file
        raise InvalidInput(f"run {run_id}: {SUMMARY_FILE} is not a trace summary ({str(exc).splitlines()[0][:160]})") from None


def thread_trace_compare(ws: Workspace, a: str, b: str) -> TraceComparison:
    return compare(load(ws, a), load(ws, b), a, b)
