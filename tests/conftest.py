"""Shared test helpers: real workspaces (git repositories) in tmp folders, the recorded tool
outputs (tests/data, and ../shared/fixtures beside the repository where present), and a real MCP
client connected to the real server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
# The shared fixtures folder beside the repository (not part of a clone): recorded outputs whose
# licence does not allow a copy in this repository, and the ROCm documents.
FIXTURES = Path(os.environ.get("KERNEL_MCP_FIXTURES", REPO.parent / "shared" / "fixtures"))
ROCM_DOCS = FIXTURES.parent / "docs" / "rocm"
PY = sys.executable
DATA = Path(__file__).resolve().parent / "data"
# Copies of the shared fixtures whose licence allows it, under the same relative names
# (their sources and licences in tests/data/SOURCES.md).
COPIED_FIXTURES = DATA / "shared-fixtures"
# Shared fixtures that are not copied here, and why; a test needing one is skipped without ../shared.
NOT_COPIED = {
    "rocm/roctop-amdsmi-metric-ecc-r9700.json": "GPL-3.0 (x7even/roctop)",
    "rocm/roctop-amdsmi-process-r9700.json": "GPL-3.0 (x7even/roctop)",
    "rocm/luckylinux-GPU_NOTES.md": "AGPL-3.0 (luckylinux/supermicro-fan-control)",
}


def find_fixture(relative: str) -> Path | None:
    """A recorded output (file or folder): the repository's copy first, then the shared folder."""
    for root in (COPIED_FIXTURES, FIXTURES):
        if (root / relative).exists():
            return root / relative
    return None


def fixture(relative: str) -> Path:
    """A recorded output; the test (or, at import time, the module) is skipped when it is in
    neither the repository's copy nor the shared fixtures folder."""
    path = find_fixture(relative)
    if path is None:
        why = (
            f"its licence does not allow a copy in this repository: {NOT_COPIED[relative]}"
            if relative in NOT_COPIED
            else "it is not among the copies in tests/data/shared-fixtures (see tests/data/SOURCES.md)"
        )
        pytest.skip(f"recorded output {relative} is read from the shared fixtures folder ({FIXTURES}), absent here; {why}", allow_module_level=True)
    return path


def rocm_docs() -> Path:
    """The public ROCm documents the docs-index tests ingest; skipped when the shared folder is absent."""
    if not ROCM_DOCS.is_dir():
        pytest.skip(
            f"the ROCm documents are read from the shared folder ({ROCM_DOCS}), absent here: they are ingested at run time, never copied into this repository",
            allow_module_level=True,
        )
    return ROCM_DOCS


@pytest.fixture(scope="module")
def rocm_store(tmp_path_factory):
    """A workspace's docs index with the shared ROCm documents ingested, once per test module."""
    from kernel_mcp.docs import ingest, open_store

    docs = rocm_docs()  # the tests that need them skip, with the reason, without them
    store = open_store(tmp_path_factory.mktemp("ws") / ".kernel-mcp")
    report = ingest(store, [docs])
    assert all(r["status"] == "added" for r in report.results), report.results
    return store


def data(relative: str) -> Path:
    """A real recorded output copied into tests/data (its source in tests/data/SOURCES.md)."""
    path = DATA / relative
    if not path.exists():
        pytest.fail(f"recorded test data missing: tests/data/{relative} (see tests/data/SOURCES.md)")
    return path


TORCH_ABSENT = (
    "torch is not installed: the example workspaces' CPU reference tests need it, and the test extra leaves it out "
    "(on PyPI a Linux torch is a CUDA build of several GB); a CPU build runs them: "
    "pip install torch --index-url https://download.pytorch.org/whl/cpu"
)


def needs_torch():
    """torch, or the test (or, at import time, the module) skipped saying why it is absent and how to get it."""
    return pytest.importorskip("torch", reason=TORCH_ABSENT)


def has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None or shutil.which("amd-smi") is not None


def pytest_collection_modifyitems(config, items):
    if has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU (none on this machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def write_toml(root: Path, body: str) -> None:
    (root / "kernel-mcp.toml").write_text(textwrap.dedent(body), encoding="utf-8")


@contextmanager
def sealed_side(tmp_path: Path, key: str, site_modules: dict[str, str]) -> Iterator[tuple[Path, Any, Path]]:
    """One side of a measurement: its tree, its boundary (sandbox.side) and a site folder outside it
    holding `site_modules` (name -> source), as installed modules such as torch lie."""
    from kernel_mcp import sandbox

    tree, state, site = tmp_path / "tree", tmp_path / "state", tmp_path / "site"
    for folder in (tree, state, site):
        folder.mkdir()
    for name, source in site_modules.items():
        (site / f"{name}.py").write_text(source)
    with sandbox.side(tree, state, key) as boundary:
        yield tree, boundary, site


def needs_root() -> None:
    """Skip where the server is not root: only a root server's runs hold the capabilities an attack needs."""
    if os.geteuid() != 0:
        pytest.skip("only a root server's runs hold the capabilities this attack needs")


async def forked_runs_of(tree: Path, boundary, env, modules: list[str], command: list[str], n: int = 1, argv=None, limit_s: float = 60) -> list:
    """`n` runs of `argv` (else `command`) in `tree`, forked from one fork server of that side preloading
    `modules`, which is closed after them; its log goes beside the tree."""
    from kernel_mcp import forked_runs

    server = forked_runs.ForkServer(command, modules, cwd=tree, boundary=boundary, log_dir=tree.parent / "logs", log_name="forkserver")
    try:
        return [await server.run(argv or command, cwd=tree, timeout_s=limit_s, env=env, log_dir=None, log_name="run") for _ in range(n)]
    finally:
        await server.close()


def refused_write() -> str:
    """What a sealed run is told when it writes outside its folders: with its own /proc, every other mount
    is read-only in its namespace (seal.read_only_but), else Landlock refuses it."""
    from kernel_mcp import sandbox

    isolation = sandbox.isolation()[0]
    return "Read-only file system" if isolation is not None and isolation.proc else "Permission denied"


def toml_list(*words: str) -> str:
    return json.dumps(list(words))  # a JSON array of strings is a valid TOML array


BASIC_TOML = f"""
[target]
arch = "gfx950"
platform = "offline"

[benchmark]
command = {toml_list(PY, "bench.py")}
csv = "out/bench.csv"
config_columns = ["shape"]
correctness = {{ column = "err_k", rule = "== 0" }}
metric = "us_k"
target_kernel = "k_main"
timeout_s = 60

[commands]
hello = {toml_list(PY, "-c", "print('hello from the workspace')")}
fail = {toml_list(PY, "-c", "import sys; print('bad', file=sys.stderr); sys.exit(3)")}
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A git repository with a valid kernel-mcp.toml and a trivial CPU benchmark."""
    root = tmp_path / "ws"
    root.mkdir()
    write_toml(root, BASIC_TOML)
    (root / "bench.py").write_text(
        "import os\nos.makedirs('out', exist_ok=True)\nopen('out/bench.csv','w').write('shape,err_k,us_k\\nsmall,0,10.0\\n')\nprint('bench done')\n"
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def commit_all(root: Path, message: str) -> None:
    """Every change of the repository at `root` committed, as a test's author would."""
    import git

    repo = git.Repo(root)
    repo.git.add("-A")
    repo.git.commit("-m", message, "--author", "t <t@example.invalid>")


def commit_kernel_workspace(workspace: Path) -> None:
    """The workspace's benchmark writes what kernel.py (the editable file) says, its time and error;
    committed, with the server's state folder and the run outputs ignored."""
    (workspace / "kernel.py").write_text("US = 10.0\nERR = 0\n")
    (workspace / "bench.py").write_text(
        "import os, sys\nsys.path.insert(0, os.getcwd())\nfrom kernel import US, ERR\nos.makedirs('out', exist_ok=True)\n"
        "open('out/bench.csv','w').write(f'shape,err_k,us_k\\nsmall,{ERR},{US}\\n')\n"
    )
    (workspace / ".gitignore").write_text("out/\n__pycache__/\n.kernel-mcp/\n")
    with (workspace / "kernel-mcp.toml").open("a") as toml:
        toml.write('\n[harness]\neditable = ["kernel.py"]\n')
    subprocess.run(["git", "-C", str(workspace), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(workspace), "commit", "-qm", "bench", "--author", "t <t@example.invalid>"], check=True)


@pytest.fixture
def anyio_backend():
    return "asyncio"


def install_stand_ins(tmp_path: Path, monkeypatch, programs: dict[str, str]) -> Path:
    """Put small Python stand-in executables (and one replaying the recorded nvidia-smi report) first
    on PATH, with a private GPU-lock folder. Stand-ins replay recorded real outputs: orchestration only."""
    import stat

    programs = {"nvidia-smi": f"import sys; sys.stdout.write(open({str(fixture('cuda/nvidia-smi-q-x.xml'))!r}).read())\n", **programs}
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name, body in programs.items():
        path = bindir / name
        path.write_text(f"#!{PY}\n{body}")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("KERNEL_MCP_LOCK_DIR", str(tmp_path / "locks"))
    return bindir


def text_of(result) -> str:
    """The text blocks of a tool result, joined."""
    return "\n".join(block.text for block in result.content)


async def call(client, tool, **arguments):
    """Call a tool that must succeed; its structured result."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return result.structured_content
