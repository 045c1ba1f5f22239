"""The AMDGPU backend's `-Rpass-analysis=kernel-resource-usage` remarks, as real compilers print them.

One remark per line, each ending in the pass tag, in two orders:

- `k.hip:38:1: remark:     VGPRs: 102 [tag]`: clang's usual diagnostic, location first, when the
  backend runs in the same process as the front end (source snippet lines come in between);
- `remark: k.hip:38:0:     VGPRs: 184 [tag]`: the message-first form the backend prints when it
  runs on its own input, which is what `-save-temps` (hipcc's and the ROCm path's) makes it do.

The keys changed across LLVM releases: ROCm 6.x prints `SGPRs` where LLVM 19 and later print
`TotalSGPRs` (both the SGPR count with VCC and the other extras); `AGPRs` appears only for targets
with matrix cores; `LDS Size` only for kernels. Values are numbers, `True`/`False` (Dynamic Stack),
or an expression LLVM could not fold, which is kept as text and never read as a number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

TAG = "[-Rpass-analysis=kernel-resource-usage]"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_REMARK_FIRST = re.compile(r"^remark:\s*(?:(?P<loc>\S.*?:\d+(?::\d+)?):\s)?(?P<body>.*)$")
_LOCATION_FIRST = re.compile(r"^(?P<loc>.+?):\s*remark:\s?(?P<body>.*)$")
_BODY = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z ]*?)\s*(?:\[(?P<unit>[^\]]*)\])?\s*:\s*(?P<value>.*?)\s*$")

# remark key (unit stripped) -> KernelFacts field
FIELDS = {
    "Function Name": "symbol",
    "TotalSGPRs": "sgprs",
    "SGPRs": "sgprs",
    "VGPRs": "vgprs",
    "AGPRs": "agprs",
    "ScratchSize": "scratch_bytes",
    "Dynamic Stack": "dynamic_stack",
    "Occupancy": "compiler_occupancy",
    "SGPRs Spill": "sgpr_spills",
    "VGPRs Spill": "vgpr_spills",
    "LDS Size": "lds_bytes",
}


def split_remark(line: str) -> tuple[str | None, str, str] | None:
    """(location, key, value) of one resource-usage remark line, in either order; None otherwise."""
    text = _ANSI.sub("", line).strip()
    if not text.endswith(TAG):
        return None
    text = text[: -len(TAG)].rstrip()
    match = _REMARK_FIRST.match(text) or _LOCATION_FIRST.match(text)
    if not match:
        return None
    body = _BODY.match(match.group("body"))
    if not body:
        return None
    return match.group("loc"), body.group("key").strip(), body.group("value")


def _value(text: str) -> int | str:
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def parse_remarks(output: str | Iterable[str]) -> dict[str, dict[str, int | str]]:
    """symbol -> resource figures (KernelFacts field names), from compiler output (text or lines)."""
    lines = output.splitlines() if isinstance(output, str) else output
    out: dict[str, dict[str, int | str]] = {}
    current: dict[str, int | str] | None = None
    for line in lines:
        if "kernel-resource-usage" not in line:
            continue
        parts = split_remark(line)
        if parts is None:
            continue
        location, key, value = parts
        field = FIELDS.get(key)
        if field == "symbol":
            current = out.setdefault(value, {"symbol": value})
            if location:
                current["location"] = location
        elif field and current is not None:
            current[field] = _value(value)
    return out
