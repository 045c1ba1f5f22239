"""The MCP side of the run artifacts: `kernel-mcp://runs/{run_id}/{name}{?page}`, each read with
the artifact's own MIME type, binary ones as blobs, large texts in pages (see workspace.artifacts).

MCPServer gives everything read through a resource template the template's one MIME type, so a
PNG went out as garbled text/plain. Here the template function returns `TypedText` or `TypedBytes`:
a str or bytes that also carries its MIME type and `_meta`. The SDK hands such a value through
unchanged (it only checks str or bytes), and `KernelMcpServer.read_resource` puts the type on the
contents it answers with; str becomes text contents, bytes a base64 blob.

A read that cannot be served raises the SDK's own resource errors with our message, which the
client gets as a protocol error: an unknown run, file or page (or a bad name) is
`ResourceNotFoundError` (-32602, invalid params), anything else `ResourceError` (-32603). Any other
exception would reach the client only as "Error creating resource from template".
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp_types import InputRequiredResult

from kernel_mcp.errors import InvalidInput, KernelMcpError
from kernel_mcp.mcp_adapter import CompactToolsServer
from kernel_mcp.tooling import ServerState
from kernel_mcp.workspace import artifacts
from kernel_mcp.workspace.runs import RESOURCE_SCHEME

ARTIFACT_TEMPLATE = RESOURCE_SCHEME + "://runs/{run_id}/{name}{?page}"


class _Typed:
    """A str or bytes value that also knows its MIME type and `_meta` (mixed in before the base)."""

    mime_type: str
    meta: dict[str, Any] | None

    def __new__(cls, value, mime_type: str, meta: dict[str, Any] | None = None):
        typed = super().__new__(cls, value)  # type: ignore[call-arg]  # mixed in before str or bytes: super() is theirs, not object's
        typed.mime_type, typed.meta = mime_type, meta
        return typed


class TypedText(_Typed, str):
    """Text that knows its MIME type and `_meta`."""


class TypedBytes(_Typed, bytes):
    """Bytes that know their MIME type and `_meta`."""


class KernelMcpServer(CompactToolsServer):
    """MCPServer whose resources may choose their MIME type and `_meta` on each read."""

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        contents = await super().read_resource(uri, context)
        if isinstance(contents, InputRequiredResult):
            return contents
        return [
            ReadResourceContents(
                content=item.content,
                mime_type=getattr(item.content, "mime_type", None) or item.mime_type,
                meta=getattr(item.content, "meta", None) or item.meta,
            )
            for item in contents
        ]


def register_run_artifacts(server: MCPServer, state: ServerState) -> None:
    @server.resource(
        ARTIFACT_TEMPLATE,
        name="run-artifact",
        description=(
            "One file kept by a run (compiler output, ISA, logs, CSV, plots, profiles), with its own MIME type: "
            f"binary files whole, as blobs; text in pages of {artifacts.PAGE_PER_BUDGET} answers' worth "
            "(64 KiB at the default budget); a page of a longer text starts with a line naming the next (?page=N)"
        ),
        mime_type="text/plain",  # the SDK wants one; each read says the file's own
    )
    def run_artifact(run_id: str, name: str, page: str = "1") -> str | bytes:
        try:
            found = artifacts.read_artifact(state.workspace().runs, run_id, name, page, page_bytes=artifacts.PAGE_PER_BUDGET * state.budget())
        except InvalidInput as exc:
            raise ResourceNotFoundError(exc.render()) from None
        except KernelMcpError as exc:
            raise ResourceError(exc.render()) from None
        typed = TypedBytes if isinstance(found.content, bytes) else TypedText
        return typed(found.content, found.mime_type, found.meta())
