"""Architectures are data: the targets are the TOMLs in docs_index/hardware/, and gfx90a, added as
one such file, answers in every tool that takes an arch (real server, real offline clang)."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp import arch_registry
from kernel_mcp.arch_registry import alias_words, arch_for_gpu, arch_names, docs_index_dir, products, registry
from kernel_mcp.docs import ingest, open_store
from kernel_mcp.docs.readers import guess_arch
from kernel_mcp.errors import KernelMcpError
from kernel_mcp.server import build_server

from conftest import PY, REPO, fixture

pytestmark = pytest.mark.anyio
PROBES = """#include <hip/hip_runtime.h>
// Each probe pins its register or LDS use, so the compiler's own occupancy can be compared.
__global__ __launch_bounds__(256) void v72(float* y) { asm volatile("" ::: "v71"); y[threadIdx.x] = 0; }
__global__ __launch_bounds__(256) void v100a100(float* y) { asm volatile("" ::: "v99", "a99"); y[threadIdx.x] = 0; }
__global__ __launch_bounds__(256) void s104(float* y) { asm volatile("" ::: "s99"); y[threadIdx.x] = 0; }
__global__ __launch_bounds__(256) void lds32k(const float* x, float* y) {
  __shared__ float buf[8192];
  for (int i = threadIdx.x; i < 8192; i += 256) buf[i] = x[blockIdx.x * 8192 + i];
  __syncthreads();
  y[blockIdx.x * 256 + threadIdx.x] = buf[(threadIdx.x * 33) % 8192];
}
"""


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.fixture
def cdna2_ws(tmp_path: Path) -> Path:
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx90a"\nplatform = "offline"\n')
    (tmp_path / "probes.hip").write_text(PROBES)
    return tmp_path


# ---------------------------------------------------------------- the registry ---------------
def test_the_registry_is_the_hardware_tables():
    tables = {p.stem for p in (docs_index_dir() / "hardware").glob("*.toml")}
    assert set(arch_names()) == tables and "gfx90a" in tables
    assert arch_registry.KNOWN_ARCHS == arch_names()
    assert set(arch_names("amd")) | set(arch_names("nvidia")) == tables
    assert registry()["gfx90a"].vendor == "amd" and registry()["gfx90a"].family == "CDNA2"
    assert arch_registry.DEFAULT_ARCH == "gfx950"  # the table marked default_target
    assert all(e.label and e.product for e in registry().values())


def test_documents_and_gpus_are_matched_by_the_tables_words():
    assert guess_arch("Tuning HIP kernels on the MI250X") == ["gfx90a"]
    assert guess_arch("CDNA 2 matrix cores") == ["gfx90a"] and guess_arch("an MI300X node") == ["gfx942"]
    assert "mi210" in alias_words()["gfx90a"]
    assert arch_for_gpu("amd", "AMD Instinct MI250X / MI250", "gfx90a") == "gfx90a"
    assert arch_for_gpu("amd", "", "gfx90a:sramecc+:xnack-") == "gfx90a"
    assert arch_for_gpu("amd", "AMD Radeon RX 7900 XTX", "gfx1100") is None
    assert arch_for_gpu("nvidia", "NVIDIA H100 80GB HBM3", "Hopper") == "sm_90"
    assert arch_for_gpu("nvidia", "NVIDIA H200", "Hopper") == "sm_90"  # same arch, its own product table
    assert arch_for_gpu("nvidia", "NVIDIA H200 NVL", "Hopper") == "sm_90"  # the arch from the family, though no product table fits


def test_a_misnamed_or_broken_table_is_refused(tmp_path):
    folder = tmp_path / "hardware"
    folder.mkdir()
    shutil.copy(docs_index_dir() / "hardware" / "gfx90a.toml", folder / "gfx90c.toml")
    with pytest.raises(KernelMcpError, match="named after its arch"):
        arch_registry._entries_in(str(folder))
    (folder / "gfx90c.toml").write_text('arch = "gfx90c"\nproduct = "x"\n')
    with pytest.raises(KernelMcpError, match=r"gfx90c\.toml"):
        arch_registry._entries_in(str(folder))


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def test_no_code_lists_arch_names():
    """Arch names, product labels and monitor names appear in the package's code only in docstrings
    and comments (which the AST does not keep): every use goes through the registry. No allowlist."""
    words = {w for a, e in registry().items() for w in (a, e.label)}
    words |= {w for p in products().values() for w in (p.label, *p.names)}
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))
    found = []
    for path in sorted((REPO / "kernel_mcp").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip and pattern.search(node.value):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value[:60]!r}")
    assert not found, found


def enum_of(schema: dict) -> list:
    """A property's enum, also when the property may be omitted (anyOf the enum and null)."""
    if "enum" in schema:
        return schema["enum"]
    return next(option["enum"] for option in schema["anyOf"] if "enum" in option)


async def test_tool_schemas_enumerate_the_registry(tmp_path):
    async with Client(build_server(tmp_path, tools="all")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert enum_of(tools["hw_spec"].input_schema["properties"]["arch"]) == list(arch_names())
    assert enum_of(tools["occupancy"].input_schema["properties"]["arch"]) == list(arch_names())
    assert enum_of(tools["isa_lookup"].input_schema["properties"]["arch"]) == list(arch_names("amd"))
    assert "gfx90a (MI250X GCD)" in tools["hw_spec"].description


def test_a_new_table_is_a_new_target(tmp_path):
    """Copying a table under another name into a docs index is all it takes: the schemas, the
    config and the tools know the new target (a fresh process: the schemas are built at import)."""
    index = tmp_path / "docs_index"
    shutil.copytree(docs_index_dir(), index)
    table = (index / "hardware" / "gfx90a.toml").read_text().replace('arch = "gfx90a"', 'arch = "gfx90c"', 1)
    (index / "hardware" / "gfx90c.toml").write_text(table.replace('label = "MI250X GCD"', 'label = "test part"'))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernel-mcp.toml").write_text('[target]\narch = "gfx90c"\n')
    script = f"""
import anyio, json
from pathlib import Path
from mcp import Client
from kernel_mcp.server import build_server
from kernel_mcp.workspace import Workspace
async def main():
    async with Client(build_server(Path({str(ws)!r}), tools="all")) as client:
        tools = {{t.name: t for t in (await client.list_tools()).tools}}
        spec = await client.call_tool("hw_spec", {{"arch": "gfx90c"}})
        occ = await client.call_tool("occupancy", {{"arch": "gfx90c", "vgprs": 72}})
    arch = tools["hw_spec"].input_schema["properties"]["arch"]
    print(json.dumps({{"enum": arch.get("enum") or [e for o in arch.get("anyOf", []) for e in o.get("enum", [])],
                      "description": tools["hw_spec"].description, "spec_error": spec.is_error,
                      "waves": occ.structured_content["occupancy"]["waves"],
                      "config_arch": Workspace.open(Path({str(ws)!r})).config.target.arch}}))
anyio.run(main)
"""
    env = {**os.environ, "KERNEL_MCP_DOCS_INDEX": str(index), "PYTHONPATH": str(REPO)}
    done = subprocess.run([PY, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert "gfx90c" in out["enum"] and "gfx90c (test part)" in out["description"]
    assert not out["spec_error"] and out["waves"] == 7 and out["config_arch"] == "gfx90c"


# ---------------------------------------------------------------- gfx90a in every tool -------
async def test_gfx90a_hardware_tools(tmp_path):
    async with Client(build_server(tmp_path)) as client:
        spec = await client.call_tool("hw_spec", {"arch": "gfx90a"})
        assert not spec.is_error and "compute_units = 110 CU" in text_of(spec) and "lds_per_cu_bytes = 64 KiB (65,536 B)" in text_of(spec)
        assert "sources disagree" in text_of(spec)  # the L2 rate
        cases = [
            ({"vgprs": 72}, 7, "VGPRs"),
            ({"vgprs": 100, "agprs": 100}, 2, "VGPRs"),
            ({"vgprs": 32, "lds_bytes": 32768}, 2, "LDS"),
            ({"vgprs": 8, "sgprs": 104}, 7, "SGPRs"),
            ({"vgprs": 4}, 8, "hardware maximum"),
        ]
        for args, waves, limiter in cases:
            occ = await client.call_tool("occupancy", {"arch": "gfx90a", **args})
            assert occ.structured_content["occupancy"]["waves"] == waves and limiter in occ.structured_content["occupancy"]["limiter"], args
        roof = await client.call_tool("roofline", {"arch": "gfx90a", "flops": 1e12, "bytes": 1e9, "dtype": "bf16"})
        r = roof.structured_content["roofline"]
        assert r["bound"] == "compute" and r["peak_flops_per_s"] == pytest.approx(1.91488e14) and r["ridge_point"] == pytest.approx(116.875)
        fp8 = await client.call_tool("roofline", {"arch": "gfx90a", "flops": 1e12, "bytes": 1e9, "dtype": "fp8"})
        assert fp8.is_error and "no sourced peak for fp8" in text_of(fp8)


async def test_gfx90a_compiles_offline_and_the_calculator_matches_the_compiler(cdna2_ws):
    async with Client(build_server(cdna2_ws)) as client:
        result = await client.call_tool("compile_kernel", {"source": "probes.hip", "arch": "gfx90a"})
    data = result.structured_content
    assert not result.is_error and data["ok"] and data["arch"] == "gfx90a" and data["backend"] == "offline-clang", text_of(result)
    kernels = {k["name"]: k for k in data["kernels"]}
    expected = {"v72": (72, 0, 7), "v100a100": (100, 100, 2), "s104": (None, 0, 7), "lds32k": (None, 0, 2)}
    for name, (vgprs, agprs, waves) in expected.items():
        k = kernels[name]
        assert vgprs is None or k["vgprs"] == vgprs, k
        assert (k["agprs"] or 0) == agprs and k["compiler_occupancy"] == waves and k["occupancy"]["waves"] == waves, k
    assert kernels["lds32k"]["lds_bytes"] == 32768 and kernels["lds32k"]["occupancy"]["limiter"] == ["LDS"]
    assert not any("the compiler reports" in n for n in data["notes"])  # no disagreement with the calculator


async def test_gfx90a_docs_and_isa_lookup(tmp_path):
    (tmp_path / "kernel-mcp.toml").write_text("")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tuning.md").write_text("# MI250X tuning notes\n\n## Wavefront occupancy\nKeep VGPRs at 128 or fewer for 4 waves.\n")
    report = ingest(open_store(tmp_path / ".kernel-mcp"), [notes / "tuning.md"])
    assert report.results[0]["status"] == "added"
    async with Client(build_server(tmp_path)) as client:
        ids = lambda answer: [h["id"] for h in answer.structured_content["hits"]]  # noqa: E731
        shipped = await client.call_tool("docs_search", {"query": "GCD matrix cores BF16", "arch": "gfx90a"})
        assert any(i.startswith("cdna2-gfx90a") for i in ids(shipped)), ids(shipped)
        mine = await client.call_tool("docs_search", {"query": "wavefront occupancy VGPRs", "arch": "gfx90a"})
        assert any("tuning" in i for i in ids(mine)), ids(mine)
        other = await client.call_tool("docs_search", {"query": "wavefront occupancy VGPRs", "arch": "gfx942"})
        assert not any("tuning" in i or i.startswith("cdna2-gfx90a") for i in ids(other)), ids(other)
        # no gfx90a entries: the gfx90a assembler says it exists, and the answer points to the other targets' entries
        isa = await client.call_tool("isa_lookup", {"mnemonic": "ds_read_b128", "arch": "gfx90a"})
        assert not isa.is_error and "exists on gfx90a (the assembler accepts it)" in text_of(isa), text_of(isa)
        assert "no instruction entries for gfx90a" in text_of(isa) and "gfx942" in text_of(isa) and "ingest" in text_of(isa)
        shipped_isa = await client.call_tool("isa_lookup", {"mnemonic": "ds_read_b128", "arch": "gfx942"})
        assert not shipped_isa.is_error


async def test_gfx90a_profiles_are_read(tmp_path):
    """rocprofv3 output from a gfx90a agent (CSV and rocpd) is summarised in a gfx90a workspace."""
    from rocpd_builder import build as build_rocpd

    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx90a"\nplatform = "offline"\n')
    shutil.copy(fixture("rocm/sdk2508-kernel_trace.csv"), tmp_path / "1_kernel_trace.csv")
    dispatches = [{"name": "axpy", "start": 0, "end": 1000, "vgprs": 72}, {"name": "axpy", "start": 2000, "end": 2900, "vgprs": 72}]
    build_rocpd(tmp_path / "run.db", fixture("rocm/rocpd-schema"), dispatches, agent="gfx90a", product="AMD Instinct MI250X")
    async with Client(build_server(tmp_path)) as client:
        from_csv = await client.call_tool("profile_import", {"paths": ["1_kernel_trace.csv"]})
        assert not from_csv.is_error and from_csv.structured_content["kernels"], text_of(from_csv)
        from_db = await client.call_tool("profile_import", {"paths": ["run.db"]})
        assert not from_db.is_error and from_db.structured_content["source"] == "rocpd", text_of(from_db)
        assert "gfx90a AMD Instinct MI250X" in text_of(from_db) or "gfx90a AMD Instinct MI250X" in json.dumps(from_db.structured_content)
