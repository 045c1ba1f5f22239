"""Capability code imports no MCP module: only the front end (the server, its MCP adapter, the
command line and the HTTP policy) speaks the protocol. A Ray worker that evaluates a candidate
imports the ledger, bench and gpu packages; if they pulled in the MCP SDK, every worker would load
about a hundred modules it never uses."""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

from conftest import PY, REPO

PACKAGE = REPO / "kernel_mcp"
CAPABILITIES = ["bench", "compile", "docs", "gpu", "hardware", "ledger", "profile", "trace", "workspace"]
# the MCP front end: the only files that may import the SDK or the modules built on it
FRONT_END = {"server.py", "mcp_adapter.py", "mcp_resources.py", "mcp_tasks.py", "cli.py", "http_security.py", "__main__.py"}
MCP_ROOTS = ("mcp", "mcp_types")
FRONT_END_MODULES = (
    "kernel_mcp.server",
    "kernel_mcp.mcp_adapter",
    "kernel_mcp.mcp_resources",
    "kernel_mcp.mcp_tasks",
    "kernel_mcp.cli",
    "kernel_mcp.http_security",
)


def test_capability_packages_load_no_mcp_module():
    modules = ["kernel_mcp.tooling", "kernel_mcp.doctor", "kernel_mcp.platforms"]
    modules += [f"kernel_mcp.{name}" for name in CAPABILITIES] + [f"kernel_mcp.{name}.tools" for name in CAPABILITIES]
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types'))))\n"
    )
    # a fresh interpreter: this test process has the server (and so the SDK) loaded already
    done = subprocess.run([PY, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_server_lists_its_tools_without_the_table_libraries():
    """pandas, numpy and matplotlib are loaded by the tools that read tables and draw, not by a start:
    a client waits for the first answer (issue 34: the first request within 2.5 s of a warm start)."""
    script = (
        "import anyio, json, sys\n"
        "from kernel_mcp.server import build_server\n"
        "tools = anyio.run(build_server(None).list_tools)\n"
        "print(json.dumps([len(tools), sorted(m for m in ('pandas', 'numpy', 'matplotlib') if m in sys.modules)]))\n"
    )
    done = subprocess.run([PY, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    count, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert count > 20 and loaded == []


def _is_mcp(module: str) -> bool:
    return module.split(".")[0] in MCP_ROOTS


def _is_front_end(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in FRONT_END_MODULES)


def _imports(path: Path) -> list[str]:
    """Every module a file imports, at any depth (a lazy import inside a function counts too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names]  # `from kernel_mcp import server`
    return found


def test_only_the_front_end_imports_mcp():
    offenders = []
    front_end_imports_mcp = False
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        imports = _imports(path)
        if relative in FRONT_END:
            front_end_imports_mcp |= any(_is_mcp(m) for m in imports)
            continue
        offenders += [f"{relative}: {m}" for m in imports if _is_mcp(m) or _is_front_end(m)]
    assert offenders == [], "capability code imports MCP (directly or through the front end)"
    assert front_end_imports_mcp, "the scan found no MCP import at all: it no longer looks where the server is"


# -- the layers: no import goes round in a circle, and no capability reaches for a vendor ---------

# What capability code is: every package but the front end, the shared layers below and the
# platforms above; doctor.py is one too (it reports the platform the server hands it).
CAPABILITY_MODULES = tuple(f"kernel_mcp.{name}" for name in CAPABILITIES) + ("kernel_mcp.doctor",)
# What the shared types may import: the foundation below them (a workspace, a run, its runner and
# sandbox, the hardware tables), never a capability, the tool layer or a platform.
BELOW_MODELS = (
    "kernel_mcp.errors",
    "kernel_mcp.untrusted",
    "kernel_mcp.limits",
    "kernel_mcp.safe_files",
    "kernel_mcp.runner",
    "kernel_mcp.sandbox",
    "kernel_mcp.containment",
    "kernel_mcp.toolchain",
    "kernel_mcp.arch_registry",
    "kernel_mcp.hardware.specs",
    "kernel_mcp.workspace.workspace",
    "kernel_mcp.workspace.config",
    "kernel_mcp.workspace.runs",
    "kernel_mcp.workspace.scaffold",
)


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, read from the code: imports inside functions and
    under TYPE_CHECKING count (a lazy import is still a dependency), and `from pkg import name` is a
    use of `pkg` as well as of `pkg.name` when that is a module (pkg/__init__.py runs first, and
    `name` may be defined there). A dotted name is the longest module it names."""
    modules = {_module_name(p, package): p for p in package.rglob("*.py")}
    root = package.name

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        here = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = (
                    ".".join(here.split(".")[: len(here.split(".")) - node.level + 1] + ([node.module] if node.module else []))
                    if node.level
                    else node.module or ""
                )
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                found = resolve(target) if target.split(".")[0] == root else None
                if found and found != module:
                    graph[module].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_no_import_cycle():
    found = cycles(import_graph())
    assert found == [], "modules that import each other, directly or round a circle:\n" + "\n".join(", ".join(c) for c in found)


def test_no_capability_imports_the_platforms():
    """The server hands the registry down (ToolContext.vendors); capability code never fetches it."""
    graph = import_graph()
    offenders = [f"{m} imports {t}" for m in sorted(graph) if _within(m, CAPABILITY_MODULES) for t in sorted(graph[m]) if _within(t, ("kernel_mcp.platforms",))]
    assert offenders == []
    importers = sorted(m for m in graph if not _within(m, ("kernel_mcp.platforms",)) and any(_within(t, ("kernel_mcp.platforms",)) for t in graph[m]))
    assert importers == ["kernel_mcp.server"], "only the server resolves the platforms"


def test_the_shared_types_import_nothing_above_them():
    graph = import_graph()
    offenders = [
        f"{m} imports {t}"
        for m in sorted(graph)
        if _within(m, ("kernel_mcp.models",))
        for t in sorted(graph[m])
        if t != "kernel_mcp" and not _within(t, ("kernel_mcp.models", *BELOW_MODELS, "kernel_mcp.workspace"))
    ]
    assert offenders == []


def test_the_graph_sees_what_it_looks_for(tmp_path):
    """A circle through a lazy import and through `from pkg import name`, and a dotted import of a
    module: the scan finds each."""
    pkg = tmp_path / "kernel_mcp"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from kernel_mcp import b\n")
    (pkg / "b.py").write_text("import kernel_mcp.a\n")
    (pkg / "sub" / "__init__.py").write_text("from kernel_mcp.sub import leaf\n")
    (pkg / "sub" / "leaf.py").write_text("from kernel_mcp.sub import helper\n")
    (pkg / "sub" / "helper.py").write_text("from ..a import f\n")
    graph = import_graph(pkg)
    assert graph["kernel_mcp.b"] == {"kernel_mcp.a"} and graph["kernel_mcp.sub.helper"] == {"kernel_mcp.a"}
    assert sorted(cycles(graph)) == [["kernel_mcp.a", "kernel_mcp.b"], ["kernel_mcp.sub", "kernel_mcp.sub.leaf"]]
