"""Finding the kernel dispatches in a trace output and summarising the one asked for.

rocprofv3 --att writes, per traced dispatch, `ui_output_agent_<a>_dispatch_<d>/` (code.json,
filenames.json, one JSON file per wave, occupancy, ...) and `stats_ui_output_agent_<a>_dispatch_<d>.csv`
beside it; `<pid>_agent_info.csv` names the GPU (its filenames.json gives only the major gfx
version). ncu's source page holds every kernel of its report. Each dispatch is its own summary:
instruction indices start again in every code.json, so adding dispatches together by index would add
different instructions (of different kernels) together.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import kernel_mcp.trace.ncu_source as ncu_source
import kernel_mcp.trace.wavefiles as wavefiles
from kernel_mcp import limits, safe_files
from kernel_mcp.errors import InvalidInput
from kernel_mcp.patterns import AgentPattern
from kernel_mcp.trace.analysis import KernelTrace, brief, brief_of, summarise_trace
from kernel_mcp.trace.models import TraceSummary
from kernel_mcp.trace.readers import KernelBlock, read_code_json_blocks, read_stats_blocks

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

DISPATCH_DIR = re.compile(r"ui_output_agent_(\d+)_dispatch_(\d+)")
THREAD_TRACE, PC_SAMPLING, TRACE_STATS = "rocprofv3 thread trace", "rocprofv3 PC sampling", "rocprofv3 thread trace stats"


def summarise_folder(
    folder: Path, kernel: str | None, label: str, within: Path | None = None, dispatch: int | None = None, *, vendors: Vendors
) -> TraceSummary:
    """Every kernel dispatch under `folder`, briefly, and the one asked for in full (`kernel`: a
    name, part of one or a regular expression; `dispatch`: its dispatch or launch number); with
    neither, the costliest. Only regular files whose links stay inside `within` are read. Each
    dispatch's instructions are classified by the platform whose tool wrote it (`vendors`)."""
    within = within or folder
    return choose(discover(folder, within), kernel, dispatch, label, within, vendors)


def summarise_file(path: Path, kernel: str | None, label: str, within: Path, dispatch: int | None = None, *, vendors: Vendors) -> TraceSummary:
    return choose(_file_traces(path, within), kernel, dispatch, label, within, vendors)


def choose(traces: Iterator[KernelTrace], kernel: str | None, dispatch: int | None, label: str, within: Path, vendors: Vendors) -> TraceSummary:
    briefs, chosen, best = [], None, -1.0
    pattern = _kernel_pattern(kernel)
    for trace in traces:
        line = brief_of(trace, vendors.of_tool(trace.source).classify)
        if line in briefs:  # one launch in two views of the same report (sass and cuda,sass)
            continue
        briefs.append(line)
        if _matches(trace, kernel, pattern, dispatch) and line.total > best:
            chosen, best = trace, line.total
    if not briefs:
        raise InvalidInput(f"no decoded trace under {label}", hint="expected ui_output_*/code.json, stats_*.csv, or an ncu source CSV")
    if chosen is None:
        names = "; ".join(b.kernel[:80] + (f" ({b.dispatch})" if b.dispatch else "") for b in briefs[:8])
        raise InvalidInput(f"no kernel dispatch in {label} matches kernel={kernel!r} dispatch={dispatch!r}", hint=f"found: {names}")
    _attach_wait_records(chosen, within)
    summary = summarise_trace(chosen, vendors.of_tool(chosen.source).classify)
    mine = brief(summary)
    summary.found = [mine] + [b for b in briefs if (b.kernel, b.dispatch) != (mine.kernel, mine.dispatch)]
    if len(briefs) > 1 and kernel is None and dispatch is None:
        summary.facts.insert(0, "summarised: the costliest dispatch (none was asked for)")
    return summary


def _kernel_pattern(kernel: str | None) -> AgentPattern | None:
    """The caller's `kernel` as a time-bounded pattern (Python's `re` backtracks without end on
    `^(a+)+$` against a long name the trace gives, holding the server); None where it is no regular
    expression, and then it is matched as part of a name only."""
    if not kernel:
        return None
    try:
        return AgentPattern(kernel, what="kernel=", searched="the trace's kernel names")
    except InvalidInput:
        return None


def _matches(trace: KernelTrace, kernel: str | None, pattern: AgentPattern | None, dispatch: int | None) -> bool:
    if dispatch is not None and not (trace.dispatch and re.search(rf"(?:dispatch|launch) {dispatch}$", trace.dispatch)):
        return False
    if not kernel:
        return True
    names = [n for n in (trace.kernel, trace.symbol) if n]
    return any(kernel in n or (pattern is not None and pattern.search(n[:1000])) for n in names)


def discover(folder: Path, within: Path) -> Iterator[KernelTrace]:
    def found(pattern: str) -> list[Path]:
        return safe_files.files_under(folder, pattern, within=within, relative_to=within)

    agents = _agents(found("*agent_info.csv"), within)
    codes = found("code.json")
    for path in codes:
        trace = _dispatch_trace(path, within, None)
        _label_arch(trace, path.parent, agents, within)
        yield trace
    traced = {p.parent.name for p in codes}
    stats = [p for p in found("stats_*.csv") if p.stem[len("stats_") :] not in traced]
    for path in stats:
        for trace in _stats_traces(path, None):
            _label_arch(trace, path, agents, within)
            yield trace
    if codes or stats:
        return
    for path in found("*.csv"):
        yield from _ncu_traces(path, within, skip_other=True)


def _file_traces(path: Path, within: Path) -> Iterator[KernelTrace]:
    if path.name == "code.json":
        yield _dispatch_trace(path, within, None)
    elif path.name.startswith("stats_") and path.suffix == ".csv":
        yield from _stats_traces(path, None)
    elif path.suffix == ".csv":
        yield from _ncu_traces(path, within, skip_other=False)
    else:
        raise InvalidInput(f"{path.name}: not a decoded trace", hint="a folder with ui_output_*/code.json, a stats_*.csv, or an ncu source CSV")


def _dispatch_label(folder_name: str) -> str | None:
    match = DISPATCH_DIR.search(folder_name)
    return f"agent {match.group(1)} dispatch {match.group(2)}" if match else None


def _main_block(blocks: list[KernelBlock]) -> tuple[KernelBlock, dict]:
    """The dispatch's kernel: the function that ran the most; others that ran (called functions)
    belong to the same launch. Functions of the code object that did not run are left out."""
    ran = [b for b in blocks if b.executed] or blocks[:1]
    main = max(ran, key=lambda b: sum(i.latency + i.idle + i.samples for i in b.program.values()))
    program = {k: v for b in ran for k, v in b.program.items()}
    return main, program


def _dispatch_trace(path: Path, within: Path, arch: str | None) -> KernelTrace:
    blocks = read_code_json_blocks(path)
    main, program = _main_block(blocks)
    meta_path = path.with_name("filenames.json")
    meta = wavefiles.read_filenames(meta_path, within) if meta_path.exists() or meta_path.is_symlink() else {}
    source = PC_SAMPLING if meta.get("pc_sampling") and not meta.get("thread_trace") else THREAD_TRACE
    trace = KernelTrace(
        kernel=main.name or f"unnamed kernel ({path.parent.name})",
        symbol=main.symbol,
        source=source,
        program=program,
        dispatch=_dispatch_label(path.parent.name) or path.parent.name,
        arch=arch,
        origin=path.parent,
    )
    if source == THREAD_TRACE:
        listed = wavefiles.wave_count(meta) if meta else None
        present = len(wavefiles.wave_files(path.parent, within))
        trace.waves = listed if listed is not None else present
        if listed is not None and listed != present:
            trace.facts.append(f"filenames.json lists {listed} wave files; {present} are in the folder")
    return trace


def _attach_wait_records(trace: KernelTrace, within: Path) -> None:
    folder = trace.origin
    if folder is None or trace.source != THREAD_TRACE:
        return
    files = wavefiles.wave_files(folder, within)
    if not files:
        return
    chosen = wavefiles.sample(files)
    trace.wait_records = wavefiles.wait_records(chosen, within)
    trace.wait_records_from = f"{len(chosen)} of {len(files)} wave files" if len(chosen) < len(files) else f"all {len(files)} wave files"


def _stats_traces(path: Path, arch: str | None) -> Iterator[KernelTrace]:
    blocks = read_stats_blocks(path)
    if not blocks:
        raise InvalidInput(f"{path.name}: no instruction rows (no wave ran on the traced compute unit?)")
    main, program = _main_block(blocks)
    yield KernelTrace(
        kernel=main.name or f"unnamed kernel ({path.name})",
        symbol=main.symbol,
        source=TRACE_STATS,
        program=program,
        dispatch=_dispatch_label(path.stem) or path.stem,
        arch=arch,
    )


def _ncu_traces(path: Path, within: Path, skip_other: bool) -> Iterator[KernelTrace]:
    text = limits.read_text(path, limits.PROFILE_CSV_MAX_BYTES, "ncu source", within=within)
    try:
        kernels = ncu_source.read_ncu_kernels(text, path.name)
    except InvalidInput as exc:
        if skip_other and "no ncu source table" in exc.message:
            return  # another CSV beside the source page (details, raw, agent info)
        raise
    for k in kernels:
        yield KernelTrace(
            kernel=k.name or f"unnamed kernel ({path.name})",
            source=ncu_source.SOURCE,
            program=k.block.program,
            dispatch=f"launch {k.launch}",
            reason_category=ncu_source.REASON_CATEGORY,
            issued_reason=ncu_source.ISSUED_REASON,
            wait_reasons=dict(ncu_source.LOADS_FOR_REASON),
            shared_columns=k.has_shared_columns,
        )


def _agents(paths: list[Path], within: Path) -> dict[Path, set[str]]:
    """Each rocprofv3 agent_info.csv of the folder and the GPU targets it names (Agent_Type GPU, Name gfx950)."""
    out: dict[Path, set[str]] = {}
    for path in paths:
        text = limits.read_text(path, 16 * 2**20, "agent info", within=within)
        names: set[str] = set()
        try:
            for row in csv.DictReader(io.StringIO(text)):
                if row.get("Agent_Type") == "GPU" and row.get("Name"):
                    names.add(row["Name"].strip())
        except csv.Error:
            raise InvalidInput(f"{path.name}: not a readable CSV") from None
        out[path] = names
    return out


def _label_arch(trace: KernelTrace, where: Path, agents: dict[Path, set[str]], within: Path) -> None:
    """The trace's exact target from the agent_info.csv nearest to it (the same folder or one above
    it, else any in the input), said with the file it came from. rocprofv3 writes agent info per run,
    not per dispatch, and a folder can hold other runs' files: a target whose gfx major version is
    not the one the trace's own filenames.json gives, or files that disagree, label nothing."""
    if not agents:
        return
    nearest = None
    for folder in [where.parent, *where.parent.parents]:
        here = {p: n for p, n in agents.items() if p.parent == folder}
        if here:
            nearest = here
            break
        if folder == within:
            break
    chosen = nearest or agents
    names = set().union(*chosen.values())
    listed = sorted(chosen)
    files = ", ".join(_rel(p, within) for p in listed[:3]) + (f" and {len(listed) - 3} more" if len(listed) > 3 else "")
    if len(names) != 1:
        if names:
            trace.facts.append(f"target not labelled: the agent info files ({files}) name {', '.join(sorted(names))}")
        return
    arch = names.pop()
    major = _gfx_major(where / "filenames.json" if where.is_dir() else None, within)
    if major is not None and not arch.startswith(f"gfx{major}"):
        trace.facts.append(f"target not labelled: {files} names {arch}, but this trace's filenames.json says gfx major version {major}")
        return
    trace.arch = arch
    how = "beside the trace" if nearest is not None else "in the input, not beside the trace: check it belongs to this run"
    trace.facts.append(f"target {arch} from {files} ({how})")


def _gfx_major(path: Path | None, within: Path) -> int | None:
    if path is None or not path.is_file():
        return None
    try:
        meta = wavefiles.read_filenames(path, within)
    except InvalidInput:
        return None
    major = meta.get("gfxip")
    return major if isinstance(major, int) and not isinstance(major, bool) else None


def _rel(path: Path, within: Path) -> str:
    try:
        return path.relative_to(within).as_posix()
    except ValueError:
        return path.name
