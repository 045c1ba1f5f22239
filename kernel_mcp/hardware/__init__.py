"""Hardware ground truth: sourced figures per target, occupancy and roofline calculators."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp.errors import InvalidInput
from kernel_mcp.hardware.occupancy import Occupancy, occupancy
from kernel_mcp.hardware.roofline import Roofline, plot_png, roofline
from kernel_mcp.hardware.spec_view import HwSpecAnswer, hw_spec_answer
from kernel_mcp.hardware.specs import KNOWN_ARCHS, Figure, HardwareSpec, arch_for_gpu, docs_index_dir, load_spec
from kernel_mcp.tooling import ToolOutput

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

__all__ = [
    "KNOWN_ARCHS", "Figure", "arch_for_gpu", "HardwareSpec", "HwSpecAnswer", "Occupancy", "OccupancyAnswer", "Roofline",
    "RooflineAnswer", "docs_index_dir", "hw_spec", "load_spec", "occupancy", "occupancy_answer", "roofline",
    "roofline_answer", "resource_notes",
]


def hw_spec(arch: str, section: str | None = None, keys: list[str] | None = None) -> HwSpecAnswer:
    return hw_spec_answer(load_spec(arch), section=section, keys=keys)


class OccupancyAnswer(ToolOutput):
    occupancy: Occupancy

    def render(self) -> str:
        occ = self.occupancy
        lines = [f"{occ.arch}: {occ.waves} {occ.unit} of {occ.max_waves}; limited by {', '.join(occ.limiter)}"]
        lines += [f"  {line}" for line in occ.explanation]
        lines += [f"note: {n}" for n in occ.notes]
        lines += [f"sources disagree: {d}" for d in occ.disagreements]
        lines += ["sources:"] + [f"  {s}" for s in occ.sources]
        return "\n".join(lines)


def resource_notes(arch: str, *, vgprs: int, agprs: int = 0, sgprs: int = 0, lds_bytes: int = 0, block_size: int = 64, vendors: Vendors) -> list[str]:
    """What is wrong or doubtful about one kernel's resource counts (read from a profiler
    database, say), as sentences; never raises. Empty when the counts are ones a wave can have."""
    try:
        return occupancy(load_spec(arch), vgprs=vgprs, agprs=agprs, sgprs=sgprs, lds_bytes=lds_bytes, block_size=block_size, vendors=vendors).notes
    except InvalidInput as exc:
        return [f"not a possible kernel on {arch}: {exc.message}"]


def occupancy_answer(arch: str, vgprs: int, agprs: int, sgprs: int, lds_bytes: int, block_size: int, vendors: Vendors) -> OccupancyAnswer:
    spec = load_spec(arch)
    return OccupancyAnswer(occupancy=occupancy(spec, vgprs=vgprs, agprs=agprs, sgprs=sgprs, lds_bytes=lds_bytes, block_size=block_size, vendors=vendors))


class RooflineAnswer(ToolOutput):
    roofline: Roofline

    def render(self) -> str:
        r = self.roofline
        lines = [
            r.short(),
            f"peak {r.peak_flops_per_s / 1e12:.1f} TFLOP/s [{r.peak_source}]",
            f"bandwidth {r.bandwidth_bytes_per_s / 1e12:.2f} TB/s [{r.bandwidth_source}]",
        ]
        if r.plot:
            lines.append(f"plot: {r.plot}")
        return "\n".join(lines)


def roofline_answer(arch: str, flops: float, bytes: float, dtype, engine, seconds, plot_path: Path | None, plot_name: str | None) -> RooflineAnswer:
    result = roofline(load_spec(arch), flops=flops, bytes=bytes, dtype=dtype, engine=engine, seconds=seconds)
    if plot_path is not None:
        plot_png([result], plot_path)
        result.plot = plot_name or str(plot_path)
    return RooflineAnswer(roofline=result)
