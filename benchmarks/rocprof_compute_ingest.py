"""Regenerate kernel_mcp/profile/data/rocprof_compute_metrics.json (and, given an SDK checkout,
rocprofiler_sdk_derived.json) from the vendor's own definitions.

Usage: python benchmarks/rocprof_compute_ingest.py CHECKOUT COMMIT VERSION [SDK_CHECKOUT SDK_VERSION]
SDK_CHECKOUT holds source/share/rocprofiler-sdk/counter_defs.yaml (projects/rocprofiler-sdk of
ROCm/rocm-systems at the same COMMIT): its derived counters (those with an expression) for the gfx9
targets are kept with their description and per-target expressions.
CHECKOUT holds src/rocprof_compute_soc/analysis_configs/<gfx>/*.yaml (rocprof-compute's own tree,
or projects/rocprofiler-compute of ROCm/rocm-systems). Every metric of every metric_table is kept
as the vendor wrote it: its panel and table, its name, the expression rocprof-compute shows as the
value (value, else avg, else mean), its unit, and its coll_level where it has one. Nothing is rewritten; the evaluator reads the
vendor's own expression language.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ARCHES = ("gfx90a", "gfx942", "gfx950")
VALUE_KEYS = ("value", "avg", "mean")
NOTICE = (
    "MIT License. Copyright (c) 2021 - 2025 Advanced Micro Devices, Inc. All Rights Reserved. Permission is hereby granted, free of charge, "
    'to any person obtaining a copy of this software and associated documentation files (the "Software"), to deal in the Software without '
    "restriction, including without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of "
    "the Software, and to permit persons to whom the Software is furnished to do so, subject to the following conditions: The above copyright "
    "notice and this permission notice shall be included in all copies or substantial portions of the Software. THE SOFTWARE IS PROVIDED "
    '"AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR '
    "A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER "
    "LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR "
    "OTHER DEALINGS IN THE SOFTWARE."
)


def metrics_of(path: Path) -> list[dict]:
    doc = yaml.safe_load(path.read_text())
    panel = doc.get("Panel Config") or {}
    out = []
    for source in panel.get("data source") or []:
        table = source.get("metric_table") if isinstance(source, dict) else None
        if not table:
            continue
        for name, fields in (table.get("metric") or {}).items():
            if not isinstance(fields, dict):
                continue
            expr = next((fields[k] for k in VALUE_KEYS if isinstance(fields.get(k), str) and fields[k].strip()), None)
            if expr is None:
                continue
            out.append(
                {
                    "panel": panel.get("title", ""),
                    "table_id": table.get("id"),
                    "table": table.get("title", ""),
                    "name": str(name),
                    "expr": " ".join(expr.split()),
                    "unit": str(fields.get("unit") or ""),
                    "file": path.name,
                }
                # the table rocprof-compute reads this metric's counters from, where not pmc_perf (SQ_LEVEL_WAVES: the
                # pass that collects SQ_ACCUM_PREV_HIRES for that level)
                | ({"coll_level": str(fields["coll_level"])} if fields.get("coll_level") else {})
            )
    return out


# rocprof-compute's per-target machine constants (src/rocprof_compute_soc/soc_<arch>.py), which its
# sysinfo.csv carries and a profile made without it needs: `self._mspec.<name> = <int>`
SOC_CONSTANTS = ("_l2_banks", "lds_banks_per_cu", "pipes_per_gpu")


def soc_constants(path: Path) -> dict[str, int]:
    import re

    text = path.read_text()
    found = {}
    for name in SOC_CONSTANTS:
        match = re.search(rf"self\._mspec\.{name}\s*=\s*(\d+)\s*$", text, re.M)
        if match:
            found[name.lstrip("_")] = int(match.group(1))
    return found


def main(checkout: str, commit: str, version: str) -> None:
    root = Path(checkout) / "src" / "rocprof_compute_soc" / "analysis_configs"
    data = {
        "source": {
            "tool": "rocprof-compute",
            "version": version,
            "repository": "ROCm/rocm-systems",
            "path": "projects/rocprofiler-compute/src/rocprof_compute_soc/analysis_configs",
            "commit": commit,
            "license": NOTICE,
        },
        "arches": {a: [m for f in sorted((root / a).glob("*.yaml")) for m in metrics_of(f)] for a in ARCHES},
        # path: projects/rocprofiler-compute/src/rocprof_compute_soc/soc_<arch>.py at the same commit
        "soc": {a: soc_constants(root.parent / f"soc_{a}.py") for a in ARCHES},
    }
    out = Path(__file__).resolve().parent.parent / "kernel_mcp" / "profile" / "data" / "rocprof_compute_metrics.json"
    out.write_text(json.dumps(data, indent=0, sort_keys=False) + "\n")
    print(out, {a: len(v) for a, v in data["arches"].items()})


SDK_NOTICE = NOTICE.replace("2021 - 2025 Advanced Micro Devices, Inc. All Rights Reserved.", "2023-2025 Advanced Micro Devices, Inc. All rights reserved.")
GFX9 = {"gfx9", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"}


def sdk(checkout: str, commit: str, version: str) -> None:
    doc = yaml.safe_load((Path(checkout) / "source" / "share" / "rocprofiler-sdk" / "counter_defs.yaml").read_text())
    counters = {}
    for c in doc["rocprofiler-sdk"]["counters"]:
        defs = [
            {"architectures": d["architectures"], "expression": " ".join(d["expression"].split())}
            for d in c.get("definitions") or []
            if d.get("expression") and GFX9 & set(d.get("architectures") or [])
        ]
        if defs:
            counters[c["name"]] = {"description": " ".join(str(c.get("description") or "").split()), "definitions": defs}
    data = {
        "source": {
            "tool": "rocprofiler-sdk",
            "version": version,
            "repository": "ROCm/rocm-systems",
            "path": "projects/rocprofiler-sdk/source/share/rocprofiler-sdk/counter_defs.yaml",
            "commit": commit,
            "license": SDK_NOTICE,
        },
        "counters": counters,
    }
    out = Path(__file__).resolve().parent.parent / "kernel_mcp" / "profile" / "data" / "rocprofiler_sdk_derived.json"
    out.write_text(json.dumps(data, indent=0) + "\n")
    print(out, len(counters))


if __name__ == "__main__":
    main(*sys.argv[1:4])
    if len(sys.argv) > 5:
        sdk(sys.argv[4], sys.argv[2], sys.argv[5])
