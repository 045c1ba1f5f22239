"""The local engine: a pool of workers over this node's idle GPUs.

Each worker takes one GPU through the gate (the cross-process lock included) and keeps it for the
whole batch, running candidates one after another from a shared queue. Holding the lease between
candidates means a GPU is never handed to two candidates, and a GPU that our own last candidate
just left is not mistaken for a busy one. Without a GPU monitor (CPU-only benchmarks, CI) the
slots are simulated: `[engine] slots` workers, each told its slot number.
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack

import anyio

from kernel_mcp.errors import KernelMcpError
from kernel_mcp.gpu import gate
from kernel_mcp.gpu.gate import Lease, NoIdleGpu
from kernel_mcp.ledger.engines import EngineBase, Job, Measurement, OnDone, measure_candidate
from kernel_mcp.runner import ProgressFn


class LocalEngine(EngineBase):
    name = "local"

    async def _leases(self, stack: AsyncExitStack, wanted: int | None, most: int, progress: ProgressFn | None) -> list[Lease]:
        cfg = self.ws.config
        require_gpu = self.vendors.needs_gpu(self.ws)
        # The first GPU waits like any run (and stops the batch when none comes free in time).
        first = await stack.enter_async_context(gate.acquire(cfg.gate, str(self.ws.root), progress, require_gpu=require_gpu, vendors=self.vendors))
        leases = [first]
        limit = min(wanted or most, most)
        while len(leases) < limit:
            if first.gpu is None:  # no monitor: simulated slots
                if wanted is None:
                    break
                leases.append(Lease(gpu=None, note=f"simulated slot {len(leases)} (no GPU monitor)"))
                continue
            try:
                leases.append(
                    await stack.enter_async_context(gate.acquire(cfg.gate, str(self.ws.root), None, require_gpu=require_gpu, wait=False, vendors=self.vendors))
                )
            except NoIdleGpu:
                break  # the other GPUs are busy or locked: fewer slots, never a shared GPU
        return leases

    async def _one(self, job: Job, slot: int, lease: Lease) -> Measurement:
        started = time.time()
        run = self.ws.runs.create("candidate", {"batch": self.batch, "index": job.index, "commit": job.commit})
        where = f"slot {slot}: {lease.describe()}"
        try:
            best_dir = self.ledger.best_tree(self.exp, slot)
            guard = self.ledger.guard(self.exp, best_dir, job.worktree, job.workdir, slot)
            together = await measure_candidate(
                self.ws, run, job.hypothesis, job.workdir, best_dir, lease, self.keep_metric, str(slot), self.target, guard, vendors=self.vendors
            )
            run.finish("ok")
            return Measurement(index=job.index, together=together, where=where, started=started, ended=time.time(), run_id=run.id)
        except KernelMcpError as exc:
            run.fail(exc)
            return Measurement(index=job.index, error=exc.message, where=where, started=started, ended=time.time(), run_id=run.id)
        except Exception as exc:  # contained: one candidate's failure never stops the others
            run.fail(exc)
            return Measurement(index=job.index, error=f"{type(exc).__name__}: {exc}"[:500], where=where, started=started, ended=time.time(), run_id=run.id)
        except BaseException as exc:  # cancelled: the run says so instead of staying "running"
            run.fail(exc)
            raise

    async def measure(self, jobs: list[Job], on_done: OnDone, progress: ProgressFn | None) -> int:
        queue = list(jobs)
        async with AsyncExitStack() as stack:
            leases = await self._leases(stack, self.ws.config.engine.slots, len(jobs), progress)

            async def worker(slot: int, lease: Lease) -> None:
                while queue:
                    job = queue.pop(0)
                    await on_done(job, await self._one(job, slot, lease))

            async with anyio.create_task_group() as group:
                for slot, lease in enumerate(leases):
                    group.start_soon(worker, slot, lease)
            return len(leases)
