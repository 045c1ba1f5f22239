"""Building and running a vendor's calibration program (cuda/calibrate.cu, rocm/calibrate.hip):
what the CUDA and ROCm platforms share of `calibrate`, each handing over its compiler's command.

The build is kept under the calibration folder (the workspace's `.kernel-mcp/calibration/build/`),
named by a digest of the source and the compile command, so that a changed program or target is
built anew and an unchanged one never again; it is written under a temporary name and renamed, so
that two calibrations at once (doctor measures every idle GPU together) never run a half-written
file. The run is the server's own program, not workspace code, and is not sealed; it is pinned to
the one GPU, killed at a time limit, and its output kept as a log beside the build.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from kernel_mcp import runner
from kernel_mcp.errors import CommandFailed
from kernel_mcp.models.calibration import MeasuredPeaks, now_utc, parse_calibration
from kernel_mcp.models.gpu import GpuInfo
from kernel_mcp.untrusted import inline

BUILD_TIMEOUT_S = 300.0
RUN_TIMEOUT_S = 120.0  # the programs take seconds; a hung GPU or driver is cut off here
_BUILDS: dict[tuple[int, str], asyncio.Lock] = {}


def _lock(path: Path) -> asyncio.Lock:
    # one per event loop: an asyncio lock that has waited once belongs to its loop
    return _BUILDS.setdefault((id(asyncio.get_running_loop()), str(path)), asyncio.Lock())


async def build(source: Path, folder: Path, compile_argv: Callable[[Path], list[str]], what: str = "the calibration program") -> tuple[Path, str]:
    """The program built from `source` by `compile_argv(output)`, and its name for the record
    ("calibrate.cu sha256:0123abcd..."): built once per source and command."""
    digest = hashlib.sha256(source.read_bytes() + "\0".join(compile_argv(Path("OUT"))).encode()).hexdigest()[:16]
    build_dir = folder / "build"
    binary = build_dir / f"{source.stem}-{digest}"
    label = f"{source.name} sha256:{digest}"
    async with _lock(binary):
        if binary.is_file() and not binary.is_symlink():
            return binary, label
        build_dir.mkdir(parents=True, exist_ok=True)
        partial = binary.with_name(f"{binary.name}.{os.getpid()}.partial")
        result = await runner.run(compile_argv(partial), cwd=build_dir, timeout_s=BUILD_TIMEOUT_S, log_dir=build_dir, log_name=f"build-{digest}")
        if not result.ok or not partial.is_file():
            partial.unlink(missing_ok=True)
            raise CommandFailed(f"building {what} {source.name} gave {result.status()}", hint=(result.stderr.tail or result.stdout.tail).strip()[-400:] or None)
        os.replace(partial, binary)
    return binary, label


async def measure(gpu: GpuInfo, folder: Path, binary: Path, label: str, env: dict[str, str]) -> MeasuredPeaks:
    """Run the built program on the one GPU `env` pins, and read what it printed."""
    logs = folder / "logs"
    started = now_utc()
    result = await runner.run([str(binary)], cwd=folder, timeout_s=RUN_TIMEOUT_S, env=env, log_dir=logs, log_name=f"gpu{gpu.index}-{started.replace(':', '')}")
    if not result.ok:
        said = [line.strip() for line in result.stderr.tail.splitlines() if line.strip()]
        raise CommandFailed(
            f"the calibration program {result.status()} on GPU {gpu.index}" + (f": {inline(said[-1][:300])}" if said else ""),
            hint=f"its output is kept in {folder.name}/{logs.name}/",
        )
    return parse_calibration(result.stdout.tail, gpu, program=label, measured_at=started)
