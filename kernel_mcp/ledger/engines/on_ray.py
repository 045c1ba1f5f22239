"""The Ray engine: each candidate is a Ray task that asks for one GPU, on any node of the cluster.

The candidates travel as one git bundle (their pinned refs), put once in Ray's object store. A task
fetches its candidate into a fresh clone on its node, runs the workspace's fixed benchmark (and the
profiler, when that is the keep metric) on the GPU Ray assigned to it, and returns the figures and
its raw files; the ledger on this node judges and records them. A task that raises, whose worker
or node dies, or that brings nothing back within the candidate timeout is recorded as failed with
that reason, and the others go on. Ray retries nothing: a retried benchmark would hide a crash.

Every node needs kernel-mcp installed (`pip install 'kernel-mcp[ray]'`) and the workspace's
toolchain; nothing else of this node is shared.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from kernel_mcp.errors import InvalidInput
from kernel_mcp.ledger import gitops
from kernel_mcp.ledger.engines import EngineBase, Job, Measurement, OnDone, measure_candidate
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace.workspace import PinnedWorkspace

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

RETURNED_FILE_LIMIT = 2 << 20  # raw files larger than this stay on the worker's node (and are named)
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")


def _ray():
    try:
        import ray
    except ImportError:
        raise InvalidInput("[engine] kind = 'ray' needs the ray package", hint="pip install 'kernel-mcp[ray]'") from None
    return ray


# ray.init, where it starts the private instance ("local"), starts that instance's processes with
# PR_SET_PDEATHSIG, which the kernel ties to the calling thread: they are killed when that thread ends.
# anyio's worker threads end when idle, so ray.init runs on a thread of its own that lives as long as
# the server.
_ray_thread = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernel-mcp-ray")


def connect(address: str) -> None:
    """Join the cluster at `address` (or start the private instance) from any thread."""
    _ray_thread.submit(_connect, address).result()


def _connect(address: str) -> None:
    ray = _ray()
    if ray.is_initialized():
        return
    # "local" starts a private single-node instance; anything else joins an existing cluster.
    ray.init(address=None if address == "local" else address, namespace="kernel-mcp", log_to_driver=False, include_dashboard=False)


def _reason(exc: BaseException) -> str:
    kind = type(exc).__name__
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    if "WorkerCrashed" in kind or "ActorDied" in kind:
        return f"the Ray worker running it died ({kind}): {first}"
    if "NodeDied" in kind or "ObjectLost" in kind or "OwnerDied" in kind:
        return f"its Ray node was lost ({kind}): {first}"
    cause = getattr(exc, "cause", None)
    if cause is not None:
        return f"the task raised {type(cause).__name__}: {str(cause)[:300]}"
    return f"{kind}: {first}"


class RayEngine(EngineBase):
    name = "ray"

    def _timeout(self) -> float:
        cfg = self.ws.config
        if cfg.engine.candidate_timeout_s:
            return cfg.engine.candidate_timeout_s
        bench, h = cfg.benchmark, cfg.harness
        # both builds, then every run of every pair (benchmark, and profiler when it keeps) may run to its timeout, plus the clone
        runs = 2 + 2 * h.max_pairs * (2 if self.keep_metric == "profiler" else 1)
        return bench.timeout_s * runs + 120.0 if bench else 3600.0

    async def measure(self, jobs: list[Job], on_done: OnDone, progress: ProgressFn | None) -> int:
        ray = _ray()
        cfg = self.ws.config.engine
        await asyncio.wrap_future(_ray_thread.submit(_connect, cfg.address))
        repo, _ = gitops.repo_of(self.ws.root)
        # BEST travels with the candidates: every task measures its candidate side by side with it.
        best_ref, best_commit = f"refs/kernel-mcp/{self.exp.tag}/{self.batch}/best", self.exp.best_commit
        gitops.pin(repo, best_ref, best_commit)
        with tempfile.TemporaryDirectory(prefix="kernel-mcp-bundle-") as tmp:
            data = gitops.bundle(repo, sorted({job.ref for job in jobs} | {best_ref}), Path(tmp) / "candidates.bundle")
        bundle_ref = ray.put(data)
        task = ray.remote(num_gpus=cfg.gpus_per_candidate, max_retries=0)(measure_in_clone)
        limiter = anyio.Semaphore(cfg.slots or len(jobs))
        timeout = self._timeout()

        async def one(job: Job) -> None:
            async with limiter:
                started = time.time()
                # the registry travels pickled (a module-level object: its class is found on the worker by name) and resolves there
                ref = task.remote(
                    bundle_ref,
                    job.ref,
                    job.commit,
                    best_ref,
                    best_commit,
                    job.subdir,
                    job.hypothesis,
                    self.keep_metric,
                    self.batch,
                    job.index,
                    self.target,
                    self.vendors,
                    Frozen(config=self.exp.config, protected=dict(self.exp.protected), outputs=sorted(self.exp.run_outputs or [])),
                )
                try:
                    with anyio.fail_after(timeout):
                        result = await asyncio.wrap_future(ref.future())
                    measurement = self._receive(job, result)
                except TimeoutError:
                    ray.cancel(ref, force=True)
                    measurement = Measurement(
                        index=job.index, error=f"no result within {timeout:.0f} s (hung, or its node was lost)", where="ray", started=started, ended=time.time()
                    )
                except ray.exceptions.RayError as exc:
                    measurement = Measurement(index=job.index, error=_reason(exc), where="ray", started=started, ended=time.time())
            await on_done(job, measurement)

        async with anyio.create_task_group() as group:
            for job in jobs:
                group.start_soon(one, job)
        return cfg.slots or len(jobs)

    def _receive(self, job: Job, result: dict[str, Any]) -> Measurement:
        """Keep the task's raw files in a run on this node, then its figures as a Measurement."""
        run = self.ws.runs.create("candidate", {"batch": self.batch, "index": job.index, "commit": job.commit, "where": result.get("where")})
        for name, content in (result.pop("files", None) or {}).items():
            if SAFE_NAME.match(name):
                # the worker's own meta.json names its process on its node: kept beside this run's
                run.path("worker-meta.json" if name == "meta.json" else name).write_bytes(content)
        run.finish("ok")
        return Measurement.model_validate({**result, "run_id": run.id})


def _ray_gpu_env() -> tuple[dict[str, str], str]:
    """The GPU Ray gave this task, pinned for the benchmark as the local gate would pin it."""
    import ray

    ids = [str(int(i)) if float(i).is_integer() else str(i) for i in ray.get_gpu_ids()]
    node = ray.get_runtime_context().get_node_id()[:8]
    if not ids:
        return {}, f"Ray node {node}, no GPU assigned"
    visible = ",".join(ids)
    env = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", visible)}
    if shutil.which("amd-smi") or shutil.which("rocm-smi"):
        env.update(HIP_VISIBLE_DEVICES=visible, ROCR_VISIBLE_DEVICES=visible)
    return env, f"Ray node {node}, GPU {visible}"


@dataclass(frozen=True)
class _OnWorker(PinnedWorkspace):
    """The candidate's folder on a worker node, with the experiment's frozen config and its state
    folder outside both trees."""

    state: Path | None = None

    @property
    def state_dir(self) -> Path:
        assert self.state is not None
        return self.state


@dataclass(frozen=True)
class Frozen:
    """What the experiment froze at its start, sent with every task: the config's text (None: an
    experiment older than that, which reads the commit's), the protected files' hashes, and the
    runs' known outputs (never counted as edits)."""

    config: str | None
    protected: dict[str, str]
    outputs: list[str]


def measure_in_clone(
    bundle: bytes,
    ref: str,
    commit: str,
    best_ref: str,
    best_commit: str,
    subdir: str,
    label: str,
    keep_metric: str,
    batch: str,
    index: int,
    target: str | None,
    vendors: Vendors,
    frozen: Frozen,
) -> dict[str, Any]:
    """The Ray task (runs on a worker node): the candidate and BEST as two worktrees of one fresh
    repository, measured side by side under the same checks as on the server's own node (guard.py:
    each side's tree between runs, the candidate's protected files against the frozen hashes) and
    the experiment's frozen config; returns the figures. `vendors` (the server's registry) resolves
    the platform on the worker's machine."""
    from kernel_mcp.gpu.gate import Lease
    from kernel_mcp.ledger import harness
    from kernel_mcp.ledger.guard import TreeGuard
    from kernel_mcp.workspace import Workspace
    from kernel_mcp.workspace.config import CONFIG_NAME, parse_config
    from kernel_mcp.workspace.workspace import state_folder

    if (
        not gitops.SHA.match(commit)
        or not gitops.SHA.match(best_commit)
        or not ref.startswith("refs/kernel-mcp/")
        or not best_ref.startswith("refs/kernel-mcp/")
    ):
        raise ValueError("not a candidate of kernel-mcp")
    started = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="kernel-mcp-candidate-"))
    try:
        (tmp / "candidates.bundle").write_bytes(bundle)
        git_dir, cand_tree, best_tree = tmp / "repo.git", tmp / "candidate", tmp / "best"
        for argv in (
            ["git", "init", "--quiet", "--bare", str(git_dir)],
            ["git", "-C", str(git_dir), "fetch", "--quiet", str(tmp / "candidates.bundle"), f"{ref}:{ref}", f"{best_ref}:{best_ref}"],
            ["git", "-C", str(git_dir), "worktree", "add", "--quiet", "--detach", "--", str(cand_tree), commit],
            ["git", "-C", str(git_dir), "worktree", "add", "--quiet", "--detach", "--", str(best_tree), best_commit],
        ):
            subprocess.run(argv, check=True, capture_output=True, timeout=600)
        workdir = cand_tree / subdir if subdir != "." else cand_tree
        best_dir = best_tree / subdir if subdir != "." else best_tree
        pinned = parse_config(frozen.config, f"{CONFIG_NAME} as the experiment started") if frozen.config else Workspace(workdir).config
        # the run folders and private folders lie beside the two trees, not in the candidate's (whose every file the guard watches)
        ws = _OnWorker(workdir, pinned=pinned, state=state_folder(tmp))
        outputs = set(frozen.outputs)

        def protected_now() -> dict[str, str]:
            return harness.protected_hashes(gitops.open_worktree(git_dir.resolve(), cand_tree), subdir, workdir, ws.config.harness, skip=outputs)

        guard = TreeGuard(
            {"best": best_dir, "candidate": workdir}, {"best": best_tree, "candidate": cand_tree}, git_dir.resolve(), frozen.protected, protected_now
        )
        run = ws.runs.create("candidate", {"batch": batch, "index": index})
        env, where = _ray_gpu_env()
        lease = Lease(gpu=None, env=env, note=where)
        slot = env.get("CUDA_VISIBLE_DEVICES", str(index))
        together = asyncio.run(measure_candidate(ws, run, label, workdir, best_dir, lease, keep_metric, slot, target, guard, vendors=vendors))
        files: dict[str, bytes] = {}
        for path in sorted(run.folder.rglob("*")):
            if path.is_file() and path.stat().st_size <= RETURNED_FILE_LIMIT and sum(map(len, files.values())) < 8 * RETURNED_FILE_LIMIT:
                files[path.relative_to(run.folder).as_posix().replace("/", "-")] = path.read_bytes()
        return {"index": index, "together": together.model_dump(mode="json"), "where": where, "started": started, "ended": time.time(), "files": files}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
