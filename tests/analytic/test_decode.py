"""The one decode-step model (k3lite/analytic/decode.py) and the three models that call it."""
import pytest

from k3lite.analytic import decode, hybrid, ledger, memory, serving
from k3lite.model.presets import get_preset


def test_attention_flops_by_hand():
    cfg = get_preset("kimi-linear-48b-a3b")
    m, k = cfg.mla, cfg.kda
    types = cfg.layer_types()
    n = 1000
    per_mla = 2 * m.n_heads * n * (m.kv_lora_rank + m.qk_rope_head_dim) + 2 * m.n_heads * n * m.kv_lora_rank
    per_kda = 6 * k.n_heads * k.head_dim * k.head_dim
    assert decode.attention_flops(cfg, n) == types.count("mla") * per_mla + types.count("kda") * per_kda
    assert decode.attention_flops(cfg, 2 * n) > decode.attention_flops(cfg, n)  # MLA grows, KDA does not


@pytest.mark.parametrize("hbm,compute,wire,overlap,want", [
    (2.0, 1.0, 0.5, True, (2.0, "HBM")),
    (1.0, 3.0, 0.5, True, (3.0, "compute")),
    (1.0, 1.0, 4.0, True, (4.0, "wire")),
    (1.0, 1.0, 1.0, True, (1.0, "HBM")),  # ties go to HBM
    (2.0, 1.0, 0.5, False, (2.5, "HBM")),  # the wire after the roofline
    (1.0, 3.0, 3.5, False, (6.5, "wire")),
])
def test_roofline(hbm, compute, wire, overlap, want):
    assert decode.roofline(hbm, compute, wire, overlap) == want


def test_step_bytes_is_memorys_weights_and_cache():
    cfg = get_preset("kimi-k3")
    b = decode.step_bytes(cfg, 8, 4096, "fp8")
    cache = memory.sequence_cache_bytes(cfg, 4096)
    assert b.weights == memory.decode_weight_bytes(cfg, 8, "fp8")
    assert (b.mla_cache, b.kda_state, b.cache) == (cache.mla, cache.kda, cache.total)


def test_touched_share_matches_expected_experts():
    assert memory.touched_share(896, 16, 1) * 896 == pytest.approx(16)
    assert memory.expected_experts_touched(896, 16, 64) == 896 * memory.touched_share(896, 16, 64)


def test_hybrid_serving_and_ledger_all_call_the_one_model(monkeypatch):
    """Change the shared functions and all three move: none keeps its own copy of the formula."""
    cfg_hybrid = hybrid.decode_cost(3, 65536)
    s = serving.Serving()
    before_serving = serving.step_terms(s).compute_s_per_token
    before_ledger = ledger.ledger("kimi-k3", 65536).hbm_weights
    monkeypatch.setattr(decode, "attention_flops", lambda cfg, context: 0.0)
    assert hybrid.decode_cost(3, 65536).flops_per_step < cfg_hybrid.flops_per_step
    assert serving.step_terms(s).compute_s_per_token < before_serving
    monkeypatch.setattr(decode, "step_bytes", lambda cfg, batch, context, p="bf16", **sizes: decode.StepBytes(0.0, 0.0, 0.0))
    assert ledger.ledger("kimi-k3", 65536).hbm_weights == 0.0 != before_ledger
    assert hybrid.decode_cost(3, 65536).bytes_per_step == 0.0
