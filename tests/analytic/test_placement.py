"""K3-scale routing view: per-token GPU counts and GPUs touched, against a slow obviously-correct count."""
import numpy as np
import pytest

from k3lite.interconnect import expected_copies
from k3lite.analytic.placement import gpu_view, mean_load_per_expert


def slow_counts(topk_idx, n_experts, n_gpus):
    """Python loops: expert e lives on GPU g when it falls in g's contiguous block (first E mod G blocks +1)."""
    base, extra = divmod(n_experts, n_gpus)
    owner, e = [], 0
    for g in range(n_gpus):
        owner += [g] * (base + (g < extra))
    out = np.zeros((len(topk_idx), n_gpus), dtype=int)
    for t, row in enumerate(topk_idx):
        for e in row:
            out[t, owner[e]] += 1
    return out


@pytest.mark.parametrize("E, k, G", [(896, 16, 64), (896, 16, 7), (130, 8, 8), (32, 4, 32)])
def test_counts_match_the_slow_reference(E, k, G):
    rng = np.random.default_rng(0)
    idx = np.stack([rng.choice(E, k, replace=False) for _ in range(40)])  # (T, k)
    view = gpu_view(idx, E, G)
    assert (view.counts == slow_counts(idx, E, G)).all()
    assert (view.counts.sum(1) == k).all()
    assert (view.touched == (view.counts > 0).sum(1)).all()
    assert view.expected_touched == pytest.approx(expected_copies(E, k, G, G).gpus_hit)


def test_uniform_routing_touches_the_expected_number_of_gpus():
    rng = np.random.default_rng(1)
    E, k, G = 896, 16, 64
    idx = np.argsort(rng.random((4000, E)), axis=1)[:, :k]
    view = gpu_view(idx, E, G)
    assert view.touched.mean() == pytest.approx(view.expected_touched, rel=0.01)
    assert view.expected_touched < k  # two of a token's experts often share a GPU


def test_bad_routing_names_the_constraint():
    with pytest.raises(ValueError, match="expert ids must be in"):
        gpu_view(np.array([[0, 900]]), 896, 64)
    with pytest.raises(ValueError, match="tokens, k"):
        gpu_view(np.array([1, 2]), 896, 64)
    with pytest.raises(ValueError, match="at least one expert per GPU"):
        gpu_view(np.array([[0, 1]]), 8, 16)


def test_mean_load_per_expert_is_n_k_over_e():
    assert mean_load_per_expert(56, 16, 896) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        mean_load_per_expert(10, 2, 0)
