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
FRONT_END = {"server.py", "mcp_adapter.py", "mcp_resources.py", "cli.py", "http_security.py", "__main__.py"}
MCP_ROOTS = ("mcp", "mcp_types")
FRONT_END_MODULES = ("kernel_mcp.server", "kernel_mcp.mcp_adapter", "kernel_mcp.mcp_resources", "kernel_mcp.cli", "kernel_mcp.http_security")


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
