"""How big the tool definitions are that every MCP client loads, and what of them a model reads.

Prints the bytes of the `tools/list` answer as the SDK's real client receives it (JSON, compact),
split into descriptions, input schemas and output schemas, and the part a model reads on every
turn: each tool's name, description and input schema (Claude Code sends the model these three and
never an output schema, which clients use to check structured content), per tool and in total,
beside the server's instructions (also sent each turn). No timing: the figures are sizes, the
same on any machine.

With `--claude PATH`, Claude Code itself (that executable) is started once with the server and a
local stand-in for the model API that records the request: the figures are then the bytes of
kernel-mcp's tools in what Claude Code really sent.

    python benchmarks/tool_definitions.py [--json] [--claude PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
from mcp import Client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernel_mcp.server import INSTRUCTIONS, build_server  # noqa: E402

SERVER_NAME = "kernel-mcp"  # Claude Code names a server's tools mcp__<server>__<tool>
MODEL_VISIBLE = ("name", "description", "inputSchema")


def size(value) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def model_visible(tool: dict) -> int:
    """Bytes of what a model is given of one tool (a tools/list entry): name, description, input schema."""
    return size({key: tool[key] for key in MODEL_VISIBLE if key in tool})


async def measure(workspace: Path) -> dict:
    async with Client(build_server(workspace)) as client:
        tools = (await client.list_tools()).tools
    listing = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    rows = [
        {
            "tool": whole["name"],
            "total": size(whole),
            "model_visible": model_visible(whole),
            "description": len(whole.get("description", "").encode()),
            "input_schema": size(whole.get("inputSchema", {})),
            "output_schema": size(whole.get("outputSchema", {})),
        }
        for whole in listing
    ]
    return {
        "tools": len(tools),
        "tools_list_bytes": size({"tools": listing}),
        "model_visible": sum(r["model_visible"] for r in rows),
        "instructions": len(INSTRUCTIONS.encode()),
        "descriptions": sum(r["description"] for r in rows),
        "input_schemas": sum(r["input_schema"] for r in rows),
        "output_schemas": sum(r["output_schema"] for r in rows),
        "per_tool": sorted(rows, key=lambda r: -r["model_visible"]),
    }


class _ModelStandIn(BaseHTTPRequestHandler):
    """Answers every request as a model that says "ok" and stops; keeps each request's body."""

    requests: list[dict]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        self.requests.append(body)
        reply = json.dumps(
            {
                "id": f"msg_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", ""),
                "content": [{"type": "text", "text": "ok"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args) -> None:
        pass


def claude_request(claude: Path, workspace: Path, home: Path, env: dict[str, str] | None = None) -> dict:
    """The first model request Claude Code sends that carries kernel-mcp's tools: `claude -p` run
    once with this checkout's server (stdio) and a local stand-in for the model API."""
    requests: list[dict] = []
    handler = type("Recorder", (_ModelStandIn,), {"requests": requests})
    api = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    server = {"command": sys.executable, "args": ["-m", "kernel_mcp", "serve", "--workspace", str(workspace)], "env": {"PYTHONPATH": str(REPO)}}
    config = home / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {SERVER_NAME: server}}))
    environment = {
        **(env if env is not None else os.environ),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{api.server_address[1]}",
        "ANTHROPIC_API_KEY": "placeholder: the stand-in checks no key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    try:
        done = subprocess.run(
            [str(claude), "-p", "say ok", "--strict-mcp-config", "--mcp-config", str(config), "--model", "claude-sonnet-4-5"],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=workspace,
            env=environment,
        )
    finally:
        api.shutdown()
        api.server_close()
    prefix = f"mcp__{SERVER_NAME}__"
    for request in requests:
        if any(tool.get("name", "").startswith(prefix) for tool in request.get("tools", [])):
            return request
    raise RuntimeError(f"Claude Code sent no request with {SERVER_NAME}'s tools (exit {done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")


def claude_figures(request: dict) -> dict:
    """kernel-mcp's tools as Claude Code gave them to the model, sized as `measure` sizes them
    (the name without Claude Code's mcp__<server>__ prefix, so the two compare)."""
    prefix = f"mcp__{SERVER_NAME}__"
    ours = [t for t in request["tools"] if t.get("name", "").startswith(prefix)]
    given = [{"name": t["name"].removeprefix(prefix), "description": t.get("description", ""), "inputSchema": t.get("input_schema", {})} for t in ours]
    return {
        "tools": len(ours),
        "keys": sorted({key for t in ours for key in t}),
        "model_visible": sum(size(t) for t in given),
        "with_prefix": sum(size({k: v for k, v in t.items() if k in ("name", "description", "input_schema")}) for t in ours),
        "instructions_sent": INSTRUCTIONS.strip().splitlines()[0] in json.dumps(request.get("messages", [])) + json.dumps(request.get("system", "")),
        "given": {t["name"]: t for t in given},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--claude", type=Path, help="a Claude Code executable: also measure the request it sends the model")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "ws"
        workspace.mkdir()
        (workspace / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\n')
        figures = anyio.run(measure, workspace)
        if args.claude:
            home = Path(folder) / "home"
            home.mkdir()
            sent = claude_figures(claude_request(args.claude, workspace, home))
            sent.pop("given")
            version = subprocess.run([str(args.claude), "--version"], capture_output=True, text=True, env={**os.environ, "HOME": str(home)}).stdout.strip()
            figures["claude_code"] = {"version": version, **sent}
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(
        f"{figures['tools']} tools, tools/list {figures['tools_list_bytes']} bytes: descriptions {figures['descriptions']}, "
        f"input schemas {figures['input_schemas']}, output schemas {figures['output_schemas']}"
    )
    print(
        f"a model reads {figures['model_visible']} bytes of them per turn (name + description + input schema), "
        f"and {figures['instructions']} bytes of server instructions"
    )
    if "claude_code" in figures:
        sent = figures["claude_code"]
        print(
            f"Claude Code {sent['version']} sent the model {sent['tools']} tools ({', '.join(sent['keys'])}): {sent['model_visible']} bytes "
            f"({sent['with_prefix']} with its mcp__{SERVER_NAME}__ names); instructions sent: {sent['instructions_sent']}"
        )
    print(f"  {'tool':28} {'model':>6} {'total':>6}  (description, input, output)")
    for r in figures["per_tool"]:
        print(f"  {r['tool']:28} {r['model_visible']:6} {r['total']:6}  ({r['description']}, {r['input_schema']}, {r['output_schema']})")


if __name__ == "__main__":
    main()
