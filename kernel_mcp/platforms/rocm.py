"""AMD with ROCm: hipcc/amdclang++, rocprofv3 (kernel trace as CSV or rocpd, counters in passes,
thread trace), amd-smi, HIP/ROCR_VISIBLE_DEVICES, performance determinism, the AMDGPU classifier.

Clocks: rocprofv3 does not hold them; `[harness] lock_clocks = true` asks amd-smi for
performance determinism around an evaluation (gpu/clocks.py says what it does and where it fails).
"""

from __future__ import annotations

import secrets
import time


from kernel_mcp import runner, toolchain
from kernel_mcp.errors import BackendMissing, CommandFailed

AMD_COUNTERS_PER_PASS = 8


class RocmPlatform:
    name = "rocm"
    toolkit = "ROCm"
    maker = "AMD"
    gpu_vendor = "amd"
    profiler = "rocprofv3"
    outputs = ("rocprof", "rocpd")  # rocprofv3, rocprof-compute, legacy rocprof, rocpd databases
    flag_dialect = "clang"
    profiler_locks_clocks = False

    def installed(self) -> bool:
        return any(toolchain.find(tool) for tool in ("hipcc", "amdclang++")) or self.runs_here()

    def runs_here(self) -> bool:
        return any(toolchain.find(tool) for tool in ("rocprofv3", "amd-smi", "rocm-smi"))

    # -- compiler
    def builds_for(self, arch_vendor: str) -> bool:
        return arch_vendor == self.gpu_vendor

    def compiles(self, arch_vendor: str) -> bool:
        from kernel_mcp.compile.rocm import find_hipcc

        return self.builds_for(arch_vendor) and find_hipcc() is not None

    async def compile(self, job):
        from kernel_mcp.compile.rocm import compile_rocm, find_hipcc

        compiler = find_hipcc()
        if compiler is None:
            raise BackendMissing("neither hipcc nor amdclang++ was found", hint="install ROCm or set platform = 'offline'")
        return await compile_rocm(job, compiler)

    def occupancy(self, spec, *, vgprs, agprs, sgprs, lds_bytes, block_size):
        from kernel_mcp.hardware.occupancy import amd_occupancy

        return amd_occupancy(spec, vgprs, agprs, sgprs, lds_bytes, block_size)

    # -- profiler
    def can_profile(self) -> bool:
        return toolchain.find(self.profiler) is not None

    def counter_base_name(self, name: str) -> str:
        return name  # rocprofv3 lists counters (and derived metrics) by their full names

    def profiled_clocks(self, lock_note: str | None) -> str:
        return lock_note or "free-running (rocprofv3 does not lock clocks)"

    async def profile(self, ws, run, request, progress):
        from kernel_mcp.profile import counter_rows, peak_bandwidth
        from kernel_mcp.profile import counters as ctr
        from kernel_mcp.profile import rocm as rocprof
        import pandas as pd  # here: resolving a platform must not load pandas

        from kernel_mcp.profile.summary import summarise

        cfg = ws.config.require_benchmark()
        out_dir = run.folder / "rocprofv3"
        fmt, why = await rocprof.output_format(request.root)
        result = await runner.run(rocprof.trace_argv(out_dir, cfg.command, request.kernel_regex, fmt=fmt), cwd=request.root, timeout_s=cfg.timeout_s * 2,
                                  env=request.env, log_dir=run.folder, log_name="rocprofv3", progress=progress, boundary=request.boundary)
        if not result.ok:
            raise CommandFailed(f"rocprofv3 gave {result.status()}", hint=result.stderr.tail[-400:] or None)
        databases = sorted(out_dir.rglob("*.db"))
        if fmt == "rocpd" and databases:
            from kernel_mcp.profile import rocpd

            summary = rocpd.summary(databases, cfg.target_kernel, [p.name for p in databases])
        else:
            summary = summarise(rocprof.read_trace_folder(out_dir), "rocprofv3", cfg.target_kernel)
        notes = [f"output format {fmt}: {why}"]
        if not (request.counters or request.preset):
            return summary, notes
        listing = await rocprof.list_avail(request.root, ws.state_dir / "cache" / "rocprofv3-list-avail.txt")
        chosen, choose_notes = ctr.choose(self, request.preset, request.counters, set(listing))
        notes += choose_notes
        frames: list = []

        async def one_pass(group: list[str]):
            folder = run.folder / f"pmc-{len(frames) + 1}-{secrets.token_hex(2)}"
            res = await runner.run(rocprof.trace_argv(folder, cfg.command, request.kernel_regex, group), cwd=request.root, timeout_s=cfg.timeout_s * 2,
                                   env=request.env, log_dir=run.folder, log_name=folder.name, progress=progress, boundary=request.boundary)
            why = rocprof.rejected(res)
            if why:
                return None, why
            if not res.ok:
                raise CommandFailed(f"rocprofv3 --pmc gave {res.status()}", hint=res.stderr.tail[-300:] or None)
            frame = rocprof.read_counters_folder(folder)
            if frame is None:
                raise CommandFailed(f"rocprofv3 --pmc wrote no counter_collection.csv for {', '.join(group)}")
            frames.append(frame)
            return frame, None

        _, pass_notes = await ctr.collect_in_passes(chosen, AMD_COUNTERS_PER_PASS, one_pass)
        notes += pass_notes + [f"counters collected in {len(frames)} pass(es), one profiler run each"]
        durations = {k.name: k.avg_us / 1e6 for k in summary.kernels}
        peak = peak_bandwidth(ws, request.gpu)
        summary.counters = counter_rows(pd.concat(frames), durations, lambda c, t: ctr.derived_amd(c, t, peak, listing))
        return summary, notes

    # -- tracer: rocprofv3's advanced thread trace, decoded into ui_output folders
    async def trace(self, ws, run, request, progress):
        from kernel_mcp.profile.rocm import option_value

        tool = toolchain.find("rocprofv3")
        if tool is None:
            raise BackendMissing("rocprofv3 not found", hint="install rocprofiler-sdk with the ROCprof Trace Decoder")
        cfg = ws.config.require_benchmark()
        options = request.options
        argv = [tool, "--att", "--kernel-include-regex", option_value(request.kernel_regex, "kernel_regex"), "-d", str(request.out)]
        if request.dispatch is not None:
            argv += ["--kernel-iteration-range", f"[{request.dispatch}]"]
        for flag, value in (("--att-target-cu", options.target_cu), ("--att-shader-engine-mask", options.shader_engine_mask),
                            ("--att-simd-select", options.simd_select), ("--att-buffer-size", options.buffer_size), ("--att-activity", options.activity)):
            if value is not None:
                argv += [flag, str(value)]
        if options.serialize_all:
            argv += ["--att-serialize-all", "True"]
        return await runner.run([*argv, "--", *cfg.command], cwd=request.root, timeout_s=cfg.timeout_s * 4, env=request.env,
                                log_dir=run.folder, log_name="rocprofv3-att", progress=progress, boundary=request.boundary)

    # -- monitor, pinning, clocks
    async def sample(self, gpu, cwd):
        from kernel_mcp.gpu import SAMPLE_TIMEOUT_S, monitor_output, pick
        from kernel_mcp.gpu import rocm as smi

        if toolchain.find("amd-smi") is None:
            return None
        started = time.time()
        try:
            text = await monitor_output("amd-smi", smi.sample_args(gpu), cwd, SAMPLE_TIMEOUT_S)
        except CommandFailed as exc:
            if not exc.message.endswith("gave exit 2"):
                return None
            # exit 2 is argparse refusing an option: --perf-level exists only on bare-metal Linux
            text = await monitor_output("amd-smi", smi.sample_args(gpu, smi.SAMPLE_GROUPS[:-1]), cwd, SAMPLE_TIMEOUT_S)
        return pick(smi.parse_amd_smi_metric_samples(text, (started + time.time()) / 2), gpu)

    def pin_env(self, gpu) -> dict[str, str]:
        return {"HIP_VISIBLE_DEVICES": str(gpu.index), "ROCR_VISIBLE_DEVICES": str(gpu.index)}

    async def lock_clocks(self, gpu, cwd, sclk_mhz=None) -> str | None:
        from kernel_mcp.gpu.clocks import set_determinism

        return await set_determinism(gpu, cwd, sclk_mhz)

    async def unlock_clocks(self, gpu, cwd) -> str | None:
        from kernel_mcp.gpu.clocks import reset_determinism

        return await reset_determinism(gpu, cwd)

    # -- instruction set
    def classify(self, mnemonic: str) -> str:
        from kernel_mcp.compile.amdgpu_asm import classify

        return classify(mnemonic)


PLATFORM = RocmPlatform()
