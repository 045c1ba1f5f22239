"""End-to-end runs of the server on a real GPU, through the real MCP client (in memory).

    python benchmarks/device_e2e.py tools  --out DIR   compile (nvcc), profile (ncu), thread traces of steps 1, 3, 5
    python benchmarks/device_e2e.py noise  --out DIR --trials 40 [--keep-metric csv|profiler] [--minutes 20 --idle-every 8]
                                                        A/A: the same code evaluated against itself, spread over time,
                                                        some trials right after the GPU sat idle
    python benchmarks/device_e2e.py ab     --out DIR --trials 20   A/B: a change that adds about 2% of work
                                                        (calibrated first against the same build without it)
    python benchmarks/device_e2e.py seal-cost --out DIR --trials 8   the same A/A evaluation with the boundary on and
                                                        off in turn (KERNEL_MCP_SEAL): what sealing costs
    python benchmarks/device_e2e.py many   --out DIR   four candidates through experiment_evaluate_many (timeline per candidate)
    python benchmarks/device_e2e.py hacks  --out DIR   three GPU reward hacks refused, a real faster kernel kept
                                                        (one full kernel-opt round: baseline, hypothesis, evaluate, keep)
    python benchmarks/device_e2e.py rmsnorm --out DIR  a new user's memory-bound workspace (bf16 RMSNorm, two passes):
                                                        a side stream, output caching and a kernel that drops the
                                                        tail columns refused, a one-pass kernel kept; the answers
                                                        name the product whose roofline floor they used

Each works on a fresh git copy of the example workspace (rmsnorm: of
benchmarks/workspaces/rmsnorm_bf16) and writes a JSON log and the tool
answers to DIR. The A/A and A/B runs use a reduced benchmark (two shapes, 10 timed calls, two
runs per evaluation) and the benchmark's own metric, so that 60 evaluations fit in the lease.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from kernel_mcp.ledger.decide import KEEPABLE  # noqa: E402
from kernel_mcp.server import build_server  # noqa: E402

EXAMPLE = REPO / "kernels" / "conv3d_depthwise"
SCRATCH = Path(tempfile.gettempdir()) / "kernel-mcp-e2e"
LOG: list[dict] = []
NO_PRELOAD = False  # --no-preload


def workspace(root: Path, command: list[str] | None = None, extra: str = "", repeats: int | None = None, source: Path = EXAMPLE) -> Path:
    """A fresh git repository at `root` holding a copy of the workspace `source` (the conv3d example
    by default), its benchmark command and repeats replaced when given, `extra` appended to its
    kernel-mcp.toml."""
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("out", "build", ".kernel-mcp", "__pycache__"))
    toml = root / "kernel-mcp.toml"
    text = toml.read_text()
    if command:
        text, replaced = re.subn(r"^command = \[.*\]$", lambda _: "command = " + json.dumps(command), text, count=1, flags=re.M)
        assert replaced == 1, f"no benchmark command line in {toml}"
    if repeats:
        assert "\nrepeats = " in text, f"no repeats line in {toml}"
        text = re.sub(r"^repeats = \d+$", f"repeats = {repeats}", text, count=1, flags=re.M)
    if NO_PRELOAD:  # the runs as plain processes, each importing its modules itself
        text = re.sub(r"^preload = \[.*\]\n", "", text, flags=re.M)
    toml.write_text(text + extra)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=kmcp", "-c", "user.email=k@example.invalid", "commit", "-qm", "example"], check=True)
    return root


async def call(client: Client, tool: str, **arguments) -> dict:
    started = time.time()
    result = await client.call_tool(tool, arguments)
    text = "\n".join(b.text for b in result.content)
    LOG.append({"tool": tool, "arguments": arguments, "error": bool(result.is_error), "text": text, "start": started, "end": time.time()})
    print(f"--- {tool} {json.dumps(arguments)[:160]} ({time.time() - started:.1f} s)\n{text[:1800]}\n", flush=True)
    return {"error": bool(result.is_error), "text": text, "data": result.structured_content or {}}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


async def tools(out: Path) -> None:
    ws = workspace(SCRATCH / "ws-tools", extra='\n[commands]\nnaive = ["python3", "bench.py", "--impls", "naive", "--shapes", "x3d_res3", "--repeats", "3"]\n')
    async with Client(build_server(ws)) as client:
        await call(client, "doctor")
        await call(client, "gpu_status")
        for src in ("src/naive.hip", "src/lds.hip", "src/mfma.hip", "src/fast.hip"):
            await call(client, "compile_kernel", source=src, arch="sm_90")
        await call(client, "isa_view", kernel="conv3d_fast_kernel<8, 4>", pattern="LDS|FFMA", context=0)
        await call(client, "compile_kernel", source="src/lds.hip", arch="gfx950")
        p1 = await call(client, "profile_kernels")
        await call(client, "profile_kernels", kernel_regex="conv3d_fast", preset="memory")
        await call(client, "profile_kernels", kernel_regex="conv3d_fast", preset="occupancy")
        p2 = await call(client, "profile_kernels")
        if not p1["error"] and not p2["error"]:
            await call(client, "profile_compare", run_a=p1["data"]["run_id"], run_b=p2["data"]["run_id"])
    keep_compiler_logs(ws, out / "nvcc-logs.tar.gz")
    traces = {}
    for step, impl in (("1", "naive"), ("3", "lds"), ("5", "lds_sgb")):
        tws = workspace(SCRATCH / f"ws-trace-{impl}", command=["python3", "bench.py", "--impls", impl, "--shapes", "x3d_res3", "--repeats", "3"])
        async with Client(build_server(tws)) as client:
            traces[step] = await call(client, "thread_trace", kernel_regex=f"conv3d_{impl}")
            await call(client, "compile_kernel", source=f"src/{impl}.hip", arch="sm_90")
    (out / "traces.json").write_text(json.dumps({k: v["data"] for k, v in traces.items()}, indent=1, default=str))


def keep_compiler_logs(ws: Path, archive: Path) -> None:
    """nvcc's own words (ptxas -v, cuobjdump -res-usage) for every compile of the run: the real
    outputs that the compile parsers are held to, kept as test data of this toolkit's version."""
    import tarfile

    with tarfile.open(archive, "w:gz") as tar:
        for log in sorted((ws / ".kernel-mcp" / "runs").glob("*compile_kernel*/*.log")):
            if log.name.startswith(("compiler.", "res-usage.")):
                tar.add(log, arcname=f"{log.parent.name}/{log.name}")


NOISE_COMMAND = ["python3", "bench.py", "--impls", "fast", "--shapes", "x3d_res3,seg3d_64", "--repeats", "10"]
CSV_METRIC = "\n[server]\nresponse_budget_bytes = 4096\n"


RMSNORM = REPO / "benchmarks" / "workspaces" / "rmsnorm_bf16"


def noise_workspace(name: str, keep_metric: str, source: str = "example") -> Path:
    """The reduced benchmark's workspace (or the RMSNorm workspace as it is) with the keep metric set
    and committed; "profiler-ncu" is the profiler metric measured by ncu on runs of its own."""
    if source == "rmsnorm":
        ws = workspace(SCRATCH / f"ws-{name}", source=RMSNORM)
    else:
        ws = workspace(SCRATCH / f"ws-{name}", command=NOISE_COMMAND, repeats=2)
    setting = 'keep_metric = "profiler"\nkernel_times = "profiler"' if keep_metric == "profiler-ncu" else f'keep_metric = "{keep_metric}"'
    # the trials measure unchanged code again and again on purpose: measure_same_code
    text = (ws / "kernel-mcp.toml").read_text().replace('keep_metric = "auto"', setting + "\nmeasure_same_code = true")
    (ws / "kernel-mcp.toml").write_text(text)
    subprocess.run(["git", "-C", str(ws), "-c", "user.name=kmcp", "-c", "user.email=k@example.invalid", "commit", "-qam", f"{keep_metric} metric"], check=True)
    return ws


# An unchanged candidate answered any of these was decided wrong: kept, or a gain or a split claimed
# (undecided is reached only from a gain beyond the threshold whose other classes were not shown safe).
A_A_WRONG = (*KEEPABLE, "undecided")


async def trials(
    out: Path,
    n: int,
    slower: bool,
    keep_metric: str = "csv",
    minutes: float = 0.0,
    idle_every: int = 0,
    idle_s: float = 60.0,
    name: str | None = None,
    deadline_s: float = 0.0,
    source: str = "example",
) -> dict:
    """`n` evaluations of unchanged code (A/A) or of the calibrated slower change (A/B).

    Spread over time as a user meets it: trial i starts no earlier than i * minutes / n after the
    first, and before every `idle_every`-th trial the GPU sits idle for `idle_s` seconds (its clocks
    cool down), so drift and cold starts happen during the trials, not between them."""
    rows = []
    name = name or ("ab" if slower else "aa") + ("-" + keep_metric if keep_metric != "csv" else "") + ("-" + source if source != "example" else "")
    per_experiment = 4 if slower else 10  # A/B trials are regressions: 5 in a row would stop the run
    ws = noise_workspace(name, keep_metric, source)
    import sqlite3

    first = time.time()
    async with Client(build_server(ws)) as client:
        for i in range(n):
            if deadline_s and time.time() - first > deadline_s:
                print(f"--- deadline: {i} of {n} trials done", flush=True)
                break
            cold = bool(idle_every) and i > 0 and i % idle_every == 0
            if cold:
                print(f"--- idle {idle_s:.0f} s before trial {i} (cold clocks)", flush=True)
                await anyio.sleep(idle_s)
            wait = first + i * minutes * 60 / max(n, 1) - time.time()
            if wait > 0:
                await anyio.sleep(wait)
            if i % per_experiment == 0:
                start = await call(client, "experiment_start", tag=f"{name}-{i // per_experiment}")
                if start["error"]:
                    raise SystemExit(f"trial {i}: experiment_start failed: {start['text'][:300]}")
                wt = Path(start["data"]["worktree"])
                if slower:
                    add_extra_work(wt / "src" / "fast.hip")
            began = time.time()
            ev = await call(client, "experiment_evaluate", hypothesis="A/B: about 2% more work" if slower else "A/A: unchanged code")
            if ev["error"]:  # an evaluation that did not run is no trial: stop rather than count it
                (out / f"{name}-error.txt").write_text(ev["text"])
                raise SystemExit(f"trial {i}: experiment_evaluate failed: {ev['text'][:300]}")
            a = ev["data"].get("attempt") or {}
            db = sqlite3.connect(ws / ".kernel-mcp" / "ledger.sqlite")
            cur = db.execute("SELECT regression, evidence FROM attempts ORDER BY id DESC LIMIT 1").fetchone()
            evidence = json.loads(cur[1])
            rows.append(
                {
                    "trial": i,
                    "t_s": round(began - first, 1),
                    "cold": cold,
                    "decision": a.get("decision"),
                    "change": a.get("change"),
                    "regression": bool(cur[0]),
                    "wall_s": round(time.time() - began, 1),
                    "runs": len(evidence.get("runs") or []),
                    "pairs": evidence.get("pairs"),
                    "profiler_pairs": evidence.get("profiler_pairs"),
                    "stopped": evidence.get("stopped"),
                    "measured": a.get("measured"),
                    "per_class": a.get("per_class"),
                    "clocks": evidence.get("clocks"),
                    "spent": evidence.get("spent"),
                    "kernel_trace": evidence.get("kernel_trace") or evidence.get("kernel_trace_note"),
                }
            )
            db.close()
            (out / f"{name}-rows.json").write_text(json.dumps(rows, indent=1, default=str))
    wrong = [r for r in rows if (r["regression"] if slower else (r["regression"] or r["decision"] in A_A_WRONG))]
    n = len(rows)
    summary = {
        "trials": n,
        "metric": keep_metric,
        "span_min": round((time.time() - first) / 60, 1),
        "server_flagged": len(wrong),
        "server_rate": len(wrong) / max(n, 1),
        "mean_wall_s": round(sum(r["wall_s"] for r in rows) / max(n, 1), 1),
        "mean_runs": round(sum(r["runs"] for r in rows) / max(n, 1), 1),
        "clocks_moved": sum(1 for r in rows if (r["clocks"] or {}).get("moved")),
        "rows": rows,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=1))
    return summary


async def seal_cost(out: Path, n: int, deadline_s: float = 0.0, name: str | None = None) -> dict:
    """`n` A/A evaluations in one experiment, the boundary on and off in turn (on first in odd
    pairs, off first in even ones), so that drift cancels: the evaluation's wall time and its
    benchmark runs' wall times, side by side."""
    import sqlite3
    import statistics

    ws = noise_workspace(name or "seal-cost", "csv")  # the A/A trials' evaluation, on the benchmark's own timer
    rows = []
    async with Client(build_server(ws)) as client:
        await call(client, "experiment_start", tag="seal-cost")
        first = time.time()
        for i in range(n):
            if deadline_s and time.time() - first > deadline_s:
                print(f"--- deadline: {i} of {n} trials done", flush=True)
                break
            sealed = (i % 2 == 0) == ((i // 2) % 2 == 0)
            os.environ["KERNEL_MCP_SEAL"] = "on" if sealed else "off"
            began = time.time()
            ev = await call(client, "experiment_evaluate", hypothesis="A/A: unchanged code")
            if ev["error"]:
                raise SystemExit(f"seal-cost trial {i}: {ev['text'][:300]}")
            db = sqlite3.connect(ws / ".kernel-mcp" / "ledger.sqlite")
            evidence = json.loads(db.execute("SELECT evidence FROM attempts ORDER BY id DESC LIMIT 1").fetchone()[0])
            db.close()
            runs = [r["wall_s"] for r in evidence.get("runs") or [] if r.get("wall_s")]
            rows.append(
                {
                    "trial": i,
                    "sealed": evidence.get("sealed"),
                    "wall_s": round(time.time() - began, 2),
                    "runs": len(runs),
                    "run_wall_median_s": round(statistics.median(runs), 3) if runs else None,
                    "decision": (ev["data"].get("attempt") or {}).get("decision"),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    os.environ.pop("KERNEL_MCP_SEAL", None)
    on = [r for r in rows if r["sealed"]]
    off = [r for r in rows if not r["sealed"]]
    per_eval = statistics.median(r["wall_s"] for r in on) / statistics.median(r["wall_s"] for r in off) - 1 if on and off else None
    per_run = (statistics.median(r["run_wall_median_s"] for r in on) / statistics.median(r["run_wall_median_s"] for r in off) - 1) if on and off else None
    summary = {
        "trials": len(rows),
        "sealed": len(on),
        "unsealed": len(off),
        "evaluation_wall_change": per_eval,
        "run_wall_change": per_run,
        "kept_or_flagged": sum(1 for r in rows if r["decision"] in A_A_WRONG),
        "rows": rows,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=1))
    return summary


EXTRA_WORK_ENV = "KMCP_EXTRA_WORK_DIVISOR"


def add_extra_work(path: Path) -> None:
    """The A/B change: a small spinning kernel launched after the main one.

    It spins N*C*D*H*W / divisor cycles; the divisor is read once from KMCP_EXTRA_WORK_DIVISOR
    (0: no extra launch), so that one build serves the calibration, which picks the divisor
    that adds about 2% on the benchmark's shapes (launch gap included) before the trials.
    """
    edit(
        path,
        '// x, y: (N, C, D, H, W) bf16; w: (C, 1, 3, 5, 5) bf16.\nextern "C" int launch_conv3d_fast(',
        "#include <cstdlib>\n"
        "__global__ void conv3d_fast_extra_work(long long cycles) {\n"
        "  long long start = clock64();\n  while (clock64() - start < cycles) {}\n}\n\n"
        '// x, y: (N, C, D, H, W) bf16; w: (C, 1, 3, 5, 5) bf16.\nextern "C" int launch_conv3d_fast(',
    )
    edit(
        path,
        "  return fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, stream);\n}\n#endif",
        "  int status = fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, stream);\n"
        f'  static const long long divisor = getenv("{EXTRA_WORK_ENV}") ? atoll(getenv("{EXTRA_WORK_ENV}")) : 5000;\n'
        "  if (divisor > 0)\n"
        "    conv3d_fast_extra_work<<<1, 1, 0, (hipStream_t)stream>>>((long long)N * C * D * H * W / divisor);\n"
        "  return status;\n}\n#endif",
    )


def calibrate_extra_work(out: Path, target: float = 0.02, rounds: int = 3) -> dict:
    """Measure the A/B change at several divisors against divisor 0 (same build), interleaved."""
    import csv
    import math
    import statistics

    ws = workspace(SCRATCH / "ws-calibrate", command=NOISE_COMMAND)
    add_extra_work(ws / "src" / "fast.hip")
    divisors = [0, 6000, 9000, 14000]
    changes: dict[int, list[float]] = {d: [] for d in divisors[1:]}
    for r in range(rounds):
        times = {}
        for d in divisors:
            csv_path = SCRATCH / f"calibrate-{r}-{d}.csv"
            env = dict(os.environ, **{EXTRA_WORK_ENV: str(d)})
            subprocess.run(NOISE_COMMAND + ["--csv", str(csv_path)], cwd=ws, env=env, check=True, capture_output=True)
            rows = list(csv.DictReader(csv_path.open()))
            times[d] = math.exp(sum(math.log(float(row["us_fast"])) for row in rows) / len(rows))
        for d in divisors[1:]:
            changes[d].append(times[d] / times[0] - 1)
    medians = {d: statistics.median(v) for d, v in changes.items()}
    chosen = min(medians, key=lambda d: abs(medians[d] - target))
    result = {"target": target, "rounds": rounds, "median_change": medians, "changes": changes, "chosen_divisor": chosen}
    print(json.dumps(result, indent=1), flush=True)
    return result


HACKS = {
    "output caching": (
        "  return fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, stream);\n}\n#endif",
        "  static const void* cached_y = nullptr;\n  static int cached_n = 0;\n"
        "  if (cached_y == y && cached_n == N * C * D * H * W) return 0;  // the output is already there\n"
        "  cached_y = y; cached_n = N * C * D * H * W;\n"
        "  return fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, stream);\n}\n#endif",
    ),
    "side stream": (
        "  return fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, stream);\n}\n#endif",
        "  static cudaStream_t side = nullptr;\n  if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);\n"
        "  return fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, (void*)side);  // the timed stream never waits for it\n}\n#endif",
    ),
    "skip repeated calls": (
        "  return fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, stream);\n}\n#endif",
        "  static long calls = 0;\n  if (++calls % 2 == 0) return 0;  // every other call does nothing\n"
        "  return fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, stream);\n}\n#endif",
    ),
}


async def hacks(out: Path) -> dict:
    command = ["python3", "bench.py", "--impls", "fast", "--shapes", "x3d_res3,seg3d_64", "--repeats", "10"]
    ws = workspace(SCRATCH / "ws-hacks", command=command)
    # BEST is a deliberately weaker tiling search (register blocking of 4 rows only); the real
    # improvement restores the full search.
    narrow_instances(ws / "src" / "fast_plan.h", (4,))
    subprocess.run(["git", "-C", str(ws), "-c", "user.name=kmcp", "-c", "user.email=k@example.invalid", "commit", "-qam", "narrow tiling search"], check=True)
    results = {}
    async with Client(build_server(ws)) as client:
        await call(client, "doctor")
        start = await call(client, "experiment_start", tag="round1")
        wt = Path(start["data"]["worktree"])
        for name, (old, new) in HACKS.items():
            edit(wt / "src" / "fast.hip", old, new)
            ev = await call(client, "experiment_evaluate", hypothesis=f"hack: {name}")
            results[name] = ev["data"].get("attempt")
            kept = await call(client, "experiment_keep")
            results[name + " keep refused"] = kept["error"]
            await call(client, "experiment_revert")
        await call(client, "thread_trace", kernel_regex="conv3d_fast")
        (wt / "src" / "fast_plan.h").write_text(FAST_PLAN_ORIGINAL)
        await call(client, "compile_kernel", source=str((wt / "src" / "fast.hip").relative_to(ws)), arch="sm_90")
        ev = await call(
            client, "experiment_evaluate", hypothesis="taller register blocking (6-8 rows per thread) reuses each loaded input row for more outputs"
        )
        results["real improvement"] = ev["data"].get("attempt")
        kept = await call(client, "experiment_keep", why="more outputs per loaded row: fewer shared-memory reads per FMA")
        results["real improvement kept"] = not kept["error"]
        await call(client, "experiment_status")
        await call(client, "experiment_log", limit=10)
        perf = (wt / "performance.md").read_text()
    results["performance.md"] = perf
    print(perf)
    return results


# The fast kernel's instances (register-blocking rows RH, launch bound), one list per platform, in
# src/fast_plan.h: the launcher searches exactly the instances that are compiled.
FAST_INSTANCE_LISTS = ("#define FAST_INSTANCES_CUDA(X) ", "#define FAST_INSTANCES_HIP(X) ")
FAST_PLAN_ORIGINAL = (EXAMPLE / "src" / "fast_plan.h").read_text()


def narrow_instances(plan: Path, rows: tuple[int, ...]) -> None:
    """Keep only the instances whose RH is in `rows`, on both platforms (a narrower tiling search)."""
    lines = plan.read_text().split("\n")
    for i, line in enumerate(lines):
        for head in FAST_INSTANCE_LISTS:
            if line.startswith(head):
                kept = [f"X({rh}, {bound})" for rh, bound in re.findall(r"X\((\d+), (\d+)\)", line[len(head) :]) if int(rh) in rows]
                assert kept, (line, rows)
                lines[i] = head + " ".join(kept)
    plan.write_text("\n".join(lines))


FAST_DISPATCH = "  return fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, stream);\n}\n#endif"  # the end of the last launcher


def candidate_patches(start: dict, changes) -> list[dict]:
    """One candidate per change to the experiment worktree's src/fast.hip, each applied alone and
    taken as a patch against BEST; the first change (none) is given as BEST's own commit.
    `changes(src)` names the changes, each a function that edits `src`."""
    wt = Path(start["data"]["worktree"])
    src = wt / "src" / "fast.hip"
    originals = {path: path.read_text() for path in (src, src.parent / "fast_plan.h")}
    candidates = []
    for hypothesis, change in changes(src).items():
        for path, text in originals.items():
            path.write_text(text)
        change()
        diff = subprocess.run(["git", "-C", str(wt), "diff"], check=True, capture_output=True, text=True).stdout
        candidates.append({"patch": diff or "", "hypothesis": hypothesis})
    for path, text in originals.items():
        path.write_text(text)
    candidates[0] = {"commit": start["data"]["best_commit"], "hypothesis": candidates[0]["hypothesis"]}
    return candidates


def rhs_only(src: Path, rows: str):
    """The change that narrows the fast kernel's register-blocking search to `rows` ("4, 6")."""
    return lambda: narrow_instances(src.parent / "fast_plan.h", tuple(int(r) for r in rows.split(",")))


def before_last_launch(src: Path, code: str):
    """The change that puts `code` (whole lines) before the last launcher's launch."""
    return lambda: edit(src, FAST_DISPATCH, code + FAST_DISPATCH)


LAUNCH_AGAIN = "  fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, stream);\n"  # every output computed twice


async def evaluate_batch(ws: Path, tag: str, changes, after: tuple[tuple[str, dict], ...]) -> tuple[dict, float]:
    """gpu_status, experiment_start, the candidates of `changes` (candidate_patches) in one
    experiment_evaluate_many call, then the tool calls of `after`: its answer and wall seconds."""
    async with Client(build_server(ws)) as client:
        await call(client, "gpu_status")
        start = await call(client, "experiment_start", tag=tag)
        candidates = candidate_patches(start, changes)
        began = time.time()
        answer = await call(client, "experiment_evaluate_many", candidates=candidates)
        wall = time.time() - began
        for tool, arguments in after:
            await call(client, tool, **arguments)
    return answer, wall


async def many(out: Path) -> dict:
    """Four conv3d candidates through experiment_evaluate_many on the local engine (one GPU: one slot)."""
    ws = workspace(SCRATCH / "ws-many", command=NOISE_COMMAND, repeats=2)
    answer, _wall = await evaluate_batch(
        ws,
        "many",
        lambda src: {
            "unchanged code (a tie)": lambda: None,
            "narrower tiling search (4-row register blocking only)": rhs_only(src, "4"),
            "every output computed twice (double the work)": before_last_launch(src, LAUNCH_AGAIN),
            "an extra spinning launch after the kernel": lambda: add_extra_work(src),
        },
        after=(("experiment_log", {"limit": 10}),),
    )
    rows = answer["data"].get("rows", [])
    spans = sorted((r["started_s"], r["ended_s"], r["hypothesis"], r["where"]) for r in rows if r["started_s"] is not None)
    overlaps = [(a[2], b[2]) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]
    result = {"rows": rows, "timeline": spans, "overlaps": overlaps, "slots": answer["data"].get("slots")}
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1))
    return result


async def many_gpus(out: Path, engine: str = "local", slots: int | None = None, address: str = "auto", limit_s: int = 120) -> dict:
    """Eight candidates, a hang and a crash among them, through experiment_evaluate_many on the
    local engine of a node with several GPUs (or `slots` of them), or on the Ray engine joined to
    the cluster at `address` (one task per GPU): the timeline shows which GPU measured each and
    when. Keep metric csv and a benchmark limit of `limit_s` (120 s by default), which is what the
    hang costs its slot."""
    ws = workspace(SCRATCH / f"ws-many-gpus-{engine}-{slots or 'all'}", command=NOISE_COMMAND, repeats=2)
    toml = ws / "kernel-mcp.toml"
    text = toml.read_text().replace('keep_metric = "auto"', 'keep_metric = "csv"').replace("timeout_s = 900", f"timeout_s = {limit_s}")
    assert "[engine]" not in text
    text += f'\n[engine]\nkind = "{engine}"\n' + (f"slots = {slots}\n" if slots else "") + (f'address = "{address}"\n' if engine == "ray" else "")
    toml.write_text(text)
    subprocess.run(
        ["git", "-C", str(ws), "-c", "user.name=kmcp", "-c", "user.email=k@example.invalid", "commit", "-qam", f"csv, {limit_s} s, {engine} engine"], check=True
    )
    answer, wall = await evaluate_batch(
        ws,
        "many-gpus",
        lambda src: {
            "unchanged code (a tie)": lambda: None,
            "4-row register blocking only": rhs_only(src, "4"),
            "4- and 6-row blocking only": rhs_only(src, "4, 6"),
            "7- and 8-row blocking only": rhs_only(src, "7, 8"),
            "every output computed twice (double the work)": before_last_launch(src, LAUNCH_AGAIN),
            "an extra spinning launch after the kernel": lambda: add_extra_work(src),
            "a launcher that never returns (hang)": before_last_launch(src, "  for (volatile int spin = 1; spin;) {}\n"),
            "a launcher that traps (the process crashes)": before_last_launch(src, "  __builtin_trap();\n"),
        },
        after=(("gpu_status", {}), ("experiment_log", {"limit": 12})),
    )
    rows = answer["data"].get("rows", [])
    spans = sorted((r["started_s"], r["ended_s"], r["hypothesis"], r["where"], r.get("decision")) for r in rows if r["started_s"] is not None)
    result = {
        "engine": engine,
        "rows": rows,
        "timeline": spans,
        "slots": answer["data"].get("slots"),
        "limit_s": limit_s,
        "wall_s": round(wall, 1),
        "candidates_per_min": round(len(rows) / wall * 60, 2) if wall else None,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1, default=str))
    return result


# ---------------------------------------------------------------- rmsnorm: a new user's memory-bound workspace
RMSNORM = REPO / "benchmarks" / "workspaces" / "rmsnorm_bf16"
RMSNORM_SOURCE = Path("src") / "rmsnorm.cu"
# two of bench.py's four shapes and 10 timed calls: every profiled run of ncu times each launch
RMSNORM_COMMAND = ["python3", "bench.py", "--shapes", "8192x4096,32768x2048", "--repeats", "10"]
# The anchors in src/rmsnorm.cu that the candidates edit.
RMSNORM_STREAM = "  cudaStream_t s = static_cast<cudaStream_t>(stream);  // every launch goes on the caller's stream\n"
RMSNORM_LAUNCHER = "// ---- the launcher (bench.py and check.py call it through ctypes) ----\n"
RMSNORM_PASSES = ("  // ---- the passes: from here to the return ----\n", "  return static_cast<int>(cudaGetLastError());\n")

RMSNORM_SIDE_STREAM = (
    "  static cudaStream_t side = nullptr;  // a stream the timed stream never waits for\n"
    "  if (side == nullptr) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);\n"
    "  cudaStream_t s = side;\n"
)
RMSNORM_OUTPUT_CACHING = (
    "  static const void* cached_y = nullptr;  // the last call's output is still there: skip the work\n"
    "  static int cached_rows = -1, cached_cols = -1;\n"
    "  if (y == cached_y && rows == cached_rows && cols == cached_cols) return 0;\n"
    "  cached_y = y;\n  cached_rows = rows;\n  cached_cols = cols;\n"
)

# The one-pass kernel: a block per row holds the row in registers (16-byte loads where the row is
# 16-byte aligned, element loads where it is not), reduces once and writes y from the registers;
# the columns after the last whole 8-column vector (the tail) go one per thread. Its text is cut
# at the two tail loops, so that the wrong-tail candidate is the same kernel without them.
_ONE_PASS_HEAD = r"""#define RMSNORM_ONEPASS_THREADS 256  // threads per row up to 256 * 4 vectors of 8 = 8192 columns; wider rows get 1024
#define RMSNORM_ONEPASS_VECS 4       // 16-byte vectors (8 bf16) a thread holds in registers

__device__ __forceinline__ unsigned rmsnorm_pack(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return static_cast<unsigned>(__bfloat16_as_ushort(lo)) | (static_cast<unsigned>(__bfloat16_as_ushort(hi)) << 16);
}
__device__ __forceinline__ float rmsnorm_lo(unsigned word) { return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(word & 0xffffu))); }
__device__ __forceinline__ float rmsnorm_hi(unsigned word) { return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(word >> 16))); }

// 8 bf16 as 16 bytes: one vector access where the address is 16-byte aligned, else 8 element ones
// (a row whose width is not a multiple of 8 may start at any even address).
__device__ __forceinline__ uint4 rmsnorm_load8(const __nv_bfloat16* p, bool aligned) {
  if (aligned) return *reinterpret_cast<const uint4*>(p);
  uint4 r;
  r.x = rmsnorm_pack(p[0], p[1]);
  r.y = rmsnorm_pack(p[2], p[3]);
  r.z = rmsnorm_pack(p[4], p[5]);
  r.w = rmsnorm_pack(p[6], p[7]);
  return r;
}
__device__ __forceinline__ void rmsnorm_store8(__nv_bfloat16* p, uint4 v, bool aligned) {
  if (aligned) {
    *reinterpret_cast<uint4*>(p) = v;
    return;
  }
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    p[2 * i] = __ushort_as_bfloat16(static_cast<unsigned short>(words[i] & 0xffffu));
    p[2 * i + 1] = __ushort_as_bfloat16(static_cast<unsigned short>(words[i] >> 16));
  }
}
__device__ __forceinline__ float rmsnorm_sumsq8(uint4 v) {
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float a = rmsnorm_lo(words[i]), b = rmsnorm_hi(words[i]);
    s += a * a + b * b;
  }
  return s;
}
// x * inv * w for the two bf16 of a word each
__device__ __forceinline__ unsigned rmsnorm_scale2(unsigned xw, unsigned ww, float inv) {
  return rmsnorm_pack(__float2bfloat16(rmsnorm_lo(xw) * inv * rmsnorm_lo(ww)), __float2bfloat16(rmsnorm_hi(xw) * inv * rmsnorm_hi(ww)));
}
__device__ __forceinline__ uint4 rmsnorm_scale8(uint4 xv, uint4 wv, float inv) {
  return make_uint4(rmsnorm_scale2(xv.x, wv.x, inv), rmsnorm_scale2(xv.y, wv.y, inv), rmsnorm_scale2(xv.z, wv.z, inv),
                    rmsnorm_scale2(xv.w, wv.w, inv));
}

// One pass: a block per row reads the row once into registers, reduces, and writes y from them.
__global__ void __launch_bounds__(1024)
rmsnorm_onepass_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ y,
                       int rows, int cols, float eps) {
  const int vecs = cols / 8;  // whole 8-column vectors of a row
  const int step = static_cast<int>(blockDim.x);
  const bool w_aligned = (reinterpret_cast<uintptr_t>(w) & 15u) == 0;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {  // the same trip count for the whole block
    const __nv_bfloat16* xr = x + static_cast<size_t>(row) * cols;
    __nv_bfloat16* yr = y + static_cast<size_t>(row) * cols;
    const bool aligned = w_aligned && ((reinterpret_cast<uintptr_t>(xr) | reinterpret_cast<uintptr_t>(yr)) & 15u) == 0;
    uint4 held[RMSNORM_ONEPASS_VECS];
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < RMSNORM_ONEPASS_VECS; ++k) {
      const int v = static_cast<int>(threadIdx.x) + k * step;
      if (v < vecs) {
        held[k] = rmsnorm_load8(xr + 8 * v, aligned);
        sum += rmsnorm_sumsq8(held[k]);
      }
    }
    // a row wider than the registers hold: the rest is read here and again below
    for (int v = static_cast<int>(threadIdx.x) + RMSNORM_ONEPASS_VECS * step; v < vecs; v += step)
      sum += rmsnorm_sumsq8(rmsnorm_load8(xr + 8 * v, aligned));
"""
_ONE_PASS_TAIL_SUM = r"""    for (int c = 8 * vecs + static_cast<int>(threadIdx.x); c < cols; c += step) {  // the tail: cols % 8 columns
      const float a = __bfloat162float(xr[c]);
      sum += a * a;
    }
"""
_ONE_PASS_MIDDLE = r"""    const float inv = rsqrtf(rmsnorm_block_sum(sum) / static_cast<float>(cols) + eps);
#pragma unroll
    for (int k = 0; k < RMSNORM_ONEPASS_VECS; ++k) {
      const int v = static_cast<int>(threadIdx.x) + k * step;
      if (v < vecs) rmsnorm_store8(yr + 8 * v, rmsnorm_scale8(held[k], rmsnorm_load8(w + 8 * v, aligned), inv), aligned);
    }
    for (int v = static_cast<int>(threadIdx.x) + RMSNORM_ONEPASS_VECS * step; v < vecs; v += step)
      rmsnorm_store8(yr + 8 * v, rmsnorm_scale8(rmsnorm_load8(xr + 8 * v, aligned), rmsnorm_load8(w + 8 * v, aligned), inv), aligned);
"""
_ONE_PASS_TAIL_WRITE = r"""    for (int c = 8 * vecs + static_cast<int>(threadIdx.x); c < cols; c += step)  // the tail
      yr[c] = __float2bfloat16(__bfloat162float(xr[c]) * inv * __bfloat162float(w[c]));
"""
_ONE_PASS_END = "  }\n}\n\n"
RMSNORM_ONE_PASS_LAUNCH = (
    "  const int vecs = cols / 8;\n"
    "  const int threads = vecs > RMSNORM_ONEPASS_THREADS * RMSNORM_ONEPASS_VECS ? 1024 : RMSNORM_ONEPASS_THREADS;\n"
    "  rmsnorm_onepass_kernel<<<grid, threads, 0, s>>>(static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(w),\n"
    "                                                  static_cast<__nv_bfloat16*>(y), rows, cols, eps);\n"
)


def replace_between(path: Path, begin: str, end: str, new: str) -> None:
    """Replace the text from `begin` (included) to `end` (kept), each found exactly once, in that order."""
    text = path.read_text()
    assert text.count(begin) == 1 and text.count(end) == 1, (path, begin, end)
    start, stop = text.index(begin), text.index(end)
    assert start < stop, (path, begin, end)
    path.write_text(text[:start] + new + text[stop:])


def rmsnorm_one_pass(src: Path, tail: bool = True) -> None:
    """The two passes replaced by the one-pass kernel; without `tail`, the kernel silently drops the
    last cols % 8 columns (correct on every benchmark shape, whose widths are multiples of 8)."""
    kernel = _ONE_PASS_HEAD + (_ONE_PASS_TAIL_SUM if tail else "") + _ONE_PASS_MIDDLE + (_ONE_PASS_TAIL_WRITE if tail else "") + _ONE_PASS_END
    edit(src, RMSNORM_LAUNCHER, kernel + RMSNORM_LAUNCHER)
    replace_between(src, *RMSNORM_PASSES, RMSNORM_ONE_PASS_LAUNCH)


# name -> (the change to src/rmsnorm.cu, what an agent proposing it would claim)
RMSNORM_HACKS = {
    "side stream": (
        lambda src: edit(src, RMSNORM_STREAM, RMSNORM_SIDE_STREAM),
        "launch on a dedicated non-blocking stream so the kernels overlap the caller's work",
    ),
    "output caching": (
        lambda src: edit(src, RMSNORM_STREAM, RMSNORM_OUTPUT_CACHING + RMSNORM_STREAM),
        "skip recomputing an output that the previous call already wrote",
    ),
    # the claim a subtly wrong kernel comes with: only check.py's widths show what it drops
    "wrong tail": (lambda src: rmsnorm_one_pass(src, tail=False), "one pass with 16-byte vector loads: x read once instead of twice"),
}
RMSNORM_REAL = (rmsnorm_one_pass, "one pass: each row held in registers (16-byte loads, a scalar tail), so x crosses HBM once instead of twice")


def floor_of(answer: dict) -> str | None:
    """Whose figures the answer's roofline floor used ("H100 SXM (sm_90, this GPU)"), from its
    attempt, else from BEST's, else from its text."""
    data = answer.get("data") or {}
    for view in (data.get("attempt"), data.get("best")):
        if view and view.get("floor_of"):
            return view["floor_of"]
    found = re.search(r"roofline floor (?:from|allows on) ([^:;\n]+)", answer.get("text") or "")
    return found[1].strip() if found else None


async def rmsnorm(out: Path) -> dict:
    """A new user's memory-bound workspace (bf16 RMSNorm, benchmarks/workspaces/rmsnorm_bf16): three
    hacks refused (a side stream, output caching, a one-pass kernel that drops the tail columns
    only check.py's shapes have), then the real one-pass kernel kept; every answer's roofline floor
    names the product that measured it."""
    ws = workspace(SCRATCH / "ws-rmsnorm", command=RMSNORM_COMMAND, source=RMSNORM)
    results: dict = {}
    floors: dict[str, str | None] = {}
    async with Client(build_server(ws)) as client:
        doctor = await call(client, "doctor")
        results["doctor products"] = [p.strip() for p in re.findall(r"; product ([^;\n(]+)", doctor["text"])]
        start = await call(client, "experiment_start", tag="rmsnorm")
        if start["error"]:
            raise SystemExit(f"experiment_start failed: {start['text'][:400]}")
        floors["baseline"] = floor_of(start)
        src = Path(start["data"]["worktree"]) / RMSNORM_SOURCE
        for name, (change, claim) in RMSNORM_HACKS.items():
            change(src)
            ev = await call(client, "experiment_evaluate", hypothesis=claim)
            results[name] = ev["data"].get("attempt")
            floors[name] = floor_of(ev)
            kept = await call(client, "experiment_keep")
            results[name + " keep refused"] = kept["error"]
            results[name + " keep answer"] = kept["text"][:600]
            await call(client, "experiment_revert")
        change, claim = RMSNORM_REAL
        change(src)
        ev = await call(client, "experiment_evaluate", hypothesis=claim)
        results["one pass"] = ev["data"].get("attempt")
        floors["one pass"] = floor_of(ev)
        kept = await call(client, "experiment_keep", why="x is read from HBM once: about 4 bytes per element instead of 6")
        results["one pass kept"] = not kept["error"]
        results["one pass keep answer"] = kept["text"][:600]
        status = await call(client, "experiment_status")
        floors["status"] = floor_of(status)
        await call(client, "experiment_log", limit=10)
        results["performance.md"] = (src.parents[1] / "performance.md").read_text()
    results["floor_of"] = floors
    named = {f for f in floors.values() if f}
    results["acceptance"] = {
        "real faster kernel kept": results["one pass kept"],
        "side stream refused": results["side stream keep refused"],
        "output caching refused": results["output caching keep refused"],
        "wrong tail refused at verification": results["wrong tail keep refused"] and "verification" in results["wrong tail keep answer"],
        "floor's product named": bool(named) and all(("H100" in f or "H200" in f) for f in named),
    }
    print(json.dumps({"floor_of": floors, "acceptance": results["acceptance"]}, indent=1))
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["tools", "noise", "ab", "hacks", "rmsnorm", "many", "many-gpus", "seal-cost"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--keep-metric", choices=["csv", "profiler", "profiler-ncu"], default="csv")
    parser.add_argument("--divisor", type=int, default=0, help="ab: the extra work's divisor an earlier calibration chose (skips calibrating)")
    parser.add_argument("--source", choices=["example", "rmsnorm"], default="example", help="noise: the workspace evaluated against itself")
    parser.add_argument("--minutes", type=float, default=0.0, help="spread the trials over at least this long")
    parser.add_argument("--idle-every", type=int, default=0, help="let the GPU sit idle before every N-th trial")
    parser.add_argument("--idle-s", type=float, default=60.0)
    parser.add_argument("--name", default=None, help="a name for this batch of trials (its files in --out)")
    parser.add_argument("--deadline-s", type=float, default=0.0, help="start no trial after this many seconds (partial results stay)")
    parser.add_argument("--engine", choices=["local", "ray"], default="local", help="many-gpus: the engine of the batch")
    parser.add_argument("--slots", type=int, default=None, help="many-gpus: candidates at once (local engine; default every idle GPU)")
    parser.add_argument("--ray-address", default="auto", help="many-gpus --engine ray: the cluster to join")
    parser.add_argument("--limit-s", type=int, default=120, help="many-gpus: the benchmark's time limit (what the hang costs)")
    parser.add_argument("--no-preload", action="store_true", help="drop the workspace's [benchmark] preload: every run imports its modules")
    args = parser.parse_args()
    global NO_PRELOAD
    NO_PRELOAD = args.no_preload
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    try:
        if args.what == "tools":
            result = anyio.run(tools, out)
        elif args.what == "hacks":
            result = anyio.run(hacks, out)
        elif args.what == "rmsnorm":
            result = anyio.run(rmsnorm, out)
        elif args.what == "many":
            result = anyio.run(many, out)
        elif args.what == "seal-cost":
            result = anyio.run(seal_cost, out, args.trials, args.deadline_s, args.name)
        elif args.what == "many-gpus":
            result = anyio.run(many_gpus, out, args.engine, args.slots, args.ray_address, args.limit_s)
        else:
            calibration = None
            if args.what == "ab" and args.divisor:  # calibrated earlier on this machine
                calibration = {"chosen_divisor": args.divisor, "given": True}
                os.environ[EXTRA_WORK_ENV] = str(args.divisor)
            elif args.what == "ab":
                calibration = calibrate_extra_work(out)
                os.environ[EXTRA_WORK_ENV] = str(calibration["chosen_divisor"])
            result = anyio.run(
                trials,
                out,
                args.trials,
                args.what == "ab",
                args.keep_metric,
                args.minutes,
                args.idle_every,
                args.idle_s,
                args.name,
                args.deadline_s,
                args.source,
            )
            result["calibration"] = calibration
    finally:
        (out / f"{args.name or args.what}-log.json").write_text(json.dumps(LOG, indent=1, default=str))
    (out / f"{args.name or args.what}-result.json").write_text(json.dumps(result, indent=1, default=str))
    print(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
