"""Trust checks: the frozen harness, the profiler's view of the launches, and GPU-time comparison.

An optimizing agent can "win" by changing the measurement instead of the kernel. The ledger
refuses a candidate that edits a protected file (the benchmark, the reference, the shape list,
kernel-mcp.toml), touches anything outside the editable set, runs faster than physics allows,
launches the target kernel fewer times than BEST, or moves the work into other kernels; and the
keep metric is the profiler's GPU kernel time, measured outside the process under test.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import random
import statistics
from pathlib import Path

import git

from kernel_mcp.bench.stats import BOOTSTRAP_DRAWS, Comparison
from kernel_mcp.errors import InvalidInput
from kernel_mcp.ledger.performance import FILE_NAME as PERFORMANCE
from kernel_mcp.workspace.config import HarnessConfig

NEW_KERNEL_SHARE = 0.05  # a kernel absent from BEST taking this much GPU time is reported


def matches(rel: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        if fnmatch.fnmatch(rel, pattern) or (pattern.startswith("**/") and fnmatch.fnmatch(rel, pattern[3:])):
            return True
    return False


def workspace_files(wt: git.Repo, subdir: str) -> list[str]:
    """Files of the workspace in the worktree (tracked, and untracked but not ignored), workspace-relative."""
    spec = "." if subdir == "." else subdir
    listed = wt.git.ls_files("--cached", "--others", "--exclude-standard", "--", spec).splitlines()
    prefix = "" if subdir == "." else subdir.rstrip("/") + "/"
    return sorted({p[len(prefix):] for p in listed if p.startswith(prefix)})


def is_protected(rel: str, harness: HarnessConfig) -> bool:
    if rel == PERFORMANCE:
        return False  # the ledger's own record
    return matches(rel, harness.protected) or not matches(rel, harness.editable)


def editable_files(wt: git.Repo, subdir: str, workdir: Path, harness: HarnessConfig) -> list[str]:
    """The workspace files an attempt may change: matching the editable globs, not protected, and
    present in the worktree (tracked, or untracked but not ignored). Never the ledger's own record."""
    return [rel for rel in workspace_files(wt, subdir)
            if rel != PERFORMANCE and not is_protected(rel, harness) and (workdir / rel).is_file()]


def require_editable(wt: git.Repo, subdir: str, workdir: Path, harness: HarnessConfig) -> list[str]:
    """The editable files, or InvalidInput when the globs match none: every change would then be
    refused, so an experiment could only ever measure BEST against itself."""
    found = editable_files(wt, subdir, workdir, harness)
    if found:
        return found
    from kernel_mcp.workspace.scaffold import KERNEL_SUFFIXES, editable_globs

    present = [rel for rel in workspace_files(wt, subdir) if (workdir / rel).is_file()]
    sources = [rel for rel in present if rel.endswith(KERNEL_SUFFIXES)]
    # kernel sources first: they are what the globs were most likely meant to name
    shown = (sources + [rel for rel in present if rel not in sources])[:8]
    listing = ", ".join(shown) + (f" (and {len(present) - len(shown)} more)" if len(present) > len(shown) else "") if shown else "none"
    suggestion = editable_globs(sources)[0]
    hint = "set [harness] editable in kernel-mcp.toml to the kernel's sources"
    hint += f", e.g. editable = {json.dumps(suggestion)}" if suggestion else " (globs relative to the workspace, e.g. \"src/*.cu\")"
    hint += ", and commit it"
    protected = f" (protected: {json.dumps(harness.protected)})" if harness.protected else ""
    raise InvalidInput(f"[harness] editable {json.dumps(harness.editable)}{protected} matches no file in the workspace; "
                       f"files there: {listing}", hint=hint)


def protected_hashes(wt: git.Repo, subdir: str, workdir: Path, harness: HarnessConfig) -> dict[str, str]:
    hashes = {}
    for rel in workspace_files(wt, subdir):
        path = workdir / rel
        if is_protected(rel, harness) and path.is_file():
            hashes[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def violations(wt: git.Repo, subdir: str, workdir: Path, best: str, recorded: dict[str, str], harness: HarnessConfig) -> list[str]:
    """Each protected file that differs from BEST, and each change outside the editable set."""
    from kernel_mcp.ledger.gitops import changed_files

    problems = []
    now = protected_hashes(wt, subdir, workdir, harness)
    for rel in sorted(set(recorded) | set(now)):
        if rel not in now:
            problems.append(f"protected file removed: {rel}")
        elif rel not in recorded:
            problems.append(f"file added outside the editable set: {rel}")
        elif now[rel] != recorded[rel]:
            problems.append(f"protected file changed: {rel}")
    prefix = "" if subdir == "." else subdir.rstrip("/") + "/"
    for path in changed_files(wt, best):
        if not path.startswith(prefix):
            problems.append(f"file outside the workspace changed: {path}")
            continue
        rel = path[len(prefix):]
        if rel != PERFORMANCE and not matches(rel, harness.editable) and not any(rel in p for p in problems):
            problems.append(f"file changed outside the editable set: {rel}")
    return problems


def hashes_digest(hashes: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{k}:{v}\n" for k, v in sorted(hashes.items())).encode()).hexdigest()


def launch_problems(best: dict, cand: dict) -> list[str]:
    """From two profile summaries (as dicts): fewer target launches, or new kernels doing the work."""
    problems = []
    best_calls = sum(k["calls"] for k in best["kernels"] if k["target"])
    cand_calls = sum(k["calls"] for k in cand["kernels"] if k["target"])
    if best_calls and not cand_calls:
        problems.append("the target kernel was not launched at all (the profiler saw none)")
    elif cand_calls < best_calls:
        problems.append(f"the target kernel was launched {cand_calls} times; BEST launched it {best_calls} times")
    known = {k["name"] for k in best["kernels"]}
    for k in cand["kernels"]:
        if k["name"] not in known and not k["target"] and k["share"] >= NEW_KERNEL_SHARE:
            problems.append(f"a kernel BEST did not launch takes {k['share']:.0%} of GPU time: {k['name'][:80]}")
    return problems


def new_kernels_ns(best: dict, cand: dict) -> float:
    """GPU time (ns) of the candidate's non-target kernels that BEST never launched: work moved out
    of the target kernel still counts against the candidate."""
    known = {k["name"] for k in best["kernels"]}
    return sum(k["total_us"] * 1e3 for k in cand["kernels"] if k["name"] not in known and not k["target"])


def gpu_time_comparison(best: dict[str, list[float]], cand: dict[str, list[float]], best_counts: dict[str, int] | None = None,
                        cand_counts: dict[str, int] | None = None, cand_extra_ns: float = 0.0, seed: int = 0) -> Comparison | None:
    """Target-kernel GPU time of the whole benchmark run, candidate against BEST.

    Per (kernel, grid) group: the median dispatch time times the number of dispatches, summed over
    the groups (plus the candidate's new non-target kernels). A total, not a per-dispatch figure:
    launching the kernel twice per call, or adding a helper kernel, costs what it costs, and a
    candidate that changes the grid still compares. A bootstrap over each group's dispatches gives
    the interval."""
    best_counts = best_counts or {g: len(v) for g, v in best.items()}
    cand_counts = cand_counts or {g: len(v) for g, v in cand.items()}

    def total(samples: dict[str, list[float]], counts: dict[str, int], pick) -> float:
        return sum(statistics.median(pick(v)) * counts.get(g, len(v)) for g, v in samples.items() if v)

    b_total = total(best, best_counts, lambda xs: xs)
    if b_total <= 0 or not any(cand.values()):
        return None
    c_total = total(cand, cand_counts, lambda xs: xs) + cand_extra_ns
    rng = random.Random(seed)

    def resample(xs: list[float]) -> list[float]:
        return rng.choices(xs, k=len(xs))

    draws = sorted((total(cand, cand_counts, resample) + cand_extra_ns) / total(best, best_counts, resample) - 1 for _ in range(BOOTSTRAP_DRAWS // 4))
    low, high = draws[int(0.025 * len(draws))], draws[int(0.975 * len(draws)) - 1]
    return Comparison(change=c_total / b_total - 1, low=low, high=high, significant=low > 0 or high < 0, best_median=b_total / 1e3,
                      candidate_median=c_total / 1e3, best_runs=sum(best_counts.values()), candidate_runs=sum(cand_counts.values()))
