"""The hardware tools: sourced figures of a target, occupancy and roofline calculators."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kernel_mcp import hardware
from kernel_mcp.errors import KernelMcpError
from kernel_mcp.tooling import READ_ONLY, Image, ToolContext, ToolInput, ToolSpec
from kernel_mcp import arch_registry
from kernel_mcp.hardware.spec_view import MAX_KEYS, Section
from kernel_mcp.workspace.config import Arch  # the one definition of the targets, shared with kernel-mcp.toml


PLOT = "roofline.png"

PRODUCT = Field(default=None, min_length=1, max_length=80, description="as gpu_status names it")  # default: the workspace's, else the arch's reference
ARCH = Field(default=None)  # default: the product's arch, else the workspace's target


def _defaults(ctx: ToolContext) -> dict:
    """The workspace's target arch and product, for a call that names neither."""
    try:
        target = ctx.workspace().config.target
    except KernelMcpError:  # no readable workspace config: the schema's default target
        return {"default_arch": arch_registry.DEFAULT_ARCH}
    return {"default_arch": target.arch, "default_product": target.product}


class HwSpecInput(ToolInput):
    arch: Arch | None = ARCH
    product: str | None = PRODUCT
    section: Section | None = Field(default=None, description="this section in full: notes, sources; omit for a summary")
    keys: list[str] | None = Field(default=None, max_length=MAX_KEYS, description="these figures in full, by summary key")


class OccupancyInput(ToolInput):
    arch: Arch | None = ARCH
    product: str | None = PRODUCT
    vgprs: int = Field(ge=0, le=512, description="per lane (AMD) or registers per thread (NVIDIA)")
    agprs: int = Field(default=0, ge=0, le=512)
    sgprs: int = Field(default=0, ge=0, le=112)
    lds_bytes: int = Field(default=0, ge=0, description="LDS / shared memory per workgroup")
    block_size: int = Field(default=256, ge=1, le=1024)


class RooflineInput(ToolInput):
    arch: Arch | None = ARCH
    product: str | None = PRODUCT
    # finite only: NaN and inf are refused as such (the roofline refuses subnormal figures too)
    flops: float = Field(ge=0, allow_inf_nan=False, description="FMA = 2")
    bytes: float = Field(gt=0, allow_inf_nan=False, description="fewest it must move through device memory")
    seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False, description="measured time")
    dtype: Literal["fp64", "fp32", "tf32", "fp16", "bf16", "fp8"] = "fp32"
    engine: Literal["vector", "matrix"] | None = Field(default=None, description="ALUs or matrix cores; default by dtype")
    plot: bool = False


async def _hw_spec(args: HwSpecInput, ctx: ToolContext) -> hardware.HwSpecAnswer:
    return hardware.hw_spec(args.arch, section=args.section, keys=args.keys, product=args.product, **_defaults(ctx)).with_budget(ctx.state.budget())


async def _occupancy(args: OccupancyInput, ctx: ToolContext) -> hardware.OccupancyAnswer:
    return hardware.occupancy_answer(
        args.arch,
        vgprs=args.vgprs,
        agprs=args.agprs,
        sgprs=args.sgprs,
        lds_bytes=args.lds_bytes,
        block_size=args.block_size,
        vendors=ctx.vendors,
        product=args.product,
        **_defaults(ctx),
    )


async def _roofline(args: RooflineInput, ctx: ToolContext) -> hardware.RooflineAnswer:
    run = plot_path = plot_name = None
    if args.plot:
        run = ctx.new_run(args.model_dump())
        plot_path, plot_name = run.path(PLOT), run.uri(PLOT)
    answer = hardware.roofline_answer(
        args.arch,
        flops=args.flops,
        bytes=args.bytes,
        dtype=args.dtype,
        engine=args.engine,
        seconds=args.seconds,
        plot_path=plot_path,
        plot_name=plot_name,
        product=args.product,
        **_defaults(ctx),
    )
    if run is not None:
        # read back through the run (a regular file, never a link): the picture the agent sees is the one kept
        with run.open(PLOT) as handle:
            answer.attach(Image(handle.read(), "image/png", path=plot_path, uri=plot_name))
    return answer


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "hw_spec",
        "Hardware figures with their primary sources (counts, clocks, registers, LDS, caches, bandwidth, peaks) "
        f"of a product or an arch: {arch_registry.describe()}. Use it instead of recalling a figure.",
        HwSpecInput,
        hardware.HwSpecAnswer,
        _hw_spec,
        READ_ONLY,
        toolset="hardware",
    ),
    ToolSpec(
        "occupancy",
        "Occupancy (waves per SIMD; warps per SM sub-partition on NVIDIA) from registers, LDS and block size: the limiter, the arithmetic.",
        OccupancyInput,
        hardware.OccupancyAnswer,
        _occupancy,
        READ_ONLY,
        toolset="hardware",
    ),
    ToolSpec(
        "roofline",
        "Roofline of a kernel from its FLOPs and bytes: memory- or compute-bound, the time floor and a measured time's distance from it; plot=true draws it.",
        RooflineInput,
        hardware.RooflineAnswer,
        _roofline,
        READ_ONLY,
        toolset="profiling",
    ),
]
