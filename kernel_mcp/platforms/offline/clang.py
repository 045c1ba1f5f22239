"""AMD device code without ROCm: the clang of the `ziglang` wheel, AMDGPU backend.

With no HIP installation it force-includes the project's device prelude (and stand-ins for
<hip/hip_runtime.h> and friends) so ordinary HIP kernels compile unchanged. It is a device-only
compile: host code is parsed but not built, and nothing can run.

The compiler's own headers (<stddef.h>, <stdint.h>, <float.h>, <limits.h>, ...) ship in the wheel,
but where `python -m ziglang clang` looks for them is not where they are (its resource directory
is computed from the zig binary's place, one folder too high), so the compile names the folder
that holds them. The host's system folders are left out (-nostdlibinc): their C and C++ library
headers declare host functions, and what compiled would depend on the machine.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from collections.abc import Iterable
from pathlib import Path

from kernel_mcp import runner, toolchain
from kernel_mcp.compile import amdgpu_asm
from kernel_mcp.errors import BackendMissing
from kernel_mcp.models.compile import BackendOutput, CompileJob, output_lines

ISA_NAME = "kernel.s"
PRELUDE_DIR = Path(__file__).with_name("prelude")  # HIP device stand-ins for a compile without ROCm
# the headers of clang's resource directory an ordinary kernel includes (the full set is larger)
COMPILER_HEADERS = ("stddef.h", "stdint.h", "float.h", "limits.h", "stdbool.h", "stdarg.h")
_NOT_FOUND = re.compile(r"fatal error: '([^']+)' file not found")


def hip_headers() -> Path | None:
    """An installed ROCm/HIP whose headers can be used instead of the prelude."""
    root = Path(os.environ.get("ROCM_PATH", "/opt/rocm"))
    return root if (root / "include" / "hip" / "hip_runtime.h").exists() else None


@functools.cache
def resource_dir() -> Path | None:
    """The folder whose include/ holds the offline clang's own headers (ziglang/lib), or None."""
    spec = importlib.util.find_spec("ziglang")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "lib"
        if (candidate / "include" / "stddef.h").is_file() and (candidate / "include" / "float.h").is_file():
            return candidate
    return None


def prelude_headers() -> list[str]:
    """The header names the prelude stands in for (<hip/hip_runtime.h>, <cmath>, ...)."""
    root = PRELUDE_DIR / "include"
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def include_flags() -> list[str]:
    """The include setup of a compile with the prelude: the compiler's own headers, the stand-ins,
    the force-included prelude, and nothing of the host's."""
    found = resource_dir()
    compiler_headers = ["-resource-dir", str(found)] if found is not None else []
    return ["-nogpuinc", "-nostdlibinc", *compiler_headers, "-isystem", str(PRELUDE_DIR / "include"), "-include", str(PRELUDE_DIR / "kernel_mcp_hip_prelude.h")]


def amdgpu_flags(job: CompileJob, isa: Path) -> list[str]:
    return [
        "-x",
        "hip",
        f"--offload-arch={job.arch}",
        "--cuda-device-only",
        "-nogpulib",
        *job.optimization(),
        "-S",
        "-gline-tables-only",
        "-Rpass-analysis=kernel-resource-usage",
        "-o",
        str(isa),
        *job.defines,
        *job.flags,
        *job.include_flags(),
    ]


def missing_header_notes(lines: Iterable[str]) -> list[str]:
    """What to do about headers the offline compile could not find, instead of clang's bare
    "'x' file not found" (once per header)."""
    missing = list(dict.fromkeys(match.group(1) for line in lines if (match := _NOT_FOUND.search(line))))
    if not missing:
        return []
    named = ", ".join(f"<{name}>" for name in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    provided = ", ".join(f"<{name}>" for name in [*prelude_headers(), *COMPILER_HEADERS])
    return [
        f"{named} not provided by the offline compile: without ROCm it has the compiler's own headers and kernel-mcp's "
        f"stand-ins for the device side of HIP and of the C and C++ libraries ({provided}); host-side library headers "
        "(<vector>, <cstdio>, <iostream>, ...) are not there, and the workspace's own header folders only when kernel-mcp.toml's "
        "[compile] include_dirs names them. Keep host code out of the device compile (#if !defined(__HIP_DEVICE_COMPILE__)), "
        "name the header's folder in [compile] include_dirs, or compile where ROCm is installed"
    ]


async def compile_offline(job: CompileJob) -> BackendOutput:
    prefix = toolchain.offline_clang_argv()
    if prefix is None:
        raise BackendMissing("no compiler for AMD targets here: neither ROCm nor the offline clang", hint=toolchain.OFFLINE_HINT)
    isa = job.run.path(ISA_NAME)
    headers = hip_headers()
    if headers is not None:
        include = [f"--rocm-path={headers}"]
        note = f"device-only compile with the offline clang and the HIP headers of {headers}"
    else:
        include = include_flags()
        note = "device-only compile with the offline clang and kernel-mcp's HIP device prelude (no ROCm here): resource figures are the compiler's, nothing was run"
    argv = [*prefix, *amdgpu_flags(job, isa), *include, job.source_argument()]
    result = await runner.run(argv, cwd=job.ws.root, timeout_s=job.timeout_s, log_dir=job.run.folder, log_name="compiler", progress=job.progress)
    asm = isa.read_text(encoding="utf-8", errors="replace") if result.ok and isa.exists() else ""
    kernels, checks = amdgpu_asm.read_kernels(asm, output_lines(result)) if result.ok else ([], [])
    if not result.ok and headers is None:
        checks = missing_header_notes(output_lines(result))
    return BackendOutput("offline-clang", True, result, kernels, ISA_NAME if asm else None, [note, *checks])
