"""Workspace capabilities: describe the workspace, run its named commands, read run artifacts.

The agent names a command; it never supplies one. Only the argument lists written by a person in
kernel-mcp.toml (`[commands]`, and `bench` for the fixed benchmark) can run.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pydantic import BaseModel

from kernel_mcp import runner, untrusted
from kernel_mcp.errors import InvalidInput, KernelMcpError, WorkspaceError
from kernel_mcp.runner import ProgressFn
from kernel_mcp.tooling import ToolOutput
from kernel_mcp.workspace.artifacts import content_type
from kernel_mcp.workspace.runs import Run, RunState, RunStore, run_state
from kernel_mcp.workspace.workspace import GitPlace, Workspace

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

TAIL_CHARS = 1500  # of each stream: characters in the structured content, bytes once escaped in the text; the rest is on disk


class RunSummary(BaseModel):
    """One line of the runs listing: which tool made the run, when, and where it stands."""

    run_id: str
    tool: str | None = None
    started: str | None = None
    finished: str | None = None
    state: RunState

    def render(self) -> str:
        return f"{self.run_id}  {self.tool or '?':<14} {self.state.label()}"


def summarize(run: Run) -> RunSummary:
    meta = run.meta()
    text = lambda key: meta[key] if isinstance(meta.get(key), str) else None  # noqa: E731
    return RunSummary(run_id=run.id, tool=text("tool"), started=text("started"), finished=text("finished"), state=run_state(meta))


GLOBS_SHOWN = 12


class HarnessSummary(BaseModel):
    """The [harness] settings that decide what an experiment may change and what a keep needs."""

    editable: list[str]
    protected: list[str]
    keep_metric: str  # as configured: auto, profiler or csv
    keep_metric_here: str  # what it means on this machine
    plausibility_factor: float  # [harness] suspicious_factor
    min_pairs: int
    max_pairs: int
    verify_command: list[str]
    floor_columns: list[str]  # flops and bytes columns of the roofline floor check, when set

    def render(self) -> list[str]:
        def globs(items: list[str]) -> str:
            more = f" (+{len(items) - GLOBS_SHOWN} more)" if len(items) > GLOBS_SHOWN else ""
            return ", ".join(items[:GLOBS_SHOWN]) + more

        metric = self.keep_metric if self.keep_metric != "auto" else f"auto, here {self.keep_metric_here}"
        return [
            f"harness: editable {globs(self.editable) or 'nothing'}; protected {globs(self.protected) or '(everything not editable)'}",
            f"  keep metric {metric}; plausibility factor {self.plausibility_factor:g}x (a larger one-step speedup over BEST "
            f"is re-measured before a keep); pairs {self.min_pairs}-{self.max_pairs}",
            f"  verify: {' '.join(self.verify_command) or 'none'}; roofline floor check: "
            + (f"columns {', '.join(self.floor_columns)}" if self.floor_columns else "off (no flops/bytes columns)"),
        ]


def _keep_metric_here(ws: Workspace, configured: str, vendors: Vendors) -> str:
    """What `auto` picks here, as the ledger decides it (a profiler that can time kernels)."""
    if configured != "auto":
        return configured
    try:
        can_profile = vendors.of(ws).platform.can_profile()
    except KernelMcpError:
        can_profile = False
    return "profiler (GPU time of the target kernel)" if can_profile else "csv (no profiler here: the benchmark's metric)"


class WorkspaceInfo(ToolOutput):
    root: str
    is_git: bool
    git: GitPlace | None = None
    arch: str
    platform: str
    benchmark_command: list[str] | None = None
    benchmark_csv: str | None = None
    correctness: str | None = None
    metric: str | None = None
    config_columns: list[str] = []
    target_kernel: str | None = None
    noise_threshold: float | None = None
    repeats: int | None = None
    harness: HarnessSummary
    commands: list[str] = []
    recent_runs: list[RunSummary] = []

    def _git_text(self) -> str:
        if self.git is None:
            return "git: no (not inside a git repository; the ledger needs one)"
        where = "its top" if self.git.subfolder == "." else f"subfolder {self.git.subfolder} of {self.git.top}"
        return f"git: yes, {where}" + ("" if self.git.has_commit else "; no commit yet")

    def render(self) -> str:
        lines = [f"workspace {self.root} ({self._git_text()}); target {self.arch}, platform {self.platform}"]
        if self.benchmark_command:
            lines += [
                f"benchmark: {' '.join(self.benchmark_command)} -> {self.benchmark_csv}",
                f"  correctness: {self.correctness}; metric: {self.metric} (lower is better); noise {self.noise_threshold:.1%}; repeats {self.repeats}",
                f"  config columns: {', '.join(self.config_columns) or '(inferred)'}; target kernel: /{self.target_kernel}/",
            ]
        else:
            lines.append("benchmark: none configured")
        lines += self.harness.render()
        lines.append(f"commands: {', '.join(self.commands) or '-'}")
        if self.recent_runs:
            lines.append("recent runs:")
            lines += [f"  {r.render()}" for r in self.recent_runs]
        return "\n".join(lines)


def describe(ws: Workspace, vendors: Vendors) -> WorkspaceInfo:
    cfg = ws.config
    bench = cfg.benchmark
    harness = cfg.harness
    place = ws.git()
    return WorkspaceInfo(
        root=str(ws.root),
        is_git=place is not None,
        git=place,
        arch=cfg.target.arch,
        platform=cfg.target.platform,
        benchmark_command=bench.command if bench else None,
        benchmark_csv=bench.csv if bench else None,
        correctness=f"{bench.correctness.column} {bench.correctness.rule}" if bench else None,
        metric=bench.metric if bench else None,
        config_columns=bench.config_columns if bench else [],
        target_kernel=bench.target_kernel if bench else None,
        noise_threshold=bench.noise_threshold if bench else None,
        repeats=bench.repeats if bench else None,
        harness=HarnessSummary(
            editable=list(harness.editable),
            protected=list(harness.protected),
            keep_metric=harness.keep_metric,
            keep_metric_here=_keep_metric_here(ws, harness.keep_metric, vendors),
            plausibility_factor=harness.suspicious_factor,
            min_pairs=harness.min_pairs,
            max_pairs=harness.max_pairs,
            verify_command=list(harness.verify_command),
            floor_columns=[c for c in (harness.flops_column, harness.bytes_column) if c],
        ),
        commands=(["bench"] if bench else []) + sorted(cfg.commands),
        recent_runs=[summarize(r) for r in ws.runs.recent(5)],
    )


class CommandOutcome(ToolOutput):
    name: str
    argv: list[str]
    status: str
    exit_code: int | None
    timed_out: bool
    duration_s: float
    stdout_bytes: int
    stderr_bytes: int
    stdout_tail: str
    stderr_tail: str
    log_cut: bool
    run_id: str
    artifacts: list[str]

    def render(self) -> str:
        lines = [
            f"{self.name}: {self.status} after {self.duration_s:.2f} s  (run {self.run_id})",
            f"argv: {' '.join(map(untrusted.inline, self.argv))}",
            f"stdout {self.stdout_bytes} B, stderr {self.stderr_bytes} B" + ("; log on disk was cut at its cap" if self.log_cut else ""),
        ]
        for stream, tail in (("stdout", self.stdout_tail), ("stderr", self.stderr_tail)):
            if tail:
                # what the command printed is fenced, its escapes counted in its share of the answer
                kept = untrusted.fitting(tail, TAIL_CHARS, keep="end")
                lines.append(untrusted.fenced(f"{stream} (tail)", kept if kept == tail else "..." + kept))
        lines.append("full output: " + ", ".join(self.artifacts))
        return "\n".join(lines)


def _tail(text: str, limit: int = TAIL_CHARS) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


def command_argv(ws: Workspace, name: str) -> tuple[list[str], float]:
    cfg = ws.config
    if name == "bench":
        if cfg.benchmark is None:
            raise WorkspaceError("kernel-mcp.toml has no [benchmark] table")
        return cfg.benchmark.command, cfg.benchmark.timeout_s
    if name not in cfg.commands:
        known = ", ".join((["bench"] if cfg.benchmark else []) + sorted(cfg.commands)) or "none"
        raise InvalidInput(f"no command named {name!r} in kernel-mcp.toml", hint=f"configured commands: {known}")
    return cfg.commands[name], cfg.server.command_timeout_s


async def run_named(ws: Workspace, run_dir, name: str, timeout_s: float | None, progress: ProgressFn | None) -> CommandOutcome:
    argv, configured_timeout = command_argv(ws, name)
    limit = min(timeout_s, configured_timeout) if timeout_s else configured_timeout
    with ws.sealed_side(ws.root, run_dir.id) as boundary:  # the user's own command: its workspace is writable
        result = await runner.run(argv, cwd=ws.root, timeout_s=limit, log_dir=run_dir.folder, log_name=name, progress=progress, boundary=boundary)
    status = result.status()
    run_dir.finish(status, ok=result.ok, exit_code=result.returncode, duration_s=round(result.duration_s, 3))
    return CommandOutcome(
        name=name,
        argv=result.argv,
        status=status,
        exit_code=result.returncode,
        timed_out=result.timed_out,
        duration_s=result.duration_s,
        stdout_bytes=result.stdout.total_bytes,
        stderr_bytes=result.stderr.total_bytes,
        stdout_tail=_tail(result.stdout.tail),
        stderr_tail=_tail(result.stderr.tail),
        log_cut=result.stdout.cut_on_disk or result.stderr.cut_on_disk,
        run_id=run_dir.id,
        artifacts=[run_dir.uri(f) for f in run_dir.files()],
    )


class RunListing(ToolOutput):
    runs: list[RunSummary] = []
    run_id: str | None = None
    files: list[str] = []
    file: str | None = None
    offset: int = 0
    size: int | None = None
    text: str | None = None
    state: RunState | None = None  # of the one run listed

    def render(self) -> str:
        if self.text is not None:
            end = self.offset + len(self.text.encode("utf-8"))
            return untrusted.fenced(f"{self.run_id}/{self.file} bytes {self.offset}-{end} of {self.size}", self.text)
        if self.run_id:
            state = f" ({self.state.label()})" if self.state else ""
            return f"run {self.run_id}{state}: " + ", ".join(self.files)
        return "\n".join(r.render() for r in self.runs) or "no runs yet"


class RunRef(BaseModel):
    run_id: str | None = None
    file: str | None = None
    offset: int = 0


def read_runs(store: RunStore, ref: RunRef, budget: int) -> RunListing:
    if ref.run_id is None:
        return RunListing(runs=[summarize(r) for r in store.recent(20)])
    run = store.get(ref.run_id)
    if ref.file is None:
        return RunListing(run_id=run.id, files=run.files(), state=run.state())
    if not os.path.lexists(run.path(ref.file)):
        raise InvalidInput(f"run {run.id} has no file {ref.file!r}", hint="files: " + ", ".join(run.files()))
    with run.open(ref.file) as handle:  # a regular file of the run: no link, no FIFO
        size = os.fstat(handle.fileno()).st_size
        if ref.offset < 0 or ref.offset > size:
            raise InvalidInput(f"offset {ref.offset} is outside the file (size {size})")
        mime, is_text = content_type(ref.file, handle.read(4096))
        if not is_text:  # bytes decoded as text are noise to a reader; the resource serves them whole
            raise InvalidInput(
                f"{run.id}/{ref.file} is binary ({mime}, {size:,} bytes): not shown as text",
                hint=f"read it as the resource {run.uri(ref.file)} (served as {mime}), or open {run.path(ref.file)}",
            )
        handle.seek(ref.offset)
        data = handle.read(max(256, budget - 200))
    # no more than the answer shows once escaped: the page's end is where the next read starts
    text = untrusted.fitting(data.decode("utf-8", errors="replace"), max(256, budget - 300), keep="start")
    return RunListing(run_id=run.id, file=ref.file, offset=ref.offset, size=size, text=text)
