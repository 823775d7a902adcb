"""Interconnect model: exact expectations per scheme vs enumeration and Monte-Carlo, record layouts, wire bytes."""
import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from k3lite.model.presets import get_preset
from k3lite.viz.style import fmt_bytes, fmt_seconds
from k3lite.interconnect import (
    REFERENCE, SCHEMES, Deployment, analytic_traffic, compare_presets, count_copies, even_expert_counts,
    expected_copies, expert_to_gpu, get_topology, group_limited_hits, link_copies, node_limit_sweep, record_bytes,
    sample_uniform_routing, snap_experts, wire_bytes_per_token, wire_format,
)


# ------------------------------------------------------------------------------------------ slow references
def _copies_by_hand(subset, src, place, g, scheme):
    """One token: (intra, inter) copies, written out from the scheme's rule with Python sets."""
    dom = lambda j: j // g  # noqa: E731
    if scheme == "low-latency":
        dests = [int(place[e]) for e in subset]
        return (sum(d != src and dom(d) == dom(src) for d in dests), sum(dom(d) != dom(src) for d in dests))
    gpus = {int(place[e]) for e in subset}
    if scheme == "direct":
        gpus.discard(src)
        return sum(dom(d) == dom(src) for d in gpus), sum(dom(d) != dom(src) for d in gpus)
    domains = {dom(d) for d in gpus}
    entries = {n: n * g + src % g for n in domains}  # the same local rank in each hit domain
    inter = sum(n != dom(src) for n in domains)
    intra = sum(d != entries[dom(d)] for d in gpus)  # NVLink forwarding from the entry GPU
    return intra, inter


def _enumerate(n_experts, top_k, ep_size, g, scheme):
    """Brute force over every source GPU and every routing the uniform model allows: exact means."""
    place = expert_to_gpu(n_experts, ep_size)
    subsets = list(itertools.combinations(range(n_experts), top_k))
    tot = np.zeros(2)
    for src in range(ep_size):
        for sub in subsets:
            tot += _copies_by_hand(sub, src, place, g, scheme)
    return tot / (len(subsets) * ep_size)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("n_experts,top_k,ep_size,g", [(8, 2, 4, 2), (12, 3, 6, 3), (10, 3, 4, 2), (9, 4, 3, 3)])
def test_expected_copies_equal_enumeration(scheme, n_experts, top_k, ep_size, g):
    """Without a node limit the expectation is exact (node-limited routing: the Gate test below)."""
    c = expected_copies(n_experts, top_k, ep_size, g, 0, scheme)
    intra, inter = _enumerate(n_experts, top_k, ep_size, g, scheme)
    assert (c.intra, c.inter) == pytest.approx((intra, inter), abs=1e-12)


MC_CONFIGS = [  # (E, k, G, g, M): six settings, two of them DeepSeek-V3 / K3 on 8 x 8
    (64, 8, 16, 4, 0), (64, 8, 16, 4, 2), (20, 4, 6, 3, 0), (256, 8, 64, 8, 4), (896, 16, 64, 8, 4), (96, 6, 24, 4, 3),
]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("n_experts,top_k,ep_size,g,node_limit", MC_CONFIGS)
def test_expected_copies_within_1pct_of_monte_carlo(scheme, n_experts, top_k, ep_size, g, node_limit):
    n = 40000
    topk = sample_uniform_routing(n, n_experts, top_k, ep_size, g, node_limit, seed=1)
    assert all(len(set(row)) == top_k for row in topk[:200])  # without replacement
    place = expert_to_gpu(n_experts, ep_size)
    if node_limit:
        assert max(len(set(r)) for r in (place[topk] // g).tolist()) <= node_limit
    src = np.random.default_rng(2).integers(0, ep_size, n)
    intra, inter = count_copies(topk, src, place, g, scheme)
    c = expected_copies(n_experts, top_k, ep_size, g, node_limit, scheme)
    for sample, expect in ((intra, c.intra), (inter, c.inter)):  # within 1% or 4 standard errors of the sample
        tol = max(0.01 * expect, 4 * sample.std() / math.sqrt(n))
        assert sample.mean() == pytest.approx(expect, abs=tol), (sample.mean(), expect)


class DeepSeekV3Gate(torch.nn.Module):
    """DeepSeek-V3's router as its inference code writes it (deepseek-ai/DeepSeek-V3 @ 9b4e978, inference/model.py
    `Gate`, lines 535-598), sigmoid scores and a (zero) bias, so groups are ranked by the sum of their top-2 scores.
    Written out here, not imported from k3lite, so the model is checked against the rule, not against itself."""

    def __init__(self, dim, n_routed_experts, topk, n_groups, topk_groups, route_scale=2.5, seed=0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.topk, self.n_groups, self.topk_groups, self.route_scale = topk, n_groups, topk_groups, route_scale
        # random weights at the usual 1/sqrt(dim) scale (the released ones are trained)
        self.weight = torch.nn.Parameter(torch.randn(n_routed_experts, dim, generator=gen) * dim ** -0.5)
        self.bias = torch.nn.Parameter(torch.zeros(n_routed_experts))

    def forward(self, x):
        scores = F.linear(x, self.weight).sigmoid()
        original_scores = scores
        scores = scores + self.bias
        if self.n_groups > 1:
            scores = scores.view(x.size(0), self.n_groups, -1)
            group_scores = scores.topk(2, dim=-1)[0].sum(dim=-1)  # bias present: sum of the top-2
            indices = group_scores.topk(self.topk_groups, dim=-1)[1]
            mask = scores.new_ones(x.size(0), self.n_groups, dtype=bool).scatter_(1, indices, False)
            scores = scores.masked_fill_(mask.unsqueeze(-1), float("-inf")).flatten(1)
        indices = torch.topk(scores, self.topk, dim=-1)[1]
        weights = original_scores.gather(1, indices)
        weights /= weights.sum(dim=-1, keepdim=True)
        return weights * self.route_scale, indices


@pytest.mark.parametrize("n_experts,top_k,ep_size,g,node_limit", [
    (256, 8, 64, 8, 4), (896, 16, 64, 8, 7), (12, 3, 6, 2, 2), (64, 6, 16, 2, 3), (40, 12, 8, 2, 3),
])
def test_group_limited_hits_equal_the_plain_sampler(n_experts, top_k, ep_size, g, node_limit):
    """The fast expectation (order statistics, exact GPU average given each domain's count) against the plain
    sampler of the same rule (every score drawn, top-k taken), within four combined standard errors."""
    n = 65536
    topk = sample_uniform_routing(n, n_experts, top_k, ep_size, g, node_limit, seed=7)
    gpu = expert_to_gpu(n_experts, ep_size)[topk]
    hit = np.zeros((n, ep_size), dtype=bool)
    np.put_along_axis(hit, gpu, True, axis=1)
    gpus, doms = hit.sum(1), hit.reshape(n, ep_size // g, g).any(2).sum(1)
    h = group_limited_hits(n_experts, top_k, ep_size, g, node_limit)
    for sample, mean, se in ((gpus, h.gpus, h.gpus_se), (doms, h.domains, h.domains_se)):
        tol = 4 * math.hypot(se, sample.std() / math.sqrt(n)) + 1e-9
        assert sample.mean() == pytest.approx(mean, abs=tol), (sample.mean(), mean, tol)


@pytest.mark.parametrize("n_experts,top_k,ep_size,g,node_limit", [
    (256, 8, 64, 8, 4), (896, 16, 64, 8, 4), (64, 6, 16, 2, 3),
])
def test_node_limited_expectation_matches_deepseek_v3_gate(n_experts, top_k, ep_size, g, node_limit):
    """Node-limited routing picked M random domains and spread k experts uniformly over them, so
    DeepSeek-V3 on 8 x 8 (256 experts, top-8, M = 4) hit 3.63 domains per token and 3.175 NIC copies; the Gate's
    rule (groups ranked by their top-2 sum) lands a token in ~3.97 of its 4 chosen domains, ~3.47 NIC copies."""
    n, dim = 16384, 64
    gate = DeepSeekV3Gate(dim, n_experts, top_k, ep_size // g, node_limit)
    x = torch.randn(n, dim, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        topk = gate(x)[1].numpy()
    place = expert_to_gpu(n_experts, ep_size)
    gpu = place[topk]
    assert max(len(set(r)) for r in (gpu // g).tolist()) <= node_limit
    src = np.random.default_rng(2).integers(0, ep_size, n)
    hits = group_limited_hits(n_experts, top_k, ep_size, g, node_limit)
    assert hits.gpus_se < 0.003 and hits.domains_se < 0.004  # the stated sampling error
    doms_gate = np.array([len(set(r)) for r in (gpu // g).tolist()])
    gpus_gate = np.array([len(set(r)) for r in gpu.tolist()])
    assert doms_gate.mean() == pytest.approx(hits.domains, abs=0.02)
    assert gpus_gate.mean() == pytest.approx(hits.gpus, abs=0.05)
    for scheme in SCHEMES:  # within 1% (the random-weight Gate's logits are not exactly i.i.d. N(0, 1))
        c = expected_copies(n_experts, top_k, ep_size, g, node_limit, scheme)
        intra, inter = count_copies(topk, src, place, g, scheme)
        assert inter.mean() == pytest.approx(c.inter, rel=0.01, abs=0.02), scheme
        assert intra.mean() == pytest.approx(c.intra, rel=0.01, abs=0.02), scheme


@pytest.mark.parametrize("scheme", SCHEMES)
def test_link_copies_agree_with_count_copies_and_the_hand_rule(scheme):
    topk = sample_uniform_routing(300, 24, 4, 6, 2, seed=3)
    src = np.random.default_rng(4).integers(0, 6, 300)
    place = expert_to_gpu(24, 6)
    mats = link_copies(topk, src, place, 2, scheme)
    intra, inter = count_copies(topk, src, place, 2, scheme)
    assert mats["dispatch_intra"].sum() == intra.sum() and mats["dispatch_inter"].sum() == inter.sum()
    by_hand = np.array([_copies_by_hand(t, s, place, 2, scheme) for t, s in zip(topk.tolist(), src)])
    assert (by_hand[:, 0] == intra).all() and (by_hand[:, 1] == inter).all()
    same = np.arange(6)[:, None] // 2 == np.arange(6)[None, :] // 2
    for side, mask in (("intra", same), ("inter", ~same)):
        assert (mats[f"dispatch_{side}"][~mask] == 0).all() and np.trace(mats[f"dispatch_{side}"]) == 0
        assert (mats[f"combine_{side}"] == mats[f"dispatch_{side}"].T).all()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_masked_slots_send_nothing_and_bad_ids_are_refused(scheme):
    """DeepEP marks a masked top-k slot with -1; numpy read it as the last expert, so a token with
    a masked slot was counted as also going to the last GPU."""
    place = expert_to_gpu(16, 4)  # 4 experts per GPU, 2 domains of 2
    src = np.array([0, 0, 3])
    masked = np.array([[1, -1], [-1, -1], [13, -1]])
    kept = [[1], [], [13]]  # the same routing written without the masked slots
    intra, inter = count_copies(masked, src, place, 2, scheme)
    by_hand = np.array([_copies_by_hand(t, s, place, 2, scheme) for t, s in zip(kept, src)])
    assert (intra == by_hand[:, 0]).all() and (inter == by_hand[:, 1]).all()
    assert intra.sum() == inter.sum() == 0  # expert 1 and 13 sit on each token's own GPU; -1 goes nowhere
    mats = link_copies(masked, src, place, 2, scheme)
    assert all(m.sum() == 0 for m in mats.values())
    for bad in (16, -2):
        with pytest.raises(ValueError, match=r"\[0, 16\) or -1"):
            count_copies(np.array([[0, bad]]), np.array([0]), place, 2, scheme)
        with pytest.raises(ValueError, match=r"\[0, 16\) or -1"):
            link_copies(np.array([[0, bad]]), np.array([0]), place, 2, scheme)


def test_closed_form_matches_issue_formula():
    # E[distinct] = G (1 - C(E - E/G, k) / C(E, k)): DeepSeek-V3 on one 8-GPU node, all schemes reduce to NVLink
    c = expected_copies(256, 8, 8, 8)
    p = 1 - math.comb(256 - 32, 8) / math.comb(256, 8)
    assert c.gpus_hit == pytest.approx(8 * p, rel=1e-12)
    assert c.intra == pytest.approx(7 * p, rel=1e-12) and c.inter == 0
    assert expected_copies(256, 8, 8, 8, scheme="normal") == c


def test_node_limit_caps_nic_copies_under_normal_not_low_latency():
    # DeepSeek-V3 on 8 x 8: the node limit trims direct copies a little, and caps RDMA copies under normal at M
    free, lim = (expected_copies(256, 8, 64, 8, m, "direct") for m in (0, 4))
    assert round(free.inter, 2) == 6.72 and lim.inter < free.inter
    normal = expected_copies(256, 8, 64, 8, 4, "normal")
    # a token reaches nearly all M = 4 chosen nodes; 7 of 8 are remote for a token on a uniform node
    assert 3.9 < normal.domains_hit <= 4 and normal.inter == pytest.approx(normal.domains_hit * 7 / 8)
    ll = [expected_copies(256, 8, 64, 8, m, "low-latency") for m in (0, 4)]
    assert ll[0][:2] == ll[1][:2] == (8 * 7 / 64, 8 * 56 / 64)  # k (g - 1)/G and k (G - g)/G, node limit or not
    with pytest.raises(ValueError, match="top_k"):
        expected_copies(64, 20, 16, 4, node_limit=1)  # only 4 GPUs x 4 experts = 16 reachable


# ------------------------------------------------------------------------------------------ bytes
def test_record_layouts_follow_deepep():
    row8, row16 = wire_format("fp8").row_bytes(7168), wire_format("bf16").row_bytes(7168)
    assert row8 == 7168 + 4 * 56 and wire_format("fp8").row_bytes(130) == 130 + 8
    assert record_bytes("direct", "dispatch", 7168, 8, "fp8") == row8 + 4 + 12 * 8  # int64 topk_idx + fp32 weight
    assert record_bytes("direct", "combine", 7168, 8, "bf16") == row16 + 4 + 4 * 8
    assert record_bytes("normal", "dispatch", 7168, 8, "fp8") == 7472  # align16(7392 + 8 + 64) = 7472
    assert record_bytes("normal", "combine", 7168, 8, "bf16") == 14384  # align16(14336 + 8 + 32)
    assert record_bytes("low-latency", "dispatch", 7168, 8, "fp8") == 7408  # DeepEP's test: hidden + hidden/32 + 16
    assert record_bytes("low-latency", "combine", 7168, 8, "bf16") == row16
    with pytest.raises(ValueError, match="scheme"):
        record_bytes("ring", "dispatch", 8, 1, "fp8")


def test_wire_bytes_is_copies_times_records_and_accepts_moe_configs():
    cfg = get_preset("kimi-k3")
    for scheme in SCHEMES:
        b = wire_bytes_per_token(cfg, "multi-node-8x8", 64, scheme, 4)
        c = expected_copies(896, 16, 64, 8, 4, scheme)
        assert b.copies == c and b.dispatch_inter == pytest.approx(c.inter * b.dispatch_record)
        assert b.total == pytest.approx(c.total * (b.dispatch_record + b.combine_record))
    same = wire_bytes_per_token(cfg.moe, d_model=cfg.d_model)
    assert same == wire_bytes_per_token(cfg) == wire_bytes_per_token(cfg, REFERENCE.topology, REFERENCE.ep_size,
                                                                     REFERENCE.scheme)
    with pytest.raises(ValueError, match="d_model"):
        wire_bytes_per_token(cfg.moe)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_latent_quarter_cuts_payload_bytes_4x(scheme):
    cfg = get_preset("kimi-k3")
    dep = Deployment(get_topology("nvl72"), 64, "bf16", "bf16", scheme=scheme)
    full = analytic_traffic(cfg.with_(moe={"latent_dim": 0}), dep)
    quarter = analytic_traffic(cfg.with_(moe={"latent_dim": cfg.d_model // 4}), dep)
    assert full.dim_on_wire == 7168 and quarter.dim_on_wire == 1792
    payload = lambda t: t.per_layer.total - t.per_layer.metadata  # noqa: E731
    assert payload(full) / payload(quarter) == pytest.approx(4.0, rel=1e-12)


def test_presets_on_nvl72_are_all_intra_and_scale_with_layers():
    rows = compare_presets(topology="nvl72", ep_size=64)
    assert [r.name for r in rows] == ["deepseek-v3", "kimi-k2", "kimi-k3"]
    for r in rows:
        assert r.per_layer.inter == 0 and r.per_layer.intra > 0
        assert r.per_forward == pytest.approx(r.per_layer.total * r.n_moe_layers)


def test_multi_node_time_adds_both_links():
    r = analytic_traffic(get_preset("kimi-k2"), Deployment(get_topology("multi-node-8x8"), 64, scheme="direct"))
    assert r.per_layer.inter > r.per_layer.intra > 0
    assert r.wire_s_layer == pytest.approx(r.per_layer.intra / 900e9 + r.per_layer.inter / 100e9)


def test_node_limit_sweep_only_moves_hierarchical_schemes():
    """A deployment's node limit on top of the model's own rule: K3 (no groups) sends more NIC bytes at every
    larger M; DeepSeek-V3, whose released rule keeps 4 of its 8 groups (= nodes on 8 x 8), stops growing at M = 4,
    and no limit at all is its own rule."""
    for name, grows_to in (("kimi-k3", 8), ("deepseek-v3", 4)):
        sweep = node_limit_sweep(get_preset(name), "multi-node-8x8", 64)
        ll = [b for _, b in sweep["low-latency"]]
        assert max(ll) == pytest.approx(min(ll))
        normal = dict(sweep["normal"])
        assert all(normal[m] < normal[m + 1] for m in range(1, grows_to)), name  # NIC bytes grow with M ...
        assert all(normal[m] == normal[grows_to] for m in range(grows_to, 9)), name  # ... up to the model's own
        assert normal[8] == pytest.approx(wire_bytes_per_token(get_preset(name), "multi-node-8x8", 64, "normal").inter)


def test_deployment_validation():
    topo = get_topology("dgx-b300")
    with pytest.raises(ValueError, match="ep_size"):
        Deployment(topo, 16)
    with pytest.raises(ValueError, match="or a multiple of it"):
        Deployment(get_topology("multi-node-8x8"), 12)
    with pytest.raises(ValueError, match="precision"):
        Deployment(topo, 8, dispatch="int4")
    with pytest.raises(ValueError, match="scheme"):
        Deployment(topo, 8, scheme="ring")


def test_cli_json_has_the_issue_fields(root):
    out = subprocess.run([sys.executable, "-m", "k3lite.interconnect", "analytic", "--presets", "deepseek-v3,kimi-k3",
                          "--topology", "multi-node-8x8", "--ep", "64", "--node-limit", "4", "--scheme", "normal",
                          "--json"], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)["presets"]
    ds = data["deepseek-v3"]
    b = wire_bytes_per_token(get_preset("deepseek-v3"), "multi-node-8x8", 64, "normal", 4)
    assert ds["intra_copies"] == pytest.approx(b.copies.intra) and ds["inter_copies"] == pytest.approx(b.copies.inter)
    assert ds["dispatch_bytes"] == pytest.approx(b.dispatch) and ds["combine_bytes"] == pytest.approx(b.combine)
    assert set(data) == {"deepseek-v3", "kimi-k3"}
    assert ds["routing"] == "8 groups, best 4, so at most 4 of 8 nodes (a node limit of 4 adds nothing)"
    assert data["kimi-k3"]["routing"] == "a node limit, at most 4 of 8 nodes"  # K3's config has no group limit
    bad = subprocess.run([sys.executable, "-m", "k3lite.interconnect", "analytic", "--ep", "12", "--topology",
                          "multi-node-8x8"], cwd=root, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "multiple" in bad.stderr and "Traceback" not in bad.stderr


# ------------------------------------------------------------------------------------------ DeepEP comparison
def test_deepep_comparison_reproduces_their_latency_and_counts_less():
    from k3lite.interconnect.deepep import LOW_LATENCY, comparison_table

    rows = comparison_table()
    assert len(rows) == 2 * (4 + len(LOW_LATENCY))
    for r in rows:
        assert 0 < r["ours / theirs"] < 1  # we never count the own GPU / node; they do
        if r["reported latency (µs)"] is not None:  # their bytes / their bandwidth = their latency (within 3%)
            assert r["their time (µs)"] == pytest.approx(r["reported latency (µs)"], rel=0.03)
    ll = [r for r in rows if r["kernels"] == "low-latency" and r["direction"] == "dispatch"]
    assert [r["ours / theirs"] for r in ll] == [round((ep - 1) / ep * 7408 / 7408, 3) for ep, *_ in LOW_LATENCY]


# ------------------------------------------------------------------------------------------ figures + page
def test_figures_carry_the_numbers():
    from k3lite.viz.interconnect import compare_figure, node_limit_figure, traffic_figure

    rows = compare_presets()
    fig = compare_figure(rows)
    stacked = sum(np.array(tr.y, dtype=float) for tr in fig.data if tr.type == "bar")
    assert np.allclose(stacked, [r.per_forward / 1e6 for r in rows])
    fig = traffic_figure(rows[2])
    assert sum(tr.y[0] for tr in fig.data if tr.xaxis == "x") == pytest.approx(rows[2].per_layer.total / 1e3)
    sweep = node_limit_sweep(get_preset("kimi-k3"), "multi-node-8x8", 64)
    fig = node_limit_figure(sweep, 4)
    assert len(fig.data) == 3 and fig.data[1].y[3] * 1e3 == pytest.approx(sweep["normal"][3][1])


def _page():
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    return AppTest.from_file(str(ROOT / "views" / "interconnect.py"), default_timeout=120)


def _has_section(at, word):
    """A section heading or an expander label names `word` (the page's sections moved into expanders)."""
    return any(word in h.value for h in at.subheader) or any(word in e.label for e in at.expander)


def _metric(at, label):
    return next(m.value for m in at.metric if m.label.startswith(label))


def test_page_reacts_to_controls_and_its_sentences_follow_the_numbers():
    at = _page().run()
    assert not at.exception and not at.error
    per_layer = _metric(at, "bytes / token / MoE layer")
    b = wire_bytes_per_token(get_preset("kimi-k3"), "multi-node-8x8", 64, "normal")
    assert per_layer == fmt_bytes(b.total)  # defaults: K3 on 8 x 8, DeepEP normal, no node limit
    # the app's units (raw "1,234,567 B" and "ns" here, MB and µs everywhere else)
    t = analytic_traffic(get_preset("kimi-k3"), Deployment(get_topology("multi-node-8x8"), 64, "fp8", "bf16",
                                                                 0, "normal"))
    assert _metric(at, "time on the wire") == fmt_seconds(t.wire_s_forward)
    topo = get_topology("multi-node-8x8")
    assert _metric(at, "NIC bytes / layer") == f"{fmt_bytes(b.inter)}, {fmt_seconds(b.inter / topo.inter_bw)}"
    text = " ".join(c.value for c in at.caption)
    k2, k3 = (wire_bytes_per_token(get_preset(n), "multi-node-8x8", 64, "normal") for n in ("kimi-k2", "kimi-k3"))
    assert f"{k3.copies.gpus_hit / k2.copies.gpus_hit:.2f}x as many GPUs" in text
    assert f"moves {k3.total / k2.total:.2f}x K2's bytes" in text
    at.radio(key="ic_scheme").set_value("low-latency").run()
    assert _metric(at, "bytes / token / MoE layer") != per_layer
    at.select_slider(key="ic_latent").set_value("1/4").run()
    assert not at.exception
    at.slider(key="ic_top_k").set_value(32).run()
    at.slider(key="ic_node_limit").set_value(1).run()  # one node of 8 GPUs x 14 experts: 112 >= 32, routable
    assert not at.exception and not at.error
    at.select_slider(key="ic_experts").set_value(64).run()  # 8 experts per node < top-32 with M = 1
    assert any("must be <= experts on node_limit=1" in e.value for e in at.error)
    # the rest of the page still renders: the comparison and DeepEP sections do not depend on the setting
    assert _has_section(at, "DeepEP") and len(at.dataframe) >= 2


def test_expert_counts_shard_evenly():
    assert even_expert_counts(64)[:3] == [64, 128, 192] and 896 in even_expert_counts(64)
    assert even_expert_counts(8) == list(range(8, 1025, 8))
    assert all(e % 48 == 0 and e % 8 == 0 for e in even_expert_counts(48))
    assert snap_experts(888, 64) == 896 and snap_experts(896, 48) == 912 and snap_experts(32, 64) == 64
    with pytest.raises(ValueError, match="multiple of"):
        even_expert_counts(64, lo=8, hi=60)


def test_node_limit_sweep_leaves_out_limits_that_cannot_route():
    cfg = get_preset("kimi-k3").with_(moe={"n_routed_experts": 64, "n_groups": 1, "topk_groups": 1})
    sweep = node_limit_sweep(cfg, "multi-node-8x8", 64)  # 8 experts per node, top-16: M = 1 cannot route
    assert [m for m, _ in sweep["normal"]] == list(range(2, 9))


def test_every_expert_slider_position_keeps_the_page():
    """With EP 64, moving E one notch from 896 (to 888) raised "needs n_experts divisible by ep_size"
    in the node-limit sweep although the node limit was off, and st.stop() removed the rest of the page (7 of 8
    slider positions). The slider now offers multiples of the EP size only; an old link or an EP change snaps E
    with a note, and every offered position renders the whole page."""
    at = _page().run()
    options = [int(o) for o in at.select_slider(key="ic_experts").options]
    assert options == even_expert_counts(64)
    for e in (options[0], 832, 960, options[-1]):
        at.select_slider(key="ic_experts").set_value(e).run()
        assert not at.exception and not at.error, (e, [x.value for x in at.error])
        assert _has_section(at, "DeepEP"), f"E = {e}: the page stopped early"
    at.select_slider(key="ic_ep").set_value(48).run()  # 1024 is no multiple of 48: snapped, with a note
    assert not at.exception and not at.error
    assert at.select_slider(key="ic_experts").value == snap_experts(options[-1], 48)
    assert any("does not split evenly over EP 48" in i.value for i in at.info)


def test_an_old_link_with_an_uneven_expert_count_snaps():
    at = _page()
    at.query_params.update(ic_experts="888", ic_ep="64")
    at.run()
    assert not at.exception and not at.error
    assert at.select_slider(key="ic_experts").value == 896
    assert any("E = 888 does not split evenly" in i.value for i in at.info)


def test_page_measure_button_runs_the_real_gloo_layer():
    at = _page().run()
    at.radio(key="ic_m_ranks").set_value(2)
    at.slider(key="ic_m_tokens").set_value(8)
    at.button(key="ic_m_go").click().run()
    assert not at.exception and not at.error
    text = next(c.value for c in at.code if "same routing" in c.value)  # the log (other code blocks: show_code)
    assert "same routing: True" in text and "MATCH" in text
    assert any("equal to the byte" in c.value and "off" in c.value for c in at.caption)


def test_interconnect_page_says_what_cancels_in_k3_vs_k2():
    """The sentence "K3 moves 1.00x K2's bytes ... because its latent is half of d_model": at 1.00x nothing
    was saved; top-16 vs top-8 cancels the halved latent. The sentence now says which side wins, from the numbers."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    for scheme in ("low-latency", "normal"):
        at = AppTest.from_file(str(ROOT / "views" / "interconnect.py"), default_timeout=300)
        at.query_params["ic_scheme"] = scheme
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        text = next(c.value for c in at.caption if "What to notice: on 8 x 8" in c.value)
        rows = {r.name: r for r in compare_presets(("kimi-k2", "kimi-k3"), "multi-node-8x8", 64, "fp8", "bf16",
                                                   0, scheme)}
        moved = rows["kimi-k3"].per_layer.total / rows["kimi-k2"].per_layer.total
        assert f"moves {moved:.2f}x K2's bytes per layer" in text
        assert "because its latent is half" not in text
        want = "cancels the narrower record: nothing is saved" if abs(moved - 1) < 0.05 else "outweighs"
        assert want in text, (scheme, moved)


def test_topology_drawing_is_built_from_the_library_numbers():
    """The drawn dispatch/combine. The arrows are link_copies for the drawn token, the hop labels
    are wire_bytes_per_token's numbers, and a changed topology or scheme changes the drawing."""
    from k3lite.interconnect import link_copies
    from k3lite.viz.topology import draw_topology, hop_label, topology_figure

    cfg = get_preset("kimi-k3")
    dep = Deployment(get_topology("multi-node-8x8"), 64, "fp8", "bf16", 0, "normal")
    d, fig = draw_topology(cfg, dep), topology_figure(cfg, dep)
    b = wire_bytes_per_token(cfg, "multi-node-8x8", 64, "normal")
    assert d.wire == b
    for link, out, back in (("nvlink", b.dispatch_intra, b.combine_intra), ("nic", b.dispatch_inter, b.combine_inter)):
        assert f"{fmt_bytes(out)} + {fmt_bytes(back)}" in d.labels[link] and d.labels[link] == hop_label(link, b)
        assert d.labels[link] in [tr.name for tr in fig.data]  # the legend entry of that link's arrows
    arrows = {link: [a for a in fig.layout.annotations if a.name == link] for link in ("nvlink", "nic")}
    assert len(arrows["nvlink"]) == int((d.hops["dispatch_intra"] > 0).sum()) > 0
    assert len(arrows["nic"]) == int((d.hops["dispatch_inter"] > 0).sum()) > 0  # 8 x 8: some copies cross a NIC
    hits = link_copies(d.experts[None], np.array([0]), np.repeat(np.arange(64), 896 // 64), 8, "normal")
    assert all((hits[k] == d.hops[k]).all() for k in hits)
    rack = topology_figure(cfg, Deployment(get_topology("nvl72"), 72, "fp8", "bf16", 0, "normal"))
    assert not [a for a in rack.layout.annotations if a.name == "nic"]  # one NVLink domain: no NIC hop
    assert len([s for s in rack.layout.shapes if s.type == "rect"]) == 1 < len([s for s in fig.layout.shapes])
    direct = draw_topology(cfg, Deployment(get_topology("multi-node-8x8"), 64, "fp8", "bf16", 0, "direct"))
    assert direct.labels != d.labels
    with pytest.raises(ValueError, match="nvlink"):
        hop_label("pcie", b)


def test_page_opens_on_the_topology_drawing():
    at = _page().run()
    assert not at.exception and not at.error
    first = at.get("plotly_chart")[0]
    spec = json.loads(first.proto.spec)
    assert "One token" in spec["layout"]["title"]["text"]  # the first figure is the drawn topology
    assert not any("Limiting each token" in c.value for c in at.caption)  # the slow sweep waits for its toggle
    at.toggle(key="ic_sweep").set_value(True).run()
    assert not at.exception and any("Limiting each token to M = 4 of 8 domains" in c.value for c in at.caption)
    at.selectbox(key="ic_topology").set_value("nvl72").run()
    assert json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"] != spec["layout"]["title"]["text"]
