"""How big the tool definitions are that every MCP client loads at the start of a session.

Prints the bytes of the `tools/list` answer as the SDK's real client receives it (JSON, compact),
split into descriptions, input schemas and output schemas, and the ten largest tools. No timing:
the figures are sizes, the same on any machine.

    python benchmarks/tool_definitions.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernel_mcp.server import build_server


def size(value) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


async def measure(workspace: Path) -> dict:
    async with Client(build_server(workspace)) as client:
        tools = (await client.list_tools()).tools
    rows = []
    for tool in tools:
        whole = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        rows.append(
            {
                "tool": tool.name,
                "total": size(whole),
                "description": len((tool.description or "").encode()),
                "input_schema": size(whole.get("inputSchema", {})),
                "output_schema": size(whole.get("outputSchema", {})),
            }
        )
    listing = {"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]}
    return {
        "tools": len(tools),
        "tools_list_bytes": size(listing),
        "descriptions": sum(r["description"] for r in rows),
        "input_schemas": sum(r["input_schema"] for r in rows),
        "output_schemas": sum(r["output_schema"] for r in rows),
        "largest": sorted(rows, key=lambda r: -r["total"])[:10],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\n')
        figures = anyio.run(measure, Path(folder))
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(
        f"{figures['tools']} tools, tools/list {figures['tools_list_bytes']} bytes: descriptions {figures['descriptions']}, "
        f"input schemas {figures['input_schemas']}, output schemas {figures['output_schemas']}"
    )
    for r in figures["largest"]:
        print(f"  {r['tool']:28} {r['total']:6}  (description {r['description']}, input {r['input_schema']}, output {r['output_schema']})")


if __name__ == "__main__":
    main()
