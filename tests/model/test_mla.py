"""Gated MLA: fast paths vs the loop reference; decode with a latent-only cache == full pass."""
import pytest
import torch

from k3lite.model.config import MLAConfig
from k3lite.model.mla import GatedMLA, MLACache, mla_reference

TOL = dict(atol=1e-5, rtol=1e-4)  # fp32

CONFIGS = {
    "nope_gate": MLAConfig(n_heads=4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8,
                           use_rope=False, output_gate=True),
    "rope_qlora": MLAConfig(n_heads=2, kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6,
                            q_lora_rank=10, use_rope=True, output_gate=False),
    "no_rope_dims": MLAConfig(n_heads=3, kv_lora_rank=8, qk_nope_head_dim=4, qk_rope_head_dim=0, v_head_dim=4,
                              use_rope=True, output_gate=True),
}


def make(name, d=24, seed=0):
    torch.manual_seed(seed)
    return GatedMLA(d, CONFIGS[name]).eval()


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("impl", ["naive", "absorbed"])
def test_full_pass_matches_loop_reference(name, impl):
    layer = make(name)
    x = torch.randn(2, 9, 24)
    out = layer(x, impl=impl).out
    torch.testing.assert_close(out, mla_reference(layer, x), **TOL)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_fused_attention_equals_the_traced_einsums(name):
    """Without trace the naive impl runs F.scaled_dot_product_attention; with a cache (T < S) it needs the
    offset causal mask. Both must give the traced path's numbers (which keeps the probabilities)."""
    layer = make(name, seed=2)
    x = torch.randn(2, 10, 24)
    torch.testing.assert_close(layer(x).out, layer(x, trace=True).out, **TOL)
    cache = layer(x[:, :6], use_cache=True).cache
    fused = layer(x[:, 6:], cache=cache, impl="naive").out
    torch.testing.assert_close(fused, layer(x[:, 6:], cache=cache, impl="naive", trace=True).out, **TOL)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_decode_with_latent_cache_equals_full_pass(name):
    layer = make(name, seed=1)
    x = torch.randn(2, 11, 24)
    full = layer(x).out
    # prefill 4 tokens, then decode one at a time, then a chunk of 3
    res = layer(x[:, :4], use_cache=True)
    outs, cache = [res.out], res.cache
    for t in range(4, 8):
        res = layer(x[:, t : t + 1], cache=cache, use_cache=True)
        outs.append(res.out)
        cache = res.cache
    res = layer(x[:, 8:], cache=cache, use_cache=True)
    outs.append(res.out)
    torch.testing.assert_close(torch.cat(outs, 1), full, **TOL)
    # the cache holds only the latent and the shared rope key: (R + Dr) numbers per token, no per-head K/V
    c = CONFIGS[name]
    assert isinstance(res.cache, MLACache)
    assert res.cache.latent.shape == (2, 11, c.kv_lora_rank)
    assert res.cache.k_rope.shape == (2, 11, c.qk_rope_head_dim)
    assert res.cache.nbytes() == 2 * 11 * (c.kv_lora_rank + c.qk_rope_head_dim) * 4


def test_causal_future_tokens_do_not_change_past_outputs():
    layer = make("rope_qlora")
    x = torch.randn(1, 8, 24)
    y = x.clone()
    y[:, 5:] = torch.randn(1, 3, 24)
    torch.testing.assert_close(layer(x).out[:, :5], layer(y).out[:, :5], **TOL)
    assert not torch.allclose(layer(x).out[:, 5:], layer(y).out[:, 5:])


def test_rope_makes_scores_position_dependent_and_nope_does_not():
    # with NoPE and identical tokens, every causal row is uniform; with RoPE it is not
    x = torch.randn(1, 1, 24).expand(1, 6, 24).contiguous()
    nope = make("nope_gate")
    attn = nope(x, trace=True).stats.attn[0, 0]  # (T, S)
    torch.testing.assert_close(attn[5], torch.full((6,), 1 / 6))
    rope = make("rope_qlora")
    attn_r = rope(x, trace=True).stats.attn[0, 0]
    assert not torch.allclose(attn_r[5], torch.full((6,), 1 / 6), atol=1e-4)


def test_attention_rows_sum_to_one_and_are_causal():
    layer = make("nope_gate")
    attn = layer(torch.randn(2, 7, 24), trace=True).stats.attn  # (B, H, T, S)
    torch.testing.assert_close(attn.sum(-1), torch.ones(2, 4, 7))
    assert torch.all(attn.triu(1) == 0)


def test_output_gate_zero_logits_halve_the_ungated_output():
    gated = make("nope_gate")
    c = CONFIGS["nope_gate"]
    ungated = GatedMLA(24, MLAConfig(**{**c.__dict__, "output_gate": False})).eval()
    ungated.load_state_dict({k: v for k, v in gated.state_dict().items() if not k.startswith("w_gate")})
    x = torch.randn(1, 5, 24)
    assert not torch.allclose(gated(x).out, 0.5 * ungated(x).out, atol=1e-4)
    with torch.no_grad():
        gated.w_gate.weight.zero_()  # sigmoid(0) = 1/2 on every channel; W_o is linear -> output halves
    torch.testing.assert_close(gated(x).out, 0.5 * ungated(x).out, **TOL)


def test_bad_inputs_raise():
    layer = make("nope_gate")
    with pytest.raises(ValueError, match="shape"):
        layer(torch.randn(5, 24))
    with pytest.raises(ValueError, match="impl"):
        layer(torch.randn(1, 2, 24), impl="flash")
    cache = layer(torch.randn(1, 2, 24), use_cache=True).cache
    with pytest.raises(ValueError, match="batch"):
        layer(torch.randn(2, 1, 24), cache=cache)
