"""Solve for a target: how to serve N concurrent users at a speed each of them sees.

Given a deployment (one replica: its GPUs, EP, TP, formats), the tokens/s every user must see, the request shape
(input and output tokens) and the number of users online at once, `solve` returns the largest concurrency per
replica that keeps each user at or above the speed by the fitted predictor (predict.evaluate with fit.FITTED, the
same TPOT the serving page's measured-vs-predicted check uses, prefill stalls included), capped by what the replica
admits in HBM (admission.admission); then the $ per M output tokens there, the replicas the users need and the $
per month they cost (730 hours a month, the GPU-hour price the deployment carries).
"""
from __future__ import annotations

import math
from typing import NamedTuple

from k3lite.analytic.serving.admission import admission
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.fit import FITTED
from k3lite.analytic.serving.predict import Efficiency, Workload, evaluate, terms

HOURS_PER_MONTH = 730.0  # 8,760 / 12


class Target(NamedTuple):
    speed: float  # tokens/s each user must see
    users: int  # online at once
    concurrency: int  # requests per replica that keep the speed (0: none does)
    admitted: int  # what the replica's HBM admits
    binding: str  # "speed" (per-user speed caps it), "HBM (<what>)" (admission caps it) or "too slow"
    tokens_per_s_per_user: float  # at that concurrency
    usd_per_m_output: float
    replicas: int
    gpus: int
    usd_per_month: float
    sentence: str


def _speed(s: Serving, k, w_of, e: Efficiency, c: int, acceptance: float | None) -> float:
    return evaluate(k, w_of(c), e, s.price, acceptance).output_tokens_per_s_per_user


def solve(s: Serving, speed: float, users: int, input_len: int = 8192, output_len: int = 1024,
          efficiency: Efficiency = FITTED.efficiency, acceptance: float | None = None) -> Target:
    """The replica's concurrency, cost and count for `users` at `speed` tokens/s each (see the module docstring)."""
    if not (isinstance(users, int) and 1 <= users <= 100_000_000):
        raise ValueError(f"users must be an integer in 1..100,000,000, got {users!r}")
    if not 0 < speed <= 10_000:
        raise ValueError(f"the target speed must be in (0, 10,000] tokens/s per user, got {speed}")
    adm = admission(s, input_len, output_len)
    if adm.max_concurrency < 1:
        raise ValueError(f"{s.n_gpus} x {s.gpu} admit no request of {input_len + output_len:,} tokens: "
                         f"{adm.sentence}")

    def w_of(c: int) -> Workload:
        return Workload(concurrency=c, input_len=input_len, output_len=output_len)

    k = terms(s, w_of(1))
    top = adm.max_concurrency
    if _speed(s, k, w_of, efficiency, 1, acceptance) < speed:
        best, binding = 0, "too slow"
    elif _speed(s, k, w_of, efficiency, top, acceptance) >= speed:
        best, binding = top, f"HBM ({adm.binding})"
    else:  # per-user speed falls as concurrency rises: the last concurrency that keeps the target
        lo, hi = 1, top
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if _speed(s, k, w_of, efficiency, mid, acceptance) >= speed else (lo, mid - 1)
        best, binding = lo, "speed"
    if best == 0:
        at1 = _speed(s, k, w_of, efficiency, 1, acceptance)
        return Target(speed, users, 0, top, binding, at1, float("nan"), 0, 0, float("nan"),
                      f"{s.n_gpus} x {s.gpu} (EP {s.ep}, TP {s.tp}) reach {at1:.0f} tokens/s per user even alone, "
                      f"under the {speed:.0f} asked: more TP, a faster GPU or speculation is needed.")
    p = evaluate(k, w_of(best), efficiency, s.price, acceptance)
    replicas = math.ceil(users / best)
    gpus = replicas * s.n_gpus
    month = gpus * s.price * HOURS_PER_MONTH
    cap = ("each user's speed caps it" if binding == "speed" else
           f"HBM caps it first ({adm.binding}; speed would allow more)")
    sentence = (f"{best:,} requests per replica keep every user at {p.output_tokens_per_s_per_user:.0f} tokens/s "
                f"(>= {speed:.0f}; {cap}), at ${p.usd_per_m_output_tokens:.2f} per M output tokens; {users:,} users "
                f"need {replicas:,} replica{'s' if replicas > 1 else ''} of {s.n_gpus} x {s.gpu} = {gpus:,} GPUs, "
                f"${month:,.0f} a month at ${s.price:.2f} per GPU-hour.")
    return Target(speed, users, best, top, binding, p.output_tokens_per_s_per_user, p.usd_per_m_output_tokens,
                  replicas, gpus, month, sentence)
