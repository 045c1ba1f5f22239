"""AMD with ROCm: hipcc/amdclang++, rocprofv3 (kernel trace as CSV or rocpd, counters in passes,
thread trace), amd-smi, HIP/ROCR_VISIBLE_DEVICES, performance determinism, the AMDGPU classifier.

Its modules: hipcc.py (the compiler), rocprofv3.py (profiler and tracer: command lines, counter
listing and presets, output folders), amd_smi.py (GPU listing and samples), usage.py (how busy each
GPU is, for the gate), clocks.py (performance determinism). The readers of what these tools write
that imports read too (rocpd databases, rocprofv3 CSVs, code.json traces, the AMDGPU assembly) are
shared parsers in the capability packages, below this one.

Measured peaks: calibrate.hip (copy bandwidth, packed FP32 FMA rate, BF16 MFMA rate), built with
hipcc for the GPU's gfx target and run on that GPU alone (platforms/calibrate.py).

Clocks: rocprofv3 does not hold them; `[harness] lock_clocks = true` asks amd-smi for
performance determinism around an evaluation (clocks.py says what it does and where it fails).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from kernel_mcp import runner, toolchain
from kernel_mcp.errors import BackendMissing, CommandFailed
from kernel_mcp.models.gpu import GpuInfo, GpuSample, MonitorQuery
from kernel_mcp.platforms.rocm.amd_smi import STATIC_ARGS, parse_amd_smi_static
from kernel_mcp.platforms.rocm.usage import AMD_METRIC_ARGS, ROCM_SMI_ARGS, parse_amd_smi_metric, parse_rocm_smi

if TYPE_CHECKING:  # types only: resolving a platform loads neither pandas nor the hardware tables
    import pandas as pd

    from kernel_mcp.hardware.specs import HardwareSpec
    from kernel_mcp.models.calibration import MeasuredPeaks
    from kernel_mcp.models.compile import BackendOutput, CompileJob
    from kernel_mcp.models.occupancy import Occupancy
    from kernel_mcp.models.platform import ProfileRequest, TraceRequest
    from kernel_mcp.models.profile import ProfileSummary
    from kernel_mcp.runner import ProgressFn, RunResult
    from kernel_mcp.workspace import Run, Workspace

AMD_COUNTERS_PER_PASS = 8


class RocmPlatform:
    name: str = "rocm"
    toolkit: str = "ROCm"
    maker: str = "AMD"
    gpu_vendor: str | None = "amd"
    profiler: str = "rocprofv3"
    outputs: tuple[str, ...] = ("rocprof", "rocpd")  # rocprofv3, rocprof-compute, legacy rocprof, rocpd databases
    flag_dialect: str = "clang"
    profiler_locks_clocks: bool = False
    inventory: tuple[MonitorQuery, ...] = (MonitorQuery("amd-smi", STATIC_ARGS, parse_amd_smi_static),)
    usage_monitors: tuple[MonitorQuery, ...] = (
        MonitorQuery("amd-smi", AMD_METRIC_ARGS, parse_amd_smi_metric),
        MonitorQuery("rocm-smi", ROCM_SMI_ARGS, parse_rocm_smi),
    )

    def installed(self) -> bool:
        return any(toolchain.find(tool) for tool in ("hipcc", "amdclang++")) or self.runs_here()

    def runs_here(self) -> bool:
        return any(toolchain.find(tool) for tool in ("rocprofv3", "amd-smi", "rocm-smi"))

    # -- compiler
    def builds_for(self, arch_vendor: str) -> bool:
        return arch_vendor == self.gpu_vendor

    def compiles(self, arch_vendor: str) -> bool:
        from kernel_mcp.platforms.rocm.hipcc import find_hipcc

        return self.builds_for(arch_vendor) and find_hipcc() is not None

    async def compile(self, job: CompileJob) -> BackendOutput:
        from kernel_mcp.platforms.rocm.hipcc import compile_rocm, find_hipcc

        compiler = find_hipcc()
        if compiler is None:
            raise BackendMissing("neither hipcc nor amdclang++ was found", hint="install ROCm or set platform = 'offline'")
        return await compile_rocm(job, compiler)

    def occupancy(self, spec: HardwareSpec, *, vgprs: int, agprs: int, sgprs: int, lds_bytes: int, block_size: int) -> Occupancy:
        from kernel_mcp.hardware.occupancy import amd_occupancy

        return amd_occupancy(spec, vgprs, agprs, sgprs, lds_bytes, block_size)

    # -- profiler
    def can_profile(self) -> bool:
        return toolchain.find(self.profiler) is not None

    def counter_base_name(self, name: str) -> str:
        return name  # rocprofv3 lists counters (and derived metrics) by their full names

    def profiled_clocks(self, lock_note: str | None) -> str:
        return lock_note or "free-running (rocprofv3 does not lock clocks)"

    async def tool_notes(self, cwd: Path) -> list[str]:
        if toolchain.find("rocprofv3") is None:
            return []
        from kernel_mcp.platforms.rocm.rocprofv3 import output_format

        fmt, why = await output_format(cwd)
        return [f"rocprofv3 output format in use: {fmt} ({why})"]

    async def profile(self, ws: Workspace, run: Run, request: ProfileRequest, progress: ProgressFn | None) -> tuple[ProfileSummary, list[str]]:
        import pandas as pd  # here: resolving a platform must not load pandas

        import kernel_mcp.platforms.rocm.rocprofv3 as rocprof
        from kernel_mcp.profile import counter_rows, peak_bandwidth
        from kernel_mcp.profile import counters as ctr
        from kernel_mcp.profile.summary import summarise

        cfg = ws.config.require_benchmark()
        out_dir = run.folder / "rocprofv3"
        fmt, why = await rocprof.output_format(request.root)
        result = await runner.run(
            rocprof.trace_argv(out_dir, cfg.command, request.kernel_regex, fmt=fmt),
            cwd=request.root,
            timeout_s=cfg.timeout_s * 2,
            env=request.env,
            log_dir=run.folder,
            log_name="rocprofv3",
            progress=progress,
            boundary=request.boundary,
        )
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
        chosen, choose_notes = ctr.choose(rocprof.COUNTER_PRESETS, self.counter_base_name, request.preset, request.counters, set(listing))
        notes += choose_notes
        frames: list[pd.DataFrame] = []

        async def one_pass(group: list[str]) -> tuple[pd.DataFrame | None, str | None]:
            folder = run.folder / f"pmc-{len(frames) + 1}-{secrets.token_hex(2)}"
            res = await runner.run(
                rocprof.trace_argv(folder, cfg.command, request.kernel_regex, group),
                cwd=request.root,
                timeout_s=cfg.timeout_s * 2,
                env=request.env,
                log_dir=run.folder,
                log_name=folder.name,
                progress=progress,
                boundary=request.boundary,
            )
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
        arch = request.gpu.arch if request.gpu is not None else None  # the gated GPU's own target picks the vendor's definitions
        from kernel_mcp.profile import gather, tables, vendor_metrics

        # the machine figures of the vendor's expressions: the agent_info.csv rocprofv3 wrote beside the counters, else the GPU's product table
        machine, machine_notes = vendor_metrics.machine_figures(
            arch, vendor_metrics.Machine({}, {}), gather.agent_rows(run.folder), request.gpu.product_entry() if request.gpu is not None else None
        )
        notes += machine_notes + [machine.note()]
        rows = pd.concat(frames)
        # per file (each pass, each process), the counters per dispatch: the vendor's metrics are computed per dispatch
        per_dispatch = [
            t for origin, part in rows.groupby("origin", sort=False) if (t := tables.dispatch_table(part, str(origin), vendor_metrics.wanted, rocpd=False))
        ]
        summary.counters = counter_rows(
            rows, durations, lambda c, t, k: ctr.derived_amd(c, t, peak, listing, arch, machine.values, vendor_metrics.kernel_columns(per_dispatch, k))
        )
        return summary, notes

    # -- tracer: rocprofv3's advanced thread trace, decoded into ui_output folders
    async def kernel_tracer(self, ws: Workspace) -> NoReturn:
        # rocprofv3's kernel trace costs little but wraps the command and has not been run inside the
        # ledger's pairs on an AMD GPU yet: the profiler keep metric profiles separate runs there.
        raise BackendMissing("no in-run kernel tracer on ROCm yet: the keep profile runs rocprofv3 --kernel-trace on runs of its own")

    def read_kernel_trace(self, folder: Path) -> NoReturn:
        raise BackendMissing("no in-run kernel tracer on ROCm yet")

    async def trace(self, ws: Workspace, run: Run, request: TraceRequest, progress: ProgressFn | None) -> RunResult:
        from kernel_mcp.platforms.rocm.rocprofv3 import option_value

        tool = toolchain.find("rocprofv3")
        if tool is None:
            raise BackendMissing("rocprofv3 not found", hint="install rocprofiler-sdk with the ROCprof Trace Decoder")
        cfg = ws.config.require_benchmark()
        options = request.options
        argv = [tool, "--att", "--kernel-include-regex", option_value(request.kernel_regex, "kernel_regex"), "-d", str(request.out)]
        if request.dispatch is not None:
            argv += ["--kernel-iteration-range", f"[{request.dispatch}]"]
        for flag, value in (
            ("--att-target-cu", options.target_cu),
            ("--att-shader-engine-mask", options.shader_engine_mask),
            ("--att-simd-select", options.simd_select),
            ("--att-buffer-size", options.buffer_size),
            ("--att-activity", options.activity),
        ):
            if value is not None:
                argv += [flag, str(value)]
        if options.serialize_all:
            argv += ["--att-serialize-all", "True"]
        return await runner.run(
            [*argv, "--", *cfg.command],
            cwd=request.root,
            timeout_s=cfg.timeout_s * 4,
            env=request.env,
            log_dir=run.folder,
            log_name="rocprofv3-att",
            progress=progress,
            boundary=request.boundary,
        )

    # -- monitor, pinning, clocks
    async def sample(self, gpu: GpuInfo, cwd: str) -> GpuSample | None:
        from kernel_mcp.platforms.rocm.amd_smi import sample

        return await sample(gpu, cwd)

    def pin_env(self, gpu: GpuInfo) -> dict[str, str]:
        return {"HIP_VISIBLE_DEVICES": str(gpu.index), "ROCR_VISIBLE_DEVICES": str(gpu.index)}

    async def lock_clocks(self, gpu: GpuInfo, cwd: str, sclk_mhz: int | None = None) -> str | None:
        from kernel_mcp.platforms.rocm.clocks import set_determinism

        return await set_determinism(gpu, cwd, sclk_mhz)

    async def unlock_clocks(self, gpu: GpuInfo, cwd: str) -> str | None:
        from kernel_mcp.platforms.rocm.clocks import reset_determinism

        return await reset_determinism(gpu, cwd)

    # -- measured peaks
    async def calibrate(self, gpu: GpuInfo, folder: Path) -> MeasuredPeaks:
        import kernel_mcp.platforms.calibrate as program
        from kernel_mcp.platforms.rocm.hipcc import find_hipcc

        compiler = find_hipcc()
        if compiler is None:
            raise BackendMissing(
                "neither hipcc nor amdclang++ was found: the calibration program (calibrate.hip) is built with one of them", hint="install ROCm"
            )
        # the gfx target the monitor reports (its feature suffix, ":sramecc+:xnack-", dropped), else the compiler's own probe
        reported = (gpu.arch or "").split(":")[0]
        target = reported if reported.startswith("gfx") else "native"
        source = Path(__file__).with_name("calibrate.hip")
        link = [] if Path(compiler).name.startswith("hipcc") else ["--hip-link"]  # amdclang++ links the HIP runtime only when told

        def argv(out: Path) -> list[str]:
            return [compiler, "-x", "hip", f"--offload-arch={target}", "-O3", *link, "-o", str(out), str(source)]

        binary, label = await program.build(source, folder, argv)
        return await program.measure(gpu, folder, binary, label, self.pin_env(gpu))

    # -- instruction set
    def classify(self, mnemonic: str) -> str:
        from kernel_mcp.compile.amdgpu_asm import classify

        return classify(mnemonic)


PLATFORM = RocmPlatform()
