"""The published tool definitions are compact and still say the same thing: what validates under a
pydantic model's full schema validates under the compact one and nothing else does."""

from __future__ import annotations

import json
from typing import Literal

import jsonschema
import pytest
from mcp import Client
from pydantic import BaseModel, Field

from kernel_mcp.schema_compaction import compact
from kernel_mcp.server import build_server

pytestmark = pytest.mark.anyio


class Inner(BaseModel):
    size: int = Field(description="bytes")


class Sample(BaseModel):
    name: str
    note: str | None = None
    state: Literal["ok", "failed"] | None = None
    sizes: list[int] | None = None
    inner: Inner | None = None
    weights: dict[str, float] = {}
    flag: bool = False


VALID = [
    {"name": "a"},
    {"name": "a", "note": None, "state": None, "sizes": None, "inner": None},
    {"name": "a", "note": "n", "state": "ok", "sizes": [1, 2], "inner": {"size": 3}, "weights": {"x": 1.5}, "flag": True},
]
INVALID = [
    {},
    {"name": 1},
    {"name": "a", "note": 2},
    {"name": "a", "state": "running"},
    {"name": "a", "sizes": ["x"]},
    {"name": "a", "inner": {}},
    {"name": "a", "inner": {"size": "big"}},
    {"name": "a", "weights": {"x": "y"}},
    {"name": "a", "flag": "x"},
]


@pytest.mark.parametrize("output", [True, False])
def test_the_compact_schema_accepts_and_refuses_what_the_full_one_does(output):
    full = Sample.model_json_schema()
    small = compact(full, output=output)
    assert len(json.dumps(small)) < len(json.dumps(full))
    if not output:  # what a model reads: the nested model in place, no default that only says "omitted"
        assert "$defs" not in small and "$ref" not in json.dumps(small) and small["properties"]["inner"]["anyOf"][0]["required"] == ["size"]
        assert "default" not in small["properties"]["flag"] and "default" not in small["properties"]["note"]
    for instance in VALID:
        jsonschema.validate(instance, full)
        jsonschema.validate(instance, small)
    for instance in INVALID:
        for schema in (full, small):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(instance, schema)


def test_a_field_named_like_a_keyword_keeps_its_name():
    class Named(BaseModel):
        title: str
        default: int = 0

    small = compact(Named.model_json_schema(), output=True)
    assert set(small["properties"]) == {"title", "default"} and small["required"] == ["title"]


def listing_of(tools) -> str:
    return json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools], separators=(",", ":"))


async def test_tools_list_is_compact_and_answers_still_validate(workspace):
    async with Client(build_server(workspace, tools="all")) as client:
        tools = (await client.list_tools()).tools
        listing = listing_of(tools)
        # the client checks this answer's structured content against the compact output schema
        answer = await client.call_tool("doctor", {})
    async with Client(build_server(workspace)) as client:
        default = listing_of((await client.list_tools()).tools)
    assert not answer.is_error and answer.structured_content["platform"]
    assert '"title":' not in listing.replace('"title":{', "")  # no pydantic titles (a field may be named title)
    for tool in tools:
        assert "default" not in json.dumps(tool.output_schema).replace('"default":{', ""), tool.name
    # Every tool: 89,656 bytes before compaction, 65,320 after it, 71,975 with the arguments, fields
    # and tools added since, 67,249 with issue 34's shorter descriptions and input schemas
    # (benchmarks/RESULTS.md), 67,861 with tools_load. The default listing (the core toolset and
    # tools_load, see kernel_mcp.toolsets): 37,957. Ceilings, so that growth is noticed and weighed
    # (what a model reads: tests/test_tool_schemas.py).
    assert len(listing.encode()) < 68_000
    assert len(default.encode()) < 38_500
