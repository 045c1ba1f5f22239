"""The MCP side of a tool: publish a `ToolSpec` (see `tooling`) on an MCPServer.

`register` builds the function MCPServer publishes. Its schema comes from the input model's
fields; each call validates the arguments with that model, hands the handler a `ToolContext`
(workspace, progress, run artifacts), and answers with the output model as structured content
plus the model's short text rendering, cut to the workspace's response budget, and the pictures
the output carries as image content. Errors meant for
the caller (`KernelMcpError`) become error results; the server keeps serving. Only the server and
the command line import this module: capability code stays free of the MCP SDK.
"""

from __future__ import annotations

import base64
import inspect
import json
import logging
import traceback
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, ImageContent, TextContent, Tool as McpTool, ToolAnnotations as McpToolAnnotations
from pydantic import ValidationError

from kernel_mcp import untrusted
from kernel_mcp.errors import InvalidInput, KernelMcpError
from kernel_mcp.runner import ProgressFn
from kernel_mcp.schema_compaction import compact
from kernel_mcp.tooling import Image, ServerState, ToolAnnotations, ToolContext, ToolSpec
from kernel_mcp.workspace import Run

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


def fit_structured(data: Any, limit: int) -> tuple[Any, bool]:
    """Halve the longest list in `data` until its JSON fits `limit` bytes (the text's budget has a
    twin here: 40,000 config classes made 4.9 MB of structured content). Lists only shrink, so the
    result still matches the output schema."""
    def size(value: Any) -> int:
        return len(json.dumps(value, separators=(",", ":"), default=str))

    trimmed = False
    while size(data) > limit:
        lists: list[list] = []

        def collect(value: Any) -> None:
            if isinstance(value, list):
                lists.append(value)
                for item in value:
                    collect(item)
            elif isinstance(value, dict):
                for item in value.values():
                    collect(item)

        collect(data)
        longest = max((v for v in lists if len(v) > 1), key=size, default=None)
        if longest is None:
            break  # nothing left to cut: one huge value; the text budget still holds
        del longest[len(longest) // 2:]
        trimmed = True
    return data, trimmed


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
    named = ", ".join(repr(key[:60]) for key in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")  # an error is not cut to the budget
    return InvalidInput(f"{spec.name} has no argument{'s' if len(unknown) > 1 else ''} {named} (its arguments: {', '.join(fields) or 'none'})",
                        hint="tools/list gives each tool's input schema")


async def call_handler(spec: ToolSpec, state: ServerState, arguments: dict[str, Any], ctx: ToolContext) -> CallToolResult:
    try:
        args = spec.input_model.model_validate(arguments)
        out = await ctx.call(spec.handler, args)
    except ValidationError as exc:
        return error_result(invalid_arguments(exc))
    except KernelMcpError as exc:
        return error_result(exc)
    except Exception as exc:  # a bug of ours: say so clearly, keep serving, keep the trace
        log.error("tool %s failed:\n%s", spec.name, traceback.format_exc())
        return error_result(KernelMcpError(f"internal error in {spec.name}: {type(exc).__name__}: {exc}"))
    # Workspace text is escaped where each answer shows it (see untrusted); this catches the control
    # characters of any it missed (a carriage return, an ANSI escape), newlines and tabs aside.
    text = fit_budget(untrusted.block(out.render()), state.budget(), ctx.runs_made)
    structured, trimmed = fit_structured(out.model_dump(mode="json"), STRUCTURED_PER_TEXT * state.budget())
    if trimmed:
        text += f"\n[structured content: long lists cut to fit {STRUCTURED_PER_TEXT * state.budget()} bytes; the run's files hold everything]"
    pictures = [image_content(i) for i in out.images() if len(i.data) <= IMAGE_LIMIT]
    too_big = [i.uri or str(i.path) for i in out.images() if len(i.data) > IMAGE_LIMIT]
    if too_big:
        text += f"\n[picture(s) over {IMAGE_LIMIT} bytes not sent: {', '.join(too_big)}]"
    return CallToolResult(
        content=[TextContent(type="text", text=text), *pictures],
        structured_content=structured,
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


class CompactToolsServer(MCPServer):
    """MCPServer whose tools/list carries compact schemas (see schema_compaction): arguments and
    structured content are still validated by the full pydantic models. A call of a registered tool
    is checked against its input model as sent: an argument the tool does not take is refused, and
    a value the SDK's validation refuses is answered in the server's own one-line form."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.specs: dict[str, ToolSpec] = {}

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
            tool.model_copy(update={"input_schema": compact(tool.input_schema, output=False),
                                    "output_schema": compact(tool.output_schema, output=True) if tool.output_schema else None})
            for tool in await super().list_tools()
        ]
