"""No work twice: a candidate whose code is BEST's, or that of an earlier attempt judged against this
BEST, is decided "duplicate" from that, without a run.

What counts as the same code is the tree's code fingerprint: a sha256 over every file of the
candidate's commit, each editable C-family source or header (.hip, .cu, .cpp, .h, ...) and each
editable Python file by its tokens with comments and layout left out, and every other file (a
config, a text file, whatever is protected) by its exact content. Two trees that differ only in
comments, blank lines or indentation of the editable code have one fingerprint; any other
difference, a #define's value or a file the benchmark reads, gives two. Paths count relative to
the repository, so the same files in two worktrees are the same code.

The fingerprint is of the source, not of the device code a compile makes of it, because that
compile does not see all of what runs: the offline compile is device-only (a workspace's
host-side launchers and planners, which choose the kernel and its launch shape, are not compiled
at all, and a portable header may leave them out when the compile is offline, as the bundled
example's does), a target arch can differ from the GPU that runs the benchmark (an edit of the
CUDA branch of a kernel built for gfx950 leaves gfx950's code unchanged, while an H100 runs that
branch), and the benchmark builds with flags and macros of its own. Equal device code there would
decide changes that do change what runs; equal source tokens never do.

Only a decision about the code itself is reused: one that measured it (or found it wrong), with the
same target class, against the same BEST. A failure or a refusal may not repeat (a crash, a
timeout, an edit during the runs) and is measured again; so is a keep that was not kept (it would
otherwise never be keepable again), and the one repeat of a gain under the noise threshold that
the rule of "the same direction twice in a row" asks for. `[harness] measure_same_code = true`
measures every candidate (A/A calibration runs measure BEST against itself on purpose).
"""

from __future__ import annotations

import hashlib
import io
import re
import tokenize
from dataclasses import dataclass
from typing import TYPE_CHECKING

import git

from kernel_mcp.errors import KernelMcpError
from kernel_mcp.ledger import harness
from kernel_mcp.ledger.performance import FILE_NAME as PERFORMANCE
from kernel_mcp.ledger.state import Attempt, Experiment, attempt_head
from kernel_mcp.ledger.store import now
from kernel_mcp.workspace.config import HarnessConfig

if TYPE_CHECKING:
    from kernel_mcp.ledger.core import Ledger

FORMAT = "kernel-mcp code fingerprint 1\n"  # changes with any change of what is normalized, so old fingerprints never match new ones
C_FAMILY = (".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".cuh", ".hip", ".h", ".hh", ".hpp", ".hxx", ".inl", ".ipp", ".tpp", ".cl")
PYTHON = (".py",)
MAX_NORMALIZED_BYTES = 4 * 2**20  # a larger editable file counts by its exact content
# Decisions about the code itself; a failure or a refusal may not repeat, a duplicate points to its original.
SETTLED = ("keep", "suspicious", "split-suggested", "undecided", "discard", "not-corroborated", "repair-needed")
_CACHE_LIMIT = 8192
_normalized: dict[tuple[str, str], str] = {}  # (git object id, language) -> digest; content-addressed, so never stale

# Backslash-newline splices lines before comments are seen (clang accepts blanks between the two).
_SPLICE = re.compile(r"\\[ \t\f\v]*\r?\n")
_C_LEXEME = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/)
    |(?P<literal>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\(.*?\)(?P=delim)"
       |(?:u8|[uUL])?"(?:\\.|[^"\\\n])*"
       |(?:u8|[uUL])?'(?:\\.|[^'\\\n])*')
    |(?P<number>\.?\d(?:[eEpP][+-]|'\w|[\w.])*)
    |(?P<newline>\n)
    |(?P<space>[^\S\n]+)
    |(?P<word>\w+)
    |(?P<punct>.)""",
    re.S | re.X,
)


def normalized_c(text: str) -> str | None:
    """The tokens of a C, C++, HIP or CUDA file as the compiler reads them, comments and layout out:
    a gap between two tokens is one space, or a newline where it ends a preprocessor directive (or
    comes before one), since only there does a line end mean something. None where the file cannot
    be read so with certainty (an unterminated comment; a raw string with a line splice in the file)."""
    text = text.removeprefix("\ufeff")
    if 'R"' in text and _SPLICE.search(text):
        return None  # a raw string keeps its backslash-newlines; splicing them all would be wrong there
    text = _SPLICE.sub("", text)
    pieces: list[str] = []
    gap = newline = False
    directive = ended_directive = False
    line_start = True
    for m in _C_LEXEME.finditer(text):
        kind = m.lastgroup
        if kind in ("comment", "space"):
            gap = True
            continue
        if kind == "newline":
            gap = newline = line_start = True
            ended_directive = ended_directive or directive
            directive = False
            continue
        token = m.group()
        if token == "/" and text.startswith("*", m.end()):
            return None  # a /* that never ends
        starts_directive = line_start and (token == "#" or (token == "%" and text.startswith(":", m.end())))
        if pieces and gap:
            pieces.append("\n" if newline and (ended_directive or starts_directive) else " ")
        pieces.append(token)
        directive = directive or starts_directive
        gap = newline = ended_directive = line_start = False
    return "".join(pieces)


def normalized_python(text: str) -> str | None:
    """The tokens of a Python file, comments, blank lines and indentation widths out (its encoding
    declaration stays: it decides what its string literals hold). None where it does not tokenize."""
    lines: list[str] = []
    try:
        for tok in tokenize.tokenize(io.BytesIO(text.encode("utf-8")).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL):
                continue
            shown = "" if tok.type in (tokenize.INDENT, tokenize.NEWLINE) else tok.string
            lines.append(f"{tokenize.tok_name[tok.type]} {shown!r}")
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    return "\n".join(lines)


def _language(rel: str) -> str | None:
    lowered = rel.lower()
    if lowered.endswith(C_FAMILY):
        return "c"
    if lowered.endswith(PYTHON):
        return "python"
    return None


def _normalized_digest(repo: git.Repo, oid: str, language: str) -> str | None:
    key = (oid, language)
    if key in _normalized:
        return _normalized[key]
    text = repo.git.cat_file("blob", oid, strip_newline_in_stdout=False)
    if "\ufffd" in text:
        return None  # not UTF-8 (or it holds the replacement character): its bytes count as they are
    normal = normalized_c(text) if language == "c" else normalized_python(text)
    if normal is None:
        return None
    digest = hashlib.sha256(normal.encode("utf-8")).hexdigest()
    if len(_normalized) >= _CACHE_LIMIT:
        _normalized.clear()
    _normalized[key] = digest
    return digest


def fingerprint(repo: git.Repo, commit: str, subdir: str, rules: HarnessConfig) -> str | None:
    """The code fingerprint of a commit's whole tree (the module's docstring says what it counts),
    or None where git cannot list or read it (then nothing is decided from it)."""
    prefix = "" if subdir == "." else subdir.rstrip("/") + "/"
    try:
        listing = repo.git.ls_tree("-r", "-z", "-l", "--full-tree", commit, strip_newline_in_stdout=False)
        entries = []
        for entry in listing.split("\0"):
            if not entry:
                continue
            meta, _, path = entry.partition("\t")
            mode, kind, oid, size = meta.split()
            rel = path[len(prefix) :] if path.startswith(prefix) else None
            language = _language(rel) if rel is not None and rel != PERFORMANCE and not harness.is_protected(rel, rules) else None
            digest = None
            if language and kind == "blob" and mode in ("100644", "100755") and size.isdigit() and int(size) <= MAX_NORMALIZED_BYTES:
                digest = _normalized_digest(repo, oid, language)
            entries.append(f"{path}\0{mode}\0{f'{language} {digest}' if digest else f'{kind} {oid}'}\n")
    except (git.GitCommandError, KernelMcpError, ValueError):
        return None
    total = hashlib.sha256(FORMAT.encode())
    for line in sorted(entries):
        total.update(line.encode("utf-8", "surrogateescape"))
    return total.hexdigest()


@dataclass(frozen=True)
class Twin:
    """What a candidate's code was already decided as: BEST itself, or an earlier attempt."""

    attempt: int | None  # BEST's attempt, or the earlier attempt the decision is quoted from
    reason: str


def _quoted(a: Attempt) -> str:
    why = (a.reasons or [""])[-1 if a.decision == "discard" else 0]
    return f"#{a.id} ({a.decision}/{a.outcome}{': ' + why[:160] if why else ''})"


def _measured_again(earlier: list[Attempt]) -> bool:
    """Whether the rule asks for this code to be measured once more: a gain under the noise
    threshold counts only when it shows twice in a row, so the one earlier measurement of it that
    moved faster (a discard, not a regression) is repeated once, never more."""
    return len(earlier) == 1 and earlier[0].decision == "discard" and earlier[0].evidence.direction == -1 and not earlier[0].regression


def find_twin(ledger: Ledger, exp: Experiment, repo: git.Repo, code: str | None, target: str | None, tree: str) -> Twin | None:
    """BEST, or the latest earlier attempt whose decision stands for a candidate of fingerprint
    `code` and git tree `tree` (module docstring); None when it must be measured."""
    if code is None or ledger.ws.config.harness.measure_same_code:
        return None
    if fingerprint(repo, exp.best_commit, exp.subdir, ledger.ws.config.harness) == code:
        return Twin(
            exp.best_attempt,
            f"same code as BEST ({exp.best_commit[:10]}, attempt #{exp.best_attempt}): its editable files differ from BEST's "
            "in comments and layout at most, so there is nothing to measure",
        )
    earlier = [
        a
        for a in ledger.store.attempts_with_code(exp.tag, exp.best_commit, code)
        if a.decision in SETTLED and a.target_class == target and not (a.decision in ("keep", "suspicious") and a.outcome != "pending")
    ]
    if not earlier or _measured_again(earlier):
        return None
    latest = earlier[-1]
    also = f"; measured {len(earlier)} times: " + ", ".join(f"#{a.id} {a.decision}" for a in earlier[-6:]) if len(earlier) > 1 else ""
    keep_it = ""
    if latest.decision in ("keep", "suspicious"):  # a keep commits exactly the files it measured
        keep_it = f"; experiment_keep(attempt={latest.id}) keeps it" + ("" if latest.diff_hash == tree else ", with that candidate's own files")
    return Twin(
        latest.id,
        f"same code as attempt {_quoted(latest)}, judged against this BEST with the same target: its editable files differ from that "
        f"candidate's in comments and layout at most, so its decision stands and nothing was run{also}{keep_it}",
    )


def duplicate_fields(exp: Experiment, twin: Twin, hypothesis: str, target: str | None, files: list[str], digest: str, code: str, **evidence) -> dict:
    """The attempt row of a duplicate: recorded and closed at once, with no figures (nothing ran)."""
    return dict(
        **attempt_head(exp, hypothesis, target, files, digest),
        decision="duplicate",
        reasons=[twin.reason],
        outcome="not kept",
        closed=now(),
        evidence={"code_fingerprint": code, "same_as": twin.attempt, **evidence},
    )
