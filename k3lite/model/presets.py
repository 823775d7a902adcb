"""Published presets, each a validated `K3Config` whose docstring names its source, and `get_preset` by name.

    deepseek-v3, kimi-k2, kimi-linear-48b-a3b   the released configs of the models K3 builds on
    kimi-k3     the released moonshotai/Kimi-K3 config, with every key of it accounted for (KIMI_K3_CONFIG_KEYS),
                the checkpoint's size and the headline totals, and the vision tower's parameter count
    lite        the tiny model in K3's forms that the app runs live
"""
from __future__ import annotations

from k3lite.model.config import K3_DECAY_LOWER_BOUND, K3Config, KDAConfig, MLAConfig, MoEConfig


def deepseek_v3() -> K3Config:
    """DeepSeek-V3 (arXiv 2412.19437; config.json of deepseek-ai/DeepSeek-V3).

    61 layers, first 3 dense (FFN 18432), hidden 7168, vocab 129280, MLA 128 heads, q_lora 1536,
    kv_lora 512, qk_nope 128, qk_rope 64, v_head 128; 256 routed + 1 shared experts, top-8,
    expert FFN 2048, sigmoid router with route_scale 2.5, 8 groups / best 4.
    Stated: 671B total, 37B active (the 14B multi-token-prediction module is not counted; nor here).
    """
    return K3Config(
        name="deepseek-v3",
        vocab_size=129280,
        d_model=7168,
        n_layers=61,
        mla=MLAConfig(n_heads=128, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                      qk_rope_head_dim=64, v_head_dim=128),
        moe=MoEConfig(n_routed_experts=256, top_k=8, expert_ffn_dim=2048, n_shared_experts=1,
                      balancing="bias", route_scale=2.5, n_groups=8, topk_groups=4),
        kda=None,
        kda_ratio=(0, 1),
        last_layer_global=True,
        first_k_dense=3,
        dense_ffn_dim=18432,
        attn_res="standard",
        max_seq_len=131072,
        notes={"source": "DeepSeek-V3 technical report (arXiv 2412.19437) and its config.json"},
    )


def kimi_k2() -> K3Config:
    """Kimi K2 (moonshotai/Kimi-K2-Instruct config.json; Kimi K2 report arXiv 2507.20534).

    Same MLA family as DeepSeek-V3: 61 layers (first 1 dense, FFN 18432), hidden 7168, 64 heads,
    384 routed + 1 shared experts, top-8, expert FFN 2048, vocab 163840, 1 expert group.
    Stated: 1.04T total, 32B active. Counting the config.json gives about 1.026T: the headline
    is rounded up (the MTP layer and rounding account for the difference).
    """
    return K3Config(
        name="kimi-k2",
        vocab_size=163840,
        d_model=7168,
        n_layers=61,
        mla=MLAConfig(n_heads=64, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                      qk_rope_head_dim=64, v_head_dim=128),
        moe=MoEConfig(n_routed_experts=384, top_k=8, expert_ffn_dim=2048, n_shared_experts=1,
                      balancing="bias", route_scale=2.827),
        kda=None,
        kda_ratio=(0, 1),
        first_k_dense=1,
        dense_ffn_dim=18432,
        attn_res="standard",
        max_seq_len=131072,
        notes={"source": "moonshotai/Kimi-K2-Instruct config.json; Kimi K2 report (arXiv 2507.20534)"},
    )


def kimi_linear_48b_a3b() -> K3Config:
    """Kimi Linear 48B-A3B (Kimi Linear tech report, arXiv 2510.26692; moonshotai/Kimi-Linear-48B-A3B config).

    27 layers, hidden 2304, 32 KDA heads x 128, MLA (NoPE, 32 heads, kv_lora 512, full-rank q) every 4th
    layer and the last; 256 experts top-8 + 1 shared, expert FFN 1024, first layer dense FFN 9216,
    vocab 163840. Stated: 48B total, 3B active.
    """
    return K3Config(
        name="kimi-linear-48b-a3b",
        vocab_size=163840,
        d_model=2304,
        n_layers=27,
        mla=MLAConfig(n_heads=32, q_lora_rank=0, kv_lora_rank=512, qk_nope_head_dim=128,
                      qk_rope_head_dim=64, v_head_dim=128, use_rope=False),
        # no bias on the output gate: the released modeling_kimi.py builds g_b_proj with bias=False
        kda=KDAConfig(n_heads=32, head_dim=128, conv_size=4, output_gate_bias=False),
        moe=MoEConfig(n_routed_experts=256, top_k=8, expert_ffn_dim=1024, n_shared_experts=1,
                      balancing="bias", route_scale=2.446),
        kda_ratio=(3, 1),
        last_layer_global=True,
        first_k_dense=1,
        dense_ffn_dim=9216,
        attn_res="standard",
        max_seq_len=1048576,
        notes={"source": "Kimi Linear tech report (arXiv 2510.26692) and its config.json"},
    )


# The released K3 config this preset follows: moonshotai/Kimi-K3 `config.json` (text_config), read from the verbatim
# copy in PipeNetwork/kimi-k3-mlx `reference/config.json` (commit fe0738f5d37776d5ab256913a9e5190b71e90f7c, "unmodified
# files from moonshotai/Kimi-K3"); its `reference/model.safetensors.index.json` gives total_size 1,560,860,324,864 bytes
# in 497,220 tensors, which public audits quote for Hugging Face revision f831ab66814297da540d832a5235f8e904f29d06.
KIMI_K3_SOURCE = ("moonshotai/Kimi-K3 config.json + modeling_kimi_linear.py (HF revision f831ab66; read from the "
                  "verbatim copy in PipeNetwork/kimi-k3-mlx reference/ @ fe0738f5); Kimi K3 Technical Report (arXiv 2607.24653)")
KIMI_K3_CHECKPOINT_BYTES = 1_560_860_324_864  # model.safetensors.index.json metadata.total_size (tensor data only)
KIMI_K3_STATED_TOTAL, KIMI_K3_STATED_ACTIVE = 2.78e12, 104e9  # model card / report headline (text + vision tower)

# The released vision tower (config.json vision_config: MoonViT, 27 layers, hidden 1024, qkv 1536, MLP 4096, patch 14,
# a learned 64 x 64 position grid, no biases, RMSNorm; patchmergerv2 projector: 2 x 2 merge -> 4096 -> 4096 -> 7168).
# k3lite does not model it; it is one stated constant in the checkpoint bytes and the headline totals.
def kimi_k3_vision_params() -> int:
    """Parameters of K3's vision tower + projector, counted from vision_config (the tensor names in the released
    index: patch_embed.proj / pos_emb, blocks.N.{wqkv, wo, mlp.fc0, mlp.fc1, norm0, norm1}, final_layernorm,
    mm_projector.{proj.0, proj.1, post_norm}). About 0.447B (PipeNetwork/kimi-k3-mlx's README: 447 M)."""
    d, qkv, mlp, layers, patch, grid, merged, text = 1024, 1536, 4096, 27, 14, 64, 4 * 1024, 7168
    block = d * 3 * qkv + qkv * d + 2 * d * mlp + 2 * d  # wqkv, wo, fc0, fc1, two norms
    tower = 3 * patch * patch * d + grid * grid * d + layers * block + d  # patch conv, position grid, blocks, final norm
    projector = merged * merged + merged * text + merged  # proj.0, proj.1, post_norm (4096 wide)
    return tower + projector

# Every key of the released text_config that describes the model, and what k3lite does with it. "not modelled"
# keys change nothing k3lite computes; none is dropped without a line here. (Generation defaults such as
# max_length, top_k, temperature, num_beams and the HF bookkeeping keys, e.g. id2label, are not architecture.)
KIMI_K3_CONFIG_KEYS: dict[str, str] = {
    "vocab_size 163840": "vocab_size",
    "hidden_size 7168": "d_model",
    "num_hidden_layers 93": "n_layers",
    "linear_attn_config.kda_layers / full_attn_layers (1-based; MLA at 4, 8, ..., 92, 93)":
        "kda_ratio (3, 1) + last_layer_global: 69 KDA, 24 MLA (test_presets checks the lists)",
    "linear_attn_config.num_heads 96, head_dim 128": "kda.n_heads, kda.head_dim",
    "linear_attn_config.short_conv_kernel_size 4": "kda.conv_size",
    "linear_attn_config.use_full_rank_gate true": "kda.output_gate_full_rank (g_proj 7168 -> 12288, no bias)",
    "linear_attn_config.gate_lower_bound -5.0": "kda.decay_lower_bound (K3_DECAY_LOWER_BOUND)",
    "num_attention_heads 96, num_key_value_heads 96": "mla.n_heads (MLA has no KV grouping)",
    "q_lora_rank 1536, kv_lora_rank 512": "mla.q_lora_rank, mla.kv_lora_rank",
    "qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128": "mla dims",
    "mla_use_nope true": "mla.use_rope False (the 64 'rope' dims carry no rotation)",
    "mla_use_output_gate true": "mla.output_gate (sigmoid, g_proj 7168 -> 12288)",
    "num_experts 896, num_experts_per_token 16": "moe.n_routed_experts, moe.top_k",
    "moe_intermediate_size 3072": "moe.expert_ffn_dim",
    "num_shared_experts 2": "moe.n_shared_experts (merged into one FFN of 2 x 3072 on the full width, as the code does)",
    "routed_expert_hidden_size 3584": "moe.latent_dim",
    "latent_moe_use_norm true": "moe.latent_norm, at 'combine' (routed_expert_norm on the aggregated output)",
    "moe_router_activation_func sigmoid": "moe.score_func",
    "moe_renormalize true": "Router: sigmoid gate weights renormalised over the chosen k",
    "routed_scaling_factor 1.0": "moe.route_scale",
    "num_expert_group 1, topk_group 1, use_grouped_topk true": "moe.n_groups 1 (one group: no group/node limit)",
    "topk_method noaux_tc": "moe.balancing 'quantile' (report Eq. 14; a selection-only bias, e_score_correction_bias)",
    "first_k_dense_replace 1, intermediate_size 33792": "first_k_dense, dense_ffn_dim",
    "moe_layer_freq 1": "every layer after the first is MoE (ffn_types)",
    "hidden_act situ": "hidden_act 'situ' (routed, shared and dense FFNs)",
    "activation_situ_beta 4.0, activation_situ_linear_beta 25.0": "situ_beta, situ_linear_beta",
    "attn_res_block_size 12 (layers)": "attn_res 'block', attn_res_block_size 24 sublayers",
    "rms_norm_eps 1e-05": "norm_eps",
    "max_position_embeddings 1048576": "max_seq_len",
    "tie_word_embeddings false": "tie_embeddings",
    "num_nextn_predict_layers 0": "no MTP module (none is counted)",
    "quantization_config mxfp4-pack-quantized, group 32, uint8 scales; ignore self_attn, shared_experts, dense mlp, "
    "lm_head, vision_tower, mm_projector": "k3lite.analytic.params.checkpoint_bytes and the serving default (MXFP4 routed experts, bf16 rest)",
    "dtype bfloat16": "bytes of every non-expert weight in checkpoint_bytes",
    "vision_config (MoonViT, 27 layers, hidden 1024)": "not modelled: the text model only; its parameters enter the "
    "checkpoint bytes and headline totals as VISION_TOWER_PARAMS (k3lite.analytic.params)",
    "initializer_range 0.02": "not modelled (k3lite's own init: model._init_weights, std 0.02 too)",
    "bos/eos/pad_token_id, media_placeholder_token_id": "not modelled (k3lite runs a byte-level toy tokenizer)",
    "rope settings (none: NoPE)": "rope_theta unused (use_rope False)",
}


def kimi_k3() -> K3Config:
    """Kimi K3 as released (moonshotai/Kimi-K3 config.json and modeling code; Kimi K3 Technical Report).

    93 layers, hidden 7168, vocab 163840; 69 KDA layers (96 heads x 128, short conv 4, full-rank output gate,
    decay bounded below by gate_lower_bound -5) and 24 gated MLA layers (NoPE, 96 heads, q_lora 1536,
    kv_lora 512, qk 128+64, v 128) in a 3:1 pattern with the last layer global; layer 0 dense (FFN 33792),
    the rest LatentMoE: 896 routed experts top-16 of FFN 3072 in a 3584 latent, an RMSNorm on the aggregated
    expert output before the up-projection, 2 shared experts of 3072 on the full width; sigmoid router, gate
    weights renormalised, routed_scaling_factor 1.0, no group limit; SiTU-GLU everywhere (b1 4, b2 25); block
    Attention Residuals every 12 layers (24 sublayers: 186 sublayers -> 7 full blocks + a partial, at most
    9 sources); RMSNorm eps 1e-5; MXFP4 routed experts, bf16 rest. Every key used: KIMI_K3_CONFIG_KEYS.
    What the release does not state and k3lite assumes: nothing in the shapes (the decay's A_log is counted
    per head as the modeling code allocates it, 96 per layer, where the shipped tensors hold 128 per layer:
    2,208 parameters in all). `python -m k3lite.analytic.params --preset kimi-k3` gives the count.
    """
    return K3Config(
        name="kimi-k3",
        vocab_size=163840,
        d_model=7168,
        n_layers=93,
        mla=MLAConfig(n_heads=96, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                      qk_rope_head_dim=64, v_head_dim=128, use_rope=False, output_gate=True),
        kda=KDAConfig(n_heads=96, head_dim=128, conv_size=4, decay_lower_bound=K3_DECAY_LOWER_BOUND,
                      output_gate_full_rank=True, output_gate_bias=False, beta_bias=False),
        moe=MoEConfig(n_routed_experts=896, top_k=16, expert_ffn_dim=3072, n_shared_experts=2,
                      latent_dim=3584, latent_norm=True, latent_norm_at="combine", balancing="quantile",
                      score_func="sigmoid", route_scale=1.0, n_groups=1, topk_groups=1),
        kda_ratio=(3, 1),
        last_layer_global=True,
        first_k_dense=1,
        dense_ffn_dim=33792,
        hidden_act="situ",
        situ_beta=4.0,
        situ_linear_beta=25.0,
        attn_res="block",
        attn_res_block_size=24,  # config: 12 layers
        tie_embeddings=False,
        max_seq_len=1048576,
        norm_eps=1e-5,
        notes={
            "source": KIMI_K3_SOURCE,
            "config keys": "; ".join(f"{k} -> {v}" for k, v in KIMI_K3_CONFIG_KEYS.items()),
        },
    )


def lite() -> K3Config:
    """The tiny K3-shaped model the app runs live on a laptop CPU (byte-level vocab of 256).

    K3's forms at toy scale (kimi_k3): 8 layers in a 3:1 KDA:MLA pattern (last global); KDA with the decay
    bounded below by e^-5 per token and a full-rank output gate without bias; gated NoPE MLA with a low-rank q
    (q_lora 32 of d 128, about K3's 1536 / 7168); layer 0 dense; 32 routed experts top-4 of FFN 128 in a 64
    latent (d / 2, as K3) with the RMSNorm on the aggregated expert output, 2 shared experts of the expert
    width; sigmoid router, renormalised, route scale 1.0, Eq. 14 quantile balancing; SiTU-GLU everywhere;
    block attention residuals every 2 layers (4 sublayers); RMSNorm eps 1e-5. Unlike K3: tied embeddings (a
    256-byte vocabulary makes the head 0.5% of the model).
    """
    return K3Config(
        name="lite",
        vocab_size=256,
        d_model=128,
        n_layers=8,
        mla=MLAConfig(n_heads=4, q_lora_rank=32, kv_lora_rank=64, qk_nope_head_dim=32,
                      qk_rope_head_dim=16, v_head_dim=32, use_rope=False, output_gate=True),
        kda=KDAConfig(n_heads=4, head_dim=32, conv_size=4, decay_lower_bound=K3_DECAY_LOWER_BOUND,
                      output_gate_full_rank=True, output_gate_bias=False),
        moe=MoEConfig(n_routed_experts=32, top_k=4, expert_ffn_dim=128, n_shared_experts=2,
                      shared_ffn_dim=128, latent_dim=64, latent_norm=True, latent_norm_at="combine",
                      balancing="quantile", route_scale=1.0),
        kda_ratio=(3, 1),
        last_layer_global=True,
        first_k_dense=1,
        dense_ffn_dim=384,
        hidden_act="situ",
        attn_res="block",
        attn_res_block_size=4,
        tie_embeddings=True,
        max_seq_len=2048,
        norm_eps=1e-5,
        notes={"source": "k3lite's own toy configuration in K3's forms (see kimi_k3)"},
    )


PRESETS = {
    "lite": lite,
    "kimi-k3": kimi_k3,
    "kimi-linear-48b-a3b": kimi_linear_48b_a3b,
    "kimi-k2": kimi_k2,
    "deepseek-v3": deepseek_v3,
}


def get_preset(name: str) -> K3Config:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name]()
