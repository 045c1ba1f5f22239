"""Measured peaks beside the product tables.

A product table holds its maker's figures. A GPU may not reach them (a power cap, clocks held low,
another load, a method that cannot), or may beat a table that is wrong. A short calibration of each
GPU (copy bandwidth, FP32 FMA rate, matrix rate: its vendor's program, run by its platform) is kept
per GPU and driver as JSON under the workspace's `.kernel-mcp/calibration/`, and used twice:

- doctor shows it beside the table, figure by figure (`compare`), and says where the two differ
  by more than 10% and what that may mean;
- the roofline floor of the impossible-speedup check (`Floor`) takes, per resource, the higher of
  the table and the measurement: a table that is too low never refuses a real kernel, and a GPU
  that measured low (throttled, busy) never lowers the bar. Each refusal names the figure that
  drew the floor, where it came from, and how far under it the kernel's time is. A measurement
  more than MEASURED_ABOVE_TABLE times the table's figure is not used: no GPU beats its maker's
  peak by that much, so it is of another product (the table is the wrong one) or no measurement
  at all (the cache is a file in the workspace): the floor keeps the table's figure, says so, and
  doctor shows the disagreement for a person to settle.

When it runs: doctor measures every idle GPU that has no measurement for its driver; the first
benchmark on a GPU whose floor it would draw measures it once (seconds). A failed measurement is
recorded, so that benchmarks do not try again each time; doctor does. Without a measurement the
floor is the table's, and says so.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from kernel_mcp import safe_files
from kernel_mcp.errors import KernelMcpError
from kernel_mcp.hardware.roofline import BANDWIDTH_KEY, Dtype, Engine, Roofline, default_engine, roofline
from kernel_mcp.hardware.specs import HardwareSpec, product_named
from kernel_mcp.models.calibration import MeasuredPeaks, now_utc
from kernel_mcp.models.gpu import GpuInfo
from kernel_mcp.untrusted import inline

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors
    from kernel_mcp.runner import ProgressFn
    from kernel_mcp.workspace import Workspace

FOLDER = "calibration"  # under the workspace's state folder
DISAGREEMENT = 0.10  # a table and a measurement further apart than this are reported
MEASURED_ABOVE_TABLE = 1.5  # a measurement above this multiple of the table's figure draws no floor
MAX_RECORD_BYTES = 64 * 1024  # a record is a few hundred bytes; anything larger is not one of ours
# The clock a product's peaks assume, by the tables' names: the first present is the one stated.
PEAK_CLOCKS = {"vector": ("boost_clock_mhz", "peak_engine_clock_mhz"), "matrix": ("tensor_boost_clock_mhz", "boost_clock_mhz", "peak_engine_clock_mhz")}


# -- the cache: one record per GPU and driver -------------------------------------------------------


def folder(ws: Workspace) -> Path:
    return ws.state_dir / FOLDER


def _key(vendor: str, index: int, name: str, uuid: str | None, bus_id: str | None, driver: str | None) -> tuple[str, str]:
    """(a file-name-safe identity, the whole key): the GPU by its uuid, else its bus id, else its
    index; its name; its driver version. A new driver is a new key, so it is measured anew."""
    ident = uuid or bus_id or f"{vendor} GPU {index}"
    whole = f"{ident}|{name}|driver {driver or 'unknown'}"
    return "".join(ch if ch.isalnum() else "_" for ch in ident)[:64], whole


def key_of(gpu: GpuInfo) -> str:
    return _key(gpu.vendor, gpu.index, gpu.name, gpu.uuid, gpu.bus_id, gpu.driver_version)[1]


def key_of_peaks(peaks: MeasuredPeaks) -> str:
    return _key(peaks.vendor, peaks.gpu_index, peaks.gpu_name, peaks.gpu_uuid, peaks.gpu_bus_id, peaks.driver_version)[1]


def record_path(ws: Workspace, gpu: GpuInfo, suffix: str = ".json") -> Path:
    safe, whole = _key(gpu.vendor, gpu.index, gpu.name, gpu.uuid, gpu.bus_id, gpu.driver_version)
    return folder(ws) / f"{safe}-{hashlib.sha256(whole.encode()).hexdigest()[:12]}{suffix}"


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_RECORD_BYTES:
            return None
        return safe_files.read_text(path, follow_links=False)
    except (OSError, KernelMcpError):
        return None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def cached(ws: Workspace, gpu: GpuInfo) -> MeasuredPeaks | None:
    """This GPU's measurement under its present driver, or None: none kept, one of another GPU or
    driver, or a file that does not read as one (it is measured anew, and overwritten)."""
    text = _read(record_path(ws, gpu))
    if text is None:
        return None
    try:
        peaks = MeasuredPeaks.model_validate_json(text)
    except ValidationError:
        return None
    return peaks if key_of_peaks(peaks) == key_of(gpu) else None


def store(ws: Workspace, gpu: GpuInfo, peaks: MeasuredPeaks) -> Path:
    path = record_path(ws, gpu)
    _write(path, peaks.model_dump_json(indent=1))
    record_path(ws, gpu, ".failed.json").unlink(missing_ok=True)
    return path


def failure(ws: Workspace, gpu: GpuInfo) -> str | None:
    """Why the last measurement of this GPU under this driver failed, if it did (benchmarks do not
    try again; doctor does)."""
    text = _read(record_path(ws, gpu, ".failed.json"))
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("key") != key_of(gpu):
        return None
    return f"{inline(str(data.get('reason', 'failed'))[:300])} ({inline(str(data.get('at', '?')))})"


def record_failure(ws: Workspace, gpu: GpuInfo, reason: str) -> None:
    _write(record_path(ws, gpu, ".failed.json"), json.dumps({"key": key_of(gpu), "reason": reason, "at": now_utc()}))


async def measure(ws: Workspace, gpu: GpuInfo, vendors: Vendors) -> MeasuredPeaks:
    """Measure this GPU now with its vendor's program and keep the result; a failure is recorded
    and raised (BackendMissing, CommandFailed). The caller holds the GPU (a lease or the gate's lock)."""
    try:
        peaks = await vendors.for_gpu(gpu).calibrate(gpu, folder(ws))
    except KernelMcpError as exc:
        record_failure(ws, gpu, exc.message)
        raise
    store(ws, gpu, peaks)
    return peaks


def applies(ws: Workspace, gpu: GpuInfo | None) -> bool:
    """Whether a measurement of this GPU would draw the benchmark's floor: the benchmark writes FLOP
    and byte columns, and the product whose figures give the floor is this GPU's own."""
    harness = ws.config.harness
    if gpu is None or not harness.flops_column or not harness.bytes_column:
        return False
    entry = gpu.product_entry()
    if entry is None or (harness.floor_arch and entry.arch != harness.floor_arch):
        return False
    if harness.floor_product:
        try:
            return product_named(harness.floor_product).label == entry.label
        except KernelMcpError:
            return False
    return True


async def ensure_for_floor(ws: Workspace, gpu: GpuInfo | None, vendors: Vendors, progress: ProgressFn | None = None) -> str | None:
    """Measure the leased GPU once where its measurement would draw the benchmark's floor and none
    is kept; None when the floor can use one (or needs none), else why not, for the answer."""
    if gpu is None or not applies(ws, gpu) or cached(ws, gpu) is not None:
        return None
    failed = failure(ws, gpu)
    if failed:
        return f"no measurement of this GPU's peaks: the last try failed: {failed}; doctor tries again"
    if progress is not None:
        await progress(0, None, "measuring this GPU's peaks, once per GPU and driver (copy, FMA, matrix: a few seconds)")
    try:
        await measure(ws, gpu, vendors)
    except KernelMcpError as exc:
        return f"measuring this GPU's peaks failed: {inline(exc.message)[:300]}"
    except OSError as exc:  # the record could not be written: the benchmark goes on with the table
        return f"this GPU's measured peaks could not be kept: {exc.strerror or exc}"
    return None


# -- the floor: per resource, the higher of table and measurement ---------------------------------


def rate(value: float, unit: str) -> str:
    """3.02e12 -> '3.02 TB/s', 9.894e14 -> '989 TFLOP/s', 1.3074e15 -> '1307 TFLOP/s'."""
    scaled = value / 1e12
    digits = 0 if scaled >= 100 else 1 if scaled >= 10 else 2
    return f"{scaled:.{digits}f} {unit}"


@dataclass(frozen=True)
class Ceiling:
    """One resource of the floor: the table's figure, the measured one, and which is used."""

    name: str  # "memory", "bf16 matrix"
    unit: str  # "TB/s", "TFLOP/s"
    table: float | None
    measured: float | None

    @property
    def measured_usable(self) -> bool:
        return self.measured is not None and (self.table is None or self.measured <= MEASURED_ABOVE_TABLE * self.table)

    @property
    def origin(self) -> str:
        """'measured' where the measurement is used and above the table, else 'table'."""
        above = self.measured is not None and (self.table is None or self.measured > self.table)
        return "measured" if self.measured_usable and above else "table"

    @property
    def value(self) -> float | None:
        return self.measured if self.origin == "measured" else self.table

    def statement(self) -> str:
        """'memory 3.35 TB/s, table; measured 3.02 TB/s'."""
        used = f"{self.name} {rate(self.value, self.unit)}, {self.origin}" if self.value is not None else f"{self.name}: no figure"
        if self.origin == "measured":
            other = f"table {rate(self.table, self.unit)}" if self.table is not None else "no table figure"
        elif self.measured is None:
            other = "not measured"
        else:
            other = f"measured {rate(self.measured, self.unit)}"
            if not self.measured_usable and self.table:
                other += f", {self.measured / self.table:.2g}x the table's: not used (doctor shows it)"
        return f"{used}; {other}"


def measured_compute(peaks: MeasuredPeaks | None, dtype: str, engine: str) -> float | None:
    """The measured rate of this arithmetic, where the calibration measured it: FP32 on the vector
    units (its FMA rate), or the matrix units in the dtype it measured them in."""
    if peaks is None:
        return None
    if (dtype, engine) == ("fp32", "vector"):
        return peaks.fma_flops_per_s.value
    if engine == "matrix" and peaks.matrix_flops_per_s is not None and peaks.matrix_dtype == dtype:
        return peaks.matrix_flops_per_s.value
    return None


class Floor:
    """The roofline floor (seconds for a kernel's FLOPs and bytes) of one product's figures, each
    resource raised to this GPU's measurement where it measured higher. Called as floor(flops,
    bytes), as the benchmark's readers call it; `explain` says what drew one floor."""

    def __init__(self, spec: HardwareSpec, dtype: Dtype, engine: Engine | None, measured: MeasuredPeaks | None = None) -> None:
        self.spec, self.dtype, self.measured = spec, dtype, measured
        self.engine: Engine = engine or default_engine(dtype)
        self.memory = Ceiling("memory", "TB/s", spec.get(BANDWIDTH_KEY), measured.copy_bytes_per_s.value if measured else None)
        self.compute = Ceiling(
            f"{dtype} {self.engine}", "TFLOP/s", spec.get(f"peak_flops_{dtype}_{self.engine}"), measured_compute(measured, dtype, self.engine)
        )

    def roofline(self, flops: float, nbytes: float) -> Roofline:
        # without a measurement the table's figures go in as before (and a missing one is refused as before)
        return roofline(
            self.spec,
            flops=flops,
            bytes=max(nbytes, 1.0),
            dtype=self.dtype,
            engine=self.engine,
            peak_flops_per_s=self.compute.value if self.compute.measured is not None else None,
            bandwidth_bytes_per_s=self.memory.value if self.memory.measured is not None else None,
        )

    def __call__(self, flops: float, nbytes: float) -> float:
        return self.roofline(flops, nbytes).floor_seconds

    def explain(self, flops: float, nbytes: float) -> str:
        """The figure that drew this floor and the other one: 'memory 3.35 TB/s, table; measured 3.02 TB/s'."""
        return (self.memory if self.roofline(flops, nbytes).bound == "memory" else self.compute).statement()

    def refusal(self, seconds: float, flops: float, nbytes: float) -> str:
        """Why a measured time is impossible: '1.25 us measured, the floor is 97.2 us (memory 3.35
        TB/s, table; measured 3.02 TB/s): 78x under it'."""
        least = self(flops, nbytes)
        return f"{seconds * 1e6:.3g} us measured, the floor is {least * 1e6:.3g} us ({self.explain(flops, nbytes)}): {margin(seconds, least)}"

    def whose(self) -> str:
        """'H200 (sm_90, this GPU), table figures', or the measurement's date where one is used."""
        if self.measured is None:
            return f"{self.spec.whose()}, table figures"
        return f"{self.spec.whose()}, per resource the higher of the table and this GPU's measurement of {self.measured.when()}"


def floor_for_spec(ws: Workspace, spec: HardwareSpec, gpu: GpuInfo | None) -> Floor:
    """The floor of `spec` for the benchmark's arithmetic, with this GPU's kept measurement where
    the spec is this GPU's product."""
    harness = ws.config.harness
    peaks = cached(ws, gpu) if gpu is not None else None
    if peaks is not None and (gpu is None or gpu.product != spec.product_label):
        peaks = None  # the floor is another product's ([harness] floor_product): this GPU's figures are not its
    return Floor(spec, harness.floor_dtype, harness.floor_engine, peaks)


def margin(seconds: float, least: float) -> str:
    """How far a measured time is under its floor: '78x under it', '4.8% under it'."""
    ratio = least / seconds
    if ratio >= 100:
        return f"{ratio:,.0f}x under it"
    return f"{ratio:.3g}x under it" if ratio >= 1.5 else f"{(1 - seconds / least):.1%} under it"


# -- measured against the table ----------------------------------------------------------------


class QuantityComparison(BaseModel):
    quantity: str  # "copy bandwidth", "FMA fp32", "matrix bf16"
    unit: str
    measured: float
    table: float | None
    ratio: float | None  # measured / table
    disagrees: bool  # further apart than DISAGREEMENT
    reason: str | None = None  # what a disagreement may mean

    def line(self) -> str:
        """'copy bandwidth: measured 3.02 TB/s, table 3.35 TB/s (-9.9%)'."""
        if self.table is None or self.ratio is None:
            return f"{self.quantity}: measured {rate(self.measured, self.unit)}; the product table has no figure for it"
        text = f"{self.quantity}: measured {rate(self.measured, self.unit)}, table {rate(self.table, self.unit)} ({(self.ratio - 1) * 100:+.1f}%)"
        return text + (f"; DISAGREES by more than {DISAGREEMENT:.0%}: {self.reason}" if self.disagrees else "")


def _peak_clock(spec: HardwareSpec, engine: str) -> float | None:
    return next((value for key in PEAK_CLOCKS[engine] if (value := spec.get(key))), None)


def _why_low(peaks: MeasuredPeaks, spec: HardwareSpec, quantity: str, method: str) -> str:
    if quantity == "copy bandwidth":
        return (
            "the table's is the memory's theoretical peak (bus width x data rate), which a copy kernel does not reach in full; "
            "a GPU whose memory clock is held low, or that is not idle, reaches less still"
        )
    if "not the table's error" in method:  # the program says its method cannot reach this peak
        return method.rsplit("; ", 1)[-1]
    engine = "matrix" if quantity.startswith("matrix") else "vector"
    assumed, seen = _peak_clock(spec, engine), peaks.clock_mhz
    clocks = f"the table's peak assumes {assumed:.0f} MHz" if assumed else "the table's peak assumes the maximum clock"
    if seen:
        clocks += f", the clock seen while measuring was {seen:.0f} MHz"
    return f"{clocks}: a power or thermal limit, clocks held low or another load on the GPU lowers the rate"


def _why_high(ratio: float) -> str:
    text = "measured above the table: its figure is too low for this GPU, or it describes another product"
    if ratio > MEASURED_ABOVE_TABLE:
        return text + f"; over {MEASURED_ABOVE_TABLE:g}x the table's, so the floor does not use it: check the table and which product this GPU is"
    return text + "; the floor uses the measured figure"


def compare(peaks: MeasuredPeaks, spec: HardwareSpec) -> list[QuantityComparison]:
    """Each measured figure against the product table's, with its ratio and, where they differ by
    more than DISAGREEMENT, what that may mean."""
    rows = [
        ("copy bandwidth", "TB/s", peaks.copy_bytes_per_s.value, peaks.copy_bytes_per_s.method, BANDWIDTH_KEY),
        ("FMA fp32", "TFLOP/s", peaks.fma_flops_per_s.value, peaks.fma_flops_per_s.method, "peak_flops_fp32_vector"),
    ]
    if peaks.matrix_flops_per_s is not None and peaks.matrix_dtype:
        rows.append(
            (
                f"matrix {peaks.matrix_dtype}",
                "TFLOP/s",
                peaks.matrix_flops_per_s.value,
                peaks.matrix_flops_per_s.method,
                f"peak_flops_{peaks.matrix_dtype}_matrix",
            )
        )
    out = []
    for quantity, unit, measured, method, key in rows:
        table = spec.get(key)
        ratio = measured / table if table else None
        disagrees = ratio is not None and abs(ratio - 1) > DISAGREEMENT
        reason = None
        if disagrees and ratio is not None:
            reason = _why_low(peaks, spec, quantity, method) if ratio < 1 else _why_high(ratio)
        out.append(QuantityComparison(quantity=quantity, unit=unit, measured=measured, table=table, ratio=ratio, disagrees=disagrees, reason=reason))
    return out


def describe(gpu: GpuInfo, peaks: MeasuredPeaks, spec: HardwareSpec | None, fresh: bool) -> list[str]:
    """Doctor's lines for one GPU's measurement: when and on which driver, then each figure beside
    its table's ('GPU 0: copy bandwidth: measured 3.02 TB/s, table 3.35 TB/s (-9.9%)')."""
    who = f"GPU {gpu.index}"
    clock = f"; clock seen while measuring {peaks.clock_mhz:.0f} MHz" if peaks.clock_mhz else ""
    head = (
        f"{who} ({inline(gpu.product or gpu.name)}, driver {inline(peaks.driver_version or 'unknown')}): peaks measured "
        f"{peaks.when()}{', just now' if fresh else ''}{clock}"
    )
    lines = [head]
    if spec is None:
        figures = [f"copy bandwidth {rate(peaks.copy_bytes_per_s.value, 'TB/s')}", f"FMA fp32 {rate(peaks.fma_flops_per_s.value, 'TFLOP/s')}"]
        if peaks.matrix_flops_per_s is not None:
            figures.append(f"matrix {peaks.matrix_dtype} {rate(peaks.matrix_flops_per_s.value, 'TFLOP/s')}")
        lines.append(f"{who}: measured {', '.join(figures)}; no product table describes this GPU, so nothing to compare with")
    else:
        lines += [f"{who}: {row.line()}" for row in compare(peaks, spec)]
    if peaks.matrix_unavailable:
        lines.append(f"{who}: matrix rate not measured: {inline(peaks.matrix_unavailable)}")
    return lines
