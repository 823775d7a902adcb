"""Solve for a target: how to serve N concurrent users at a speed each of them sees.

Given a deployment (one replica: its GPUs, EP, TP, formats), the tokens/s every user must see, the request shape
(price.Shape: input, output, cached share) and the number of users online at once, `solve` returns the largest
concurrency per replica (in whole requests per TP group, price.concurrency_step) that keeps each user at or above
the speed by the fitted predictor (predict.evaluate with
fit.FITTED, the same TPOT the serving page's measured-vs-predicted check uses, prefill stalls included), capped by what
the replica admits in HBM (admission.admission); then the request's price there (price.request_price: prefill and
decode GPU-seconds, $ per M input, per M output and blended at the shape), the replicas the users need and the $ per
month they cost (730 hours a month, the GPU-hour price the deployment carries).
"""
from __future__ import annotations

import math
from typing import NamedTuple

from k3lite.analytic.serving.admission import admission
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.fit import FITTED
from k3lite.analytic.serving.predict import Efficiency
from k3lite.analytic.serving.price import (
    DEFAULT_SHAPE, RequestPrice, Shape, check_shape, concurrency_step, fastest_concurrency, predicted_price,
    predicted_terms,
)

HOURS_PER_MONTH = 730.0  # 8,760 / 12


class Target(NamedTuple):
    speed: float  # tokens/s each user must see
    users: int  # online at once
    concurrency: int  # requests per replica that keep the speed (0: none does)
    admitted: int  # what the replica's HBM admits
    binding: str  # "speed" (per-user speed caps it), "HBM (<what>)" (admission caps it) or "too slow"
    tokens_per_s_per_user: float  # at that concurrency
    price: RequestPrice | None  # the request's price there (price.request_price); None when none keeps the speed
    replicas: int
    gpus: int
    usd_per_month: float
    sentence: str

    @property
    def usd_per_m(self) -> float:
        """The blended $ per M tokens at the shape (input and output), nan when no concurrency keeps the speed."""
        return self.price.usd_per_m if self.price is not None else float("nan")


def solve(s: Serving, speed: float, users: int, input_len: int = DEFAULT_SHAPE.input_len,
          output_len: int = DEFAULT_SHAPE.output_len, efficiency: Efficiency = FITTED.efficiency,
          acceptance: float | None = None, cached: float = DEFAULT_SHAPE.cached) -> Target:
    """The replica's concurrency, cost and count for `users` at `speed` tokens/s each (see the module docstring)."""
    if not (isinstance(users, int) and 1 <= users <= 100_000_000):
        raise ValueError(f"users must be an integer in 1..100,000,000, got {users!r}")
    if not 0 < speed <= 10_000:
        raise ValueError(f"the target speed must be in (0, 10,000] tokens/s per user, got {speed}")
    shape = check_shape(Shape(input_len, output_len, cached))
    adm = admission(s, input_len, output_len)
    if adm.max_concurrency < 1:
        raise ValueError(f"{s.n_gpus} x {s.gpu} admit no request of {input_len + output_len:,} tokens: "
                         f"{adm.sentence}")
    k = predicted_terms(s, shape)

    def price_at(c: int) -> RequestPrice:
        return predicted_price(k, shape, c, efficiency, s.price, acceptance)

    top = adm.max_concurrency
    step = concurrency_step(s.n_gpus, s.tp, top)  # whole requests per TP group, as the frontier searches
    best = fastest_concurrency(lambda c: price_at(c).tokens_per_s_per_user, speed, top, step)
    binding = "too slow" if best == 0 else f"HBM ({adm.binding})" if best + step > top else "speed"
    if best == 0:
        at1 = price_at(1).tokens_per_s_per_user
        return Target(speed, users, 0, top, binding, at1, None, 0, 0, float("nan"),
                      f"{s.n_gpus} x {s.gpu} (EP {s.ep}, TP {s.tp}) reach {at1:.0f} tokens/s per user even alone, "
                      f"under the {speed:.0f} asked: more TP, a faster GPU or speculation is needed.")
    p = price_at(best)
    replicas = math.ceil(users / best)
    gpus = replicas * s.n_gpus
    month = gpus * s.price * HOURS_PER_MONTH
    cap = ("each user's speed caps it" if binding == "speed" else
           f"HBM caps it first ({adm.binding}; speed would allow more)")
    sentence = (f"{best:,} requests per replica keep every user at {p.tokens_per_s_per_user:.0f} tokens/s "
                f"(>= {speed:.0f}; {cap}), at {p.says()}; {users:,} users "
                f"need {replicas:,} replica{'s' if replicas > 1 else ''} of {s.n_gpus} x {s.gpu} = {gpus:,} GPUs, "
                f"${month:,.0f} a month at ${s.price:.2f} per GPU-hour.")
    return Target(speed, users, best, top, binding, p.tokens_per_s_per_user, p, replicas, gpus, month, sentence)
