"""The keep/revert experiment ledger: only changes proven correct and faster are kept.

An experiment lives on its own branch in its own worktree (under the workspace's `.kernel-mcp/`),
so the user's working tree is never touched. BEST is the last kept commit with its figures; each
evaluation is an attempt recorded with its parent, hypothesis, per-class figures and decision;
keep commits and moves BEST; revert resets the worktree to BEST.

The steps live in their own modules (experiment.py: start, stop, end; evaluate.py; many.py; keep.py:
keep, revert), each a function of the `Ledger` (core.py: what they share, the stored state, the
worktrees, the workspace lock, what the benchmark writes (never an edit) and the answers); the tools
(tools.py) call them. This package imports none of its modules: they import each other by their full
names, never through the package, so that no import goes round in a circle.
"""
