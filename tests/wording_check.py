"""The comparison-word check for computed sentences (k3lite.base.wording): run a sentence generator over a grid of
settings with recording on; every comparison word in what it returns must come from a recorded comparison whose
word agrees with its numbers."""
from __future__ import annotations

from k3lite.base.wording import recording, unexplained


def _text(out) -> str:
    if isinstance(out, str):
        return out
    if isinstance(out, (list, tuple)):
        return " ".join(_text(o) for o in out)
    if isinstance(out, dict):
        return " ".join(_text(v) for v in out.values())
    for name in ("sentence", "text"):  # a result object carrying its sentence
        if isinstance(getattr(out, name, None), str):
            return getattr(out, name)
    return ""


def wording_problems(generator, grid, allowed: tuple[str, ...] = ()) -> list[str]:
    """`generator(**settings)` for each settings dict in `grid`: the problems found, each with its settings."""
    problems = []
    for settings in grid:
        with recording() as made:
            out = generator(**settings)
        text = _text(out)
        assert text, f"{generator.__name__}({settings}) returned no sentence to check"
        problems += [f"{generator.__name__}({settings}): {p} in {text[:160]!r}" for p in unexplained(text, made, allowed)]
    return problems
