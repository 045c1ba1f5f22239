"""Hardware ground truth: sourced figures per target, occupancy and roofline calculators."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp.errors import InvalidInput
from kernel_mcp.hardware.occupancy import Occupancy, occupancy
from kernel_mcp.hardware.roofline import Roofline, plot_png, roofline
from kernel_mcp.hardware.spec_view import HwSpecAnswer, hw_spec_answer
from kernel_mcp.hardware.specs import (
    KNOWN_ARCHS,
    Figure,
    HardwareSpec,
    ProductEntry,
    arch_for_gpu,
    docs_index_dir,
    load_spec,
    product_for_gpu,
    product_named,
)
from kernel_mcp.tooling import ToolOutput

if TYPE_CHECKING:
    from kernel_mcp.models.platform import Vendors

__all__ = [
    "KNOWN_ARCHS",
    "Figure",
    "arch_for_gpu",
    "HardwareSpec",
    "ProductEntry",
    "product_for_gpu",
    "product_named",
    "spec_for",
    "HwSpecAnswer",
    "Occupancy",
    "OccupancyAnswer",
    "Roofline",
    "RooflineAnswer",
    "docs_index_dir",
    "hw_spec",
    "load_spec",
    "occupancy",
    "occupancy_answer",
    "roofline",
    "roofline_answer",
    "resource_notes",
]


def spec_for(arch: str | None, product: str | None, default_arch: str | None = None, default_product: str | None = None) -> HardwareSpec:
    """The figures a calculator uses: the product named (its arch, which a named arch must match),
    else the arch named (or the workspace's) with the workspace's product where it is of that arch,
    else the arch's reference product, which the answer names as such."""
    if product:
        entry = product_named(product)
        return load_spec(arch or entry.arch, entry)
    arch = arch or default_arch
    if arch is None:
        raise InvalidInput("name an arch or a product")
    if default_product:
        entry = product_named(default_product)
        if entry.arch == arch:
            return load_spec(arch, entry, by="the workspace's product")
    return load_spec(arch)


def hw_spec(
    arch: str | None,
    section: str | None = None,
    keys: list[str] | None = None,
    product: str | None = None,
    default_arch: str | None = None,
    default_product: str | None = None,
) -> HwSpecAnswer:
    return hw_spec_answer(spec_for(arch, product, default_arch, default_product), section=section, keys=keys)


class OccupancyAnswer(ToolOutput):
    occupancy: Occupancy

    def render(self) -> str:
        occ = self.occupancy
        lines = [f"{occ.figures_of or occ.arch}: {occ.waves} {occ.unit} of {occ.max_waves}; limited by {', '.join(occ.limiter)}"]
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


def occupancy_answer(
    arch: str | None,
    vgprs: int,
    agprs: int,
    sgprs: int,
    lds_bytes: int,
    block_size: int,
    vendors: Vendors,
    product: str | None = None,
    default_arch: str | None = None,
    default_product: str | None = None,
) -> OccupancyAnswer:
    spec = spec_for(arch, product, default_arch, default_product)
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


def roofline_answer(
    arch: str | None,
    flops: float,
    bytes: float,
    dtype,
    engine,
    seconds,
    plot_path: Path | None,
    plot_name: str | None,
    product: str | None = None,
    default_arch: str | None = None,
    default_product: str | None = None,
) -> RooflineAnswer:
    result = roofline(spec_for(arch, product, default_arch, default_product), flops=flops, bytes=bytes, dtype=dtype, engine=engine, seconds=seconds)
    if plot_path is not None:
        plot_png([result], plot_path)
        result.plot = plot_name or str(plot_path)
    return RooflineAnswer(roofline=result)
