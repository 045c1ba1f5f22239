"""Nothing outside the workspace is ever read or written, and no path is taken for an option."""

from __future__ import annotations

import os

import pytest

from kernel_mcp.errors import InvalidInput
from kernel_mcp.workspace import Workspace


@pytest.mark.parametrize(
    "path, reason",
    [
        ("../outside.hip", "outside the workspace"),
        ("src/../../outside.hip", "outside the workspace"),
        ("/etc/passwd", "absolute"),
        ("-o/tmp/x", "would be read as an option"),
        ("--help", "would be read as an option"),
        ("a\x00b", "NUL"),
        ("", "empty"),
    ],
)
def test_unsafe_paths_refused(tmp_path, path, reason):
    ws = Workspace.open(tmp_path)
    with pytest.raises(InvalidInput, match=reason):
        ws.resolve(path)


def test_symlink_leading_out_is_refused(tmp_path):
    inside = tmp_path / "ws"
    inside.mkdir()
    (tmp_path / "secret.txt").write_text("x")
    os.symlink(tmp_path / "secret.txt", inside / "link.txt")
    with pytest.raises(InvalidInput, match="outside"):
        Workspace.open(inside).resolve("link.txt")


def test_paths_inside_resolve(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.hip").write_text("")
    ws = Workspace.open(tmp_path)
    assert ws.resolve("src/k.hip", must_exist=True) == (tmp_path / "src" / "k.hip").resolve()
    assert ws.relative(ws.resolve("./src/../src/k.hip")) == "src/k.hip"
    with pytest.raises(InvalidInput, match="no such file"):
        ws.resolve("src/none.hip", must_exist=True)
