"""One compile: what every backend receives, and what it hands back."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kernel_mcp.compile.models import KernelFacts
from kernel_mcp.runner import ProgressFn, RunResult
from kernel_mcp.workspace import Run, Workspace

COMPILE_TIMEOUT_S = 300.0
PRELUDE_DIR = Path(__file__).with_name("prelude")


@dataclass
class CompileJob:
    ws: Workspace
    source: Path  # absolute, inside the workspace
    source_rel: str
    arch: str
    defines: list[str]  # already -DNAME=VALUE
    flags: list[str]
    run: Run
    progress: ProgressFn | None = None
    timeout_s: float = COMPILE_TIMEOUT_S

    def source_argument(self) -> str:
        """The source as the compiler's argv names it: absolute, so that no name (`-x.hip`,
        `@opts.hip`) can ever be read as an option or a response file of options."""
        if not self.source.is_absolute():
            raise ValueError("a compile job's source must be an absolute path")
        return str(self.source)

    def optimization(self) -> list[str]:
        """-O3 unless the caller chose a level."""
        return [] if any(f.startswith("-O") for f in self.flags) else ["-O3"]


@dataclass
class BackendOutput:
    backend: str
    device_only: bool
    result: RunResult
    kernels: list[KernelFacts]
    isa_file: str | None  # artifact name of the ISA listing (AMD .s or NVIDIA SASS)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.result.ok

    def diagnostic_lines(self) -> Iterator[str]:
        return output_lines(self.result)


def output_lines(result: RunResult) -> Iterator[str]:
    """Every line the compiler printed, from the logs on disk (the tails only if none were kept):
    the resource remarks come after the front end's warnings, so a tail can lose them."""
    for capture in (result.stderr, result.stdout):
        if capture.log_path is not None and capture.log_path.exists():
            with capture.log_path.open(encoding="utf-8", errors="replace") as log:
                yield from log
        else:
            yield from capture.tail.splitlines()
