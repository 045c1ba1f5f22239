"""NVIDIA: nvcc and cuobjdump, ncu (kernel times, counters, source-level stall samples),
nvidia-smi, CUDA_VISIBLE_DEVICES, and the SASS classifier.

Its modules: nvcc.py (the compiler), ncu.py (profiler command lines, metric listing, presets and
derived metrics), nvidia_smi.py (GPU listing, how busy each GPU is, samples). The readers of ncu's
CSVs and of ptxas/cuobjdump/SASS, which imports and isa_view read too, are shared parsers in the
capability packages (profile/parsers.py, trace/ncu_source.py, compile/nvidia.py).

Measured peaks: calibrate.cu (copy bandwidth, FFMA rate, BF16 mma.sync rate, the SM clock seen),
built with nvcc for the GPU's arch and run on that GPU alone (platforms/calibrate.py).

Clocks: ncu holds them at base for a keep measurement (`--clock-control base`, its default);
nothing else is attempted (`nvidia-smi --lock-gpu-clocks` needs root).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp import runner, toolchain
from kernel_mcp.errors import BackendMissing, CommandFailed
from kernel_mcp.models.gpu import GpuInfo, GpuSample, MonitorQuery
from kernel_mcp.platforms.cuda.nvidia_smi import QUERY_ARGS, parse_nvidia_smi_xml

if TYPE_CHECKING:  # types only: resolving a platform loads neither pandas nor the hardware tables
    from kernel_mcp.hardware.specs import HardwareSpec
    from kernel_mcp.models.calibration import MeasuredPeaks
    from kernel_mcp.models.compile import BackendOutput, CompileJob
    from kernel_mcp.models.occupancy import Occupancy
    import pandas as pd

    from kernel_mcp.models.platform import KernelTracer, ProfileRequest, TraceRequest
    from kernel_mcp.models.profile import ProfileSummary
    from kernel_mcp.runner import ProgressFn, RunResult
    from kernel_mcp.workspace import Run, Workspace


class CudaPlatform:
    name: str = "cuda"
    toolkit: str = "CUDA"
    maker: str = "NVIDIA"
    gpu_vendor: str | None = "nvidia"
    profiler: str = "ncu"
    outputs: tuple[str, ...] = ("ncu",)
    flag_dialect: str = "nvcc"
    profiler_locks_clocks: bool = True
    inventory: tuple[MonitorQuery, ...] = (MonitorQuery("nvidia-smi", QUERY_ARGS, parse_nvidia_smi_xml),)
    usage_monitors: tuple[MonitorQuery, ...] = inventory  # one report says both: the GPUs, how busy each is and its processes

    def installed(self) -> bool:
        return toolchain.find("nvcc") is not None or self.runs_here()

    def runs_here(self) -> bool:
        return any(toolchain.find(tool) for tool in ("ncu", "nvidia-smi"))

    # -- compiler
    def builds_for(self, arch_vendor: str) -> bool:
        return arch_vendor == self.gpu_vendor

    def compiles(self, arch_vendor: str) -> bool:
        return self.builds_for(arch_vendor) and toolchain.find("nvcc") is not None

    async def compile(self, job: CompileJob) -> BackendOutput:
        from kernel_mcp.platforms.cuda.nvcc import compile_cuda

        return await compile_cuda(job)

    def occupancy(self, spec: HardwareSpec, *, vgprs: int, agprs: int, sgprs: int, lds_bytes: int, block_size: int) -> Occupancy:
        from kernel_mcp.hardware.occupancy import nvidia_occupancy

        return nvidia_occupancy(spec, vgprs, lds_bytes, block_size)  # no AGPRs or SGPRs on NVIDIA

    # -- profiler
    def can_profile(self) -> bool:
        return toolchain.find(self.profiler) is not None

    def counter_base_name(self, name: str) -> str:
        return name.split(".")[0]  # ncu lists metric bases; .sum/.avg/.pct_of_peak_... are roll-ups

    def profiled_clocks(self, lock_note: str | None) -> str:
        return "locked by ncu (--clock-control base) for the profiled runs; free-running for the benchmark's own runs"

    async def tool_notes(self, cwd: Path) -> list[str]:
        return []

    async def profile(self, ws: Workspace, run: Run, request: ProfileRequest, progress: ProgressFn | None) -> tuple[ProfileSummary, list[str]]:
        import pandas as pd  # here: resolving a platform must not load pandas

        import kernel_mcp.platforms.cuda.ncu as ncu
        from kernel_mcp.profile import counter_rows, peak_bandwidth
        from kernel_mcp.profile import counters as ctr
        from kernel_mcp.profile.parsers import ncu_dispatches
        from kernel_mcp.profile.summary import summarise

        cfg = ws.config.require_benchmark()
        wants_counters = bool(request.counters or request.preset)
        listing = await ncu.list_metrics(request.root, ws.state_dir / "cache" / "ncu-metrics.txt") if wants_counters else None
        chosen, notes = ctr.choose(ncu.COUNTER_PRESETS, self.counter_base_name, request.preset, request.counters, listing) if wants_counters else ([], [])
        log = run.path("ncu.csv")
        result = await runner.run(
            ncu.argv(log, cfg.command, request.kernel_regex, chosen, request.lock_clocks),
            cwd=request.root,
            timeout_s=cfg.timeout_s * 4,
            env=request.env,
            log_dir=run.folder,
            log_name="ncu",
            progress=progress,
            boundary=request.boundary,
        )
        if not result.ok or not log.exists():
            raise CommandFailed(f"ncu gave {result.status()}", hint=(result.stderr.tail or result.stdout.tail)[-400:] or None)
        frame, metrics = ncu_dispatches(log.read_text())
        summary = summarise(frame, "ncu", cfg.target_kernel)
        if chosen:
            long = pd.DataFrame(
                [
                    {"dispatch": d, "kernel": k, "counter": name, "value": value}
                    for d, k in zip(frame["dispatch"], frame["kernel"])
                    for name, value in metrics.get(int(d), {}).items()
                    if name in chosen
                ]
            )
            durations = {k.name: k.avg_us / 1e6 for k in summary.kernels}
            peak = peak_bandwidth(ws, request.gpu)
            summary.counters = counter_rows(long, durations, lambda c, t, _kernel: ncu.derived(c, t, peak)) if not long.empty else []
        return summary, notes

    # -- kernel tracer: CUPTI activity records inside ordinary benchmark runs (the keep metric's)
    async def kernel_tracer(self, ws: Workspace) -> KernelTracer:
        import kernel_mcp.platforms.calibrate as program
        import kernel_mcp.platforms.cuda.kernel_trace as tracer
        from kernel_mcp.models.platform import KernelTracer as Tracer

        nvcc = toolchain.find("nvcc")
        if nvcc is None:
            raise BackendMissing("nvcc not found: the kernel tracer (kernel_trace.cpp) is built with it", hint="install the CUDA toolkit")
        argv = tracer.compile_argv(nvcc)
        library, label = await program.build(tracer.SOURCE, ws.state_dir / "cache" / "kernel-trace", lambda out: [*argv, str(out)], "the kernel tracer")
        return Tracer(name=f"CUPTI kernel activity records ({label})", env={"CUDA_INJECTION64_PATH": str(library)}, folder_env=tracer.FOLDER_ENV)

    def read_kernel_trace(self, folder: Path) -> tuple[pd.DataFrame, list[str]]:
        import kernel_mcp.platforms.cuda.kernel_trace as tracer

        return tracer.read(folder)

    # -- tracer: ncu's full set with source counters, exported as the SASS source page
    async def trace(self, ws: Workspace, run: Run, request: TraceRequest, progress: ProgressFn | None) -> RunResult:
        tool = toolchain.find("ncu")
        if tool is None:
            raise BackendMissing("ncu not found", hint="install Nsight Compute")
        cfg = ws.config.require_benchmark()
        request.out.mkdir(parents=True, exist_ok=True)
        report = request.out / "trace.ncu-rep"
        argv = [
            tool,
            "--set",
            "full",
            "--import-source",
            "yes",
            "-k",
            f"regex:{request.kernel_regex}",
            "-c",
            "1",
            "--target-processes",
            "all",
            "--clock-control",
            "none",
            "-o",
            str(report.with_suffix("")),
        ]
        if request.dispatch is not None:
            argv += ["--launch-skip", str(request.dispatch)]
        result = await runner.run(
            [*argv, "--", *cfg.command],
            cwd=request.root,
            timeout_s=cfg.timeout_s * 4,
            env=request.env,
            log_dir=run.folder,
            log_name="ncu-full",
            progress=progress,
            boundary=request.boundary,
        )
        if result.ok:
            page = await runner.run(
                [tool, "--import", str(report), "--page", "source", "--csv", "--print-source", "sass"], cwd=ws.root, timeout_s=600, tail_bytes=256 * 2**20
            )
            if not page.ok:
                raise CommandFailed(f"ncu --import --page source gave {page.status()}", hint=page.stderr.tail[-300:] or None)
            (request.out / "source_sass.csv").write_text(page.stdout.tail)
        return result

    # -- monitor, pinning, clocks
    async def sample(self, gpu: GpuInfo, cwd: str) -> GpuSample | None:
        from kernel_mcp.platforms.cuda.nvidia_smi import sample

        return await sample(gpu, cwd)

    def pin_env(self, gpu: GpuInfo) -> dict[str, str]:
        return {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": gpu.uuid or str(gpu.index)}

    async def lock_clocks(self, gpu: GpuInfo, cwd: str, sclk_mhz: int | None = None) -> str | None:
        return None  # ncu locks them itself for profiled runs; nvidia-smi's lock needs root

    async def unlock_clocks(self, gpu: GpuInfo, cwd: str) -> str | None:
        return None

    # -- measured peaks
    async def calibrate(self, gpu: GpuInfo, folder: Path) -> MeasuredPeaks:
        from kernel_mcp.arch_registry import arch_for_gpu
        import kernel_mcp.platforms.calibrate as program

        nvcc = toolchain.find("nvcc")
        if nvcc is None:
            raise BackendMissing("nvcc not found: the calibration program (calibrate.cu) is built with it", hint="install the CUDA toolkit")
        # the GPU's own arch where its tables know it ("Hopper" -> sm_90), else what nvcc finds on this machine
        target = arch_for_gpu(self.gpu_vendor, gpu.name, gpu.arch, gpu.device_id, gpu.compute_units) or "native"
        source = Path(__file__).with_name("calibrate.cu")
        binary, label = await program.build(source, folder, lambda out: [nvcc, "-O3", f"-arch={target}", "-o", str(out), str(source)])
        return await program.measure(gpu, folder, binary, label, self.pin_env(gpu))

    # -- instruction set
    def classify(self, mnemonic: str) -> str:
        from kernel_mcp.compile.nvidia import classify_sass

        return classify_sass(mnemonic)


PLATFORM = CudaPlatform()
