"""The routing rule a token follows on a deployment (k3lite.interconnect.routing): the fast expectation against the
plain sampler and the model's own Router, for groups that are GPUs, nodes, several GPUs, or straddle GPUs; and the
wire-bytes function taking each preset's rule from its config."""
import math

import numpy as np
import pytest
import torch

from k3lite.interconnect import (
    SCHEMES, count_copies, describe_rule, expected_copies, expert_to_gpu, routed_hits, routing_rule,
    wire_bytes_per_token,
)
from k3lite.interconnect.routing import reach_caps, sample_group_limited_routing
from k3lite.model.moe.router import Router
from k3lite.model.presets import get_preset

# (E, k, EP, GPUs per domain, groups, kept): a group per GPU (DeepSeek-V3 on one 8-GPU node), per node (8 x 8),
# spanning 8 GPUs of one rack (NVL72 at EP 64), two GPUs (EP 16 on 2 nodes), two groups per GPU (EP 4), and groups
# that straddle an uneven placement (60 experts on 8 GPUs: 8, 8, 8, 8, 7, 7, 7, 7)
SETTINGS = [(256, 8, 8, 8, 8, 4), (256, 8, 64, 8, 8, 4), (256, 8, 64, 64, 8, 4), (256, 8, 16, 8, 8, 4),
            (256, 8, 4, 4, 8, 4), (60, 6, 8, 4, 6, 2)]


def _plain(n_experts, top_k, ep, g, groups, kept, n, seed):
    """Distinct GPUs and domains per token, every score drawn (the obviously-correct sampler) and counted."""
    ids = sample_group_limited_routing(n, n_experts, top_k, groups, kept, np.random.default_rng(seed))
    gpu = expert_to_gpu(n_experts, ep)[ids]  # (N, k)
    assert max(len(set(r)) for r in (ids // (n_experts // groups)).tolist()) <= kept  # the rule holds
    hit = np.zeros((n, ep), dtype=bool)
    np.put_along_axis(hit, gpu, True, axis=1)
    return hit.sum(1), hit.reshape(n, ep // g, g).any(2).sum(1), gpu


@pytest.mark.parametrize("setting", SETTINGS)
def test_routed_hits_equal_the_plain_sampler(setting):
    n_experts, top_k, ep, g, groups, kept = setting
    n = 65536
    gpus, doms, gpu = _plain(*setting, n, seed=11)
    h = routed_hits(*setting)
    for sample, mean, se in ((gpus, h.gpus, h.gpus_se), (doms, h.domains, h.domains_se)):
        tol = 4 * math.hypot(se, sample.std() / math.sqrt(n)) + 1e-9
        assert sample.mean() == pytest.approx(mean, abs=tol), (sample.mean(), mean, tol)
    most_gpus, most_doms = reach_caps(n_experts, ep, g, groups, kept)
    assert gpus.max() <= most_gpus and doms.max() <= most_doms  # the caps the sentences state hold


@pytest.mark.parametrize("topology,ep,g", [("dgx-b300", 8, 8), ("multi-node-8x8", 64, 8), ("multi-node-8x8", 16, 8)])
def test_deepseek_v3_copies_match_its_own_router(topology, ep, g):
    """DeepSeek-V3's MoE config through k3lite's Router (random weights, zero bias: groups ranked by their top-2
    sum), counted copy by copy, against the wire-bytes function's expectation, every scheme."""
    cfg = get_preset("deepseek-v3")
    moe = cfg.moe
    n, dim = 16384, 64
    torch.manual_seed(0)
    router = Router(dim, moe)
    with torch.no_grad():
        topk = router(torch.randn(n, dim, generator=torch.Generator().manual_seed(1))).topk_idx.numpy()
    place = expert_to_gpu(moe.n_routed_experts, ep)
    per_group = moe.n_routed_experts // moe.n_groups
    assert max(len(set(r)) for r in (topk // per_group).tolist()) <= moe.topk_groups
    if ep == 8:  # a group per GPU: at most 4 GPUs
        assert max(len(set(r)) for r in place[topk].tolist()) <= moe.topk_groups
    src = np.random.default_rng(2).integers(0, ep, n)
    for scheme in SCHEMES:  # within 1% (the random-weight Router's logits are not exactly i.i.d.)
        c = wire_bytes_per_token(cfg, topology, ep, scheme).copies
        intra, inter = count_copies(topk, src, place, g, scheme)
        assert intra.mean() == pytest.approx(c.intra, rel=0.01, abs=0.02), scheme
        assert inter.mean() == pytest.approx(c.inter, rel=0.01, abs=0.02), scheme


@pytest.mark.parametrize("name", ["deepseek-v3", "kimi-k2", "kimi-k3", "kimi-linear-48b-a3b"])
def test_the_wire_function_takes_each_presets_rule_from_its_config(name):
    """K3, K2 and Kimi Linear have one expert group (no limit): their bytes are the unconstrained closed form.
    DeepSeek-V3's 8 groups, best 4 make it reach fewer GPUs than that on one 8-GPU node."""
    cfg = get_preset(name)
    m = cfg.moe
    own = wire_bytes_per_token(cfg).copies
    free = expected_copies(m.n_routed_experts, m.top_k, 8, 8, 0, "normal")
    if name == "deepseek-v3":
        assert (m.n_groups, m.topk_groups) == (8, 4)
        assert own.gpus_hit <= 4 < free.gpus_hit and own.total < free.total
        assert describe_rule(m.n_routed_experts, 8, 8, m.n_groups, m.topk_groups) == \
            "8 groups, best 4, so at most 4 of 8 GPUs"
        assert describe_rule(m.n_routed_experts, 64, 8, m.n_groups, m.topk_groups) == \
            "8 groups, best 4, so at most 4 of 8 nodes"
    else:
        assert m.n_groups == 1 and own == free
        assert describe_rule(m.n_routed_experts, 8, 8, m.n_groups, m.topk_groups) == ""


def test_routing_rule_combines_a_node_limit_with_the_models_own():
    assert routing_rule(1, 1, 8, 0) == (1, 1)  # K3: no limit
    assert routing_rule(8, 4, 8, 0) == (8, 4)  # DeepSeek-V3's own
    assert routing_rule(8, 4, 8, 6) == (8, 4) and routing_rule(8, 4, 8, 2) == (8, 2)  # groups = domains: stricter
    assert routing_rule(1, 1, 8, 4) == (8, 4)  # a node limit on a model without groups: a group per domain
    assert routing_rule(8, 4, 2, 1) == (2, 1)  # groups are not the domains: the deployment's limit routes
    assert routing_rule(8, 8, 8, 0) == (1, 1) and routing_rule(8, 4, 8, 8) == (8, 4)  # no limit / M = domains
    with pytest.raises(ValueError, match="node_limit must be >= 0"):
        routing_rule(1, 1, 8, -1)
    ds = get_preset("deepseek-v3")
    limited = wire_bytes_per_token(ds, "multi-node-8x8", 64, "normal", 4)  # its training layout's node limit 4
    assert wire_bytes_per_token(ds, "multi-node-8x8", 64, "normal") == limited  # ... is its own rule there
