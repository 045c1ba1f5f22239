"""Figures as people write them: 50 MiB (52,428,800 B), 2.2 GHz, 8 TB/s, 72.1 TFLOP/s, 65,536 registers.

Never an exponent (`5.24288e+07`): sizes in bytes get the binary unit they are an exact multiple of
(LDS, caches and memory are sized in KiB/MiB/GiB) with the exact count beside it; rates get a
decimal prefix (bandwidth and FLOP/s are quoted that way); clocks are in GHz from 1000 MHz up;
every other number keeps its unit, with thousands separators and at most four significant digits.
"""

from __future__ import annotations

import math

_BINARY = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))
_DECIMAL = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
# a unit as the tables write it -> as the answer writes it after the number
_SHORT_UNITS = {"bytes/clk": "B/clk", "FLOP/byte": "FLOP/B"}


SHORT = 4  # significant digits in a summary
EXACT = 12  # enough for every figure of the tables as written there


def plain(value: float, digits: int = SHORT) -> str:
    """A number without an exponent: whole numbers with thousands separators, others with at most
    `digits` significant digits (288.4, 1.98, 0.0125)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return str(value)
    if float(value).is_integer():  # a count is exact, whatever its length (65,535 B, not 65,540)
        return f"{int(value):,}"
    value = float(f"{value:.{digits}g}")
    if value.is_integer():
        return f"{int(value):,}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:,.{decimals}f}".rstrip("0").rstrip(".")


def _prefixed(value: float, unit: str, digits: int) -> str:
    for size, prefix in _DECIMAL:
        if abs(value) >= size:
            return f"{plain(value / size, digits)} {prefix}{unit}"
    return f"{plain(value, digits)} {unit}"


def size_in_bytes(value: int | float) -> str:
    """160 KiB (163,840 B); a count that is no whole number of KiB stays in bytes (1,280 B)."""
    if float(value).is_integer():
        count = int(value)
        for size, name in _BINARY:
            if count >= size and count % size == 0:
                return f"{count // size:,} {name} ({count:,} B)"
    return f"{plain(value)} B"


def human(value: int | float | str, unit: str | None, digits: int = SHORT) -> str:
    """`value` in `unit` (as the hardware tables name units), written the way people write it;
    rates rounded to `digits` significant digits (EXACT: as the table has them)."""
    if isinstance(value, str):
        return f"{value} {unit}" if unit else value
    if unit == "bytes":
        return size_in_bytes(value)
    if unit == "bytes/s":
        return _prefixed(value, "B/s", digits)
    if unit == "FLOP/s":
        return _prefixed(value, "FLOP/s", digits)
    if unit == "MHz":
        return f"{plain(value / 1000, digits)} GHz" if value >= 1000 else f"{plain(value, digits)} MHz"
    shown = plain(value, digits)
    unit = _SHORT_UNITS.get(unit or "", unit)
    return f"{shown} {unit}" if unit else shown
