"""Evidence classes: what kind of evidence each number the app shows is, in one small vocabulary.

- released: K3's config.json, modeling code, checkpoint index or technical report (or another model's release);
- measured here: ran on this server or in a shipped run, with its command;
- measured elsewhere: a cited source's measurement (a report's figure, a benchmark row);
- listed: a list price (a provider's price list, a quoted GPU-hour rental rate): neither a measurement nor a release;
- derived: computed here from other numbers by a named function;
- assumed: ours (prices, efficiencies, workloads).

The class follows from what produced a number, not from a per-call choice: a price table's row, a provider row,
a report quote and a hardware row each carry their class as data (`of_source`), and a function's output is derived.

A page shows the class as a quiet superscript letter (a footnote mark, in every common font) after a metric's label, a table column's name or in a figure's
hover, with the source in the tooltip (views.common.metric / table, k3lite.viz.style.with_evidence). The sidebar
carries the legend (LEGEND).
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

KINDS = ("released", "measured here", "measured elsewhere", "listed", "derived", "assumed")
MARKERS = {"released": "ʳ", "measured here": "ᵐ", "measured elsewhere": "ᵉ", "listed": "ˡ", "derived": "ᵈ", "assumed": "ᵃ"}
MEANING = {
    "released": "from K3's (or another model's) released config, code, checkpoint index or report",
    "measured here": "ran on this server or in a shipped run of this app, with its command",
    "measured elsewhere": "a cited source's measurement (a report's figure, a benchmark row)",
    "listed": "a list price: a provider's price list or a quoted GPU-hour rate",
    "derived": "computed here from other numbers by a named function",
    "assumed": "our own choice: a price, an efficiency, a workload",
}
LEGEND = " · ".join(f"{MARKERS[k]} {k}" for k in KINDS)


@dataclass(frozen=True)
class Evidence:
    """One number's evidence class and where it comes from (a file, a command, a citation or a function)."""

    kind: str
    source: str

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"evidence kind must be one of {KINDS}, got {self.kind!r}")
        if not self.source.strip():
            raise ValueError("evidence needs a source (a file, a command, a citation or a function)")

    @property
    def marker(self) -> str:
        return MARKERS[self.kind]

    @property
    def note(self) -> str:
        """'derived: k3lite.analytic.ledger.ledger' — the tooltip's first line."""
        return f"{self.marker} {self.kind}: {self.source}"


def _name(fn) -> str:
    if isinstance(fn, str):
        return fn
    fn = inspect.unwrap(fn)
    return f"{fn.__module__}.{fn.__qualname__}"


def released(source: str) -> Evidence:
    return Evidence("released", source)


def measured_here(command: str) -> Evidence:
    return Evidence("measured here", command)


def measured_elsewhere(citation: str) -> Evidence:
    return Evidence("measured elsewhere", citation)


def listed(source: str) -> Evidence:
    """A list price (a provider's price list, a quoted GPU-hour rental rate), with where it was read."""
    return Evidence("listed", source)


def derived(*functions) -> Evidence:
    """Computed by the named function(s) (callables or dotted names)."""
    if not functions:
        raise ValueError("derived evidence names the function that computes it")
    return Evidence("derived", ", ".join(_name(f) for f in functions))


def assumed(why: str) -> Evidence:
    return Evidence("assumed", why)


def kind_of(text: str) -> str | None:
    """The evidence kind a label, a column name or a hover text carries (by its marker), or None."""
    return next((k for k in KINDS if MARKERS[k] in text), None)


_NUMBER = re.compile(r"^\s*[~≈<>+−-]?\s*\$?\s*\d[\d,]*(\.\d+)?")


def looks_numeric(cells) -> bool:
    """Whether a table column holds numbers printed as text ("$1.23", "4.5x", "12 GB", "98%"): most of its
    non-empty cells start with one."""
    shown = [str(v) for v in cells if v is not None and str(v).strip() not in ("", "—", "-", "nan", "None")]
    return bool(shown) and sum(bool(_NUMBER.match(c)) for c in shown) > len(shown) / 2
