"""GPU state samples (clocks, temperature, power, clock locks) from the monitors' real outputs, and
the sampling and clock-control orchestration, which must never fail a run.

Recorded outputs used (the NVIDIA one is copied into tests/data/shared-fixtures; the others are read
from the shared fixtures, and their tests are skipped without them):
- NVIDIA: ../shared/fixtures/cuda/nvidia-smi-q-x.xml, `nvidia-smi -q -x` on an idle H100 (driver
  580.159.04), recorded for this project (see cuda/SOURCES.md there).
- amd-smi 26.x wrapper: ../shared/fixtures/rocm/roctop-amdsmi-metric-ecc-r9700.json
  (x7even/roctop testdata/amdsmi_metric_ecc.json at b780359853a0115d331042a3a7f41d5a4b6227b8,
  GPL-3.0): `amd-smi metric --json` restricted to the ECC group, so no clock or temperature group.
- amd-smi 24.x with clock and temperature groups: a full `amd-smi metric --json` of a Radeon RX 6600
  pasted verbatim in luckylinux/supermicro-fan-control GPU_NOTES.md ("Check Temperatures (Full
  Output Example)") at commit 7c31cdb51b1a11bd77170acbd9f2f1cb0ddd7e7c. Its licence (AGPL-3.0)
  does not allow a copy here, so the test reads it from the shared fixtures as
  rocm/luckylinux-GPU_NOTES.md, unchanged, and is skipped until it has been put there.
No public recorded `amd-smi metric --json` of an Instinct GPU with its clock group was found.
Orchestration tests run stand-in monitors that replay these outputs (as conftest's do).
"""

from __future__ import annotations

import json
import os

import pytest

from kernel_mcp import gpu as gpu_mod
from kernel_mcp.gpu import GpuInfo, lock_clocks, sample, unlock_clocks
from kernel_mcp.platforms import VENDORS
from kernel_mcp.platforms.cuda.nvidia_smi import parse_nvidia_smi_samples, parse_nvidia_smi_xml
from kernel_mcp.platforms.rocm.amd_smi import parse_amd_smi_metric_samples

from conftest import find_fixture, fixture, install_stand_ins

pytestmark = pytest.mark.anyio
XML = "cuda/nvidia-smi-q-x.xml"
AMD = GpuInfo(index=0, vendor="amd", name="AMD GPU 0")
NOTES = "rocm/luckylinux-GPU_NOTES.md"


def test_nvidia_sample_from_the_recorded_h100_report():
    (s,) = parse_nvidia_smi_samples(fixture(XML).read_text(), 1700000000.0)
    assert (s.time, s.monitor, s.index) == (1700000000.0, "nvidia-smi", 0)
    assert (s.sm_clock_mhz, s.sm_clock_max_mhz, s.mem_clock_mhz) == (1980.0, 1980.0, 2619.0)
    assert (s.temperature_c, s.temperature_sensor, s.memory_temperature_c) == (41.0, "gpu", 40.0)
    assert s.power_w == 127.98  # instant_power_draw; average_power_draw is 135.06
    assert (s.perf_level, s.throttle) == ("P0", "none")  # every clocks_event_reason is "Not Active"
    # applications clocks equal their defaults and no setting limits the clock: a lock cannot be seen
    assert s.clocks_locked is None


def test_nvidia_active_reasons_and_an_applications_clock_setting():
    text = fixture(XML).read_text()
    for reason in ("applications_clocks_setting", "sw_power_cap"):
        tag = f"clocks_event_reason_{reason}"
        text = text.replace(f"<{tag}>Not Active</{tag}>", f"<{tag}>Active</{tag}>")
    (s,) = parse_nvidia_smi_samples(text, 0.0)
    assert s.throttle == "applications_clocks_setting, sw_power_cap"
    assert s.clocks_locked is True


def test_amd_26x_metric_without_clock_groups_is_unknown_not_zero():
    samples = parse_amd_smi_metric_samples(fixture("rocm/roctop-amdsmi-metric-ecc-r9700.json").read_text(), 5.0)
    assert [s.index for s in samples] == [0, 1, 2, 3]
    for s in samples:
        assert (s.sm_clock_mhz, s.sm_clock_max_mhz, s.temperature_c, s.power_w, s.clocks_locked, s.throttle) == (None,) * 6


def _notes_metric_json() -> str:
    path = find_fixture(NOTES)
    if path is None:
        pytest.skip(f"{NOTES} is not in the shared fixtures yet (AGPL-3.0: it cannot be copied into this repository; see this module's docstring)")
    text = path.read_text(encoding="utf-8")
    start = text.index("[", text.index("Check Temperatures (Full Output Example)"))
    return text[start : text.index("```", start)]


def test_amd_24x_metric_with_clock_and_temperature():
    (s,) = parse_amd_smi_metric_samples(_notes_metric_json(), 5.0)
    assert (s.monitor, s.index) == ("amd-smi", 0)
    assert (s.sm_clock_mhz, s.sm_clock_max_mhz, s.mem_clock_mhz) == (800.0, 2750.0, 541.0)  # gfx_0; gfx_1..7 are "N/A"
    assert (s.temperature_c, s.temperature_sensor, s.memory_temperature_c) == (37.0, "hotspot", 32.0)  # edge reads 36
    assert (s.power_w, s.throttle, s.perf_level) == (6.0, "none", "AUTO")
    assert s.clocks_locked is False  # DPM level AUTO: the driver picks the clock


async def test_no_monitor_no_sample_and_a_reason_for_no_lock(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    for var in ("PATH", "ROCM_PATH", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.setenv(var, str(empty))
    nvidia = parse_nvidia_smi_xml(fixture(XML).read_text())[0]
    assert await sample(None, str(tmp_path), vendors=VENDORS) is None
    assert await sample(AMD, str(tmp_path), vendors=VENDORS) is None
    assert await sample(nvidia, str(tmp_path), vendors=VENDORS) is None
    assert await lock_clocks(AMD, str(tmp_path), vendors=VENDORS) == "neither amd-smi nor rocm-smi is installed: clocks not locked"
    assert await unlock_clocks(AMD, str(tmp_path), vendors=VENDORS) == "neither amd-smi nor rocm-smi is installed: nothing to unlock"
    assert await lock_clocks(nvidia, str(tmp_path), vendors=VENDORS) is None  # ncu holds clocks itself; -lgc needs root
    assert await unlock_clocks(nvidia, str(tmp_path), vendors=VENDORS) is None


def _logging(body: str, log) -> str:
    """A stand-in that appends its arguments to `log` as a JSON line, then runs `body`."""
    return f"import json, sys\nopen({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n{body}"


def _calls(log) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def test_sample_asks_nvidia_smi_for_the_given_gpu_only(tmp_path, monkeypatch):
    log = tmp_path / "calls.jsonl"
    install_stand_ins(tmp_path, monkeypatch, {"nvidia-smi": _logging(f"sys.stdout.write(open({str(fixture(XML))!r}).read())", log)})
    h100 = parse_nvidia_smi_xml(fixture(XML).read_text())[0]
    s = await sample(h100, str(tmp_path), vendors=VENDORS)
    assert _calls(log) == [["-i", h100.uuid, "-q", "-x"]]
    assert s is not None and (s.sm_clock_mhz, s.temperature_c, s.power_w) == (1980.0, 41.0, 127.98)


async def test_sample_amd_retries_without_perf_level_and_picks_its_gpu(tmp_path, monkeypatch):
    log = tmp_path / "calls.jsonl"
    ecc = fixture("rocm/roctop-amdsmi-metric-ecc-r9700.json")
    body = f"if '--perf-level' in sys.argv:\n    sys.exit(2)\nsys.stdout.write(open({str(ecc)!r}).read())"
    install_stand_ins(tmp_path, monkeypatch, {"amd-smi": _logging(body, log)})
    s = await sample(GpuInfo(index=2, vendor="amd", name="AMD GPU 2"), str(tmp_path), vendors=VENDORS)
    assert _calls(log) == [
        ["metric", "--gpu", "2", "--power", "--clock", "--temperature", "--perf-level", "--json"],
        ["metric", "--gpu", "2", "--power", "--clock", "--temperature", "--json"],
    ]
    assert s is not None and s.index == 2 and s.sm_clock_mhz is None
    # no clock group, so no maximum clock to cap at: nothing is set
    statement = await lock_clocks(GpuInfo(index=2, vendor="amd", name="AMD GPU 2"), str(tmp_path), vendors=VENDORS)
    assert statement.startswith("GPU 2: its maximum graphics clock is unknown")
    assert not any(call[0] == "set" for call in _calls(log))


async def test_a_failing_or_hanging_monitor_gives_no_sample(tmp_path, monkeypatch):
    h100 = parse_nvidia_smi_xml(fixture(XML).read_text())[0]
    install_stand_ins(tmp_path, monkeypatch, {"nvidia-smi": "import sys; sys.stderr.write('NVIDIA-SMI has failed'); sys.exit(9)"})
    assert await sample(h100, str(tmp_path), vendors=VENDORS) is None
    install_stand_ins(tmp_path, monkeypatch, {"nvidia-smi": "import time; time.sleep(60)"})
    monkeypatch.setattr(gpu_mod, "SAMPLE_TIMEOUT_S", 0.5)
    assert await sample(h100, str(tmp_path), vendors=VENDORS) is None


async def test_lock_without_permission_says_so(tmp_path, monkeypatch):
    """amd-smi raises PermissionError('Command requires elevation') on AMDSMI_STATUS_NO_PERM and
    prints it without a traceback (amdsmi_cli, ROCm/amdsmi amdsmi_commands.py set_value)."""
    log = tmp_path / "calls.jsonl"
    body = "sys.stderr.write('PermissionError: Command requires elevation\\n'); sys.exit(1)"
    install_stand_ins(tmp_path, monkeypatch, {"amd-smi": _logging(body, log)})
    gpu = GpuInfo(index=0, vendor="amd", name="AMD Instinct MI300X", bus_id="0000:1b:00.0")
    statement = await lock_clocks(gpu, str(tmp_path), sclk_mhz=2100, vendors=VENDORS)
    assert "no permission" in statement and statement.endswith("clocks not locked")
    assert _calls(log) == [["set", "--gpu", "0000:1b:00.0", "--perf-determinism", "2100"]]
    assert "no permission" in await unlock_clocks(gpu, str(tmp_path), vendors=VENDORS)
    assert _calls(log)[-1] == ["reset", "--gpu", "0000:1b:00.0", "--perf-determinism"]
    assert os.environ["PATH"].startswith(str(tmp_path))  # the stand-ins, not a real amd-smi, answered
