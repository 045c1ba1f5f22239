"""Text that came from the workspace (a CSV cell or class key, a kernel name from a profiler's
output, what a command printed) shown in an answer: it stays data.

An answer is lines an agent reads as the server's. A newline in a class key would start a line that
reads as one of them ("ok", "KEEP"); a carriage return or an ANSI escape hides on a terminal what
came before it; a Unicode line separator breaks the line for some readers; an invisible character
(a zero-width space, a bidirectional mark, a Unicode tag character, which a model reads and a person
does not see) makes two different keys print alike or carries hidden words. So every control and
format character of such text is written as its escape (`\\n`, `\\x1b`, `\\u2028`, `\\u200b`,
`\\U000e0041`), and output of several lines is fenced and labelled as the workspace's, behind a fence
that no line of it can close.

Only the answer's text is escaped: the structured content keeps each value as it was (JSON escapes
control characters itself). This module imports nothing of the package, so any layer may use it;
the `regex` module (a dependency) knows the Unicode format category, \\p{Cf}, which `re` does not.
"""

from __future__ import annotations

import re
from typing import Literal

import regex

# C0 and C1 controls (newline, carriage return, the ESC of ANSI sequences, NEL), DEL, the Unicode
# line and paragraph separators, and the format characters (Cf): the bidirectional overrides,
# isolates and marks, which reorder what a reader sees of a line (U+202A-U+202E, U+2066-U+2069,
# U+200E, U+200F, U+061C), the zero-width ones (U+200B-U+200D, U+2060, U+FEFF), the soft hyphen, and
# the tag characters; the whole tag block U+E0000-U+E007F, unassigned ones included, is invisible text.
_INVISIBLE = "\\u2028\\u2029\\p{Cf}\\U000e0000-\\U000e007f"
CONTROL = regex.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_INVISIBLE}]")
# the same but newline and tab, which a block of output keeps as they are
CONTROL_IN_BLOCK = regex.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_INVISIBLE}]")
NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
FENCE_RUN = re.compile("`{3,}")


def _escape(match: regex.Match) -> str:
    char = match.group()
    code = ord(char)
    return NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")


def inline(value: object) -> str:
    """`value` as text on one line of an answer: every control character escaped."""
    return CONTROL.sub(_escape, str(value))


def block(text: str) -> str:
    """`text` with its line breaks and tabs kept (a CRLF is one break) and every other control
    character escaped."""
    return CONTROL_IN_BLOCK.sub(_escape, text.replace("\r\n", "\n"))


def fenced(label: str, text: str) -> str:
    """`text` of several lines as the workspace's output: a line naming it, then the text (see
    `block`) between fences of more backticks than any run of backticks in it, so that none of its
    lines ends the fence and what follows the fence is the server's again."""
    body = block(text).rstrip("\n")
    longest = max((len(run) for run in FENCE_RUN.findall(body)), default=2)
    fence = "`" * (longest + 1)
    return f"{label}, output of the workspace (fenced, control characters escaped):\n{fence}\n{body}\n{fence}"


def fitting(text: str, limit: int, keep: Literal["start", "end"]) -> str:
    """The longest start or end of `text` whose escaped form (`block`) takes at most `limit` bytes
    of UTF-8: an escape is longer than its character, so cutting the raw text to the limit is not
    enough. Raw text, for the caller to escape where it shows it."""

    def size(piece: str) -> int:
        return len(block(piece).encode("utf-8"))

    if size(text) <= limit:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest length that fits: the escaped size grows with the length
        middle = (low + high + 1) // 2
        if size(text[:middle] if keep == "start" else text[len(text) - middle :]) <= limit:
            low = middle
        else:
            high = middle - 1
    return text[:low] if keep == "start" else text[len(text) - low :]
