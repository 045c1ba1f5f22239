"""AMD targets with ROCm installed: hipcc (amdclang++) with --save-temps, full compile.

The device assembly that --save-temps keeps carries the code object's metadata (the
`amdhsa.kernels` block that goes into the object's note) and each kernel's `; Kernel info:`
comments (the compiler's `; Occupancy:` among them), so figures and ISA come from one file; the
resource remarks on stderr are read too and cross-checked against it.
"""

from __future__ import annotations

from kernel_mcp import runner, toolchain
from kernel_mcp.compile import amdgpu_asm
from kernel_mcp.models.compile import BackendOutput, CompileJob, output_lines

OBJECT_NAME = "kernel.o"


def find_hipcc() -> str | None:
    return toolchain.find("hipcc") or toolchain.find("amdclang++")


async def compile_rocm(job: CompileJob, compiler: str) -> BackendOutput:
    obj = job.run.path(OBJECT_NAME)
    argv = [
        compiler,
        "-x",
        "hip",
        f"--offload-arch={job.arch}",
        *job.optimization(),
        "-c",
        "-o",
        str(obj),
        "-save-temps=obj",
        "-gline-tables-only",
        "-Rpass-analysis=kernel-resource-usage",
        *job.defines,
        *job.flags,
        *job.include_flags(),
        job.source_argument(),
    ]
    result = await runner.run(argv, cwd=job.ws.root, timeout_s=job.timeout_s, log_dir=job.run.folder, log_name="compiler", progress=job.progress)
    saved = sorted(job.run.folder.glob(f"*-hip-amdgcn-amd-amdhsa-{job.arch}*.s"))
    asm = saved[0].read_text(encoding="utf-8", errors="replace") if saved else ""
    # With --save-temps the backend runs on its own and prints its remarks message-first
    # (`remark: k.hip:12:0: VGPRs: 90`); amdgpu_remarks reads that order as well as clang's.
    kernels, notes = amdgpu_asm.read_kernels(asm, output_lines(result)) if result.ok else ([], [])
    if result.ok and not asm:
        notes.append("hipcc succeeded but kept no device assembly (--save-temps): figures from its resource remarks only")
    return BackendOutput("hipcc", False, result, kernels, saved[0].name if saved else None, notes)
