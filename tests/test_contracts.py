"""Every platform held to one contract (psutil's tests/test_contracts.py is the model).

Each backend's real output (recorded outputs of rocprofv3, rocpd, ncu, nvcc/cuobjdump, amd-smi,
nvidia-smi; the real offline clang) goes through the same models, and the same fields come out
with the same types: what the compile answer shows, what the ledger reads from a profile (target
dispatches, GPU time per kernel), what a trace summary holds, what the monitors sample. And
vendor knowledge stays in kernel_mcp/platforms/ (the registry and one folder per vendor): a vendor
string test or a table keyed by vendor anywhere else fails here.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pandas as pd
import pytest

from kernel_mcp import platforms
from kernel_mcp.compile import amdgpu_asm, nvidia
from kernel_mcp.errors import BackendMissing, CommandFailed, InvalidInput, WorkspaceError
from kernel_mcp.models.compile import KernelFacts
from kernel_mcp.models.gpu import GpuInfo, GpuSample
from kernel_mcp.models.profile import ProfileSummary
from kernel_mcp.platforms import VENDORS
from kernel_mcp.platforms.base import Platform
from kernel_mcp.platforms.cuda import nvidia_smi
from kernel_mcp.platforms.rocm import amd_smi
from kernel_mcp.profile import parsers, rocpd
from kernel_mcp.profile.summary import summarise
from kernel_mcp.trace.analysis import CATEGORIES, TraceSummary
from kernel_mcp.trace.analysis import summarise as summarise_trace
from kernel_mcp.trace.ncu_source import read_ncu_source
from kernel_mcp.trace.readers import read_code_json

from conftest import COPIED_FIXTURES, FIXTURES, NOT_COPIED, REPO, fixture
from rocpd_builder import build as build_rocpd

PACKAGE = Path(__file__).resolve().parents[1] / "kernel_mcp"
VENDOR_WORDS = {"cuda", "rocm", "offline", "nvidia", "amd"}
ARCH_PREFIXES = ("sm_", "gfx")


# -- vendor knowledge lives in platforms/ only ---------------------------------------------------


def _string_constants(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for element in node.elts for s in _string_constants(element)]
    return []


def _vendor_word(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in VENDOR_WORDS else None


def vendor_tests(path: Path) -> list[str]:
    """Comparisons with a vendor name (`== "cuda"`, `in ("rocm", "cuda")`), arch-prefix tests
    (`.startswith("sm_")`), and tables keyed by vendor (`{"rocm": ...}`, `presets["cuda"]`,
    `.get("amd")`: a branch by another name) in one source file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            words = [s for side in (node.left, *node.comparators) for s in _string_constants(side)]
            found += [f"{path}:{node.lineno}: compares with {w!r}" for w in words if w.lower() in VENDOR_WORDS]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("startswith", "endswith"):
            words = [s for arg in node.args for s in _string_constants(arg)]
            found += [f"{path}:{node.lineno}: {node.func.attr}({w!r})" for w in words if w.startswith(ARCH_PREFIXES) or w.lower() in VENDOR_WORDS]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args and _vendor_word(node.args[0]):
            found.append(f"{path}:{node.lineno}: looks up {_vendor_word(node.args[0])!r}")
        elif isinstance(node, ast.Dict):
            found += [f"{path}:{node.lineno}: a table keyed by {w!r}" for w in map(_vendor_word, node.keys) if w]
        elif isinstance(node, ast.Subscript) and _vendor_word(node.slice):
            found.append(f"{path}:{node.lineno}: looks up {_vendor_word(node.slice)!r}")
    return found


def test_no_vendor_string_test_outside_platforms():
    offenders = [hit for path in sorted(PACKAGE.rglob("*.py")) if "platforms" not in path.relative_to(PACKAGE).parts for hit in vendor_tests(path)]
    assert offenders == [], "vendor branches belong in kernel_mcp/platforms/:\n" + "\n".join(offenders)


def test_the_scan_finds_what_it_looks_for(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        'if platform == "cuda" or gpu.vendor in ("amd",) or arch.startswith("sm_"):\n    pass\n'
        'PRESETS = {"rocm": [], "cuda": []}\npresets = PRESETS["rocm"] or PRESETS.get("nvidia")\n'
    )
    assert len(vendor_tests(sample)) == 7


# -- one protocol, every member on every platform ------------------------------------------------

# Platform is the roles of models/platform.py together: the annotations of each count as well as its own
MEMBERS = sorted(
    {name for name in dir(Platform) if not name.startswith("_")}
    | {name for cls in Platform.__mro__ for name in vars(cls).get("__annotations__", {}) if not name.startswith("_")}
)


def test_the_protocol_is_fully_typed():
    """Every member of the contract says its types: no parameter or return without an annotation,
    and no Any (a platform written against it then knows what it receives and returns)."""
    for cls in Platform.__mro__:
        for name, annotation in vars(cls).get("__annotations__", {}).items():
            assert "Any" not in str(annotation), f"{cls.__name__}.{name}: {annotation}"
        for name, member in vars(cls).items():
            if name.startswith("_") or not callable(member):
                continue
            signature = inspect.signature(member)
            assert signature.return_annotation is not inspect.Signature.empty, f"{cls.__name__}.{name} returns an unannotated value"
            for parameter in list(signature.parameters.values())[1:]:
                assert parameter.annotation is not inspect.Parameter.empty, f"{cls.__name__}.{name}({parameter.name}) has no type"
                assert "Any" not in str(parameter.annotation), f"{cls.__name__}.{name}({parameter.name}): {parameter.annotation}"


@pytest.mark.parametrize("name", sorted(platforms.PLATFORMS))
def test_every_platform_implements_the_protocol(name):
    platform = platforms.PLATFORMS[name]
    missing = [m for m in MEMBERS if not hasattr(platform, m)]
    assert missing == []
    assert platform.name == name and isinstance(platform.toolkit, str) and platform.flag_dialect in ("clang", "nvcc")
    for member in MEMBERS:
        protocol_member = getattr(Platform, member, None)
        if callable(protocol_member):  # same parameters, same async-ness
            ours = getattr(platform, member)
            assert inspect.iscoroutinefunction(ours) == inspect.iscoroutinefunction(protocol_member), member
            assert list(inspect.signature(ours).parameters) == list(inspect.signature(protocol_member).parameters)[1:], member


@pytest.mark.parametrize("vendor", ["amd", "nvidia"])
def test_pinning_and_clock_control_have_one_shape(vendor, tmp_path):
    import anyio

    gpu = GpuInfo(index=3, vendor=vendor, name="GPU 3", uuid="GPU-0f0f")
    platform = platforms.for_gpu(gpu)
    assert platform.gpu_vendor == vendor
    env = platform.pin_env(gpu)
    assert env and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    assert any(v in ("3", "GPU-0f0f") for v in env.values())  # the run sees that GPU only
    statement = anyio.run(platform.unlock_clocks, gpu, str(tmp_path))
    assert statement is None or isinstance(statement, str)


def test_offline_runs_nothing(tmp_path):
    import anyio

    from kernel_mcp.workspace import Workspace

    offline = platforms.PLATFORMS["offline"]
    assert not offline.can_profile() and offline.pin_env(GpuInfo(index=0, vendor="amd", name="x")) == {}
    with pytest.raises(WorkspaceError):
        anyio.run(offline.profile, Workspace.__new__(Workspace), None, None, None)


@pytest.mark.parametrize("name", sorted(platforms.PLATFORMS))
def test_every_platform_measures_a_gpus_peaks_or_says_why_not(name, tmp_path):
    """calibrate: MeasuredPeaks from the vendor's program, or an error that says what is missing.
    Offline there is no GPU; without the vendor's compiler nothing is built; with it, a GPU this
    machine does not have (the recorded ones) fails in the program's run, saying where."""
    import anyio

    from kernel_mcp.models.calibration import MeasuredPeaks

    platform = platforms.PLATFORMS[name]
    gpu = {
        "cuda": nvidia_smi.parse_nvidia_smi_xml(fixture("cuda/nvidia-smi-q-x.xml").read_text())[0],
        "rocm": amd_smi.parse_amd_smi_static(fixture("rocm/dellai-amdsmi-static-mi300x.json").read_text())[0],
    }.get(name, GpuInfo(index=0, vendor="amd", name="x"))
    if name == "offline":
        with pytest.raises(BackendMissing, match=r"^no GPU here"):
            anyio.run(platform.calibrate, gpu, tmp_path)
        return
    try:
        peaks = anyio.run(platform.calibrate, gpu, tmp_path)
    except BackendMissing as exc:  # no compiler: it names the one it needs
        assert ("nvcc" if name == "cuda" else "hipcc") in exc.message and not (tmp_path / "build").exists()
        return
    except CommandFailed as exc:  # built, and run where the recorded GPU is not
        assert exc.message.startswith("the calibration program ") and (tmp_path / "build").is_dir(), exc.message
        return
    assert isinstance(peaks, MeasuredPeaks) and peaks.gpu_uuid == gpu.uuid and peaks.copy_bytes_per_s.value > 0  # the machine of the recording


# -- one rule for "which platform" ---------------------------------------------------------------


def test_the_configurable_platforms_are_the_registrys():
    """kernel-mcp.toml's [target] platform offers exactly the registered platforms (and auto)."""
    from typing import get_args

    from kernel_mcp.workspace.config import Platform as ConfiguredPlatform

    assert set(get_args(ConfiguredPlatform)) == {"auto", *platforms.PLATFORMS}


@pytest.mark.parametrize("configured", ["rocm", "cuda", "offline"])
def test_a_configured_platform_is_taken_as_set(configured):
    resolution = platforms.resolve(configured, "gfx950")
    assert resolution.name == configured and resolution.reason == "set in kernel-mcp.toml"


def test_resolution_follows_the_machine(monkeypatch):
    from kernel_mcp import toolchain

    def machine(*tools):
        monkeypatch.setattr(toolchain, "find", lambda name: f"/bin/{name}" if name in tools else None)
        monkeypatch.setattr(toolchain, "offline_clang_argv", lambda: ["clang"])

    machine("nvcc", "ncu", "nvidia-smi")
    assert platforms.resolve("auto", "sm_90").name == "cuda"
    cross = platforms.resolve("auto", "gfx950")  # an AMD target measured on the NVIDIA GPU here
    assert cross.name == "cuda" and "compiles offline" in cross.reason
    monkeypatch.setattr(toolchain, "offline_clang_argv", lambda: None)
    cross = platforms.resolve("auto", "gfx950")  # no offline clang: the GPU still measures the harness
    assert cross.name == "cuda" and "no compiler here" in cross.reason
    machine("nvcc")  # a compiler alone is no GPU to measure on
    assert platforms.resolve("auto", "gfx950").name == "offline"
    machine("hipcc", "amd-smi", "rocprofv3")
    assert platforms.resolve("auto", "gfx950").name == "rocm"
    machine()
    assert platforms.resolve("auto", "gfx942").name == "offline"


def test_the_compiler_agrees_with_the_resolution(monkeypatch, tmp_path):
    from kernel_mcp import toolchain
    from kernel_mcp.workspace import Workspace

    monkeypatch.setattr(toolchain, "find", lambda name: f"/bin/{name}" if name in ("nvcc", "ncu", "nvidia-smi") else None)
    monkeypatch.setattr(toolchain, "offline_clang_argv", lambda: ["clang"])
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "auto"\n')
    ws = Workspace.open(tmp_path)
    assert platforms.resolve("auto", "gfx950").name == "cuda"
    assert platforms.compiler_for(ws, "gfx950").name == "offline"  # what doctor's reason says
    assert platforms.compiler_for(ws, "sm_90").name == "cuda"
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "cuda"\n')
    with pytest.raises(InvalidInput, match="AMD target"):
        platforms.compiler_for(Workspace.open(tmp_path), "gfx950")


# -- compile facts: one model from every compiler ------------------------------------------------


def _assert_compile_contract(kernels: list[KernelFacts]) -> None:
    assert kernels
    for k in kernels:
        assert isinstance(k, KernelFacts) and k.name and k.symbol
        assert isinstance(k.vgprs, int) and k.vgprs > 0
        assert isinstance(k.lds_bytes, int) and k.lds_bytes >= 0
        assert isinstance(k.scratch_bytes, int) and k.scratch_bytes >= 0
        assert k.mix.total == sum(k.mix.nonzero().values()) + 0  # every instruction has one class
        assert k.spills() >= 0


def test_nvcc_facts_follow_the_contract():
    kernels = nvidia.kernels_from(fixture("cuda/ptxas.txt").read_text(), fixture("cuda/cuobjdump-res-usage.txt").read_text(), "")
    _assert_compile_contract([k.model_copy(update={"mix": k.mix}) for k in kernels])
    assert kernels[0].vgprs == 40 and kernels[0].lds_bytes == 0


def test_hipcc_save_temps_facts_follow_the_contract():
    asm = fixture("rocm/hk-savetemps-256_256_32_16-gfx942.s").read_text()
    kernels = amdgpu_asm.kernels_from(asm, "")
    _assert_compile_contract(kernels)
    assert all(k.sgprs is not None and k.agprs is not None for k in kernels)


def test_offline_clang_facts_follow_the_contract(tmp_path):
    import anyio

    from kernel_mcp import compile as compiler
    from kernel_mcp.workspace import Workspace

    if platforms.PLATFORMS["offline"].installed() is False:
        pytest.skip("the offline clang (ziglang) is not installed")
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "gfx950"\nplatform = "offline"\n')
    (tmp_path / "k.hip").write_text(
        "#include <hip/hip_runtime.h>\n__global__ void scale(float* x, float a) {\n"
        "  __shared__ float tile[256];\n  tile[threadIdx.x] = x[threadIdx.x] * a;\n  __syncthreads();\n"
        "  x[threadIdx.x] = tile[255 - threadIdx.x];\n}\n"
    )
    ws = Workspace.open(tmp_path)
    answer = anyio.run(lambda: compiler.compile_kernel(ws, ws.runs.create("compile_kernel", {}), "k.hip", vendors=VENDORS))
    assert answer.ok and answer.backend == "offline-clang"
    _assert_compile_contract(answer.kernels)
    assert answer.kernels[0].lds_bytes == 1024 and answer.kernels[0].occupancy is not None


# -- profiles: what the ledger reads, the same from every profiler ------------------------------


def _assert_profile_contract(summary: ProfileSummary, expected_total_us: dict[str, float]) -> None:
    assert isinstance(summary, ProfileSummary) and summary.kernels
    for k in summary.kernels:
        assert isinstance(k.name, str) and k.calls >= 1
        assert k.total_us == pytest.approx(expected_total_us[k.name], rel=1e-9)
        assert k.avg_us == pytest.approx(k.total_us / k.calls)
    targets = [k for k in summary.kernels if k.target]
    assert targets, "the target kernel is marked"
    assert summary.target_dispatches and all(isinstance(v, list) and all(isinstance(t, float) for t in v) for v in summary.target_dispatches.values())
    assert sum(summary.target_calls.values()) == sum(k.calls for k in targets)


def _totals_from_csv(path: Path) -> dict[str, float]:
    frame = pd.read_csv(path)  # pandas on the raw file, not through the parser
    frame["us"] = (frame["End_Timestamp"] - frame["Start_Timestamp"]) / 1000
    return frame.groupby("Kernel_Name")["us"].sum().to_dict()


def test_rocprofv3_csv_and_rocpd_hand_over_the_same_contract(tmp_path):
    from test_profile import SCHEMA, _dispatches_from_csv

    csv = fixture("rocm/sdk2508-kernel_trace.csv")
    expected = _totals_from_csv(csv)
    _assert_profile_contract(summarise(parsers.read_kernel_trace(csv), "rocprofv3", "addition"), expected)
    db = build_rocpd(tmp_path / "run.db", SCHEMA, _dispatches_from_csv(csv))
    _assert_profile_contract(rocpd.summary([db], "addition", ["run.db"]), expected)


def test_ncu_hands_over_the_same_contract():
    text = fixture("cuda/ncu_metrics.csv").read_text()
    frame, _ = parsers.ncu_dispatches(text)
    expected = (frame.assign(us=frame["duration_ns"] / 1000).groupby("kernel")["us"].sum()).to_dict()
    target = str(frame["kernel"].iloc[0]).split("(")[0].split()[-1]
    _assert_profile_contract(summarise(frame, "ncu", target), expected)


def test_a_merged_multi_process_folder_hands_over_the_same_contract(tmp_path):
    """One kernel_trace.csv per process (rocprofv3's %hostname%/%pid% layout), read as one: the
    ledger gets every process's target dispatches, counted and timed as pandas counts them."""
    import shutil

    from kernel_mcp.profile import profile_import
    from kernel_mcp.workspace import Workspace

    from conftest import BASIC_TOML, write_toml

    files = []
    for pid, name in ((101, "sdk2508-kernel_trace.csv"), (102, "sdk-kernel_trace.csv")):
        dest = tmp_path / "prof" / "host" / f"{pid}_kernel_trace.csv"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(fixture(f"rocm/{name}"), dest)
        files.append(dest)
    totals: dict[str, float] = {}
    for path in files:
        for kernel, us in _totals_from_csv(path).items():
            totals[kernel] = totals.get(kernel, 0.0) + us
    write_toml(tmp_path, BASIC_TOML.replace('target_kernel = "k_main"', 'target_kernel = "addition"'))
    ws = Workspace.open(tmp_path)
    summary = profile_import(ws, ws.runs.create("profile_import", {}), ["prof"], vendors=VENDORS)
    _assert_profile_contract(summary, totals)
    raw = pd.concat([pd.read_csv(p) for p in files])
    assert sum(summary.target_calls.values()) == int(raw["Kernel_Name"].str.contains("addition").sum())
    assert sum(len(v) for v in summary.target_dispatches.values()) == sum(summary.target_calls.values())


# -- traces: one summary shape, each instruction set classified by its own platform -------------


def _assert_trace_contract(summary: TraceSummary) -> None:
    assert isinstance(summary, TraceSummary) and summary.instructions > 0 and summary.total > 0
    assert set(summary.categories) <= set(CATEGORIES)
    assert sum(summary.categories.values()) == pytest.approx(1.0)
    assert summary.hot and all(h.category in CATEGORIES for h in summary.hot)


def test_rocprofv3_trace_follows_the_contract():
    summary = summarise_trace("reference_gemm", "rocprofv3 PC sampling", read_code_json(fixture("rocm/rcv-pcsampling-code.json")), vendors=VENDORS)
    _assert_trace_contract(summary)


def test_ncu_trace_is_classified_as_sass():
    """SASS read with the AMDGPU classifier came out 'other' for every instruction."""
    summary = summarise_trace("dwconv3d_naive", "ncu source counters", read_ncu_source(fixture("cuda/ncu_source_sass.csv").read_text()), vendors=VENDORS)
    _assert_trace_contract(summary)
    assert {h.category for h in summary.hot} - {"other"}, "the hottest SASS instructions have classes"
    assert platforms.of_tool("ncu source counters").name == "cuda" and platforms.of_tool("rocprofv3 thread trace").name == "rocm"
    assert {platforms.of_tool(s).name for s in ("rocpd", "rocprof-compute counters", "rocprof results.stats.csv")} == {"rocm"}


# -- monitors: one GpuInfo and one GpuSample from every vendor ----------------------------------


def _assert_gpu_contract(gpus: list[GpuInfo]) -> None:
    assert gpus
    for g in gpus:
        assert isinstance(g, GpuInfo) and g.name and g.index >= 0 and g.vendor in platforms.BY_VENDOR
        assert platforms.for_gpu(g).gpu_vendor == g.vendor


def test_monitors_report_gpus_in_one_shape():
    nvidia = nvidia_smi.parse_nvidia_smi_xml(fixture("cuda/nvidia-smi-q-x.xml").read_text())
    amd = amd_smi.parse_amd_smi_static(fixture("rocm/dellai-amdsmi-static-mi300x.json").read_text())
    _assert_gpu_contract(nvidia)
    _assert_gpu_contract(amd)
    # the driver each inventory reports: the key of a GPU's measured peaks, kept out of the answers' schema and content
    assert {g.driver_version for g in nvidia} == {"580.159.04"} and {g.driver_version for g in amd} == {"6.16.13"}
    assert "driver_version" not in GpuInfo.model_json_schema()["properties"] and "driver_version" not in nvidia[0].model_dump()


def test_monitors_sample_in_one_shape():
    samples = nvidia_smi.parse_nvidia_smi_samples(fixture("cuda/nvidia-smi-q-x.xml").read_text(), 1.0)
    samples += amd_smi.parse_amd_smi_metric_samples(fixture("rocm/roctop-amdsmi-metric-ecc-r9700.json").read_text(), 1.0)
    assert {type(s) for s in samples} == {GpuSample}
    for s in samples:
        assert s.time == 1.0 and isinstance(s.index, int)
        assert s.sm_clock_mhz is None or s.sm_clock_mhz > 0
        assert s.temperature_c is None or -50 < s.temperature_c < 150


def test_copied_fixtures_are_listed_and_unchanged():
    """Every copy in tests/data/shared-fixtures is named in tests/data/SOURCES.md, no licence-barred
    file is among them, and (where the shared folder is present) each is byte for byte its original."""
    copies = sorted(p.relative_to(COPIED_FIXTURES).as_posix() for p in COPIED_FIXTURES.rglob("*") if p.is_file())
    assert copies
    sources = (REPO / "tests" / "data" / "SOURCES.md").read_text(encoding="utf-8")
    for relative in copies:
        top = relative.split("/")[1]
        assert top in sources, f"{relative} has no row in tests/data/SOURCES.md"
        assert relative not in NOT_COPIED
    if not FIXTURES.is_dir():
        pytest.skip(f"the shared fixtures folder ({FIXTURES}) is absent: copies not compared with their originals")
    for relative in copies:
        assert (COPIED_FIXTURES / relative).read_bytes() == (FIXTURES / relative).read_bytes(), relative
