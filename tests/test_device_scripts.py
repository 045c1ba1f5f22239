"""The device scripts' edits still apply to the example they edit.

`benchmarks/device_e2e.py` stages its candidates (the GPU reward hacks, the calibrated extra work,
the narrower tiling searches) by editing the example's sources and config at fixed anchors. Its
runs cost GPU time that only a lease gives, so an anchor that a change of the example removed is
found here, on any machine, rather than minutes into a device run.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path

import pytest

from conftest import REPO

EXAMPLE = REPO / "kernels" / "conv3d_depthwise"


@pytest.fixture(scope="module")
def e2e():
    spec = importlib.util.spec_from_file_location("device_e2e", REPO / "benchmarks" / "device_e2e.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["device_e2e"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("device_e2e", None)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    copy = tmp_path / "src"
    shutil.copytree(EXAMPLE / "src", copy)
    return copy


def _instances(plan: Path) -> dict[str, list[tuple[int, int]]]:
    found = {}
    for line in plan.read_text().splitlines():
        match = re.match(r"#define (FAST_INSTANCES_\w+)\(X\) (.*)", line)
        if match:
            found[match[1]] = [(int(a), int(b)) for a, b in re.findall(r"X\((\d+), (\d+)\)", match[2])]
    return found


def test_each_hack_and_the_extra_work_edit_the_launcher(e2e, src):
    fast = src / "fast.hip"
    original = fast.read_text()
    for name, (old, new) in e2e.HACKS.items():
        fast.write_text(original)
        e2e.edit(fast, old, new)  # asserts that the anchor is there
        assert fast.read_text() != original, name
    for change in (e2e.before_last_launch(fast, e2e.LAUNCH_AGAIN), lambda: e2e.add_extra_work(fast)):
        fast.write_text(original)
        change()
        assert fast.read_text().count("fast_dispatch(ch, lim, x, w, y, N, C, D, H, W,") >= 2


def test_a_narrower_search_keeps_only_those_rows_on_both_platforms(e2e, src):
    before = _instances(src / "fast_plan.h")
    assert set(before) == {"FAST_INSTANCES_CUDA", "FAST_INSTANCES_HIP"}
    for rows in ("4", "4, 6", "7, 8"):
        (src / "fast_plan.h").write_text((EXAMPLE / "src" / "fast_plan.h").read_text())
        e2e.rhs_only(src / "fast.hip", rows)()
        after = _instances(src / "fast_plan.h")
        wanted = {int(r) for r in rows.split(",")}
        for name, instances in after.items():
            assert instances and instances == [i for i in before[name] if i[0] in wanted], (name, rows)


def test_the_workspace_copy_takes_the_scripts_command_and_repeats(e2e, tmp_path):
    ws = e2e.workspace(tmp_path / "ws", command=e2e.NOISE_COMMAND, repeats=2)
    text = (ws / "kernel-mcp.toml").read_text()
    assert '"--shapes", "x3d_res3,seg3d_64"' in text and "repeats = 2" in text
