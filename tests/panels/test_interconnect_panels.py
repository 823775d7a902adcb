"""The interconnect page's panels: with every comparison, the page's config and the compared one on one axis (a
trace each, named), sentences whose comparison words follow their numbers and whose numbers are the figure's; the
K3 variants move the bytes they should (the same where the idea is not on the wire)."""
import re

import pytest

from k3lite.analytic.training import step_traffic
from k3lite.base.units import fmt_bytes
from k3lite.interconnect import TOPOLOGIES, Deployment, analytic_traffic, wire_bytes_per_token
from k3lite.model.presets import get_preset
from k3lite.model.variants import COMPARISONS, K3_MINUS, comparison_config
from k3lite.panels.core import pair_of
from k3lite.panels.interconnect import (LINKS, display_name, expert_options, page_config, preset_knobs, settings,
                                        three_models, wire_pair)
from k3lite.panels.interconnect_training import other_step, training_pair, training_steps
from wording_check import wording_problems

K3 = get_preset("kimi-k3")
DEP = Deployment(TOPOLOGIES["multi-node-8x8"], 64, "fp8", "bf16", 0, "normal")  # the page's defaults


def _k3_cfg(experts=896, top_k=16, ratio=0.5, preset="kimi-k3"):
    return page_config(get_preset(preset), experts, top_k, ratio)


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_wire_pair_draws_both_on_one_axis_and_its_numbers_are_the_figures(key):
    pair = pair_of(key)
    panel = wire_pair(_k3_cfg(), pair, DEP)
    names = [t.name for t in panel.figure.data]
    assert names == ["Kimi K3", pair.label]
    unit = panel.values["axis_unit"]  # the axis is in kB (bytes_axis); the shared figure is read, never changed
    k3, other = ([v * unit for v in _trace(panel.figure, n).y] for n in ("Kimi K3", pair.label))
    assert sum(k3) == pytest.approx(panel.values["k3_layer"]) and sum(other) == pytest.approx(
        panel.values["other_layer"])
    want = wire_bytes_per_token(K3, "multi-node-8x8", 64, "normal")
    assert panel.values["k3_layer"] == pytest.approx(want.total)  # the one wire-bytes function
    assert k3 == pytest.approx([getattr(want, k) for k, _ in LINKS])
    text = panel.text
    if panel.values["k3_layer"] == panel.values["other_layer"]:
        shown = re.search(r"does: (\S+ \S+) per token per MoE layer", text).group(1)
        assert shown == fmt_bytes(panel.values["k3_layer"])
    else:
        a, b = re.search(r"moves (\S+ \S+) per token per MoE layer against .*?'s (\S+ \S+):", text).groups()
        assert (a, b) == (fmt_bytes(sum(k3)), fmt_bytes(sum(other)))
        ca, cb = map(float, re.search(r"sends ([\d.]+) link copies .*? against ([\d.]+) \(top", text).groups())
        assert (ca, cb) == (round(panel.values["k3_copies"], 2), round(panel.values["other_copies"], 2))
        ratio = float(re.search(r": ([\d.]+)x the wire bytes", text).group(1))
        assert ratio == round(sum(k3) / sum(other), 2)


@pytest.mark.parametrize("key", K3_MINUS)
def test_a_variant_the_wire_does_not_see_moves_exactly_k3s_bytes_and_says_where_it_shows(key):
    panel = wire_pair(_k3_cfg(), pair_of(key), DEP)
    if key == "no-latent":  # the one idea on the wire: half the record, twice the copies' top-k
        assert panel.values["k3_layer"] < panel.values["other_layer"]
        assert "1.95x smaller" in panel.text and "more" in panel.text
        return
    assert panel.values["k3_layer"] == panel.values["other_layer"]
    assert "moves exactly the bytes Kimi K3 does" in panel.text and "Its difference shows" in panel.text


def test_the_variants_count_right_where_the_page_relies_on_it():
    moe = K3.moe
    for key in ("all-mla", "standard-residual", "aux-loss", "bias", "swiglu"):  # same experts, top-k, width
        o = comparison_config(key)
        assert (o.moe.n_routed_experts, o.moe.top_k, o.moe.latent_dim, o.d_model) == \
            (moe.n_routed_experts, moe.top_k, moe.latent_dim, K3.d_model)
        assert o.ffn_types() == K3.ffn_types()  # the same MoE layers: the same bytes per forward pass
    mla = comparison_config("all-mla")
    assert not any("kda" in str(t).lower() for t in mla.layer_types())
    plain = comparison_config("no-latent")
    assert (plain.moe.n_routed_experts, plain.moe.top_k, plain.moe.latent_dim) == (448, 8, 0)


def test_the_sliders_apply_to_a_variant_and_not_to_a_released_model():
    cfg = _k3_cfg(experts=512, top_k=8, ratio=0.25)
    mine = wire_pair(cfg, pair_of("swiglu"), DEP)
    assert mine.values["k3_layer"] == mine.values["other_layer"]  # SwiGLU of YOUR config, not of the preset
    assert mine.values["k3_layer"] == pytest.approx(analytic_traffic(cfg, DEP).per_layer.total)
    theirs = wire_pair(cfg, pair_of("deepseek-v3"), DEP)
    dsv3 = analytic_traffic(get_preset("deepseek-v3"), DEP).per_layer.total
    assert theirs.values["other_layer"] == pytest.approx(dsv3)
    assert display_name(cfg) == "Kimi K3 (your settings)" and display_name(_k3_cfg()) == "Kimi K3"


def test_a_compared_model_that_cannot_route_here_says_so_and_keeps_k3():
    """EP 48 on 8 x 8 with a node limit needs E divisible by 48: K3 snaps to 912 experts, DeepSeek-V3's 256 cannot."""
    dep = Deployment(TOPOLOGIES["multi-node-8x8"], 48, "fp8", "bf16", 2, "normal")
    panel = wire_pair(_k3_cfg(experts=912), pair_of("deepseek-v3"), dep)
    assert [t.name for t in panel.figure.data] == ["Kimi K3 (your settings)"]
    assert "DeepSeek-V3 cannot be routed on this deployment" in panel.text


GRID = [dict(cfg=_k3_cfg(*knobs, preset=preset), pair=pair_of(key), dep=Deployment(TOPOLOGIES[topo], ep, d, "bf16",
                                                                                   limit, scheme))
        for key in COMPARISONS
        for preset, knobs in (("kimi-k3", (896, 16, 0.5)), ("kimi-k2", (384, 8, 1.0)), ("kimi-k3", (512, 4, 0.125)))
        for topo, ep, limit, scheme, d in (("multi-node-8x8", 64, 0, "normal", "fp8"),
                                           ("multi-node-8x8", 64, 4, "direct", "bf16"),
                                           ("nvl72", 64, 0, "low-latency", "fp8"), ("dgx-b300", 8, 0, "normal", "fp8"))]


def test_wire_pair_words_follow_their_numbers():
    assert wording_problems(wire_pair, GRID) == []


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_training_pair_draws_both_and_its_numbers_are_the_figures(key):
    lay, _ = training_steps("kimi-k3", "dualpipe", 120)
    pair = pair_of(key)
    panel = training_pair(lay, pair)
    assert [t.name for t in panel.figure.data] == ["Kimi K3", pair.label]
    k3 = _trace(panel.figure, "Kimi K3")
    kinds = ("EP forward", "EP backward", "PP", "DP")
    div = panel.values["k3_total"] / sum(k3.y)  # the axis unit
    assert list(k3.y) == pytest.approx([panel.values[f"k3 {k}"] / div for k in kinds])
    assert panel.values["k3_total"] == pytest.approx(step_traffic(lay).total_bytes)
    if panel.values["k3_total"] == panel.values["other_total"]:
        shown = re.search(r"one training step: (\S+ \S+) on", panel.text).group(1)
    else:
        shown = re.search(r"Kimi K3 moves (\S+ \S+) per token of one training step", panel.text).group(1)
        other = re.search(r"'s (\S+ \S+): ", panel.text).group(1)
        assert other == fmt_bytes(panel.values["other_total"])
    assert shown == fmt_bytes(panel.values["k3_total"])


def test_training_variants_move_what_their_idea_changes():
    lay, _ = training_steps("kimi-k3", "dualpipe", 120)
    by = {key: training_pair(lay, pair_of(key)).values for key in K3_MINUS}
    for key in ("aux-loss", "bias", "swiglu"):  # nothing on any wire
        assert by[key]["k3_total"] == by[key]["other_total"]
    res = by["standard-residual"]  # the stage boundaries carry fewer vectors; EP and DP alike but for its weights
    assert res["other PP"] < res["k3 PP"] and res["other EP forward"] == res["k3 EP forward"]
    mla = by["all-mla"]  # other attention weights: DP differs, EP and PP do not
    assert mla["other DP"] != mla["k3 DP"] and mla["other EP forward"] == mla["k3 EP forward"]
    assert mla["other PP"] == mla["k3 PP"]
    assert by["no-latent"]["other EP forward"] > by["no-latent"]["k3 EP forward"]


def test_dp_bytes_count_the_variants_own_parameters():
    """A K3 variant's DP traffic is its own parameters' (MLA everywhere has other attention weights): step_traffic
    counted the layout's preset's for any config, and the panel patched it."""
    lay, _ = training_steps("kimi-k3", "dualpipe", 120)
    k3 = step_traffic(lay).by_kind()["DP"]
    mla = other_step(lay, pair_of("all-mla")).by_kind()["DP"]
    assert mla.inter != k3.inter and mla.seconds == pytest.approx(mla.inter / lay.topology.inter_bw)
    assert step_traffic(lay, cfg=comparison_config("all-mla")).by_kind()["DP"].inter == mla.inter


TRAINING_GRID = [dict(lay=training_steps(layout, schedule, micro)[0], pair=pair_of(key))
                 for key in COMPARISONS for layout in ("kimi-k3", "deepseek-v3")
                 for schedule, micro in (("dualpipe", 120), ("1f1b", 16))]


def test_training_pair_words_follow_their_numbers():
    assert wording_problems(training_pair, TRAINING_GRID) == []


def test_the_page_helpers():
    assert preset_knobs("kimi-k3") == {"ic_experts": 896, "ic_top_k": 16, "ic_latent": "1/2"}
    assert expert_options("multi-node-8x8", 48, 896) == (expert_options("multi-node-8x8", 48, 912)[0], 48,
                                                         expert_options("multi-node-8x8", 48, 912)[2], 912, 896)
    assert expert_options("dgx-b300", 64, 896)[1] == 8  # an EP past the topology falls back to its largest
    cfg, dep, t, hit, why = settings("kimi-k3", 896, 16, "1/2", "multi-node-8x8", 64, "fp8", "bf16", 0, "normal")
    assert why == "" and t.per_layer.total == pytest.approx(wire_bytes_per_token(K3, "multi-node-8x8", 64).total)
    assert 1 <= hit <= 64  # the drawn token's GPUs (normal kernels: remote entry GPUs relay, so can exceed top-k)
    *_, why = settings("kimi-k3", 64, 32, "1/2", "multi-node-8x8", 64, "fp8", "bf16", 1, "normal")
    assert "must be <= experts on node_limit=1" in why
    panels, rows, said = three_models("fp8", "bf16", 0, "normal")
    assert set(panels) == {"multi-node-8x8", "nvl72"} and len(rows) == 8 and "K2's bytes" in said.text


def test_a_k3_idea_removed_from_a_model_without_it_is_named_so():
    """With DeepSeek-V3 as the page's preset, 'K3 with SwiGLU' is DeepSeek-V3 itself: the sentence must not call
    it K3 nor send the reader elsewhere for a difference that does not exist."""
    dsv3 = get_preset("deepseek-v3")
    panel = wire_pair(page_config(dsv3, 256, 8, 1.0), pair_of("swiglu", dsv3), DEP)
    assert panel.text.startswith("DeepSeek-V3 without SiTU-GLU (it has none: nothing changes) moves exactly")
    assert "Its difference shows" not in panel.text
    lay, _ = training_steps("deepseek-v3", "dualpipe", 120)
    text = training_pair(lay, pair_of("no-latent")).text
    assert text.startswith("DeepSeek-V3 without Stable LatentMoE (it has none") and "K3" not in text
    mla = wire_pair(page_config(get_preset("kimi-k2"), 384, 8, 1.0), pair_of("all-mla", get_preset("kimi-k2")), DEP)
    assert mla.text.startswith("Kimi K2 without the 3:1 KDA hybrid (it has none")
