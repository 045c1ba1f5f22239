"""Regular expressions written by the agent, searched within a time bound.

Python's `re` backtracks without limit: a pattern like `^(\\S+\\s?)+$X` over one ISA listing froze
the server. Agent patterns go through the `regex` module instead, whose searches take a timeout;
the whole search over a listing shares one time budget, and running out is an invalid-input error
naming the pattern, not a frozen server. The same holds for the patterns a workspace gives
(`[benchmark] target_kernel`), matched against kernel names from a profiler's output.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import regex

from kernel_mcp import untrusted
from kernel_mcp.errors import InvalidInput

SEARCH_BUDGET_S = 1.0
MAX_PATTERN = 500


class AgentPattern:
    """`pattern` compiled for time-bounded searches. Every search made through one object shares
    `budget_s`: a profile holds thousands of kernel names, and a budget per name would let a
    backtracking pattern hold the server for thousands of budgets. `what` names where the pattern
    came from (the agent's `kernel=`, the workspace's `[benchmark] target_kernel`) for the error."""

    def __init__(self, pattern: str, budget_s: float = SEARCH_BUDGET_S, what: str = "the pattern", searched: str = "the listing") -> None:
        if len(pattern) > MAX_PATTERN:
            raise InvalidInput(f"{what} is {len(pattern)} characters long; at most {MAX_PATTERN}")
        try:
            self.compiled = regex.compile(pattern, flags=regex.VERSION0)
        except (regex.error, OverflowError, RecursionError) as exc:
            raise InvalidInput(f"{what}: bad regular expression: {exc}") from None
        self.pattern = pattern
        self.budget_s = budget_s
        self.left_s = budget_s
        self.what = what
        self.searched = searched

    def search(self, text: str) -> bool:
        """Whether the pattern finds something in `text`, within what is left of the budget."""
        start = time.monotonic()
        try:
            if self.left_s <= 0:
                raise TimeoutError
            return self.compiled.search(text, timeout=self.left_s) is not None
        except TimeoutError:
            # the pattern is the agent's or the workspace's: one line, its control characters escaped
            raise InvalidInput(
                f"{self.what} /{untrusted.inline(self.pattern[:80])}/ took longer than {self.budget_s:g} s to search {self.searched}",
                hint="a simpler pattern (nested repetition like (a+)+ backtracks without end)",
            ) from None
        finally:
            self.left_s -= time.monotonic() - start

    def matching(self, lines: Iterable[str]) -> list[int]:
        """Indices of the lines the pattern finds something in, all searched within the one budget."""
        return [index for index, line in enumerate(lines) if self.search(line)]
