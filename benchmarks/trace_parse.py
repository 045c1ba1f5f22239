"""Summarise a large decoded thread trace: throughput and peak memory.

    python benchmarks/trace_parse.py [--gigabytes 1.0]

The trace is generated in the real format: rocprofv3's UI output, one
`ui_output_agent_1_dispatch_<n>/code.json` per traced dispatch with the header, row layout and
indentation of the recorded ROCm 7.1 file in the shared fixtures (PC-sampling columns included),
for a kernel of 20,000 instructions. The summary runs in a fresh process that reports its peak
memory (VmHWM). Targets: at least 100 MB/s, under 1 GB.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEADER = ["ISA", "_", "LineNumber", "Source", "Codeobj", "Vaddr", "Hit", "Latency", "Stall", "Idle", "PC_Issued", "PC_Stalled", "Stall_Reasons"]
OPS = [
    "v_fmac_f32_e32 v{a}, v{b}, v{c}",
    "ds_read_b128 v[{a}:{d}], v{b} offset:{o}",
    "s_waitcnt lgkmcnt({s})",
    "global_load_dwordx4 v[{a}:{d}], v[{b}:{c}], off",
    "s_waitcnt vmcnt({s})",
    "v_pk_fma_f32 v[{a}:{c}], v[{b}:{c}], v[{a}:{c}], v[{b}:{c}]",
    "s_barrier",
    "s_add_u32 s{s}, s{s}, 1",
    "v_mfma_f32_16x16x32_bf16 a[0:3], v[{a}:{c}], v[{b}:{c}], a[0:3]",
]

MEASURE = """
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
t = time.perf_counter()
from kernel_mcp.platforms import VENDORS
from kernel_mcp.trace import summarise_folder
s = summarise_folder(Path(sys.argv[1]), "conv3d_fast", "bench", vendors=VENDORS)
seconds = time.perf_counter() - t
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(seconds, int(hwm) / 1024, s.instructions, s.total)
"""


def write_dispatch(folder: Path, rng: random.Random, instructions: int) -> int:
    folder.mkdir(parents=True)
    rows = [["; _Z18conv3d_fast_kernelILi4EEvPK6__bf16", 0, 0, "void conv3d_fast_kernel<4>(...)", 2, 4096, 0, 0, 0, 0, 0, 0, [0] * 10]]
    for i in range(1, instructions):
        a, b = rng.randrange(0, 200), rng.randrange(0, 200)
        op = OPS[i % len(OPS)].format(a=a, b=b, c=b + 1, d=a + 3, o=16 * (i % 64), s=i % 8)
        stalled = rng.randrange(0, 50)
        reasons = [0] * 10
        reasons[3 if "waitcnt" in op else 2] = stalled
        rows.append([op, 0, i, f"kernels/conv3d_depthwise/src/fast.hip:{40 + i % 300}", 2, 4096 + 4 * i, 0, 0, 0, 0, rng.randrange(0, 30), stalled, reasons])
    text = json.dumps({"code": rows, "header": HEADER, "version": "3.0.0"}, indent=4)
    (folder / "code.json").write_text(text)
    (folder / "filenames.json").write_text(
        json.dumps({"counter_names": [], "gfxip": 9, "pc_sampling": True, "thread_trace": False, "version": "3.0.0", "wave_filenames": None})
    )
    return len(text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gigabytes", type=float, default=1.0)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        size, n = 0, 0
        while size < args.gigabytes * 1e9:
            size += write_dispatch(root / f"ui_output_agent_1_dispatch_{n + 1}", rng, 20_000)
            n += 1
        done = subprocess.run([sys.executable, "-c", MEASURE.format(repo=str(REPO)), str(root)], capture_output=True, text=True, check=True)
        seconds, peak, instructions, total = done.stdout.split()
        seconds, peak = float(seconds), float(peak)
        rate = size / seconds / 1e6
        print(f"trace: {n} dispatches, {size / 1e9:.2f} GB of code.json; {instructions} distinct instructions, {float(total):.0f} samples")
        print(
            f"summary: {seconds:.1f} s = {rate:.0f} MB/s, peak {peak:.0f} MB; target >= 100 MB/s, < 1024 MB: {'met' if rate >= 100 and peak < 1024 else 'MISSED'}"
        )


if __name__ == "__main__":
    main()
