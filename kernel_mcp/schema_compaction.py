"""Tool definitions without the bytes that buy nothing.

pydantic's JSON schemas carry a `title` for every model and field (the field's name again, in
title case) and, in output schemas, a `default` for every optional field and `anyOf: [T, null]`
for each optional value. A client loads every tool definition at the start of a session, and
output schemas were 70% of them. `compact` keeps what a client uses (types, required fields,
enums, bounds, descriptions) and states the same constraints in fewer bytes, so a document valid
under the full schema stays valid under the compact one, and the reverse.

Input schemas are what the model reads on every turn (Claude Code sends it each tool's name,
description and input schema, never the output schema). They lose the titles, the defaults that
say only what leaving the argument out means anyway (`null`, `false`), and their `$defs`: a
nested model is written in place (a model reads an inline object more surely than a `$ref`, and
one nested model is used once). They keep the `anyOf: [T, null]` form of an optional value: a
`type` list is refused by some model providers' schema dialects. Output schemas are read by
clients only (to check the structured content), so they also lose every default, which says
nothing about an answer, and write an optional scalar as `"type": [T, "null"]`. Sizes before and
after: benchmarks/tool_definitions.py.
"""

from __future__ import annotations

from typing import Any

NULL = {"type": "null"}
SAYS_NOTHING = (None, False)  # input defaults no model needs told: an omitted option is off, or absent


def compact(schema: Any, *, output: bool) -> Any:
    if not output and isinstance(schema, dict):
        schema = _inline_definitions(schema)
    return _compact(schema, output=output)


def _compact(schema: Any, *, output: bool) -> Any:
    if isinstance(schema, list):
        return [_compact(item, output=output) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and (output or any(value is nothing for nothing in SAYS_NOTHING)):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):  # names of fields and models, not keywords
            out[key] = {name: _compact(sub, output=output) for name, sub in value.items()}
        else:
            out[key] = _compact(value, output=output)
    if output:
        out = _nullable_as_type_list(out)
    return out


def _inline_definitions(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each `{"$ref": "#/$defs/X", ...}` replaced by X's schema, its own keywords
    (a field's description) over X's; unchanged where a model refers to itself (no inline form)."""
    definitions = schema.get("$defs")
    if not isinstance(definitions, dict):
        return schema

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen or name not in definitions:
                raise _NoInlineForm(name)
            inlined = resolve(definitions[name], (*seen, name))
            return {**inlined, **{key: resolve(value, seen) for key, value in node.items() if key != "$ref"}}
        out = {}
        for key, value in node.items():
            if key == "$defs":
                continue
            if key == "properties" and isinstance(value, dict):  # names of fields, not keywords
                out[key] = {field: resolve(sub, seen) for field, sub in value.items()}
            else:
                out[key] = resolve(value, seen)
        return out

    try:
        return resolve(schema, ())
    except _NoInlineForm:
        return schema


class _NoInlineForm(Exception):
    """A model that refers to itself, or a reference to no definition: the schema keeps its $defs."""


def _nullable_as_type_list(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [{"type": T, ...}, {"type": "null"}]` -> `{"type": [T, "null"], ...}` where the other
    branch is a plain typed schema (a `$ref` keeps its anyOf: it has no type to merge)."""
    options = schema.get("anyOf")
    if not (isinstance(options, list) and len(options) == 2 and NULL in options):
        return schema
    other = options[0] if options[1] == NULL else options[1]
    if not isinstance(other.get("type"), str) or set(other) & (set(schema) - {"anyOf"}):
        return schema
    if "enum" in other or "const" in other:  # they apply to every type: null would fall outside them
        return schema
    merged = {k: v for k, v in schema.items() if k != "anyOf"}
    merged.update(other)
    merged["type"] = [other["type"], "null"]
    return merged
