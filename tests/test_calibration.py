"""Measured peaks beside the product tables (hardware/calibration.py): the calibration programs'
output read strictly, kept per GPU and driver, compared with the product tables, and the floor of
the impossible-speedup check drawn per resource from the higher of table and measurement, each
refusal saying which figure drew it and by how much the time is under it.

The outputs below are in the programs' own format (platforms/cuda/calibrate.cu and
platforms/rocm/calibrate.hip print it; its lines are theirs), with figures chosen for the test, not
recorded measurements. The GPUs are the ones the recorded nvidia-smi and amd-smi reports describe.
"""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest
from mcp import Client

from kernel_mcp import toolchain
from kernel_mcp.bench import floor_for
from kernel_mcp.bench.results import figures, read_csv
from kernel_mcp.errors import BackendMissing, CommandFailed
from kernel_mcp.hardware import calibration, load_spec
from kernel_mcp.models.calibration import MeasuredPeaks, parse_calibration
from kernel_mcp.models.gpu import GpuInfo
from kernel_mcp.platforms import PLATFORMS, VENDORS
from kernel_mcp.platforms.cuda.nvidia_smi import parse_nvidia_smi_xml
from kernel_mcp.platforms.rocm.amd_smi import parse_amd_smi_static
from kernel_mcp.server import build_server
from kernel_mcp.workspace import Workspace

from conftest import PY, data, install_stand_ins, text_of, toml_list

pytestmark = pytest.mark.anyio

CUDA_PROGRAM = Path(__file__).resolve().parents[1] / "kernel_mcp" / "platforms" / "cuda" / "calibrate.cu"
HIP_PROGRAM = Path(__file__).resolve().parents[1] / "kernel_mcp" / "platforms" / "rocm" / "calibrate.hip"
WHEN = "2026-03-01T14:02:00+00:00"
MMA_LIMIT = "on sm_90 warp-level mma.sync does not reach the wgmma peak, so a lower figure here is the method's limit, not the table's error"
CUDA_OUTPUT = f"""kernel_mcp_calibration 1
device_name NVIDIA H100 80GB HBM3
arch sm_90
compute_units 132
copy_bytes_per_s 3.018000e+12
copy_method device-to-device copy kernel, 1024 MiB to 1024 MiB, 16-byte loads and stores, 2112 blocks of 256 threads, fastest of 5 timed launches; bytes = read + written
fma_flops_per_s 5.900000e+13
fma_method FP32 FMA (fmaf), 8 independent chains per thread in registers, 1056 blocks of 256 threads (every SM full), 309000 iterations, fastest of 5 timed launches; 2 FLOPs per FMA
clock_mhz 1755.0
clock_method clock64 cycles over %globaltimer nanoseconds, one thread of the last timed FMA launch
matrix_flops_per_s 6.600000e+14 bf16
matrix_method warp-level mma.sync.aligned.m16n8k16 BF16 into FP32 (4096 FLOPs per instruction per warp), 8 independent accumulators per warp in registers, 528 blocks of 256 threads (every SM full), 95000 iterations, fastest of 5 timed launches; {MMA_LIMIT}
end
"""
HIP_OUTPUT = """kernel_mcp_calibration 1
device_name AMD Instinct MI300X
arch gfx942
compute_units 304
copy_bytes_per_s 4.300000e+12
copy_method device-to-device copy kernel, 1024 MiB to 1024 MiB, 16-byte loads and stores, 2432 blocks of 256 threads, fastest of 5 timed launches; bytes = read + written
fma_flops_per_s 1.500000e+14
fma_method packed FP32 FMA (v_pk_fma_f32), 8 independent chains per thread in registers, 2432 blocks of 256 threads (every CU full), 80000 iterations, fastest of 5 timed launches; 2 FLOPs per FMA
matrix_flops_per_s 1.050000e+15 bf16
matrix_method BF16 MFMA into FP32 (v_mfma_f32_32x32x8_bf16, 16384 FLOPs per instruction per wave), 4 independent accumulators per wave in registers, 1216 blocks of 256 threads (every CU full), 30000 iterations, fastest of 5 timed launches
end
"""


def h100() -> GpuInfo:
    return parse_nvidia_smi_xml(data("shared-fixtures/cuda/nvidia-smi-q-x.xml").read_text())[0]


def mi300x() -> GpuInfo:
    return parse_amd_smi_static(data("shared-fixtures/rocm/dellai-amdsmi-static-mi300x.json").read_text())[0]


def h100_pcie(driver: str = "580.159.04") -> GpuInfo:
    return GpuInfo(index=1, vendor="nvidia", name="NVIDIA H100 PCIe", arch="Hopper", device_id="0x2331", uuid="GPU-test-pcie", driver_version=driver)


def peaks_of(gpu: GpuInfo, text: str = CUDA_OUTPUT) -> MeasuredPeaks:
    return parse_calibration(text, gpu, program="calibrate.cu sha256:test", measured_at=WHEN)


def with_copy(text: str, value: str) -> str:
    return "\n".join(f"copy_bytes_per_s {value}" if line.startswith("copy_bytes_per_s ") else line for line in text.splitlines()) + "\n"


# -- the programs' output, read strictly -----------------------------------------------------------


def test_a_whole_output_reads_into_one_shape_with_the_gpu_it_measured():
    gpu = h100()
    peaks = parse_calibration(CUDA_OUTPUT, gpu, program="calibrate.cu sha256:test", measured_at=WHEN)
    assert (peaks.gpu_uuid, peaks.gpu_name, peaks.product, peaks.driver_version) == (gpu.uuid, "NVIDIA H100 80GB HBM3", "H100 SXM", "580.159.04")
    assert (peaks.arch, peaks.compute_units, peaks.device_name) == ("sm_90", 132, "NVIDIA H100 80GB HBM3")
    assert peaks.copy_bytes_per_s.value == 3.018e12 and peaks.copy_bytes_per_s.method.startswith("device-to-device copy kernel, 1024 MiB")
    assert peaks.fma_flops_per_s.value == 5.9e13 and peaks.matrix_flops_per_s is not None and peaks.matrix_flops_per_s.value == 6.6e14
    assert peaks.matrix_dtype == "bf16" and peaks.matrix_flops_per_s.method.endswith(MMA_LIMIT)
    assert peaks.clock_mhz == 1755.0 and peaks.clock_method and "%globaltimer" in peaks.clock_method
    assert peaks.when() == "2026-03-01 14:02 UTC"
    amd = parse_calibration(HIP_OUTPUT, mi300x(), program="calibrate.hip sha256:test")
    assert (amd.product, amd.driver_version, amd.gpu_bus_id, amd.arch) == ("MI300X", "6.16.13", "0000:1b:00.0", "gfx942")
    assert amd.clock_mhz is None and amd.clock_method is None  # the HIP program prints no clock
    # a GPU without the matrix instruction the program uses says so instead of a rate
    lines = [line for line in HIP_OUTPUT.splitlines() if not line.startswith("matrix_")]
    lines.insert(-1, "matrix_unavailable gfx1100 has no BF16 MFMA instruction this program uses (gfx90a, gfx940-gfx942, gfx950)")
    none = parse_calibration("\n".join(lines), mi300x(), program="calibrate.hip sha256:test")
    assert none.matrix_flops_per_s is None and none.matrix_dtype is None and none.matrix_unavailable.startswith("gfx1100 has no BF16 MFMA")


def _drop(text: str, key: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith(f"{key} "))


def _set(text: str, key: str, value: str) -> str:
    return "\n".join(f"{key} {value}" if line.startswith(f"{key} ") else line for line in text.splitlines())


BAD_OUTPUTS = [
    ("not a number", _set(CUDA_OUTPUT, "copy_bytes_per_s", "nan"), r"line 5: copy_bytes_per_s is nan, not a decimal number"),
    ("infinite", _set(CUDA_OUTPUT, "copy_bytes_per_s", "inf"), r"copy_bytes_per_s is inf, not a decimal number"),
    ("overflowing", _set(CUDA_OUTPUT, "fma_flops_per_s", "1e999"), r"line 7: fma_flops_per_s is 1e999, not a finite number"),
    ("negative", _set(CUDA_OUTPUT, "fma_flops_per_s", "-5.9e13"), r"fma_flops_per_s is -5.9e13, not a positive rate"),
    ("zero", _set(CUDA_OUTPUT, "copy_bytes_per_s", "0.0"), r"copy_bytes_per_s is 0.0, not a positive rate"),
    ("digit separators", _set(CUDA_OUTPUT, "copy_bytes_per_s", "3_018_000_000_000"), r"not a decimal number"),
    ("a unit after the figure", _set(CUDA_OUTPUT, "copy_bytes_per_s", "3.0e12 B/s"), r"copy_bytes_per_s has more than one value"),
    ("no FMA rate", _drop(_drop(CUDA_OUTPUT, "fma_flops_per_s"), "fma_method"), r"no fma_flops_per_s"),
    ("a rate without its method", _drop(CUDA_OUTPUT, "copy_method"), r"line 5: copy_bytes_per_s without copy_method"),
    ("a method without its rate", _drop(CUDA_OUTPUT, "fma_flops_per_s"), r"fma_method without fma_flops_per_s"),
    ("a clock without its method", _drop(CUDA_OUTPUT, "clock_method"), r"clock_mhz without clock_method"),
    ("a key twice", CUDA_OUTPUT.replace("arch sm_90\n", "arch sm_90\narch sm_80\n"), r"line 4: arch given twice \(first on line 3\)"),
    ("an unknown key", CUDA_OUTPUT.replace("arch sm_90\n", "arch sm_90\nspeedup 100\n"), r"line 4: unknown key speedup"),
    ("no version line", CUDA_OUTPUT.split("\n", 1)[1], r"line 1: it starts with device_name NVIDIA H100 80GB HBM3, not 'kernel_mcp_calibration 1'"),
    ("another version", CUDA_OUTPUT.replace("kernel_mcp_calibration 1", "kernel_mcp_calibration 2"), r"not 'kernel_mcp_calibration 1'"),
    ("cut short", CUDA_OUTPUT.split("fma_flops_per_s")[0], r"line 6: it stops before `end` \(the program did not finish\)"),
    ("lines after the end", CUDA_OUTPUT + "copy_bytes_per_s 9e15\n", r"`end` before the last line"),
    ("a matrix rate given and unavailable", CUDA_OUTPUT.replace("end\n", "matrix_unavailable no mma\nend\n"), r"both given and said to be unavailable"),
    ("a matrix rate without its dtype", _set(CUDA_OUTPUT, "matrix_flops_per_s", "6.6e14"), r"must be a rate and a dtype"),
    ("a matrix rate of an unknown dtype", _set(CUDA_OUTPUT, "matrix_flops_per_s", "6.6e14 int8"), r"must be a rate and a dtype"),
    ("no matrix line", _drop(_drop(CUDA_OUTPUT, "matrix_flops_per_s"), "matrix_method"), r"neither matrix_flops_per_s nor matrix_unavailable"),
    ("a count that is none", _set(CUDA_OUTPUT, "compute_units", "-132"), r"compute_units is -132, not a positive count"),
    ("nothing", "", r"it starts with nothing"),
]


@pytest.mark.parametrize("case, text, why", BAD_OUTPUTS, ids=[case for case, _, _ in BAD_OUTPUTS])
def test_an_output_that_is_no_measurement_is_refused_naming_the_line(case, text, why):
    with pytest.raises(CommandFailed, match=r"^the calibration program's output is not a measurement: .*" + why):
        parse_calibration(text, h100(), program="calibrate.cu sha256:test")


# -- kept per GPU and driver -----------------------------------------------------------------------


def _workspace(tmp_path: Path, harness: str = "", dtype: str = "fp32") -> Workspace:
    (tmp_path / "kernel-mcp.toml").write_text(
        f'[target]\narch = "sm_90"\nplatform = "offline"\n\n[benchmark]\ncommand = {toml_list(PY, "bench.py")}\ncsv = "out/bench.csv"\n'
        'config_columns = ["shape"]\ncorrectness = { column = "err", rule = "== 0" }\nmetric = "us"\n\n'
        f'[harness]\nflops_column = "flops"\nbytes_column = "bytes"\nfloor_dtype = "{dtype}"\n' + harness
    )
    return Workspace(tmp_path)


def test_a_measurement_is_kept_per_gpu_and_driver(tmp_path):
    ws, gpu = _workspace(tmp_path), h100()
    assert calibration.cached(ws, gpu) is None
    peaks = peaks_of(gpu)
    path = calibration.store(ws, gpu, peaks)
    assert path.parent == tmp_path / ".kernel-mcp" / "calibration" and path.name.startswith("GPU_2ff7243f_8039_b359_3d2b_e0aa01b9f345-")
    assert calibration.cached(ws, gpu) == peaks
    # a new driver is a new measurement; so is another GPU, even of the same product
    assert calibration.cached(ws, gpu.model_copy(update={"driver_version": "590.44.01"})) is None
    assert calibration.cached(ws, gpu.model_copy(update={"uuid": "GPU-00000000-0000-0000-0000-000000000000"})) is None
    assert calibration.cached(ws, gpu.model_copy(update={"driver_version": None})) is None  # unknown is a driver of its own
    # another GPU's record copied over this one's is not this GPU's measurement
    other = h100_pcie()
    path.write_text(peaks_of(other).model_dump_json())
    assert calibration.cached(ws, gpu) is None
    # nor is a file that does not read as one, or a link
    path.write_text('{"copy_bytes_per_s": {"value": NaN}}')
    assert calibration.cached(ws, gpu) is None
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(peaks.model_dump_json())
    path.unlink()
    path.symlink_to(elsewhere)
    assert calibration.cached(ws, gpu) is None


def test_a_failure_is_recorded_for_its_driver_and_a_measurement_clears_it(tmp_path):
    ws, gpu = _workspace(tmp_path), h100()
    calibration.record_failure(ws, gpu, "nvcc not found: the calibration program (calibrate.cu) is built with it")
    assert calibration.failure(ws, gpu).startswith("nvcc not found: the calibration program (calibrate.cu) is built with it (20")
    assert calibration.failure(ws, gpu.model_copy(update={"driver_version": "590.44.01"})) is None
    calibration.store(ws, gpu, peaks_of(gpu))
    assert calibration.failure(ws, gpu) is None


# -- measured against the table -------------------------------------------------------------------


def test_each_figure_is_compared_with_the_table_and_a_disagreement_says_what_it_may_mean():
    gpu = h100()
    rows = calibration.compare(peaks_of(gpu), load_spec("sm_90", gpu.product_entry()))
    assert [row.line() for row in rows] == [
        "copy bandwidth: measured 3.02 TB/s, table 3.35 TB/s (-9.9%)",
        "FMA fp32: measured 59.0 TFLOP/s, table 66.9 TFLOP/s (-11.8%); DISAGREES by more than 10%: the table's peak assumes 1980 MHz, "
        "the clock seen while measuring was 1755 MHz: a power or thermal limit, clocks held low or another load on the GPU lowers the rate",
        f"matrix bf16: measured 660 TFLOP/s, table 989 TFLOP/s (-33.3%); DISAGREES by more than 10%: {MMA_LIMIT}",
    ]
    assert [row.disagrees for row in rows] == [False, True, True] and math.isclose(rows[0].ratio, 3.018 / 3.35)
    # a table below what the GPU measured: the floor takes the measurement, unless it is beyond belief
    pcie = h100_pcie()
    spec = load_spec("sm_90", pcie.product_entry())
    (high,) = [r for r in calibration.compare(peaks_of(pcie, with_copy(CUDA_OUTPUT, "2.4e12")), spec) if r.quantity == "copy bandwidth"]
    assert high.line() == (
        "copy bandwidth: measured 2.40 TB/s, table 2.00 TB/s (+20.0%); DISAGREES by more than 10%: measured above the table: "
        "its figure is too low for this GPU, or it describes another product; the floor uses the measured figure"
    )
    (wild,) = [r for r in calibration.compare(peaks_of(pcie, with_copy(CUDA_OUTPUT, "3.35e12")), spec) if r.quantity == "copy bandwidth"]
    assert wild.line().endswith("over 1.5x the table's, so the floor does not use it: check the table and which product this GPU is")
    # an AMD table: the clock its peaks assume is the engine clock
    amd = mi300x()
    rows = calibration.compare(peaks_of(amd, HIP_OUTPUT), load_spec("gfx942", amd.product_entry()))
    assert [row.line().split(";")[0] for row in rows] == [
        "copy bandwidth: measured 4.30 TB/s, table 5.30 TB/s (-18.9%)",
        "FMA fp32: measured 150 TFLOP/s, table 163 TFLOP/s (-8.2%)",
        "matrix bf16: measured 1050 TFLOP/s, table 1307 TFLOP/s (-19.7%)",
    ]
    assert "the table's peak assumes 2100 MHz: a power or thermal limit" in rows[2].line()
    assert "the memory's theoretical peak (bus width x data rate)" in rows[0].line()


# -- the floor: the higher of table and measurement, its margin stated --------------------------------


def _frame(tmp_path: Path, rows: list[tuple[str, float, float]], flops: float = 0.0):
    csv = tmp_path / "bench.csv"
    csv.write_text("shape,err,us,flops,bytes\n" + "".join(f"{shape},0,{us},{flops},{nbytes}\n" for shape, us, nbytes in rows))
    return read_csv(csv)


def _impossible(ws: Workspace, gpu: GpuInfo, frame) -> tuple[str | None, list[str]]:
    floor, whose, _ = floor_for(ws, gpu)
    return whose, figures(frame, ws.config.benchmark, ws.config.harness, floor).impossible


def test_the_floor_takes_the_higher_figure_per_resource_and_states_its_margin(tmp_path):
    ws, gpu = _workspace(tmp_path), h100()
    moved = 3.35e12 * 97.2e-6  # the bytes whose H100 SXM floor is 97.2 us
    frame = _frame(tmp_path, [("fast", 1.25, moved), ("fine", 120.0, moved)])
    whose, refused = _impossible(ws, gpu, frame)
    assert whose == "H100 SXM (sm_90, this GPU), table figures"
    assert refused == ["shape=fast: 1.25 us measured, the floor is 97.2 us (memory 3.35 TB/s, table; not measured): 77.8x under it"]
    # measured below the table: the table's figure still draws the floor, and the refusal says both
    calibration.store(ws, gpu, peaks_of(gpu))
    whose, refused = _impossible(ws, gpu, frame)
    assert whose == "H100 SXM (sm_90, this GPU), per resource the higher of the table and this GPU's measurement of 2026-03-01 14:02 UTC"
    assert refused == ["shape=fast: 1.25 us measured, the floor is 97.2 us (memory 3.35 TB/s, table; measured 3.02 TB/s): 77.8x under it"]


def test_a_table_too_low_never_refuses_what_the_gpu_measured_it_can_do(tmp_path):
    ws, pcie = _workspace(tmp_path), h100_pcie()
    moved = 2.0e12 * 100e-6  # the H100 PCIe table's floor for these bytes: 100 us
    frame = _frame(tmp_path, [("real", 90.0, moved), ("fast", 50.0, moved)])
    assert [line.split(":")[0] for line in _impossible(ws, pcie, frame)[1]] == ["shape=real", "shape=fast"]
    calibration.store(ws, pcie, peaks_of(pcie, with_copy(CUDA_OUTPUT, "2.4e12")))
    whose, refused = _impossible(ws, pcie, frame)
    assert whose.startswith("H100 PCIe (sm_90, this GPU), per resource the higher of the table and this GPU's measurement")
    assert refused == ["shape=fast: 50 us measured, the floor is 83.3 us (memory 2.40 TB/s, measured; table 2.00 TB/s): 1.67x under it"]
    # a measurement beyond belief (1.7x the table's) draws no floor, and the refusal says so
    calibration.store(ws, pcie, peaks_of(pcie, with_copy(CUDA_OUTPUT, "3.35e12")))
    refused = _impossible(ws, pcie, frame)[1]
    assert refused[0] == (
        "shape=real: 90 us measured, the floor is 100 us (memory 2.00 TB/s, table; measured 3.35 TB/s, 1.7x the table's: "
        "not used (doctor shows it)): 10.0% under it"
    )


def test_a_measurement_draws_only_its_own_gpus_floor(tmp_path):
    gpu = h100()
    moved = 3.35e12 * 97.2e-6
    ws = _workspace(tmp_path)
    calibration.store(ws, gpu, peaks_of(gpu))
    frame = _frame(tmp_path, [("fast", 1.25, moved)])
    # another driver: not this measurement
    whose, refused = _impossible(ws, gpu.model_copy(update={"driver_version": "590.44.01"}), frame)
    assert whose.endswith("table figures") and refused[0].endswith("(memory 3.35 TB/s, table; not measured): 77.8x under it")
    # the floor of another product, named in the workspace: this GPU's figures are not that product's
    ws = _workspace(tmp_path, 'floor_product = "H200"\n')
    whose, refused = _impossible(ws, gpu, frame)
    assert whose == "H200 (sm_90, [harness] floor_product), table figures" and "(memory 4.80 TB/s, table; not measured)" in refused[0]
    # arithmetic the measurement did not cover (fp16 on the matrix units; it measured bf16) keeps the table's figure alone
    refused = _impossible(_workspace(tmp_path, dtype="fp16"), gpu, _frame(tmp_path, [("fast", 1.0, 1.0)], flops=1e12))[1]
    assert refused == ["shape=fast: 1 us measured, the floor is 1.01e+03 us (fp16 matrix 989 TFLOP/s, table; not measured): 1,011x under it"]


# -- when it runs: the first benchmark on a GPU whose floor it draws, and doctor ------------------------


async def test_a_benchmark_measures_once_and_a_failure_is_not_tried_again(tmp_path):
    """The recorded H100 through its real platform: where this machine has no such GPU (or no
    nvcc), the measurement fails, the failure is kept, and the next benchmark does not try again."""
    ws, gpu = _workspace(tmp_path), h100()
    logs = calibration.folder(ws) / "logs"
    first = await calibration.ensure_for_floor(ws, gpu, VENDORS)
    ran = sorted(logs.iterdir()) if logs.is_dir() else []
    if first is None:  # the recorded GPU is this machine's, with its compiler: measured and kept
        assert calibration.cached(ws, gpu) is not None and calibration.failure(ws, gpu) is None
    else:
        assert first.startswith("measuring this GPU's peaks failed: "), first
        why = first.removeprefix("measuring this GPU's peaks failed: ")[:40]
        again = await calibration.ensure_for_floor(ws, gpu, VENDORS)
        assert again.startswith(f"no measurement of this GPU's peaks: the last try failed: {why}") and again.endswith("doctor tries again")
    assert (sorted(logs.iterdir()) if logs.is_dir() else []) == ran  # nothing ran the second time
    assert await calibration.ensure_for_floor(ws, gpu, VENDORS) == (None if first is None else again)
    # where no measurement would draw the floor, none is tried: no FLOP and byte columns, or a GPU no table describes
    other = tmp_path / "other"
    other.mkdir()
    (other / "kernel-mcp.toml").write_text('[target]\narch = "sm_90"\n')
    assert await calibration.ensure_for_floor(Workspace(other), gpu, VENDORS) is None
    assert not (other / ".kernel-mcp").exists()
    nvl = GpuInfo(index=2, vendor="nvidia", name="NVIDIA H200 NVL", device_id="0x233b", uuid="GPU-nvl", driver_version="580.159.04")
    assert await calibration.ensure_for_floor(ws, nvl, VENDORS) is None and calibration.failure(ws, nvl) is None


def _doctor_workspace(tmp_path: Path, monkeypatch) -> Path:
    install_stand_ins(tmp_path, monkeypatch, {})  # nvidia-smi replays the recorded H100 report
    root = tmp_path / "ws"
    root.mkdir()
    (root / "kernel-mcp.toml").write_text('[target]\narch = "sm_90"\n')
    return root


async def test_doctor_shows_a_kept_measurement_beside_the_table(tmp_path, monkeypatch):
    root = _doctor_workspace(tmp_path, monkeypatch)
    gpu = h100()
    calibration.store(Workspace(root), gpu, peaks_of(gpu))
    async with Client(build_server(root)) as client:
        text = text_of(await client.call_tool("doctor", {}))
    assert (
        "note: GPU 0 (H100 SXM, driver 580.159.04): peaks measured 2026-03-01 14:02 UTC; clock seen while measuring 1755 MHz\n"
        "note: GPU 0: copy bandwidth: measured 3.02 TB/s, table 3.35 TB/s (-9.9%)\n"
        "note: GPU 0: FMA fp32: measured 59.0 TFLOP/s, table 66.9 TFLOP/s (-11.8%); DISAGREES by more than 10%: "
    ) in text, text
    assert f"note: GPU 0: matrix bf16: measured 660 TFLOP/s, table 989 TFLOP/s (-33.3%); DISAGREES by more than 10%: {MMA_LIMIT}" in text


async def test_doctor_measures_a_gpu_without_one_only_when_it_can_hold_it(tmp_path, monkeypatch):
    from kernel_mcp.gpu import gate

    root = _doctor_workspace(tmp_path, monkeypatch)
    gpu = h100()
    async with Client(build_server(root)) as client:
        with gate.hold(gpu) as held:  # another run holds the GPU: doctor leaves it alone
            assert held
            text = text_of(await client.call_tool("doctor", {}))
        assert "note: GPU 0 (H100 SXM): peaks not measured: held by another kernel-mcp run; doctor measures it when it is free" in text, text
        assert not calibration.folder(Workspace(root)).exists()
        # free and idle (as the recorded report says): doctor measures it. There is no such GPU here
        # (or no nvcc), so the measurement fails and says so; on the machine of the recording it is made
        text = text_of(await client.call_tool("doctor", {}))
    lines = [line for line in text.splitlines() if line.startswith("note: GPU 0")]
    if calibration.cached(Workspace(root), gpu) is None:
        assert lines[0].startswith("note: GPU 0 (H100 SXM): peaks not measured: measuring failed: "), text
        assert calibration.failure(Workspace(root), gpu) is not None
    else:
        assert lines[0].startswith("note: GPU 0 (H100 SXM, driver 580.159.04): peaks measured ") and ", just now" in lines[0], text


# -- the programs ----------------------------------------------------------------------------------


@pytest.mark.skipif(not PLATFORMS["offline"].installed(), reason="the offline clang (ziglang) is not installed")
@pytest.mark.parametrize("arch, mfma", [("gfx950", r"^v_mfma_f32_32x32x16_bf16"), ("gfx942", r"^v_mfma_f32_32x32x8_?bf16")])
async def test_the_hip_calibration_program_compiles_offline(tmp_path, arch, mfma):
    """The HIP program's kernels, compiled for each target by the offline clang as compile_kernel
    compiles (its host part is hipcc's only): packed FP32 FMAs, the target's BF16 MFMA, 16-byte
    copies, nothing spilled."""
    (tmp_path / "kernel-mcp.toml").write_text(f'[target]\narch = "{arch}"\nplatform = "offline"\n')
    shutil.copy(HIP_PROGRAM, tmp_path / "calibrate.hip")
    async with Client(build_server(tmp_path)) as client:
        result = await client.call_tool("compile_kernel", {"source": "calibrate.hip", "arch": arch})
        assert not result.is_error and result.structured_content["ok"], text_of(result)
        kernels = {k["name"]: k for k in result.structured_content["kernels"]}
        assert set(kernels) == {"kmcp_copy", "kmcp_fma", "kmcp_mfma"}, sorted(kernels)
        for kernel in kernels.values():
            assert not kernel["scratch_bytes"] and (kernel["vgpr_spills"] or 0) == 0, kernel
        assert kernels["kmcp_mfma"]["mix"]["mfma"] >= 4  # four independent accumulators
        for pattern, least in ((mfma, 4), (r"^v_pk_fma_f32", 8), (r"^global_load_dwordx4", 4), (r"^global_store_dwordx4", 4)):
            kernel = "kmcp_mfma" if "mfma" in pattern else "kmcp_fma" if "fma" in pattern else "kmcp_copy"
            seen = await client.call_tool("isa_view", {"kernel": kernel, "pattern": pattern, "context": 0})
            assert not seen.is_error and seen.structured_content["matches"] >= least, (pattern, text_of(seen))


@pytest.mark.skipif(toolchain.find("nvcc") is None, reason="nvcc is not installed here")
async def test_the_cuda_calibration_program_compiles_for_sm_90(tmp_path):
    """The CUDA program's kernels through compile_kernel with nvcc (and cuobjdump's SASS): 16-byte
    loads and stores, FFMA chains between two readings of the SM clock and the global timer, BF16
    HMMA, nothing spilled."""
    (tmp_path / "kernel-mcp.toml").write_text('[target]\narch = "sm_90"\nplatform = "cuda"\n')
    shutil.copy(CUDA_PROGRAM, tmp_path / "calibrate.cu")
    async with Client(build_server(tmp_path)) as client:
        result = await client.call_tool("compile_kernel", {"source": "calibrate.cu", "arch": "sm_90"})
        assert not result.is_error and result.structured_content["ok"], text_of(result)
        kernels = {k["name"]: k for k in result.structured_content["kernels"]}
        assert set(kernels) == {"kmcp_copy", "kmcp_fma", "kmcp_mma"}, sorted(kernels)
        for kernel in kernels.values():
            assert not kernel["scratch_bytes"] and not kernel["spill_stores_bytes"] and not kernel["spill_loads_bytes"], kernel
        assert kernels["kmcp_mma"]["mix"]["mfma"] >= 8  # eight independent accumulators
        for kernel, pattern, least in (
            ("kmcp_mma", r"HMMA\.16816\.F32\.BF16", 8),
            ("kmcp_copy", r"LDG\.E\.128", 4),
            ("kmcp_copy", r"STG\.E\.128", 4),
            ("kmcp_fma", r"FFMA", 8),
            ("kmcp_fma", r"CS2R .*SR_CLOCKLO", 2),
            ("kmcp_fma", r"CS2R .*SR_GLOBALTIMERLO", 2),
        ):
            seen = await client.call_tool("isa_view", {"kernel": kernel, "pattern": pattern, "context": 0})
            assert not seen.is_error and seen.structured_content["matches"] >= least, (pattern, text_of(seen))


def test_both_programs_print_the_format_the_reader_reads():
    """Every key either program prints is one the reader knows, and each prints the version line
    and `end` (what can be checked of their output without a GPU to run them on)."""
    from kernel_mcp.models import calibration as model

    for program in (CUDA_PROGRAM, HIP_PROGRAM):
        source = program.read_text()
        printed = set(re.findall(r'printf\("([a-z_]+)[ \\]', source)) - {"kernel_mcp_calibration"}
        assert printed <= model._KNOWN, (program.name, printed - model._KNOWN)
        assert {
            "copy_bytes_per_s",
            "copy_method",
            "fma_flops_per_s",
            "fma_method",
            "matrix_flops_per_s",
            "matrix_method",
            "matrix_unavailable",
            "end",
        } <= printed
        assert f'printf("{model.FORMAT_HEADER}\\n");' in source
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in CUDA_PROGRAM.read_text()
    assert MMA_LIMIT in CUDA_PROGRAM.read_text()


# -- on a real GPU ----------------------------------------------------------------------------------


@pytest.mark.gpu
async def test_the_real_calibration_of_this_machines_gpu(tmp_path):
    from kernel_mcp.gpu import list_gpus

    (tmp_path / "kernel-mcp.toml").write_text('[target]\nplatform = "auto"\n')
    ws = Workspace(tmp_path)
    gpus, notes = await list_gpus(str(tmp_path), vendors=VENDORS)
    assert gpus, notes
    gpu = gpus[0]
    try:
        peaks = await calibration.measure(ws, gpu, VENDORS)
    except BackendMissing as exc:
        pytest.skip(f"no compiler for the calibration program here: {exc.message}")
    assert peaks.copy_bytes_per_s.value > 0 and peaks.fma_flops_per_s.value > 0
    assert peaks.matrix_flops_per_s is None or peaks.matrix_flops_per_s.value > 0
    assert calibration.cached(ws, gpu) == peaks and calibration.record_path(ws, gpu).is_file()
    entry = gpu.product_entry()
    spec = load_spec(entry.arch, entry) if entry else None
    for line in calibration.describe(gpu, peaks, spec, fresh=True):
        print(line)  # the figures, for whoever runs this on a GPU
    if spec is not None:
        share = peaks.copy_bytes_per_s.value / spec.value("hbm_bandwidth_bytes_per_s")
        assert 0.5 <= share <= 1.1, (gpu.name, share)
    # doctor shows what is kept now, without measuring again
    async with Client(build_server(tmp_path)) as client:
        text = text_of(await client.call_tool("doctor", {}))
    assert f"note: GPU {gpu.index} (" in text and "peaks measured" in text, text
