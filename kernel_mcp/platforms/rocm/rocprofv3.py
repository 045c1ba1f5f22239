"""rocprofv3: kernel trace (CSV) for GPU times, counter collection in passes, and its counter listing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pathlib import Path

from kernel_mcp import runner, safe_files, toolchain
from kernel_mcp.errors import BackendMissing, CommandFailed, InvalidInput
from kernel_mcp.profile.parsers import parse_list_avail

if TYPE_CHECKING:  # pandas is imported where a table is read: a server's start does not wait for it
    import pandas as pd

# profile_kernels' presets: named sets of counters, filtered by what `rocprofv3 --list-avail` lists
COUNTER_PRESETS: dict[str, list[str]] = {
    "memory": ["FETCH_SIZE", "WRITE_SIZE", "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum", "MemUnitBusy"],
    "compute": ["SQ_WAVES", "SQ_INSTS_VALU", "SQ_INSTS_SALU", "VALUUtilization", "VALUBusy", "GRBM_GUI_ACTIVE"],
    "lds": ["SQ_INSTS_LDS", "SQ_ACTIVE_INST_LDS", "SQ_LDS_BANK_CONFLICT", "LDSBankConflict", "ALUStalledByLDS"],
    "mfma": ["SQ_INSTS_MFMA", "SQ_VALU_MFMA_BUSY_CYCLES", "SQ_BUSY_CYCLES", "GRBM_GUI_ACTIVE"],
    "occupancy": ["SQ_WAVES", "SQ_WAVE_CYCLES", "OccupancyPercent", "MeanOccupancyPerCU"],
    "cache": ["TCC_HIT_sum", "TCC_MISS_sum", "TCP_TCC_READ_REQ_sum", "L2CacheHit"],
}

REJECTED_HINTS = ("exceeds", "cannot be collected", "Request exceeds", "insufficient", "too many")


def find() -> str:
    path = toolchain.find("rocprofv3")
    if path is None:
        raise BackendMissing("rocprofv3 not found", hint="install rocprofiler-sdk (ROCm 6.2+)")
    return path


async def list_avail(cwd: Path, cache: Path) -> dict[str, dict[str, str]]:
    if cache.exists():
        return parse_list_avail(cache.read_text())
    result = await runner.run([find(), "--list-avail"], cwd=cwd, timeout_s=300, tail_bytes=16 * 2**20)
    if not result.ok:
        raise CommandFailed(f"rocprofv3 --list-avail gave {result.status()}", hint=result.stderr.tail[-300:] or None)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(result.stdout.tail)
    return parse_list_avail(result.stdout.tail)


async def output_format(cwd: Path) -> tuple[str, str]:
    """rocpd when this rocprofv3 can write it (ROCm 7 and later), else CSV; and why."""
    result = await runner.run([find(), "--help"], cwd=cwd, timeout_s=60, tail_bytes=2**20)
    if "rocpd" in (result.stdout.tail + result.stderr.tail):
        return "rocpd", "this rocprofv3 lists rocpd among its output formats: its database is read directly"
    return "csv", "this rocprofv3 does not offer rocpd output: CSV is read"


def option_value(value: str, what: str) -> str:
    """A caller's value that follows an option as its own word: one starting with '-' would be
    parsed as another option (and '@' as a file of options by argument parsers that take them)."""
    if value.startswith(("-", "@")):
        raise InvalidInput(
            f"{what} {value!r} starts with {value[0]!r}, which rocprofv3 would read as an option",
            hint="a regular expression can say the same with a bracket, e.g. [-]name",
        )
    return value


def trace_argv(out_dir: Path, command: list[str], kernel_regex: str | None, counters: list[str] | None = None, fmt: str = "csv") -> list[str]:
    argv = [find()]
    argv += ["--pmc", *(option_value(c, "counter") for c in counters)] if counters else ["--kernel-trace", "--stats"]
    argv += ["--output-format", fmt if not counters else "csv", "-d", str(out_dir), "-o", "kmcp"]
    if kernel_regex:
        argv += ["--kernel-include-regex", option_value(kernel_regex, "kernel_regex")]
    return argv + ["--", *command]


def find_output(out_dir: Path, suffix: str, within: Path | None = None) -> Path | None:
    """The newest `*suffix` under the folder: regular files only, no link leading out of `within`
    (default: the folder itself). For one file of a known name; a folder's data is read whole by
    read_trace_folder / read_counters_folder (a multi-process run writes one file per process)."""
    candidates = safe_files.files_under(out_dir, f"*{suffix}", within=within or out_dir, relative_to=within or out_dir)
    found = sorted(candidates, key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def rejected(result: runner.RunResult) -> str | None:
    text = result.stderr.tail + result.stdout.tail
    if result.ok:
        return None
    for line in text.splitlines():
        if any(h.lower() in line.lower() for h in REJECTED_HINTS):
            return line.strip()[:300]
    return None


def read_trace_folder(folder: Path, within: Path | None = None) -> pd.DataFrame:
    """Every dispatch of a rocprofv3 output folder: all its kernel traces (one per process) merged,
    each row keeping its file; the files read and skipped travel in the frame's attrs["inputs"],
    which summarise() puts in the answer."""
    from kernel_mcp.profile import gather

    g = gather.gather([(folder.name, folder, within or folder)], within or folder)
    if g.dispatches is None:
        raise CommandFailed(
            f"no kernel dispatch list under {folder.name} ({len(g.inputs)} files looked at)", hint="was rocprofv3 run with --kernel-trace and CSV output?"
        )
    g.dispatches.attrs["inputs"] = g.inputs
    return g.dispatches


def read_counters_folder(folder: Path, within: Path | None = None) -> pd.DataFrame | None:
    """Every counter row of the folder's counter_collection files (one per process), each keeping its file."""
    import pandas as pd
    from kernel_mcp.profile import sniff, tables

    frames = []
    for path in safe_files.files_under(folder, "*", within=within or folder, relative_to=within or folder):
        label = path.relative_to(within or folder).as_posix()
        if path.suffix.lower() == ".csv" and sniff.sniff(path, label).format == sniff.COUNTERS:  # by header: rocprofv3 also names them otherwise
            frames.append(tables.read_counter_rows(path, "counter collection", label)[0])
    return pd.concat(frames, ignore_index=True) if frames else None
