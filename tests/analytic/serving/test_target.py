import math

import pytest

from k3lite.analytic.serving.admission import admission
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.fit import FITTED
from k3lite.analytic.serving.predict import Workload, predict
from k3lite.analytic.serving.target import HOURS_PER_MONTH, solve

S = Serving(gpu="B300", n_gpus=8, ep=8, tp=8)


def test_the_concurrency_found_is_the_last_that_keeps_the_speed():
    t = solve(S, speed=50, users=1000)
    assert t.binding in ("speed",) or t.binding.startswith("HBM")
    at = predict(S, Workload(t.concurrency, 8192, 1024), FITTED.efficiency).output_tokens_per_s_per_user
    assert at >= 50 and at == pytest.approx(t.tokens_per_s_per_user)
    if t.binding == "speed":
        beyond = predict(S, Workload(t.concurrency + 1, 8192, 1024), FITTED.efficiency).output_tokens_per_s_per_user
        assert beyond < 50
    assert t.concurrency <= admission(S, 8192, 1024).max_concurrency


def test_replicas_gpus_and_month_follow_from_the_concurrency():
    t = solve(S, speed=30, users=10_000)
    assert t.replicas == math.ceil(10_000 / t.concurrency) and t.gpus == 8 * t.replicas
    assert t.usd_per_month == pytest.approx(t.gpus * S.price * HOURS_PER_MONTH)
    assert f"{t.replicas:,} replica" in t.sentence


def test_a_faster_target_costs_more_per_token():
    slow, fast = solve(S, speed=20, users=100), solve(S, speed=80, users=100)
    assert fast.concurrency <= slow.concurrency
    if fast.concurrency:
        assert fast.usd_per_m >= slow.usd_per_m  # the request's price, prefill and decode (price.request_price)


def test_an_unreachable_target_says_what_would_help():
    t = solve(S, speed=5000, users=10)
    assert t.concurrency == 0 and t.binding == "too slow" and "more TP" in t.sentence


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="users must be"):
        solve(S, 50, 0)
    with pytest.raises(ValueError, match="target speed"):
        solve(S, -1, 10)
