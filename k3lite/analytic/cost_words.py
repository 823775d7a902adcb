"""The cost page's sentences, built from the numbers of k3lite.analytic.cost: each comparison word ("9.2x cheaper",
"1.8x dearer", never "0.5x cheaper") comes from k3lite.base.wording, so it cannot disagree with the numbers.

- `comparison_sentence`: why K3 costs more or less per completed task than another model (price x turns / success);
- `break_even_sentence`: the success rate at which each model costs what K3 does;
- `split_sentence`: the planner/worker verdict and what erodes it (the share of the saving that remains only where
  there is a saving);
- `split_factor_words`: the split's metric label and value;
- `split_saving`: the headline the page's assumptions block moves each assumed input against.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from k3lite.analytic.cost import (
    PRICES, ModelPrice, Strategy, TaskProfile, analyze, break_even_success, planner_worker, savings, single_model,
    split_what_ifs,
)
from k3lite.base.sources import SPLIT_BAND
from k3lite.base.wording import compare, direction, times


def _times(a: float, b: float, more: str, less: str, same: str = "about the same") -> str:
    """wording.times with one decimal, two where one would print "1.0x" for a real difference."""
    ratio = max(a, b) / min(a, b) if min(a, b) > 0 else math.inf
    return times(a, b, more, less, same, digits=1 if ratio >= 1.1 else 2)


def _than(a: float, b: float, name: str, more: str = "dearer", less: str = "cheaper",
          same: str = "about as dear as") -> str:
    """"2.0x dearer than <name>" or "about as dear as <name>"."""
    word = _times(a, b, more, less, same="")
    return f"{word} than {name}" if word else f"{same} {name}"


def split_factor_words(factor: float) -> tuple[str, str]:
    """The cost page's metric for the split against the planner alone: ("split is cheaper by", "9.2x") or
    ("split is dearer by", "1.8x"), never "cheaper by 0.5x"."""
    word = compare(1.0, factor, "dearer", "cheaper", "about as dear")
    if word == "about as dear":
        return "split vs the planner alone", "about the same"
    return f"split is {word} by", _times(1.0, factor, "", "").strip()


class SplitNotice(NamedTuple):
    factor: float  # planner alone / split, $ per completed task (> 1: the split saves)
    headline: str  # the split against the planner alone, and the seed article's band
    what_ifs: str  # what erodes the saving, each what-if computed

    @property
    def sentence(self) -> str:
        return f"{self.headline} {self.what_ifs}".strip()


def split_sentence(planner: ModelPrice, worker: ModelPrice, profile: TaskProfile, planner_share: float,
                   planner_success: float, worker_success: float,
                   band: tuple[float, float] = SPLIT_BAND) -> SplitNotice:
    """The cost page's planner/worker verdict: how many times cheaper or dearer the split is than the planner
    alone, whether that is inside the seed article's band, and what halving the worker's success or giving the
    planner half the turns does to it. The share of the dollar saving that remains is said only where there is a
    saving to keep; a what-if that makes the split dearer than the planner alone says so instead."""
    factor, what_ifs = split_what_ifs(planner, worker, profile, planner_share, planner_success, worker_success)
    alone_a = analyze(single_model(planner, profile))
    split_a = analyze(planner_worker(planner, worker, profile, planner_share, planner_success, worker_success))
    alone, split = alone_a.per_completed_task, split_a.per_completed_task
    saves = direction(split, alone) < 0
    inside = "inside" if band[0] <= factor <= band[1] else "outside"
    headline = (f"At these settings the split is {_than(split, alone, planner.name + ' alone')} per completed "
                f"task, {inside} the seed article's ~{band[0]:g}-{band[1]:g}x band (directional, "
                "by its own account).")
    if not saves:  # why: the ratio per task is the ratio per attempt over the ratio of success rates
        headline = headline[:-1] + (
            f": per attempt it costs "
            f"{_than(split_a.per_attempt, alone_a.per_attempt, planner.name + ' alone', 'more', 'less', 'as much as')}"
            f" (${planner.input_per_m:.3g} / ${planner.output_per_m:.3g} per M against the "
            f"worker's ${worker.input_per_m:.3g} / ${worker.output_per_m:.3g}) and succeeds in "
            f"{100 * split_a.per_attempt / split_a.per_completed_task:.1f}% of attempts against "
            f"{100 * profile.success_rate:.0f}%.")
    parts = []
    for w in what_ifs:
        cost = alone / w.factor
        if saves and direction(cost, alone) < 0:
            text = (f"it is {_times(cost, alone, 'dearer', 'cheaper')} ({100 * w.kept:.0f}% of the dollar saving per "
                    "task remains)")
        else:
            text = f"it is {_than(cost, alone, planner.name + ' alone')}" + (": none of the saving remains" if saves else "")
        parts.append(f"with the {w.change} {text}")
    what = "; ".join(parts)
    return SplitNotice(factor, headline, (what[0].upper() + what[1:] + ".") if what else "")


def split_saving(planner: ModelPrice = PRICES["kimi-k3"], *, worker_input_per_m: float = 0.10,
                 worker_output_per_m: float = 0.40, worker_success: float = 0.80, planner_share: float = 0.075,
                 planner_success: float = 0.98, k3_success: float = 0.80, turns: float = 20.0,
                 input_tokens_per_turn: float = 20_000.0, output_tokens_per_turn: float = 1000.0,
                 cache_hit_rate: float = 0.5, turn_retry_rate: float = 0.05) -> float:
    """The cost page's headline for its assumptions block: how many times cheaper per completed task the
    planner/worker split is than the planner alone, from every assumed input. Shares and success rates moved
    past 1 (a +20% what-if of 98%) are held at 1."""
    def p(x: float) -> float:
        return min(float(x), 1.0)

    worker = ModelPrice("small worker", worker_input_per_m, worker_output_per_m, PRICES["small-worker"].cache_discount)
    profile = TaskProfile(turns=max(float(turns), 1.0), input_tokens_per_turn=input_tokens_per_turn,
                          output_tokens_per_turn=output_tokens_per_turn, success_rate=p(k3_success),
                          turn_retry_rate=turn_retry_rate, cache_hit_rate=p(cache_hit_rate))
    return savings(single_model(planner, profile),
                   planner_worker(planner, worker, profile, p(planner_share), p(planner_success), p(worker_success)))


def comparison_sentence(k3: Strategy, other: Strategy) -> str:
    """Why `k3` costs more or less per completed task than `other` (single-model strategies), from the numbers:
    $ per completed task = token price x turns / success, so the ratio is the product of those three ratios."""
    a_k3, a_o = analyze(k3), analyze(other)
    same_work = analyze(single_model(other.segments[0].model, k3.profile))  # other's prices, K3's turns
    turns = other.profile.turns / k3.profile.turns
    p_star = break_even_success(k3, other)
    text = (f"{other.name}: for the same turns K3's tokens are "
            f"{_times(a_k3.per_attempt, same_work.per_attempt, 'dearer', 'cheaper', 'about as dear')}; {other.name} "
            + (f"takes {turns:.2g}x K3's turns and " if abs(turns - 1) > 1e-9 else "takes as many turns and ")
            + f"succeeds in {100 * other.profile.success_rate:.0f}% of attempts (K3: {100 * k3.profile.success_rate:.0f}%),"
            f" so per completed task K3 is "
            f"{_times(a_k3.per_completed_task, a_o.per_completed_task, 'dearer', 'cheaper', 'about as dear')}")
    if p_star > 1:
        return text + f"; {other.name} could not match K3 even if it never failed (it would need {100 * p_star:.0f}%)."
    if p_star > 0.005:
        return text + f"; the two cost the same per task where {other.name} succeeds in {100 * p_star:.0f}% of attempts."
    return text + "."


def break_even_sentence(k3: Strategy, others: list[Strategy]) -> str:
    """The side-by-side's 'what to notice': each model's break-even success against K3, and where its success
    in the table puts it."""
    parts = []
    for o in others:
        p_star = break_even_success(k3, o)
        here = analyze(o).per_completed_task / analyze(k3).per_completed_task
        parts.append(f"{o.name} breaks even with K3 at {100 * p_star:.0f}% success per attempt (the table gives it "
                     f"{100 * o.profile.success_rate:.0f}%, so per completed task it is {_than(here, 1.0, 'K3')})")
    return "What to notice: " + "; ".join(parts) + (
        ". Computed: $ per attempt = turns / (1 - re-sent share) x $ per call; $ per completed task = that / success.")


def fmt_factor(v: float) -> str:
    """The assumptions block's format for the split's saving: '9.2x'."""
    return f"{v:.1f}x"
