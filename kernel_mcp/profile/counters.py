"""Choosing counters, checked against the profiler's own listing, pass packing, and the derived
metrics of AMD counter files (which imports read too), taken from the vendor's own definitions
(vendor_metrics.py); each platform holds its presets (and NVIDIA's derived metrics) in its folder.

Which counters exist comes from the installed tool (`rocprofv3 --list-avail`, `ncu
--query-metrics`), cached per workspace; presets are filtered by that listing, and an unknown
name gets an error listing close matches. rocprofv3 collects what fits in one hardware pass per
run: counters are packed greedily, and a pass the tool rejects is split in two and retried.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

from kernel_mcp.errors import InvalidInput
from kernel_mcp.models.profile import DerivedMetric
import kernel_mcp.profile.vendor_metrics as vendor_metrics


def choose(
    presets: dict[str, list[str]], base_name: Callable[[str], str], preset: str | None, names: list[str], available: set[str] | None
) -> tuple[list[str], list[str]]:
    """The counters to collect, from a platform's `presets` and the names asked for, and notes about
    any dropped; unknown explicit names are an error. `base_name` is the name the profiler's listing
    uses for a counter (Platform.counter_base_name)."""
    notes = []
    wanted = list(names)
    if preset:
        if preset not in presets:
            raise InvalidInput(f"unknown preset {preset!r}", hint="presets: " + ", ".join(presets))
        wanted = presets[preset] + wanted
    wanted = list(dict.fromkeys(wanted))
    if available is None:
        return wanted, ["the profiler's counter listing is unavailable: names not checked"]
    unknown = [n for n in names if base_name(n) not in available]
    if unknown:
        hints = []
        for n in unknown:
            close = difflib.get_close_matches(base_name(n), sorted(available), n=4, cutoff=0.5)
            hints.append(f"{n}: close matches {', '.join(close) or 'none'}")
        raise InvalidInput(f"counter(s) not available on this target: {', '.join(unknown)}", hint="; ".join(hints))
    dropped = [n for n in wanted if base_name(n) not in available]
    if dropped:
        notes.append(f"preset counters not on this target, skipped: {', '.join(dropped)}")
    return [n for n in wanted if n not in dropped], notes


def pack(counters: list[str], per_pass: int) -> list[list[str]]:
    return [counters[i : i + per_pass] for i in range(0, len(counters), per_pass)]


async def collect_in_passes(counters: list[str], per_pass: int, run_pass: Callable) -> tuple[list, list[str]]:
    """Run one profiler pass per group; a group the tool rejects is halved and retried."""
    results, notes = [], []
    queue = pack(counters, per_pass)
    while queue:
        group = queue.pop(0)
        outcome, rejected = await run_pass(group)
        if rejected and len(group) > 1:
            half = len(group) // 2
            queue[:0] = [group[:half], group[half:]]
            notes.append(f"{len(group)} counters did not fit one pass; split")
            continue
        if rejected:
            raise InvalidInput(f"the profiler rejected counter {group[0]}: {rejected}")
        results.append(outcome)
    return results, notes


def derived_amd(
    c: dict[str, float],
    duration_s: float | None,
    peak_bw: float | None,
    listing: dict[str, dict[str, str]],
    arch: str | None = None,
    machine: dict[str, float] | None = None,
    columns: vendor_metrics.KernelColumns | None = None,
) -> list[DerivedMetric]:
    """A kernel's derived metrics: rocprofv3's own derived counters as it wrote them, rocprof-compute's
    metrics for `arch` (vendor_metrics.py; `machine`: its sysinfo figures; `columns`: the counters per
    dispatch), and the few figures the
    vendor defines nowhere, labelled as this project's own."""
    out = []
    for name, value in c.items():
        definition = vendor_metrics.sdk_definition(name, arch)
        if definition is None:
            continue
        listed = listing.get(name, {}).get("expression")
        out.append(DerivedMetric(name=name, value=value, unit="", definition=f"rocprofv3 --list-avail: {listed}" if listed else definition))
    out += vendor_metrics.vendor_derived(c, arch, machine, duration_s, columns)
    if "SQ_LDS_BANK_CONFLICT" in c and c.get("SQ_INSTS_LDS"):
        out.append(
            DerivedMetric(
                name="LDS bank-conflict cycles per LDS instruction",
                value=c["SQ_LDS_BANK_CONFLICT"] / c["SQ_INSTS_LDS"],
                unit="",
                definition="kernel-mcp's own (rocprof-compute has no per-instruction figure; its Bank Conflicts/Access needs "
                "SQ_LDS_IDX_ACTIVE): SQ_LDS_BANK_CONFLICT / SQ_INSTS_LDS, 0 when no LDS access conflicts",
            )
        )
    if "FETCH_SIZE" in c and "WRITE_SIZE" in c and duration_s:
        bw = (c["FETCH_SIZE"] + c["WRITE_SIZE"]) * 1024 / duration_s
        out.append(
            DerivedMetric(
                name="HBM bandwidth",
                value=bw / 1e9,
                unit=" GB/s",
                definition="kernel-mcp's own, from rocprofv3's derived counters: (FETCH_SIZE + WRITE_SIZE) KiB * 1024 / kernel time",
            )
        )
        if peak_bw:
            out.append(
                DerivedMetric(
                    name="HBM share of peak",
                    value=100 * bw / peak_bw,
                    unit="%",
                    definition="kernel-mcp's own: HBM bandwidth / hw_spec hbm_bandwidth_bytes_per_s",
                )
            )
    return out
