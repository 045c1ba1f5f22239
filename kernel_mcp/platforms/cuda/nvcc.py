"""NVIDIA: nvcc to a cubin with `-Xptxas -v`, then `cuobjdump -res-usage` and `cuobjdump -sass`."""

from __future__ import annotations

from kernel_mcp import runner, toolchain
from kernel_mcp.compile import nvidia
from kernel_mcp.errors import BackendMissing
from kernel_mcp.models.compile import BackendOutput, CompileJob

CUBIN_NAME = "kernel.cubin"
SASS_NAME = "kernel.sass"


def _reserved_per_block(arch: str) -> int | None:
    from kernel_mcp.hardware import load_spec

    value = load_spec(arch).get("shared_memory_reserved_per_block_bytes")
    return int(value) if value else None


async def compile_cuda(job: CompileJob) -> BackendOutput:
    nvcc = toolchain.find("nvcc")
    if nvcc is None:
        raise BackendMissing("nvcc not found", hint="install the CUDA toolkit")
    cubin = job.run.path(CUBIN_NAME)
    arch = job.arch  # sm_90
    argv = [
        nvcc,
        "-x",
        "cu",
        f"-arch={arch}",
        *job.optimization(),
        "-cubin",
        "-o",
        str(cubin),
        "-Xptxas",
        "-v",
        "-lineinfo",
        *job.defines,
        *job.flags,
        *job.include_flags(),
        job.source_argument(),
    ]
    result = await runner.run(argv, cwd=job.ws.root, timeout_s=job.timeout_s, log_dir=job.run.folder, log_name="compiler", progress=job.progress)
    text = result.stdout.tail + "\n" + result.stderr.tail
    notes: list[str] = []
    res_usage = sass = ""
    if result.ok:
        cuobjdump = toolchain.find("cuobjdump")
        tool_env = {"PATH": toolchain.search_path()}  # cuobjdump -sass runs nvdisasm
        if cuobjdump is None:
            notes.append("cuobjdump not found: no SASS instruction mix (install the CUDA toolkit's cuobjdump)")
        else:
            res = await runner.run(
                [cuobjdump, "-res-usage", str(cubin)], cwd=job.ws.root, timeout_s=60, log_dir=job.run.folder, log_name="res-usage", env=tool_env
            )
            res_usage = res.stdout.tail
            dump = await runner.run(
                [cuobjdump, "-sass", str(cubin)], cwd=job.ws.root, timeout_s=120, log_dir=job.run.folder, log_name="sass", tail_bytes=64 * 2**20, env=tool_env
            )
            if dump.ok:
                sass = dump.stdout.tail
                job.run.write_text(SASS_NAME, sass)
            else:
                notes.append(f"cuobjdump -sass gave {dump.status()}: {dump.stderr.tail[-200:]}")
    kernels = nvidia.kernels_from(text, res_usage, sass) if result.ok else []
    if result.ok:
        notes += nvidia.shared_memory_notes(text, res_usage, _reserved_per_block(job.arch))
    return BackendOutput("nvcc", False, result, kernels, SASS_NAME if sass else None, notes)
