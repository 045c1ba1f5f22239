"""What a new user installs works outside this checkout.

The wheel is built from a copy of the source tree and installed into a fresh venv, run from a
folder that is not the repository and with no KERNEL_MCP_* folder overrides, so that nothing can
fall back on the checkout: doctor, a gfx950 compile with the offline clang and an MCP round trip
must all work from what the wheel carries. To stay offline and fast the venv gets only the wheel
(--no-deps) and sees this environment's site-packages for the dependencies.

The plugin's files are checked against each other and, where Claude Code can be had (on PATH, or
through npm into pytest's cache), by `claude plugin validate` and `claude plugin details`.
uvx and pipx are tried where they are on PATH.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from kernel_mcp import __version__, skills
from kernel_mcp.server import TOOLS, build_server

from conftest import PY, REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SHIPPED = ("docs_index", "skills")
SKILL_NAMES = {"kernel-opt", "kernel-scientist", "kernel-trace-analysis"}
AXPY = (
    "#include <hip/hip_runtime.h>\n"
    "__global__ void axpy(float a, const float* x, float* y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  y[i] = a * x[i] + y[i];\n}\n"
)


def run(argv, timeout=120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kwargs)


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without anything that points Python or kernel-mcp at the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "KERNEL_MCP_DOCS_INDEX", "KERNEL_MCP_SKILLS", "KERNEL_MCP_WORKSPACE"}}
    return {**env, **extra}


def copy_source(target: Path) -> Path:
    """The files a clone has (tracked, plus new ones git does not ignore), not build outputs."""
    listed = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO) if (REPO / ".git").exists() else None
    if listed is not None and listed.returncode == 0:
        for name in filter(None, listed.stdout.split("\0")):
            source = REPO / name
            if source.is_file():
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)
    else:
        ignore = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".kernel-mcp", "node_modules")
        shutil.copytree(REPO, target, ignore=ignore, dirs_exist_ok=True)
    return target


@pytest.fixture(scope="module")
def source_copy(tmp_path_factory) -> Path:
    return copy_source(tmp_path_factory.mktemp("src"))


@pytest.fixture(scope="module")
def wheel(source_copy, tmp_path_factory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    done = run([PY, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", dist, source_copy], timeout=300, cwd=dist)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = dist.glob("kernel_mcp-*.whl")
    return built


def exe(root: Path, name: str) -> Path:
    return root / ("Scripts" if os.name == "nt" else "bin") / name


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv holding the wheel; the dependencies come from this environment's site-packages
    (a .pth line: that folder's own .pth files, an editable install's finder among them, are not
    run, so the only kernel_mcp there is the wheel's)."""
    root = tmp_path_factory.mktemp("venv") / "v"
    venv.EnvBuilder(with_pip=False).create(root)
    python = exe(root, "python")
    done = run([PY, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel], timeout=300, env=clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    # only now: pip must not see this environment's kernel-mcp as already installed (or uninstall it)
    purelib = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    assert (purelib / "kernel_mcp" / "shipped").is_dir(), "the wheel did not go into the new venv"
    parents = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (purelib / "_kernel_mcp_test_dependencies.pth").write_text("".join(f"{p}\n" for p in parents))
    return root


@pytest.fixture
def gfx950_workspace(tmp_path) -> Path:
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    (tmp_path / "axpy.hip").write_text(AXPY)
    return tmp_path


def test_wheel_carries_what_the_server_reads(wheel, source_copy):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in SHIPPED:
        files = [p.relative_to(source_copy).as_posix() for p in (source_copy / folder).rglob("*") if p.is_file()]
        assert files, folder
        missing = [f for f in files if f"kernel_mcp/shipped/{f}" not in names]
        assert not missing, f"the wheel lacks {missing}"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "kernel_mcp/workspace/example.toml" in names and "kernel_mcp/platforms/offline/prelude/kernel_mcp_hip_prelude.h" in names
    assert {"kernel_mcp/platforms/cuda/calibrate.cu", "kernel_mcp/platforms/rocm/calibrate.hip"} <= names  # built where the GPU is
    # the vendor's derived-metric definitions that profile imports evaluate, with their sources note
    assert {
        "kernel_mcp/profile/data/rocprof_compute_metrics.json",
        "kernel_mcp/profile/data/rocprofiler_sdk_derived.json",
        "kernel_mcp/profile/data/SOURCES.md",
    } <= names
    stand_ins = REPO / "kernel_mcp" / "platforms" / "offline" / "prelude" / "include"
    headers = [p.relative_to(REPO).as_posix() for p in stand_ins.rglob("*") if p.is_file()]
    assert "kernel_mcp/platforms/offline/prelude/include/cmath" in headers  # a stand-in without a suffix
    assert not [h for h in headers if h not in names], "the wheel lacks some of the offline compile's headers"
    assert not [n for n in names if n.startswith(("tests/", "kernels/", "docs_index/", "skills/"))], "only kernel_mcp/ at the top"
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = re.findall(r"^Requires-Dist: ([A-Za-z0-9_.-]+)(.*)$", metadata, re.M)
    defaults = {name.lower() for name, rest in requires if "extra ==" not in rest}
    assert {"ziglang", "matplotlib"} <= defaults, "the first install must compile gfx950 and plot rooflines"


def test_installed_wheel_reads_its_own_folders(installed, tmp_path):
    probe = (
        "import kernel_mcp, kernel_mcp.skills as s, kernel_mcp.arch_registry as a; print(kernel_mcp.__file__); print(s.skills_dir()); print(a.docs_index_dir())"
    )
    done = run([exe(installed, "python"), "-c", probe], cwd=tmp_path, env=clean_env())
    assert done.returncode == 0, done.stderr
    package, skills_dir, docs = (Path(line) for line in done.stdout.split())
    assert package.resolve().is_relative_to(installed.resolve()), f"{package} is not the installed copy"
    assert skills_dir == package.parent / "shipped" / "skills" and docs == package.parent / "shipped" / "docs_index"


def test_installed_doctor_and_gfx950_compile(installed, gfx950_workspace):
    env = clean_env()
    doctor = run([exe(installed, "kernel-mcp"), "doctor", "--workspace", gfx950_workspace], cwd=gfx950_workspace, env=env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    clang = next(line for line in doctor.stdout.splitlines() if line.strip().startswith("offline-clang"))
    assert "missing" not in clang, clang
    live = next(line for line in doctor.stdout.splitlines() if line.startswith("live tools:"))
    assert "compile_kernel" in live and "hw_spec" in live and "docs_search" in live
    argv = [exe(installed, "kernel-mcp"), "call", "--workspace", gfx950_workspace, "--json", "compile_kernel", "source=axpy.hip", "arch=gfx950"]
    done = run(argv, timeout=180, cwd=gfx950_workspace, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["ok"] and data["arch"] == "gfx950" and data["backend"] == "offline-clang"
    assert [k["name"] for k in data["kernels"]] == ["axpy"] and data["kernels"][0]["vgprs"] > 0
    docs = run(
        [exe(installed, "kernel-mcp"), "call", "--workspace", gfx950_workspace, "docs_search", "query=LDS bank conflicts"], cwd=gfx950_workspace, env=env
    )
    assert docs.returncode == 0 and "lds" in docs.stdout.lower(), docs.stdout + docs.stderr


@pytest.mark.anyio
async def test_installed_server_round_trip_over_stdio(installed, gfx950_workspace):
    params = StdioServerParameters(
        command=str(exe(installed, "kernel-mcp")), args=["serve", "--workspace", str(gfx950_workspace)], env=clean_env(), cwd=str(gfx950_workspace)
    )
    async with Client(params) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {spec.name for spec in TOOLS if spec.toolset == "core"}  # the rest once loaded (kernel_mcp.toolsets)
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert prompts == SKILL_NAMES
        spec = await client.call_tool("hw_spec", {"arch": "gfx950"})
        assert not spec.is_error
        template = await client.read_resource("kernel-mcp://skills/kernel-scientist/plan-template.md")
        assert template.contents[0].text.startswith("# Round")


# The plugin and registry files, against each other and against the package.


def load(name: str) -> dict:
    return json.loads((REPO / name).read_text(encoding="utf-8"))


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_versions_and_names_agree():
    project = pyproject()["project"]
    plugin, market, server = load(".claude-plugin/plugin.json"), load(".claude-plugin/marketplace.json"), load("server.json")
    assert project["version"] == __version__ == plugin["version"] == server["version"]
    (entry,) = market["plugins"]
    assert entry["name"] == plugin["name"] == project["name"] and entry["source"] == "./" and entry.get("version", plugin["version"]) == plugin["version"]
    assert plugin["license"] == project["license"] == "Apache-2.0" and "Apache License" in (REPO / "LICENSE").read_text()
    (package,) = server["packages"]
    assert package["registryType"] == "pypi" and package["identifier"] == project["name"] and package["version"] == project["version"]


def test_mcp_json_starts_the_server_from_the_plugin_folder_with_uv_only():
    ((name, entry),) = load(".mcp.json")["mcpServers"].items()
    assert name == "kernel-mcp" and entry["command"] == "uvx"
    args = entry["args"]
    # compiled at install: without it every start compiles the imported modules again where bytecode is not written (issue 34)
    assert args[:4] == ["--compile-bytecode", "--from", "${CLAUDE_PLUGIN_ROOT}", "kernel-mcp"] and args[4] == "serve"
    assert args[args.index("--workspace") + 1] == "${CLAUDE_PROJECT_DIR}"
    assert "kernel-mcp" in pyproject()["project"]["scripts"]


def test_server_json_meets_the_registry_rules():
    """The MCP registry's server.json rules that a publish would otherwise fail on."""
    server = load("server.json")
    assert server["$schema"].startswith("https://static.modelcontextprotocol.io/schemas/") and server["$schema"].endswith("/server.schema.json")
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", server["name"]) and 3 <= len(server["name"]) <= 200
    assert 1 <= len(server["description"]) <= 100 and 1 <= len(server.get("title", "x")) <= 100
    for package in server["packages"]:
        assert package["transport"] == {"type": "stdio"} and package["version"] not in {"", "latest"}
        assert not re.search(r"[\^~<>=*, ]|\.x\b", package["version"]), "an exact version, not a range"
        for argument in package.get("packageArguments", []):
            assert argument["type"] in {"positional", "named"}
            assert argument.get("name") if argument["type"] == "named" else ("value" in argument or "valueHint" in argument)
    # PyPI ownership: the registry reads this marker in the package's README (its long description)
    assert f"mcp-name: {server['name']}" in (REPO / "README.md").read_text()


# Claude Code itself, where it can be had.


def claude_executable(folder: Path) -> Path | None:
    found = os.environ.get("KERNEL_MCP_CLAUDE") or shutil.which("claude")
    if found:
        return Path(found)
    npm = shutil.which("npm")
    if npm is None:
        return None
    prefix = folder / "claude-code"
    prefix.mkdir(parents=True, exist_ok=True)
    binary = prefix / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        done = run([npm, "install", "--prefix", prefix, "--no-audit", "--no-fund", "@anthropic-ai/claude-code"], timeout=300)
        if done.returncode != 0:
            return None
    return binary if binary.exists() else None


@pytest.fixture(scope="module")
def claude(request, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    # pytest's cache keeps the npm install between runs; without the cache plugin, the ignored .cache/
    cache = getattr(request.config, "cache", None)
    binary = claude_executable(Path(cache.mkdir("claude-code-npm")) if cache is not None else REPO / ".cache" / "claude-code-npm")
    if binary is None:
        pytest.skip("Claude Code is not on PATH and npm could not install it (no npm, or no network)")
    home = tmp_path_factory.mktemp("home")  # its own settings and plugin folders, not the user's
    return binary, clean_env(HOME=str(home), USERPROFILE=str(home))


@pytest.mark.network
def test_claude_validates_the_plugin_and_marketplace(claude):
    binary, env = claude
    for target in (REPO, REPO / ".claude-plugin" / "plugin.json", REPO / ".claude-plugin" / "marketplace.json"):
        done = run([binary, "plugin", "validate", "--strict", target], timeout=120, env=env)
        assert done.returncode == 0 and "Validation passed" in done.stdout, done.stdout + done.stderr


@pytest.mark.network
def test_claude_finds_the_mcp_server_and_the_skills(claude, tmp_path):
    binary, env = claude
    done = run([binary, "--plugin-dir", REPO, "plugin", "details", "kernel-mcp"], timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    text = re.sub(r"[ \t]+", " ", done.stdout)
    assert re.search(r"MCP servers \(1\) kernel-mcp\b", text), done.stdout
    found = re.search(r"Skills \((\d+)\) ([\w, -]+)", text)
    assert found and int(found.group(1)) == len(SKILL_NAMES) and {s.strip() for s in found.group(2).split(",")} == SKILL_NAMES, done.stdout
    assert {s.name for s in skills.all_skills()} == SKILL_NAMES


@pytest.mark.network
@pytest.mark.anyio
async def test_claude_code_gives_the_model_each_tool_as_published(claude, gfx950_workspace, tmp_path_factory):
    """Claude Code connects to the server and sends the model, in its request (recorded by a local
    stand-in for the model API), every tool's name, description and input schema exactly as
    tools/list publishes them, and no output schema: what tests/test_tool_schemas.py caps."""
    binary, env = claude
    spec = importlib.util.spec_from_file_location("tool_definitions", REPO / "benchmarks" / "tool_definitions.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    request = await anyio.to_thread.run_sync(lambda: bench.claude_request(binary, gfx950_workspace, tmp_path_factory.mktemp("home"), env))
    sent = bench.claude_figures(request)
    async with Client(build_server(gfx950_workspace)) as client:
        published = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in (await client.list_tools()).tools]
    assert sent["keys"] == ["description", "input_schema", "name"]  # the instructions too, unless the server connected late
    assert sent["given"] == {t["name"]: {key: t[key] for key in bench.MODEL_VISIBLE} for t in published}
    assert sent["model_visible"] == sum(bench.model_visible(t) for t in published)


# uvx and pipx, where they are on PATH: each builds the wheel itself and installs the dependencies.


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("runner", ["uvx", "pipx"])
def test_runs_with_uvx_and_pipx(runner, source_copy, gfx950_workspace):
    tool = shutil.which(runner)
    if tool is None:
        pytest.skip(f"{runner} is not on PATH")
    spec = ["--from", source_copy] if runner == "uvx" else ["run", "--spec", source_copy]
    done = run([tool, *spec, "kernel-mcp", "doctor", "--workspace", gfx950_workspace], timeout=600, cwd=gfx950_workspace, env=clean_env())
    assert done.returncode == 0, shlex.join(map(str, [tool, *spec])) + "\n" + done.stdout + done.stderr
    clang = next(line for line in done.stdout.splitlines() if line.strip().startswith("offline-clang"))
    assert "missing" not in clang and "live tools:" in done.stdout
