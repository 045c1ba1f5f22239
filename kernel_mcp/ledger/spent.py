"""Where an evaluation's time goes: seconds by kind of work (builds, benchmark runs, profiled runs,
GPU samples, tree checks, git), the server's own share being what is left of the whole.

A tally is opened around one evaluation (`tally()`), and every timed step inside it, however deep
(`timing(kind)`), adds its seconds to it; a step timed inside another counts once, under the inner
kind. A context variable carries the tally, so the candidates of a batch, each measured in its own
task under a tally of its own, never mix; outside any tally, timing costs nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pydantic import BaseModel

_current: ContextVar[Tally | None] = ContextVar("kernel_mcp_spent", default=None)


class Spent(BaseModel):
    """Seconds by kind of work, the whole, and the counts of runs behind them."""

    seconds: dict[str, float] = {}
    total_s: float = 0.0
    counts: dict[str, int] = {}

    def server_s(self) -> float:
        return max(0.0, self.total_s - sum(self.seconds.values()))

    def statement(self) -> str:
        parts = [
            f"{kind} {s:.1f} s" + (f" ({self.counts[kind]})" if self.counts.get(kind) else "")
            for kind, s in sorted(self.seconds.items(), key=lambda item: -item[1])
            if s >= 0.05
        ]
        return "time: " + ", ".join([*parts, f"server {self.server_s():.1f} s"]) + f" of {self.total_s:.1f} s"


class Tally:
    def __init__(self) -> None:
        self.spent = Spent()
        self._inner: list[float] = [0.0]  # seconds already counted by steps inside the open ones
        self._started = time.monotonic()

    def add(self, kind: str, seconds: float, count: bool = False) -> None:
        self.spent.seconds[kind] = self.spent.seconds.get(kind, 0.0) + seconds
        if count:
            self.spent.counts[kind] = self.spent.counts.get(kind, 0) + 1


@contextmanager
def tally() -> Iterator[Spent]:
    """Open a tally for the steps below; its Spent is complete when the block ends."""
    opened = Tally()
    token = _current.set(opened)
    try:
        yield opened.spent
    finally:
        opened.spent.total_s = time.monotonic() - opened._started
        _current.reset(token)


@contextmanager
def timing(kind: str, count: bool = False) -> Iterator[None]:
    """Count the block's seconds under `kind` (less what steps inside it counted under theirs)."""
    current = _current.get()
    if current is None:
        yield
        return
    current._inner.append(0.0)
    started = time.monotonic()
    try:
        yield
    finally:
        elapsed = time.monotonic() - started
        inner = current._inner.pop()
        current.add(kind, elapsed - inner, count)
        current._inner[-1] += elapsed


def add(kind: str, seconds: float) -> None:
    """Count seconds measured elsewhere (a step inside an open one is not subtracted from it)."""
    current = _current.get()
    if current is not None:
        current.add(kind, seconds)


def so_far(inner: Spent | None = None) -> Spent | None:
    """The open tally's figures until now, with those of a tally closed inside it (`inner`) added:
    what an answer written before the tally closes can say."""
    current = _current.get()
    if current is None:
        return inner
    merged = Spent(seconds=dict(current.spent.seconds), counts=dict(current.spent.counts), total_s=time.monotonic() - current._started)
    for kind, seconds in (inner.seconds if inner else {}).items():
        merged.seconds[kind] = merged.seconds.get(kind, 0.0) + seconds
    for kind, n in (inner.counts if inner else {}).items():
        merged.counts[kind] = merged.counts.get(kind, 0) + n
    return merged
