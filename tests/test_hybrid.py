"""The hybrid KV-cache / decode-cost model behind views/hybrid_attention.py."""
import pytest

from k3lite.config import get_preset
from k3lite.hybrid import (
    _active_params, bytes_ceiling, cache_bytes, decode_cost, efficiency_to_match, hybrid_config, kv_reduction,
    speedup_vs_full_mla,
)
from k3lite.params import count_params

ONE_M = 1 << 20


def test_pattern_and_cache_from_the_config():
    cfg = hybrid_config(3)
    assert cfg.layer_types() == get_preset("kimi-linear-48b-a3b").layer_types()
    assert cfg.layer_types().count("mla") == 7
    mla, kda = cache_bytes(cfg, ONE_M)
    assert mla == 7 * ONE_M * (512 + 64) * 2  # latent + rope key, bf16
    assert kda == 20 * (32 * 128 * 128 * 4 + 3 * 3 * 32 * 128 * 2)  # fp32 state + bf16 conv tail
    assert hybrid_config(0).layer_types() == ["mla"] * 27


def test_active_params_match_the_full_meta_count():
    assert _active_params(3, "kimi-linear-48b-a3b") == count_params(get_preset("kimi-linear-48b-a3b")).active


def test_kv_reduction_close_to_reported_and_speedup_bounded_by_bytes():
    assert kv_reduction(3, ONE_M) == pytest.approx(1 - 7 / 27, abs=0.005)  # ~74%, reported "up to 75%"
    for r in range(8):
        s = speedup_vs_full_mla(r, ONE_M, batch=64)
        assert 1.0 <= s <= bytes_ceiling(r) + 1e-9
    # more KDA layers never make long-context decoding slower; short contexts barely care
    s = [speedup_vs_full_mla(r, ONE_M) for r in range(8)]
    assert s == sorted(s) and s[3] > 2
    assert speedup_vs_full_mla(3, 4096) < 1.1
    # no bandwidth-only efficiency reproduces 6.3x for 3:1; a smaller target is reachable
    assert efficiency_to_match(6.3) is None
    e = efficiency_to_match(3.0)
    assert e is not None and speedup_vs_full_mla(3, ONE_M, attention_efficiency=e) == pytest.approx(3.0, rel=1e-3)


@pytest.mark.parametrize("kw, match", [
    (dict(kda_per_mla=8, context=10), "ratio"), (dict(kda_per_mla=3, context=0), "context"),
    (dict(kda_per_mla=3, context=10, batch=0), "batch"), (dict(kda_per_mla=3, context=10, hardware="TPU"), "hardware"),
    (dict(kda_per_mla=3, context=10, attention_efficiency=0), "efficiency"),
])
def test_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        decode_cost(**kw)
