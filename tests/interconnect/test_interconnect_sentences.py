"""The interconnect page's computed sentences and its headline as a function of what it assumes: every comparison
word comes from k3lite.base.wording (a grid over presets x deployments), and the headline at the assumed values is
the analytic model's own number."""
from functools import partial

import pytest

from k3lite.interconnect import (SCHEMES, TOPOLOGIES, Deployment, analytic_traffic, compare_presets,
                                 deployment_bytes, node_limit_sweep)
from k3lite.interconnect.headline import forward_bytes_at, layer_bytes_at
from k3lite.interconnect.routing import reach_caps
from k3lite.interconnect.sentences import (comparison_sentence, layer_sentence, node_limit_sentence,
                                          routing_rule_words)
from k3lite.model.presets import get_preset
from wording_check import wording_problems

PRESETS = ("kimi-k3", "kimi-k2", "deepseek-v3", "lite")
DEPLOYMENTS = [("multi-node-8x8", 64), ("multi-node-8x8", 16), ("nvl72", 64), ("dgx-b300", 8), ("super-node-64", 32)]


def deployments():
    for topology, ep in DEPLOYMENTS:
        for scheme in SCHEMES:
            for dispatch, combine in (("fp8", "bf16"), ("bf16", "fp8")):
                yield Deployment(TOPOLOGIES[topology], ep, dispatch, combine, 0, scheme)


@pytest.mark.parametrize("preset", PRESETS)
def test_headline_at_the_assumed_values_is_the_analytic_bytes(preset):
    cfg = get_preset(preset)
    for dep in deployments():
        if cfg.moe.n_routed_experts < dep.ep_size:
            continue
        assert layer_bytes_at(cfg, dep) == pytest.approx(deployment_bytes(cfg, dep).total, rel=1e-12)
        assert forward_bytes_at(cfg, dep) == pytest.approx(analytic_traffic(cfg, dep).per_forward, rel=1e-12)
    dep = Deployment(TOPOLOGIES["multi-node-8x8"], 8, "fp8", "bf16")
    b = deployment_bytes(cfg, dep)
    dim = cfg.moe.latent_dim or cfg.d_model
    # one more byte per combine element adds dim bytes to every copy's combine record
    assert layer_bytes_at(cfg, dep, combine_elem_bytes=3) - b.total == pytest.approx(b.copies.total * dim)
    assert layer_bytes_at(cfg, dep, copies_scale=1.2) == pytest.approx(1.2 * b.total)
    assert layer_bytes_at(cfg, dep, metadata_scale=0) == pytest.approx(b.total - b.metadata)
    with pytest.raises(ValueError, match="bytes per element"):
        layer_bytes_at(cfg, dep, dispatch_elem_bytes=0)


def _layer(preset, topology, ep, scheme, dispatch, combine):
    t = analytic_traffic(get_preset(preset), Deployment(TOPOLOGIES[topology], ep, dispatch, combine, 0, scheme))
    return layer_sentence(t, 3)


def _node_limit(preset, topology, ep, dispatch, combine):
    sweep = node_limit_sweep(get_preset(preset), topology, ep, dispatch, combine)
    dep = Deployment(TOPOLOGIES[topology], ep, dispatch, combine)
    m = get_preset(preset).moe
    cap = reach_caps(m.n_routed_experts, ep, dep.gpus_per_domain, m.n_groups, m.topk_groups)[1] if (
        m.topk_groups < m.n_groups) else 0
    return (node_limit_sentence(sweep, dep.n_domains, routing_rule_words(m, dep), cap)
            or "no limit below the domains routes a token")


def test_a_node_limit_is_measured_below_the_models_own():
    """DeepSeek-V3's own rule keeps a token on at most 4 of 8 nodes: the sentence says so and measures a limit
    below it (a limit of 4 would cut nothing); K3, with no group rule, is measured at 4."""
    ds, k3 = (_node_limit(p, "multi-node-8x8", 64, "fp8", "bf16") for p in ("deepseek-v3", "kimi-k3"))
    assert "8 groups, best 4, so at most 4 of 8 nodes" in ds and "M = 3 of 8 domains" in ds
    assert "by 0% with DeepEP's normal" not in ds
    assert "Its own routing" not in k3 and "M = 4 of 8 domains" in k3


def _comparison(scheme, dispatch, combine, limit):
    rows = {r.name: r for r in compare_presets(("kimi-k2", "kimi-k3"), "multi-node-8x8", 64, dispatch, combine, limit,
                                               scheme)}
    one = {r.name: r for r in compare_presets(("kimi-k2", "kimi-k3"), "dgx-b300", 8, dispatch, combine, 0, scheme)}
    return comparison_sentence(rows, one, get_preset("kimi-k3"), get_preset("kimi-k2"))


def test_sentences_take_their_comparison_words_from_the_numbers():
    fmts = (("fp8", "bf16"), ("bf16", "fp8"))
    layer = [dict(preset=p, topology=t, ep=e, scheme=s, dispatch=d, combine=c) for p in PRESETS
             for t, e in DEPLOYMENTS for s in SCHEMES for d, c in fmts[:1] if get_preset(p).moe.n_routed_experts >= e]
    assert wording_problems(_layer, layer) == []
    limited = [dict(preset=p, topology=t, ep=e, dispatch=d, combine=c) for p in ("kimi-k3", "deepseek-v3")
               for t, e in (("multi-node-8x8", 64), ("multi-node-8x8", 32)) for d, c in fmts]
    assert wording_problems(_node_limit, limited) == []
    compared = [dict(scheme=s, dispatch=d, combine=c, limit=m) for s in SCHEMES for d, c in fmts for m in (0, 4)]
    assert wording_problems(_comparison, compared) == []


def test_node_limit_sentence_says_fewer_only_when_the_normal_kernels_send_fewer():
    sweep = {"direct": [(1, 100.0), (4, 400.0), (8, 800.0)], "normal": [(1, 50.0), (4, 200.0), (8, 400.0)],
             "low-latency": [(1, 90.0), (4, 420.0), (8, 820.0)]}
    assert "2.00x fewer NIC bytes than direct" in node_limit_sentence(sweep, 8)
    swapped = {**sweep, "normal": [(1, 200.0), (4, 800.0), (8, 900.0)]}
    assert "2.00x more NIC bytes than direct" in node_limit_sentence(swapped, 8)
    assert node_limit_sentence({s: [(1, 5.0)] for s in sweep}, 1) == ""


def test_interconnect_headline_moves_with_each_assumption():
    from k3lite.analytic.sensitivity import Assumption, swings

    cfg, dep = get_preset("kimi-k3"), Deployment(TOPOLOGIES["multi-node-8x8"], 64, "fp8", "bf16", 0, "normal")
    ranked = swings(partial(layer_bytes_at, cfg, dep), [
        Assumption("dispatch_elem_bytes", "dispatch", 1.0, ""), Assumption("combine_elem_bytes", "combine", 2.0, ""),
        Assumption("copies_scale", "copies", 1.0, ""), Assumption("metadata_scale", "metadata", 1.0, "")])
    assert ranked[0].name == "copies" and ranked[0].width == pytest.approx(0.4)
    assert ranked[-1].name == "metadata"
