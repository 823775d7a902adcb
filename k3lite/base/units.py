"""Byte and duration units: one formatter for every number of bytes or seconds the app prints.

The rule (the glossary says it too):
- Bytes that move or are counted (wire bytes, bytes read per token, weights, caches) and rates (GB/s, TB/s) are
  decimal (SI): 1 kB = 1000 B, 1 MB = 10^6 B, 1 GB = 10^9 B, as network and HBM-bandwidth datasheets and
  DeepEP's README write them: `fmt_bytes`.
- HBM capacity is binary, as the hardware is: an "80 GB" H100 is counted as 80 GiB (nvidia-smi: 81,559 MiB, 79.6
  GiB usable; k3lite.analytic.hardware.GPU.capacity_words), so a
  capacity is stored in bytes as the datasheet's number times 2^30 and printed in GiB: `fmt_capacity`.
- "1M tokens" of context is 2^20 = 1,048,576 tokens (`ONE_M_CONTEXT`, as context windows are sized); a price
  "per M tokens" is per 10^6 tokens (`PER_M_TOKENS`, as price lists mean it).
The figures (k3lite.viz.style) re-export these.
"""
from __future__ import annotations

import math

ONE_M_CONTEXT = 1_048_576  # "1M tokens" of context: 2^20
PER_M_TOKENS = 1_000_000  # "$ per M tokens": 10^6
GIB = 2 ** 30

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


def fmt_capacity(n: float, digits: int = 3) -> str:
    """An HBM capacity (binary, as the datasheet means it) in GiB: 80 * 2**30 -> '80.0 GiB'."""
    if not math.isfinite(n) or n < 0:
        raise ValueError(f"a capacity must be finite and >= 0, got {n}")
    v = n / GIB
    decimals = max(0, digits - 1 - int(math.floor(math.log10(v)))) if v >= 1 else 2
    return f"{v:.{decimals}f} GiB"
