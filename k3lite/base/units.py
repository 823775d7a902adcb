"""Byte and duration units: one formatter for every number of bytes or seconds the app prints.

Bytes are decimal (SI) everywhere: 1 kB = 1000 B, 1 MB = 10^6 B, 1 GB = 10^9 B, as in network and HBM datasheets
(GB/s, TB/s) and DeepEP's README. The figures (k3lite.viz.style) re-export these.
"""
from __future__ import annotations

import math

_BYTE_UNITS = (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0))


def byte_unit(n: float) -> tuple[str, float]:
    """The decimal unit that shows `n` bytes with 1 to 3 digits before the point: ("MB", 1e6) etc."""
    for name, size in _BYTE_UNITS:
        if abs(n) >= size:
            return name, size
    return "B", 1.0


def fmt_bytes(n: float, digits: int = 3) -> str:
    """`n` bytes in decimal units with `digits` significant digits: 1536 -> '1.54 kB', 3.2e10 -> '32.0 GB'."""
    if not math.isfinite(n):
        raise ValueError(f"byte count must be finite, got {n}")
    name, size = byte_unit(n)
    v = n / size
    if name == "B":
        return f"{v:.0f} B"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(v)))) if v else 0)
    return f"{v:.{decimals}f} {name}"


_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def fmt_seconds(t: float, digits: int = 3) -> str:
    """A duration with `digits` significant digits in s, ms, µs or ns: 2.5e-6 -> '2.50 µs', 4.1e-10 -> '0.410 ns'."""
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"a duration must be finite and >= 0, got {t}")
    name, size = next(((n, s) for n, s in _TIME_UNITS if t >= s), _TIME_UNITS[-1])
    v = t / size
    decimals = max(0, digits - 1 - int(math.floor(math.log10(v)))) if v else 0
    return f"{v:.{decimals}f} {name}"
