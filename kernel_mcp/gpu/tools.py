"""The GPU tool: which GPUs are idle, busy or locked by another run."""

from __future__ import annotations

from kernel_mcp.gpu import gate
from kernel_mcp.tooling import READ_ONLY, ToolContext, ToolInput, ToolSpec


class GpuStatusInput(ToolInput):
    pass


async def _gpu_status(args: GpuStatusInput, ctx: ToolContext) -> gate.GpuStatus:
    ws = ctx.workspace()
    return await gate.gpu_status(ws.config.gate, str(ws.root), vendors=ctx.vendors)


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "gpu_status",
        "The GPUs now: utilization, memory, compute processes; which are idle and which locked by another run.",
        GpuStatusInput,
        gate.GpuStatus,
        _gpu_status,
        READ_ONLY,
        ("workspace", "gpu-monitor"),
        toolset="machine",
    ),
]
