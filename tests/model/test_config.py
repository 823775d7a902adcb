"""Config validation: every bad combination raises ValueError naming the constraint."""
import pytest

from k3lite.model.config import KDAConfig, MLAConfig, MoEConfig
from k3lite.model.presets import get_preset


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


def test_nested_dataclasses_direct():
    with pytest.raises(ValueError, match="top_k"):
        MoEConfig(n_routed_experts=4, top_k=5, expert_ffn_dim=8)
    with pytest.raises(ValueError, match="kv_lora_rank"):
        MLAConfig(n_heads=2, kv_lora_rank=0, qk_nope_head_dim=8, qk_rope_head_dim=0, v_head_dim=8)
