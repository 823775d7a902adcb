"""One training step of the expert-parallel layer on gloo: backward bytes counted exactly, gradients as one process."""
import pytest

from k3lite.interconnect.backward import BWD_KINDS
from k3lite.interconnect.measured import KINDS, MeasureSpec
from k3lite.interconnect.measured_backward import predicted_both
from k3lite.interconnect.run import measure_backward_suite

TRAIN = dict(dispatch="fp8", combine="bf16", grad_combine="fp8", grad_dispatch="bf16")
EXACT = dict(dispatch="fp32", combine="fp32", grad_combine="fp32", grad_dispatch="fp32")


@pytest.mark.timeout(240)
def test_backward_bytes_equal_analytic_and_gradients_equal_single_process():
    base = dict(ranks=4, ranks_per_node=2, tokens_per_rank=16, seed=4, timeout_s=120)
    specs = [MeasureSpec(scheme="direct", **EXACT, **base),
             MeasureSpec(scheme="normal", **TRAIN, **base),
             MeasureSpec(scheme="normal", latent_dim=0, node_limit=1, **EXACT, **base),
             MeasureSpec(scheme="low-latency", **TRAIN, **base)]
    results = measure_backward_suite(specs)
    for res in results:
        for m, p in zip(res.measured, res.predicted):
            assert {k: m[k] for k in KINDS + BWD_KINDS} == p  # exact integers, rank by rank, both directions
        total = res.total("measured")
        assert total["grad_combine_inter"] > 0 and total["grad_dispatch_inter"] > 0
        assert res.gradients_match, res.rel_err
        if res.spec.dispatch == "fp32":
            assert max(res.rel_err.values()) < 1e-5  # the same math; only summation order differs
    assert results[1].evidence["measured"].kind == "measured here"
    assert "--backward" in results[1].evidence["measured"].source and results[1].evidence["predicted"].kind == "derived"
    # the backward moves the forward's copies: with the same format, the grad of the dispatch = the combine
    exact = results[0].total("measured")
    assert exact["grad_dispatch_inter"] == exact["combine_inter"]
    # the comparison can fail: another routing predicts other backward bytes
    res = results[1]
    assert predicted_both(res.spec, (res.topk_idx + 4) % res.spec.n_experts) != res.predicted
