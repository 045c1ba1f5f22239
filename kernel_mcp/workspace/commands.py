"""Workspace capabilities: describe the workspace, run its named commands, read run artifacts.

The agent names a command; it never supplies one. Only the argument lists written by a person in
kernel-mcp.toml (`[commands]`, and `bench` for the fixed benchmark) can run.
"""

from __future__ import annotations

import os

from pydantic import BaseModel

from kernel_mcp import runner
from kernel_mcp.errors import InvalidInput, WorkspaceError
from kernel_mcp.runner import ProgressFn
from kernel_mcp.tooling import ToolOutput
from kernel_mcp.workspace.runs import Run, RunState, RunStore, run_state
from kernel_mcp.workspace.workspace import Workspace

TAIL_CHARS = 1500  # of each stream, in the answer; the rest is on disk


class WorkspaceInfo(ToolOutput):
    root: str
    is_git: bool
    arch: str
    platform: str
    benchmark_command: list[str] | None = None
    benchmark_csv: str | None = None
    correctness: str | None = None
    metric: str | None = None
    config_columns: list[str] = []
    target_kernel: str | None = None
    noise_threshold: float | None = None
    commands: list[str] = []
    recent_runs: list[str] = []

    def render(self) -> str:
        lines = [f"workspace {self.root} (git: {'yes' if self.is_git else 'no'}); target {self.arch}, platform {self.platform}"]
        if self.benchmark_command:
            lines += [
                f"benchmark: {' '.join(self.benchmark_command)} -> {self.benchmark_csv}",
                f"  correctness: {self.correctness}; metric: {self.metric} (lower is better); noise {self.noise_threshold:.1%}",
                f"  config columns: {', '.join(self.config_columns) or '(inferred)'}; target kernel: /{self.target_kernel}/",
            ]
        else:
            lines.append("benchmark: none configured")
        lines.append(f"commands: {', '.join(self.commands) or '-'}")
        if self.recent_runs:
            lines.append("recent runs: " + ", ".join(self.recent_runs))
        return "\n".join(lines)


def describe(ws: Workspace) -> WorkspaceInfo:
    cfg = ws.config
    bench = cfg.benchmark
    return WorkspaceInfo(
        root=str(ws.root),
        is_git=ws.is_git,
        arch=cfg.target.arch,
        platform=cfg.target.platform,
        benchmark_command=bench.command if bench else None,
        benchmark_csv=bench.csv if bench else None,
        correctness=f"{bench.correctness.column} {bench.correctness.rule}" if bench else None,
        metric=bench.metric if bench else None,
        config_columns=bench.config_columns if bench else [],
        target_kernel=bench.target_kernel if bench else None,
        noise_threshold=bench.noise_threshold if bench else None,
        commands=(["bench"] if bench else []) + sorted(cfg.commands),
        recent_runs=[r.id for r in ws.runs.recent(5)],
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
            f"argv: {' '.join(self.argv)}",
            f"stdout {self.stdout_bytes} B, stderr {self.stderr_bytes} B" + ("; log on disk was cut at its cap" if self.log_cut else ""),
        ]
        if self.stdout_tail:
            lines += ["--- stdout (tail) ---", self.stdout_tail]
        if self.stderr_tail:
            lines += ["--- stderr (tail) ---", self.stderr_tail]
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


async def run_named(
    ws: Workspace, run_dir, name: str, timeout_s: float | None, progress: ProgressFn | None
) -> CommandOutcome:
    argv, configured_timeout = command_argv(ws, name)
    limit = min(timeout_s, configured_timeout) if timeout_s else configured_timeout
    result = await runner.run(
        argv, cwd=ws.root, timeout_s=limit, log_dir=run_dir.folder, log_name=name, progress=progress
    )
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
            return f"{self.run_id}/{self.file} bytes {self.offset}-{end} of {self.size}\n{self.text}"
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
        handle.seek(ref.offset)
        data = handle.read(max(256, budget - 200))
    return RunListing(run_id=run.id, file=ref.file, offset=ref.offset, size=size, text=data.decode("utf-8", errors="replace"))
