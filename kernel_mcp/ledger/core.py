"""The Ledger: what the experiment steps share (the stored state, the worktrees, the workspace lock,
what the benchmark writes, never an edit, and the answers), with the helpers several steps use.
The steps are functions of a Ledger in their own modules (experiment.py, evaluate.py, many.py,
keep.py); the package's docstring tells the whole.
"""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import git

from kernel_mcp.bench import BenchRun, ClassRun
from kernel_mcp.errors import InvalidInput
from kernel_mcp.ledger import gitops, harness, performance, recover
from kernel_mcp.ledger.decide import MAX_REPAIRS
from kernel_mcp.ledger.models import AttemptView, ExperimentAnswer, LogAnswer, attempt_view
from kernel_mcp.ledger.state import Attempt, Experiment
from kernel_mcp.ledger.store import LedgerStore, now
from kernel_mcp.workspace import Workspace

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

STOP_AFTER_REGRESSIONS = 5
LEDGER_DB = "ledger.sqlite"
BEST_DIR = "best"  # state folder: BEST's worktrees, best/<tag>/<slot>
BATCH_DIR = "batches"  # state folder: a batch's candidate worktrees, batches/<tag>/<batch>/c<n>
TEST_CRASH_ENV = "KERNEL_MCP_TEST_CRASH_AT"  # tests only: die at a named step, to prove recovery
MAX_RUN_OUTPUTS = 20000

__all__ = ["Ledger", "AttemptView", "ExperimentAnswer", "LogAnswer", "STOP_AFTER_REGRESSIONS", "compare_with_best"]


def crash_point(name: str) -> None:
    if os.environ.get(TEST_CRASH_ENV) == name:
        os.kill(os.getpid(), 9)


@dataclass
class Watched:
    """What a run in the experiment's worktree changed: `edited` are kernel sources (a benchmark must
    not write them; an edit during the runs is not what was measured), the rest are its outputs."""

    edited: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    tracked: list[str] = field(default_factory=list)  # files of the commit that the runs rewrote (kernel sources or not)


class Ledger:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.store = LedgerStore(ws.state_dir / LEDGER_DB)
        self.config_notes: list[str] = []  # the checkout's config differs from the experiment's frozen one

    # ---- state ------------------------------------------------------------------------------
    def experiment(self, tag: str | None) -> Experiment:
        exp = self.store.experiment(tag)
        if exp is None:
            raise InvalidInput("no experiment" + (f" tagged {tag!r}" if tag else " yet"), hint="call experiment_start first")
        self.reconcile(exp)
        return self.store.existing_experiment(exp.tag)

    def running(self, tag: str | None) -> Experiment:
        """The running experiment, with this ledger's workspace pinned to the config frozen at its start."""
        exp = self.experiment(tag)
        if exp.status == "starting":
            raise InvalidInput(f"experiment {exp.tag} is still measuring its baseline", hint="wait for experiment_start to answer")
        if exp.status != "running":
            raise InvalidInput(f"experiment {exp.tag} has {exp.status}: {exp.stop_reason}")
        self.pin_config(exp)
        return exp

    def pin_config(self, exp: Experiment) -> None:
        """Use the kernel-mcp.toml the experiment started with (its text is in the ledger), never the
        checkout's: the checkout can be edited, or be ignored by git, while the experiment runs. A
        checkout whose config differs is noted."""
        from kernel_mcp.errors import WorkspaceError
        from kernel_mcp.workspace.config import CONFIG_NAME, parse_config
        from kernel_mcp.workspace.workspace import PinnedWorkspace

        if isinstance(self.ws, PinnedWorkspace):
            return
        frozen, source = exp.config, f"{CONFIG_NAME} as experiment {exp.tag} started"
        if frozen is None:  # recorded before the ledger kept the text: the start commit's file, if it had one
            repo, _ = gitops.repo_of(self.ws.root)
            rel = CONFIG_NAME if exp.subdir == "." else f"{exp.subdir.rstrip('/')}/{CONFIG_NAME}"
            frozen, source = gitops.file_at(repo, exp.base_commit, rel), f"{CONFIG_NAME} at {exp.base_commit[:10]}"
        if frozen is None:
            raise WorkspaceError(
                f"experiment {exp.tag} has no frozen {CONFIG_NAME} (it started before the ledger kept one, and its start "
                "commit has none): its rules would be whatever the checkout says now",
                hint="end it, and start a new experiment (its config is kept in the ledger at the start)",
            )
        try:
            current = self.ws.config_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current != frozen:
            self.config_notes.append(
                f"{CONFIG_NAME} in the checkout differs from the one this experiment started with; "
                "the experiment keeps its own: start a new experiment to use the new one"
            )
        self.ws = PinnedWorkspace(self.ws.root, pinned=parse_config(frozen, source))

    def freeze_config(self) -> str:
        """Read the checkout's kernel-mcp.toml once, for a new experiment: this ledger's workspace is
        pinned to it, and its text is what the experiment keeps (`pin_config`)."""
        from kernel_mcp.workspace.config import CONFIG_NAME, parse_config, read_config_text
        from kernel_mcp.workspace.workspace import PinnedWorkspace

        text = read_config_text(self.ws.config_path)
        self.ws = PinnedWorkspace(self.ws.root, pinned=parse_config(text, CONFIG_NAME))
        return text

    @cached_property
    def git_dir(self) -> Path:
        """The workspace's own repository (its common .git folder), found from the workspace, never
        from a worktree the judged code could write; found once per ledger (one tool call)."""
        repo, _ = gitops.repo_of(self.ws.root)
        return Path(repo.common_dir).resolve()

    def worktree(self, exp: Experiment) -> git.Repo:
        """The experiment's worktree, refused when its `.git` pointer was redirected or removed."""
        return gitops.checked_worktree(Path(exp.worktree), self.git_dir)

    def workdir(self, exp: Experiment) -> Path:
        return Path(exp.worktree) / exp.subdir if exp.subdir != "." else Path(exp.worktree)

    def lock(self):
        """The workspace's ledger lock, shared by every server process on this workspace."""
        return recover.workspace_lock(self.ws.state_dir)

    def judging(self, exp: Experiment, step: str):
        """The workspace's judge lock while `step` runs workspace code (one measurement at a time)."""
        return recover.judging(self.ws.state_dir, f"{step} of experiment {exp.tag}")

    def best_path(self, exp: Experiment, slot: int | None = None) -> Path:
        """Where BEST's worktree of a slot lives: its own folder per tag (a tag cannot hold '/',
        so no tag's name can ever name another tag's tree)."""
        return self.ws.state_dir / BEST_DIR / exp.tag / (f"s{slot}" if slot else "main")

    def best_tree(self, exp: Experiment, slot: int | None = None) -> Path:
        """BEST checked out in a worktree of its own (one per slot of a batch); before every use it
        holds exactly BEST's commit, ignored build outputs included gone (as the candidate's tree
        does: gitops.match_commit), so nothing written into it between evaluations, by a run or by
        anyone with the user's rights, can be measured as BEST; its runs are checked too (guard.py).
        A tree whose `.git` pointer no longer leads to the workspace's repository is made anew.
        Returns the workspace folder inside it."""
        repo, _ = gitops.repo_of(self.ws.root)
        git_dir = self.git_dir
        path = self.best_path(exp, slot)
        if path.exists() and gitops.pointer_problem(path, git_dir):
            recover.remove_folder(repo, path)
        if not (path / ".git").exists():
            gitops.prune_worktrees(repo, path)
            path.parent.mkdir(parents=True, exist_ok=True)
            gitops.add_detached_worktree(repo, path, exp.best_commit)
        tree = gitops.checked_worktree(path, git_dir)
        if gitops.head_sha(tree) != exp.best_commit:
            tree.git.checkout("--detach", "--force", exp.best_commit)
        gitops.reset_to(tree, exp.best_commit)
        gitops.match_commit(tree, exp.best_commit)  # builds are made afresh from the commit, on both sides alike
        return path / exp.subdir if exp.subdir != "." else path

    def guard(self, exp: Experiment, best_dir: Path, cand_tree: Path, cand_dir: Path, slot: int | None = None):
        """The checks around every run of one evaluation (guard.py): BEST's tree of `slot` and the
        candidate's tree, with the candidate's protected files against the hashes frozen at start."""
        from kernel_mcp.ledger.guard import TreeGuard

        outputs, cfg = self.outputs(exp), self.ws.config.harness

        def protected_now() -> dict[str, str]:
            return harness.protected_hashes(gitops.open_worktree(self.git_dir, cand_tree), exp.subdir, cand_dir, cfg, skip=outputs)

        return TreeGuard(
            {"best": best_dir, "candidate": cand_dir}, {"best": self.best_path(exp, slot), "candidate": cand_tree}, self.git_dir, exp.protected, protected_now
        )

    def best_figures(self, exp: Experiment) -> dict[str, ClassRun]:
        attempt = self.store.existing_attempt(exp.best_attempt)
        return {k: ClassRun.model_validate(v) for k, v in attempt.figures.items()}

    def reconcile(self, exp: Experiment) -> None:
        """Finish or forget a step that a killed process left half-done (a keep between its intent
        and its record), and remove a killed batch's candidate worktrees. Only while no other
        process holds the workspace lock: an intent under a held lock is a keep still running."""
        intents = self.store.intents(exp.tag)
        repo, _ = gitops.repo_of(self.ws.root)
        with recover.lock_if_free(self.ws.state_dir) as free:
            if not free:
                return
            if intents and exp.status != "starting":
                wt = self.worktree(exp)
                recover.clear_stale_index_lock(wt)
                with self.store.transaction():
                    for intent in intents:
                        if (
                            intent.action == "keep"
                            and intent.attempt_id is not None
                            and intent.commit_sha
                            and gitops.branch_head(wt, exp.branch) == intent.commit_sha
                        ):
                            self.record_keep(exp, intent.attempt_id, intent.commit_sha)
                    self.store.clear_intents(exp.tag)
                gitops.sync_index(wt)
            for folder in recover.orphan_folders(self.ws.state_dir / BATCH_DIR / exp.tag):
                recover.remove_folder(repo, folder, recovery=f"refs/kernel-mcp/{exp.tag}/recovered")

    def record_keep(self, exp: Experiment, attempt_id: int, sha: str) -> None:
        self.store.update_attempt(attempt_id, outcome="kept", commit_sha=sha, closed=now())
        self.store.update_experiment(exp.tag, best_commit=sha, best_attempt=attempt_id, consecutive_regressions=0)

    def keep_metric(self, vendors: Vendors) -> str:
        """profiler when one can measure GPU kernel time here (`vendors`' platform for the workspace),
        else the benchmark's own metric."""
        chosen = self.ws.config.harness.keep_metric
        if chosen != "auto":
            return chosen
        return "profiler" if vendors.of(self.ws).platform.can_profile() else "csv"

    # ---- what the benchmark writes is never an edit ------------------------------------------
    def outputs(self, exp: Experiment) -> set[str]:
        return set(exp.run_outputs or [])

    @asynccontextmanager
    async def watching(self, exp: Experiment):
        """Record what the runs inside the block write in the experiment's worktree: kernel sources
        are reported as edited, everything else becomes a run output (left out of every candidate)."""
        wt = self.worktree(exp)
        before = gitops.dirty_state(wt)
        seen = Watched()
        try:
            yield seen
        finally:
            prefix = "" if exp.subdir == "." else exp.subdir.rstrip("/") + "/"
            # performance.md is the ledger's own record: another server's keep may write it meanwhile
            written = gitops.written_between(before, gitops.dirty_state(wt)) - {prefix + performance.FILE_NAME}
            cfg = self.ws.config.harness
            seen.edited = sorted(p for p in written if p.startswith(prefix) and not harness.is_protected(p[len(prefix) :], cfg))
            seen.outputs = sorted(set(written) - set(seen.edited))
            seen.tracked = sorted(gitops.tracked_in(wt, "HEAD", set(written)))
            known = self.outputs(self.store.experiment(exp.tag) or exp)
            if set(seen.outputs) - known:
                with self.store.transaction():
                    self.store.update_experiment(exp.tag, run_outputs=sorted(known | set(seen.outputs))[:MAX_RUN_OUTPUTS])

    def candidate(self, exp: Experiment, message: str) -> str:
        """The worktree as it is now, as a commit on BEST (the runs' outputs left out; a tracked file
        that a run rewrote gets BEST's content back first). Refused while the worktree holds a git
        repository of its own (or the commit would hold a submodule entry BEST has not): git would
        enter it, and run what its config names."""
        wt = self.worktree(exp)
        why = gitops.nested_problem(gitops.nested_repositories(wt), [])
        if why:
            raise InvalidInput(why, hint="remove it (experiment_revert discards it with the rest of the attempt)")
        outputs = self.outputs(exp)
        gitops.restore(wt, exp.best_commit, gitops.tracked_in(wt, exp.best_commit, outputs))
        snap = gitops.snapshot(wt, exp.best_commit, outputs, message)
        why = gitops.nested_problem([], gitops.new_gitlinks(wt, exp.best_commit, snap))
        if why:
            raise InvalidInput(why, hint="remove it (experiment_revert discards it with the rest of the attempt)")
        return snap

    def advance(self, exp: Experiment, commit: str) -> None:
        """Move the experiment's branch from BEST to `commit` (refused if it moved meanwhile), and its index."""
        wt = self.worktree(exp)
        gitops.advance_branch(wt, exp.branch, commit, exp.best_commit)
        gitops.sync_index(wt)

    # ---- answers ----------------------------------------------------------------------------
    def status_answer(self, exp: Experiment, attempt: Attempt | None = None, run_id: str | None = None) -> ExperimentAnswer:
        best = self.store.attempt(exp.best_attempt) if exp.best_attempt else None
        recent = [a for a in self.store.attempts(exp.tag, 50) if a.regression][:STOP_AFTER_REGRESSIONS]
        return ExperimentAnswer(
            tag=exp.tag,
            status=exp.status,
            stop_reason=exp.stop_reason,
            branch=exp.branch,
            worktree=str(self.workdir(exp)),
            best_commit=exp.best_commit,
            best=attempt_view(best) if best else None,
            consecutive_regressions=exp.consecutive_regressions,
            recent_regressions=[attempt_view(a) for a in recent],
            attempt=attempt_view(attempt) if attempt else None,
            max_repairs=MAX_REPAIRS,
            run_id=run_id,
            notes=list(self.config_notes),
        )

    def log(self, tag: str | None, limit: int, outcome: str | None) -> LogAnswer:
        exp = self.experiment(tag)
        rows = self.store.attempts(exp.tag, limit, outcome)
        return LogAnswer(tag=exp.tag, best_commit=exp.best_commit, attempts=[attempt_view(a) for a in rows])


def figures_of(bench: BenchRun) -> dict[str, Any]:
    return {c.key: c.model_dump() for c in bench.classes}


def figures_summary(figures: dict[str, ClassRun], metric: str) -> str:
    """Each class's median, named by the CSV column it is (the column's name carries its unit: us_k)."""
    parts = [f"{k}: {v.median:.4g}" for k, v in list(figures.items())[:4] if v.samples]
    return f"{metric} (median) " + "; ".join(parts) + (" ..." if len(figures) > 4 else "")


def compare_with_best(ws: Workspace, result: BenchRun, run_id: str):
    """A plain benchmark run, compared per class with the latest experiment's BEST when there is one.
    Informative only: BEST's figures are from another time, so no keep rests on this."""
    from kernel_mcp.bench import BenchAnswer, compare

    answer = BenchAnswer(bench=result, run_id=run_id)
    if not (ws.state_dir / LEDGER_DB).exists():
        return answer
    lg = Ledger(ws)
    exp = lg.store.experiment(None)
    if exp is None or not exp.best_attempt:
        return answer
    best = lg.best_figures(exp)
    answer.against = f"BEST {exp.best_commit[:10]} (as measured when it was kept)"
    answer.comparisons = {c.key: compare(best[c.key].samples, c.samples, seed=i) for i, c in enumerate(result.classes) if c.key in best}
    return answer
