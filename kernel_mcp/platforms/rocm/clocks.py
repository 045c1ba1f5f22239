"""Holding an AMD GPU's clocks steady while measuring (`[harness] lock_clocks = true`).

AMD's tool for this is performance determinism: `amd-smi set --gpu N --perf-determinism SCLKMAX`
sets the DPM level to DETERMINISM and caps the graphics clock at SCLKMAX MHz, so that it does not
wander with silicon, temperature and voltage; `amd-smi reset --gpu N --perf-determinism` goes back to
AUTO. rocm-smi spells them `--setperfdeterminism SCLK` and `--resetperfdeterminism`. Source: AMD SMI
documentation, "Performance levels and performance determinism"
(https://rocm.docs.amd.com/projects/amdsmi/en/latest/conceptual/perf-determinism.html; in
ROCm/rocm-systems projects/amdsmi/docs/conceptual/perf-determinism.md) and the `amd-smi set` /
`amd-smi reset` help in its CLI page (how-to/amdsmi-cli-tool.md). The same page says support is
firmware-dependent: MI200 supports it, MI300 parts vary (MI300A yes, MI308X NOT_SUPPORTED), MI350
has it defeatured, consumer RDNA 3/4 does not. So the answer is always a statement of what was
done or why not, taken from the tool, never an assumption that it worked.

On NVIDIA nothing is attempted: ncu locks clocks to base itself while profiling (its
--clock-control default), and `nvidia-smi --lock-gpu-clocks` needs root.
"""

from __future__ import annotations

import kernel_mcp.platforms.rocm.amd_smi as amd_smi
from kernel_mcp import runner, toolchain
from kernel_mcp.gpu import sample_by
from kernel_mcp.models.gpu import GpuInfo

CONTROL_TIMEOUT_S = 30.0
DETERMINISM = "DETERMINISM"


def _selector(gpu: GpuInfo) -> str:
    return gpu.bus_id or str(gpu.index)  # amd-smi --gpu takes its ID, a BDF or a UUID


def _why(result: runner.RunResult) -> str:
    text = (result.stderr.tail + "\n" + result.stdout.tail).strip()
    if "elevation" in text or "ermission" in text or "EACCES" in text:
        # amd-smi raises PermissionError('Command requires elevation') on AMDSMI_STATUS_NO_PERM
        return "no permission (setting performance determinism needs root or the driver's sysfs write access)"
    if "NOT_SUPPORTED" in text or "not supported" in text.lower():
        return "this GPU's firmware does not support performance determinism"
    last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
    return f"{result.status()}" + (f": {last[:200]}" if last else "")


async def _control(gpu: GpuInfo, cwd: str, amd_smi_args: list[str], rocm_smi_args: list[str]) -> tuple[str, runner.RunResult] | tuple[None, None]:
    """Run the amd-smi form, else the rocm-smi one; (tool, result), or (None, None) with neither."""
    for name, args in (("amd-smi", amd_smi_args), ("rocm-smi", rocm_smi_args)):
        path = toolchain.find(name)
        if path is not None:
            return name, await runner.run([path, *args], cwd=cwd, timeout_s=CONTROL_TIMEOUT_S)
    return None, None


async def set_determinism(gpu: GpuInfo, cwd: str, sclk_mhz: int | None = None) -> str:
    """Put an AMD GPU into performance determinism, the graphics clock capped at `sclk_mhz` (by
    default the GPU's own maximum, as amd-smi reports it). A statement of what was done or why not."""
    if toolchain.find("amd-smi") is None and toolchain.find("rocm-smi") is None:
        return "neither amd-smi nor rocm-smi is installed: clocks not locked"
    if sclk_mhz is None:
        before = await sample_by(amd_smi.sample, gpu, cwd)
        if before is None or before.sm_clock_max_mhz is None:
            return f"GPU {gpu.index}: its maximum graphics clock is unknown (amd-smi metric did not report it): clocks not locked"
        sclk_mhz = int(before.sm_clock_max_mhz)
    sel = _selector(gpu)
    tool, result = await _control(
        gpu, cwd, ["set", "--gpu", sel, "--perf-determinism", str(sclk_mhz)], ["-d", str(gpu.index), "--setperfdeterminism", str(sclk_mhz)]
    )
    if result is None:
        return "neither amd-smi nor rocm-smi is installed: clocks not locked"
    if not result.ok:
        return f"GPU {gpu.index}: {tool} could not set performance determinism at {sclk_mhz} MHz: {_why(result)}; clocks not locked"
    after = await sample_by(amd_smi.sample, gpu, cwd)
    level = after.perf_level if after is not None else None
    if level is not None and level != DETERMINISM:
        return f"GPU {gpu.index}: {tool} accepted performance determinism at {sclk_mhz} MHz but the DPM level reads {level}: clocks not locked"
    seen = f"DPM level {level}" if level else "the DPM level could not be read back"
    return f"GPU {gpu.index}: performance determinism on via {tool}, graphics clock capped at {sclk_mhz} MHz ({seen})"


async def reset_determinism(gpu: GpuInfo, cwd: str) -> str:
    """Leave performance determinism (DPM level back to AUTO). A statement of what was done."""
    tool, result = await _control(gpu, cwd, ["reset", "--gpu", _selector(gpu), "--perf-determinism"], ["-d", str(gpu.index), "--resetperfdeterminism"])
    if result is None:
        return "neither amd-smi nor rocm-smi is installed: nothing to unlock"
    if not result.ok:
        return f"GPU {gpu.index}: {tool} could not leave performance determinism: {_why(result)}"
    return f"GPU {gpu.index}: performance determinism off via {tool} (DPM level back to automatic)"
