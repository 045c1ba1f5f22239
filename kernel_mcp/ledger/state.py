"""The ledger's state as typed records: an experiment, its attempts, and each attempt's evidence.

The store (store.py) keeps them in SQLite and hands out these models, so every step reads named,
validated fields instead of string keys, and a record written by an older version is read with
defaults for what it did not have (evidence keeps unknown keys, so nothing recorded is dropped).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kernel_mcp.bench import ClassRun
from kernel_mcp.bench.stats import Comparison
from kernel_mcp.ledger.decide import Decision
from kernel_mcp.ledger.spent import Spent

Status = Literal["starting", "running", "stopped", "ended"]


class Experiment(BaseModel):
    model_config = ConfigDict(extra="ignore")

    tag: str
    branch: str
    worktree: str
    subdir: str
    base_commit: str
    best_commit: str
    best_attempt: int | None = None
    status: Status
    stop_reason: str | None = None
    consecutive_regressions: int = 0
    protected: dict[str, str] = Field(default_factory=dict)  # workspace-relative path -> sha256, at the start
    created: str
    run_outputs: list[str] = Field(default_factory=list)  # repo-relative files the runs wrote: never part of a candidate
    owner: str | None = None  # the process measuring the baseline while status is "starting"
    config: str | None = None  # the text of kernel-mcp.toml the experiment started with: its rules, whatever the checkout says


class Verification(BaseModel):
    """What the verification set said at keep time (verify.py): a summary, or why it failed."""

    model_config = ConfigDict(extra="allow")

    summary: str | None = None
    failed: str | None = None
    seed: int | None = None
    errors: dict[str, float | str] = Field(default_factory=dict)  # each verification row's value of the correctness column (text if not a number)


class Remeasured(BaseModel):
    """A suspicious speedup measured again at keep time (verify.remeasure)."""

    model_config = ConfigDict(extra="allow")

    agrees: bool
    statement: str
    change: float
    comparison: Comparison | None = None
    clocks: dict[str, Any] | None = None


class Evidence(BaseModel):
    """What an attempt's decision rests on. Known fields are typed; other keys are kept as they came."""

    model_config = ConfigDict(extra="allow")

    seeds: list[int] = Field(default_factory=list)
    run: str | None = None
    keep_metric: str | None = None
    candidate_commit: str | None = None  # the measured code, as a commit on BEST (pinned under refs/kernel-mcp/)
    direction: int = 0
    overall: Comparison | None = None
    gpu_time: Comparison | None = None
    impossible: list[str] = Field(default_factory=list)
    source: str | None = None
    pairs: int | None = None
    profiler_pairs: int | None = None
    stopped: str | None = None
    wall_s: float | None = None
    clocks: dict[str, Any] | None = None
    best_figures: dict[str, ClassRun] = Field(default_factory=dict)
    runs: list[dict[str, Any]] = Field(default_factory=list)
    profile: dict[str, Any] | None = None
    batch: str | None = None
    candidate: dict[str, Any] | None = None  # a batch candidate's placement: index, ref, where, times
    verification: Verification | None = None
    remeasured: Remeasured | None = None
    carried: list[str] = Field(default_factory=list)
    protected_digest: str | None = None
    sealed: str | None = None  # the boundary every run had ("Landlock ABI 7"); None: unsealed
    witness: Comparison | None = None  # the runs' wall times as the server measured them, paired
    tampered: list[str] = Field(default_factory=list)  # what changed outside a run's own tree (void evaluation)
    verdicts: dict[str, Literal["faster", "slower", "same", "undecided"]] = Field(default_factory=dict)  # each class's outcome (decide.py)
    gpu: str | None = None  # the GPU and product the candidate ran on, as the lease names it
    floor_of: str | None = None  # whose figures the roofline floor used ("H200 (sm_90)")
    floor_note: str | None = None  # why no floor was drawn (a product no table describes)
    timing_symbols: list[str] = Field(default_factory=list)  # timing functions the change defines or wraps
    spent: Spent | None = None  # where the evaluation's time went (ledger/spent.py)
    kernel_trace: str | None = None  # the tracer that recorded the GPU time inside the benchmark runs
    kernel_trace_note: str | None = None  # why the profiler measured runs of its own instead
    forked: str | None = None  # with [benchmark] preload: how the runs started (forks of a fork server, or why not)
    code_fingerprint: str | None = None  # the candidate's code, comments and layout left out (same_code.py); None: not taken
    same_as: int | None = None  # a duplicate's attempt whose code it has (BEST's, or the one whose decision it quotes)


class Attempt(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: int
    tag: str
    parent_commit: str
    commit_sha: str | None = None
    diff_hash: str | None = None  # the candidate's tree
    files: list[str] = Field(default_factory=list)
    hypothesis: str
    target_class: str | None = None
    figures: dict[str, ClassRun] = Field(default_factory=dict)
    comparisons: dict[str, Comparison] = Field(default_factory=dict)
    decision: Decision | Literal["baseline"]
    reasons: list[str] = Field(default_factory=list)
    regression: bool = False
    repair_count: int = 0
    evidence: Evidence = Field(default_factory=Evidence)
    outcome: str
    created: str
    closed: str | None = None


class Intent(BaseModel):
    model_config = ConfigDict(extra="ignore")

    tag: str
    action: str
    attempt_id: int | None = None
    started: str
    commit_sha: str | None = None


def attempt_head(exp: Experiment, hypothesis: str, target: str | None, files: list[str], digest: str) -> dict[str, Any]:
    """What every attempt row starts with, whatever was decided: its experiment, the BEST it was
    judged against, the candidate's tree digest and changed files, its hypothesis and target."""
    return dict(tag=exp.tag, parent_commit=exp.best_commit, diff_hash=digest, files=files, hypothesis=hypothesis, target_class=target)
