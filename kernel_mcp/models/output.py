"""The base of every answer, below everything that answers: capability packages and the
platforms both build ToolOutputs (a profile summary is one), so it lives in the low layer;
`kernel_mcp.tooling` offers it beside the rest of a tool's vocabulary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, PrivateAttr


@dataclass(frozen=True)
class Image:
    """A picture that goes with an answer (a plot, a chart), as plain data: the MCP layer sends it
    as image content beside the text. `path` and `uri` say where the run keeps it, so a front end
    that cannot show a picture (the command line) names the file instead."""

    data: bytes
    mime_type: str = "image/png"
    path: Path | None = None
    uri: str | None = None


class ToolOutput(BaseModel):
    """Base of every tool result: structured fields plus `render()`, the short text an agent reads,
    and the pictures attached to it (kept out of the structured content and its schema: a private
    attribute, so a client that validates the structured content never sees bytes there)."""

    model_config = ConfigDict(extra="forbid")
    _images: list[Image] = PrivateAttr(default_factory=list)

    def render(self) -> str:
        return self.model_dump_json(indent=1, exclude_none=True)

    def failed(self) -> bool:
        """Whether the answer reports a failure the caller must not miss (a compile that did not
        build): it goes out as an error result that still carries the whole answer, its
        structured content included, and the command line exits non-zero."""
        return False

    def attach(self, image: Image) -> None:
        self._images.append(image)

    def images(self) -> list[Image]:
        return list(self._images)
