"""Which vendor tools this machine has: where each executable is and which version it reports.

ROCm tools are looked up in `$ROCM_PATH/bin` (ROCm's documented default prefix otherwise), CUDA
tools in `$CUDA_HOME/bin`, then on PATH. The offline compiler for AMD targets is the clang that the
`ziglang` wheel ships, run as `python -m ziglang clang`.
"""

from __future__ import annotations

import asyncio
import glob
import importlib.util
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from kernel_mcp import runner
from kernel_mcp.errors import CommandFailed

Vendor = Literal["rocm", "cuda", "offline"]
Role = Literal["compiler", "profiler", "gpu-monitor"]

VERSION_TIMEOUT_S = 20.0


class ExecutableInfo(BaseModel):
    name: str
    role: Role
    vendor: Vendor
    found: bool
    path: str | None = None
    version: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Probe:
    name: str
    role: Role
    vendor: Vendor
    version_args: tuple[str, ...]
    version_pattern: str
    install_hint: str


PROBES: tuple[Probe, ...] = (
    Probe("hipcc", "compiler", "rocm", ("--version",), r"HIP version:\s*(\S+)", "install ROCm (hipcc)"),
    Probe("amdclang++", "compiler", "rocm", ("--version",), r"clang version\s*(\S+)", "install ROCm (amdclang++)"),
    Probe("nvcc", "compiler", "cuda", ("--version",), r"release\s*([\d.]+)", "install the CUDA toolkit (nvcc)"),
    Probe("rocprofv3", "profiler", "rocm", ("--version",), r"(\d+\.\d+\.\d+\S*)", "install rocprofiler-sdk (rocprofv3)"),
    Probe(
        "cuobjdump",
        "compiler",
        "cuda",
        ("--version",),
        r"release\s*([\d.]+)",
        "install the CUDA toolkit (cuobjdump) or pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm",
    ),
    Probe("ncu", "profiler", "cuda", ("--version",), r"Version\s*([\d.]+)", "install Nsight Compute (ncu)"),
    Probe("nsys", "profiler", "cuda", ("--version",), r"([\d]+\.[\d.]+)", "install Nsight Systems (nsys)"),
    Probe("amd-smi", "gpu-monitor", "rocm", ("version", "--json"), r"", "install amd-smi (ROCm)"),
    Probe("rocm-smi", "gpu-monitor", "rocm", ("--version",), r"(\d+\.\d+\.\d+\S*)", "install rocm-smi (ROCm)"),
    Probe("nvidia-smi", "gpu-monitor", "cuda", ("--version",), r"(?:NVIDIA-SMI|DRIVER) version\s*:\s*(\S+)", "install the NVIDIA driver"),
)

OFFLINE_CLANG = "offline-clang"
OFFLINE_HINT = "pip install ziglang (clang with the AMDGPU backend, no ROCm needed)"


def _wheel_bin_dirs() -> list[str]:
    """bin/ folders of NVIDIA's pip wheels (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm...)."""
    found = []
    for entry in sys.path:
        found += sorted(glob.glob(os.path.join(entry, "nvidia", "cu*", "bin")))
    return found


def search_path() -> str:
    rocm = os.environ.get("ROCM_PATH", "/opt/rocm")
    cuda = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    parts = [os.environ.get("PATH", ""), os.path.join(rocm, "bin"), os.path.join(cuda, "bin"), *_wheel_bin_dirs()]
    return os.pathsep.join(p for p in parts if p)


def find(name: str) -> str | None:
    return shutil.which(name, path=search_path())


def offline_clang_argv() -> list[str] | None:
    """The argv prefix of the offline clang, or None when the ziglang wheel is not installed."""
    if importlib.util.find_spec("ziglang") is None:
        return None
    return [sys.executable, "-m", "ziglang", "clang"]


def parse_amd_smi_version(text: str) -> str | None:
    """`amd-smi version --json`: a list with one object (a banner may precede it)."""
    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        data = json.loads(text[start:])
    except ValueError:
        return None
    entry = data[0] if isinstance(data, list) and data else data
    if not isinstance(entry, dict):
        return None
    tool = entry.get("amdsmi_library_version") or entry.get("version")
    rocm = entry.get("rocm_version")
    return f"{tool} (ROCm {rocm})" if rocm and rocm != "N/A" else tool


def extract_version(probe: Probe, text: str) -> str | None:
    if probe.name == "amd-smi":
        return parse_amd_smi_version(text)
    match = re.search(probe.version_pattern, text)
    return match.group(1) if match else None


async def _version(argv: list[str], cwd: str) -> tuple[str | None, str | None]:
    try:
        result = await runner.run(argv, cwd=cwd, timeout_s=VERSION_TIMEOUT_S, tail_bytes=16384)
    except CommandFailed as exc:
        return None, exc.message
    text = result.stdout.tail + "\n" + result.stderr.tail
    if not result.ok:
        return text, f"`{' '.join(argv[-2:])}` gave {result.status()}"
    return text, None


async def probe_one(probe: Probe, cwd: str) -> ExecutableInfo:
    path = find(probe.name)
    if path is None:
        return ExecutableInfo(name=probe.name, role=probe.role, vendor=probe.vendor, found=False, note=probe.install_hint)
    text, problem = await _version([path, *probe.version_args], cwd)
    version = extract_version(probe, text or "") if text else None
    return ExecutableInfo(name=probe.name, role=probe.role, vendor=probe.vendor, found=True, path=path, version=version, note=problem)


async def probe_offline_clang(cwd: str) -> ExecutableInfo:
    argv = offline_clang_argv()
    if argv is None:
        return ExecutableInfo(name=OFFLINE_CLANG, role="compiler", vendor="offline", found=False, note=OFFLINE_HINT)
    text, problem = await _version([*argv, "--version"], cwd)
    match = re.search(r"clang version\s*(\S+)", text or "")
    return ExecutableInfo(
        name=OFFLINE_CLANG,
        role="compiler",
        vendor="offline",
        found=problem is None,
        path=" ".join(argv[1:]),
        version=match.group(1) if match else None,
        note=problem or "device-only compiles for AMD targets (no HIP runtime, no GPU)",
    )


async def probe_all(cwd: str) -> list[ExecutableInfo]:
    jobs = [probe_one(p, cwd) for p in PROBES] + [probe_offline_clang(cwd)]
    return list(await asyncio.gather(*jobs))
