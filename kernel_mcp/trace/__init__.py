"""thread_trace: where a kernel's instructions wait, from rocprofv3 --att (AMD) or ncu's source
counters (NVIDIA); thread_trace_import for traces decoded elsewhere; thread_trace_compare.

A summary is always of one kernel dispatch, labelled with the kernel the trace names; the others
in the same input are listed. Compile facts join it only when the compile history has that very
kernel for the architecture the trace ran on."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp import limits, safe_files
from kernel_mcp.errors import CommandFailed, InvalidInput, WorkspaceError
from kernel_mcp.models.platform import TraceOptions, TraceRequest
from kernel_mcp.runner import ProgressFn
from kernel_mcp.trace.analysis import TraceComparison, TraceSummary, compare
from kernel_mcp.trace.folder import summarise_file, summarise_folder
from kernel_mcp.workspace import Run, Workspace

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

SUMMARY_FILE = "trace.json"

__all__ = ["TraceComparison", "TraceOptions", "TraceSummary", "summarise_folder", "thread_trace", "thread_trace_compare", "thread_trace_import"]


def _base_name(name: str) -> str:
    """`void k<(int)4>(float const*, int)` -> `k`: a demangled signature's function name (template
    arguments may hold parentheses, so the parameter list is the first "(" outside them)."""
    depth, head = 0, []
    for c in name:
        if c == "<":
            depth += 1
        elif c == ">":
            depth = max(depth - 1, 0)
        elif c == "(" and depth == 0:
            break
        elif depth == 0:
            head.append(c)
    words = "".join(head).split()
    return words[-1].split("::")[-1] if words else ""


def compile_facts(ws: Workspace, summary: TraceSummary) -> list[str]:
    """The traced kernel's resource usage from its latest compile, when the compile history has
    that kernel (by symbol, or by name) for the architecture the trace ran on; else why not."""
    path = ws.state_dir / "compile-history.json"
    if not path.exists():
        return []
    try:
        history = json.loads(limits.read_text(path, 64 * 2**20, "compile history", within=ws.state_dir))
    except (ValueError, RecursionError):
        return ["compile facts not attached: the compile history cannot be read"]
    if not isinstance(history, dict):
        return []
    names = {n for n in (summary.kernel, summary.symbol, _base_name(summary.kernel)) if n}
    for key, k in history.items():
        if not isinstance(k, dict) or not ({k.get("symbol"), k.get("name")} & names):
            continue
        arch = str(key).split(":")[0]
        if summary.arch is None:
            return [f"compile facts not attached: the trace does not say which architecture it ran on (the history has {arch})"]
        if arch != summary.arch:
            continue
        occ = k.get("occupancy") or {}
        regs = f"VGPR {k.get('vgprs')} AGPR {k.get('agprs')} SGPR {k.get('sgprs')}" if k.get("sgprs") is not None else f"registers {k.get('vgprs')}"
        return [
            f"compile ({arch}): {regs}, LDS {k.get('lds_bytes')} B, occupancy {occ.get('waves')}/{occ.get('max_waves')} "
            f"limited by {', '.join(occ.get('limiter') or [])}"
        ]
    return []


def _keep(run: Run, summary: TraceSummary) -> TraceSummary:
    summary.run_id = run.id
    run.write_text(SUMMARY_FILE, summary.model_dump_json())
    run.finish("ok", source=summary.source)
    return summary


async def thread_trace(
    ws: Workspace,
    run: Run,
    kernel_regex: str,
    dispatch: int | None,
    options: TraceOptions,
    progress: ProgressFn | None,
    cwd: Path | None = None,
    *,
    vendors: Vendors,
) -> TraceSummary:
    from kernel_mcp.gpu import gate  # imported here: summarising a trace needs no gate

    cfg = ws.config.benchmark
    if cfg is None:
        raise WorkspaceError("kernel-mcp.toml has no [benchmark] table")
    platform = vendors.runtime(ws, "traced")
    out = run.folder / "trace"
    root = cwd or ws.root
    out.mkdir(parents=True, exist_ok=True)
    with ws.sealed_side(root, run.id) as boundary:
        async with gate.acquire(ws.config.gate, str(root), progress, require_gpu=True, vendors=vendors) as lease:
            env = {cfg.seed_env: str(secrets.randbits(62)), **lease.env}
            request = TraceRequest(
                root=root, env=env, kernel_regex=kernel_regex, dispatch=dispatch, options=options, out=out, boundary=boundary.with_writable(out)
            )
            result = await platform.trace(ws, run, request, progress)
    if not result.ok:
        raise CommandFailed(f"the trace run gave {result.status()}", hint=(result.stderr.tail or result.stdout.tail)[-400:] or None)
    summary = summarise_folder(out, kernel_regex, run.id, vendors=vendors)
    if summary.arch is None and lease.gpu is not None:
        # the GPU it ran on, named as the hardware tables name it (nvidia-smi says "Hopper", not sm_90)
        from kernel_mcp.arch_registry import arch_for_gpu

        gpu = lease.gpu
        summary.arch = arch_for_gpu(gpu.vendor, gpu.name, gpu.arch) or gpu.arch
        if summary.arch:
            summary.facts.append(f"target {summary.arch} from the GPU the trace ran on")
    summary.facts += compile_facts(ws, summary) + [f"on {lease.describe()}"]
    return _keep(run, summary)


def thread_trace_import(ws: Workspace, run: Run, path: str, kernel: str | None, dispatch: int | None = None, *, vendors: Vendors) -> TraceSummary:
    target, within = ws.import_path(path)  # the workspace, or a folder [imports] names
    if target.is_dir():
        summary = summarise_folder(target, kernel, path, within=within, dispatch=dispatch, vendors=vendors)
    else:
        safe_files.check_regular(target, path)  # a FIFO would block the read forever
        summary = summarise_file(target, kernel, path, within, dispatch=dispatch, vendors=vendors)
    summary.facts += compile_facts(ws, summary)
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
