"""The pages' words at three levels: the sidebar's *Explain for* (views/levels.py; `?level=` in the URL).

    first      first look: no formulas, one idea per figure, an everyday analogy only where an honest one exists,
               the one number that matters (at most 150 visible words a page)
    engineer   the pages as they were written: the default, whose words stay in the pages' own panels
    paper      the technical report's equations (st.latex), each symbol mapped to the variable in the code, the
               citations (at most 600 visible words a page)

One module per page (`moe.py`, `kda.py`, `hybrid.py`, `attnres.py`): the same picture and controls at every level,
only the words change. A sentence that carries a number takes it from the same panel value or library function at
every level, with the same evidence classes. A displayed equation is a `Formula`: its LaTeX, its evaluator (the
formula written out in Python, as the LaTeX reads) and the library function the page's number comes from, in one
object, so a test evaluates what the page shows and compares it with what the code computes.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from k3lite.base.evidence import Evidence
from k3lite.base.wording import direction, times
from k3lite.panels.core import Pair, Panel, Said
from k3lite.viz.style import fmt_bytes

LEVELS = ("first", "engineer", "paper")
DEFAULT = "engineer"
LABELS = {"first": "first look", "engineer": "engineer", "paper": "paper"}


def pick(level: str, first, engineer, paper=None):
    """The text (or anything) for `level`: paper falls back to engineer's where a page has nothing more to say."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    return {"first": first, "engineer": engineer, "paper": engineer if paper is None else paper}[level]


@dataclass(frozen=True)
class Formula:
    """One displayed equation: what st.latex draws, each symbol with the code's name for it, the formula as Python
    (`evaluate`), the library function the page's number comes from (`code`, called on the same `inputs`: the
    page's numbers), the computed sentence under it (`says(value)`), its citation and evidence class."""

    latex: str
    symbols: tuple[tuple[str, str], ...]  # (LaTeX symbol, the variable or function in the code)
    evaluate: Callable[..., Any]  # the displayed formula, term by term (the claims test compares it with `code`)
    code: Callable[..., Any]  # what the page computes with; `value` comes from here, never from `evaluate`
    inputs: dict[str, Any]
    says: Callable[[Any], str]  # the sentence under the formula, from `value`
    cite: str
    evidence: Evidence

    @property
    def value(self):
        return self.code(**self.inputs)

    @property
    def text(self) -> str:
        return f"{self.says(self.value)} ({self.cite})"


def first_look_compare(level: str, panel: Panel, pair: Pair, key: str, what: str) -> Panel:
    """A page's comparison panel at first look: its figure, and one sentence with the number that matters for both
    models (the panel's own values `k3_<key>` and `other_<key>`, in bytes, with the panel's evidence); at the other
    levels the panel as it is."""
    if level != "first":
        return panel
    a, b = panel.values[f"k3_{key}"], panel.values[f"other_{key}"]
    k3, other = pair.k3_label, pair.label
    what = what[0].upper() + what[1:]
    if direction(a, b) == 0:
        text = f"{what}: **{fmt_bytes(a)}** for both {k3} and {other}; {other} differs elsewhere."
    else:
        text = f"{what}: **{fmt_bytes(a)}** for {k3}, {fmt_bytes(b)} for {other} ({times(a, b, 'more', 'less')})."
    return replace(panel, sentences=(Said(text, panel.sentences[0].evidence if panel.sentences else ()),))
