"""Dynamic LDS (shared memory): declared in the source, sized only at launch.

`extern __shared__ T name[];` (or HIP's `HIP_DYNAMIC_SHARED(T, name)`) gets its size from the
launch, so no compiler figure holds it: the AMDGPU resource remark's `LDS Size` and ptxas's
`bytes smem` are the static part only. A compile answer that printed that figure alone said
"LDS 0 B" for a kernel that uses tens of KiB. Here the source (and the workspace headers it
includes with quotes) is read for such declarations, so the answer can say the dynamic part is
unknown, or count the size the caller gives.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

# `extern __shared__ float s[]`, `extern "C" __shared__ ...` is not C++ but compilers accept
# attributes and qualifiers between the two words: `extern __attribute__((aligned(16))) __shared__`
_EXTERN_SHARED = re.compile(r"\bextern\s+(?:(?:const|volatile|__attribute__\s*\(\([^;{}]*?\)\)|alignas\s*\([^)]*\))\s+)*__shared__\b")
_HIP_MACRO = re.compile(r"\bHIP_DYNAMIC_SHARED\s*\(")
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
MAX_FILES = 64  # the source and the headers it includes, transitively
MAX_BYTES = 4 << 20  # per file: a larger one is not a kernel source or header


def _without_comments(text: str) -> str:
    """Comments blanked out, line breaks kept (so line numbers still match the file)."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _read(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _files(source: Path, root: Path) -> Iterator[tuple[Path, str]]:
    """The source, then the headers it includes with quotes that lie inside the workspace."""
    seen: set[Path] = set()
    queue = [source.resolve()]
    while queue and len(seen) < MAX_FILES:
        path = queue.pop(0)
        if path in seen or (path != root and root not in path.parents):
            continue
        seen.add(path)
        text = _read(path)
        if text is None:
            continue
        text = _without_comments(text)
        yield path, text
        queue += [(path.parent / name).resolve() for name in _INCLUDE.findall(text)]


def declarations(source: Path, root: Path) -> list[str]:
    """Where the source declares dynamic LDS, as `file:line` relative to the workspace root."""
    found = []
    for path, text in _files(source, root):
        for pattern in (_EXTERN_SHARED, _HIP_MACRO):
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(root).as_posix()}:{line}")
    return sorted(set(found), key=lambda where: (where.rsplit(":", 1)[0], int(where.rsplit(":", 1)[1])))
