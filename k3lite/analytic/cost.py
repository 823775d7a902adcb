"""Cost per completed task, not per token.

An agentic task is an *attempt* of several turns (calls). Each call pays for its input tokens (the
re-sent context; the part served from the provider's prompt cache is discounted) and its output tokens.
A call that fails (malformed tool call, timeout) is re-sent; an attempt that does not solve the task is
retried from scratch, up to `max_attempts`. Per call, per attempt, per completed task:

    call   = in * ((1 - h) * P_in + h * P_in * (1 - cache_discount)) / 1e6 + out * P_out / 1e6      [$]
    attempt = sum over segments of  turns / (1 - r) * call(segment's model)       r = turn retry rate
    completed task = attempt / p                                                  p = success per attempt

The last line holds with or without the attempt cap: a task abandoned after `max_attempts` still cost
money, and E[spend per task] / P(completed) = attempt * (1 - (1-p)^A)/p / (1 - (1-p)^A) = attempt / p.
So a model that is cheaper per token but needs more turns or succeeds less often can cost more per task.

A planner/worker split runs a few planning turns on a big model and the rest on a small worker; an
attempt succeeds only if both parts do (p = p_planner * p_worker) and is retried whole. The seed article
(a third-party blog post) credits such a split with ~9-10x savings from "reported experiments" and calls the figure
directional (`k3lite.base.sources`); `planner_worker` lets you see
which assumptions give that and which do not. `simulate` draws the whole distribution (Monte-Carlo, seeded).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from k3lite.base.evidence import Evidence
from k3lite.base.sources import K3_PRICE
from k3lite.model.cards import display_name


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def _finite(name: str, value: float) -> None:
    _check(isinstance(value, (int, float)) and math.isfinite(value), f"{name} must be a finite number, got {value!r}")


# ------------------------------------------------------------------------------------------ prices
@dataclass(frozen=True)
class ModelPrice:
    """$ per million tokens; cache hits pay input * (1 - cache_discount)."""

    name: str
    input_per_m: float
    output_per_m: float
    cache_discount: float = 0.75  # fraction off the input price for prompt-cache hits
    source: str = ""
    kind: str = "assumed"  # its evidence class (k3lite.base.evidence): "listed" for a price list's row, "derived"
    # for one computed by serving physics, "assumed" for ours or the reader's

    @property
    def evidence(self) -> Evidence:
        """The class this price carries on every page: listed (a price list) or assumed (ours), with its source."""
        return Evidence(self.kind, f"{self.name}: {self.source or 'no source given'}")

    def __post_init__(self) -> None:
        for field in ("input_per_m", "output_per_m", "cache_discount"):
            _finite(f"{self.name}: {field}", getattr(self, field))
        _check(self.input_per_m >= 0 and self.output_per_m >= 0, f"{self.name}: prices must be >= 0 $ per M tokens")
        _check(0 <= self.cache_discount <= 1, f"{self.name}: cache_discount must be in [0, 1], got {self.cache_discount}")

    def call_cost(self, input_tokens: float, output_tokens: float, cache_hit_rate: float) -> float:
        """$ for one call."""
        cached = input_tokens * cache_hit_rate
        return ((input_tokens - cached) * self.input_per_m + cached * self.input_per_m * (1 - self.cache_discount)
                + output_tokens * self.output_per_m) / 1e6


PRICES: dict[str, ModelPrice] = {
    "kimi-k3": ModelPrice(display_name("kimi-k3"), 3.00, 15.00, 1 - 0.30 / 3.00,
                          f"{K3_PRICE}; flat, no context-length tiers", kind="listed"),
    "kimi-k2": ModelPrice(display_name("kimi-k2"), 0.60, 2.50, 0.75,
                          "Moonshot AI platform price list at the K2 launch (July 2025): $0.60 input (cache miss), "
                          "$0.15 (cache hit), $2.50 output per M tokens", kind="listed"),
    "deepseek-v3": ModelPrice(display_name("deepseek-v3"), 0.27, 1.10, 0.74,
                              "DeepSeek API pricing page, deepseek-chat standard rate (2025): $0.27 input (cache "
                              "miss), $0.07 (cache hit), $1.10 output per M tokens", kind="listed"),
    "small-worker": ModelPrice("small worker (assumed)", 0.10, 0.40, 0.75,
                               "a hypothetical small worker model at $0.10 / $0.40 per M tokens: OUR assumption, "
                               "not a listed price", kind="assumed"),
}


# ------------------------------------------------------------------------------------------ tasks
@dataclass(frozen=True)
class TaskProfile:
    """What one attempt at a task looks like (the same for every model unless you change it)."""

    turns: float = 20.0  # calls per attempt
    input_tokens_per_turn: float = 20_000.0  # incl. the re-sent context
    output_tokens_per_turn: float = 1_000.0
    success_rate: float = 0.8  # P(one attempt solves the task)
    turn_retry_rate: float = 0.05  # fraction of calls that fail and are re-sent
    cache_hit_rate: float = 0.5  # fraction of input tokens served from the prompt cache
    max_attempts: int = 3  # attempts before the task is abandoned (affects completion, not $/completed)

    def __post_init__(self) -> None:
        for field in ("turns", "input_tokens_per_turn", "output_tokens_per_turn", "success_rate",
                      "turn_retry_rate", "cache_hit_rate"):
            _finite(field, getattr(self, field))
        _check(self.turns >= 1, f"turns must be >= 1 per attempt, got {self.turns}")
        _check(self.input_tokens_per_turn >= 0 and self.output_tokens_per_turn >= 0, "tokens per turn must be >= 0")
        _check(self.success_rate > 0, f"success_rate must be > 0: a task that never succeeds has no finite cost "
                                      f"per completed task (got {self.success_rate})")
        _check(self.success_rate <= 1, f"success_rate must be <= 1, got {self.success_rate}")
        _check(0 <= self.turn_retry_rate < 1, f"turn_retry_rate must be in [0, 1): at 1 no call ever succeeds "
                                              f"(got {self.turn_retry_rate})")
        _check(0 <= self.cache_hit_rate <= 1, f"cache_hit_rate must be in [0, 1], got {self.cache_hit_rate}")
        _check(isinstance(self.max_attempts, int) and self.max_attempts >= 1,
               f"max_attempts must be an integer >= 1, got {self.max_attempts!r}")

    def with_(self, **changes) -> "TaskProfile":
        return replace(self, **changes)


class Segment(NamedTuple):
    model: ModelPrice
    turns: float  # calls of this model per attempt
    input_tokens_per_turn: float
    output_tokens_per_turn: float


class Strategy(NamedTuple):
    """How a task is attempted: which models do which turns, and how often an attempt succeeds."""

    name: str
    segments: tuple[Segment, ...]
    profile: TaskProfile  # success_rate here is the *attempt's* success (planner x worker for a split)


def single_model(model: ModelPrice, profile: TaskProfile) -> Strategy:
    seg = Segment(model, profile.turns, profile.input_tokens_per_turn, profile.output_tokens_per_turn)
    return Strategy(model.name, (seg,), profile)


def planner_worker(planner: ModelPrice, worker: ModelPrice, profile: TaskProfile, planner_share: float = 0.075,
                   planner_success: float = 0.98, worker_success: float = 0.8) -> Strategy:
    """The big model does `planner_share` of the turns (the plan, the checks), the worker the rest.

    An attempt succeeds with p = planner_success * worker_success and is retried whole.
    """
    for name, value in (("planner_share", planner_share), ("planner_success", planner_success),
                        ("worker_success", worker_success)):
        _finite(name, value)
    _check(0 < planner_share <= 1, f"planner_share must be in (0, 1], got {planner_share}")
    _check(0 < planner_success <= 1, f"planner_success must be in (0, 1], got {planner_success}")
    _check(0 < worker_success <= 1, f"worker_success must be in (0, 1]: a worker that never succeeds makes the "
                                    f"split's cost per task infinite (got {worker_success})")
    t, i, o = profile.turns, profile.input_tokens_per_turn, profile.output_tokens_per_turn
    segs = (Segment(planner, t * planner_share, i, o), Segment(worker, t * (1 - planner_share), i, o))
    return Strategy(f"{planner.name} plans + {worker.name} works", segs,
                    profile.with_(success_rate=planner_success * worker_success))


class Scenario(NamedTuple):
    """A named set of per-model assumptions for the side-by-side: success per attempt and turns per attempt of each
    listed model, relative to K3's (the page's sliders). A model not named gets K3's values."""

    label: str
    success: dict[str, float]  # PRICES key -> success per attempt (absolute)
    turns_factor: dict[str, float]  # PRICES key -> turns per attempt as a multiple of K3's
    note: str  # where the numbers come from


_ARTICLE_SUCCESS = {"kimi-k2": 0.60, "deepseek-v3": 0.50}  # OUR illustration of the article's argument
_ARTICLE_TURNS = {"kimi-k2": 1.5, "deepseek-v3": 2.0}  # turns per attempt as a multiple of K3's
SCENARIOS: dict[str, Scenario] = {
    "equal": Scenario(
        "equal everything", {}, {},
        "every model gets K3's success per attempt and turns (the sliders), so the comparison is of token prices "
        "alone"),
    "article": Scenario(
        "the article's scenario", _ARTICLE_SUCCESS, _ARTICLE_TURNS,
        "the seed article (a third-party blog post) prices K3 at $3 / $15 per M input / output tokens and argues "
        "per finished task: a stronger model needs fewer turns and fails less often. It gives no success rates or "
        "turn counts per model; the values here ("
        + "; ".join(f"{PRICES[k].name}: {100 * _ARTICLE_SUCCESS[k]:.0f}% success in {_ARTICLE_TURNS[k]:g}x K3's turns"
                    for k in _ARTICLE_SUCCESS)
        + ") are OUR illustration of that argument, not its numbers"),
}


# ------------------------------------------------------------------------------------------ analytic
class CostBreakdown(NamedTuple):
    name: str
    per_attempt: float  # $
    per_completed_task: float  # $ = per_attempt / success_rate
    completion_rate: float  # P(task done within max_attempts)
    expected_attempts: float  # per started task (capped)
    input_cost: float  # $ per completed task: uncached input
    cached_input_cost: float  # $ per completed task: cache hits
    output_cost: float  # $ per completed task
    tokens_per_completed_task: float
    per_m_tokens: float  # blended $ per M tokens: what a per-token price tag hides

    def row(self) -> dict:
        return {"strategy": self.name, "$ / attempt": round(self.per_attempt, 4),
                "$ / completed task": round(self.per_completed_task, 4),
                "completion rate (%)": round(100 * self.completion_rate, 1),
                "attempts / task": round(self.expected_attempts, 3),
                "tokens / completed task (k)": round(self.tokens_per_completed_task / 1e3, 1),
                "blended $ / M tokens": round(self.per_m_tokens, 3)}


def analyze(strategy: Strategy) -> CostBreakdown:
    p = strategy.profile
    calls = 1 / (1 - p.turn_retry_rate)  # expected calls per turn (geometric)
    inp = cached = out = tokens = 0.0
    for seg in strategy.segments:
        n = seg.turns * calls
        hit = seg.input_tokens_per_turn * p.cache_hit_rate
        inp += n * (seg.input_tokens_per_turn - hit) * seg.model.input_per_m / 1e6
        cached += n * hit * seg.model.input_per_m * (1 - seg.model.cache_discount) / 1e6
        out += n * seg.output_tokens_per_turn * seg.model.output_per_m / 1e6
        tokens += n * (seg.input_tokens_per_turn + seg.output_tokens_per_turn)
    per_attempt = inp + cached + out
    s = p.success_rate
    completion = 1 - (1 - s) ** p.max_attempts
    attempts = completion / s  # sum_{i<A} (1-s)^i
    per_m = per_attempt / tokens * 1e6 if tokens else 0.0
    return CostBreakdown(strategy.name, per_attempt, per_attempt / s, completion, attempts, inp / s, cached / s,
                         out / s, tokens / s, per_m)


def savings(single: Strategy, split: Strategy) -> float:
    """How many times cheaper per completed task the split is (> 1 = the split wins)."""
    return analyze(single).per_completed_task / analyze(split).per_completed_task


def savings_curve(planner: ModelPrice, worker: ModelPrice, profile: TaskProfile, worker_successes,
                  planner_share: float = 0.075, planner_success: float = 0.98) -> np.ndarray:
    """Savings factor vs the planner model alone, for each worker success rate."""
    single = single_model(planner, profile)
    return np.array([savings(single, planner_worker(planner, worker, profile, planner_share, planner_success, w))
                     for w in worker_successes])


class SplitWhatIf(NamedTuple):
    """How much of the planner/worker saving survives a change: factor = x cheaper than the planner alone,
    kept = share of the dollar saving per completed task that remains (1 = all of it, 0 = none, < 0 = dearer)."""

    change: str
    factor: float
    kept: float


def split_what_ifs(planner: ModelPrice, worker: ModelPrice, profile: TaskProfile, planner_share: float,
                   planner_success: float, worker_success: float) -> tuple[float, list[SplitWhatIf]]:
    """(factor at these settings, [halved worker success, planner doing half the turns (when it does less)]): the
    cost page's sentence about what erodes the split's saving, computed instead of asserted."""
    alone = analyze(single_model(planner, profile)).per_completed_task
    base = analyze(planner_worker(planner, worker, profile, planner_share, planner_success,
                                  worker_success)).per_completed_task
    changes = [(f"worker success halved to {100 * worker_success / 2:.0f}%", planner_share, worker_success / 2)]
    if planner_share < 0.5:
        changes.append(("planner doing half the turns", 0.5, worker_success))
    out = []
    for change, share, w in changes:
        split = analyze(planner_worker(planner, worker, profile, share, planner_success, w)).per_completed_task
        kept = (alone - split) / (alone - base) if alone != base else float("nan")
        out.append(SplitWhatIf(change, alone / split, kept))
    return alone / base, out


def break_even_success(reference: Strategy, other: Strategy) -> float:
    """Success per attempt `other` needs to cost the same per completed task as `reference`.

    p* = p_ref * attempt_other / attempt_ref  (> 1 means `other` cannot break even even when it never fails).
    """
    return reference.profile.success_rate * analyze(other).per_attempt / analyze(reference).per_attempt


# ------------------------------------------------------------------------------------------ Monte-Carlo
class CostSamples(NamedTuple):
    name: str
    cost: np.ndarray  # (n,) $ spent on each task (all its attempts)
    completed: np.ndarray  # (n,) bool
    attempts: np.ndarray  # (n,) int

    @property
    def per_completed_task(self) -> float:
        """Total spend / tasks completed (the Monte-Carlo estimate of the analytic number)."""
        done = int(self.completed.sum())
        return float(self.cost.sum() / done) if done else math.inf

    def percentiles(self, qs=(50, 90, 99)) -> dict[int, float]:
        return {q: float(np.percentile(self.cost, q)) for q in qs}


def simulate(strategy: Strategy, n_tasks: int = 20_000, seed: int = 0, token_cv: float = 0.3) -> CostSamples:
    """Draw n tasks: turns ~ 1 + Poisson(turns - 1) per segment, calls per turn ~ Geometric(1 - r),
    tokens per call ~ Gamma(mean, cv), success ~ Bernoulli(p) per attempt, at most max_attempts.

    Means match `analyze` exactly, so cost.sum() / completed.sum() -> per_completed_task as n grows.
    """
    _check(isinstance(n_tasks, int) and 1 <= n_tasks <= 1_000_000, f"n_tasks must be in [1, 1e6], got {n_tasks}")
    _finite("token_cv", token_cv)
    _check(0 <= token_cv <= 3, f"token_cv must be in [0, 3], got {token_cv}")
    p = strategy.profile
    rng = np.random.default_rng(seed)
    a = p.max_attempts
    success = rng.random((n_tasks, a)) < p.success_rate  # (n, A)
    first = np.where(success.any(1), success.argmax(1) + 1, a)  # attempts used
    used = np.arange(a)[None, :] < first[:, None]  # (n, A) attempts that ran
    cost = np.zeros((n_tasks, a))
    shape = 1 / token_cv**2 if token_cv > 0 else None  # Gamma shape for the wanted coefficient of variation
    for seg in strategy.segments:
        if seg.turns >= 1:
            turns = 1 + rng.poisson(seg.turns - 1, (n_tasks, a))  # (n, A), mean seg.turns
        else:  # a planner share below one turn per attempt: Poisson keeps the mean
            turns = rng.poisson(seg.turns, (n_tasks, a))
        failures = rng.negative_binomial(turns.clip(min=1), 1 - p.turn_retry_rate) * (turns > 0)  # re-sent calls
        calls = (turns + failures).astype(float)  # (n, A), mean turns / (1 - r)
        in_tok = _gamma_sum(rng, seg.input_tokens_per_turn, shape, calls)
        out_tok = _gamma_sum(rng, seg.output_tokens_per_turn, shape, calls)
        cost += seg.model.call_cost(in_tok, out_tok, p.cache_hit_rate)  # linear in tokens: sums are fine
    spent = (cost * used).sum(1)
    return CostSamples(strategy.name, spent, success.any(1), first)


def _gamma_sum(rng, mean: float, shape: float | None, calls: np.ndarray) -> np.ndarray:
    """Sum over `calls` i.i.d. Gamma(shape, mean/shape) draws, elementwise; deterministic if shape is None."""
    if mean == 0 or shape is None:
        return mean * calls
    out = np.zeros_like(calls)
    pos = calls > 0
    out[pos] = rng.gamma(shape * calls[pos], mean / shape)
    return out
