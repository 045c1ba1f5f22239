"""Pictures reach the client: plots and charts come back as image content, run artifacts as
resources of their own MIME type (binary ones as blobs), large text artifacts in pages, and a read
of something that is not there as a clear error. All through the SDK's real in-memory client, with
real matplotlib and real files."""

from __future__ import annotations

import base64
import io

import pytest
from mcp import Client

from kernel_mcp.server import build_server

pytestmark = pytest.mark.anyio

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG, decoded by matplotlib (a broken file raises)."""
    import matplotlib.image

    pixels = matplotlib.image.imread(io.BytesIO(data), format="png")
    return pixels.shape[1], pixels.shape[0]


def images_of(result) -> list:
    return [block for block in result.content if block.type == "image"]


async def test_roofline_plot_comes_back_as_an_image(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text("")
    async with Client(build_server(tmp_path)) as client:
        plain = await client.call_tool("roofline", {"arch": "gfx950", "flops": 1e12, "bytes": 1e9})
        assert images_of(plain) == []  # no plot asked, no picture
        result = await client.call_tool("roofline", {"arch": "gfx950", "flops": 1e12, "bytes": 1e9, "seconds": 1e-3, "plot": True})
    assert not result.is_error
    assert result.content[0].type == "text" and "plot: kernel-mcp://runs/" in result.content[0].text
    [image] = images_of(result)
    assert image.mime_type == "image/png"
    data = base64.b64decode(image.data)
    assert data.startswith(PNG_SIGNATURE)
    width, height = png_size(data)
    assert width > 300 and height > 200
    kept = tmp_path / ".kernel-mcp" / "runs" / result.structured_content["roofline"]["plot"].split("/")[-2] / "roofline.png"
    assert kept.read_bytes() == data  # the picture sent is the one kept
    assert image.meta["kernel-mcp/file"] == str(kept)
    assert "image" not in str(result.structured_content)  # structured content stays plain data
