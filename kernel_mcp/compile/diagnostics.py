"""Compiler errors and warnings as `file:line:col: severity: message`, deduplicated and capped."""

from __future__ import annotations

import re
from collections.abc import Iterable

from kernel_mcp.models.compile import Diagnostic

# clang: "src/k.hip:12:5: error: use of undeclared identifier 'x'"
_CLANG = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<sev>fatal error|error|warning): (?P<msg>.*)$")
# the AMDGPU backend running on its own input (-save-temps), message-first:
# "error: k.hip:2:89: no registers from class available to allocate in function '_Z4vbigPf'"
_SEVERITY_FIRST = re.compile(r"^(?P<sev>fatal error|error|warning): (?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<msg>.*)$")
# nvcc front end: "k.cu(12): error: identifier "x" is undefined"
_NVCC = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<sev>error|warning)(?: #\S+)?: (?P<msg>.*)$")
# tools without a location: "ptxas fatal   : Unresolved extern function", "clang: error: unknown argument"
_BARE = re.compile(r"^(?P<file>[\w+.-]+)(?: fatal)?\s*:\s*(?P<sev>fatal error|error|fatal)\s*:?\s*(?P<msg>.*)$")

MAX_DIAGNOSTICS = 20
MAX_MESSAGE = 300


def parse_diagnostics(lines: Iterable[str], limit: int = MAX_DIAGNOSTICS) -> tuple[list[Diagnostic], int]:
    """The distinct diagnostics (errors first), at most `limit`, and how many distinct ones there were.

    `lines` may be a whole log file on disk: it is read line by line."""
    seen: dict[tuple, Diagnostic] = {}
    for raw in lines:
        line = raw.rstrip()
        match = _CLANG.match(line) or _SEVERITY_FIRST.match(line) or _NVCC.match(line)
        if match:
            groups = match.groupdict()
            diag = Diagnostic(
                file=groups["file"].strip(),
                line=int(groups["line"]),
                column=int(groups["col"]) if groups.get("col") else None,
                severity="error" if "error" in groups["sev"] else "warning",
                message=groups["msg"].strip()[:MAX_MESSAGE],
            )
        elif (bare := _BARE.match(line)) is not None:
            diag = Diagnostic(file=bare.group("file"), severity="error", message=bare.group("msg").strip()[:MAX_MESSAGE])
        else:
            continue
        key = (diag.file, diag.line, diag.column, diag.severity, diag.message)
        if key in seen:
            seen[key].count += 1
        else:
            seen[key] = diag
    ordered = sorted(seen.values(), key=lambda d: (d.severity != "error",))
    return ordered[:limit], len(ordered)
