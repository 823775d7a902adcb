"""The no-autograd expert paths (k3lite.model.moe: padded batched matmuls for each expert's first `cap` rows, one
expert at a time for the rest) against the per-token reference at every split, and the rule that picks the
split: balanced routing goes into the batch whole, one overfull expert does not set the padding for all."""
import pytest
import torch
from torch.testing import assert_close

from k3lite.model import moe
from k3lite.model.moe import RoutedExperts, expert_forward, expert_forward_naive, padded_rows_cap

TOL = dict(atol=1e-5, rtol=1e-5)


def forward_with_cap(experts, x, ids, cap):
    """expert_forward under inference mode with the padded batch forced to `cap` rows per expert."""
    real = moe.padded_rows_cap
    moe.padded_rows_cap = lambda *a: cap
    try:
        with torch.inference_mode():
            return expert_forward(experts, x, ids)
    finally:
        moe.padded_rows_cap = real


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
