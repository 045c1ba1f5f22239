"""Time of compile_kernel against calling the same compiler directly on the same file.

    python benchmarks/compile_overhead.py [--rounds 10]

The tool goes through the in-memory MCP client and does everything it does for an agent (run
folder, resource remarks, metadata and ISA parsing, occupancy, history); the direct call runs the
same clang command line (the offline gfx950 compile) with subprocess. Medians, side by side,
interleaved. Target: ratio under 1.10.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from kernel_mcp.platforms.offline.clang import include_flags  # noqa: E402
from kernel_mcp.server import build_server  # noqa: E402

SOURCES = ["src/naive.hip", "src/lds.hip", "src/fast.hip"]


def direct_argv(source: str, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ziglang",
        "clang",
        "-x",
        "hip",
        "--offload-arch=gfx950",
        "--cuda-device-only",
        "-nogpulib",
        "-O3",
        "-S",
        "-gline-tables-only",
        "-Rpass-analysis=kernel-resource-usage",
        "-o",
        str(out),
        *include_flags(),
        source,
    ]


async def measure(ws: Path, rounds: int) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {s: {"direct": [], "tool": []} for s in SOURCES}
    async with Client(build_server(ws)) as client:
        for _ in range(rounds):
            for source in SOURCES:
                t = time.perf_counter()
                subprocess.run(direct_argv(source, ws / "direct.s"), cwd=ws, capture_output=True, check=True)
                out[source]["direct"].append(time.perf_counter() - t)
                t = time.perf_counter()
                result = await client.call_tool("compile_kernel", {"source": source, "arch": "gfx950"})
                out[source]["tool"].append(time.perf_counter() - t)
                assert not result.is_error
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        shutil.copytree(REPO / "kernels" / "conv3d_depthwise" / "src", ws / "src")
        (ws / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
        results = anyio.run(measure, ws, args.rounds)
    print(f"{'source':<16} {'direct s':>9} {'tool s':>8} {'ratio':>6}")
    ratios = []
    for source, r in results.items():
        d, t = statistics.median(r["direct"]), statistics.median(r["tool"])
        ratios.append(t / d)
        print(f"{source:<16} {d:>9.3f} {t:>8.3f} {t / d:>6.3f}")
    print(f"worst ratio {max(ratios):.3f}; target < 1.10: {'met' if max(ratios) < 1.10 else 'MISSED'}")


if __name__ == "__main__":
    main()
