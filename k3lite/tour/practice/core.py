"""What a practice problem is, how an answer is checked, and the teacher's key.

A `Problem` draws an `Instance` from a seed: its own numbers (from `random.Random(f"{id}:{seed}")`, so a class link
`?set=<name>&seed=<n>` gives every student the same numbers for the same seed), the question, the answer computed
by the library function the page that shows it calls, a relative tolerance, a hint (that page, at that setting, as
a link) and a worked solution whose last line is the answer and whose `code` recomputes it.
No Streamlit here: views/practice.py and views.common.try_it draw it; the tests call `draw` and `check`.
"""
from __future__ import annotations

import csv
import io
import math
import random
import re
from dataclasses import dataclass, field, replace
from typing import Callable
from urllib.parse import urlencode

from k3lite.base.evidence import Evidence

KINDS = ("compute", "predict", "read")
KIND_WORDS = {"compute": "compute a number", "predict": "predict, then check", "read": "read the picture"}


def num(x: float) -> str:
    """A number as the solutions print it: 4 significant digits, thousands separated ("12,345", "0.01234")."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if x == round(x):
        return f"{x:.0f}"
    digits = max(0, 3 - math.floor(math.log10(abs(x))))
    return f"{x:.{digits}f}"


def with_unit(x: float, unit: str) -> str:
    return f"${num(x)}" if unit == "$" else f"{num(x)} {unit}".strip()


@dataclass(frozen=True)
class Instance:
    """One drawn problem: what the student sees, and what the check and the solution use."""

    question: str  # markdown; every drawn number appears in it
    answer: float | str  # a number, or the right choice's text
    unit: str  # the unit the answer is asked in ("" for a choice)
    tolerance: float  # relative: a number within answer x (1 ± tolerance) is right (0 for a choice)
    hint: str  # what to look at, in words
    hint_page: str  # url_path of the page that shows it (views/registry.py)
    hint_query: dict  # that page's url_state keys at the drawn setting
    steps: tuple[str, ...]  # the worked solution, markdown; the last step states the answer
    code: str  # Python that recomputes the answer with the library (sets `answer`); shown with the solution
    given: dict  # the drawn numbers, by name (checked against the problem's ranges)
    evidence: Evidence  # of the answer (derived(the library function), or measured here for shipped runs)
    choices: tuple[str, ...] = ()
    figure: tuple | None = None  # read-the-picture: (builder, args) for k3lite.viz.memo.shared_figure
    pages: tuple[str, ...] = ()  # every page the problem needs (two for the two-page problems)

    @property
    def is_choice(self) -> bool:
        return bool(self.choices)

    @property
    def answer_text(self) -> str:
        return str(self.answer) if self.is_choice else with_unit(float(self.answer), self.unit)

    @property
    def hint_link(self) -> str:
        """A relative link that opens the hint's page at the drawn setting."""
        return f"{self.hint_page}?{urlencode(self.hint_query)}" if self.hint_query else self.hint_page


@dataclass(frozen=True)
class Problem:
    id: str  # stable: a class link and the teacher's key name it
    topic: str  # url_path of its mechanism page (TOPICS)
    kind: str  # KINDS
    difficulty: int  # 1 (one lookup) .. 3 (several steps or two pages)
    title: str
    make: Callable[[random.Random], Instance]
    ranges: dict = field(default_factory=dict)  # given name -> (lo, hi): where the drawn numbers may fall

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.difficulty not in (1, 2, 3):
            raise ValueError(f"difficulty must be 1, 2 or 3, got {self.difficulty!r}")

    def draw(self, seed: int) -> Instance:
        """The instance for `seed`: the same numbers for the same (problem, seed), anywhere."""
        inst = self.make(random.Random(f"{self.id}:{seed}"))
        return inst if inst.pages else _with_pages(inst)


def _with_pages(inst: Instance) -> Instance:
    return replace(inst, pages=(inst.hint_page,))


def final(answer: float | str, unit: str = "") -> str:
    """The solution's last step: the answer as the check compares it."""
    shown = answer if isinstance(answer, str) else with_unit(answer, unit)
    return f"**Answer: {shown}**"


# ------------------------------------------------------------------------------------------ checking an answer
class Verdict(tuple):
    """(right, text): whether the answer is accepted, and how far off it is, in words."""

    def __new__(cls, right: bool, text: str):
        return super().__new__(cls, (right, text))

    @property
    def right(self) -> bool:
        return self[0]

    @property
    def text(self) -> str:
        return self[1]


def relative_error(guess: float, answer: float) -> float:
    """(guess - answer) / |answer|; inf when the answer is 0 and the guess is not."""
    if answer == 0:
        return 0.0 if guess == 0 else math.inf
    return (guess - answer) / abs(answer)


def check(inst: Instance, guess) -> Verdict:
    """Whether `guess` is right (a number within the tolerance, or the right choice) and how far off it is."""
    if inst.is_choice:
        if guess == inst.answer:
            return Verdict(True, f"Right: {inst.answer}.")
        return Verdict(False, f"Not {guess!r}. Look again, or open the hint.")
    guess, answer = float(guess), float(inst.answer)
    err = relative_error(guess, answer)
    band = f"within {100 * inst.tolerance:g}%"
    said = f"${guess:g}" if inst.unit == "$" else f"{guess:g} {inst.unit}".strip()
    if abs(err) <= inst.tolerance * (1 + 1e-9):
        return Verdict(True, f"Right: {said} is {band} of the computed answer.")
    if guess != 0 and answer != 0 and (guess / answer >= 2 or guess / answer <= 0.5):
        factor = guess / answer
        word = "high" if abs(factor) > 1 else "low"
        far = f"{max(abs(factor), 1 / abs(factor)):.1f}x too {word}" if factor > 0 else "the wrong sign"
    else:
        far = f"{off_percent(err, inst.tolerance)}% too {'high' if err > 0 else 'low'}" if math.isfinite(err) \
            else "off"
    return Verdict(False, f"Not yet: {said} is {far} (the check accepts {band}).")


def off_percent(err: float, tolerance: float) -> str:
    """|err| in percent, with as many decimals as it takes to read as outside the band: a 2.2% miss of a 2% band
    is "2.2", never "2"."""
    for digits in range(4):
        text = f"{100 * abs(err):.{digits}f}"
        if float(text) > 100 * tolerance * (1 + 1e-9):
            return text
    return f"{100 * abs(err):.4g}"


# ------------------------------------------------------------------------------------------ the solution's number
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")


def last_number(text: str) -> float | None:
    """The last number written in `text` (commas as thousands separators), or None."""
    found = _NUMBER.findall(text)
    return float(found[-1].replace(",", "")) if found else None


# ------------------------------------------------------------------------------------------ class links and the key
MAX_SEEDS = 500


def parse_seeds(text: str) -> list[int]:
    """"1-30, 45, 50-52" -> [1, ..., 30, 45, 50, 51, 52] (in order, no repeats); ValueError on anything else."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.replace(";", ",").split(",")):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\s*(?:-\s*(\d+))?", part)
        if not m:
            raise ValueError(f"seeds are numbers or ranges like 1-30, got {part!r}")
        lo, hi = int(m[1]), int(m[2] or m[1])
        if hi < lo:
            raise ValueError(f"a range runs low to high, got {part!r}")
        if hi - lo + len(seeds) >= MAX_SEEDS:
            raise ValueError(f"at most {MAX_SEEDS} seeds at once")
        seeds += [s for s in range(lo, hi + 1) if s not in seeds]
    if not seeds:
        raise ValueError("no seeds given: write e.g. 1-30")
    return seeds


def class_link(set_name: str, seed: int, teacher: bool | str = False, *, difficulty: int | None = None,
               problems=None, base: str = "practice", **extra) -> str:
    """The link a teacher shares: every student opens the set with their own seed, at the teacher's difficulty,
    only the problems the teacher chose (`problems`: ids, kept in the link as `pr_only`). `extra`: more query keys
    (a homework's class id and tries). `teacher`: True adds `key=1`, a token adds `teacher=<token>`."""
    query = {"set": set_name, "seed": seed, **({"pr_difficulty": difficulty} if difficulty else {}),
             **({"pr_only": ",".join(p if isinstance(p, str) else p.id for p in problems)} if problems else {}),
             **extra, **({"teacher": teacher} if isinstance(teacher, str) else {"key": 1} if teacher else {})}
    return f"{base}?{urlencode(query)}"


def answer_key(problems, seeds: list[int], numbers: list[int] | None = None, draw_seed=None) -> list[dict]:
    """One row per (seed, problem): the question's number in the set (`numbers`, default 1, 2, ...), its text and
    the answer as the check takes it. `draw_seed(seed)`: the seed the numbers are drawn at (a homework's own)."""
    rows = []
    numbers = numbers or list(range(1, len(problems) + 1))
    for seed in seeds:
        for i, p in zip(numbers, problems):
            inst = p.draw(draw_seed(seed) if draw_seed else seed)
            rows.append({"seed": seed, "question": i, "problem": p.title, "question text": inst.question,
                         "answer": inst.answer if inst.is_choice else float(f"{float(inst.answer):.6g}"),
                         "unit": inst.unit, "tolerance (%)": 100 * inst.tolerance, "id": p.id})
    return rows


def key_csv(rows: list[dict]) -> str:
    """The key as CSV text (st.download_button's data)."""
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out.getvalue()
