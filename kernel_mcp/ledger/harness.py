"""Trust checks: the frozen harness and the profiler's view of the launches.

An optimizing agent can "win" by changing the measurement instead of the kernel. The ledger
refuses a candidate that edits a protected file (the benchmark, the reference, the shape list,
kernel-mcp.toml), touches anything outside the editable set, runs faster than physics allows,
launches the target kernels on fewer calls than BEST, or moves the work into other kernels; and the
keep metric is the profiler's GPU kernel time, measured outside the process under test.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from pathlib import Path

import git

from kernel_mcp.errors import InvalidInput
from kernel_mcp.ledger.performance import FILE_NAME as PERFORMANCE
from kernel_mcp.ledger.performance import regular_or_absent
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
    return sorted({p[len(prefix) :] for p in listed if p.startswith(prefix)})


def is_protected(rel: str, harness: HarnessConfig) -> bool:
    if rel == PERFORMANCE:
        return False  # the ledger's own record
    return matches(rel, harness.protected) or not matches(rel, harness.editable)


def editable_files(wt: git.Repo, subdir: str, workdir: Path, harness: HarnessConfig) -> list[str]:
    """The workspace files an attempt may change: matching the editable globs, not protected, and
    present in the worktree (tracked, or untracked but not ignored). Never the ledger's own record."""
    return [rel for rel in workspace_files(wt, subdir) if rel != PERFORMANCE and not is_protected(rel, harness) and (workdir / rel).is_file()]


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
    hint += f", e.g. editable = {json.dumps(suggestion)}" if suggestion else ' (globs relative to the workspace, e.g. "src/*.cu")'
    hint += ", and commit it"
    protected = f" (protected: {json.dumps(harness.protected)})" if harness.protected else ""
    raise InvalidInput(f"[harness] editable {json.dumps(harness.editable)}{protected} matches no file in the workspace; files there: {listing}", hint=hint)


def protected_hashes(wt: git.Repo, subdir: str, workdir: Path, harness: HarnessConfig, skip: set[str] | None = None) -> dict[str, str]:
    """sha256 of every protected file in the worktree; `skip` (repo-relative) are the runs' outputs."""
    prefix = "" if subdir == "." else subdir.rstrip("/") + "/"
    hashes = {}
    for rel in workspace_files(wt, subdir):
        path = workdir / rel
        if skip and prefix + rel in skip:
            continue
        if is_protected(rel, harness) and path.is_file():
            hashes[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def violations(
    wt: git.Repo, subdir: str, workdir: Path, recorded: dict[str, str], harness: HarnessConfig, changed: list[str], skip: set[str] | None = None
) -> list[str]:
    """Each protected file that differs from when the experiment started, and each change (`changed`:
    repo-relative paths that differ from BEST) outside the editable set. `skip`: the runs' outputs."""
    problems = []
    now = protected_hashes(wt, subdir, workdir, harness, skip)
    prefix = "" if subdir == "." else subdir.rstrip("/") + "/"
    for rel in sorted(set(recorded) | set(now)):
        if skip and prefix + rel in skip and rel not in now:
            continue
        if rel not in now:
            problems.append(f"protected file removed: {rel}")
        elif rel not in recorded:
            problems.append(f"file added outside the editable set: {rel}")
        elif now[rel] != recorded[rel]:
            problems.append(f"protected file changed: {rel}")
    for path in changed:
        if not path.startswith(prefix):
            problems.append(f"file outside the workspace changed: {path}")
            continue
        rel = path[len(prefix) :]
        if rel != PERFORMANCE and not matches(rel, harness.editable) and not any(rel in p for p in problems):
            problems.append(f"file changed outside the editable set: {rel}")
        elif os.path.islink(workdir / rel):
            problems.append(f"a changed file is a symbolic link: {rel} (an edit is a file's content, never a link)")
    # the ledger writes its record itself: a candidate's link in its place would have it write anywhere
    if not regular_or_absent(workdir / PERFORMANCE):
        problems.append(f"{PERFORMANCE} is not a regular file (a link?): it is the ledger's own record")
    return problems


def hashes_digest(hashes: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{k}:{v}\n" for k, v in sorted(hashes.items())).encode()).hexdigest()


def launch_problems(best: dict, cand: dict) -> list[str]:
    """From two profile summaries (as dicts): calls that skip the target work, or new kernels doing it.

    A call that skips the work shows as fewer target launches than BEST's most launched target
    kernel made alone: every call that launched it must still launch some target kernel. BEST's
    total over all its target kernels is no such bound, as fusing them is a real improvement: an
    RMSNorm whose two passes become one launches half as many target kernels, in every call.
    (So a BEST of several target kernels that skips a call in two is left to the correctness check
    after repeated calls, and fusing launches of one same kernel is refused.)"""
    problems = []
    busiest = max((k for k in best["kernels"] if k["target"]), key=lambda k: k["calls"], default=None)
    cand_calls = sum(k["calls"] for k in cand["kernels"] if k["target"])
    if busiest is not None and busiest["calls"] and not cand_calls:
        problems.append("the target kernel was not launched at all (the profiler saw none)")
    elif busiest is not None and cand_calls < busiest["calls"]:
        problems.append(f"the target kernels were launched {cand_calls} times in all; BEST launched {busiest['name'][:80]} alone {busiest['calls']} times")
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
