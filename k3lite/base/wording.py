"""Comparison words chosen from the numbers they compare, never written by hand.

A computed sentence that says "cheaper", "more", "faster" or "2.8x less" gets the word from `compare` or `times`,
so the word cannot disagree with the numbers: `times(0.5, 1.0, "cheaper", "dearer")` says "2.0x dearer", never
"0.5x cheaper". With `recording()` on (the tests), every word chosen is kept with its numbers, so a test can scan a
generated sentence and fail on a comparison word no recorded comparison produced (a hard-coded word that may
disagree with the numbers): tests/wording_check.py.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

# the words a test looks for in a computed sentence: each occurrence must come from a recorded comparison
COMPARISON_WORDS = ("cheaper", "dearer", "more", "less", "fewer", "faster", "slower", "beats",
                    "higher", "lower", "larger", "smaller", "bigger", "outperforms", "wins", "loses")


@dataclass(frozen=True)
class Comparison:
    a: float
    b: float
    word: str  # what was printed
    more: str
    less: str
    same: str
    rel_tol: float = 0.005  # what counted as "the same" when the word was chosen


_RECORD: ContextVar[list | None] = ContextVar("k3lite_wording_record", default=None)


@contextmanager
def recording():
    """Keep every comparison made inside (a list of Comparison), for a test to check the sentence against."""
    token = _RECORD.set([])
    try:
        yield _RECORD.get()
    finally:
        _RECORD.reset(token)


def _keep(c: Comparison) -> None:
    held = _RECORD.get()
    if held is not None:
        held.append(c)


def direction(a: float, b: float, rel_tol: float = 0.005) -> int:
    """+1 when a is above b by more than rel_tol (relative to the larger magnitude), -1 below, 0 within."""
    scale = max(abs(a), abs(b))
    if scale == 0 or abs(a - b) <= rel_tol * scale:
        return 0
    return 1 if a > b else -1


def compare(a: float, b: float, more: str, less: str, same: str = "about the same as", rel_tol: float = 0.005) -> str:
    """`more` when a > b, `less` when a < b, `same` within rel_tol: the word for "a is ___ b"."""
    word = {1: more, -1: less, 0: same}[direction(a, b, rel_tol)]
    _keep(Comparison(a, b, word, more, less, same, rel_tol))
    return word


def join_words(words: list[str]) -> str:
    """'a', 'a and b', 'a, b and c': a list of names in a sentence."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def times(a: float, b: float, more: str, less: str, same: str = "about the same", digits: int = 2,
          rel_tol: float = 0.005) -> str:
    """"2.8x more" / "2.8x less" (the larger over the smaller, so the factor is always >= 1), or `same`.
    E.g. times(cost_split, cost_alone, "dearer", "cheaper")."""
    if a < 0 or b < 0:
        raise ValueError(f"times compares non-negative amounts, got {a} and {b}")
    d = direction(a, b, rel_tol)
    if d == 0:
        word = same
    elif min(a, b) == 0:
        word = more if d > 0 else less
    else:
        word = f"{max(a, b) / min(a, b):.{digits}f}x {more if d > 0 else less}"
    _keep(Comparison(a, b, word, more, less, same, rel_tol))
    return word


def unexplained(text: str, made: list[Comparison], allowed: tuple[str, ...] = ()) -> list[str]:
    """The comparison words in `text` that no recorded comparison printed, and the recorded ones whose word
    disagrees with their numbers. `allowed`: fixed phrases a sentence may contain (e.g. "more than one")."""
    for phrase in allowed:
        text = text.replace(phrase, " ")
    budget: dict[str, int] = {}
    problems = []
    for c in made:
        d = direction(c.a, c.b, c.rel_tol)
        expect = {1: c.more, -1: c.less, 0: c.same}[d]
        if expect not in c.word and not (d == 0 and c.word == c.same):
            problems.append(f"{c.word!r} for {c.a:g} vs {c.b:g}")
        for w in COMPARISON_WORDS:
            budget[w] = budget.get(w, 0) + len(re.findall(rf"\b{w}\b", c.word))
    for w in COMPARISON_WORDS:
        n = len(re.findall(rf"\b{w}\b", text, flags=re.IGNORECASE))
        if n > budget.get(w, 0):
            problems.append(f"{w!r} appears {n}x, {budget.get(w, 0)}x from a comparison")
    return problems


def agreeing(a: float, b: float, ratio_digits: int = 1, decimals: int = 3, most: int = 12) -> tuple[str, str]:
    """a and b printed with the same number of decimals, `decimals` or as many more as it takes for the printed
    values to imply the printed ratio (max / min at `ratio_digits` decimals): agreeing(0.03505, 0.002384) ->
    ('0.03505', '0.00238'), not ('0.035', '0.002'), which imply 17.5x where the sentence says 14.7x. Both
    non-negative; a zero prints at `decimals`."""
    if a < 0 or b < 0:
        raise ValueError(f"agreeing prints non-negative amounts, got {a} and {b}")
    want = f"{max(a, b) / min(a, b):.{ratio_digits}f}" if min(a, b) > 0 else None
    for d in range(decimals, most + 1):
        sa, sb = f"{a:.{d}f}", f"{b:.{d}f}"
        lo = min(float(sa), float(sb))
        if want is None or (lo > 0 and f"{max(float(sa), float(sb)) / lo:.{ratio_digits}f}" == want):
            return sa, sb
    return sa, sb
