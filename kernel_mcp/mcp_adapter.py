"""The MCP side of a tool: publish a `ToolSpec` (see `tooling`) on an MCPServer.

`register` builds the function MCPServer publishes. Its schema comes from the input model's
fields; each call validates the arguments with that model, hands the handler a `ToolContext`
(workspace, progress, run artifacts), and answers with the output model as structured content
plus the model's short text rendering, cut to the workspace's response budget, and the pictures
the output carries as image content. Errors meant for
the caller (`KernelMcpError`) become error results; the server keeps serving. An answer that
reports a failure (`ToolOutput.failed()`: a compile that did not build) is an error result too,
with its text and structured content as any answer has them. Only the server and
the command line import this module: capability code stays free of the MCP SDK.
"""

from __future__ import annotations

import base64
import inspect
import json
import logging
import traceback
from collections.abc import Callable, Mapping
from typing import Annotated, Any
from weakref import WeakKeyDictionary

import anyio

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import (
    CallToolResult,
    ImageContent,
    TextContent,
    Tool as McpTool,
    ToolAnnotations as McpToolAnnotations,
    ToolListChangedNotification,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from kernel_mcp import toolsets, untrusted
from kernel_mcp.errors import InvalidInput, KernelMcpError
from kernel_mcp.runner import ProgressFn
from kernel_mcp.schema_compaction import compact
from kernel_mcp.tooling import Image, ServerState, ToolAnnotations, ToolContext, ToolSpec
from kernel_mcp.workspace import Run
from kernel_mcp.workspace.config import ListedTools

log = logging.getLogger("kernel_mcp")


def fit_budget(text: str, budget: int, runs: list[Run]) -> str:
    """Cut `text` to `budget` bytes, pointing at the run artifacts that hold the rest."""
    data = text.encode("utf-8")
    if len(data) <= budget:
        return text
    where = ", ".join(r.uri() for r in runs) or "none kept"
    note = f"\n... [answer cut at {budget} bytes of {len(data)}; full output: {where}]"
    keep = max(0, budget - len(note.encode("utf-8")))
    return data[:keep].decode("utf-8", errors="ignore") + note


STRUCTURED_PER_TEXT = 16  # structured content may be this many times the text budget


STRING_FLOOR = 64  # characters a string of structured content keeps however much else is cut


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=str))


class _Parts:
    """What of dumped structured content may shrink and still match the output schema, found by
    walking the data beside the model it was dumped from: lists (a fixed-length tuple never), the
    entries of mappings (a `dict` field; a model's own fields never, they are the schema's required
    properties), and strings (values, and the keys of mappings). Each part carries its path
    (`kernels[].name`) for the note of what was cut."""

    def __init__(self, data: Any, model: Any) -> None:
        self.containers: list[tuple[str, list | dict]] = []
        self.strings: list[tuple[str, list | dict, Any]] = []  # (path, parent, index or key)
        self.keys: list[tuple[str, dict]] = []  # mappings whose keys are strings that may be cut
        self._walk(data, model, "")

    def _walk(self, data: Any, model: Any, path: str) -> None:
        if isinstance(data, list):
            if not isinstance(model, tuple):
                self.containers.append((path, data))
            models = model if isinstance(model, (list, tuple)) and len(model) == len(data) else [None] * len(data)
            for index, (item, item_model) in enumerate(zip(data, models)):
                self._child(data, index, item, item_model, path + "[]")
        elif isinstance(data, dict):
            mapping = isinstance(model, dict)
            if mapping:
                self.containers.append((path, data))
                self.keys.append((path, data))
                models = list(model.values()) if len(model) == len(data) else [None] * len(data)
            else:  # a model's fields (or what is not known to be a mapping): kept whole
                models = [getattr(model, key, None) if model is not None else None for key in data]
            for (key, item), item_model in zip(list(data.items()), models):
                self._child(data, key, item, item_model, path if mapping else f"{path}.{key}" if path else str(key))

    def _child(self, parent: list | dict, key: Any, item: Any, model: Any, path: str) -> None:
        if isinstance(item, str):
            self.strings.append((path, parent, key))
        else:
            self._walk(item, model, path)


def _cut_string(text: str, cap: int) -> str:
    return text[:cap] + f"... [{len(text) - cap} more characters cut]"


def fit_structured(data: Any, limit: int, model: Any = None) -> tuple[Any, list[str]]:
    """Cut `data` (`model` dumped as JSON) until its JSON fits `limit` bytes: the text's budget has a
    twin here (40,000 config classes made 4.9 MB of structured content, a mapping of 2,000 class
    keys of 1,000 characters 2.4 MB, one kernel name 130 KB). Strings over a cap are cut first, then
    the largest list or mapping is halved, again and again; with nothing left to halve the cap
    halves. Only what keeps the output schema shrinks (see _Parts). Returns the data and, per path,
    what was cut, for the answer's note."""
    if _json_size(data) <= limit:
        return data, []
    cuts: dict[str, str] = {}
    cap = max(STRING_FLOOR, limit // 16)
    while _json_size(data) > limit:
        parts = _Parts(data, model)
        shortened = False
        for path, parent, key in parts.strings:
            if len(parent[key]) > cap:
                parent[key] = _cut_string(parent[key], cap)
                cuts[path], shortened = f"{path or 'the answer'}: strings cut to {cap} characters", True
        for path, mapping in parts.keys:
            if any(len(key) > cap for key in mapping):
                items = list(mapping.items())
                mapping.clear()
                for key, value in items:
                    key = _cut_string(key, cap) if len(key) > cap else key
                    while key in mapping:  # two keys alike in their first `cap` characters stay two entries
                        key += "'"
                    mapping[key] = value
                cuts[path + " keys"], shortened = f"{path} keys: cut to {cap} characters", True
        if shortened:
            continue
        largest = max((c for c in parts.containers if len(c[1]) > 1), key=lambda c: _json_size(c[1]), default=None)
        if largest is not None:
            path, container = largest
            if isinstance(container, list):
                del container[len(container) // 2 :]
            else:
                for key in list(container)[len(container) // 2 :]:
                    del container[key]
            kind = "items" if isinstance(container, list) else "entries"
            cuts[path] = f"{path or 'the answer'}: cut to {len(container)} {kind}"
            continue
        if cap > STRING_FLOOR:
            cap = max(STRING_FLOOR, cap // 2)
            continue
        break  # nothing left to cut: the text's budget still holds
    return data, list(cuts.values())


# A picture larger than this is not sent (the answer says where the file is): our plots are tens of
# kilobytes, and a client puts every image it receives into the model's context.
IMAGE_LIMIT = 2 * 2**20
IMAGE_META = "kernel-mcp/file"  # _meta key naming the picture's file on disk (the command line prints it)


def image_content(image: Image) -> ImageContent:
    meta = {IMAGE_META: str(image.path)} if image.path else {}
    if image.uri:
        meta["kernel-mcp/uri"] = image.uri
    return ImageContent(type="image", data=base64.b64encode(image.data).decode("ascii"), mime_type=image.mime_type, _meta=meta or None)


def error_result(exc: KernelMcpError) -> CallToolResult:
    # Text only: clients check structured content against the tool's output schema even on errors.
    return CallToolResult(content=[TextContent(type="text", text=untrusted.block(exc.render()))], is_error=True)


def invalid_arguments(exc: ValidationError) -> InvalidInput:
    """The input model's verdict as one line, each problem by its field (the command line says the same)."""
    return InvalidInput("; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors(include_url=False)))


def unknown_arguments(spec: ToolSpec, arguments: dict[str, Any]) -> InvalidInput | None:
    """The refusal of arguments the tool does not take, or None. The SDK validates a model of the
    function's signature, which drops such an argument without a word: a misspelt `in_experiment`
    would run the benchmark outside the experiment. The input models forbid extras; this says so."""
    fields = spec.input_model.model_fields
    unknown = [key for key in arguments if key not in fields]
    if not unknown:
        return None
    named = ", ".join(repr(key[:60]) for key in unknown[:5]) + (
        f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
    )  # an error is not cut to the budget
    return InvalidInput(
        f"{spec.name} has no argument{'s' if len(unknown) > 1 else ''} {named} (its arguments: {', '.join(fields) or 'none'})",
        hint="tools/list gives each tool's input schema",
    )


async def call_handler(spec: ToolSpec, state: ServerState, arguments: dict[str, Any], ctx: ToolContext) -> CallToolResult:
    try:
        args = spec.input_model.model_validate(arguments)
        out = await ctx.call(spec.handler, args)
        rendered = out.render()  # inside: a rendering bug (a None formatted as a number) is ours to name, not the SDK's bare "Error executing tool"
    except ValidationError as exc:
        return error_result(invalid_arguments(exc))
    except KernelMcpError as exc:
        return error_result(exc)
    except Exception as exc:  # a bug of ours: say so clearly, keep serving, keep the trace
        log.error("tool %s failed:\n%s", spec.name, traceback.format_exc())
        return error_result(KernelMcpError(f"internal error in {spec.name}: {type(exc).__name__}: {exc}"))
    # Workspace text is escaped where each answer shows it (see untrusted); this catches the control
    # characters of any it missed (a carriage return, an ANSI escape), newlines and tabs aside.
    budget = state.budget()
    structured, cuts = fit_structured(out.model_dump(mode="json"), STRUCTURED_PER_TEXT * budget, out)
    notes = []
    if cuts:
        notes.append(f"[structured content cut to fit {STRUCTURED_PER_TEXT * budget} bytes: {'; '.join(cuts[:6])}; the run's files hold everything]")
    pictures = [image_content(i) for i in out.images() if len(i.data) <= IMAGE_LIMIT]
    too_big = [i.uri or str(i.path) for i in out.images() if len(i.data) > IMAGE_LIMIT]
    if too_big:
        notes.append(f"[picture(s) over {IMAGE_LIMIT} bytes not sent: {', '.join(too_big)}]")
    # the notes' room is taken from the budget before the answer is cut to it: added after the cut,
    # they made a 4,185-byte answer of a 4,096-byte budget
    tail = "".join("\n" + note for note in notes).encode("utf-8")[: budget // 2].decode("utf-8", errors="ignore")
    text = fit_budget(untrusted.block(rendered), budget - len(tail.encode("utf-8")), ctx.runs_made) + tail
    return CallToolResult(
        content=[TextContent(type="text", text=text), *pictures],
        structured_content=structured,
        is_error=out.failed(),  # the answer still matches the output schema: a failed compile keeps its diagnostics
    )


def _mcp_progress(mcp_ctx: Context) -> ProgressFn:
    async def report(done: float, total: float | None, message: str) -> None:
        await mcp_ctx.report_progress(done, total, message)

    return report


def mcp_annotations(hints: ToolAnnotations) -> McpToolAnnotations:
    return McpToolAnnotations(
        readOnlyHint=hints.read_only,
        destructiveHint=hints.destructive,
        idempotentHint=hints.idempotent,
        openWorldHint=hints.open_world,
    )


def register(server: MCPServer, state: ServerState, spec: ToolSpec) -> None:
    """Publish `spec` on `server`: schema from the input model, output schema from the output model."""
    params = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[info.annotation, info],  # the FieldInfo carries the default
        )
        for name, info in spec.input_model.model_fields.items()
    ]
    params.append(inspect.Parameter("mcp_ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context))

    async def tool_function(**kwargs: Any) -> CallToolResult:
        mcp_ctx: Context = kwargs.pop("mcp_ctx")
        ctx = ToolContext(state=state, tool=spec.name, progress=_mcp_progress(mcp_ctx))
        return await call_handler(spec, state, kwargs, ctx)

    returns = Annotated[CallToolResult, spec.output_model]
    tool_function.__signature__ = inspect.Signature(params, return_annotation=returns)  # type: ignore[attr-defined]
    tool_function.__annotations__ = {p.name: p.annotation for p in params} | {"return": returns}
    tool_function.__name__ = spec.name
    server.tool(name=spec.name, description=spec.description, annotations=mcp_annotations(spec.annotations))(tool_function)
    if isinstance(server, CompactToolsServer):
        server.specs[spec.name] = spec


# How long a call that changed a session's listing holds its answer for the client to re-read
# tools/list: Claude Code does within milliseconds; a client that never does pays this once per toolset.
RELIST_WAIT_S = 1.0


def _connection(ctx: ServerRequestContext[Any, Any]) -> Any:
    """The connection a request came on: one per session under the handshake protocols."""
    return ctx.session._connection  # the SDK names it nowhere public


class CompactToolsServer(MCPServer):
    """MCPServer whose tools/list carries compact schemas (see schema_compaction): arguments and
    structured content are still validated by the full pydantic models. A call of a registered tool
    is checked against its input model as sent: an argument the tool does not take is refused, and
    a value the SDK's validation refuses is answered in the server's own one-line form.

    Its tools/list is progressive (see kernel_mcp.toolsets): while `listed()` says "core", a client
    is shown the core toolset and the toolsets loaded in its session. A tools/call loads the
    toolset of the tool called (every tool is callable by name, listed or not) and, for tools_load,
    those it names; a load that changes the listing sends notifications/tools/list_changed, and
    the handshake advertises tools.listChanged. What was loaded is kept per connection under the
    handshake protocols; the 2026-07-28 protocol has no session (each request arrives on a
    connection of its own), so there it is kept per server process and the change is published to
    subscriptions/listen. `list_tools()` itself, called in process (the command line, the
    benchmarks), still gives every tool: only the protocol's tools/list is progressive."""

    def __init__(self, *args: Any, listed: Callable[[], ListedTools] = lambda: "core", **kwargs: Any) -> None:
        # the SDK's middleware sees every request with its session, before the Tasks extension
        # takes over a call: the one place that hears every tools/list and every tools/call
        kwargs["middleware"] = [*(kwargs.get("middleware") or ()), self._progressive_listing]
        super().__init__(*args, **kwargs)
        self.specs: dict[str, ToolSpec] = {}
        self.listed = listed
        self._loaded_by_connection: WeakKeyDictionary[Any, set[str]] = WeakKeyDictionary()
        self._loaded_in_process: set[str] = set()
        self._relisting: WeakKeyDictionary[Any, anyio.Event] = WeakKeyDictionary()  # per connection: set by its next tools/list
        self._advertise_tools_list_changed()

    def _advertise_tools_list_changed(self) -> None:
        lowlevel = self._lowlevel_server  # the SDK offers no other way to shape the handshake's capabilities
        make = lowlevel.create_initialization_options

        def create(notification_options: Any = None, experimental_capabilities: Any = None, extensions: Any = None) -> Any:
            options = notification_options or NotificationOptions()
            options.tools_changed = True
            return make(options, experimental_capabilities, extensions)

        lowlevel.create_initialization_options = create  # type: ignore[method-assign]

    def toolset_of(self, name: Any) -> str:
        spec = self.specs.get(name) if isinstance(name, str) else None
        return spec.toolset if spec is not None else toolsets.CORE  # a tool not made from a ToolSpec is always listed

    def loaded(self, ctx: ServerRequestContext[Any, Any]) -> set[str]:
        """The toolsets loaded for the session `ctx` belongs to (see the class's docstring)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self._loaded_in_process
        return self._loaded_by_connection.setdefault(_connection(ctx), set())

    async def _progressive_listing(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        relisted = None
        if ctx.method == "tools/call" and ctx.request_id is not None and isinstance(ctx.params, Mapping):
            wanted = {self.toolset_of(ctx.params.get("name"))}
            if ctx.params.get("name") == toolsets.TOOLS_LOAD:
                wanted |= toolsets.requested(ctx.params.get("arguments") or {})
            relisted = await self._load(ctx, wanted - {toolsets.CORE})
        result = await call_next(ctx)
        if ctx.method == "tools/list" and isinstance(result, dict) and isinstance(result.get("tools"), list) and self.listed() != "all":
            shown = self.loaded(ctx) | {toolsets.CORE}
            result = {**result, "tools": [tool for tool in result["tools"] if self.toolset_of(tool.get("name")) in shown]}
            if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and (waiting := self._relisting.pop(_connection(ctx), None)) is not None:
                waiting.set()
        if relisted is not None:
            # Claude Code re-reads tools/list at once when told, but builds the model's next request
            # with the tools it had when the call's answer came: answered first, the loaded tools
            # reached the model a turn late (benchmarks/tool_definitions.py --call tools_load)
            with anyio.move_on_after(RELIST_WAIT_S):
                await relisted.wait()
        return result

    async def _load(self, ctx: ServerRequestContext[Any, Any], wanted: set[str]) -> anyio.Event | None:
        """Load `wanted` for the session and say so; under the handshake protocols, the event set
        when the client has re-read tools/list since (None where nothing changed)."""
        loaded = self.loaded(ctx)
        if wanted <= loaded:
            return None  # loading is idempotent: a set loaded before changes nothing and says nothing
        loaded |= wanted
        if self.listed() == "all":
            return None  # every tool is listed already
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await self._subscriptions.publish(ToolsListChanged())  # the SDK's bus of subscriptions/listen streams
            return None
        relisted = self._relisting.setdefault(_connection(ctx), anyio.Event())
        # request-scoped, so that it travels before the call's answer on streamable HTTP too
        await ctx.session.send_notification(ToolListChangedNotification(), related_request_id=ctx.request_id)
        return relisted

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        spec = self.specs.get(name)
        if spec is None:
            return await super().call_tool(name, arguments, context)
        refusal = unknown_arguments(spec, arguments)
        if refusal is not None:
            return error_result(refusal)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            # only the arguments' validation raises this with a ValidationError behind it: the tool
            # function answers every failure of its own as a result (see call_handler)
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            return error_result(invalid_arguments(exc.__cause__))

    async def list_tools(self) -> list[McpTool]:
        return [
            tool.model_copy(
                update={
                    "input_schema": compact(tool.input_schema, output=False),
                    "output_schema": compact(tool.output_schema, output=True) if tool.output_schema else None,
                }
            )
            for tool in await super().list_tools()
        ]
