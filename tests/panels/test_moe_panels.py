"""The MoE page's panels (k3lite.panels.moe): the comparison draws K3 and the compared model on one axis for every
choice, its sentences' words follow their numbers, its numbers are the figure's and THE wire-bytes function's, and
the variants it relies on count right."""
import re

import pytest

from k3lite.interconnect import REFERENCE, wire_bytes_per_token
from k3lite.model.presets import get_preset
from k3lite.model.variants import COMPARISONS, comparison_config
from k3lite.panels.core import pair_of
from k3lite.panels.moe import (CATEGORIES, K3_RATIO, RATIOS, compare_panel, k3_width_moe, layer_costs, path_panel,
                               situ_panel, tradeoff_panel)
from k3lite.viz.style import fmt_bytes
from wording_check import wording_problems

K3 = get_preset("kimi-k3")
BALANCE = {"violation": {"none": 4.0, "aux_loss": 3.5, "bias": 2.5, "quantile": 1.25}, "updates": 32,
           "tokens": 2000, "evidence": None}


def _bars(fig, name: str) -> list[float]:
    return list(next(t for t in fig.data if t.name == name).y)


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_the_comparison_draws_both_models(key):
    pair = pair_of(key)
    panel = compare_panel(pair)
    names = [t.name for t in panel.figure.data]
    assert names == ["Kimi K3", pair.label]
    assert all(list(t.x) == list(CATEGORIES) for t in panel.figure.data)  # one axis, the same four quantities
    assert panel.sentences and all(s.evidence for s in panel.sentences)
    assert all("ᵈ" in (t.hovertemplate or "") for t in panel.figure.data)


def test_the_comparison_words_follow_their_numbers():
    grid = [{"pair": pair_of(k), "balance": b} for k in COMPARISONS for b in (None, BALANCE)]
    grid += [{"pair": pair_of(k, base)} for k in ("no-latent", "deepseek-v3", "aux-loss")
             for base in (get_preset("kimi-k2"), get_preset("kimi-linear-48b-a3b"))]
    assert wording_problems(compare_panel, grid) == []
    grid = [{"moe": k3_width_moe(e, k, s, r), "ratio_label": label} for e in (64, 896) for k in (2, 16)
            for s in (0, 2) for label, r in RATIOS.items()]
    assert wording_problems(path_panel, grid) == []


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_the_numbers_said_are_the_figures_and_the_wire_function(key):
    pair = pair_of(key)
    panel = compare_panel(pair, BALANCE)
    k3_bars, other_bars = _bars(panel.figure, "Kimi K3"), _bars(panel.figure, pair.label)
    a = wire_bytes_per_token(pair.k3, REFERENCE.topology, REFERENCE.ep_size)  # THE wire-bytes function
    b = wire_bytes_per_token(pair.other, REFERENCE.topology, REFERENCE.ep_size)
    assert panel.values["k3_wire"] == a.total and panel.values["other_wire"] == b.total
    assert other_bars == [1.0] * 4  # the compared model is the unit; K3's bar is the sentence's "Nx"
    if a.total == b.total:  # nothing changes on this page's axes: one sentence says so, with the numbers
        assert k3_bars == [1.0] * 4 and "(the bars match)" in panel.text
        copies, wire = re.search(r"the same ([\d.]+) copies of .*?, ([\d.]+ [kMG]?B) on the wire", panel.text).groups()
        assert float(copies) == round(a.copies.total, 2) and wire == fmt_bytes(a.total)
        return
    per_copy, copies, wire = (float(x) for x in re.search(
        r"([\d.]+)x the bytes per copy .*? sends ([\d.]+)x the copies .*?: ([\d.]+)x the wire bytes", panel.text).groups())
    assert (copies, per_copy, wire) == tuple(round(v, 2) for v in k3_bars[:3])
    assert wire == round(a.total / b.total, 2) == round(copies * per_copy, 2)  # wire = copies x bytes per copy
    shown = re.search(r"\(([\d.]+ [kMG]?B) vs ([\d.]+ [kMG]?B)\) on one ", panel.text).groups()
    assert shown == (fmt_bytes(a.total), fmt_bytes(b.total))


def test_deepseek_v3_the_latent_halves_each_copy_but_k3_sends_more():
    panel = compare_panel(pair_of("deepseek-v3"))
    v = panel.values
    assert 0.45 < v["per_copy_ratio"] < 0.55 and v["copies_ratio"] > 1  # the latent: 3584 of 7168 on the wire
    assert "but Kimi K3 sends" in panel.text and "l = 3,584 numbers for Kimi K3 and d = 7,168" in panel.text


@pytest.mark.parametrize("key", ["aux-loss", "bias"])
def test_a_balancing_variant_quotes_the_pages_own_run(key):
    pair = pair_of(key)
    text = compare_panel(pair, BALANCE).text
    method = pair.other.moe.balancing
    assert f"{1 + BALANCE['violation'][method]:.2f}x with" in text and f"{1 + BALANCE['violation']['quantile']:.2f}x the even" in text
    assert "(a)–(c) below" in text
    assert "even share" not in compare_panel(pair).text  # no run, no claim


def test_variants_count_right_where_the_page_relies_on_it():
    k3 = layer_costs(K3)
    classic = comparison_config("no-latent")
    assert classic.moe.latent_dim == 0 and classic.moe.n_routed_experts == K3.moe.n_routed_experts // 2
    assert classic.moe.top_k == K3.moe.top_k // 2
    assert layer_costs(classic).routed_flops == k3.routed_flops  # same-sized: the routed FLOPs match
    assert layer_costs(classic).dim == K3.d_model and k3.dim == K3.moe.latent_dim
    for key in ("all-mla", "standard-residual", "aux-loss", "bias", "swiglu"):  # same experts, same bytes
        other = comparison_config(key)
        assert other.moe.n_routed_experts == K3.moe.n_routed_experts and other.moe.top_k == K3.moe.top_k
        assert layer_costs(other) == k3
    assert comparison_config("swiglu").hidden_act == "swiglu" and K3.hidden_act != "swiglu"
    assert k3.wire == pytest.approx(k3.copies * k3.per_copy)


def test_the_first_picture_says_the_paths_bytes():
    panel = path_panel(k3_width_moe(896, 16, 2, RATIOS[K3_RATIO]), K3_RATIO)
    assert f"**{fmt_bytes(panel.values['wire'])}** on the wire" in panel.text
    assert panel.values["wire"] == wire_bytes_per_token(K3).total  # at K3's shape, the function's number for K3
    assert f"{panel.values['copies']:.2f} copies each way" in panel.text


def test_tradeoff_and_situ_panels_build():
    tradeoff, how = tradeoff_panel(896, 16, 2, 0.5)
    assert tradeoff.figure.data and "top-16, 2 shared, 896 experts" in how
    situ, where = situ_panel(K3)
    assert situ.figure.data and f"b1 b2 = {K3.situ_beta * K3.situ_linear_beta:g}" in where
