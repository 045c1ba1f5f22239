"""`kernel-mcp init DIR` fits the workspace it finds: the editable set names the kernel sources
that are there, and a .gitignore keeps the server's state, Python caches and benchmark outputs
out of what an experiment sees (a user's every candidate was refused for a __pycache__ file)."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import git
import pytest
from mcp import Client

from kernel_mcp.cli import main
from kernel_mcp.ledger.harness import is_protected, workspace_files
from kernel_mcp.server import build_server
from kernel_mcp.workspace import parse_config
from kernel_mcp.workspace.config import example_config
from kernel_mcp.workspace.scaffold import editable_globs, find_kernel_sources

from conftest import PY, call, text_of, toml_list

# A Python harness around a CUDA kernel: the benchmark imports a helper module (so running it
# leaves __pycache__/) and writes its CSV under out/.
BENCH = textwrap.dedent(
    """
    import csv, os, sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from shapes import SHAPES
    kernel = open("src/kernel.cu").read()
    os.makedirs("out", exist_ok=True)
    with open("out/bench.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["shape", "err_kernel", "us_kernel"])
        for shape in SHAPES:
            w.writerow([shape, 0, 100.0 + len(kernel) % 7])
    """
)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)


def test_init_finds_a_cuda_kernel_and_ignores_what_runs_leave(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # the benchmark must leave its cache, as for the user
    root = tmp_path / "w"
    write(root, {"src/kernel.cu": "__global__ void k() {}\n", "bench.py": BENCH, "shapes.py": "SHAPES = ['a']\n"})
    assert main(["init", str(root)]) == 0
    said = capsys.readouterr().out
    cfg = parse_config((root / "kernel-mcp.toml").read_text())
    assert cfg.harness.editable == ["src/*.cu"]
    assert 'editable = ["src/*.cu"]' in said
    ignore = (root / ".gitignore").read_text().splitlines()
    assert {".kernel-mcp/", "__pycache__/", "*.pyc", "out/", "build/"} <= set(ignore)

    # What the ledger sees after the benchmark ran once: the kernel is editable, the harness is
    # protected, and neither the bytecode cache nor the CSV is a workspace file at all.
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.git.commit("-m", "kernel and harness", "--author", "t <t@example.invalid>")
    subprocess.run([PY, "bench.py"], cwd=root, check=True)
    assert (root / "__pycache__").is_dir() and (root / "out" / "bench.csv").is_file()
    files = workspace_files(repo, ".")
    assert not [f for f in files if f.startswith(("__pycache__/", "out/"))], files
    assert not is_protected("src/kernel.cu", cfg.harness)
    assert all(is_protected(f, cfg.harness) for f in ("bench.py", "shapes.py", "kernel-mcp.toml", ".gitignore"))


@pytest.mark.anyio
async def test_a_candidate_of_an_initialized_python_harness_is_not_refused(tmp_path, monkeypatch):
    """The user's case end to end: init, fill in the benchmark, commit, change the kernel."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # the benchmark must leave its cache, as for the user
    root = tmp_path / "w"
    write(root, {"src/kernel.cu": "__global__ void k() {}\n", "bench.py": BENCH, "shapes.py": "SHAPES = ['a', 'b']\n"})
    assert main(["init", str(root)]) == 0
    toml = (root / "kernel-mcp.toml").read_text()
    toml = toml.replace('platform = "auto"', 'platform = "offline"').replace('command = ["python", "bench.py"]', f"command = {toml_list(PY, 'bench.py')}")
    (root / "kernel-mcp.toml").write_text(toml)
    repo = git.Repo.init(root)
    repo.git.add("-A")
    repo.git.commit("-m", "kernel and harness", "--author", "t <t@example.invalid>")
    async with Client(build_server(root)) as client:
        start = await call(client, "experiment_start", tag="cu")
        kernel = Path(start["worktree"], "src", "kernel.cu")
        kernel.write_text(kernel.read_text() + "__device__ int unroll = 4;\n")  # code, not a comment: a comment would be BEST's code, never run
        result = await client.call_tool("experiment_evaluate", {"hypothesis": "unroll"})
    assert not result.is_error, text_of(result)
    # the runs did leave what used to get every candidate refused
    assert Path(start["worktree"], "__pycache__").is_dir() and Path(start["worktree"], "out", "bench.csv").is_file()
    attempt = result.structured_content["attempt"]
    assert attempt["decision"] != "refused", attempt["reasons"]
    assert not any("editable" in r for r in attempt["reasons"]), attempt["reasons"]


def test_an_existing_gitignore_keeps_its_lines(tmp_path, capsys):
    root = tmp_path / "w"
    own = "# mine\n.venv/\n/out\n*.py[cod]\nresults.txt"  # no newline at the end, on purpose
    write(root, {".gitignore": own, "kernel.cu": "\n"})
    assert main(["init", str(root)]) == 0
    text = (root / ".gitignore").read_text()
    assert text.startswith(own + "\n")
    added = [line for line in text[len(own) :].splitlines() if line and not line.startswith("#")]
    assert added == [".kernel-mcp/", "__pycache__/", "build/"]  # /out and *.py[cod] already cover the rest
    assert "added .kernel-mcp/ __pycache__/ build/" in capsys.readouterr().out
    assert main(["init", "--force", str(root)]) == 0
    assert (root / ".gitignore").read_text() == text  # nothing missing the second time


def test_a_folder_without_sources_keeps_the_example_and_says_so(tmp_path, capsys):
    root = tmp_path / "w"
    write(root, {"bench.py": BENCH, "build/gen.cu": "\n", "out/x.cu": "\n", ".cache/y.cu": "\n"})
    assert main(["init", str(root)]) == 0
    assert "no kernel sources" in capsys.readouterr().out
    cfg = parse_config((root / "kernel-mcp.toml").read_text())
    assert cfg == parse_config(example_config())


def test_globs_by_folder_and_extension_leave_harness_like_sources_protected(tmp_path):
    write(
        tmp_path,
        {
            "kernel.cu": "",
            "bench.cu": "",
            "reference.cpp": "",  # top level: named one by one
            "src/conv.cu": "",
            "src/conv.cuh": "",
            "src/util.h": "",
            "ops/fast.hip": "",
            "ops/ref/reference.hip": "",  # a glob over ops/ would reach the reference
            "third_party/lib/x.h": "",
            "node_modules/m/y.c": "",
            ".hidden/z.cu": "",
            "__pycache__/w.c": "",
            "harness.py": "",
        },
    )
    sources = find_kernel_sources(tmp_path)
    assert "third_party/lib/x.h" not in sources and ".hidden/z.cu" not in sources and "harness.py" not in sources
    globs, protected = editable_globs(sources)
    assert globs == ["kernel.cu", "ops/fast.hip", "src/*.cu", "src/*.cuh", "src/*.h"]
    assert protected == ["bench.cu", "ops/ref/reference.hip", "reference.cpp"]
