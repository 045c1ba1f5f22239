"""Measured peaks of one GPU, in one shape for every vendor, and the reader of what the vendors'
calibration programs print (platforms/cuda/calibrate.cu, platforms/rocm/calibrate.hip).

The programs print `key value` lines, a format of their own (version 1, described at the top of
each program). The reader is strict: output that does not start with the version line or stops
before `end`, a key it does not know or one given twice, a figure that is missing, not a plain
decimal number, not finite or not positive, a figure without its method, and a matrix rate both
given and said to be unavailable are refused, naming the line. A figure that passed would draw the
floor of every benchmark on that GPU.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field

from kernel_mcp.errors import CommandFailed
from kernel_mcp.models.gpu import GpuInfo
from kernel_mcp.untrusted import inline

FORMAT_HEADER = "kernel_mcp_calibration 1"
MatrixDtype = Literal["fp64", "fp32", "tf32", "fp16", "bf16", "fp8"]  # the roofline's dtypes
_DTYPES: tuple[str, ...] = get_args(MatrixDtype)
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")  # no nan, inf, hex or digit separators
_TEXT_LIMIT = 600  # characters of a method or name kept: the programs' own lines are shorter
_TEXT_KEYS = ("device_name", "copy_method", "fma_method", "matrix_method", "matrix_unavailable", "clock_method")
_NUMBER_KEYS = ("copy_bytes_per_s", "fma_flops_per_s", "matrix_flops_per_s", "clock_mhz")
_KNOWN = {"arch", "compute_units", "end", *_TEXT_KEYS, *_NUMBER_KEYS}


class MeasuredFigure(BaseModel):
    """One measured rate and how it was measured."""

    model_config = ConfigDict(allow_inf_nan=False)

    value: float = Field(gt=0)
    method: str


class MeasuredPeaks(BaseModel):
    """What one GPU reached under its vendor's calibration program: copy bandwidth, FP32 FMA rate
    and matrix rate, with the GPU and driver they were measured on (the cache's key) and when."""

    model_config = ConfigDict(allow_inf_nan=False)

    vendor: str
    gpu_index: int
    gpu_name: str  # as the monitor names it
    gpu_uuid: str | None = None
    gpu_bus_id: str | None = None
    product: str | None = None  # the product table's label for this GPU when it was measured
    driver_version: str | None = None  # the monitor's; None where it did not say
    measured_at: str  # ISO 8601, UTC
    program: str  # which program measured: "calibrate.cu sha256:0123abcd..."
    device_name: str | None = None  # as the program's runtime names the device
    arch: str | None = None  # as the program saw it: sm_90, gfx942
    compute_units: int | None = Field(default=None, gt=0)
    copy_bytes_per_s: MeasuredFigure  # bytes read + bytes written per second
    fma_flops_per_s: MeasuredFigure  # FP32 vector FMA, 2 FLOPs each
    matrix_flops_per_s: MeasuredFigure | None = None
    matrix_dtype: MatrixDtype | None = None
    matrix_unavailable: str | None = None  # why there is no matrix rate
    clock_mhz: float | None = Field(default=None, gt=0)  # the SM/CU clock seen while measuring, where the program can tell
    clock_method: str | None = None

    def when(self) -> str:
        """'2026-03-01 14:02 UTC'."""
        try:
            return datetime.fromisoformat(self.measured_at).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        except ValueError:
            return self.measured_at


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _positive(key: str, text: str, number: int) -> float:
    if not _DECIMAL.fullmatch(text):
        raise _refused(number, f"{key} is {inline(text[:40])!s}, not a decimal number")
    value = float(text)
    if not math.isfinite(value):
        raise _refused(number, f"{key} is {inline(text[:40])!s}, not a finite number")
    if value <= 0:
        raise _refused(number, f"{key} is {inline(text[:40])!s}, not a positive rate")
    return value


def _refused(number: int | None, why: str) -> CommandFailed:
    where = f"line {number}: " if number is not None else ""
    return CommandFailed(
        f"the calibration program's output is not a measurement: {where}{why}", hint="its whole output is kept in the calibration folder's logs"
    )


def read_output(text: str) -> dict[str, tuple[int, str]]:
    """The program's lines as key -> (line number, value), checked for shape: the version line
    first, `end` last, known keys only, each once."""
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines or lines[0][1] != FORMAT_HEADER:
        first = inline(lines[0][1][:80]) if lines else "nothing"
        raise _refused(lines[0][0] if lines else None, f"it starts with {first}, not {FORMAT_HEADER!r}")
    found: dict[str, tuple[int, str]] = {}
    for position, (number, line) in enumerate(lines[1:], 1):
        key, _, value = line.partition(" ")
        if key == "end":
            if value:
                raise _refused(number, f"`end` takes no value, not {inline(value[:40])}")
            if position != len(lines) - 1:
                raise _refused(number, "`end` before the last line: something was printed after the measurement ended")
            return found
        if key not in _KNOWN:
            raise _refused(number, f"unknown key {inline(key[:40])}")
        if key in found:
            raise _refused(number, f"{key} given twice (first on line {found[key][0]})")
        found[key] = (number, value.strip())
    raise _refused(lines[-1][0], "it stops before `end` (the program did not finish)")


def parse_calibration(text: str, gpu: GpuInfo, *, program: str, measured_at: str | None = None) -> MeasuredPeaks:
    """MeasuredPeaks of `gpu` from its calibration program's output, or CommandFailed naming the
    line that makes it no measurement (see the module docstring)."""
    found = read_output(text)
    last = len(text.splitlines())

    def number(key: str) -> float | None:
        if key not in found:
            return None
        line, value = found[key]
        token, _, rest = value.partition(" ")
        if key != "matrix_flops_per_s" and rest.strip():
            raise _refused(line, f"{key} has more than one value: {inline(value[:60])}")
        return _positive(key, token, line)

    def text_of(key: str) -> str | None:
        if key not in found:
            return None
        line, value = found[key]
        if not value:
            raise _refused(line, f"{key} is empty")
        return inline(value[:_TEXT_LIMIT])

    def figure(key: str, method_key: str) -> MeasuredFigure | None:
        value, method = number(key), text_of(method_key)
        if value is None:
            if method is not None:
                raise _refused(found[method_key][0], f"{method_key} without {key}")
            return None
        if method is None:
            raise _refused(found[key][0], f"{key} without {method_key} (how it was measured)")
        return MeasuredFigure(value=value, method=method)

    copy = figure("copy_bytes_per_s", "copy_method")
    fma = figure("fma_flops_per_s", "fma_method")
    for key, got in (("copy_bytes_per_s", copy), ("fma_flops_per_s", fma)):
        if got is None:
            raise _refused(last, f"no {key}: the program stopped measuring before it")
    matrix = figure("matrix_flops_per_s", "matrix_method")
    dtype: MatrixDtype | None = None
    unavailable = text_of("matrix_unavailable")
    if matrix is not None:
        line, value = found["matrix_flops_per_s"]
        words = value.split()
        if len(words) != 2 or words[1] not in _DTYPES:
            raise _refused(line, f"matrix_flops_per_s must be a rate and a dtype ({', '.join(_DTYPES)}), not {inline(value[:60])}")
        dtype = cast(MatrixDtype, words[1])
        if unavailable is not None:
            raise _refused(found["matrix_unavailable"][0], "the matrix rate is both given and said to be unavailable")
    elif unavailable is None:
        raise _refused(last, "neither matrix_flops_per_s nor matrix_unavailable: the program stopped measuring before it")
    clock = figure("clock_mhz", "clock_method")
    units = None
    if "compute_units" in found:
        line, value = found["compute_units"]
        if not value.isdigit() or int(value) <= 0:
            raise _refused(line, f"compute_units is {inline(value[:40])}, not a positive count")
        units = int(value)
    assert copy is not None and fma is not None  # refused above when missing
    return MeasuredPeaks(
        vendor=gpu.vendor,
        gpu_index=gpu.index,
        gpu_name=gpu.name,
        gpu_uuid=gpu.uuid,
        gpu_bus_id=gpu.bus_id,
        product=gpu.product,
        driver_version=gpu.driver_version,
        measured_at=measured_at or now_utc(),
        program=program,
        device_name=text_of("device_name"),
        arch=text_of("arch"),
        compute_units=units,
        copy_bytes_per_s=copy,
        fma_flops_per_s=fma,
        matrix_flops_per_s=matrix,
        matrix_dtype=dtype,
        matrix_unavailable=unavailable,
        clock_mhz=clock.value if clock else None,
        clock_method=clock.method if clock else None,
    )
