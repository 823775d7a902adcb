"""The KDA page's panels (k3lite.panels.kda, kda_compare): the comparison draws both models on one axis for every
choice, its sentences' words follow their numbers and its numbers are the figure's; the variants count right."""
import re

import pytest

from k3lite.analytic import memory
from k3lite.base.units import fmt_bytes
from k3lite.model.presets import get_preset
from k3lite.model.variants import COMPARISONS, comparison_config
from k3lite.panels.core import pair_of
from k3lite.panels.kda import bounded_decay_panel, memory_panel
from k3lite.panels.kda_compare import CONTEXT_CHOICES, decode_memory_panel, holdings
from wording_check import wording_problems

K3 = get_preset("kimi-k3")


def _line(fig, prefix: str) -> dict:
    """x -> y of the trace whose name starts with `prefix`."""
    trace = next(t for t in fig.data if t.name.startswith(prefix))
    return dict(zip(trace.x, trace.y))


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_the_comparison_draws_both_models(key):
    pair = pair_of(key)
    panel = decode_memory_panel(pair)
    names = [t.name for t in panel.figure.data]
    assert any(n.startswith(pair.label) for n in names), names
    assert any(n.startswith("Kimi K3") for n in names), names
    assert panel.sentences and all(s.evidence for s in panel.sentences)
    # every hoverable trace carries its evidence marker (shared_figure's with_evidence)
    assert all("ᵈ" in (t.hovertemplate or "") for t in panel.figure.data)


def test_the_comparison_words_follow_their_numbers():
    grid = [{"pair": pair_of(k), "context": c} for k in COMPARISONS for c in (1024, 8192, 131_072, 2 ** 20)]
    assert wording_problems(decode_memory_panel, grid) == []


@pytest.mark.parametrize("key", list(COMPARISONS))
@pytest.mark.parametrize("context", [4096, 131_072, CONTEXT_CHOICES[-1]])
def test_the_numbers_said_are_the_figures(key, context):
    pair = pair_of(key)
    panel = decode_memory_panel(pair, context)
    k3_total = _line(panel.figure, "Kimi K3: whole model")[context]
    other_total = _line(panel.figure, f"{pair.label}: whole model")[context]
    assert k3_total == panel.values["k3_total"] == memory.sequence_cache_bytes(K3, context).total
    assert other_total == panel.values["other_total"]
    if k3_total == other_total:  # the variant holds the same: one sentence says so, with K3's numbers
        assert "nothing changes here" in panel.text
        state, cache = re.search(r"layers: ([\d.]+ [kMGT]?B) of fixed state, ([\d.]+ [kMGT]?B) of cache",
                                 panel.text).groups()
        assert (state, cache) == (fmt_bytes(panel.values["k3_kda"]), fmt_bytes(panel.values["k3_mla"]))
        return
    said_k3, said_other = re.search(r"Whole model: Kimi K3 holds ([\d.]+ [kMGT]?B), .*?'s ([\d.]+ [kMGT]?B)\.",
                                    panel.text).groups()
    assert said_k3 == fmt_bytes(k3_total) and said_other == fmt_bytes(other_total)
    if "crossing" in panel.values:  # the lines meet where the sentence says they cross
        c = panel.values["crossing"]
        assert f"cross at ~{c:,.0f} tokens" in panel.text
        k3_at = memory.sequence_cache_bytes(pair.k3, 0).kda + holdings(pair.k3).slope * c
        other_at = memory.sequence_cache_bytes(pair.other, 0).kda + holdings(pair.other).slope * c
        assert k3_at == pytest.approx(other_at)


def test_the_sentences_say_what_a_model_without_kda_uses_instead():
    for key in ("deepseek-v3", "kimi-k2", "all-mla"):
        text = decode_memory_panel(pair_of(key)).text
        assert "has no KDA: its" in text and "MLA layers hold" in text
    linear = decode_memory_panel(pair_of("kimi-linear-48b-a3b")).text
    assert "has KDA too" in linear and "a layer with 32 heads" in linear


def test_the_variants_count_right_for_this_page():
    """MLA everywhere: no KDA layer, every layer MLA, the same experts; the published MLA-only models have no KDA;
    the ideas outside attention keep K3's 69 KDA + 24 MLA layers."""
    mla = comparison_config("all-mla")
    assert mla.layer_types().count("kda") == 0 and mla.layer_types().count("mla") == K3.n_layers
    assert (mla.moe.n_routed_experts, mla.moe.top_k) == (K3.moe.n_routed_experts, K3.moe.top_k)
    assert holdings(mla).kda_layer == 0
    for key in ("deepseek-v3", "kimi-k2"):
        assert comparison_config(key).layer_types().count("kda") == 0
    assert comparison_config("kimi-linear-48b-a3b").layer_types().count("kda") > 0
    for key in ("no-latent", "standard-residual", "aux-loss", "bias", "swiglu"):
        h = holdings(comparison_config(key))
        assert (h.n_kda, h.n_mla) == (69, 24) == (holdings(K3).n_kda, holdings(K3).n_mla)


def test_the_memory_and_bound_panels_read_their_numbers():
    panel = memory_panel("kimi-k3")
    assert fmt_bytes(memory.kda_layer_state_bytes(K3.kda)) in panel.text
    assert memory.kda_memory_sentence(K3, 2 ** 20) in panel.text
    bound = bounded_decay_panel(-3.0, get_preset("lite"), K3)
    fast = memory.decay_memory(K3.kda.decay_lower_bound, [1])
    assert f"survives {fast.tokens_to_threshold:.2f} tokens" in bound.text and "-3.00" in bound.text


def test_the_memory_section_resizes_the_kda_layers_a_hint_asks_for():
    """0 keeps the preset's own heads / head dim; other values re-size its KDA layers, and the panel's sentence
    states the state and the break-even of the re-sized layer (the hint of the break-even problem opens it so)."""
    from k3lite.analytic import memory
    from k3lite.model.presets import get_preset
    from k3lite.panels.kda import memory_config, memory_panel
    assert memory_config("kimi-linear-48b-a3b") == get_preset("kimi-linear-48b-a3b")
    cfg = memory_config("kimi-linear-48b-a3b", 32, 64)
    assert (cfg.kda.n_heads, cfg.kda.head_dim) == (32, 64)
    text = memory_panel("kimi-linear-48b-a3b", 32, 64).sentences[0].text
    assert f"{memory.kda_layer_state_bytes(cfg.kda):,} bytes" in text and "re-sized" in text
    assert f"{memory.break_even_context(cfg):,}" in text
