"""Engines that measure experiment_evaluate_many's candidates: one interface, two places.

`local` is a pool over this node's idle GPUs (each worker holds one GPU's gate lease for the whole
batch, so two candidates never share a GPU); `ray` sends each candidate to a Ray task that asks
for one GPU. Both only measure: each returns one Measurement per candidate, and the ledger on this
node judges and records it, so the keep/discard rule and the ledger are the same whichever ran it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel

from kernel_mcp.ledger.paired import Together
from kernel_mcp.ledger.state import Experiment
from kernel_mcp.runner import ProgressFn

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

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
    code: str | None = None  # its code fingerprint (same_code.py), None where none was taken

    @property
    def workdir(self) -> Path:
        assert self.worktree is not None
        return self.worktree / self.subdir if self.subdir != "." else self.worktree


class Measurement(BaseModel):
    """What an engine brings back for one candidate; `error` when it could not be measured."""

    index: int
    together: Together | None = None  # BEST and the candidate, measured side by side
    error: str | None = None
    where: str = ""
    started: float = 0.0  # epoch seconds, for the timeline of the batch
    ended: float = 0.0
    run_id: str | None = None


OnDone = Callable[[Job, Measurement], Awaitable[None]]


class EngineBase:
    """What every engine is given: the ledger (for its workspace), the experiment, the batch, the
    keep metric, the target class and the platforms' registry (what gates, pins and profiles)."""

    name = ""

    def __init__(self, ledger, exp: Experiment, batch: str, keep_metric: str, target: str | None, vendors: Vendors) -> None:
        self.ledger = ledger
        self.ws = ledger.ws
        self.exp = exp
        self.batch = batch
        self.keep_metric = keep_metric
        self.target = target
        self.vendors = vendors


async def measure_candidate(
    ws, run, label: str, workdir: Path, best_dir: Path, lease, keep_metric: str, slot: str, target: str | None, guard=None, *, vendors: Vendors
) -> Together:
    """One candidate measured side by side with BEST (in `best_dir`) on the lease's GPU, in pairs;
    both engines measure through this, so a batch judges exactly as experiment_evaluate does."""
    from kernel_mcp.ledger.paired import measure_together

    return await measure_together(
        ws, run, best_dir, workdir, keep_metric, target, None, lease, label=label[:60], slot_env={SLOT_ENV: slot}, guard=guard, vendors=vendors
    )


class Engine(Protocol):
    name: str

    async def measure(self, jobs: list[Job], on_done: OnDone, progress: ProgressFn | None) -> int:
        """Measure every job, calling on_done as each finishes; returns the slots used."""
        ...
