"""K3's mechanisms as released (moonshotai/Kimi-K3 modeling_kimi_linear.py, config.json; Kimi K3 report), each
against a slow reference written from the released code's equations: SiTU-GLU, the LatentMoE norm on the
aggregated expert output, the router (routed_scaling_factor 1.0, renormalised, no group limit), Eq. 14 quantile
balancing and its pooled-histogram estimator, and block Attention Residuals applied per layer."""
import math
import re

import pytest
import torch

from k3lite.model.config import K3_DECAY_LOWER_BOUND, MoEConfig
from k3lite.model.presets import get_preset
from k3lite.model.stack import K3Model, released_attn_res_forward
from k3lite.model.moe import (LatentMoE, Router, cut_histogram, latent_moe_reference, merge_histograms, quantile_beta,
                        quantile_bias, quantile_bias_histogram, quantile_bias_reference, released_gate_reference,
                        routing_metrics)
from k3lite.model.nn import GLUActivation, SwiGLU, situ_glu, situ_glu_reference


# ------------------------------------------------------------------------------------------ SiTU-GLU
def test_situ_glu_equals_the_released_formula_element_by_element():
    torch.manual_seed(0)
    gate, up = 30 * torch.randn(4, 64), 60 * torch.randn(4, 64)  # wide enough to reach both tanh saturations
    torch.testing.assert_close(situ_glu(gate, up).double(), situ_glu_reference(gate, up), rtol=1e-5, atol=1e-5)


def test_situ_glu_is_bounded_by_beta1_beta2_and_silu_glu_near_zero():
    big = torch.tensor([1e4, -1e4, 50.0, 7.0])
    out = situ_glu(big[:, None].expand(4, 4), big[None, :].expand(4, 4))
    assert out.abs().max() <= 4.0 * 25.0 and out.max() > 0.99 * 100  # b1 b2 = 100 is reached, never passed
    small_g, small_u = 0.05 * torch.randn(100), 0.05 * torch.randn(100)
    torch.testing.assert_close(situ_glu(small_g, small_u), torch.nn.functional.silu(small_g) * small_u,
                               rtol=2e-3, atol=1e-6)
    assert (torch.nn.functional.silu(big) * big).max() > 1e7  # SwiGLU is not bounded


def test_situ_glu_computes_in_fp32_and_returns_the_input_dtype():
    g = torch.tensor([3.3, -1.7, 9.1], dtype=torch.bfloat16)
    u = torch.tensor([12.5, 40.0, -3.0], dtype=torch.bfloat16)
    out = situ_glu(g, u)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out, situ_glu_reference(g, u).to(torch.bfloat16))  # fp32 inside, one rounding at the end


def test_kimi_k3_uses_situ_everywhere_and_the_other_presets_keep_swiglu():
    k3 = get_preset("kimi-k3")
    assert (k3.hidden_act, k3.situ_beta, k3.situ_linear_beta) == ("situ", 4.0, 25.0)
    small = k3.with_(vocab_size=64, d_model=32, n_layers=4, max_seq_len=64, dense_ffn_dim=48, attn_res_block_size=2,
                     mla={"n_heads": 2, "q_lora_rank": 8, "kv_lora_rank": 8, "qk_nope_head_dim": 8,
                          "qk_rope_head_dim": 4, "v_head_dim": 8},
                     kda={"n_heads": 2, "head_dim": 8},
                     moe={"n_routed_experts": 8, "top_k": 2, "expert_ffn_dim": 16, "latent_dim": 16})
    model = K3Model(small)
    acts = {m.act.name for m in model.modules() if hasattr(m, "act") and isinstance(m.act, GLUActivation)}
    assert acts == {"situ"}  # dense layer 0, shared experts, routed experts
    for name in ("kimi-linear-48b-a3b", "kimi-k2", "deepseek-v3"):  # SwiGLU stays where the release uses it
        assert get_preset(name).hidden_act == "swiglu"
    plain = K3Model(small.with_(hidden_act="swiglu"))
    assert {m.act.name for m in plain.modules() if isinstance(getattr(m, "act", None), GLUActivation)} == {"swiglu"}
    with pytest.raises(ValueError, match="hidden_act"):
        small.with_(hidden_act="gelu")


def test_dense_ffn_with_situ_is_the_released_kimi_mlp():
    torch.manual_seed(0)
    ffn = SwiGLU(16, 24, GLUActivation("situ"))
    x = 5 * torch.randn(3, 16)
    ref = ffn.w_down(situ_glu_reference(ffn.w_gate(x), ffn.w_up(x)).float())  # down(act(cat[gate, up]))
    torch.testing.assert_close(ffn(x), ref, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------ LatentMoE + router
def _k3_like_moe(**changes) -> MoEConfig:
    base = dict(n_routed_experts=16, top_k=4, expert_ffn_dim=12, n_shared_experts=2, latent_dim=8, latent_norm=True,
                latent_norm_at="combine", balancing="quantile", route_scale=1.0)
    return MoEConfig(**{**base, **changes})


@pytest.mark.parametrize("norm_at", ["combine", "dispatch"])
def test_latent_moe_matches_the_released_block_token_by_token(norm_at):
    torch.manual_seed(0)
    moe = LatentMoE(16, _k3_like_moe(latent_norm_at=norm_at), 1e-5, GLUActivation("situ"))
    moe.router.bias.copy_(0.05 * torch.randn(16))  # a trained-looking beta
    with torch.no_grad():
        moe.latent_norm.weight.copy_(1 + 0.3 * torch.randn(8))
        x = 3 * torch.randn(2, 5, 16)
        torch.testing.assert_close(moe(x).out, latent_moe_reference(moe, x), rtol=1e-5, atol=1e-5)


def test_the_norm_position_matters():
    """Eq. 11's norm on the aggregate is a different function from a norm on the dispatched latent."""
    torch.manual_seed(0)
    a = LatentMoE(16, _k3_like_moe(latent_norm_at="combine"))
    b = LatentMoE(16, _k3_like_moe(latent_norm_at="dispatch"))
    b.load_state_dict(a.state_dict())  # same weights, same parameter names
    x = torch.randn(1, 6, 16)
    with torch.no_grad():
        assert not torch.allclose(a(x).out, b(x).out, atol=1e-3)


def test_router_is_the_released_gate():
    """sigmoid, top-k on scores + e_score_correction_bias (= -beta), weights renormalised, x routed_scaling_factor."""
    torch.manual_seed(0)
    cfg = _k3_like_moe()
    r = Router(16, cfg)
    r.bias.copy_(0.1 * torch.randn(16))
    x = torch.randn(40, 16)
    out = r(x)
    idx, w = released_gate_reference(x, r.weight, -r.bias, cfg.top_k, 1.0)
    assert torch.equal(out.topk_idx.sort(-1).values, idx.sort(-1).values)
    order_ours, order_ref = out.topk_idx.argsort(-1), idx.argsort(-1)
    torch.testing.assert_close(out.topk_weight.gather(1, order_ours), w.gather(1, order_ref))
    torch.testing.assert_close(out.topk_weight.sum(-1), torch.ones(40))  # routed_scaling_factor 1.0


def test_kimi_k3_router_settings_are_the_released_ones():
    moe = get_preset("kimi-k3").moe
    assert (moe.route_scale, moe.n_groups, moe.topk_groups, moe.score_func) == (1.0, 1, 1, "sigmoid")
    assert (moe.latent_norm, moe.latent_norm_at, moe.balancing) == (True, "combine", "quantile")
    cfg = get_preset("kimi-k3")
    assert cfg.norm_eps == 1e-5 and cfg.kda.decay_lower_bound == K3_DECAY_LOWER_BOUND == -5.0
    assert cfg.kda.output_gate_full_rank and not cfg.kda.output_gate_bias


# ------------------------------------------------------------------------------------------ Eq. 14
def _skewed(n, e, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.sigmoid(torch.randn(n, e, generator=g) + torch.linspace(-1.5, 1.5, e))  # some experts favoured


def test_eq14_equals_its_token_by_token_reference():
    s, b = _skewed(300, 24, 0), 0.1 * torch.randn(24)
    torch.testing.assert_close(quantile_bias(s, 4, b).double(), quantile_bias_reference(s, 4, b), rtol=0, atol=1e-6)


def test_eq14_bias_is_centred_and_balances_the_next_batch():
    n, e, k = 4096, 32, 4
    raw = routing_metrics(_skewed(n, e, 1).topk(k).indices, e)[1]
    b = torch.zeros(e)
    for step in range(3):
        b = quantile_bias(_skewed(n, e, step), k, b)
    assert abs(float(b.mean())) < 1e-6  # b = b^ - mean(b^)
    balanced = routing_metrics((_skewed(n, e, 99) + b).topk(k).indices, e)[1]
    assert raw > 1.0 and balanced < 0.15, (raw, balanced)


def test_eq14_and_sus_order_statistic_pick_the_same_experts():
    """Su's blog rule (beta_j = (Nk/E + 1)-th largest of s - alpha) and Eq. 14 differ by the centring (no top-k
    changes) and the interpolation between neighbouring order statistics: the same experts almost everywhere."""
    s, k = _skewed(2048, 32, 3), 4
    b = quantile_bias(s, k, torch.zeros(32))
    beta = quantile_beta(s, k, torch.zeros(32))
    ours, su = (s + b).topk(k).indices.sort(-1).values, (s - beta).topk(k).indices.sort(-1).values
    assert (ours == su).all(-1).float().mean() > 0.98


def test_router_applies_eq14_after_selection_and_freezes_at_inference():
    torch.manual_seed(0)
    r = Router(8, _k3_like_moe())
    x = torch.randn(256, 8)
    first = r(x, update_balance=True)
    assert torch.equal(first.topk_idx, first.scores.topk(4).indices)  # this batch routed with the old (zero) b
    torch.testing.assert_close(-r.bias, quantile_bias(first.scores, 4, torch.zeros(16)))
    frozen = r.bias.clone()
    r(x)  # inference: no update
    assert torch.equal(r.bias, frozen)


def test_histogram_counts_add_across_ranks_and_estimate_eq14_to_a_bin():
    s, k, b = _skewed(3000, 16, 5), 4, 0.05 * torch.randn(16)
    shards = [cut_histogram(part, k, b, n_bins=512) for part in s.split(1000)]
    pooled = merge_histograms(shards)
    whole = cut_histogram(s, k, b, n_bins=512)  # alpha is per token, so sharding changes no count
    assert torch.equal(pooled.counts, whole.counts) and pooled.n_tokens == 3000
    exact = quantile_bias(s, k, b)
    width = 2.0 / 512
    assert (quantile_bias_histogram(pooled, k, b) - exact).abs().max() < 2 * width
    coarse = quantile_bias_histogram(merge_histograms([cut_histogram(p, k, b, n_bins=8) for p in s.split(1000)]), k, b)
    assert (coarse - exact).abs().max() > width  # and the bin count is what sets the error


def test_histogram_rejects_mismatched_bins():
    s = _skewed(64, 8, 0)
    with pytest.raises(ValueError, match="share their bins"):
        merge_histograms([cut_histogram(s, 2, torch.zeros(8), n_bins=8), cut_histogram(s, 2, torch.zeros(8), n_bins=16)])
    with pytest.raises(ValueError, match="n_bins"):
        cut_histogram(s, 2, torch.zeros(8), n_bins=0)


# ------------------------------------------------------------------------------------------ AttnRes per layer
@pytest.mark.parametrize("block_layers", [1, 2, 3])
def test_block_attn_res_is_the_released_per_layer_form(block_layers):
    """K3Model counts blocks in sublayers (2 per layer); the released code pushes a block every
    `attn_res_block_size` layers and lets each sublayer read the running partial. Same logits."""
    torch.manual_seed(0)
    cfg = get_preset("lite").with_(n_layers=5, attn_res_block_size=2 * block_layers, hidden_act="situ",
                                   moe={"latent_norm_at": "combine"}, norm_eps=1e-5)
    model = K3Model(cfg).eval()
    for p in model.parameters():  # non-zero pseudo-queries: uniform weights would hide a wrong source list
        if p.dim() == 1:
            p.data.add_(0.3 * torch.randn_like(p))
    tokens = torch.randint(0, cfg.vocab_size, (1, 12))
    with torch.no_grad():
        torch.testing.assert_close(model(tokens).logits, released_attn_res_forward(model, tokens), rtol=1e-4, atol=1e-4)


def test_kimi_k3_attn_res_reads_at_most_nine_sources():
    cfg = get_preset("kimi-k3")
    assert cfg.attn_res_block_layers == 12  # config.json attn_res_block_size
    full_blocks = cfg.n_sublayers // cfg.attn_res_block_size
    assert 1 + full_blocks + (1 if cfg.n_sublayers % cfg.attn_res_block_size else 0) == 9
    assert math.ceil(cfg.n_layers / cfg.attn_res_block_layers) == 8  # blocks pushed at layers 0, 12, ..., 84


# ------------------------------------------------------------------------------------------ item 5 panels
def test_glu_curves_show_the_bound():
    from k3lite.model.nn import glu_curves
    c = glu_curves(-60, 60, 241)
    assert c.bound == 100.0 and float(c.situ.abs().max()) < c.bound < float(c.swiglu.max())
    with pytest.raises(ValueError, match="hi > lo"):
        glu_curves(1.0, 0.0)


def test_decay_memory_at_k3s_bound():
    from k3lite.analytic.memory import FP32_MIN_NORMAL_LOG, chunk_decay_floor, decay_memory
    m = decay_memory(K3_DECAY_LOWER_BOUND, [0, 1, 2])
    assert m.tokens_to_threshold == pytest.approx(math.log(100) / 5)  # 0.92 tokens to 1%
    assert m.kept_after == pytest.approx([1.0, math.exp(-5), math.exp(-10)])
    assert chunk_decay_floor(K3_DECAY_LOWER_BOUND, 16) > FP32_MIN_NORMAL_LOG > chunk_decay_floor(K3_DECAY_LOWER_BOUND, 64)
    with pytest.raises(ValueError, match="log_decay"):
        decay_memory(0.5, [1])


def test_kda_page_states_the_bound_from_its_numbers():
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    from k3lite.analytic.memory import decay_memory
    at = AppTest.from_file(str(ROOT / "views" / "kda.py"), default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    text = next(c.value for c in at.caption if "gate_lower_bound" in c.value)
    fast = decay_memory(K3_DECAY_LOWER_BOUND, [1])
    assert f"survives {fast.tokens_to_threshold:.2f} tokens" in text and "e^-80" in text and "e^-320" in text
    smallest = float(re.search(r"smallest log-decay on this input is (-?[\d.]+\d)", text).group(1))
    if get_preset("lite").kda.decay_lower_bound is not None:
        assert smallest >= K3_DECAY_LOWER_BOUND  # the layer on the page obeys the bound it states
