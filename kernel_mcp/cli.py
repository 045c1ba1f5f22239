"""`kernel-mcp`: serve the tools to an MCP client, or run any of them by hand.

`kernel-mcp call TOOL key=value ...` goes through the same server, in process, over a real MCP
client, so a person at the shell gets exactly what the agent gets.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kernel_mcp import __version__
from kernel_mcp.errors import InvalidInput, KernelMcpError

# Modules beyond these are imported where a command needs them: `--version` and `--help` stay quick.
if TYPE_CHECKING:
    from kernel_mcp.tooling import ToolSpec
    from kernel_mcp.workspace import Workspace

WORKSPACE_ENV = "KERNEL_MCP_WORKSPACE"
DEFAULT_PORT = 8765


def default_workspace() -> str:
    return os.environ.get(WORKSPACE_ENV) or os.getcwd()


def register_line(workspace: Path) -> str:
    """A `claude mcp add` line that starts this very install, with no venv to activate first (a bare
    `kernel-mcp` is on PATH only inside the venv that installed it)."""
    import shlex

    argv = [sys.executable, "-m", "kernel_mcp", "serve", "--workspace", str(workspace)]
    return "claude mcp add kernel-mcp -- " + shlex.join(argv)


def parse_http(value: str) -> tuple[str, int]:
    """'HOST:PORT', ':PORT' or 'PORT'; the host defaults to loopback."""
    host, _, port = value.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--http wants HOST:PORT, got {value!r}") from None
    if not 0 < number < 65536:
        raise argparse.ArgumentTypeError(f"port out of range: {number}")
    return host, number


def find_tool(name: str) -> ToolSpec:
    from difflib import get_close_matches

    from kernel_mcp.server import TOOLS

    specs = {spec.name: spec for spec in TOOLS}
    if name in specs:
        return specs[name]
    close = get_close_matches(name, specs, n=3)
    raise InvalidInput(f"no tool named {name!r}", hint=("did you mean " + " or ".join(close) + "? " if close else "") + "kernel-mcp tools lists them")


def run_uri_pattern() -> re.Pattern:
    """A run's file as an MCP client names it (kernel-mcp://runs/<run-id>/<file>), or the run alone."""
    from kernel_mcp.workspace.runs import RESOURCE_SCHEME

    return re.compile(re.escape(RESOURCE_SCHEME) + r"://runs/([0-9A-Za-z_-]+)(?:/([A-Za-z0-9_][A-Za-z0-9_.-]*))?")


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def local_paths(value: Any, runs_root: Path) -> Any:
    """`value` (text, or structured content) with each run URI replaced by the path of the file or
    run folder it names, under the workspace's `.kernel-mcp/runs/`. The tools keep answering with
    URIs, which is what an MCP client opens: this is the command line's rendering only."""
    if isinstance(value, str):

        def path(match: re.Match) -> str:
            run_id, name = match.group(1), match.group(2) or ""
            kept = name.rstrip(".")  # a full stop ending the sentence is not part of the file name
            return _shown(runs_root / run_id / kept if kept else runs_root / run_id) + name[len(kept) :]

        return run_uri_pattern().sub(path, value)
    if isinstance(value, list):
        return [local_paths(item, runs_root) for item in value]
    if isinstance(value, dict):
        return {key: local_paths(item, runs_root) for key, item in value.items()}
    return value


def quiet_sdk_logging() -> None:
    """The SDK logs each refused call on stderr, besides the error result printed here: a root
    logger set up first, at WARNING, makes the SDK's own logging.basicConfig do nothing."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)


async def call_tool(workspace: Path, tool: str, arguments: dict, runs_root: Path):
    from mcp import Client

    from kernel_mcp.server import build_server

    async def show_progress(progress: float, total: float | None, message: str | None) -> None:
        print(f"... {local_paths(message, runs_root) if message else progress}", file=sys.stderr)

    async with Client(build_server(workspace)) as client:
        return await client.call_tool(tool, arguments, progress_callback=show_progress)


def call_command(args) -> int:
    """One tool, as the agent would call it; the answer on stdout, an error result on stderr."""
    if args.tool is None:
        if args.help:
            print(args.call_help())
            return 0
        raise InvalidInput("call needs a TOOL", hint="kernel-mcp tools lists them; kernel-mcp call TOOL --help its arguments")
    from kernel_mcp import tool_arguments
    from kernel_mcp.workspace import Workspace

    spec = find_tool(args.tool)
    if args.help:
        print(tool_arguments.describe(spec))
        return 0
    workspace = Workspace.open(args.workspace or default_workspace())
    arguments = tool_arguments.parse_pairs(spec, args.arguments)
    tool_arguments.check(spec, arguments)
    return run_tool(workspace, spec.name, arguments, args.json)


def block_text(block) -> str:
    """A content block as a terminal shows it: a picture by the file it is kept in, not its base64."""
    if block.type == "image":
        return f"[image {block.mime_type}: {(block.meta or {}).get('kernel-mcp/file', 'not kept on disk')}]"
    return getattr(block, "text", "")


def run_tool(workspace: Workspace, tool: str, arguments: dict, as_json: bool = False) -> int:
    quiet_sdk_logging()
    result = asyncio.run(call_tool(workspace.root, tool, arguments, workspace.runs.root))
    text = local_paths("\n".join(block_text(block) for block in result.content), workspace.runs.root)
    if result.is_error:
        if as_json and result.structured_content is not None:  # a failed answer (a compile that did not build) still has its data
            print(json.dumps(local_paths(result.structured_content, workspace.runs.root), indent=1))
        print(text, file=sys.stderr)  # "kind: message" and a hint line (KernelMcpError.render), or the failed answer's text
        return 1
    print(json.dumps(local_paths(result.structured_content, workspace.runs.root), indent=1) if as_json else text)
    return 0


async def published_schemas() -> dict[str, dict]:
    """Each tool's input schema as the server publishes it to the agent."""
    from kernel_mcp.server import build_server

    return {tool.name: tool.input_schema for tool in await build_server(None).list_tools()}


def tools_command(args) -> int:
    from kernel_mcp import tool_arguments
    from kernel_mcp.server import TOOLS

    spec = find_tool(args.tool) if args.tool else None
    if args.schema:
        schemas = asyncio.run(published_schemas())
        print(json.dumps(schemas[spec.name] if spec else schemas, indent=1))
    elif spec:
        print(tool_arguments.describe(spec))
    else:
        for each in TOOLS:
            print(f"{each.name:<18} {each.description}")
    return 0


def waiting_message(workspace: Path) -> str:
    return (
        f"kernel-mcp: serving the tools of {workspace} over stdio: this waits for an MCP client speaking JSON-RPC on\n"
        "stdin, not for typed commands. Let a client start it instead, e.g. Claude Code:\n"
        f"  {register_line(workspace)}\n"
        "Run one tool by hand with `kernel-mcp call TOOL key=value ...`. Ctrl-C stops."
    )


def _leave_at_once(signum: int, frame: object) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(128 + signal.SIGINT)


def serve(
    workspace: str | None,
    http: tuple[str, int] | None,
    token_file: str | None = None,
    allow_hosts: list[str] | None = None,
    allow_origins: list[str] | None = None,
    no_token: bool = False,
    tools: Literal["core", "all"] | None = None,
) -> None:
    from kernel_mcp.workspace import Workspace

    root = Workspace.open(workspace).root  # a folder that is not there is refused now, not at the first call
    if http is None and no_token:
        raise InvalidInput("--no-token is an option of --http (stdio has no token)")
    if http is None:
        # The stdio transport reads stdin in a worker thread that no cancel interrupts: on Ctrl-C
        # the default handling waits for one more line, then prints a traceback per task. Leave at
        # once instead; a command still running dies with the server (see runner).
        signal.signal(signal.SIGINT, _leave_at_once)
        if sys.stdin is not None and sys.stdin.isatty():
            print(waiting_message(root), file=sys.stderr)
    if http is None:
        from kernel_mcp.server import serve_stdio

        serve_stdio(root, tools)
        return
    from kernel_mcp import http_security
    from kernel_mcp.server import build_server

    host, port = http
    policy = http_security.policy(host, port, http_security.read_token(token_file), allow_hosts, allow_origins, no_token=no_token)
    server = build_server(root, policy, tools)
    if policy.token is None:
        print(f"kernel-mcp: serving on {host} without a token (--no-token): any user of this machine can run the workspace's commands", file=sys.stderr)
    elif not http_security.is_loopback(host):
        print(
            f"kernel-mcp: serving on {host}, which is not loopback: every request must bear the token; Host must be one of "
            + ", ".join(policy.transport_security.allowed_hosts),
            file=sys.stderr,
        )
    if policy.generated:
        # Printed once, here only: it is never logged or stored.
        print(f"kernel-mcp: bearer token (send 'Authorization: Bearer <token>'): {policy.token}", file=sys.stderr)
    asyncio.run(server.run_streamable_http_async(host=host, port=port, transport_security=policy.transport_security))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernel-mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"kernel-mcp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("serve", help="serve the MCP tools (stdio by default)")
    p.add_argument("--workspace", default=None, help=f"workspace folder (default: ${WORKSPACE_ENV} or the current folder)")
    p.add_argument("--http", type=parse_http, default=None, metavar="HOST:PORT", help="serve streamable HTTP instead (host defaults to 127.0.0.1)")
    p.add_argument(
        "--token-file",
        default=None,
        metavar="FILE",
        help="HTTP bearer token, read from FILE (or set $KERNEL_MCP_HTTP_TOKEN); required, on loopback too, generated and printed once if not given",
    )
    p.add_argument(
        "--no-token", action="store_true", help="serve a loopback bind without a token (then any user of this machine can run the workspace's commands)"
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="also accept this Host header (repeatable); the default is the bind address, or every address of this machine for 0.0.0.0",
    )
    p.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN", help="also accept this Origin header, e.g. https://proxy.example (repeatable)"
    )
    p.add_argument(
        "--tools",
        choices=["core", "all"],
        default=None,
        help="what tools/list shows from the start: core (the rest once tools_load loads their toolset) or all; default: the workspace's [server] tools, else core",
    )

    p = sub.add_parser("init", help="write a kernel-mcp.toml (editable set from the kernel sources found) and a .gitignore")
    p.add_argument("folder", nargs="?", default=".")
    p.add_argument("--force", action="store_true", help="overwrite an existing kernel-mcp.toml")

    p = sub.add_parser("doctor", help="what this machine can do, and which tools are live")
    p.add_argument("--workspace", default=None)

    # its own -h: `call TOOL --help` describes the tool, `call --help` this command
    p = sub.add_parser(
        "call",
        add_help=False,
        help="run one tool and print its answer: kernel-mcp call TOOL key=value ...",
        description="Run one tool through the server, as the agent would, and print its answer. A list argument "
        "takes a,b or its key repeated; JSON works for any argument.",
    )
    p.add_argument("-h", "--help", action="store_true", help="with TOOL: the tool's arguments; alone: this help")
    p.add_argument("--workspace", default=None, metavar="DIR")
    p.add_argument("--json", action="store_true", help="print the structured result instead of the text")
    p.add_argument("tool", nargs="?", metavar="TOOL", help="a tool's name (kernel-mcp tools lists them)")
    p.add_argument("arguments", nargs="*", metavar="key=value", help="its arguments (kernel-mcp call TOOL --help lists them)")
    p.set_defaults(call_help=p.format_help)

    p = sub.add_parser("tools", help="list the tools; with TOOL, its arguments")
    p.add_argument("tool", nargs="?", help="one tool: its arguments (name, type, default, description)")
    p.add_argument("--schema", action="store_true", help="the input JSON schema the agent is given (of every tool, or of TOOL)")

    p = sub.add_parser("report", help="write an experiment's HTML page (kept steps, history chart, evidence) and print its path")
    p.add_argument("tag", nargs="?", default=None, help="the experiment's tag (default: the latest)")
    p.add_argument("--workspace", default=None)

    p = sub.add_parser("install-skills", help="copy the Claude Code skills where Claude Code finds them")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--project", action="store_true", help="into the workspace's .claude/skills (the default)")
    where.add_argument("--user", action="store_true", help="into your home's .claude/skills")
    p.add_argument("--workspace", default=None)

    p = sub.add_parser("docs", help="the documentation index")
    docs_sub = p.add_subparsers(dest="docs_command", required=True)
    q = docs_sub.add_parser("ingest", help="add your copies of official documents (md, rst, html, pdf, AMD ISA xml)")
    q.add_argument("--workspace", default=None)
    q.add_argument("paths", nargs="+")
    return parser


def parse(argv: list[str] | None):
    """The command line. `call TOOL --workspace DIR key=value` is read like `call --workspace DIR
    TOOL key=value`: argparse ends the key=value list at the option and would refuse the rest."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        if args.command != "call" or args.tool is None or any(e.startswith("-") for e in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.arguments = [*args.arguments, *extra]
    return args


def main(argv: list[str] | None = None) -> int:
    """Every command ends here: an error as one line (and a hint), Ctrl-C and a closed pipe quietly."""
    try:
        status = dispatch(parse(argv))
        sys.stdout.flush()  # a reader that went away (`| head`) is found here, not at exit
        return status
    except KernelMcpError as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    except BrokenPipeError:
        # Python's recipe: the flush at exit would fail again and print a warning; send what is
        # left to the null device and end as a program killed by SIGPIPE would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def dispatch(args) -> int:
    if args.command == "serve":
        serve(args.workspace or default_workspace(), args.http, args.token_file, args.allow_host, args.allow_origin, args.no_token, args.tools)
        return 0
    if args.command == "init":
        from kernel_mcp.workspace.scaffold import initialize

        done = initialize(args.folder, force=args.force)
        print("\n".join(done.lines()))
        print(f"edit its [benchmark] table, then: kernel-mcp doctor --workspace {Path(args.folder)}")
        return 0
    if args.command == "install-skills":
        from kernel_mcp import skills

        workspace = Path(args.workspace or default_workspace()).resolve()
        target = (Path.home() if args.user else workspace) / ".claude" / "skills"
        for path in skills.install(target):
            print(f"installed {path}")
        print(f"register the server: {register_line(workspace)}")
        return 0
    if args.command == "docs":
        return docs_command(args)
    if args.command == "report":
        from kernel_mcp.ledger.report import report
        from kernel_mcp.workspace import Workspace

        print(report(Workspace.open(args.workspace or default_workspace()), args.tag))
        return 0
    if args.command == "tools":
        return tools_command(args)
    if args.command == "doctor":
        from kernel_mcp.workspace import Workspace

        return run_tool(Workspace.open(args.workspace or default_workspace()), "doctor", {})
    return call_command(args)


def docs_command(args) -> int:
    from kernel_mcp import docs
    from kernel_mcp.workspace import Workspace

    ws = Workspace.open(args.workspace or default_workspace())
    answer = docs.ingest(docs.open_store(ws.state_dir), [Path(p) for p in args.paths])
    print(answer.render())
    return 1 if any(r["status"].startswith("error") for r in answer.results) else 0
