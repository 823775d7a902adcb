"""Home's panels (k3lite/panels/home.py, home_ledger.py): K3 beside every comparison on shared axes, sentences whose
numbers are the figure's and whose comparison words come from the numbers, and the map, ledger and ablation
panels the page drew before they moved here."""
import re

import pytest

from k3lite.analytic import ledger as byte_ledger
from k3lite.analytic.anatomy import anatomy
from k3lite.analytic.params import count_params, fmt
from k3lite.base.units import fmt_bytes
from k3lite.model.presets import get_preset
from k3lite.model.variants import COMPARISONS
from k3lite.panels import home as panels, home_ledger as ledgers
from k3lite.panels.core import pair_of
from wording_check import wording_problems

K3 = get_preset("kimi-k3")


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_compare_panel_draws_both_models_on_shared_axes(key):
    pair = pair_of(key, K3)
    panel = panels.compare_panel(pair)
    names = [t.name for t in panel.figure.data]
    assert names == [pair.k3_label, pair.label] * 2  # parameters, then bytes: each model in both
    params_k3, params_other, bytes_k3, bytes_other = panel.figure.data
    assert list(params_k3.y) == list(params_other.y) and list(bytes_k3.y) == list(bytes_other.y)
    assert params_k3.xaxis == params_other.xaxis and bytes_k3.xaxis == bytes_other.xaxis  # one axis per quantity
    assert sum(v or 0 for v in params_k3.x) == panel.values["k3_params"]
    assert sum(v or 0 for v in bytes_other.x) == pytest.approx(panel.values["other_bytes"])
    assert all("ᵈ" in (t.hovertemplate or "") for t in panel.figure.data), "every trace says its evidence class"


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_compare_sentence_prints_the_figures_numbers(key):
    panel = panels.compare_panel(pair_of(key, K3))
    first = panel.sentences[0].text
    v = panel.values
    assert f"{fmt(v['k3_params'])} " in first and f"{fmt_bytes(v['k3_bytes'])} " in first
    if v["k3_params"] == v["other_params"] and v["k3_bytes"] == v["other_bytes"]:
        assert "the same" in first
        return
    assert f"({fmt(v['k3_params'])} against {fmt(v['other_params'])})" in first
    assert f"({fmt_bytes(v['k3_bytes'])} against {fmt_bytes(v['other_bytes'])};" in first
    ratio = re.search(r"moves (\d+\.\d+)x (more|fewer) bytes", first)
    if ratio:
        a, b = v["k3_bytes"], v["other_bytes"]
        assert float(ratio.group(1)) == pytest.approx(max(a, b) / min(a, b), abs=0.006)
        assert ratio.group(2) == ("more" if a > b else "fewer")
    second = panel.sentences[1].text
    assert f"({fmt_bytes(v['top_seg_k3'])} against {fmt_bytes(v['top_seg_other'])}" in second


def test_k3_against_deepseek_v3_counts_from_the_configs():
    """The numbers the first screen's sentence states: the meta-device counts and the ledger's bytes."""
    v = panels.compare_panel(pair_of("deepseek-v3", K3)).values
    assert v["k3_params"] == sum(p.params for p in anatomy(K3).totals().values())
    assert v["k3_params"] == pytest.approx(count_params(K3).total, rel=1e-6)
    assert v["other_bytes"] == byte_ledger.ledger_of(get_preset("deepseek-v3"), panels.MAP_CONTEXT).total


def test_mla_everywhere_differs_in_the_cache_and_says_why():
    pair = pair_of("all-mla", K3)
    assert pair.other.moe == K3.moe and "kda" not in pair.other.layer_types()
    text = panels.compare_panel(pair).text
    assert "differ most in HBM cache" in text and "24 of 93 in Kimi K3, 93 of 93" in text


@pytest.mark.parametrize("key", ["aux-loss", "bias", "swiglu"])
def test_a_variant_that_moves_nothing_here_says_so_and_where_it_differs(key):
    panel = panels.compare_panel(pair_of(key, K3))
    v = panel.values
    assert v["k3_params"] == v["other_params"] and v["k3_bytes"] == v["other_bytes"]
    assert "the same" in panel.text and "Its difference shows on the Stable LatentMoE & routing page (" in panel.text


def test_no_latent_is_not_called_the_same_for_a_small_difference():
    """K3 without the latent has a few more or fewer bytes: the sentence compares them, it does not say 'the same'."""
    panel = panels.compare_panel(pair_of("no-latent", K3))
    assert panel.values["k3_bytes"] != panel.values["other_bytes"] and "have the same" not in panel.text


def test_compare_sentences_choose_their_words_from_the_numbers():
    bases = [K3, get_preset("kimi-k2"), panels.config_of("kimi-k3", 448, 8, 93, 3584)]
    grid = [dict(pair=pair_of(k, base), context=n) for k in COMPARISONS for base in bases for n in (4096, 131072)]
    assert wording_problems(panels.compare_panel, grid) == []


def test_compare_against_the_pages_own_config():
    """Home compares its selected configuration: with K2 picked, K2 is the first model."""
    panel = panels.compare_panel(pair_of("deepseek-v3", get_preset("kimi-k2")))
    assert [t.name for t in panel.figure.data][0] == "kimi-k2" and "kimi-k2 has" in panel.text


def test_map_panel_sentence_is_the_anatomy_shares():
    panel = panels.map_panel("kimi-k3", *panels.knobs(K3))
    shares = panels.map_anatomy("kimi-k3", *panels.knobs(K3)).shares()
    top = max(shares, key=lambda k: shares[k][0])
    assert f"**{100 * shares[top][0]:.1f}%**" in panel.sentences[0].text and "mxfp4" in panel.sentences[0].text


def test_ledger_panel_draws_the_picked_models_and_the_why_sentence():
    chosen = byte_ledger.Toggles(frozenset({"no-latent"}))
    panel = ledgers.ledger_panel(tuple(byte_ledger.MODELS), 131_072, byte_ledger.Deploy(), list(ledgers.PER)[0], chosen)
    assert panel.figure is not None and len(panel.sentences) == 1 and "DeepSeek-V3's" in panel.text
    alone = ledgers.ledger_panel(("kimi-k3",), 131_072, byte_ledger.Deploy(), list(ledgers.PER)[1],
                                 byte_ledger.ALL_ON)
    assert alone.sentences == ()


def test_ablation_panel_has_a_sentence_per_idea():
    panel = ledgers.ablation_panel(131_072)
    assert len(panel.sentences) == len(ledgers.ablation_cached(131_072))  # the deployment, then one per idea
    assert [r["variant"] for r in ledgers.ablation_table(131_072)][0] == "Kimi K3"


def test_the_ablation_names_the_deployment_its_dollars_are_priced_on():
    """The $ axis was priced on one 8 x B300 node, TP 8 (ablation.SERVE) that the page never named, at $10.02 where
    the Serving page says $1.21: the panel's first sentence names the node from SERVE and prices the same node by
    the roofline bound the frontier draws, so the two numbers' difference is computed, not left unexplained."""
    from k3lite.analytic.ablation import INPUT_LEN, OUTPUT_LEN, SERVE, SPEED, solve
    from k3lite.analytic.serving.deployment import Serving
    from k3lite.analytic.serving.price import Shape, price_at_speed
    from k3lite.model.presets import get_preset

    text = ledgers.ablation_panel(131_072).sentences[0].text
    s = Serving(preset=get_preset("kimi-k3"), **SERVE)
    usd = solve(s, SPEED, 1, INPUT_LEN, OUTPUT_LEN).usd_per_m
    bound = price_at_speed(s, Shape(INPUT_LEN, OUTPUT_LEN), SPEED, "bound").usd_per_m  # one request, both models
    assert f"{SERVE['n_gpus']} x {SERVE['gpu']} (EP {SERVE['ep']}, attention TP {SERVE['tp']}" in text
    assert f"${usd:.3f} per M tokens (input + output)" in text and f"${bound:.3f}" in text
    assert f"{max(usd, bound) / min(usd, bound):.2f}x" in text and f"{SPEED:.0f} tokens/s" in text
    assert ledgers.ablation_rows(131_072)[0].usd_per_m == usd  # the bars' K3 $ is the sentence's


def test_the_ledger_checkboxes_switch_k3_minus_variants_and_only_that_bar_is_hatched():
    """The toggles are the comparison control's variants (K3_MINUS keys), and the hatched bar is the toggled K3,
    not any row whose name happens to contain "without"."""
    assert set(ledgers.TOGGLES) - {byte_ledger.BALANCING} == set(byte_ledger.TOGGLED)
    on = {key: True for key in ledgers.TOGGLES} | {"standard-residual": False, byte_ledger.BALANCING: False}
    chosen = ledgers.toggles_of(on)
    assert chosen == byte_ledger.Toggles(frozenset({"standard-residual"}), balanced=False)
    panel = ledgers.ledger_panel(("deepseek-v3", "kimi-k3"), 131_072, byte_ledger.Deploy(), list(ledgers.PER)[0],
                                 chosen)
    bars = next(t for t in panel.figure.data if t.type == "bar")
    assert list(bars.y)[-1] == "Kimi K3 with<br>a standard residual, without balancing"
    assert [s != "" for s in bars.marker.pattern.shape] == [False, False, True]
