import pytest

from k3lite.analytic.params import count_params
from k3lite.model.presets import get_preset
from k3lite.model.cards import display_name
from k3lite.model.variants import COMPARISONS, K3_MINUS, classic_variant, comparison_config

K3 = get_preset("kimi-k3")


def test_each_ablation_changes_only_its_idea():
    mla = comparison_config("all-mla")
    assert mla.layer_types().count("kda") == 0 and mla.n_layers == K3.n_layers
    assert mla.moe.n_routed_experts == K3.moe.n_routed_experts == 896
    classic = comparison_config("no-latent")
    assert (classic.moe.latent_dim, classic.moe.n_routed_experts, classic.moe.top_k) == (0, 448, 8)
    assert classic.layer_types() == K3.layer_types()
    assert comparison_config("standard-residual").attn_res == "standard"
    assert comparison_config("aux-loss").moe.balancing == "aux_loss" and comparison_config("bias").moe.balancing == "bias"
    assert comparison_config("swiglu").hidden_act == "swiglu"
    for key in K3_MINUS:  # every variant is K3 but for its idea: same depth and width
        cfg = comparison_config(key)
        assert (cfg.n_layers, cfg.d_model, cfg.vocab_size) == (K3.n_layers, K3.d_model, K3.vocab_size)


def test_variants_count_as_the_same_code_counts_k3():
    k3 = count_params(K3)
    for key in ("aux-loss", "bias", "swiglu", "standard-residual"):  # no parameter changes shape
        assert abs(count_params(comparison_config(key)).total - k3.total) / k3.total < 1e-3, key
    classic = count_params(comparison_config("no-latent"))
    # same-sized: half the experts at twice the width, so the routed experts keep their parameters
    assert classic.total == pytest.approx(k3.total, rel=0.05)
    assert count_params(comparison_config("all-mla")).total != k3.total


def test_published_models_are_their_presets_and_bad_keys_are_refused():
    assert comparison_config("deepseek-v3") == get_preset("deepseek-v3")
    assert COMPARISONS["kimi-linear-48b-a3b"].idea is None
    assert classic_variant(get_preset("deepseek-v3")) == get_preset("deepseek-v3")  # no latent: nothing to undo
    with pytest.raises(ValueError, match="comparison must be one of"):
        comparison_config("gpt-9")


def test_sentences_name_a_preset_by_its_model_not_its_id():
    assert display_name("kimi-k3") == "Kimi K3" and display_name("deepseek-v3") == "DeepSeek-V3"
    assert display_name("kimi-k3 with MLA everywhere") == "Kimi K3 with MLA everywhere"
    assert display_name("kimi-k3 (edited)") == "Kimi K3 (edited)" and display_name("my-model") == "my-model"
    assert display_name("kimi-k2") == "Kimi K2" and display_name("kimi-k20") == "kimi-k20"
