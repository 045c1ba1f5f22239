"""The GPU gate: monitors' recorded outputs, the idle rule, waiting, the cross-process lock, pinning.

Orchestration runs against a stand-in `nvidia-smi` that replays the recorded H100 report
(../shared/fixtures/cuda/nvidia-smi-q-x.xml), with its utilization edited per test; the real
tool was exercised on the device.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from kernel_mcp.gpu import gate
from kernel_mcp.platforms import VENDORS
from kernel_mcp.platforms.rocm.usage import parse_amd_smi_metric, parse_rocm_smi
from kernel_mcp.workspace.config import GateConfig

from conftest import PY, fixture

pytestmark = pytest.mark.anyio


def test_rocm_smi_recorded_outputs():
    mi100 = parse_rocm_smi(fixture("rocm/telegraf-rocmsmi-mi100-rocm602.json").read_text())
    assert [g.index for g in mi100] == [0, 1, 2, 3]
    assert mi100[0].utilization_pct == 0 and mi100[0].memory_total_mib == pytest.approx(34342961152 / 2**20)
    assert mi100[0].processes is None  # rocm-smi cannot say which GPU a process uses
    rx = parse_rocm_smi(fixture("rocm/telegraf-rocmsmi-rx6700xt-rocm612.json").read_text())  # starts with a blank line
    assert len(rx) == 1 and rx[0].memory_used_mib == pytest.approx(1572745216 / 2**20)


def test_amd_smi_metric_wrapper_without_usage_is_unknown_not_zero():
    gpus = parse_amd_smi_metric(fixture("rocm/roctop-amdsmi-metric-ecc-r9700.json").read_text())
    assert len(gpus) == 4 and all(g.utilization_pct is None and g.memory_used_mib is None for g in gpus)
    idle, reason = gate.judge(gpus[0], GateConfig())
    assert not idle and "neither" in reason


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    """A stand-in nvidia-smi replaying the recorded report; `util` sets the GPU utilization it shows."""
    xml = fixture("cuda/nvidia-smi-q-x.xml").read_text()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    state = tmp_path / "util"
    state.write_text("0")
    (tmp_path / "report.xml").write_text(xml)
    script = bindir / "nvidia-smi"
    script.write_text(
        f"#!{PY}\nimport re, sys\nutil = open({str(state)!r}).read().strip()\n"
        f"text = open({str(tmp_path / 'report.xml')!r}).read()\n"
        "sys.stdout.write(re.sub(r'<gpu_util>[^<]*</gpu_util>', f'<gpu_util>{util} %</gpu_util>', text))\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(gate.LOCK_DIR_ENV, str(tmp_path / "locks"))
    return state


async def test_idle_gpu_is_locked_and_pinned(fake_smi, tmp_path):
    cfg = GateConfig(interval_s=0.2, limit_s=1)
    status = await gate.gpu_status(cfg, str(tmp_path), vendors=VENDORS)
    assert status.monitor == "nvidia-smi" and status.chosen == 0 and status.gpus[0].idle
    async with gate.acquire(cfg, str(tmp_path), vendors=VENDORS) as lease:
        assert lease.env["CUDA_VISIBLE_DEVICES"] == "GPU-2ff7243f-8039-b359-3d2b-e0aa01b9f345"
        assert lease.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
        held = await gate.gpu_status(cfg, str(tmp_path), vendors=VENDORS)
        assert held.gpus[0].locked and not held.gpus[0].idle
        with pytest.raises(gate.NoIdleGpu):
            async with gate.acquire(cfg, str(tmp_path), vendors=VENDORS):
                pass
    async with gate.acquire(cfg, str(tmp_path), vendors=VENDORS) as again:
        assert again.gpu is not None


async def test_busy_gpu_waits_reports_progress_then_gives_up(fake_smi, tmp_path):
    fake_smi.write_text("97")
    seen = []

    async def progress(done, total, message):
        seen.append(message)

    with pytest.raises(gate.NoIdleGpu) as info:
        async with gate.acquire(GateConfig(interval_s=0.3, limit_s=1.0), str(tmp_path), progress, vendors=VENDORS):
            pass
    assert "utilization 97% > 10%" in info.value.message and seen and "re-checking" in seen[0]


async def test_gpu_that_becomes_idle_is_taken(fake_smi, tmp_path):
    fake_smi.write_text("97")
    flipper = subprocess.Popen([PY, "-c", f"import time; time.sleep(0.5); open({str(fake_smi)!r}, 'w').write('1')"])
    async with gate.acquire(GateConfig(interval_s=0.3, limit_s=10), str(tmp_path), vendors=VENDORS) as lease:
        assert lease.gpu is not None and lease.waited_s > 0.2
    flipper.wait()


def test_lock_is_released_when_its_holder_dies(fake_smi, tmp_path):
    code = (
        "import anyio, os\nfrom kernel_mcp.gpu import gate\nfrom kernel_mcp.platforms import VENDORS\nfrom kernel_mcp.workspace.config import GateConfig\n"
        "async def main():\n    async with gate.acquire(GateConfig(), '.', vendors=VENDORS):\n        print('held', flush=True)\n        os.kill(os.getpid(), 9)\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=os.environ, timeout=60)
    assert "held" in done.stdout and done.returncode == -9
    status = subprocess.run(
        [
            PY,
            "-c",
            "import anyio; from kernel_mcp.gpu import gate; from kernel_mcp.platforms import VENDORS; "
            "from kernel_mcp.workspace.config import GateConfig;"
            "print(anyio.run(lambda: gate.gpu_status(GateConfig(), '.', vendors=VENDORS)).gpus[0].locked)",
        ],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=60,
    )
    assert status.stdout.strip() == "False"


async def test_no_monitor_runs_ungated_unless_a_gpu_is_required(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "none"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
    monkeypatch.setattr(sys, "path", [])
    async with gate.acquire(GateConfig(), str(tmp_path), vendors=VENDORS) as lease:
        assert lease.gpu is None and "without the GPU gate" in lease.describe()
    with pytest.raises(gate.NoIdleGpu):
        async with gate.acquire(GateConfig(), str(tmp_path), require_gpu=True, vendors=VENDORS):
            pass
