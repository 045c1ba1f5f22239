"""Tool definitions without the bytes that buy nothing.

pydantic's JSON schemas carry a `title` for every model and field (the field's name again, in
title case) and, in output schemas, a `default` for every optional field and `anyOf: [T, null]`
for each optional value. A client loads every tool definition at the start of a session, and
output schemas were 70% of them. `compact` keeps what a client uses (types, required fields,
enums, descriptions, references) and states the same constraints in fewer bytes, so structured
content valid under the full schema stays valid under the compact one, and the reverse.

Input schemas lose only the titles: a model reads them, and the anyOf form is the one every
model provider's schema dialect accepts. Output schemas are read by clients only (to check the
structured content), so they also lose defaults, which say nothing about an answer, and write an
optional scalar as `"type": [T, "null"]`. Sizes before and after: benchmarks/tool_definitions.py.
"""

from __future__ import annotations

from typing import Any

NULL = {"type": "null"}


def compact(schema: Any, *, output: bool) -> Any:
    if isinstance(schema, list):
        return [compact(item, output=output) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if output and key == "default":
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):  # names of fields and models, not keywords
            out[key] = {name: compact(sub, output=output) for name, sub in value.items()}
        else:
            out[key] = compact(value, output=output)
    if output:
        out = _nullable_as_type_list(out)
    return out


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
