"""The roofline: the time floor of a kernel from its FLOPs and bytes against the chip's peaks.

attainable FLOP/s = min(peak FLOP/s, arithmetic intensity x bandwidth); the floor time is the
larger of FLOPs/peak and bytes/bandwidth. A measured time is compared with that floor. Peaks come
from the hardware table (with sources) unless the caller passes measured ceilings.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from kernel_mcp.errors import BackendMissing, InvalidInput
from kernel_mcp.hardware.specs import HardwareSpec

Dtype = Literal["fp64", "fp32", "tf32", "fp16", "bf16", "fp8"]
Engine = Literal["vector", "matrix"]
BANDWIDTH_KEY = "hbm_bandwidth_bytes_per_s"


class Roofline(BaseModel):
    arch: str
    figures_of: str | None = None  # whose peaks and bandwidth: "H200 (sm_90)"
    dtype: str
    engine: str
    flops: float
    bytes: float
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    peak_source: str
    bandwidth_source: str
    arithmetic_intensity: float
    ridge_point: float
    bound: Literal["memory", "compute"]
    attainable_flops_per_s: float
    floor_seconds: float
    seconds: float | None = None
    achieved_flops_per_s: float | None = None
    achieved_bytes_per_s: float | None = None
    fraction_of_attainable: float | None = None
    times_floor: float | None = None
    plot: str | None = None

    def short(self) -> str:
        text = (
            f"{self.figures_of or self.arch} {self.dtype}/{self.engine}: AI {self.arithmetic_intensity:.2f} FLOP/B, ridge {self.ridge_point:.1f}: "
            f"{self.bound}-bound; floor {self.floor_seconds * 1e6:.2f} us"
        )
        if self.seconds is not None:
            text += f"; measured {self.seconds * 1e6:.2f} us = {self.times_floor:.2f}x the floor"
            # no FLOPs (a copy kernel) attain no FLOP rate to be a fraction of: the memory floor alone says it
            text += (
                f" ({self.fraction_of_attainable:.0%} of attainable)"
                if self.fraction_of_attainable is not None
                else " (no FLOPs: against the memory floor only)"
            )
        return text


def default_engine(dtype: str) -> Engine:
    return "vector" if dtype in ("fp64", "fp32") else "matrix"


def _usable(name: str, value: float | None) -> None:
    """Refuse a figure the roofline cannot divide with: not finite (NaN, inf), or subnormal, whose
    quotients overflow to inf (1 / 1e-310) and whose digits are not a measurement's."""
    if value is None:
        return
    if not math.isfinite(value):
        raise InvalidInput(f"{name} is {value}: not a finite number", hint="give the count (FLOPs, bytes) or time the kernel has, as a plain number")
    if value != 0 and abs(value) < sys.float_info.min:
        raise InvalidInput(f"{name} is {value!r}: a subnormal number (below {sys.float_info.min:.3g}), not a count or time of a kernel")


def roofline(
    spec: HardwareSpec,
    *,
    flops: float,
    bytes: float,
    dtype: Dtype = "fp32",
    engine: Engine | None = None,
    seconds: float | None = None,
    peak_flops_per_s: float | None = None,
    bandwidth_bytes_per_s: float | None = None,
) -> Roofline:
    for name, value in (
        ("flops", flops),
        ("bytes", bytes),
        ("seconds", seconds),
        ("peak_flops_per_s", peak_flops_per_s),
        ("bandwidth_bytes_per_s", bandwidth_bytes_per_s),
    ):
        _usable(name, value)
    if flops < 0 or bytes <= 0:
        raise InvalidInput("flops must be >= 0 and bytes > 0")
    flops += 0.0  # -0.0 is no FLOPs, as 0 is, not a negative intensity
    if seconds is not None and seconds <= 0:
        raise InvalidInput("seconds must be > 0")
    engine = engine or default_engine(dtype)
    key = f"peak_flops_{dtype}_{engine}"
    if peak_flops_per_s is None:
        if key not in spec.figures:
            have = sorted(k for k in spec.figures if k.startswith("peak_flops_"))
            if not have:  # an arch's facts alone: the peaks are a product's
                raise InvalidInput(f"{spec.whose()}: the peak rates and bandwidth are a product's figures", hint=spec.product_hint())
            raise InvalidInput(f"{spec.whose()} has no sourced peak for {dtype} on the {engine} units", hint="available: " + ", ".join(have))
        peak, peak_source = float(spec.value(key)), spec.cite(key)
    else:
        peak, peak_source = peak_flops_per_s, "given by the caller (measured)"
    if bandwidth_bytes_per_s is None:
        bw, bw_source = float(spec.value(BANDWIDTH_KEY)), spec.cite(BANDWIDTH_KEY)
    else:
        bw, bw_source = bandwidth_bytes_per_s, "given by the caller (measured)"
    intensity = flops / bytes
    ridge = peak / bw
    attainable = min(peak, intensity * bw)
    floor = max(flops / peak, bytes / bw)
    result = Roofline(
        arch=spec.arch,
        figures_of=spec.whose(),
        dtype=dtype,
        engine=engine,
        flops=flops,
        bytes=bytes,
        peak_flops_per_s=peak,
        bandwidth_bytes_per_s=bw,
        peak_source=peak_source,
        bandwidth_source=bw_source,
        arithmetic_intensity=intensity,
        ridge_point=ridge,
        bound="compute" if intensity >= ridge else "memory",
        attainable_flops_per_s=attainable,
        floor_seconds=floor,
    )
    if seconds is not None:
        result.seconds = seconds
        result.achieved_flops_per_s = flops / seconds
        result.achieved_bytes_per_s = bytes / seconds
        result.fraction_of_attainable = (flops / seconds) / attainable if attainable else None
        result.times_floor = seconds / floor
    overflowed = [name for name, value in result.model_dump().items() if isinstance(value, float) and not math.isfinite(value)]
    if overflowed:  # each input is finite, but e.g. 1e300 FLOPs over 1e-300 bytes is not
        raise InvalidInput(
            f"the roofline of these figures overflows: {', '.join(overflowed)} would be infinite",
            hint="flops, bytes and seconds are a kernel's: FLOPs and bytes in plain counts, seconds in seconds",
        )
    return result


def plot_png(points: list[Roofline], path: Path, title: str | None = None) -> Path:
    """Write a log-log roofline with each point (one chip and precision per plot)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise BackendMissing("matplotlib is needed for the roofline plot", hint="pip install matplotlib") from None
    first = points[0]
    # a log axis has no 0: an intensity of 0 (no FLOPs, or FLOPs that underflow against the bytes) spans no range and is not drawn
    marks = [x for x in [*(p.arithmetic_intensity for p in points), first.ridge_point] if x > 0]
    low, high = (math.log10(min(marks) / 8), math.log10(max(marks) * 8)) if marks else (-3.0, 3.0)
    xs = [10 ** (low + (high - low) * i / 200) for i in range(201)]  # in logs: the ratio of the ends may overflow
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    ax.loglog(xs, [min(first.peak_flops_per_s, x * first.bandwidth_bytes_per_s) for x in xs], color="black", label="roof")
    for p in points:
        if p.achieved_flops_per_s and p.arithmetic_intensity > 0:
            ax.scatter([p.arithmetic_intensity], [p.achieved_flops_per_s], zorder=3)
            ax.annotate(
                f"{p.times_floor:.1f}x floor", (p.arithmetic_intensity, p.achieved_flops_per_s), textcoords="offset points", xytext=(5, -12), fontsize=8
            )
    ax.axvline(first.ridge_point, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(title or f"{first.arch} roofline ({first.dtype}, {first.engine})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
