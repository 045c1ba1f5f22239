"""Engines that measure experiment_evaluate_many's candidates: one interface, two places.

`local` is a pool over this node's idle GPUs (each worker holds one GPU's gate lease for the whole
batch, so two candidates never share a GPU); `ray` sends each candidate to a Ray task that asks
for one GPU. Both only measure: each returns one Measurement per candidate, and the ledger on this
node judges and records it, so the keep/discard rule and the ledger are the same whichever ran it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol

from pydantic import BaseModel

from kernel_mcp.bench import BenchRun
from kernel_mcp.runner import ProgressFn

SLOT_ENV = "KERNEL_MCP_SLOT"  # the benchmark sees which slot (GPU) of the batch runs it


@dataclass
class Job:
    """One candidate, prepared on this node: a pinned commit, and its worktree while it exists."""

    index: int
    hypothesis: str
    commit: str
    ref: str
    subdir: str
    worktree: Path | None = None
    files: list[str] = field(default_factory=list)
    digest: str = ""

    @property
    def workdir(self) -> Path:
        assert self.worktree is not None
        return self.worktree / self.subdir if self.subdir != "." else self.worktree


class Measurement(BaseModel):
    """What an engine brings back for one candidate; `error` when it could not be measured."""

    index: int
    bench: BenchRun | None = None
    profile: dict[str, Any] = {}
    error: str | None = None
    where: str = ""
    started: float = 0.0  # epoch seconds, for the timeline of the batch
    ended: float = 0.0
    run_id: str | None = None


OnDone = Callable[[Job, Measurement], Awaitable[None]]


class EngineBase:
    """What every engine is given: the ledger (for its workspace), the batch and the keep metric."""

    name = ""

    def __init__(self, ledger, batch: str, keep_metric: str) -> None:
        self.ledger = ledger
        self.ws = ledger.ws
        self.batch = batch
        self.keep_metric = keep_metric


async def measure_candidate(ws, run, label: str, workdir: Path, lease, keep_metric: str, slot: str) -> tuple[BenchRun, dict[str, Any]]:
    """One candidate's benchmark on the lease's GPU, then its profile when that is the keep metric
    (only a correct, plausible run is worth profiling). Both engines measure through this."""
    from kernel_mcp.bench import run_benchmark
    from kernel_mcp.ledger import keep_profile

    bench = await run_benchmark(ws, run, label, cwd=workdir, lease=lease, extra_env={SLOT_ENV: slot})
    measured = bench.all_correct and not bench.impossible and not bench.failure
    prof = await keep_profile(ws, keep_metric, run, workdir, None, lease) if measured else {"keep_metric": keep_metric}
    return bench, prof


class Engine(Protocol):
    name: str

    async def measure(self, jobs: list[Job], on_done: OnDone, progress: ProgressFn | None) -> int:
        """Measure every job, calling on_done as each finishes; returns the slots used."""
        ...


def engine_for(ledger, batch: str, keep_metric: str) -> Engine:
    cfg = ledger.ws.config.engine
    if cfg.kind == "ray":
        from kernel_mcp.ledger.engines.on_ray import RayEngine

        return RayEngine(ledger, batch, keep_metric)
    from kernel_mcp.ledger.engines.local import LocalEngine

    return LocalEngine(ledger, batch, keep_metric)
