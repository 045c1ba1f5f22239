"""The shared types: what every vendor's tools are read into and what capability code hands the
platforms, one shape for all of them (tests/test_contracts.py holds every platform to it).

This is the low layer: its modules import only the foundation (errors, untrusted, runner, sandbox,
the workspace and the hardware tables), never a capability package or `kernel_mcp.platforms`, so
that both sides can use them. Nothing is imported here: `kernel_mcp.models.<module>` names each.

- output.py: ToolOutput (every answer's base) and Image
- compile.py: KernelFacts, InstructionMix, Diagnostic; CompileJob and BackendOutput (one compile)
- occupancy.py: Occupancy and its limits
- gpu.py: GpuInfo, GpuProcess, GpuSample; MonitorQuery (one query of a GPU monitor)
- profile.py: ProfileSummary and its rows
- platform.py: what capability code asks of a platform, role by role, the requests it sends
  (ProfileRequest, TraceRequest, TraceOptions), and `Vendors`, the registry it is handed
"""
