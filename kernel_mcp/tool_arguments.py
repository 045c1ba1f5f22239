"""A tool's arguments at the command line, read from its pydantic input model.

`kernel-mcp call TOOL key=value ...` turns the pairs into the arguments the agent would send: the
field's type decides how a value is read, so a person types `defines=A,B=1` or `flags=-O2
flags=-ffast-math` where the agent sends a JSON list, and `name=123` stays the text "123" for a
text field. `describe` is `kernel-mcp call TOOL --help`. No MCP module is imported here: the
command line hands in the tool's `ToolSpec`.
"""

from __future__ import annotations

import json
import textwrap
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from kernel_mcp.errors import InvalidInput
from kernel_mcp.tooling import ToolSpec

LIST_TYPES = (list, tuple, set, frozenset)


def _without_none(annotation: Any) -> Any:
    """`X | None` is X here: None is what leaving the key out gives."""
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def list_item(annotation: Any) -> tuple[bool, Any]:
    """Whether the field holds a list, and the type of one item."""
    inner = _without_none(annotation)
    if get_origin(inner) in LIST_TYPES or inner in LIST_TYPES:
        items = get_args(inner)
        return True, items[0] if items else Any
    return False, None


def _is_text(annotation: Any) -> bool:
    inner = _without_none(annotation)
    if inner is str:
        return True
    return get_origin(inner) is Literal and all(isinstance(v, str) for v in get_args(inner))


def _value(annotation: Any, raw: str) -> Any:
    """A text field takes the text as typed; any other takes JSON (a number, true, an object) where
    it parses, else the text, so that the model's own check says what is wrong with it."""
    if _is_text(annotation):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _list_items(item: Any, raw: str) -> list:
    if raw.lstrip().startswith("["):
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return parsed
    if raw == "":
        return []
    if not (_is_text(item) or _without_none(item) in (int, float, bool)):
        return [_value(item, raw)]  # an object per key=value: its JSON holds commas of its own
    return [_value(item, part) for part in raw.split(",")]


def parse_pairs(spec: ToolSpec, pairs: list[str]) -> dict[str, Any]:
    """key=value pairs as the tool's arguments; a list field takes `a,b`, the key repeated, or JSON."""
    fields = spec.input_model.model_fields
    arguments: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"argument {pair!r} is not key=value", hint=f"kernel-mcp call {spec.name} --help lists its arguments")
        if key not in fields:
            known = ", ".join(fields) or "none"
            raise InvalidInput(f"{spec.name} has no argument {key!r} (its arguments: {known})", hint=f"kernel-mcp call {spec.name} --help describes them")
        is_list, item = list_item(fields[key].annotation)
        if is_list:
            arguments[key] = arguments.get(key, []) + _list_items(item, raw)
        elif key in arguments:
            raise InvalidInput(f"{key} given twice", hint="only a list argument takes its key more than once")
        else:
            arguments[key] = _value(fields[key].annotation, raw)
    return arguments


def check(spec: ToolSpec, arguments: dict[str, Any]) -> None:
    """The input model's verdict on the arguments, as one line (the server would give the same)."""
    try:
        spec.input_model.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors(include_url=False))
        raise InvalidInput(problems, hint=f"kernel-mcp call {spec.name} --help lists its arguments") from None


def type_name(annotation: Any) -> str:
    """The field's type as a person reads it: `int`, `list of str`, `one of a, b`."""
    inner = _without_none(annotation)
    origin = get_origin(inner)
    if origin in (Union, types.UnionType):
        return " or ".join(type_name(a) for a in get_args(inner) if a is not type(None))
    if origin is Literal:
        return "one of " + ", ".join(str(v) for v in get_args(inner))
    is_list, item = list_item(inner)
    if is_list:
        return f"list of {type_name(item)}"
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return f"object ({', '.join(inner.model_fields)})"
    return getattr(inner, "__name__", str(inner))


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    default = info.get_default(call_default_factory=True)
    if default is None:
        return "optional"
    if isinstance(default, BaseModel):
        default = default.model_dump(mode="json", exclude_defaults=True)  # {}: each of its fields' own default
    return "default " + json.dumps(default, default=str)


def describe(spec: ToolSpec) -> str:
    """`kernel-mcp call TOOL --help`: the tool's description and each argument's name, type, default
    and description."""
    lines = [f"usage: kernel-mcp call [--workspace DIR] [--json] {spec.name} [key=value ...]", ""]
    lines += textwrap.wrap(spec.description, 100) + [""]
    fields = spec.input_model.model_fields
    if not fields:
        lines.append("it takes no arguments")
        return "\n".join(lines)
    lines.append("arguments (key=value; a list takes a,b or its key repeated; JSON works for any):")
    width = max(len(name) for name in fields)
    for name, info in fields.items():
        lines.append(f"  {name:<{width}}  {type_name(info.annotation)}, {_default(info)}")
        if info.description:
            lines += textwrap.wrap(info.description, 96, initial_indent=" " * (width + 4), subsequent_indent=" " * (width + 4))
    return "\n".join(lines)
