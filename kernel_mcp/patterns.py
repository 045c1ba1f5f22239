"""Regular expressions written by the agent, searched within a time bound.

Python's `re` backtracks without limit: a pattern like `^(\\S+\\s?)+$X` over one ISA listing froze
the server. Agent patterns go through the `regex` module instead, whose searches take a timeout;
the whole search over a listing shares one time budget, and running out is an invalid-input error
naming the pattern, not a frozen server.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import regex

from kernel_mcp.errors import InvalidInput

SEARCH_BUDGET_S = 1.0
MAX_PATTERN = 500


class AgentPattern:
    def __init__(self, pattern: str, budget_s: float = SEARCH_BUDGET_S) -> None:
        if len(pattern) > MAX_PATTERN:
            raise InvalidInput(f"the pattern is {len(pattern)} characters long; at most {MAX_PATTERN}")
        try:
            self.compiled = regex.compile(pattern, flags=regex.VERSION0)
        except (regex.error, OverflowError, RecursionError) as exc:
            raise InvalidInput(f"bad regular expression: {exc}") from None
        self.pattern = pattern
        self.budget_s = budget_s

    def matching(self, lines: Iterable[str]) -> list[int]:
        """Indices of the lines the pattern finds something in, all searched within one budget."""
        deadline = time.monotonic() + self.budget_s
        hits = []
        for index, line in enumerate(lines):
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                if self.compiled.search(line, timeout=left):
                    hits.append(index)
            except TimeoutError:
                raise InvalidInput(f"the pattern /{self.pattern[:80]}/ took longer than {self.budget_s:g} s to search the listing",
                                   hint="a simpler pattern (nested repetition like (a+)+ backtracks without end)") from None
        return hits
