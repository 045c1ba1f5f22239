"""The input schema each tool advertises says what the server accepts, and what a model reads of
the catalog on every turn stays small (the default listing: the core toolset and tools_load, see
kernel_mcp.toolsets; the schema checks run over every tool, as `[server] tools = "all"` lists them).

For every tool, arguments are made from its input model's full JSON schema: each property at its bounds
and just past them, each enum member and a stranger, null, a wrong type, a string breaking its
pattern, a list too long or too short, a required argument left out, each nested property the
same way. The advertised schema (JSON Schema, as a client checks it) and the tool's input model
(what the server validates a call with) must give every one of them the same verdict, but for the
few rules listed in `NOT_IN_THE_SCHEMA`, which a schema of one field cannot state.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from mcp import Client
from pydantic import ValidationError

from kernel_mcp.server import INSTRUCTIONS, TOOLS, build_server
from kernel_mcp.workspace.config import ListedTools

pytestmark = pytest.mark.anyio

SPECS = {spec.name: spec for spec in TOOLS}
NULL = {"type": "null"}

# What the server refuses and the advertised schema lets through, by (tool, argument), with why
# the schema does not say it.
NOT_IN_THE_SCHEMA = {
    ("experiment_evaluate_many", "candidates[].commit"): "a candidate is exactly one of commit or patch: a rule "
    "between two fields (the description of candidates says it), refused with that sentence",
    ("experiment_evaluate_many", "candidates[].patch"): "the same rule, seen from the patch",
}
# Bytes of name, description and input schema of the tools listed: 22,689 for every tool before
# issue 34, 17,963 after its compaction and shorter descriptions, 16,846 with every description
# shortened (benchmarks/RESULTS.md, "Catalog size"). Since the toolsets, a session starts with the
# core toolset and tools_load listed: 8,541 bytes; every tool, tools_load included, is 18,002.
# Ceilings, so that growth is noticed and weighed.
MODEL_VISIBLE_CEILING = 8_600  # the default listing: 8,541 (16,846 before the toolsets)
MODEL_VISIBLE_CEILING_ALL = 18_100  # tools = "all": 18,002 (16,846 and no tools_load before)


def nullable(schema: dict) -> tuple[dict, bool]:
    """The schema of the value, and whether null is allowed besides (the anyOf form of an optional value)."""
    options = schema.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and NULL in options:
        other = options[0] if options[1] == NULL else options[1]
        return {**{k: v for k, v in schema.items() if k != "anyOf"}, **other}, True
    return schema, False


def text(length: int) -> str:
    """A string of that length that every pattern of these schemas accepts (a name, a mnemonic, hex)."""
    return ("0x" + "1" * max(0, length - 2))[:length]


def a_valid(schema: dict) -> Any:
    value_schema, _ = nullable(schema)
    return valid_values(value_schema)[0]


def valid_values(schema: dict) -> list:
    schema, may_be_null = nullable(schema)
    values: list = [None] if may_be_null else []
    kind = schema.get("type")
    if "enum" in schema:
        return list(schema["enum"]) + values
    if kind == "string":
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        values = [text(max(low, 3) if high is None else min(max(low, 3), high)), *values, text(low) if low else None]
        if high is not None:
            values.append(text(high))
    elif kind in ("integer", "number"):
        low = schema.get("minimum", schema["exclusiveMinimum"] + 1 if "exclusiveMinimum" in schema else 1)
        values = [low, *values]
        if "maximum" in schema:
            values.append(schema["maximum"])
        if kind == "number":
            values.append(low + 0.5)
    elif kind == "boolean":
        values = [True, False, *values]
    elif kind == "array":
        item = a_valid(schema["items"])
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        values = [[item] * max(low, 1), *values, [item] * low]
        if high is not None:
            values.append([item] * high)
    elif kind == "object":
        values = [{}, *values]
    else:
        raise AssertionError(f"a schema this test cannot make values for: {schema}")
    return [v for v in values if v is not None] + ([None] if may_be_null else [])


def invalid_values(schema: dict) -> list:
    schema, may_be_null = nullable(schema)
    kind = schema.get("type")
    values: list = [] if may_be_null else [None]
    if "enum" in schema:
        return [*values, "no-such-member", 5]
    if kind == "string":
        values += [5]
        if schema.get("minLength"):
            values.append(text(schema["minLength"] - 1))
        if "maxLength" in schema:
            values.append(text(schema["maxLength"] + 1))
        if "pattern" in schema:
            values.append("!")
    elif kind in ("integer", "number"):
        values += ["x"]
        if "minimum" in schema:
            values.append(schema["minimum"] - 1)
        if "exclusiveMinimum" in schema:
            values.append(schema["exclusiveMinimum"])
        if "maximum" in schema:
            values.append(schema["maximum"] + 1)
        if kind == "integer":
            values.append(1.5)
    elif kind == "boolean":
        values += ["x"]
    elif kind == "array":
        item = a_valid(schema["items"])
        values += ["x", [5] if nullable(schema["items"])[0].get("type") != "integer" else ["x"]]
        if schema.get("minItems"):
            values.append([])
        if "maxItems" in schema:
            values.append([item] * (schema["maxItems"] + 1))
    elif kind == "object":
        values += ["x"]
    return values


def base_arguments(schema: dict, accepts) -> dict:
    """The required properties at a valid value; where the input model asks for more than the schema
    says (a rule between fields), optional ones are added one at a time until it accepts."""
    args = {name: a_valid(schema["properties"][name]) for name in schema.get("required", [])}
    for name in args:  # a required nested object is made the same way, judged inside these arguments
        inner = nullable(schema["properties"][name])[0]
        if inner.get("type") == "object" and "properties" in inner:
            args[name] = base_arguments(inner, lambda o, n=name: accepts({**args, n: o}))
        elif inner.get("type") == "array" and nullable(inner["items"])[0].get("type") == "object":
            one = base_arguments(nullable(inner["items"])[0], lambda o, n=name: accepts({**args, n: [o]}))
            args[name] = [one] * max(1, inner.get("minItems", 1))
    if accepts(args):
        return args
    for name, sub in schema.get("properties", {}).items():
        if name not in args and accepts({**args, name: a_valid(sub)}):
            return {**args, name: a_valid(sub)}
    raise AssertionError(f"no arguments made from {schema} satisfy the input model")


def cases(schema: dict, accepts, path: str = "") -> list[tuple[str, Any, dict]]:
    """(argument path, value, arguments) for every value made for every property, nested ones too."""
    base = base_arguments(schema, accepts)
    out = []
    for name, sub in schema.get("properties", {}).items():
        where = f"{path}{name}"
        for value in valid_values(sub) + invalid_values(sub):
            out.append((where, value, {**base, name: value}))
        inner, _ = nullable(sub)
        if inner.get("type") == "object" and "properties" in inner:
            for deeper, value, nested in cases(inner, lambda o, n=name: accepts({**base, n: o}), f"{where}."):
                out.append((deeper, value, {**base, name: nested}))
        items = nullable(inner.get("items", {}))[0] if inner.get("type") == "array" else {}
        if items.get("type") == "object":
            for deeper, value, nested in cases(items, lambda o, n=name: accepts({**base, n: [o]}), f"{where}[]."):
                out.append((deeper, value, {**base, name: [nested]}))
    for name in schema.get("required", []):
        out.append((f"{path}{name}", "(left out)", {k: v for k, v in base.items() if k != name}))
    return out


async def listed(workspace, tools: ListedTools = "all") -> list[dict]:
    async with Client(build_server(workspace, tools=tools)) as client:
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in (await client.list_tools()).tools]


def model_visible(tools: list[dict]) -> int:
    return sum(len(json.dumps({k: t[k] for k in ("name", "description", "inputSchema")}, separators=(",", ":")).encode()) for t in tools)


def in_place(schema: dict) -> dict:
    """A pydantic model's JSON schema with each `$ref` replaced by its definition."""
    definitions = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, list):
            return [resolve(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return resolve({**definitions[node["$ref"].split("/")[-1]], **{k: v for k, v in node.items() if k != "$ref"}})
        return {key: resolve(value) for key, value in node.items() if key != "$defs"}

    return resolve(schema)


async def test_each_advertised_input_schema_refuses_what_the_server_refuses(workspace):
    mismatches, checked = set(), 0
    for tool in await listed(workspace):
        model = SPECS[tool["name"]].input_model
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
        validator = jsonschema.Draft202012Validator(tool["inputSchema"])
        # the arguments are made from the input model's own full schema: a bound the advertised one
        # lost still gets its values just past it
        schema = in_place(model.model_json_schema())

        def accepts(args: dict, model=model) -> bool:
            try:
                model.model_validate(copy.deepcopy(args))
            except ValidationError:
                return False
            return True

        for path, value, args in cases(schema, accepts):
            checked += 1
            if validator.is_valid(args) != accepts(args):
                assert validator.is_valid(args), f"{tool['name']}: the schema refuses {path}={value!r}, which the server accepts"
                mismatches.add((tool["name"], path))
    assert mismatches == set(NOT_IN_THE_SCHEMA)
    assert checked > 500, checked  # every argument of every tool, not a few


async def test_no_input_schema_refers_elsewhere_or_says_what_omitting_means(workspace):
    for tool in await listed(workspace):
        text_of = json.dumps(tool["inputSchema"])
        assert "$ref" not in text_of and "$defs" not in text_of, tool["name"]  # nested models written in place
        assert '"default": null' not in text_of and '"default": false' not in text_of, tool["name"]


async def test_what_a_model_reads_per_turn_stays_small(workspace):
    tools = await listed(workspace, "core")
    assert {t["name"] for t in tools} == {spec.name for spec in TOOLS if spec.toolset == "core"} and all(t["description"] for t in tools)
    assert model_visible(tools) <= MODEL_VISIBLE_CEILING < 10_000  # issue 34's bar: at most 10 KB a turn
    every = await listed(workspace, "all")
    assert len(every) == len(TOOLS) and all(t["description"] for t in every)
    assert model_visible(every) <= MODEL_VISIBLE_CEILING_ALL
    assert len(INSTRUCTIONS.encode()) < 500  # sent with the tools on every turn too
