"""The router (k3lite/model/moe/router.py): its output contract, selection-only bias, the aux loss, group limits,
the bias and quantile updates through forward, selection stability, and DeepSeek-V3's Gate matched case by case."""
import pytest
import torch

from k3lite.model.moe import Router, routing_metrics, selection_stability
from moe_cases import cfg, one_thread, skewed_scores, TOL  # noqa: F401 (one_thread: an autouse fixture)


def test_router_output_contract():
    torch.manual_seed(0)
    c = cfg(route_scale=2.5)
    r = Router(20, c)
    x = torch.randn(2, 5, 20)
    out = r(x)
    assert out.topk_idx.shape == (10, 4) and out.topk_idx.dtype == torch.long
    assert out.scores.shape == (10, 16)
    torch.testing.assert_close(out.topk_weight.sum(-1), torch.full((10,), 2.5))
    # gate weights come from the raw scores of the chosen experts
    raw = out.scores.gather(1, out.topk_idx)
    torch.testing.assert_close(out.topk_weight, raw / raw.sum(-1, keepdim=True) * 2.5)
    assert float(out.aux_loss) == 0.0


def test_bias_is_selection_only():
    torch.manual_seed(0)
    r = Router(8, cfg(balancing="bias"))
    x = torch.randn(50, 8)
    r.bias[0] = 10.0  # expert 0 always selected ...
    out = r(x)
    assert (out.topk_idx == 0).any(-1).all()
    raw = out.scores.gather(1, out.topk_idx)  # ... but its weight is still its raw score's share
    torch.testing.assert_close(out.topk_weight, raw / raw.sum(-1, keepdim=True))


def test_aux_loss_equals_alpha_when_uniform_and_grows_with_skew():
    c = cfg(balancing="aux_loss", n_routed_experts=8, top_k=2, score_func="softmax", aux_loss_alpha=0.01)
    r = Router(8, c)
    with torch.no_grad():
        r.weight.zero_()  # equal scores: P_i = 1/E; ties broken arbitrarily, but f sums to 1 -> L = alpha
    assert abs(float(r(torch.randn(40, 8)).aux_loss.detach()) - 0.01) < 1e-6
    with torch.no_grad():
        r.weight.zero_()
        r.weight[0, :] = 5.0  # one dominant expert
    x = torch.rand(40, 8) + 0.5
    assert float(r(x).aux_loss.detach()) > 0.02


def test_group_limited_routing_stays_in_best_groups():
    torch.manual_seed(0)
    c = cfg(n_routed_experts=16, top_k=4, n_groups=4, topk_groups=2)
    r = Router(12, c)
    out = r(torch.randn(30, 12))
    groups = out.topk_idx // 4
    assert all(len(set(row)) <= 2 for row in groups.tolist())


def test_bias_update_moves_load_toward_uniform_on_skewed_stream():
    e, k = 16, 2
    c = cfg(n_routed_experts=e, top_k=k, balancing="bias", bias_gamma=0.01)
    r = Router(4, c)
    first = last = None
    for step in range(300):
        s = skewed_scores(256, e, skew=1.5, seed=step)
        load_v = routing_metrics(r.select(s), e)[1]
        # a bias-method training step: route with the current bias, then b += gamma * sign(mean - load)
        load = torch.bincount(r.select(s).reshape(-1), minlength=e).float()
        r.bias += c.bias_gamma * torch.sign(load.mean() - load)
        first = load_v if first is None else first
        last = load_v
    raw = routing_metrics(skewed_scores(256, e, 1.5, seed=999).topk(k).indices, e)[1]
    assert first > 2.0 and raw > 2.0
    assert last < 0.5 * first, (first, last)
    # the bias favours the under-loaded (low-ramp) experts
    assert r.bias[0] > r.bias[-1]


def test_router_bias_update_through_forward():
    torch.manual_seed(0)
    c = cfg(balancing="bias")
    r = Router(8, c)
    x = torch.randn(64, 8)
    load = torch.bincount(r(x).topk_idx.reshape(-1), minlength=16).float()
    before = r.bias.clone()
    r(x, update_balance=True)
    torch.testing.assert_close(r.bias - before, c.bias_gamma * torch.sign(load.mean() - load))
    r(x)  # no update without update_balance
    torch.testing.assert_close(r.bias - before, c.bias_gamma * torch.sign(load.mean() - load))


def test_quantile_router_uses_previous_beta_and_keeps_it_at_decode():
    torch.manual_seed(0)
    r = Router(8, cfg(balancing="quantile"))
    x = torch.randn(256, 8)
    first = r(x, update_balance=True)
    assert torch.equal(first.topk_idx, first.scores.topk(4).indices)  # beta was 0 for this batch
    assert r.bias.abs().sum() > 0
    beta = r.bias.clone()
    r(x[:1], update_balance=True)  # batch 1: N*k/E < 1, no curve to grade on -> running beta kept
    assert torch.equal(r.bias, beta)
    out = r(x[:1])
    assert torch.equal(out.topk_idx, (out.scores - beta).topk(4).indices)


def test_selection_stability_range_and_noise_monotone():
    torch.manual_seed(0)
    r = Router(16, cfg())
    x = torch.randn(200, 16)
    assert selection_stability(r, x, eps=0.0) == 0.0
    small, big = selection_stability(r, x, eps=1e-3), selection_stability(r, x, eps=0.3)
    assert 0.0 <= small < big <= 1.0
    scores = r.score(x)  # a caller that has the scores and the choices already gets the same number
    assert selection_stability(r, x, eps=0.3, scores=scores, chosen=r.select(scores)) == big
    assert selection_stability(r, x, eps=0.3, scores=scores) == big



# ------------------------------------------------------------------------------------------ DeepSeek-V3 Gate
def deepseek_gate(x, weight, bias, score_func, n_groups, topk_groups, top_k, route_scale):
    """Port of DeepSeek-V3 `inference/model.py` `Gate.forward` (bias = its optional selection bias or None)."""
    scores = x @ weight.T
    scores = scores.softmax(dim=-1) if score_func == "softmax" else scores.sigmoid()
    original = scores
    if bias is not None:
        scores = scores + bias
    if n_groups > 1:
        scores = scores.view(x.size(0), n_groups, -1)
        group_scores = scores.amax(dim=-1) if bias is None else scores.topk(2, dim=-1)[0].sum(dim=-1)
        indices = group_scores.topk(topk_groups, dim=-1)[1]
        mask = scores.new_ones(x.size(0), n_groups, dtype=bool).scatter_(1, indices, False)
        scores = scores.masked_fill_(mask.unsqueeze(-1), float("-inf")).flatten(1)
    indices = torch.topk(scores, top_k, dim=-1)[1]
    weights = original.gather(1, indices)
    if score_func == "sigmoid":
        weights /= weights.sum(dim=-1, keepdim=True)
    return weights * route_scale, indices


@pytest.mark.parametrize("score_func", ["sigmoid", "softmax"])
@pytest.mark.parametrize("balancing", ["none", "bias"])
@pytest.mark.parametrize("groups", [(1, 1), (4, 2)])
def test_router_matches_deepseek_gate(score_func, balancing, groups):
    """Same experts and weights as DeepSeek's Gate in every case: softmax weights are not renormalised, and
    groups rank by amax without a bias, by top-2 sum with one (both differed before)."""
    torch.manual_seed(0)
    c = cfg(n_routed_experts=16, top_k=3, score_func=score_func, balancing=balancing, n_groups=groups[0],
            topk_groups=groups[1], route_scale=2.5)
    r = Router(32, c)
    if balancing == "bias":
        r.bias.copy_(0.05 * torch.randn(16))
    x = torch.randn(50, 32)
    with torch.no_grad():
        out = r(x)
        w_ref, idx_ref = deepseek_gate(x, r.weight, r.bias if balancing == "bias" else None, score_func, *groups,
                                       3, 2.5)
    torch.testing.assert_close(out.topk_idx.sort(-1).values, idx_ref.sort(-1).values, atol=0, rtol=0)
    order, order_ref = out.topk_idx.argsort(-1), idx_ref.argsort(-1)
    torch.testing.assert_close(out.topk_weight.gather(1, order), w_ref.gather(1, order_ref), **TOL)
