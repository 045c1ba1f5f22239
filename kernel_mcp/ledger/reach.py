"""Reach: the editable files a protected harness pulls in, and the timing symbols a change defines.

Hashing the protected files proves the harness's bytes did not change, not that its behaviour
did not: a benchmark that #includes the kernel's header, or a Python harness that imports the
kernel's module, runs code the candidate wrote, and that code can redefine the harness's clock
(`#define clock_gettime fake`, `time.perf_counter = lambda: 0.0`) without touching a protected
byte. `reaching_files` finds those paths into the harness; `timing_symbols` finds a change that
defines or replaces a clock; `describe` words the first for an answer.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import os
import posixpath
import re
import stat
from pathlib import Path
from typing import cast

from pydantic import BaseModel, ConfigDict

from kernel_mcp.ledger.harness import is_protected
from kernel_mcp.workspace.config import HarnessConfig

C_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hh", ".hpp", ".hip", ".inl")
PY_SUFFIXES = (".py",)
MAX_FILES = 2000  # files read in one call; a larger workspace is judged on its first ones
MAX_BYTES = 1 << 20  # read of each file; an include past the first megabyte is not seen
MAX_STEPS = 200_000  # links followed in one call, so a dense include graph cannot run away

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)
_BLOCK_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)  # \Z: an unclosed comment is one scan, not one per "/*"


class Reach(BaseModel):
    """A protected file that runs an editable one: `how` is the directive in `protected`, at
    `line`, that starts the path; `via` the protected files it passes through on the way."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    protected: str
    editable: str
    how: str
    line: int
    via: list[str] = []


class TimingSymbol(BaseModel):
    """A clock that a change defines or replaces: its name, and the file and line in the new tree."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    symbol: str
    file: str
    line: int


def _read(root: Path, rel: str) -> str | None:
    """The file's first MAX_BYTES as text; None for a link out of the workspace, a FIFO, a device
    or anything unreadable, since a harness cannot be judged on what may not be opened."""
    try:
        path = (root / rel).resolve()
        if (path != root and root not in path.parents) or not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped after the check
                return None
            return handle.read(MAX_BYTES).decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return None


def _inside(rel: str) -> str | None:
    """`rel` normalized ("" for the workspace root), or None when it leaves the workspace."""
    rel = posixpath.normpath(rel)
    return None if rel.startswith(("../", "/")) or rel == ".." else "" if rel == "." else rel


def _canonical(root: Path, rel: str, known: set[str]) -> str:
    """A link inside the workspace stands for the file it names: including the link runs that file."""
    try:
        if (root / rel).is_symlink():
            target = (root / rel).resolve().relative_to(root).as_posix()
            return target if target in known else rel
    except (OSError, ValueError, RuntimeError):  # out of the workspace, or a loop: judged by its own name
        pass
    return rel


def _c_links(text: str, rel: str, known: set[str]) -> list[tuple[str, str, int]]:
    """(file, directive, line) per include that names a workspace file. Block comments are blanked
    first; includes under #if are all counted, since an editable header can flip the condition."""
    text = _BLOCK_COMMENT.sub(lambda m: "\n" * m.group().count("\n"), text)
    links = []
    for match in _INCLUDE.finditer(text):
        name = match.group(2).strip()
        # the includer's folder first, as the preprocessor searches it, then the workspace root (-I.)
        for candidate in (posixpath.join(posixpath.dirname(rel), name), name):
            target = _inside(candidate)
            if target in known:
                how = f"#include {match.group(1)}{name}{'>' if match.group(1) == '<' else chr(34)}"
                links.append((target, how, text.count("\n", 0, match.start()) + 1))
                break
    return links


def _module_files(bases: list[str], dotted: str, known: set[str]) -> list[str]:
    """Files that importing `dotted` runs: each package's __init__.py on the way and the module,
    from the first base folder holding any of them (sys.path order)."""
    parts = dotted.split(".")
    for base in bases:
        found = []
        for depth in range(1, len(parts) + 1):
            stem = _inside(posixpath.join(base, *parts[:depth]))
            if stem is None:
                break
            found += [f for f in (stem + ".py", stem + "/__init__.py") if f in known]
        if found:
            return found
    return []


def _py_links(text: str, rel: str, known: set[str]) -> list[tuple[str, str, int]]:
    """(file, statement, line) per import, anywhere in the file (inside a function or a try too),
    that runs a workspace file; a file that does not parse has none."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    folder = posixpath.dirname(rel)
    bases = [folder, ""] if folder else [""]  # the script's folder, then the workspace root (cwd)
    links = []
    for node in ast.walk(tree):
        modules: list[tuple[list[str], str]] = []
        if isinstance(node, ast.Import):
            modules = [(bases, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            # relative: the package's own folder only, never sys.path
            package = _inside(posixpath.join(folder, *[".."] * (node.level - 1))) if node.level else None
            where = bases if not node.level else [package] if package is not None else []
            prefix = f"{node.module}." if node.module else ""
            modules = [(where, node.module)] if node.module else []
            modules += [(where, prefix + alias.name) for alias in node.names if alias.name != "*"]  # a submodule, maybe
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            literal = node.args[0].value
            if called in ("import_module", "__import__") and isinstance(literal, str) and literal and not literal.startswith("."):
                modules = [(bases, literal)]
        for where, dotted in modules:
            for target in _module_files(where, dotted, known):
                links.append((target, ast.unparse(node)[:120], cast("ast.stmt | ast.expr", node).lineno))  # an import or a call
    return sorted(links, key=lambda link: link[2])  # ast.walk goes by depth; the first line reads best


def reaching_files(workdir: Path, files: list[str], harness: HarnessConfig) -> list[Reach]:
    """Every (protected file, editable file) where the first runs the second: C/C++/CUDA/HIP
    includes and Python imports, directly or through other protected files. A path ends at the
    first editable file (the candidate writes everything past it). Files are workspace-relative;
    an include or import resolves only to one of `files`. Not followed: shell scripts, Makefiles,
    files loaded by path at run time, an include named by a macro, a sys.path changed at run time."""
    root = workdir.resolve()
    known = set(files)
    links: dict[str, list[tuple[str, str, int]]] = {}
    budget = {"reads": MAX_FILES, "steps": MAX_STEPS}

    def links_of(rel: str, language: str) -> list[tuple[str, str, int]]:
        if rel not in links:
            text = _read(root, rel) if budget["reads"] > 0 else None
            budget["reads"] -= 1
            found = [] if text is None else (_c_links if language == "c" else _py_links)(text, rel, known)
            links[rel] = [(_canonical(root, target, known), how, line) for target, how, line in found]
        return links[rel]

    found = []
    for start in sorted(known):
        suffix = posixpath.splitext(start)[1].lower()
        language = "c" if suffix in C_SUFFIXES else "py" if suffix in PY_SUFFIXES else None
        if language is None or not is_protected(start, harness):
            continue
        seen = {start}
        queue: list[tuple[str, tuple[str, int] | None, list[str]]] = [(start, None, [])]
        while queue and budget["steps"] > 0:
            current, first, via = queue.pop(0)
            for target, how, line in links_of(current, language):
                budget["steps"] -= 1
                if target in seen:
                    continue
                seen.add(target)
                opening = first or (how, line)
                if is_protected(target, harness):
                    queue.append((target, opening, via + [target]))
                else:
                    found.append(Reach(protected=start, editable=target, how=opening[0], line=opening[1], via=via))
    return sorted(found, key=lambda r: (r.protected, r.editable))


_C_CLOCKS = (
    "clock_gettime",
    "gettimeofday",
    "clock",
    "timespec_get",
    "cudaEventElapsedTime",
    "hipEventElapsedTime",
    "cudaEventRecord",
    "hipEventRecord",
    "cudaEventSynchronize",
    "hipEventSynchronize",
    "steady_clock",
    "high_resolution_clock",
    "system_clock",
)
_C_NAME = "|".join(_C_CLOCKS)
_CHRONO = "steady_clock|high_resolution_clock|system_clock"
# Every pattern runs in time linear in the diff: a stretch that may cross lines is bounded, or
# starts only where its keyword is, since one that scanned on from every line start was quadratic.
_C_RULES = [  # each names the clock in group 1
    re.compile(rf"^[ \t]*#[ \t]*(?:define|undef|pragma[ \t]+weak)[ \t]+({_C_NAME})\b", re.MULTILINE),
    re.compile(rf"\bdlsym[ \t]*\([^;]{{0,200}}?,[ \t]*\"({_C_NAME})\""),
    re.compile(rf"\b(?:struct|class)[ \t]+({_CHRONO})\b[^;{{}}]{{0,200}}\{{|\busing[ \t]+({_CHRONO})[ \t]*="),
    re.compile(rf"\b({_CHRONO})::now[ \t]*\([ \t]*\)\s*(?:noexcept\b\s*)?\{{"),
    re.compile(r"(?:^|[{;])[ \t]*(?:inline[ \t]+)?namespace[ \t]+(?:std[ \t]*::[ \t]*)?(chrono)\s*\{", re.MULTILINE),
]
# type words at the start of a line (the last may end it), then the name and its '(': a
# definition or a declaration
_C_WORD = r"(?!(?:return|else|case|throw|new|delete|goto|co_return)\b)(?:__attribute__[ \t]*\(\([^;{\n]{0,200}?\)\)|[A-Za-z_][\w:<>]*)"
_C_FUNCTION = re.compile(
    rf"^[ \t]*(?:extern[ \t]+\"C\"[ \t]+)?(?:{_C_WORD}[ \t*&]+)*{_C_WORD}(?:[ \t*&]+|[ \t*&]*\n[ \t]*)"
    rf"(?:::)?({_C_NAME})[ \t]*\(",
    re.MULTILINE,
)
_PAREN = re.compile(r"[()]")
_DECLARATION_END = re.compile(r"[^;{]{0,1000}[;{]?")
# in any file: a -D compiler flag, or an inline source's #define (no space after '#', unlike a Python comment)
_ANY_RULE = re.compile(rf"(?:(?<![\w-])-D[ \t]*|^[ \t]*#(?:define|undef)[ \t]+)({_C_NAME})\b", re.MULTILINE)
_PY_RULES = [  # (pattern, symbol from its groups, whether that is a dotted name for _py_symbol)
    # a statement's target: not a parameter's annotation and default (`x: builtins.bool = False`)
    (re.compile(r"(?:^|;)[ \t]*((?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)", re.MULTILINE), "{0}", True),
    (re.compile(r"\b(?:setattr|object)[ \t]*\([ \t]*([\w.]+)[ \t]*,[ \t]*[\"'](\w+)[\"']"), "{0}.{1}", True),
    (re.compile(r"\b(?:patch|setattr)[ \t]*\([ \t]*[\"']([\w.]+)[\"']"), "{0}", True),
    (re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(perf_counter|perf_counter_ns|elapsed_time|do_bench)[ \t]*\(", re.MULTILINE), "{0}", False),
    (re.compile(r"^[ \t]*(perf_counter|perf_counter_ns)[ \t]*=(?!=)", re.MULTILINE), "{0}", False),
    (re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\([^)\n]*\b(cuda\.Event)\b", re.MULTILINE), "torch.cuda.Event", False),
    (re.compile(r"\b__builtins__[ \t]*\[[ \t]*[\"'](\w+)[\"'][ \t]*\][ \t]*=(?!=)"), "builtins.{0}", False),
    (re.compile(r"\bsys\.modules[ \t]*\[[ \t]*[\"'](time|torch|torch\.cuda|triton|triton\.testing)[\"'][ \t]*\][ \t]*=(?!=)"), "sys.modules['{0}']", False),
]


# A framework's timing API by the last two parts of its dotted name (the module may be imported as
# another name): an API name, as torch spells it, not a branch on a vendor.
FRAMEWORK_CLOCKS = {"cuda.Event": "torch.cuda.Event", "cuda.synchronize": "torch.cuda.synchronize"}


def _py_symbol(target: str) -> str | None:
    """The clock a dotted name that is assigned or patched stands for, or None. Names only clocks
    have count on any object (time may be imported as another name); common ones (time,
    monotonic, elapsed_time, Event) only on the clock's owner, so `self.time = 0` is no finding."""
    owner, _, attr = target.rpartition(".")
    last = owner.rpartition(".")[2]
    if owner in ("builtins", "__builtins__"):
        return f"builtins.{attr}"
    if attr in ("perf_counter", "perf_counter_ns"):
        return f"time.{attr}"
    if attr in ("time", "monotonic", "monotonic_ns", "process_time") and last in ("time", "_time"):
        return f"time.{attr}"
    if f"{last}.{attr}" in FRAMEWORK_CLOCKS:
        return FRAMEWORK_CLOCKS[f"{last}.{attr}"]
    if attr in ("elapsed_time", "record", "synchronize") and last.endswith("Event"):
        return "elapsed_time" if attr == "elapsed_time" else f"torch.cuda.Event.{attr}"
    return "triton.testing.do_bench" if attr == "do_bench" and last in ("testing", "triton") else None


def _added(diff_text: str) -> dict[str, list[tuple[int, str]]]:
    """Per file (the diff's new side), its added lines and their numbers. The hunks' lengths are
    counted, so an added line reading '++ x' is not taken for a file header."""
    added: dict[str, list[tuple[int, str]]] = {}
    path, line, old_left, new_left = None, 0, 0, 0
    for raw in diff_text.split("\n"):  # not splitlines: a form feed inside a line is no line break to git
        if old_left > 0 or new_left > 0:
            kind = raw[:1]
            if kind == "+" and path is not None:
                added.setdefault(path, []).append((line, raw[1:]))
            line, new_left = (line + 1, new_left - 1) if kind in ("+", " ", "") else (line, new_left)
            old_left -= kind in ("-", " ", "")
        elif raw.startswith("+++ "):
            name = raw[4:].split("\t")[0].strip()
            if name.startswith('"') and name.endswith('"'):
                name = name[1:-1].replace('\\"', '"').replace("\\\\", "\\")
            path = None if name == "/dev/null" else name.removeprefix("b/")
        elif hunk := re.match(r"@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", raw):
            old_left, line, new_left = int(hunk.group(1) or 1), int(hunk.group(2)), int(hunk.group(3) or 1)
    return added


def _c_findings(blob: str) -> list[tuple[str, int]]:
    found = [(name, m.start()) for rule in _C_RULES for m in rule.finditer(blob) for name in m.groups() if name]
    for match in _C_FUNCTION.finditer(blob):
        depth, end = 0, None
        for paren in _PAREN.finditer(blob, match.end() - 1, match.end() + 2000):  # the parameter list
            depth += 1 if paren.group() == "(" else -1
            if depth == 0:
                end = paren.end()
                break
        if end is None:
            continue
        tail = decl.group() if (decl := _DECLARATION_END.match(blob, end)) else ""  # it always matches, if only the empty string
        # a body follows, or the declaration interposes (weak, alias): a prototype alone is harmless
        if tail.endswith("{") or re.search(r"__attribute__|\bweak\b|\balias\b", blob[match.start() : end] + tail):
            found.append((match.group(1), match.start(1)))
    return [(f"std::chrono::{name}" if name.endswith("_clock") else "std::chrono" if name == "chrono" else name, at) for name, at in found]


def timing_symbols(diff_text: str) -> list[TimingSymbol]:
    """The clocks that a unified diff's added lines define, redefine, wrap or replace; a call to
    one is no finding. By the file's suffix:

    - C/C++/CUDA/HIP: `#define`, `#undef` or `#pragma weak` of a clock (clock_gettime,
      gettimeofday, clock, timespec_get, the CUDA/HIP event record/synchronize/elapsed-time
      calls, the std::chrono clocks); a function of that name with a body, or declared weak or
      as an alias; dlsym(..., "name") interposition; a struct, class, alias or now() of a chrono
      clock; a `namespace std::chrono`.
    - Python: an assignment, setattr, patch.object or patch("...") of time.perf_counter(_ns),
      time.time, time.monotonic, torch.cuda.Event (its elapsed_time, record, synchronize),
      torch.cuda.synchronize, triton.testing.do_bench, or of anything in builtins; `def
      perf_counter` (or elapsed_time, do_bench); a subclass of cuda.Event; sys.modules['time'].
    - Any file: a -Dname compiler flag of a C clock, or a `#define name` line (inline source).

    One entry per symbol and file, at its first line; sorted by symbol, then file."""
    found: dict[tuple[str, str], int] = {}
    for file, lines in _added(diff_text).items():
        blob = "\n".join(text for _, text in lines)
        starts = list(itertools.accumulate((len(text) + 1 for _, text in lines[:-1]), initial=0))
        suffix = posixpath.splitext(file)[1].lower()
        hits: list[tuple[str | None, int]] = [(m.group(1), m.start(1)) for m in _ANY_RULE.finditer(blob)]
        hits += _c_findings(blob) if suffix in C_SUFFIXES else []
        for rule, template, dotted in _PY_RULES if suffix in PY_SUFFIXES else []:
            for m in rule.finditer(blob):
                named = template.format(*m.groups())
                hits.append((_py_symbol(named) if dotted else named, m.start()))
        for symbol, at in hits:
            if symbol is not None:
                line = lines[bisect.bisect_right(starts, at) - 1][0]
                found[(symbol, file)] = min(line, found.get((symbol, file), line))
    return [TimingSymbol(symbol=s, file=f, line=n) for (s, f), n in sorted(found.items())]


def describe(reaches: list[Reach], limit: int = 8) -> list[str]:
    """One line (under 200 characters) per reach, at most `limit` lines, the last then saying how
    many more there are."""
    lines = []
    for reach in reaches:
        verb = "includes" if reach.how.startswith("#") else "imports"
        through = f" through {', '.join(reach.via)}" if reach.via else ""
        line = f"{reach.protected} {verb} {reach.editable} (editable){through}: the harness is not sealed against it"
        lines.append(line if len(line) < 200 else line[:196] + "...")
    if len(lines) > limit:
        shown = max(limit - 1, 0)
        return lines[:shown] + [f"(and {len(lines) - shown} more)"]
    return lines
