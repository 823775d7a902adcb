"""LatentMoE, the layer (k3lite/model/moe/latent.py): with identity projections it is the classic MoE, its
RoutingStats are right and on demand, and a capacity factor reports the dropped copies."""
import math

import pytest
import torch

from k3lite.model.moe import LatentMoE, capacity_for
from moe_cases import cfg, one_thread, TOL  # noqa: F401 (one_thread: an autouse fixture)


def test_latent_moe_with_identity_projections_is_the_classic_moe():
    torch.manual_seed(0)
    d = 16
    latent = LatentMoE(d, cfg(latent_dim=d, latent_norm=False, n_shared_experts=1, route_scale=1.7))
    classic = LatentMoE(d, cfg(latent_dim=0, n_shared_experts=1, route_scale=1.7))
    with torch.no_grad():
        latent.down_proj.weight.copy_(torch.eye(d))
        latent.up_proj.weight.copy_(torch.eye(d))
    classic.load_state_dict({k: v for k, v in latent.state_dict().items() if "_proj" not in k})
    x = torch.randn(2, 7, d)
    a, b = latent(x), classic(x)
    torch.testing.assert_close(a.out, b.out, **TOL)
    assert torch.equal(a.stats.topk_idx, b.stats.topk_idx)
    # and the layer is not the zero map (a test that could pass vacuously would prove nothing)
    assert a.out.abs().mean() > 1e-3


def test_latent_moe_output_and_stats():
    torch.manual_seed(0)
    c = cfg(latent_dim=8, latent_norm=True, n_shared_experts=2, balancing="quantile")
    layer = LatentMoE(32, c)
    out = layer(torch.randn(3, 10, 32), update_balance=True)
    s = out.stats
    assert out.out.shape == (3, 10, 32)
    assert s.topk_idx.shape == (3, 10, 4) and s.topk_weight.shape == (3, 10, 4) and s.scores.shape == (3, 10, 16)
    assert int(s.load.sum()) == 3 * 10 * 4 and s.dropped == 0
    mean = 30 * 4 / 16
    assert abs(s.max_violation - (int(s.load.max()) / mean - 1)) < 1e-9
    assert 0 < s.entropy <= math.log(16) + 1e-9
    assert s.dispatch_dim == 8
    with pytest.raises(ValueError, match="expects x"):
        layer(torch.randn(3, 10, 31))


def test_routing_stats_are_on_demand_and_change_nothing():
    """The model asks for RoutingStats only when tracing: without them the output is the same, bit for bit."""
    torch.manual_seed(0)
    layer = LatentMoE(32, cfg(latent_dim=8, latent_norm=True, n_shared_experts=1, balancing="quantile"))
    x = torch.randn(2, 9, 32)
    with_stats, without = layer(x), layer(x, stats=False)
    assert without.stats is None and with_stats.stats is not None
    assert torch.equal(with_stats.out, without.out) and torch.equal(with_stats.aux_loss, without.aux_loss)


def test_latent_moe_capacity_factor_reports_dropped():
    torch.manual_seed(0)
    layer = LatentMoE(16, cfg(capacity_factor=0.5))
    out = layer(torch.randn(2, 16, 16))
    c = capacity_for(32, 4, 16, 0.5)
    assert out.stats.dropped == int((out.stats.load - c).clamp_min(0).sum()) > 0
