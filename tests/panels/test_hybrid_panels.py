"""The 3:1 hybrid page's panels (k3lite/panels/hybrid.py): K3 and every comparison's cache per sequence on one axis,
sentences whose numbers are the figure's and whose comparison words come from the numbers."""
import re

import pytest

from k3lite.analytic import memory
from k3lite.analytic.hybrid import HYBRID_GPUS, decode_cost, reference_gpu
from k3lite.base.units import ONE_M_CONTEXT as ONE_M, fmt_bytes, fmt_capacity
from k3lite.analytic.hardware import get_gpu
from k3lite.model.variants import COMPARISONS
from k3lite.panels import hybrid as panels
from k3lite.panels.core import pair_of
from wording_check import wording_problems

GPU = reference_gpu()


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_compare_panel_draws_both_models_on_one_axis(key):
    pair = pair_of(key)
    panel = panels.compare_panel(pair, GPU)
    names = [t.name for t in panel.figure.data]
    assert names == [pair.k3_label, pair.label]
    k3, other = panel.figure.data
    assert list(k3.x) == list(other.x)  # one x axis for both
    assert panel.figure.layout.xaxis.type == "log" and panel.figure.layout.yaxis.type == "log"
    assert k3.y[-1] == panel.values["k3_cache"] and other.y[-1] == panel.values["other_cache"]  # 1M is the last x
    assert all("ᵈ" in (t.hovertemplate or "") for t in panel.figure.data), "every trace says its evidence class"


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_compare_sentence_prints_the_figures_numbers(key):
    pair = pair_of(key)
    panel = panels.compare_panel(pair, GPU)
    first, second = (s.text for s in panel.sentences)
    a, b = panel.values["k3_cache"], panel.values["other_cache"]
    printed = re.findall(r"(\d[\d.,]*\s[kMGT]?B)\b", first)
    assert printed[:2] == [fmt_bytes(a), fmt_bytes(b)], first
    ratio = re.search(r"(\d+\.\d+)x (more|less)", first)
    if ratio:
        assert float(ratio.group(1)) == pytest.approx(max(a, b) / min(a, b), abs=0.006)
        assert ratio.group(2) == ("more" if a > b else "less")
    else:
        assert a == b and "same" in first
    fits = [int(n.replace(",", "")) for n in re.findall(r"holds ([\d,]+) sequences? .* and ([\d,]+) for", second)[0]]
    hbm = get_gpu(GPU).hbm_bytes
    assert fits == [panel.values["k3_fit"], panel.values["other_fit"]] == [int(hbm // a), int(hbm // b)]
    assert fmt_capacity(hbm) in second


def test_the_sentence_says_what_the_compared_model_uses_instead_of_kda():
    for key in ("deepseek-v3", "kimi-k2", "all-mla"):
        text = panels.compare_panel(pair_of(key), GPU).text
        assert f"has MLA in every one of its {pair_of(key).other.n_layers} layers" in text
    linear = panels.compare_panel(pair_of("kimi-linear-48b-a3b"), GPU).text
    assert "Kimi Linear 48B is a 3:1 hybrid too (20 KDA + 7 MLA)" in linear and "fewer layers" in linear


@pytest.mark.parametrize("key", ["no-latent", "standard-residual", "aux-loss", "bias", "swiglu"])
def test_a_variant_that_leaves_attention_alone_says_so_and_where_it_differs(key):
    pair = pair_of(key)
    panel = panels.compare_panel(pair, GPU)
    assert panel.values["k3_cache"] == panel.values["other_cache"]
    assert "keeps the same" in panel.text and "difference shows on the" in panel.text


def test_variant_configs_count_right_for_the_cache():
    """MLA everywhere has no KDA layer and every layer MLA, same experts; the others keep K3's 24 MLA + 69 KDA."""
    k3 = pair_of("all-mla").k3
    v = panels.compare_panel(pair_of("all-mla"), GPU).values
    assert (v["other_mla"], v["other_kda"]) == (k3.n_layers, 0) and (v["k3_mla"], v["k3_kda"]) == (24, 69)
    assert pair_of("all-mla").other.moe == k3.moe
    assert v["other_cache"] == memory.sequence_cache_bytes(pair_of("all-mla").other, ONE_M).mla


def test_compare_sentences_choose_their_words_from_the_numbers():
    grid = [dict(pair=pair_of(k), hw=hw, context=n) for k in COMPARISONS for hw in (GPU, "H100 SXM", "B200")
            for n in (4096, 131072, ONE_M)]
    assert wording_problems(panels.compare_panel, grid) == []


def test_compare_panel_checks_every_gpu_choice():
    for hw in HYBRID_GPUS[:3]:
        assert panels.compare_panel(pair_of("deepseek-v3"), hw).values["k3_fit"] >= 1


def test_main_panels_draw_the_pages_curves():
    """The figures the page drew before the panels existed: all-MLA and the ratio's cache and time per token."""
    cache = panels.cache_panel(3, 1, GPU, 1.0).figure
    assert [t.name for t in cache.data] == ["0:1 (all MLA)", "3:1"]
    assert cache.data[1].y[-1] == decode_cost(3, ONE_M, hardware=GPU).cache_bytes
    tpot = panels.tpot_panel(3, 1, GPU, 1.0).figure
    assert tpot.data[1].y[-1] == pytest.approx(decode_cost(3, ONE_M, hardware=GPU).tpot_s * 1e3)
    assert "20 KDA + 7 MLA" in str(panels.pattern_panel(3).figure.layout.title.text)


@pytest.mark.parametrize("key", ["deepseek-v3", "kimi-k2", "all-mla"])
def test_a_model_shown_past_its_released_window_is_said_to_be_extrapolated(key):
    """DeepSeek-V3 and K2 ship 128K windows: at 1M the sentence says so, from the preset's max_seq_len; at 64K, or
    for a K3 variant (K3's 1M window), it says nothing."""
    pair = pair_of(key)
    window = pair.other.max_seq_len
    at_1m = panels.compare_panel(pair, "H200", ONE_M).sentences[0].text
    inside = panels.compare_panel(pair, "H200", 65536).sentences[0].text
    said = f"is a {window // 1024}K-context model ({window:,} tokens"
    assert (said in at_1m) == (window < ONE_M) and "extrapolation" not in inside
    assert (key != "all-mla") == (window < ONE_M)
