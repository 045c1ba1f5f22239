"""The keep/revert experiment ledger: only changes proven correct and faster are kept.

An experiment lives on its own branch in its own worktree (under the workspace's `.kernel-mcp/`),
so the user's working tree is never touched. BEST is the last kept commit with its figures; each
evaluation is an attempt recorded with its parent, hypothesis, per-class figures and decision;
keep commits and moves BEST; revert resets the worktree to BEST.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import git

from kernel_mcp.bench import BenchRun, ClassRun, run_benchmark
from kernel_mcp.errors import InvalidInput, KernelMcpError, WorkspaceError
from kernel_mcp.gpu.gate import NoIdleGpu
from kernel_mcp import toolchain
from kernel_mcp.ledger import gitops, harness, performance
from kernel_mcp.ledger.decide import MAX_REPAIRS, Verdict, decide
from kernel_mcp.ledger.verify import remeasure, verify
from kernel_mcp.ledger.paired import Together, measure_together
from kernel_mcp.ledger.models import AttemptView, ExperimentAnswer, LogAnswer, attempt_view
from kernel_mcp.ledger.store import LedgerStore, now
from kernel_mcp.runner import ProgressFn
from kernel_mcp.workspace import Run, Workspace

STOP_AFTER_REGRESSIONS = 5
LEDGER_DB = "ledger.sqlite"
TEST_CRASH_ENV = "KERNEL_MCP_TEST_CRASH_AT"  # tests only: die at a named step, to prove recovery


def _crash_point(name: str) -> None:
    if os.environ.get(TEST_CRASH_ENV) == name:
        os.kill(os.getpid(), 9)


class Ledger:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.store = LedgerStore(ws.state_dir / LEDGER_DB)

    # ---- helpers ----------------------------------------------------------------------------
    def experiment(self, tag: str | None) -> dict[str, Any]:
        exp = self.store.experiment(tag)
        if exp is None:
            raise InvalidInput("no experiment" + (f" tagged {tag!r}" if tag else " yet"), hint="call experiment_start first")
        self.reconcile(exp)
        return self.store.experiment(exp["tag"])

    def worktree(self, exp: dict[str, Any]) -> git.Repo:
        return git.Repo(exp["worktree"])

    def workdir(self, exp: dict[str, Any]) -> Path:
        return Path(exp["worktree"]) / exp["subdir"] if exp["subdir"] != "." else Path(exp["worktree"])

    def best_tree(self, exp: dict[str, Any], slot: int | None = None) -> Path:
        """BEST checked out in a worktree of its own (one per slot of a batch), kept between
        evaluations so its build stays cached; reset to BEST before every use, so nothing written
        into it can be measured as BEST. Returns the workspace folder inside it."""
        repo, _ = gitops.repo_of(self.ws.root)
        path = self.ws.state_dir / "worktrees" / (f"{exp['tag']}--best" + (f"-s{slot}" if slot else ""))
        if not (path / ".git").exists():
            gitops.prune_worktrees(repo)
            gitops.add_detached_worktree(repo, path, exp["best_commit"])
        tree = git.Repo(path)
        if tree.head.commit.hexsha != exp["best_commit"]:
            tree.git.checkout("--detach", "--force", exp["best_commit"])
        gitops.reset_to(tree, exp["best_commit"])
        return path / exp["subdir"] if exp["subdir"] != "." else path

    def best_figures(self, exp: dict[str, Any]) -> dict[str, ClassRun]:
        attempt = self.store.attempt(exp["best_attempt"])
        return {k: ClassRun.model_validate(v) for k, v in attempt["figures"].items()}

    def reconcile(self, exp: dict[str, Any]) -> None:
        """Finish or forget a step that a killed process left half-done."""
        for intent in self.store.intents(exp["tag"]):
            if intent["action"] == "keep":
                wt = self.worktree(exp)
                mark = f"{gitops.LEDGER_MARK}: {intent['attempt_id']}"
                with self.store.transaction():
                    if mark in gitops.head_message(wt):
                        self._record_keep(exp, intent["attempt_id"], wt.head.commit.hexsha)
                    self.store.clear_intents(exp["tag"])

    def _record_keep(self, exp: dict[str, Any], attempt_id: int, sha: str) -> None:
        self.store.update_attempt(attempt_id, outcome="kept", commit_sha=sha, closed=now())
        self.store.update_experiment(exp["tag"], best_commit=sha, best_attempt=attempt_id, consecutive_regressions=0)

    def _stop(self, exp: dict[str, Any], reason: str) -> None:
        """A stop condition: back to BEST, the stop summary into performance.md, committed."""
        wt = self.worktree(exp)
        gitops.reset_to(wt, exp["best_commit"])
        recent = [a for a in self.store.attempts(exp["tag"], 50) if a["regression"]][:STOP_AFTER_REGRESSIONS]
        performance.append_stop(self.workdir(exp), reason, exp, recent)
        sha = gitops.commit_all(wt, f"Stop experiment {exp['tag']}: {reason}")
        with self.store.transaction():
            self.store.update_experiment(exp["tag"], status="stopped", stop_reason=reason, best_commit=sha)

    def keep_metric(self) -> str:
        """profiler when one can measure GPU kernel time here, else the benchmark's own metric."""
        chosen = self.ws.config.harness.keep_metric
        if chosen != "auto":
            return chosen
        if self.ws.config.target.platform == "offline":
            return "csv"
        from kernel_mcp.profile import vendor_of

        tool = "ncu" if vendor_of(self.ws) == "cuda" else "rocprofv3"
        return "profiler" if toolchain.find(tool) else "csv"

    # ---- steps ------------------------------------------------------------------------------
    async def start(self, run: Run, tag: str, carry: bool, progress: ProgressFn | None) -> ExperimentAnswer:
        gitops.check_tag(tag)
        if self.store.experiment(tag) is not None:
            raise InvalidInput(f"an experiment tagged {tag!r} exists", hint="choose another tag, or continue it with experiment_status")
        repo, subdir = gitops.repo_of(self.ws.root)
        gitops.ignore_state_folder(repo, subdir)
        dirty = gitops.dirty_paths(repo)
        if dirty and not carry:
            raise WorkspaceError(f"the workspace has uncommitted changes: {', '.join(dirty[:8])}", hint="commit or stash them, or pass carry_changes=true to bring them into the experiment")
        branch = f"kernel-opt/{tag}"
        path = self.ws.state_dir / "worktrees" / tag
        wt = gitops.add_worktree(repo, path, branch, repo.head.commit.hexsha)
        carried = gitops.carry_changes(repo, wt) if dirty else []
        exp = {"tag": tag, "branch": branch, "worktree": str(path), "subdir": subdir}
        workdir = self.workdir(exp)
        performance.ensure(workdir)
        base = gitops.commit_all(wt, f"Start experiment {tag}" + (f" (carrying {len(dirty)} uncommitted changes)" if dirty else ""))
        protected = harness.protected_hashes(wt, subdir, workdir, self.ws.config.harness)
        try:
            bench = await run_benchmark(self.ws, run, "baseline", progress=progress, cwd=workdir)
            if not bench.all_correct or bench.impossible:
                raise KernelMcpError("the baseline is not correct (or not plausible), so nothing can be compared with it: " + (bench.failure or "; ".join(bench.impossible[:2]) or "wrong results"), hint=f"see run {run.id}")
        except BaseException:
            gitops.remove_worktree(repo, path, branch)
            raise
        with self.store.transaction():
            self.store.add_experiment(tag=tag, branch=branch, worktree=str(path), subdir=subdir, base_commit=base, best_commit=base, status="running", protected=protected)
            attempt_id = self.store.add_attempt(tag=tag, parent_commit=base, commit_sha=base, hypothesis="baseline", figures=_figures(bench), decision="baseline", outcome="kept",
                                                evidence={"seeds": bench.seeds, "run": run.id, "carried": carried, "protected_digest": harness.hashes_digest(protected),
                                                          "keep_metric": self.keep_metric()}, closed=now())
            self.store.update_experiment(tag, best_attempt=attempt_id)
        performance.append_row(workdir, performance.Row(commit=base[:10], status="baseline", command=" ".join(self.ws.config.benchmark.command), target="all", kernel=self.ws.config.benchmark.target_kernel, metric=_summary(bench), gpu_time="-", change="-", why="unmodified code"))
        sha = gitops.commit_all(wt, f"Baseline of experiment {tag}\n\n{gitops.LEDGER_MARK}: {attempt_id}")
        with self.store.transaction():
            self.store.update_attempt(attempt_id, commit_sha=sha)
            self.store.update_experiment(tag, best_commit=sha)
        return self.status_answer(self.store.experiment(tag), run_id=run.id)

    async def evaluate(self, run: Run, hypothesis: str, target: str | None, tag: str | None, progress: ProgressFn | None) -> ExperimentAnswer:
        exp = self.experiment(tag)
        if exp["status"] != "running":
            raise InvalidInput(f"experiment {exp['tag']} has stopped: {exp['stop_reason']}")
        wt = self.worktree(exp)
        workdir = self.workdir(exp)
        files = gitops.changed_files(wt, exp["best_commit"])
        digest = gitops.diff_hash(wt, exp["best_commit"])
        previous = self.store.latest_attempt(exp["tag"])
        problems = harness.violations(wt, exp["subdir"], workdir, exp["best_commit"], exp["protected"], self.ws.config.harness)
        if problems:
            with self.store.transaction():
                attempt_id = self.store.add_attempt(tag=exp["tag"], parent_commit=exp["best_commit"], diff_hash=digest, files=files, hypothesis=hypothesis,
                                                    target_class=target, decision="refused", reasons=["the harness is frozen: " + p for p in problems], outcome="pending")
            return self.status_answer(exp, attempt=self.store.attempt(attempt_id), run_id=run.id)
        repairs = previous["repair_count"] + 1 if previous and previous["decision"] == "repair-needed" and previous["hypothesis"] == hypothesis else 0
        try:
            together = await measure_together(self.ws, run, self.best_tree(exp), workdir, self.keep_metric(), target, progress, label=hypothesis[:60])
        except NoIdleGpu as exc:
            self._stop(exp, "no idle GPU for the whole waiting limit")
            raise exc
        # Candidates of a batch are siblings, not a line of changes: "twice in a row" skips them.
        in_line = previous and previous["decision"] in ("discard", "keep", "suspicious") and not previous["evidence"].get("batch")
        prev_dir = previous["evidence"].get("direction", 0) if in_line else 0
        verdict = self.judge(exp, together, target, prev_dir, repairs)
        with self.store.transaction():
            attempt_id = self.store.add_attempt(**self.attempt_fields(exp, together, verdict, hypothesis, target, files, digest, repairs, run.id, self.keep_metric()))
            if verdict.regression:
                count = exp["consecutive_regressions"] + 1
            elif verdict.decision in ("repair-needed",):
                count = exp["consecutive_regressions"]
            else:
                count = 0  # a tie, a failure or an improvement breaks the run of regressions
            self.store.update_experiment(exp["tag"], consecutive_regressions=count)
        exp = self.store.experiment(exp["tag"])
        if count >= STOP_AFTER_REGRESSIONS:
            gitops.reset_to(wt, exp["best_commit"])
            self._stop(exp, f"{STOP_AFTER_REGRESSIONS} consecutive measured regressions")
            exp = self.store.experiment(exp["tag"])
        return self.status_answer(exp, attempt=self.store.attempt(attempt_id), run_id=run.id)

    def judge(self, exp: dict[str, Any], together: Together, target: str | None, prev_dir: int, repairs: int) -> Verdict:
        """The keep/discard rule for a candidate measured side by side with BEST."""
        cand = together.candidate
        if cand is None:
            return Verdict(decision="failed", reasons=[together.stopped or "nothing was measured"], comparisons={})
        best_prof, cand_prof = together.best_profile.get("profile"), together.candidate_profile.get("profile")
        launch = harness.launch_problems(best_prof, cand_prof) if best_prof and cand_prof else []
        if launch:
            return Verdict(decision="refused", reasons=["the profiler's dispatch list: " + p for p in launch], comparisons={})
        cfg = self.ws.config
        verdict = decide(cand, together.comparisons, together.script, target, cfg.benchmark.noise_threshold, prev_dir, repairs,
                         together.gpu_time, cfg.harness.suspicious_factor)
        if self.keep_metric() == "profiler" and together.gpu_time is None and verdict.decision in ("keep", "suspicious", "split-suggested"):
            # The profiler is the keep metric but measured nothing usable: never fall back silently.
            return Verdict(decision="failed", reasons=verdict.reasons + ["the profiler is the keep metric but gave no target GPU time: " + together.stopped],
                           comparisons=verdict.comparisons, overall=verdict.overall)
        return verdict

    @staticmethod
    def attempt_fields(exp: dict[str, Any], together: Together, verdict: Verdict, hypothesis: str, target: str | None,
                       files: list[str], digest: str, repairs: int, run_id: str, keep_metric: str, **extra_evidence: Any) -> dict[str, Any]:
        """One attempt row, as evaluate and evaluate_many record it."""
        bench = together.candidate
        return dict(
            tag=exp["tag"], parent_commit=exp["best_commit"], diff_hash=digest, files=files, hypothesis=hypothesis,
            target_class=target, figures=_figures(bench) if bench else {}, comparisons={k: v.model_dump() for k, v in verdict.comparisons.items()},
            decision=verdict.decision, reasons=verdict.reasons, regression=int(verdict.regression),
            repair_count=repairs if verdict.decision == "repair-needed" else 0, outcome="pending",
            evidence={"seeds": bench.seeds if bench else [], "run": run_id, "direction": verdict.direction, "overall": verdict.overall.model_dump() if verdict.overall else None,
                      "gpu_time": together.gpu_time.model_dump() if together.gpu_time else None, "impossible": bench.impossible if bench else [],
                      "keep_metric": keep_metric, "source": together.source, "pairs": together.pairs, "profiler_pairs": together.profiler_pairs,
                      "stopped": together.stopped, "wall_s": round(together.wall_s, 2), "clocks": together.clocks.model_dump() if together.clocks else None,
                      "best_figures": _figures(together.best) if together.best else {},
                      "runs": [r.model_dump() for r in together.runs], "profile": together.candidate_profile.get("profile"),
                      **extra_evidence},
        )

    async def keep(self, run: Run, tag: str | None, why: str | None, progress: ProgressFn | None, attempt_id: int | None = None) -> ExperimentAnswer:
        exp = self.experiment(tag)
        wt = self.worktree(exp)
        workdir = self.workdir(exp)
        attempt = self.store.latest_attempt(exp["tag"]) if attempt_id is None else self.store.attempt(attempt_id)
        if attempt_id is not None and (attempt is None or attempt["tag"] != exp["tag"]):
            raise InvalidInput(f"experiment {exp['tag']} has no attempt #{attempt_id}", hint="experiment_log lists its attempts")
        if attempt is None or attempt["outcome"] != "pending":
            raise InvalidInput("nothing evaluated to keep" if attempt is None else f"attempt #{attempt['id']} is already {attempt['outcome']}",
                               hint="call experiment_evaluate (or experiment_evaluate_many) first")
        if attempt["decision"] not in ("keep", "suspicious"):
            raise InvalidInput(f"attempt #{attempt['id']} was decided {attempt['decision']}, not keep: " + "; ".join(attempt["reasons"][:4]))
        if attempt["evidence"].get("batch"):
            from kernel_mcp.ledger.many import check_out_candidate

            check_out_candidate(self, exp, attempt)
        if gitops.diff_hash(wt, exp["best_commit"]) != attempt["diff_hash"]:
            raise InvalidInput("the worktree changed after it was evaluated", hint="evaluate again before keeping")
        cfg = self.ws.config
        problems = harness.violations(wt, exp["subdir"], workdir, exp["best_commit"], exp["protected"], cfg.harness)
        if problems:
            raise InvalidInput("keep refused, the harness is frozen: " + "; ".join(problems))
        evidence = dict(attempt["evidence"])
        verification = await verify(self.ws, run, workdir, progress)
        evidence["verification"] = verification
        if verification.get("failed"):
            self._close(attempt, evidence, "refused at keep: " + verification["failed"])
            raise InvalidInput("keep refused: the verification set failed: " + verification["failed"], hint=f"see run {run.id}")
        if attempt["decision"] == "suspicious":
            remeasured = await remeasure(self, exp, run, workdir, attempt, progress)
            evidence["remeasured"] = remeasured
            if not remeasured["agrees"]:
                self._close(attempt, evidence, "refused at keep: the independent re-measurement disagrees: " + remeasured["statement"])
                raise InvalidInput("keep refused: the independent re-measurement (fresh processes, A/B interleaved both ways) disagrees: " + remeasured["statement"])
        best = self.store.attempt(exp["best_attempt"])
        overall = evidence.get("overall") or {}
        change = f"{overall.get('change', 0):+.2%}"
        gpu = evidence.get("gpu_time")
        performance.append_row(workdir, performance.Row(
            commit=f"attempt #{attempt['id']}", status="keep", command=" ".join(cfg.benchmark.command), target=attempt["target_class"] or "all",
            kernel=cfg.benchmark.target_kernel, metric=_figures_summary(attempt["figures"]), gpu_time=f"{gpu['change']:+.2%}" if gpu else "-", change=change,
            why=why or attempt["hypothesis"]))
        hashes = exp["protected"]
        message = (f"{attempt['hypothesis']}\n\n{why or ''}\n\nKept by kernel-mcp: {attempt['target_class'] or 'all classes'} "
                   f"{change} against {best['commit_sha'][:10]}.\n" + "\n".join(attempt["reasons"]) +
                   f"\nSeeds: {', '.join(map(str, evidence.get('seeds', [])))}\nVerification: {verification.get('summary', 'none configured')}\n"
                   f"Protected files (sha256, digest {harness.hashes_digest(hashes)[:16]}):\n" +
                   "\n".join(f"  {h[:16]} {rel}" for rel, h in list(sorted(hashes.items()))[:40]) +
                   f"\n\n{gitops.LEDGER_MARK}: {attempt['id']}\n")
        with self.store.transaction():
            self.store.update_attempt(attempt["id"], evidence=evidence)
            self.store.add_intent(exp["tag"], "keep", attempt["id"])
        _crash_point("keep-before-commit")
        sha = gitops.commit_all(wt, message)
        _crash_point("keep-after-commit")
        with self.store.transaction():
            self._record_keep(exp, attempt["id"], sha)
            self.store.clear_intents(exp["tag"])
            if attempt["evidence"].get("batch"):  # its siblings were measured against the old BEST
                self.store.close_pending(exp["tag"], "not kept", batch=attempt["evidence"]["batch"])
        return self.status_answer(self.store.experiment(exp["tag"]), attempt=self.store.attempt(attempt["id"]), run_id=run.id)

    def _close(self, attempt: dict[str, Any], evidence: dict[str, Any], reason: str) -> None:
        with self.store.transaction():
            self.store.update_attempt(attempt["id"], evidence=evidence, reasons=attempt["reasons"] + [reason], decision="refused")

    def revert(self, tag: str | None) -> ExperimentAnswer:
        exp = self.experiment(tag)
        wt = self.worktree(exp)
        files = gitops.changed_files(wt, exp["best_commit"])
        gitops.reset_to(wt, exp["best_commit"])
        attempt = self.store.latest_attempt(exp["tag"])
        with self.store.transaction():
            if attempt is not None and attempt["outcome"] == "pending":
                self.store.update_attempt(attempt["id"], outcome="reverted", closed=now())
        answer = self.status_answer(self.store.experiment(exp["tag"]), attempt=self.store.attempt(attempt["id"]) if attempt else None)
        answer.notes.append(f"reset the worktree to BEST {exp['best_commit'][:10]}; discarded: {', '.join(files) or 'nothing'}")
        return answer

    def status_answer(self, exp: dict[str, Any], attempt: dict[str, Any] | None = None, run_id: str | None = None) -> ExperimentAnswer:
        best = self.store.attempt(exp["best_attempt"]) if exp.get("best_attempt") else None
        recent = [a for a in self.store.attempts(exp["tag"], 50) if a["regression"]][:STOP_AFTER_REGRESSIONS]
        return ExperimentAnswer(
            tag=exp["tag"], status=exp["status"], stop_reason=exp["stop_reason"], branch=exp["branch"], worktree=str(self.workdir(exp)),
            best_commit=exp["best_commit"], best=attempt_view(best) if best else None, consecutive_regressions=exp["consecutive_regressions"],
            recent_regressions=[attempt_view(a) for a in recent], attempt=attempt_view(attempt) if attempt else None,
            max_repairs=MAX_REPAIRS, run_id=run_id, notes=[],
        )

    def log(self, tag: str | None, limit: int, outcome: str | None) -> LogAnswer:
        exp = self.experiment(tag)
        rows = self.store.attempts(exp["tag"], limit, outcome)
        return LogAnswer(tag=exp["tag"], best_commit=exp["best_commit"], attempts=[attempt_view(a) for a in rows])


async def keep_profile(ws: Workspace, keep_metric: str, run: Run, workdir: Path, progress: ProgressFn | None, lease=None, locked: bool = True) -> dict[str, Any]:
    """The profiler's view of one benchmark run (GPU times, launches), when it is the keep metric.
    `locked`: let the profiler hold the clocks steady (ncu's base-clock control) for a keep measurement."""
    if keep_metric != "profiler":
        return {"keep_metric": "csv"}
    from kernel_mcp import profile

    prof_run = ws.runs.create("profile_kernels", {"for": run.id})
    summary = await profile.profile_kernels(ws, prof_run, None, [], None, progress, cwd=workdir, lease=lease, lock_clocks=locked)
    return {"keep_metric": "profiler", "profile": summary.model_dump(mode="json", include={"kernels", "source", "dispatches", "run_id"}),
            "dispatches": summary.target_dispatches, "dispatch_counts": summary.target_calls}


def _figures(bench: BenchRun) -> dict[str, Any]:
    return {c.key: c.model_dump() for c in bench.classes}


def _figures_summary(figures: dict[str, Any]) -> str:
    parts = [f"{k}: {sorted(v['samples'])[len(v['samples']) // 2]:.4g}" for k, v in list(figures.items())[:4]]
    return "; ".join(parts) + (" ..." if len(figures) > 4 else "")


def _summary(bench: BenchRun) -> str:
    return _figures_summary(_figures(bench))


def compare_with_best(ws: Workspace, result: BenchRun, run_id: str):
    """A plain benchmark run, compared per class with the latest experiment's BEST when there is one."""
    from kernel_mcp.bench import BenchAnswer, compare

    answer = BenchAnswer(bench=result, run_id=run_id)
    if not (ws.state_dir / LEDGER_DB).exists():
        return answer
    lg = Ledger(ws)
    exp = lg.store.experiment(None)
    if exp is None or not exp.get("best_attempt"):
        return answer
    best = lg.best_figures(exp)
    answer.against = f"BEST {exp['best_commit'][:10]}"
    answer.comparisons = {c.key: compare(best[c.key].samples, c.samples, seed=i) for i, c in enumerate(result.classes) if c.key in best}
    return answer
