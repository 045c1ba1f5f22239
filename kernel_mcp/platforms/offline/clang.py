"""AMD device code without ROCm: the clang of the `ziglang` wheel, AMDGPU backend.

With no HIP installation it force-includes the project's device prelude (and stand-ins for
<hip/hip_runtime.h> and friends) so ordinary HIP kernels compile unchanged. It is a device-only
compile: host code is parsed but not built, and nothing can run.
"""

from __future__ import annotations

import os
from pathlib import Path

from kernel_mcp import runner, toolchain
from kernel_mcp.compile import amdgpu_asm
from kernel_mcp.errors import BackendMissing
from kernel_mcp.models.compile import BackendOutput, CompileJob, output_lines

ISA_NAME = "kernel.s"
PRELUDE_DIR = Path(__file__).with_name("prelude")  # HIP device stand-ins for a compile without ROCm


def hip_headers() -> Path | None:
    """An installed ROCm/HIP whose headers can be used instead of the prelude."""
    root = Path(os.environ.get("ROCM_PATH", "/opt/rocm"))
    return root if (root / "include" / "hip" / "hip_runtime.h").exists() else None


def amdgpu_flags(job: CompileJob, isa: Path) -> list[str]:
    return [
        "-x", "hip", f"--offload-arch={job.arch}", "--cuda-device-only", "-nogpulib",
        *job.optimization(), "-S", "-gline-tables-only", "-Rpass-analysis=kernel-resource-usage",
        "-o", str(isa), *job.defines, *job.flags, *job.include_flags(),
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
        include = ["-nogpuinc", "-isystem", str(PRELUDE_DIR / "include"), "-include", str(PRELUDE_DIR / "kernel_mcp_hip_prelude.h")]
        note = "device-only compile with the offline clang and kernel-mcp's HIP device prelude (no ROCm here): resource figures are the compiler's, nothing was run"
    argv = [*prefix, *amdgpu_flags(job, isa), *include, job.source_argument()]
    result = await runner.run(argv, cwd=job.ws.root, timeout_s=job.timeout_s, log_dir=job.run.folder, log_name="compiler", progress=job.progress)
    asm = isa.read_text(encoding="utf-8", errors="replace") if result.ok and isa.exists() else ""
    kernels, checks = amdgpu_asm.read_kernels(asm, output_lines(result)) if result.ok else ([], [])
    return BackendOutput("offline-clang", True, result, kernels, ISA_NAME if asm else None, [note, *checks])
