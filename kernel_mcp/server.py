"""The MCP server: it only lists the tools, prompts and resources and registers them. Each tool is
one input model, one capability call and one output model, defined by the package that owns the
capability (its `tools` module), which imports no MCP module. The MCP SDK is imported only here, in
`mcp_adapter` (tools), `mcp_resources` (run artifacts), `mcp_tasks` (long tools as MCP Tasks), and by the front ends (`cli`, `http_security`)."""

from __future__ import annotations

from pathlib import Path

import anyio

from kernel_mcp import __version__, doctor, platforms
from kernel_mcp.bench import tools as bench_tools
from kernel_mcp.compile import tools as compile_tools
from kernel_mcp.docs import tools as docs_tools
from kernel_mcp.errors import KernelMcpError
from kernel_mcp.gpu import tools as gpu_tools
from kernel_mcp.hardware import tools as hardware_tools
from kernel_mcp.http_security import HttpPolicy
from kernel_mcp.ledger import tools as ledger_tools
from kernel_mcp.mcp_adapter import register
from kernel_mcp.mcp_resources import KernelMcpServer, register_run_artifacts
from kernel_mcp.mcp_tasks import TasksExtension, keep_out_of_the_handshake
from kernel_mcp.profile import tools as profile_tools
from kernel_mcp.tooling import ServerState, ToolSpec
from kernel_mcp.toolsets import tools_load_spec
from kernel_mcp.trace import tools as trace_tools
from kernel_mcp.workspace import commands, tools as workspace_tools
from kernel_mcp.workspace.config import ListedTools

INSTRUCTIONS = """\
kernel-mcp supplies facts about GPU kernels that must not be guessed: what this machine can do
(doctor), the workspace's fixed benchmark and commands, and the raw output of every run.
Answers are short; full outputs are kept as run artifacts (run_artifacts tool, or resources
kernel-mcp://runs/<run-id>/<file>, long texts in pages: ?page=N)."""


TOOLS: list[ToolSpec] = [
    *doctor.TOOLS,
    *workspace_tools.TOOLS,
    *compile_tools.TOOLS,
    *hardware_tools.TOOLS,
    *docs_tools.TOOLS,
    *gpu_tools.TOOLS,
    *bench_tools.TOOLS,
    *ledger_tools.TOOLS,
    *profile_tools.TOOLS,
    *trace_tools.TOOLS,
]
# what tools/list shows beyond the core toolset is loaded by this tool (see kernel_mcp.toolsets)
TOOLS.append(tools_load_spec(TOOLS))


def build_server(workspace_dir: str | Path | None, http: HttpPolicy | None = None, tools: ListedTools | None = None) -> KernelMcpServer:
    """The server; with an HTTP policy that holds a token, every HTTP request must bear it. `tools`
    says which tools tools/list shows ("core", the rest once loaded, or "all"); None: the
    workspace's `[server] tools`."""
    return _assemble(workspace_dir, http, tools)[0]


def serve_stdio(workspace_dir: str | Path, tools: ListedTools | None = None) -> None:
    """Serve over stdio until the client leaves (closes stdin). Tasks still running then run to their
    end and store their answers, read back by the next server on the workspace, before the process
    exits: a session that ends mid-benchmark loses nothing (see TasksExtension.finish_running)."""
    server, tasks = _assemble(workspace_dir, None, tools)

    async def serve() -> None:
        await server.run_stdio_async()
        await tasks.finish_running()

    anyio.run(serve)


def _assemble(workspace_dir: str | Path | None, http: HttpPolicy | None, tools: ListedTools | None = None) -> tuple[KernelMcpServer, TasksExtension]:
    # the platforms are resolved here, at the top, and handed down: no capability package imports them
    state = ServerState(Path(workspace_dir) if workspace_dir else None, platforms.VENDORS, tools=tuple(TOOLS), listed=tools)
    auth, verifier = http.auth() if http is not None else (None, None)
    # the long tools run as MCP Tasks for a request that declares the extension (see mcp_tasks)
    tasks = TasksExtension(state, TOOLS)
    server = KernelMcpServer(
        "kernel-mcp",
        version=__version__,
        instructions=INSTRUCTIONS,
        auth=auth,
        token_verifier=verifier,
        extensions=[tasks],
        listed=state.listed_tools,
    )
    keep_out_of_the_handshake(server)
    for spec in TOOLS:
        register(server, state, spec)

    from kernel_mcp import skills

    for skill in skills.all_skills():

        def make_prompt(skill=skill):
            def prompt(goal: str = "") -> str:
                return skill.prompt(goal)

            return prompt

        server.prompt(name=skill.name, description=skill.description)(make_prompt())
        # the templates a skill names as beside it, for a client that reads them on their own
        for name in skill.files:

            def make_file(skill=skill, name=name):
                def read() -> str:
                    return skill.read(name)

                return read

            server.resource(skill.resource_uri(name), name=f"{skill.name}/{name}", description=f"{name} of the {skill.name} prompt", mime_type="text/markdown")(
                make_file()
            )

    @server.resource("kernel-mcp://runs", name="runs", description="Recent runs of this workspace", mime_type="text/plain")
    def list_runs() -> str:
        try:
            return commands.read_runs(state.workspace().runs, commands.RunRef(), state.budget()).render()
        except KernelMcpError as exc:
            return exc.render()

    register_run_artifacts(server, state)
    return server, tasks
