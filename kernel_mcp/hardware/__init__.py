"""Hardware ground truth: sourced figures per target, occupancy and roofline calculators."""

from __future__ import annotations

from pathlib import Path

from kernel_mcp.errors import InvalidInput
from kernel_mcp.hardware.occupancy import Occupancy, occupancy
from kernel_mcp.hardware.roofline import Roofline, plot_png, roofline
from kernel_mcp.hardware.specs import KNOWN_ARCHS, Figure, HardwareSpec, arch_for_gpu, docs_index_dir, load_spec
from kernel_mcp.tooling import ToolOutput

__all__ = [
    "KNOWN_ARCHS", "Figure", "arch_for_gpu", "HardwareSpec", "HwSpecAnswer", "Occupancy", "OccupancyAnswer", "Roofline",
    "RooflineAnswer", "docs_index_dir", "hw_spec", "load_spec", "occupancy", "occupancy_answer", "roofline",
    "roofline_answer", "resource_notes",
]


class HwSpecAnswer(ToolOutput):
    arch: str
    product: str
    family: str
    figures: dict[str, Figure]

    def render(self) -> str:
        disputed = [key for key, fig in self.figures.items() if fig.disagreement]
        lines = [f"{self.arch}: {self.product} ({self.family}). Each figure: value unit [source]"]
        if disputed:  # named up front: a long table is cut to the answer budget from the end
            lines.append(f"sources disagree on {len(disputed)} figures (details under each): {', '.join(disputed)}")
        for key, fig in self.figures.items():
            value = f"{fig.value:g}" if isinstance(fig.value, (int, float)) else str(fig.value)
            lines.append(f"{key} = {value} {fig.unit or ''} [{fig.source}]")
            if fig.disagreement:
                lines.append(f"  sources disagree: {fig.disagreement}")
        return "\n".join(lines)


def hw_spec(arch: str) -> HwSpecAnswer:
    spec = load_spec(arch)
    return HwSpecAnswer(arch=spec.arch, product=spec.product, family=spec.family, figures=spec.figures)


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


def resource_notes(arch: str, *, vgprs: int, agprs: int = 0, sgprs: int = 0, lds_bytes: int = 0, block_size: int = 64) -> list[str]:
    """What is wrong or doubtful about one kernel's resource counts (read from a profiler
    database, say), as sentences; never raises. Empty when the counts are ones a wave can have."""
    try:
        return occupancy(load_spec(arch), vgprs=vgprs, agprs=agprs, sgprs=sgprs, lds_bytes=lds_bytes, block_size=block_size).notes
    except InvalidInput as exc:
        return [f"not a possible kernel on {arch}: {exc.message}"]


def occupancy_answer(arch: str, vgprs: int, agprs: int, sgprs: int, lds_bytes: int, block_size: int) -> OccupancyAnswer:
    spec = load_spec(arch)
    return OccupancyAnswer(occupancy=occupancy(spec, vgprs=vgprs, agprs=agprs, sgprs=sgprs, lds_bytes=lds_bytes, block_size=block_size))


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
