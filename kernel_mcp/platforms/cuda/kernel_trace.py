"""The CUPTI kernel tracer (kernel_trace.cpp): built with nvcc once per source and toolkit, loaded
by the driver into an ordinary benchmark run, read back as one row per kernel launch in the same
columns as ncu's dispatch list (profile/parsers.py `ncu_dispatches`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp.errors import BackendMissing

if TYPE_CHECKING:
    import pandas as pd

SOURCE = Path(__file__).with_name("kernel_trace.cpp")
FOLDER_ENV = "KERNEL_MCP_KERNEL_TRACE_DIR"
_RECORD = re.compile(r"\}\s*CUpti_ActivityKernel(\d+)\s*;")
_ANONYMOUS = "(anonymous namespace)"


def cupti_folders(nvcc: str) -> tuple[Path, Path]:
    """The CUPTI header and library folders of the toolkit `nvcc` belongs to."""
    root = Path(nvcc).resolve().parent.parent
    for include, lib in (
        (root / "extras" / "CUPTI" / "include", root / "extras" / "CUPTI" / "lib64"),
        (root / "targets" / "x86_64-linux" / "include", root / "targets" / "x86_64-linux" / "lib"),
        (root / "include", root / "lib64"),
    ):
        if (include / "cupti.h").is_file() and any(lib.glob("libcupti.so*")):
            return include, lib
    raise BackendMissing(f"no CUPTI (cupti.h and libcupti.so) beside {nvcc}", hint="install the CUDA toolkit's CUPTI component")


def newest_record(include: Path) -> str:
    """The newest kernel activity record the installed header defines (CUpti_ActivityKernel9 in CUDA 12.x)."""
    versions = [int(m) for header in include.glob("cupti_activity*.h") for m in _RECORD.findall(header.read_text(errors="replace"))]
    if not versions:
        raise BackendMissing(f"no CUpti_ActivityKernel record in {include}/cupti_activity.h")
    return f"CUpti_ActivityKernel{max(versions)}"


def compile_argv(nvcc: str) -> list[str]:
    """nvcc's command for the library, but for its output path (appended by the build)."""
    include, lib = cupti_folders(nvcc)
    return [
        nvcc,
        "-shared",
        "-O2",
        "-std=c++17",
        "-Xcompiler",
        "-fPIC",
        f"-DKMCP_KERNEL_RECORD={newest_record(include)}",
        f"-I{include}",
        str(SOURCE),
        f"-L{lib}",
        "-lcupti",
        "-Xlinker",
        f"-rpath={lib}",
        "-o",
    ]


def function_name(demangled: str) -> str:
    """`void ns::kernel<8, 4>(float const*, int)` -> `ns::kernel<8, 4>`: the name as ncu prints it
    (its default `--print-kernel-base function`), without return type and parameters."""
    text = demangled.replace(_ANONYMOUS, "{anonymous}")
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    head = text[:cut].strip()
    depth, start = 0, 0
    for i, ch in enumerate(head):  # a template's return type comes first, before a space outside <>
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == " " and depth == 0:
            start = i + 1
    return head[start:].replace("{anonymous}", _ANONYMOUS) or demangled


def read(folder: Path) -> tuple[pd.DataFrame, list[str]]:
    """Every launch the tracer recorded under `folder`, in start order, and what makes the record
    incomplete (a process that did not exit normally, records CUPTI dropped, a tracer error)."""
    import pandas as pd  # here: resolving a platform must not load pandas

    rows, problems = [], []
    for path in sorted(folder.glob("kernels-*.tsv")):
        lines = path.read_text(errors="replace").splitlines()
        last = lines[-1].split("\t") if lines else []
        if last[:1] == ["error"]:
            problems.append(f"{path.name}: {' '.join(last[1:])[:200]}")
            continue
        if last[:1] != ["end"] or len(last) != 3:
            problems.append(f"{path.name}: cut short (the process did not exit normally, so its last records were never written)")
        elif last[2] != "0":
            problems.append(f"{path.name}: CUPTI dropped {last[2]} records")
        for line in lines[:-1] if last[:1] == ["end"] else lines:
            cells = line.split("\t")
            if len(cells) != 12:
                problems.append(f"{path.name}: a line with {len(cells)} fields, not 12")
                break
            start, end, gx, gy, gz, bx, by, bz, regs, static, dynamic = (int(c) for c in cells[:11])
            shared = static + dynamic
            rows.append(
                {
                    "start": start,
                    "kernel": function_name(cells[11]),
                    "duration_ns": float(end - start),
                    "grid_x": gx,
                    "grid_y": gy,
                    "grid_z": gz,
                    "wg_x": bx,
                    "wg_y": by,
                    "wg_z": bz,
                    "vgprs": regs,
                    "lds_bytes": shared if shared else None,
                }
            )
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values("start", kind="stable").reset_index(drop=True)
        frame["dispatch"] = range(1, len(frame) + 1)
        frame = frame.drop(columns=["start"])
    return frame, problems
