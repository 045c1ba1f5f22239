"""Imports where people keep them (issue 32): the workspace's `[imports] folders` name folders
outside it that profile_import, thread_trace_import and compile_import may read, read-only; any
other absolute path is refused naming the setting, a link out of a named folder is refused, and
an import never leaves the workspace dirty for experiment_start. Real git, the real MCP server,
recorded real outputs copied into a folder outside the workspace."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import git
import pytest
from mcp import Client

from kernel_mcp.errors import WorkspaceError
from kernel_mcp.server import build_server
from kernel_mcp.workspace.config import parse_config

from conftest import PY, call, data, text_of, toml_list

pytestmark = pytest.mark.anyio

BENCH = "import os\nos.makedirs('out', exist_ok=True)\nopen('out/bench.csv', 'w').write('shape,err_k,us_k\\nsmall,0,10.0\\nlarge,0,20.0\\n')\n"


def _toml(folders: list[str]) -> str:
    return (
        f'[target]\narch = "gfx950"\nplatform = "offline"\n\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\n'
        'csv = "out/bench.csv"\nconfig_columns = ["shape"]\ncorrectness = { column = "err_k", rule = "== 0" }\n'
        'metric = "us_k"\ntarget_kernel = "k"\ntimeout_s = 20\nrepeats = 2\n'
        '[harness]\neditable = ["bench.py"]\nkeep_metric = "csv"\n\n'
        f"[imports]\nfolders = {json.dumps(folders)}\n"
    )


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under `folder` with its size and modification time: what an import must not change."""
    return {p.relative_to(folder).as_posix(): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


@pytest.fixture
def places(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """(the workspace, committed in its own repository; a home folder holding logs/ with recorded
    profiler, trace and compiler outputs), the workspace naming ~/logs as an import folder."""
    home = tmp_path / "home"
    logs = home / "logs"
    shutil.copytree(data("rocm/rcm-vcopy-mi350-rocprofv3"), logs / "vcopy")
    shutil.copytree(data("rocm/att-gfx950/vec_add"), logs / "att")
    shutil.copy(data("triton-gemm_afp4_wfp4-gfx950.amdgcn"), logs / "gemm.amdgcn")
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "bench.py").write_text(BENCH)
    (ws / "kernel-mcp.toml").write_text(_toml(["~/logs"]))
    (ws / ".gitignore").write_text("out/\n")
    repo = git.Repo.init(ws)
    with repo.config_writer() as config:  # HOME moved: git's own config is the repository's
        config.set_value("user", "name", "t")
        config.set_value("user", "email", "t@example.invalid")
    repo.git.add("-A")
    repo.git.commit("-m", "benchmark")
    return ws, logs


async def test_an_import_from_a_named_folder_then_experiment_start(places):
    ws, logs = places
    before = _snapshot(logs)
    async with Client(build_server(ws)) as client:
        summary = await call(client, "profile_import", paths=[str(logs / "vcopy")])
        assert summary["kernels"], summary
        files = [f["path"] for f in summary["inputs"]]
        # the files read are named where they are, never as if they were in the workspace
        assert f"{logs / 'vcopy'}/sysinfo.csv" in files, files
        assert any("gfx950" in note and "sysinfo.csv" in note for note in summary["notes"]), summary["notes"]
        home_form = await call(client, "profile_import", paths=["~/logs/vcopy/pmc_perf.csv"])
        assert "~/logs/vcopy/pmc_perf.csv" in [f["path"] for f in home_form["inputs"]]
        start = await call(client, "experiment_start", tag="after-import")
        assert start["worktree"]
    assert _snapshot(logs) == before  # read, never written
    assert not git.Repo(ws).is_dirty(untracked_files=True)


async def test_trace_and_compile_imports_read_a_named_folder(places):
    ws, logs = places
    async with Client(build_server(ws)) as client:
        trace = await call(client, "thread_trace_import", path="~/logs/att")
        assert trace["instructions"] > 0 and trace["arch"] == "gfx950", trace
        compiled = await call(client, "compile_import", paths=[str(logs / "gemm.amdgcn")])
        assert compiled["arch"] == "gfx950" and compiled["arch_from"] == str(logs / "gemm.amdgcn"), compiled


async def test_an_absolute_path_outside_the_named_folders_is_refused_naming_the_setting(places, tmp_path):
    ws, logs = places
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(logs / "vcopy", elsewhere)
    async with Client(build_server(ws)) as client:
        for tool, arguments in (
            ("profile_import", {"paths": [str(elsewhere)]}),
            ("thread_trace_import", {"path": str(elsewhere)}),
            ("compile_import", {"paths": [str(elsewhere / "sysinfo.csv")]}),
        ):
            result = await client.call_tool(tool, arguments)
            text = text_of(result)
            assert result.is_error and "[imports] folders" in text and "kernel-mcp.toml" in text, (tool, text)


async def test_a_link_leading_out_of_a_named_folder_is_refused(places, tmp_path):
    ws, logs = places
    secret = tmp_path / "secret"
    shutil.copytree(logs / "vcopy", secret)
    os.symlink(secret, logs / "escape")
    os.symlink(secret / "pmc_perf.csv", logs / "vcopy" / "planted.csv")
    async with Client(build_server(ws)) as client:
        named = await client.call_tool("profile_import", {"paths": [str(logs / "escape")]})
        assert named.is_error and "[imports] folders" in text_of(named), text_of(named)
        inside = await client.call_tool("profile_import", {"paths": [str(logs / "vcopy")]})
        assert inside.is_error and "planted.csv" in text_of(inside) and "symbolic link" in text_of(inside), text_of(inside)


async def test_options_and_relative_paths_are_as_before(places):
    ws, logs = places
    shutil.copytree(logs / "vcopy", ws / "copied")
    async with Client(build_server(ws)) as client:
        relative = await call(client, "profile_import", paths=["copied"])
        assert "copied/sysinfo.csv" in [f["path"] for f in relative["inputs"]]
        for given in ("-o/x", "../home/logs/vcopy"):
            result = await client.call_tool("profile_import", {"paths": [given]})
            assert result.is_error, given


@pytest.mark.parametrize("entry", ["logs", "", "-x", "/a\x00b", "C:\\logs"])
def test_import_folders_must_be_absolute_paths(entry):
    with pytest.raises(WorkspaceError, match=r"imports\.folders"):
        parse_config(_toml([entry]))
