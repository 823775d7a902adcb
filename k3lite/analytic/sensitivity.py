"""Which assumption a page's headline number leans on most: move each assumed input by ±20% and rank the swings.

A page lists the inputs it assumes (`Assumption`: a value, why it is that, where to change it) and a function that
computes its headline number from them; `swings` reruns that function with each input at 0.8x and 1.2x, the others
at their values, and `most_sensitive_sentence` names the input whose swing is widest. A one-at-a-time (tornado)
ranking: it says which single assumption to check first, not how they interact.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Assumption:
    """One assumed input: its `key` (the headline function's argument), a readable name, its value, why we chose
    it, and where a reader changes it (a control's label, or 'not adjustable here')."""

    key: str
    name: str
    value: float
    why: str
    change: str = "not adjustable here"
    unit: str = ""


@dataclass(frozen=True)
class Swing:
    name: str
    value: float
    low: float  # the headline with this input at (1 - rel) x
    high: float  # ... at (1 + rel) x
    base: float

    @property
    def width(self) -> float:
        """|high - low| / |base|: the headline's relative swing. A side outside the input's valid range (nan) counts
        as the other side mirrored; a side out of reach (inf), as infinite."""
        low, high = self.low, self.high
        if math.isnan(low) and math.isnan(high):
            return 0.0
        if math.isnan(low):
            low = 2 * self.base - high
        if math.isnan(high):
            high = 2 * self.base - low
        if self.base == 0 or not all(map(math.isfinite, (low, high, self.base))):
            return float("inf")
        return abs(high - low) / abs(self.base)


def swings(headline: Callable[..., float], assumptions: list[Assumption], rel: float = 0.2) -> list[Swing]:
    """Each assumption's swing of `headline(**values)`, widest first. `headline` takes every assumption's `key`."""
    if not assumptions:
        raise ValueError("sensitivity needs at least one assumption")
    if not 0 < rel < 1:
        raise ValueError(f"the relative move must be in (0, 1), got {rel}")
    values = {a.key: a.value for a in assumptions}
    if len(values) != len(assumptions):
        raise ValueError("assumption keys must be unique")
    base = float(headline(**values))

    def moved(key: str, value: float) -> float:
        try:
            return float(headline(**{**values, key: value}))
        except ValueError:  # the moved input left its valid range (a rate above 1, say): that side has no value
            return float("nan")

    out = [Swing(a.name, a.value, moved(a.key, a.value * (1 - rel)), moved(a.key, a.value * (1 + rel)), base)
           for a in assumptions]
    return sorted(out, key=lambda s: -s.width)


def most_sensitive_sentence(headline_name: str, ranked: list[Swing], fmt: Callable[[float], str],
                            rel: float = 0.2) -> str:
    """'The headline ($x) moves most with <name>: ±20% in it gives $a to $b (±w%); next, <name2> (±w2%).'"""
    if not ranked:
        raise ValueError("no swings to rank")
    top = ranked[0]
    shown = [v for v in (top.low, top.high) if not math.isnan(v)]
    if len(shown) == 2:
        lo, hi = sorted(shown, key=lambda v: (math.isinf(v), v))
        gives = f"±{rel:.0%} in it gives {fmt(lo)} to {fmt(hi)}"
    else:
        side = "+" if math.isnan(top.high) else "−"
        gives = (f"{'−' if side == '+' else '+'}{rel:.0%} in it gives {fmt(shown[0])} ({side}{rel:.0%} leaves its "
                 f"valid range)" if shown else "either move leaves its valid range")
    text = f"{headline_name} ({fmt(top.base)}) moves most with **{top.name}**: {gives} ({_spread(top)})"
    if len(ranked) > 1:
        nxt = ranked[1]
        text += f"; next comes {nxt.name} ({_spread(nxt)})"
    return text + "."


def _spread(s: Swing) -> str:
    if not math.isfinite(s.width):
        return "one side out of reach"
    return f"a {s.width:.0%} spread"
