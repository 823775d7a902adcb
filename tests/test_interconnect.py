"""Interconnect model: exact expectations vs enumeration and Monte-Carlo, wire formats, and a real gloo run."""
import itertools
import math
import os
import socket
from pathlib import Path

import numpy as np
import pytest
import torch

from k3lite.config import get_preset
from k3lite.interconnect import (
    Deployment, MeasureSpec, PortInUseError, analytic_traffic, compare_presets, copy_matrix, count_copies, decode,
    encode, expected_copies, expert_to_gpu, get_topology, layer_bytes, measure, predicted_for_routing, sample_uniform_routing, wire_format,
)


# ------------------------------------------------------------------------------------------ expectations
def _enumerate(n_experts, top_k, ep_size, g):
    """Brute force over every k-subset and every source GPU: exact mean remote copies (intra, inter)."""
    place = expert_to_gpu(n_experts, ep_size)
    intra = inter = 0.0
    subsets = list(itertools.combinations(range(n_experts), top_k))
    for src in range(ep_size):
        for sub in subsets:
            dests = {int(place[e]) for e in sub} - {src}
            intra += sum(d // g == src // g for d in dests)
            inter += sum(d // g != src // g for d in dests)
    n = len(subsets) * ep_size
    return intra / n, inter / n


@pytest.mark.parametrize("n_experts,top_k,ep_size,g", [(8, 2, 4, 2), (12, 3, 6, 3), (10, 3, 4, 2), (9, 4, 3, 3)])
def test_expected_copies_equals_enumeration(n_experts, top_k, ep_size, g):
    c = expected_copies(n_experts, top_k, ep_size, g)
    intra, inter = _enumerate(n_experts, top_k, ep_size, g)
    assert c.remote_intra == pytest.approx(intra, abs=1e-12)
    assert c.remote_inter == pytest.approx(inter, abs=1e-12)


def test_closed_form_matches_issue_formula():
    # E[distinct] = G (1 - C(E - E/G, k) / C(E, k)): DeepSeek-V3 on one 8-GPU node
    c = expected_copies(256, 8, 8, 8)
    p = 1 - math.comb(256 - 32, 8) / math.comb(256, 8)
    assert c.gpus_hit == pytest.approx(8 * p, rel=1e-12)
    assert c.remote == pytest.approx(7 * p, rel=1e-12) and c.remote_inter == 0


@pytest.mark.parametrize("n_experts,top_k,ep_size,g,node_limit", [
    (64, 8, 16, 4, 0), (64, 8, 16, 4, 2), (20, 4, 6, 3, 0), (896, 16, 64, 8, 4),
])
def test_expected_copies_equals_monte_carlo(n_experts, top_k, ep_size, g, node_limit):
    n = 20000
    topk = sample_uniform_routing(n, n_experts, top_k, ep_size, g, node_limit, seed=1)
    assert all(len(set(row)) == top_k for row in topk[:200])  # without replacement
    if node_limit:
        doms = expert_to_gpu(n_experts, ep_size)[topk] // g
        assert max(len(set(r)) for r in doms) <= node_limit
    src = np.random.default_rng(2).integers(0, ep_size, n)
    intra, inter = count_copies(topk, src, expert_to_gpu(n_experts, ep_size), g)
    c = expected_copies(n_experts, top_k, ep_size, g, node_limit)
    for sample, expect in ((intra, c.remote_intra), (inter, c.remote_inter)):
        tol = 5 * sample.std() / math.sqrt(n) + 1e-9  # 5 standard errors
        assert abs(sample.mean() - expect) < tol, (sample.mean(), expect, tol)


def test_node_limit_reduces_inter_domain_copies():
    free = expected_copies(256, 8, 64, 8)
    limited = expected_copies(256, 8, 64, 8, node_limit=4)
    assert limited.remote_inter < free.remote_inter
    with pytest.raises(ValueError, match="top_k"):
        expected_copies(64, 20, 16, 4, node_limit=1)  # only 4 GPUs x 4 experts = 16 reachable


def test_copy_matrix_agrees_with_count_copies():
    topk = sample_uniform_routing(500, 24, 4, 6, 2, seed=3)
    src = np.random.default_rng(4).integers(0, 6, 500)
    place = expert_to_gpu(24, 6)
    m = copy_matrix(topk, src, place, 6)
    intra, inter = count_copies(topk, src, place, 2)
    assert m.sum() == intra.sum() + inter.sum()
    assert np.trace(m) == 0


# ------------------------------------------------------------------------------------------ bytes
def test_fp8_row_bytes_include_per_128_scales():
    assert wire_format("fp8").row_bytes(7168) == 7168 + 4 * 56
    assert wire_format("fp8").row_bytes(130) == 130 + 8  # a partial group still needs a scale
    assert wire_format("bf16").row_bytes(7168) == 2 * 7168


@pytest.mark.parametrize("fmt,tol", [("fp32", 0.0), ("bf16", 2 ** -8), ("fp8", 2 ** -3)])
def test_encode_decode_roundtrip(fmt, tol):
    x = torch.randn(5, 200)
    buf = encode(x, fmt)
    assert buf.dtype == torch.uint8 and buf.shape == (5, wire_format(fmt).row_bytes(200))
    back = decode(buf, 200, fmt)
    assert ((back - x).abs() <= tol * x.abs() + 1e-6 * (fmt != "fp32")).all()


@pytest.mark.parametrize("fmt", ["fp8", "bf16"])
def test_latent_quarter_cuts_dispatch_bytes_4x(fmt):
    cfg = get_preset("k3-estimated")
    dep = Deployment(get_topology("nvl72"), 64, fmt, fmt)
    full = analytic_traffic(cfg.with_(moe={"latent_dim": 0}), dep, metadata=False)
    quarter = analytic_traffic(cfg.with_(moe={"latent_dim": cfg.d_model // 4}), dep, metadata=False)
    assert full.dim_on_wire == 7168 and quarter.dim_on_wire == 1792
    ratio = (full.per_layer.dispatch_intra + full.per_layer.dispatch_inter) / (
        quarter.per_layer.dispatch_intra + quarter.per_layer.dispatch_inter)
    assert ratio == pytest.approx(4.0, rel=1e-12)
    assert full.per_layer.combine_intra / quarter.per_layer.combine_intra == pytest.approx(4.0, rel=1e-12)


def test_presets_on_nvl72_are_all_intra_and_scale_with_layers():
    rows = compare_presets(topology="nvl72", ep_size=64)
    assert [r.name for r in rows] == ["deepseek-v3", "kimi-k2", "k3-estimated"]
    for r in rows:
        assert r.per_layer.inter == 0 and r.per_layer.intra > 0
        assert r.per_forward == pytest.approx(r.per_layer.total * r.n_moe_layers)
    ds = rows[0]
    expect = layer_bytes(ds.copies.remote_intra, 0, 7168, 8, "fp8", "bf16")
    assert ds.per_layer.total == pytest.approx(expect.total)


def test_multi_node_sends_most_bytes_over_the_nic():
    r = analytic_traffic(get_preset("kimi-k2"), Deployment(get_topology("multi-node-8x8"), 64))
    assert r.per_layer.inter > r.per_layer.intra > 0
    assert r.wire_s_layer == pytest.approx(r.per_layer.intra / 900e9 + r.per_layer.inter / 100e9)


def test_deployment_validation():
    topo = get_topology("dgx-b300")
    with pytest.raises(ValueError, match="ep_size"):
        Deployment(topo, 16)
    with pytest.raises(ValueError, match="or a multiple of it"):
        Deployment(get_topology("multi-node-8x8"), 12)
    with pytest.raises(ValueError, match="precision"):
        Deployment(topo, 8, dispatch="int4")
    with pytest.raises(ValueError, match="ranks"):
        MeasureSpec(ranks=9)


# ------------------------------------------------------------------------------------------ measured
def _children() -> set[int]:
    me, kids = os.getpid(), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            kids.add(int(stat.parent.name))
    return kids


@pytest.mark.parametrize("ranks,rpn,dispatch,combine,node_limit", [
    (2, 1, "fp32", "fp32", 0),
    (4, 2, "fp8", "bf16", 1),  # 2 pretend domains, each token limited to one of them by the real router
])
def test_measured_bytes_equal_analytic_and_output_equals_single_process(ranks, rpn, dispatch, combine, node_limit):
    before = _children()
    spec = MeasureSpec(ranks=ranks, ranks_per_node=rpn, tokens_per_rank=24, dispatch=dispatch, combine=combine,
                       node_limit=node_limit, seed=ranks)
    res = measure(spec)
    assert _children() <= before  # every worker reaped
    for m, p in zip(res.measured, res.predicted):
        for key in p:
            assert m[key] == p[key], (key, m, p)  # exact byte counts, rank by rank
    total = res.total("measured")
    assert total["dispatch_inter"] > 0 and total["combine_inter"] > 0
    if rpn > 1:
        assert total["dispatch_intra"] > 0
    assert res.outputs_match, res.max_rel_err
    if node_limit:
        domains = expert_to_gpu(spec.n_experts, ranks)[res.topk_idx] // rpn  # (N, k)
        assert max(len(set(row)) for row in domains.tolist()) <= node_limit
    if dispatch == "fp32":
        assert res.max_rel_err < 1e-5  # same math, only the summation order differs
    # the comparison can fail: the same counts for a different routing (tokens moved to other ranks) differ
    moved = predicted_for_routing(spec, (res.topk_idx + spec.n_experts // spec.ranks) % spec.n_experts)
    assert moved != [{k: m[k] for k in p} for m, p in zip(res.measured, res.predicted)]


def test_port_in_use_is_a_clear_error():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"port {port}.*in use"):
            measure(MeasureSpec(ranks=2), port=port)


def test_timeout_kills_workers():
    before = _children()
    with pytest.raises(TimeoutError, match="timeout"):
        measure(MeasureSpec(ranks=2, timeout_s=0.3))
    assert _children() <= before


# ------------------------------------------------------------------------------------------ figures + page
def test_figures_carry_the_numbers():
    from k3lite.viz.interconnect import compare_figure, traffic_figure

    rows = compare_presets()
    fig = compare_figure(rows)
    stacked = sum(np.array(tr.y, dtype=float) for tr in fig.data if tr.type == "bar")
    assert np.allclose(stacked, [r.per_forward / 1e6 for r in rows])
    fig = traffic_figure(rows[2])
    assert sum(tr.y[0] for tr in fig.data if tr.xaxis == "x") == pytest.approx(rows[2].per_layer.total / 1e3)


def _page():
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    return AppTest.from_file(str(ROOT / "views" / "interconnect.py"), default_timeout=120)


def test_page_reacts_to_controls_and_shows_errors_not_tracebacks():
    at = _page().run()
    assert not at.exception and not at.error
    per_layer = at.metric[0].value
    at.select_slider(key="ic_latent").set_value("1/4").run()  # K3: 1/2 -> 1/4 halves the payload
    assert at.metric[0].value != per_layer
    at.slider(key="ic_experts").set_value(40).run()  # fewer experts than the 64 GPUs
    assert not at.exception
    assert any("at least one expert per GPU" in e.value for e in at.error)


def test_page_measure_button_runs_the_real_gloo_layer():
    at = _page().run()
    at.radio(key="ic_m_ranks").set_value(2)
    at.slider(key="ic_m_tokens").set_value(8)
    at.button(key="ic_m_go").click().run()
    assert not at.exception and not at.error
    text = at.code[0].value
    assert "same routing: True" in text and "MATCH" in text


def test_a_crashing_worker_is_reported_and_the_others_reaped(monkeypatch):
    import sys

    before = _children()
    monkeypatch.setattr(sys, "executable", "/bin/false")  # every "worker" exits 1 at once
    with pytest.raises(RuntimeError, match="exited with code 1"):
        measure(MeasureSpec(ranks=2, timeout_s=10))
    assert _children() <= before
