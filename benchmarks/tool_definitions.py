"""How big the tool definitions are that every MCP client loads, and what of them a model reads.

Prints the bytes of the `tools/list` answer as the SDK's real client receives it (JSON, compact),
split into descriptions, input schemas and output schemas, and the part a model reads on every
turn: each tool's name, description and input schema (Claude Code sends the model these three and
never an output schema, which clients use to check structured content), per tool and in total,
beside the server's instructions (also sent each turn). Both listings are measured: the default
one (the core toolset and tools_load; see kernel_mcp.toolsets) and `[server] tools = "all"`, and
what each other toolset adds once loaded. No timing: the figures are sizes, the same on any machine.

With `--claude PATH`, Claude Code itself (that executable) is started once with the server and a
local stand-in for the model API that records the request: the figures are then the bytes of
kernel-mcp's tools in what Claude Code really sent. With `--call TOOL` as well (and its arguments
as JSON with `--arguments`), the stand-in calls that tool, the figures say what of its answer
Claude Code gave the model, and the requests after the call are measured too: after
`--call tools_load --arguments '{"toolsets": ["hardware"]}'`, whether Claude Code re-read
tools/list when told it changed and sent the model the loaded tools. The stand-in answers the call's
result with two more calls of workspace_info, a second apart, so that a re-listing that comes late
is seen in a later request.

    python benchmarks/tool_definitions.py [--json] [--claude PATH [--call TOOL [--arguments JSON]]]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
from mcp import Client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernel_mcp.server import INSTRUCTIONS, TOOLS, build_server  # noqa: E402
from kernel_mcp.toolsets import CATALOG  # noqa: E402
from kernel_mcp.workspace.config import ListedTools  # noqa: E402

SERVER_NAME = "kernel-mcp"  # Claude Code names a server's tools mcp__<server>__<tool>
MODEL_VISIBLE = ("name", "description", "inputSchema")


def size(value) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def model_visible(tool: dict) -> int:
    """Bytes of what a model is given of one tool (a tools/list entry): name, description, input schema."""
    return size({key: tool[key] for key in MODEL_VISIBLE if key in tool})


TOOLSET = {spec.name: spec.toolset for spec in TOOLS}


async def listed(workspace: Path, tools: ListedTools) -> list[dict]:
    """tools/list as a new session of the SDK's client gets it, with `[server] tools` = `tools`."""
    async with Client(build_server(workspace, tools=tools)) as client:
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in (await client.list_tools()).tools]


def listing_figures(listing: list[dict]) -> dict:
    rows = [
        {
            "tool": whole["name"],
            "toolset": TOOLSET.get(whole["name"], "core"),
            "total": size(whole),
            "model_visible": model_visible(whole),
            "description": len(whole.get("description", "").encode()),
            "input_schema": size(whole.get("inputSchema", {})),
            "output_schema": size(whole.get("outputSchema", {})),
        }
        for whole in listing
    ]
    return {
        "tools": len(listing),
        "tools_list_bytes": size({"tools": listing}),
        "model_visible": sum(r["model_visible"] for r in rows),
        "descriptions": sum(r["description"] for r in rows),
        "input_schemas": sum(r["input_schema"] for r in rows),
        "output_schemas": sum(r["output_schema"] for r in rows),
        "per_tool": sorted(rows, key=lambda r: -r["model_visible"]),
    }


async def measure(workspace: Path) -> dict:
    """The default listing, the listing of every tool, and what each toolset adds to the default
    one when loaded (the bytes of its tools' entries: the listing is a JSON array of them)."""
    default, everything = listing_figures(await listed(workspace, "core")), listing_figures(await listed(workspace, "all"))
    toolsets: dict[str, dict] = {name: {"tools": [], "model_visible": 0, "tools_list_bytes": 0} for name in CATALOG}
    for row in everything["per_tool"]:
        if row["toolset"] != "core":
            entry = toolsets[row["toolset"]]
            entry["tools"].append(row["tool"])
            entry["model_visible"] += row["model_visible"]
            entry["tools_list_bytes"] += row["total"] + 1  # and its comma
    return {"default": default, "all": everything, "toolsets": toolsets, "instructions": len(INSTRUCTIONS.encode())}


def tool_results(request: dict) -> list[dict]:
    last = request.get("messages", [{}])[-1].get("content")
    return [block for block in last if block.get("type") == "tool_result"] if isinstance(last, list) else []


WAIT_FOR_TOOLS_S = 60  # Claude Code may send its first request before the server has listed its tools


FOLLOW_UPS = 2  # requests provoked after the call's result, a second apart (see the module's docstring)


class _ModelStandIn(BaseHTTPRequestHandler):
    """Answers every request as a model that says "ok" and stops, or first calls `call` (a tool
    name as the client gives it, with `arguments`) where the request offers it, then calls
    workspace_info FOLLOW_UPS times; keeps each request's body. Until a request offers the server's
    tools (names starting with `prefix`), it waits a second and calls a tool not there yet: the
    client answers that call with an error and asks again, tools listed."""

    requests: list[dict]
    prefix: str
    call: str | None = None
    arguments: dict = {}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        self.requests.append(body)
        names = [tool.get("name", "") for tool in body.get("tools", [])]
        if not any(name.startswith(self.prefix) for name in names) and len(self.requests) < WAIT_FOR_TOOLS_S:
            time.sleep(1)
            content, stop = [{"type": "tool_use", "id": f"toolu_wait{len(self.requests)}", "name": self.prefix + "doctor", "input": {}}], "tool_use"
        elif self.call in names and not any(block.get("tool_use_id") == "toolu_1" for r in self.requests for block in tool_results(r)):
            content, stop = [{"type": "tool_use", "id": "toolu_1", "name": self.call, "input": self.arguments}], "tool_use"
        elif self.call and (answered := _answered_since(self.requests)) and answered <= FOLLOW_UPS:
            time.sleep(1)
            content, stop = [{"type": "tool_use", "id": f"toolu_follow{answered}", "name": self.prefix + "workspace_info", "input": {}}], "tool_use"
        else:
            content, stop = [{"type": "text", "text": "ok"}], "end_turn"
        reply = json.dumps(
            {
                "id": f"msg_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", ""),
                "content": content,
                "stop_reason": stop,
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


def turns(requests: list[dict]) -> list[dict]:
    """The requests less the retries: Claude Code asks for a stream, reads the stand-in's plain JSON
    answer as a failed stream and sends the same request again without `stream`, and acts on that
    answer."""
    same = lambda a, b: {k: v for k, v in a.items() if k != "stream"} == {k: v for k, v in b.items() if k != "stream"}  # noqa: E731
    return [request for index, request in enumerate(requests) if index + 1 == len(requests) or not same(request, requests[index + 1])]


def _answered_since(requests: list[dict]) -> int:
    """How many model turns, the last included, came since the one carrying the call's result (0: none yet)."""
    asked = turns(requests)
    for index, request in enumerate(asked):
        if any(block.get("tool_use_id") == "toolu_1" for block in tool_results(request)):
            return len(asked) - index
    return 0


def claude_requests(
    claude: Path, workspace: Path, home: Path, env: dict[str, str] | None = None, call: str | None = None, arguments: dict | None = None
) -> list[dict]:
    """The model requests Claude Code sends, `claude -p` run once with this checkout's server
    (stdio) and a local stand-in for the model API, which first calls the tool `call` if given.
    The first request carrying kernel-mcp's tools comes first."""
    requests: list[dict] = []
    prefix = f"mcp__{SERVER_NAME}__"
    handler = type(
        "Recorder", (_ModelStandIn,), {"requests": requests, "prefix": prefix, "call": prefix + call if call else None, "arguments": arguments or {}}
    )
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
            [str(claude), "-p", "say ok", "--strict-mcp-config", "--mcp-config", str(config), "--model", "claude-sonnet-4-5"]
            + (["--allowedTools", f"{prefix}{call},{prefix}workspace_info"] if call else []),
            capture_output=True,
            text=True,
            timeout=300,
            cwd=workspace,
            env=environment,
        )
    finally:
        api.shutdown()
        api.server_close()
    for index, request in enumerate(requests):
        if any(tool.get("name", "").startswith(prefix) for tool in request.get("tools", [])):
            return requests[index:]
    raise RuntimeError(f"Claude Code sent no request with {SERVER_NAME}'s tools (exit {done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")


def claude_request(claude: Path, workspace: Path, home: Path, env: dict[str, str] | None = None) -> dict:
    """The first model request Claude Code sends that carries kernel-mcp's tools."""
    return claude_requests(claude, workspace, home, env)[0]


def answer_given(requests: list[dict]) -> str:
    """What of a tool's answer Claude Code gave the model: the text of its tool result."""
    for request in requests:
        for block in tool_results(request):
            if block.get("tool_use_id") != "toolu_1":
                continue
            content = block.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    raise RuntimeError("the model was given no tool result")


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


def after_the_call(requests: list[dict], tool: str, arguments: dict) -> list[dict]:
    """The requests from the one carrying the call's result on: kernel-mcp's tools in each, and
    which tools the call should have added to the listing (a tools_load call's toolsets: those
    outside the core set) are there."""
    expected = sorted(name for name, toolset in TOOLSET.items() if toolset in (arguments.get("toolsets") or []) and tool == "tools_load")
    asked = turns(requests)
    start = next(i for i, request in enumerate(asked) if any(block.get("tool_use_id") == "toolu_1" for block in tool_results(request)))
    rows = []
    for request in asked[start:]:
        sent = claude_figures(request)
        rows.append(
            {
                "tools": sent["tools"],
                "model_visible": sent["model_visible"],
                "with_prefix": sent["with_prefix"],
                "expected_tools_sent": sorted(set(expected) & set(sent["given"])),
                "expected_tools_missing": sorted(set(expected) - set(sent["given"])),
            }
        )
    return rows


async def answer_figures(tool: str, given: str, workspace: Path, arguments: dict | None = None) -> dict:
    """The answer the model was given beside the same call's text and structured content."""
    async with Client(build_server(workspace)) as client:
        answer = await client.call_tool(tool, arguments or {})
    text = "\n".join(block.text for block in answer.content if getattr(block, "type", "") == "text")
    try:
        structured = json.loads(given) == answer.structured_content
    except ValueError:
        structured = False
    return {
        "tool": tool,
        "given_bytes": len(given.encode()),
        "text_bytes": len(text.encode()),
        "structured_bytes": size(answer.structured_content),
        "given_is_structured_content": structured,
        "given_is_text": given == text,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--claude", type=Path, help="a Claude Code executable: also measure the request it sends the model")
    parser.add_argument("--call", help="with --claude: a tool whose answer, as given to the model, is measured, and the requests after it")
    parser.add_argument("--arguments", type=json.loads, default={}, help="with --call: the call's arguments, as a JSON object")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "ws"
        workspace.mkdir()
        (workspace / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\n')
        figures = anyio.run(measure, workspace)
        if args.claude:
            home = Path(folder) / "home"
            home.mkdir()
            requests = claude_requests(args.claude, workspace, home, call=args.call, arguments=args.arguments)
            sent = claude_figures(requests[0])
            sent.pop("given")
            if args.call:
                sent["call"] = anyio.run(answer_figures, args.call, answer_given(requests), workspace, args.arguments)
                sent["after_the_call"] = after_the_call(requests, args.call, args.arguments)
            version = subprocess.run([str(args.claude), "--version"], capture_output=True, text=True, env={**os.environ, "HOME": str(home)}).stdout.strip()
            figures["claude_code"] = {"version": version, **sent}
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    for name, listing in (("default (core + tools_load)", figures["default"]), ('tools = "all"', figures["all"])):
        print(
            f"{name}: {listing['tools']} tools, tools/list {listing['tools_list_bytes']} bytes (descriptions {listing['descriptions']}, "
            f"input schemas {listing['input_schemas']}, output schemas {listing['output_schemas']}); a model reads "
            f"{listing['model_visible']} bytes of them per turn (name + description + input schema)"
        )
    print(f"and {figures['instructions']} bytes of server instructions, on every turn too")
    for name, toolset in figures["toolsets"].items():
        print(
            f"  toolset {name:10} adds {toolset['model_visible']:6} bytes a model reads, {toolset['tools_list_bytes']:6} of tools/list: {', '.join(toolset['tools'])}"
        )
    if "claude_code" in figures:
        sent = figures["claude_code"]
        print(
            f"Claude Code {sent['version']} sent the model {sent['tools']} tools ({', '.join(sent['keys'])}): {sent['model_visible']} bytes "
            f"({sent['with_prefix']} with its mcp__{SERVER_NAME}__ names); instructions sent: {sent['instructions_sent']}"
        )
        if "call" in sent:
            got = sent["call"]
            what = "its structured content (JSON)" if got["given_is_structured_content"] else "its text" if got["given_is_text"] else "neither"
            print(
                f"{got['tool']}: the model was given {what}, {got['given_bytes']} bytes; the answer's text is {got['text_bytes']} bytes, "
                f"its structured content {got['structured_bytes']}"
            )
            for index, after in enumerate(sent["after_the_call"]):
                which = "the next request (with the call's result)" if index == 0 else f"request {index + 1} after the call"
                missing = f"; missing: {', '.join(after['expected_tools_missing'])}" if after["expected_tools_missing"] else ""
                print(
                    f"{which}: {after['tools']} tools, {after['model_visible']} bytes ({after['with_prefix']} with the prefixed names); "
                    f"tools the call loaded: {len(after['expected_tools_sent'])} sent{missing}"
                )
    print(f"  {'tool':28} {'toolset':10} {'model':>6} {'total':>6}  (description, input, output)")
    for r in figures["all"]["per_tool"]:
        print(f"  {r['tool']:28} {r['toolset']:10} {r['model_visible']:6} {r['total']:6}  ({r['description']}, {r['input_schema']}, {r['output_schema']})")


if __name__ == "__main__":
    main()
