"""Config validation: every bad combination raises ValueError naming the constraint."""
import math
import re

import pytest

from k3lite.model.config import PRESETS, K3Config, KDAConfig, MLAConfig, MoEConfig, get_preset, kimi_k3


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_validate_and_roundtrip(name):
    cfg = get_preset(name)
    assert K3Config.from_dict(cfg.to_dict()) == cfg
    assert len(cfg.layer_types()) == cfg.n_layers


def test_kimi_linear_pattern_is_every_4th_and_last():
    types = get_preset("kimi-linear-48b-a3b").layer_types()
    mla = [i + 1 for i, t in enumerate(types) if t == "mla"]  # 1-indexed, as in its config.json
    assert mla == [4, 8, 12, 16, 20, 24, 27]


def test_k3_pattern_is_3_to_1():
    types = get_preset("kimi-k3").layer_types()
    assert types[:8] == ["kda", "kda", "kda", "mla"] * 2
    assert types[-1] == "mla"
    assert types.count("kda") == 69 and types.count("mla") == 24


def test_all_mla_presets():
    assert set(get_preset("deepseek-v3").layer_types()) == {"mla"}
    assert get_preset("deepseek-v3").ffn_types()[:4] == ["dense"] * 3 + ["moe"]


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(moe={"top_k": 33}), r"top_k \(33\) must be <= moe.n_routed_experts \(32\)"),
        (dict(moe={"latent_dim": 129}), r"latent_dim \(129\) must be <= d_model \(128\)"),
        (dict(d_model=0), r"d_model must be a positive integer"),
        (dict(n_layers=-1), r"n_layers must be a positive integer"),
        (dict(n_layers=3), r"needs at least 4 layers"),
        (dict(n_layers=6, last_layer_global=False), r"multiple of the kda_ratio period"),
        (dict(kda_ratio=(0, 0)), r"at least one layer per period"),
        (dict(kda=None), r"asks for KDA layers but no kda config"),
        (dict(first_k_dense=9), r"first_k_dense \(9\) must be <= n_layers"),
        (dict(first_k_dense=1, dense_ffn_dim=0), r"dense_ffn_dim"),
        (dict(attn_res="sideways"), r"attn_res must be one of"),
        (dict(attn_res_block_size=0), r"attn_res_block_size must be a positive integer"),
        (dict(attn_res_block_size=17), r"attn_res_block_size \(17\) must be <= the number of sublayers"),
        (dict(moe={"balancing": "magic"}), r"balancing must be one of"),
        (dict(moe={"n_groups": 5}), r"divisible by moe.n_groups"),
        (dict(moe={"n_groups": 4, "topk_groups": 5}), r"topk_groups \(5\) must be <= moe.n_groups"),
        (dict(moe={"n_groups": 8, "topk_groups": 1, "top_k": 5}), r"experts reachable in the allowed groups"),
        (dict(moe={"capacity_factor": -1.0}), r"capacity_factor must be >= 0"),
        (dict(moe={"expert_ffn_dim": 0}), r"expert_ffn_dim must be a positive integer"),
        (dict(mla={"n_heads": 0}), r"mla.n_heads must be a positive integer"),
        (dict(mla={"use_rope": True, "qk_rope_head_dim": 15}), r"qk_rope_head_dim must be even"),
        (dict(kda={"head_dim": 0}), r"kda.head_dim must be a positive integer"),
    ],
)
def test_bad_combinations_raise(change, match):
    with pytest.raises(ValueError, match=match):
        get_preset("lite").with_(**change)


def test_bool_is_not_a_size():
    with pytest.raises(ValueError, match="positive integer"):
        KDAConfig(n_heads=True, head_dim=8)


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset 'gpt-5'"):
        get_preset("gpt-5")


def test_nested_dataclasses_direct():
    with pytest.raises(ValueError, match="top_k"):
        MoEConfig(n_routed_experts=4, top_k=5, expert_ffn_dim=8)
    with pytest.raises(ValueError, match="kv_lora_rank"):
        MLAConfig(n_heads=2, kv_lora_rank=0, qk_nope_head_dim=8, qk_rope_head_dim=0, v_head_dim=8)


def test_k3_docstring_block_count_matches_the_preset():
    """The kimi-k3 docstring's attention-residual numbers are the preset's: blocks of 12 layers (config.json
    `attn_res_block_size` 12) = 24 sublayers, 186 sublayers -> 7 full blocks + a partial, at most 9 sources."""
    cfg = get_preset("kimi-k3")
    doc = " ".join(kimi_k3.__doc__.split())
    m = re.search(r"every (\d+) layers \((\d+) sublayers: (\d+) sublayers -> (\d+) full blocks \+ a partial, at most (\d+)", doc)
    assert m, "docstring no longer states the block size"
    layers, size, subs, full, sources = map(int, m.groups())
    assert (layers, size, subs) == (cfg.attn_res_block_layers, cfg.attn_res_block_size, cfg.n_sublayers)
    assert full == cfg.n_sublayers // cfg.attn_res_block_size
    assert sources == 1 + math.ceil(cfg.n_sublayers / cfg.attn_res_block_size)
