"""The GPU gate: before any GPU run, find the most idle GPU, lock it, and pin the run to it.

A GPU is idle when its utilization and memory in use are under the configured limits and no
compute process is on it (where the monitor can tell). When none is idle the gate waits and
re-checks on an interval up to a limit, reporting progress, then answers "no idle GPU". The lock
is an exclusive flock on a per-GPU file shared by every kernel-mcp process on the machine, so
two clients never benchmark on one GPU at once; the kernel releases it if its holder dies.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from kernel_mcp import runner, toolchain
from kernel_mcp.errors import CommandFailed, KernelMcpError
from kernel_mcp.models.gpu import GpuInfo
from kernel_mcp.untrusted import inline
from kernel_mcp.runner import ProgressFn
from kernel_mcp.tooling import ToolOutput
from kernel_mcp.workspace.config import GateConfig

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

LOCK_DIR_ENV = "KERNEL_MCP_LOCK_DIR"


class NoIdleGpu(KernelMcpError):
    kind = "no idle GPU"


class GpuState(BaseModel):
    gpu: GpuInfo
    idle: bool
    locked: bool
    reason: str


class GpuStatus(ToolOutput):
    monitor: str | None
    gpus: list[GpuState]
    chosen: int | None = None
    note: str | None = None

    def render(self) -> str:
        if self.monitor is None:
            return self.note or "no GPU monitor found"
        lines = [f"GPUs by {self.monitor}:"]
        for s in self.gpus:
            g = s.gpu
            util = f"{g.utilization_pct:.0f}%" if g.utilization_pct is not None else "?"
            mem = f"{g.memory_used_mib:.0f}/{g.memory_total_mib:.0f} MiB" if g.memory_used_mib is not None and g.memory_total_mib else "?"
            procs = "?" if g.processes is None else str(len(g.processes))
            mark = " <- most idle" if self.chosen == g.index else ""
            product = f"product {g.product}" if g.product else "product unknown (no table: no product figures)"
            lines.append(f"  [{g.index}] {inline(g.name)} ({product}): util {util}, mem {mem}, procs {procs}: {s.reason}{mark}")
        return "\n".join(lines)


def lock_dir() -> Path:
    folder = Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "kernel-mcp-gpu-locks")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def lock_name(gpu: GpuInfo) -> str:
    ident = gpu.uuid or gpu.bus_id or f"{gpu.vendor}{gpu.index}"
    return "gpu-" + "".join(ch if ch.isalnum() else "_" for ch in ident) + ".lock"


def _is_locked(gpu: GpuInfo) -> bool:
    path = lock_dir() / lock_name(gpu)
    if not path.exists():
        return False
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def judge(gpu: GpuInfo, cfg: GateConfig) -> tuple[bool, str]:
    if gpu.processes:
        return False, f"{len(gpu.processes)} compute process(es)"
    if gpu.utilization_pct is not None and gpu.utilization_pct > cfg.max_utilization_pct:
        return False, f"utilization {gpu.utilization_pct:.0f}% > {cfg.max_utilization_pct:.0f}%"
    if gpu.memory_used_mib is not None and gpu.memory_total_mib:
        share = 100 * gpu.memory_used_mib / gpu.memory_total_mib
        if share > cfg.max_memory_used_pct:
            return False, f"memory in use {share:.0f}% > {cfg.max_memory_used_pct:.0f}%"
    if gpu.utilization_pct is None and gpu.memory_used_mib is None:
        return False, "the monitor reports neither utilization nor memory"
    return True, "idle"


def _rank(gpu: GpuInfo) -> tuple:
    memory = (gpu.memory_used_mib or 0) / (gpu.memory_total_mib or 1)
    return (len(gpu.processes or []), gpu.utilization_pct or 0.0, memory, gpu.index)


async def gpu_status(cfg: GateConfig, cwd: str, *, vendors: Vendors) -> GpuStatus:
    """What the first installed monitor of `vendors.usage_monitors()` says of every GPU."""
    for query in vendors.usage_monitors():
        path = toolchain.find(query.tool)
        if path is None:
            continue
        result = await runner.run([path, *query.args], cwd=cwd, timeout_s=60, tail_bytes=8 * 2**20)
        if not result.ok:
            raise CommandFailed(f"{query.tool} {' '.join(query.args)} gave {result.status()}", hint=result.stderr.tail[-300:] or None)
        states = []
        for gpu in query.read(result.stdout.tail):
            idle, reason = judge(gpu, cfg)
            locked = _is_locked(gpu)
            states.append(GpuState(gpu=gpu, idle=idle and not locked, locked=locked, reason="locked by another kernel-mcp run" if locked else reason))
        ready = sorted((s.gpu for s in states if s.idle), key=_rank)
        return GpuStatus(monitor=query.tool, gpus=states, chosen=ready[0].index if ready else None)
    return GpuStatus(monitor=None, gpus=[], note="no GPU monitor (nvidia-smi, amd-smi, rocm-smi) on this machine")


@dataclass
class Lease:
    gpu: GpuInfo | None
    env: dict[str, str] = field(default_factory=dict)
    waited_s: float = 0.0
    note: str | None = None

    def describe(self) -> str:
        if self.gpu is None:
            return self.note or "no GPU"
        product = self.gpu.product
        named = f"{self.gpu.name}, product {product}" if product else f"{self.gpu.name}, a product no table describes"
        return f"GPU {self.gpu.index} ({named})" + (f" after waiting {self.waited_s:.0f} s" if self.waited_s >= 1 else "")


def pin_env(gpu: GpuInfo, vendors: Vendors) -> dict[str, str]:
    """The environment that makes a run see this GPU only (its vendor's visibility variables)."""
    return vendors.for_gpu(gpu).pin_env(gpu)


def _try_lock(gpu: GpuInfo):
    handle = (lock_dir() / lock_name(gpu)).open("a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    handle.truncate(0)
    handle.write(f"{os.getpid()} {time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
    handle.flush()
    return handle


@contextmanager
def hold(gpu: GpuInfo) -> Iterator[bool]:
    """This one GPU's lock, taken now if no other run holds it: True inside while it is held, False
    when another holds it (nothing is waited for). For work on a named GPU: doctor's calibration
    of each idle GPU, which must not run beside a benchmark on it."""
    handle = _try_lock(gpu)
    try:
        yield handle is not None
    finally:
        if handle is not None:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()


@asynccontextmanager
async def use(cfg: GateConfig, cwd: str, progress: ProgressFn | None = None, require_gpu: bool = False, lease: Lease | None = None, *, vendors: Vendors):
    """The caller's lease when it already holds one (a pool of candidates), else a fresh acquire."""
    if lease is not None:
        yield lease
        return
    async with acquire(cfg, cwd, progress, require_gpu, vendors=vendors) as fresh:
        yield fresh


@asynccontextmanager
async def acquire(cfg: GateConfig, cwd: str, progress: ProgressFn | None = None, require_gpu: bool = False, wait: bool = True, *, vendors: Vendors):
    """Hold the most idle GPU for the duration of the block (see the module docstring); `vendors`
    names each vendor's monitors and pinning.

    `wait=False` raises NoIdleGpu at once instead of waiting (a pool taking its extra GPUs)."""
    started = time.monotonic()
    while True:
        status = await gpu_status(cfg, cwd, vendors=vendors)
        if status.monitor is None:
            if require_gpu:
                raise NoIdleGpu("no GPU monitor found, so no GPU can be gated", hint="install nvidia-smi or amd-smi/rocm-smi")
            yield Lease(gpu=None, note="no GPU monitor on this machine: ran without the GPU gate")
            return
        for state in sorted((s for s in status.gpus if s.idle), key=lambda s: _rank(s.gpu)):
            handle = _try_lock(state.gpu)
            if handle is None:
                continue
            try:
                yield Lease(gpu=state.gpu, env=pin_env(state.gpu, vendors), waited_s=time.monotonic() - started)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        waited = time.monotonic() - started
        if not wait or waited + cfg.interval_s > cfg.limit_s:
            busy = "; ".join(f"[{s.gpu.index}] {s.reason}" for s in status.gpus) or "no GPU listed"
            raise NoIdleGpu(f"no idle GPU after {waited:.0f} s (limit {cfg.limit_s:.0f} s): {busy}", hint="this is a stop condition for an optimization run")
        if progress is not None:
            await progress(waited, cfg.limit_s, f"no idle GPU; re-checking in {cfg.interval_s:.0f} s")
        await asyncio.sleep(cfg.interval_s)
