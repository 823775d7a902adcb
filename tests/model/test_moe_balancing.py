"""Quantile balancing (k3lite/model/moe/balancing.py): the order-statistic update evens out a skewed stream.
Eq. 14 itself, its reference and the pooled-histogram estimator are checked against the release in
tests/analytic/test_k3_release.py."""
import torch

from k3lite.model.moe import quantile_beta, routing_metrics
from moe_cases import one_thread, skewed_scores  # noqa: F401 (one_thread: an autouse fixture)


def test_quantile_selection_is_near_uniform_on_skewed_scores():
    n, e, k = 2048, 64, 8
    raw = routing_metrics(skewed_scores(n, e, seed=0).topk(k).indices, e)[1]
    beta = torch.zeros(e)
    for step in range(3):  # a stationary stream: each step routes with the previous beta
        beta = quantile_beta(skewed_scores(n, e, seed=step), k, beta)
    fresh = skewed_scores(n, e, seed=100)
    balanced = routing_metrics((fresh - beta).topk(k).indices, e)[1]
    assert raw > 3.0
    assert balanced < 0.3, (raw, balanced)
    # on the batch it was computed from, the curve is almost exact
    same = skewed_scores(n, e, seed=7)
    b2 = torch.zeros(e)
    for _ in range(4):
        b2 = quantile_beta(same, k, b2)
    assert routing_metrics((same - b2).topk(k).indices, e)[1] < 0.1
