"""Routed experts (k3lite/model/moe/experts.py): grouped dispatch == the per-token reference, with and without
autograd and capacity; drop accounting is exact. The no-autograd path runs padded batched matmuls for each expert's
first `cap` rows and one expert at a time for the rest: checked against the reference at every split, and the rule
that picks the split (balanced routing goes into the batch whole, one overfull expert does not set the padding for
all)."""
import math

import pytest
import torch
from torch.testing import assert_close

import k3lite.model.moe.experts as experts_module
from k3lite.model.moe import (RoutedExperts, capacity_for, dispatch_combine, dispatch_combine_naive, expert_forward,
                              expert_forward_naive, padded_rows_cap)
from moe_cases import one_thread, skewed_scores, TOL  # noqa: F401 (one_thread: an autouse fixture)


# ------------------------------------------------------------------------------------------ dispatch
@pytest.mark.parametrize("m, e, dim", [(0, 4, 8), (1, 4, 8), (37, 8, 12), (200, 64, 16)])
def test_grouped_expert_forward_matches_naive(m, e, dim):
    torch.manual_seed(m)
    experts = RoutedExperts(e, dim, 20)
    x = torch.randn(m, dim)
    ids = torch.randint(0, e, (m,))
    torch.testing.assert_close(expert_forward(experts, x, ids), expert_forward_naive(experts, x, ids), **TOL)


@pytest.mark.parametrize("n_experts,dim,ffn", [(8, 10, 16), (16, 12, 20)])
def test_grouped_forward_on_a_subset_of_experts_and_gradients_match(n_experts, dim, ffn):
    torch.manual_seed(1)
    experts = RoutedExperts(n_experts, dim, ffn)
    x = torch.randn(30, dim, requires_grad=True)
    ids = torch.tensor([3, 5] * 15)  # only two experts used, as on one expert-parallel rank
    y1 = expert_forward(experts, x, ids)
    g1 = torch.autograd.grad(y1.square().sum(), (x, experts.w_up))
    y2 = expert_forward_naive(experts, x, ids)
    g2 = torch.autograd.grad(y2.square().sum(), (x, experts.w_up))
    torch.testing.assert_close(y1, y2, **TOL)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def test_expert_ids_out_of_range_is_a_value_error():
    experts = RoutedExperts(4, 8, 8)
    with pytest.raises(ValueError, match="expert_ids must be in"):
        expert_forward(experts, torch.randn(3, 8), torch.tensor([0, 1, 4]))


@pytest.mark.parametrize("capacity", [0, 1, 3, 7])
def test_dispatch_combine_matches_naive_with_capacity(capacity):
    torch.manual_seed(capacity)
    experts = RoutedExperts(8, 12, 16)
    x = torch.randn(25, 12)
    idx = skewed_scores(25, 8, skew=3.0, seed=capacity).topk(3).indices  # skewed: some experts overflow
    w = torch.rand(25, 3)
    a = dispatch_combine(experts, x, idx, w, capacity)
    b = dispatch_combine_naive(experts, x, idx, w, capacity)
    torch.testing.assert_close(a.out, b.out, **TOL)
    assert torch.equal(a.kept, b.kept)
    assert a.dropped == b.dropped


def test_capacity_drop_accounting_is_exact():
    n, e, k = 64, 8, 2
    idx = skewed_scores(n, e, skew=4.0, seed=3).topk(k).indices
    load = torch.bincount(idx.reshape(-1), minlength=e)
    c = capacity_for(n, k, e, 1.0)
    assert c == math.ceil(n * k / e)
    res = dispatch_combine(RoutedExperts(e, 4, 4), torch.randn(n, 4), idx, torch.ones(n, k), c)
    expected = int((load - c).clamp_min(0).sum())
    assert expected > 0, "the test stream must overflow some expert"
    assert res.dropped == expected
    kept_load = torch.bincount(idx[res.kept], minlength=e)
    assert torch.equal(kept_load, load.clamp_max(c))
    # first come, first served: the dropped copies of an expert are its latest tokens
    for ex in range(e):
        rows = (idx == ex).nonzero()[:, 0]
        assert res.kept[idx == ex].tolist() == [True] * min(c, len(rows)) + [False] * max(0, len(rows) - c)


def test_inference_mode_buffer_path_matches_naive():
    """Without autograd the grouped path writes into one preallocated buffer: check that path too."""
    torch.manual_seed(5)
    experts = RoutedExperts(32, 12, 16)
    x = torch.randn(40, 12)
    idx = skewed_scores(40, 32, seed=5).topk(4).indices
    w = torch.rand(40, 4)
    with torch.inference_mode():
        for capacity in (0, 3):
            a = dispatch_combine(experts, x, idx, w, capacity)
            b = dispatch_combine_naive(experts, x, idx, w, capacity)
            torch.testing.assert_close(a.out, b.out, **TOL)
            assert a.dropped == b.dropped
        ids = idx[:, 0]
        torch.testing.assert_close(expert_forward(experts, x, ids), expert_forward_naive(experts, x, ids), **TOL)



# ------------------------------------------------------------------------------------------ the padded batch and the loop
def forward_with_cap(experts, x, ids, cap):
    """expert_forward under inference mode with the padded batch forced to `cap` rows per expert."""
    real = experts_module.padded_rows_cap
    experts_module.padded_rows_cap = lambda *a: cap
    try:
        with torch.inference_mode():
            return expert_forward(experts, x, ids)
    finally:
        experts_module.padded_rows_cap = real



@pytest.mark.parametrize("cap", [0, 1, 3, 6, 37])
def test_every_split_between_batch_and_loop_equals_naive(cap):
    torch.manual_seed(cap)
    experts = RoutedExperts(16, 12, 20)
    x = torch.randn(40, 12)
    ids = torch.zeros(40, dtype=torch.long)
    ids[:21] = torch.randint(0, 16, (21,))  # expert 0 overfull (about 20 rows), some experts empty
    ids = ids[torch.randperm(40)]
    assert int(torch.bincount(ids).max()) <= 37
    assert_close(forward_with_cap(experts, x, ids, cap), expert_forward_naive(experts, x, ids), **TOL)


def test_balanced_routing_runs_as_one_batch():
    assert padded_rows_cap([8] * 32, 32, 64, 128) == 8  # lite's expert shapes, no padding at all


def test_one_overfull_expert_does_not_set_the_padding():
    counts = [5] * 31 + [60]  # padding every expert to 60 rows would compute 32 * 60 rows for 215 real ones
    cap = padded_rows_cap(counts, 32, 64, 128)
    assert 0 < cap < 60
    assert padded_rows_cap([0] * 31 + [40], 32, 64, 128) == 0  # one expert in use: the loop, no batch
    assert padded_rows_cap([1] * 4 + [0] * 28, 32, 64, 128) == 0  # a decode step: 4 rows never read all 32 experts
