"""kernel-mcp.toml: valid files load, and every kind of bad file gets an error naming the key."""

from __future__ import annotations

import pytest

from kernel_mcp.errors import WorkspaceError
from kernel_mcp.workspace import Workspace, init_workspace, parse_config
from kernel_mcp.workspace.config import example_config

from conftest import BASIC_TOML


def test_example_written_by_init_is_valid(tmp_path):
    path = init_workspace(tmp_path / "new")
    cfg = parse_config(path.read_text())
    assert cfg.target.arch == "gfx950" and cfg.target.platform == "auto"
    assert cfg.benchmark.correctness.parsed() == ("==", 0.0)
    assert ".kernel-mcp/" in (tmp_path / "new" / ".gitignore").read_text()
    assert parse_config(example_config()) == cfg


def test_init_refuses_to_overwrite(tmp_path):
    init_workspace(tmp_path)
    with pytest.raises(WorkspaceError, match="already exists"):
        init_workspace(tmp_path)
    init_workspace(tmp_path, force=True)


def test_basic_config_loads():
    cfg = parse_config(BASIC_TOML)
    assert cfg.benchmark.metric == "us_k"
    assert sorted(cfg.commands) == ["fail", "hello"]


@pytest.mark.parametrize(
    "body, expected",
    [
        ('[target]\narch = "gfx1100"\n', "target.arch: Input should be 'gfx950', 'gfx942', 'gfx90a' or 'sm_90'"),
        ('[target]\nplatform = "metal"\n', "target.platform: Input should be 'auto', 'rocm', 'cuda' or 'offline'"),
        ('[target]\narchh = "gfx950"\n', "target.archh: unknown key"),
        ('[benchmark]\ncsv = "x.csv"\nmetric = "us"\ncorrectness = {column = "err"}\n', "benchmark.command: required key is missing"),
        ('[benchmark]\ncommand = ["x"]\ncsv = "x.csv"\nmetric = "us"\ncorrectness = {column = "err", rule = "is zero"}\n', "benchmark.correctness.rule"),
        (
            '[benchmark]\ncommand = ["x"]\ncsv = "x.csv"\nmetric = "us"\ncorrectness = {column = "e"}\ntarget_kernel = "("\n',
            "benchmark.target_kernel: Value error, not a valid regular expression",
        ),
        ('[benchmark]\ncommand = ["x"]\ncsv = "x.csv"\nmetric = "us"\ncorrectness = {column = "e"}\nnoise_threshold = 2\n', "benchmark.noise_threshold"),
        ('[commands]\n"bad name" = ["x"]\n', "commands: Value error, command name 'bad name'"),
        ("[server]\nresponse_budget_bytes = 10\n", "server.response_budget_bytes: Input should be greater than or equal to 512"),
        ('[server]\ntools = "some"\n', "server.tools: Input should be 'core' or 'all'"),
        ("[target\narch = 1\n", "is not valid TOML"),
    ],
)
def test_bad_config_names_the_key(body, expected):
    with pytest.raises(WorkspaceError) as info:
        parse_config(body)
    assert expected in info.value.message


def test_missing_config_says_how_to_fix(tmp_path):
    with pytest.raises(WorkspaceError) as info:
        _ = Workspace.open(tmp_path).config
    assert "no kernel-mcp.toml" in info.value.message and "kernel-mcp init" in info.value.hint


def test_missing_workspace_folder(tmp_path):
    with pytest.raises(WorkspaceError, match="not found"):
        Workspace.open(tmp_path / "absent")
