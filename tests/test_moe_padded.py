"""The padded batched-matmul expert path (k3lite.moe._grouped_padded) against the per-token reference, and the
rule that picks it: balanced routing takes it, routing piled onto one expert keeps the per-expert loop."""
import torch
from torch.testing import assert_close

from k3lite import moe
from k3lite.moe import RoutedExperts, expert_forward, expert_forward_naive

TOL = dict(atol=1e-5, rtol=1e-5)


def run_counting_paths(experts, x, ids):
    """expert_forward under inference mode, recording whether the padded path ran."""
    calls, real = [], moe._grouped_padded
    moe._grouped_padded = lambda *a: calls.append(1) or real(*a)
    try:
        with torch.inference_mode():
            out = expert_forward(experts, x, ids)
    finally:
        moe._grouped_padded = real
    return out, bool(calls)


def test_padded_path_equals_naive_on_balanced_routing():
    torch.manual_seed(0)
    experts = RoutedExperts(8, 12, 20)
    x = torch.randn(64, 12)
    ids = torch.arange(64) % 8  # every expert gets 8 rows: no padding waste
    ids = ids[torch.randperm(64)]
    out, padded = run_counting_paths(experts, x, ids)
    assert padded
    assert_close(out, expert_forward_naive(experts, x, ids), **TOL)


def test_skewed_routing_keeps_the_loop_and_still_matches():
    torch.manual_seed(1)
    experts = RoutedExperts(16, 12, 20)
    x = torch.randn(40, 12)
    ids = torch.zeros(40, dtype=torch.long)
    ids[:3] = torch.tensor([4, 9, 15])  # 37 rows on expert 0: padding to 37 x 16 experts is > 4x waste
    out, padded = run_counting_paths(experts, x, ids)
    assert not padded
    assert_close(out, expert_forward_naive(experts, x, ids), **TOL)
