"""Time from starting the server to its first answers: `initialize`, then `tools/list`.

Each run starts a fresh server process over stdio, as an MCP client does at the start of a
session, sends the handshake (`initialize`, `notifications/initialized`) and `tools/list`, and
times both answers from the moment the process was started. One start first, not counted, warms
the caches (uv's environment, the operating system's file cache): the figures are warm starts.

    python benchmarks/start_time.py                  # this Python: python -m kernel_mcp serve
    python benchmarks/start_time.py --plugin         # the Claude Code plugin's command (.mcp.json, needs uvx)
    python benchmarks/start_time.py --plugin --no-compile-bytecode   # the same without compiled bytecode
    python benchmarks/start_time.py -- CMD ARG...    # any command that serves over stdio ({workspace} is replaced)

Target (issue 34): the plugin's server answers its first request within 2.5 s of a warm start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
HANDSHAKE_VERSION = "2025-11-25"


def plugin_command(workspace: Path, compile_bytecode: bool) -> list[str]:
    """The command of the plugin's .mcp.json, with the variables Claude Code sets filled in."""
    server = json.loads((REPO / ".mcp.json").read_text())["mcpServers"]["kernel-mcp"]
    fill = {"${CLAUDE_PLUGIN_ROOT}": str(REPO), "${CLAUDE_PROJECT_DIR}": str(workspace)}
    args = [fill.get(arg, arg) for arg in server["args"]]
    if not compile_bytecode:
        args = [arg for arg in args if arg != "--compile-bytecode"]
    return [server["command"], *args]


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) so far of a process and its live descendants (uvx runs the server as its child)."""
    root = psutil.Process(pid)
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def first_answers(command: list[str]) -> tuple[float, float, float]:
    """Seconds from the start of the process to the answer to initialize and to the answer to
    tools/list, and the CPU seconds spent by then: on a machine that other work shares, the wall
    times vary with its load, the CPU time much less."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        hello = {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": {"name": "start-time", "version": "0"}}
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n")
        proc.stdin.flush()
        if "result" not in json.loads(proc.stdout.readline() or "{}"):
            raise SystemExit(f"no answer to initialize from {command}")
        initialized = time.perf_counter() - started
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}) + "\n")
        proc.stdin.flush()
        listing = json.loads(proc.stdout.readline() or "{}")
        if not listing.get("result", {}).get("tools"):
            raise SystemExit(f"no tools/list answer from {command}")
        listed = time.perf_counter() - started
        return initialized, listed, cpu_seconds(proc.pid)
    finally:
        proc.stdin.close()
        proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--plugin", action="store_true", help="start the server with the plugin's .mcp.json command")
    parser.add_argument("--no-compile-bytecode", action="store_true", help="with --plugin: leave out uvx's --compile-bytecode")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("command", nargs="*", help="a command serving over stdio; {workspace} is replaced by an empty workspace")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        subprocess.run(["git", "init", "-q", str(workspace)], check=True)
        if args.plugin:
            command = plugin_command(workspace, compile_bytecode=not args.no_compile_bytecode)
        elif args.command:
            command = [part.replace("{workspace}", str(workspace)) for part in args.command]
        else:
            command = [sys.executable, "-m", "kernel_mcp", "serve", "--workspace", str(workspace)]
        first_answers(command)  # warms the caches; not counted
        samples = [first_answers(command) for _ in range(args.runs)]
    initialize = [s[0] for s in samples]
    tools_list = [s[1] for s in samples]
    cpu = [s[2] for s in samples]
    report = {
        "command": command,
        "runs": args.runs,
        "cpus": os.cpu_count(),
        "initialize_s": {"median": statistics.median(initialize), "min": min(initialize), "max": max(initialize)},
        "tools_list_s": {"median": statistics.median(tools_list), "min": min(tools_list), "max": max(tools_list)},
        "cpu_s": {"median": statistics.median(cpu), "min": min(cpu), "max": max(cpu)},
        "load_average_1min": os.getloadavg()[0],
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(" ".join(command))
    for name, what in (("initialize_s", "initialize answered"), ("tools_list_s", "tools/list answered"), ("cpu_s", "CPU time by then")):
        figures = report[name]
        print(f"{what:>20}: median {figures['median']:.2f} s, min {figures['min']:.2f} s, max {figures['max']:.2f} s over {args.runs} warm starts")
    print(f"{args.runs} starts on {os.cpu_count()} CPUs, load average (1 min) {report['load_average_1min']:.2f} at the end")


if __name__ == "__main__":
    main()
