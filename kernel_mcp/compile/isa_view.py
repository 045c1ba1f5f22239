"""isa_view: a slice of a compiled kernel's ISA — by source line, by label, or by regex.

It reads the ISA kept by a compile run (the latest by default) and never returns the whole
listing unless asked; even then the answer is paged within the response budget.
"""

from __future__ import annotations


from kernel_mcp.compile import amdgpu_asm, nvidia
from kernel_mcp.patterns import AgentPattern
from kernel_mcp.errors import InvalidInput
from kernel_mcp.tooling import ToolOutput
from kernel_mcp.workspace import Run, Workspace

MAX_MATCHES = 12


class IsaSlice(ToolOutput):
    run_id: str
    kernel: str
    source: str
    mode: str
    lines_in_kernel: int
    shown: int
    matches: int | None = None
    text: str
    next_offset: int | None = None

    def render(self) -> str:
        head = f"{self.kernel} ({self.source}, run {self.run_id}), {self.mode}: {self.shown} of {self.lines_in_kernel} lines"
        if self.matches is not None:
            head += f", {self.matches} matches"
        tail = f"\n[more: offset={self.next_offset}]" if self.next_offset is not None else ""
        return head + "\n" + self.text + tail


def latest_compile(ws: Workspace, run_id: str | None) -> Run:
    if run_id:
        run = ws.runs.get(run_id)
        if run.meta().get("tool") != "compile_kernel":
            raise InvalidInput(f"run {run_id} is not a compile run")
        return run
    for run in ws.runs.recent(200):
        meta = run.meta()
        if meta.get("tool") == "compile_kernel" and meta.get("isa"):
            return run
    raise InvalidInput("no compile with an ISA listing in this workspace yet", hint="call compile_kernel first")


def _pick_kernel(bodies: dict[str, list[str]], kernel: str | None) -> str:
    if not bodies:
        raise InvalidInput("the ISA listing holds no kernel")
    if kernel is None:
        if len(bodies) == 1:
            return next(iter(bodies))
        raise InvalidInput("several kernels in this compile; name one", hint="kernels: " + ", ".join(amdgpu_asm.display_name(s) for s in bodies))
    exact = [s for s in bodies if s == kernel or amdgpu_asm.display_name(s) == kernel]
    partial = [s for s in bodies if kernel in s]
    chosen = exact or partial
    if len(chosen) != 1:
        raise InvalidInput(f"kernel {kernel!r} matches {len(chosen)} kernels", hint="kernels: " + ", ".join(amdgpu_asm.display_name(s) for s in bodies))
    return chosen[0]


def view(
    ws: Workspace,
    budget: int,
    kernel: str | None,
    source_line: int | None,
    label: str | None,
    pattern: str | None,
    context: int,
    full: bool,
    offset: int,
    run_id: str | None,
) -> IsaSlice:
    run = latest_compile(ws, run_id)
    meta = run.meta()
    isa_text = run.read_text(meta["isa"])  # a regular file of the run, never through a link
    source = meta.get("source", "?")
    is_sass = meta["isa"].endswith(".sass")
    bodies = nvidia.sass_listing(isa_text) if is_sass else amdgpu_asm.kernel_bodies(isa_text)
    symbol = _pick_kernel(bodies, kernel)
    numbered: list[tuple[int | None, str]]  # (source line, instruction)
    if is_sass:
        numbered = [(None, line) for line in bodies[symbol]]
    else:
        numbered = amdgpu_asm.annotate_lines(bodies[symbol], source.rsplit("/", 1)[-1])
    lines = [f"{i:5d} " + (f"[L{src}] " if src else "") + text.strip() for i, (src, text) in enumerate(numbered)]
    selected: list[int]
    matches = None
    if source_line is not None:
        if is_sass:
            raise InvalidInput("source-line slices need AMD ISA with line tables; SASS here has none", hint="use pattern or label")
        selected = [i for i, (src, _t) in enumerate(numbered) if src == source_line]
        matches = len(selected)
        if not selected:
            known = sorted({s for s, _ in numbered if s})
            raise InvalidInput(f"no instruction comes from line {source_line}", hint=f"lines with code: {known[:40]}")
        mode = f"source line {source_line}"
    elif label is not None:
        hits = [i for i, (_s, t) in enumerate(numbered) if t.strip().rstrip(":") == label.rstrip(":")]
        if not hits:
            raise InvalidInput(f"no label {label!r} in {amdgpu_asm.display_name(symbol)}")
        selected = list(range(hits[0], min(len(numbered), hits[0] + 2 * context + 1)))
        mode = f"label {label}"
    elif pattern is not None:
        hits = AgentPattern(pattern).matching(t.strip() for _s, t in numbered)
        matches = len(hits)
        keep: set[int] = set()
        for i in hits[:MAX_MATCHES]:
            keep.update(range(max(0, i - context), min(len(numbered), i + context + 1)))
        selected = sorted(keep)
        mode = f"pattern /{pattern}/"
    elif full:
        selected = list(range(offset, len(numbered)))
        mode = f"full listing from line {offset}"
    else:
        raise InvalidInput("say what to show: source_line, label, pattern, or full=true")
    out: list[str] = []
    used = 200
    next_offset = None
    previous = None
    for i in selected:
        if previous is not None and i != previous + 1:
            out.append("  ...")
        piece = lines[i]
        if used + len(piece) + 1 > budget:
            next_offset = i if full else None
            out.append("  ... [cut at the response budget]")
            break
        out.append(piece)
        used += len(piece) + 1
        previous = i
    return IsaSlice(
        run_id=run.id,
        kernel=amdgpu_asm.display_name(symbol),
        source=source,
        mode=mode,
        lines_in_kernel=len(numbered),
        shown=sum(1 for line in out if not line.startswith("  ...")),
        matches=matches,
        text="\n".join(out),
        next_offset=next_offset,
    )
