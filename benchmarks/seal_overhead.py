"""What the boundary adds to each run of workspace code, measured side by side on this machine.

    python benchmarks/seal_overhead.py [--runs 40] [--code "import torch"] [--landlock-only]

Runs a do-nothing Python command (or the Python code given) through the runner, sealed (Landlock, and the PID/mount/user
namespaces where the machine allows them) and unsealed in turn (ABBA order, so drift cancels), and
prints the median wall time of each and the difference: the fixed cost a sealed run pays, whatever
the benchmark does. Divide it by a run's own time (a reduced conv3d run: about 4.8 s on an H200) for
its share.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_mcp import runner, sandbox


async def main(runs: int, code: str) -> None:
    problem = sandbox.available()
    if problem:
        raise SystemExit(f"no boundary here: {problem}")
    sealed: list[float] = []
    plain: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        tree, state = Path(folder, "tree"), Path(folder, "state")
        tree.mkdir()
        state.mkdir()
        with sandbox.side(tree, state, "overhead") as boundary:
            for i in range(runs):
                order = (True, False) if (i % 2 == 0) == ((i // 2) % 2 == 0) else (False, True)
                for with_boundary in order:
                    began = time.perf_counter()
                    result = await runner.run([sys.executable, "-c", code], cwd=tree, timeout_s=60, boundary=boundary if with_boundary else None)
                    assert result.ok, result.stderr.tail
                    (sealed if with_boundary else plain).append(time.perf_counter() - began)
    print(f"boundary: {sandbox.mechanism()}; command: python -c {code!r}")
    print(
        f"runs: {runs} each; median sealed {statistics.median(sealed) * 1e3:.1f} ms, unsealed {statistics.median(plain) * 1e3:.1f} ms, "
        f"added {(statistics.median(sealed) - statistics.median(plain)) * 1e3:.1f} ms per run"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--code", default="pass", help="the Python code each run executes (a CUDA start: 'import torch; torch.zeros(1, device=\"cuda\")')")
    parser.add_argument("--landlock-only", action="store_true", help="no namespaces of the run's own: what Landlock alone costs")
    args = parser.parse_args()
    if args.landlock_only:
        os.environ[sandbox.NAMESPACES_ENV] = "off"
    anyio.run(main, args.runs, args.code)
