"""`kernel-mcp`: serve the tools to an MCP client, or run any of them by hand.

`kernel-mcp call TOOL key=value ...` goes through the same server, in process, over a real MCP
client, so a person at the shell gets exactly what the agent gets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from kernel_mcp import __version__
from kernel_mcp.errors import KernelMcpError

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


def parse_arguments(pairs: list[str]) -> dict:
    """key=value pairs; a value that parses as JSON (numbers, true, lists, objects) is taken as such."""
    arguments = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"kernel-mcp call: argument {pair!r} is not key=value")
        try:
            arguments[key] = json.loads(raw)
        except ValueError:
            arguments[key] = raw
    return arguments


async def call_tool(workspace: str | None, tool: str, arguments: dict) -> tuple[str, bool]:
    from mcp import Client

    from kernel_mcp.server import build_server

    async def show_progress(progress: float, total: float | None, message: str | None) -> None:
        print(f"... {message or progress}", file=sys.stderr)

    async with Client(build_server(workspace)) as client:
        result = await client.call_tool(tool, arguments, progress_callback=show_progress)
    text = "\n".join(block_text(block) for block in result.content)
    return text, bool(result.is_error)


def block_text(block) -> str:
    """A content block as a terminal shows it: a picture by the file it is kept in, not its base64."""
    if block.type == "image":
        return f"[image {block.mime_type}: {(block.meta or {}).get('kernel-mcp/file', 'not kept on disk')}]"
    return getattr(block, "text", "")


def serve(
    workspace: str | None,
    http: tuple[str, int] | None,
    token_file: str | None = None,
    allow_hosts: list[str] | None = None,
    allow_origins: list[str] | None = None,
) -> None:
    from kernel_mcp import http_security
    from kernel_mcp.server import build_server

    if http is None:
        build_server(workspace).run("stdio")
        return
    host, port = http
    policy = http_security.policy(host, port, http_security.read_token(token_file), allow_hosts, allow_origins)
    server = build_server(workspace, policy)
    if not http_security.is_loopback(host):
        print(f"kernel-mcp: serving on {host}, which is not loopback: every request must bear the token; Host must be one of "
              + ", ".join(policy.transport_security.allowed_hosts), file=sys.stderr)
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
    p.add_argument("--token-file", default=None, metavar="FILE",
                   help="HTTP bearer token, read from FILE (or set $KERNEL_MCP_HTTP_TOKEN); required beyond loopback, generated and printed once if not given")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME[:PORT]",
                   help="also accept this Host header (repeatable); the default is the bind address, or every address of this machine for 0.0.0.0")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="also accept this Origin header, e.g. https://proxy.example (repeatable)")

    p = sub.add_parser("init", help="write a kernel-mcp.toml (editable set from the kernel sources found) and a .gitignore")
    p.add_argument("folder", nargs="?", default=".")
    p.add_argument("--force", action="store_true", help="overwrite an existing kernel-mcp.toml")

    p = sub.add_parser("doctor", help="what this machine can do, and which tools are live")
    p.add_argument("--workspace", default=None)

    p = sub.add_parser("call", help="run one tool and print its answer: kernel-mcp call TOOL key=value ...")
    p.add_argument("--workspace", default=None)
    p.add_argument("--json", action="store_true", help="print the structured result instead of the text")
    p.add_argument("tool")
    p.add_argument("arguments", nargs="*", metavar="key=value")

    sub.add_parser("tools", help="list the tools with their descriptions")

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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            serve(args.workspace or default_workspace(), args.http, args.token_file, args.allow_host, args.allow_origin)
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
        if args.command == "tools":
            from kernel_mcp.server import TOOLS

            for spec in TOOLS:
                print(f"{spec.name:<18} {spec.description}")
            return 0
        tool, arguments = ("doctor", {}) if args.command == "doctor" else (args.tool, parse_arguments(args.arguments))
        if getattr(args, "json", False):
            return asyncio.run(_call_json(args.workspace or default_workspace(), tool, arguments))
        text, is_error = asyncio.run(call_tool(args.workspace or default_workspace(), tool, arguments))
        print(text)
        return 1 if is_error else 0
    except KernelMcpError as exc:
        print(exc.render(), file=sys.stderr)
        return 2


def docs_command(args) -> int:
    from kernel_mcp import docs
    from kernel_mcp.workspace import Workspace

    ws = Workspace.open(args.workspace or default_workspace())
    answer = docs.ingest(docs.open_store(ws.state_dir), [Path(p) for p in args.paths])
    print(answer.render())
    return 1 if any(r["status"].startswith("error") for r in answer.results) else 0


async def _call_json(workspace: str, tool: str, arguments: dict) -> int:
    from mcp import Client

    from kernel_mcp.server import build_server

    async with Client(build_server(workspace)) as client:
        result = await client.call_tool(tool, arguments)
    print(json.dumps(result.structured_content, indent=1))
    return 1 if result.is_error else 0
