"""Admission (k3lite/analytic/serving/admission.py): how many requests fit, by hand, and what binds."""
import pytest

from k3lite.analytic import memory
from k3lite.analytic.serving import Serving, Speculation, cache_bytes_per_sequence, placement
from k3lite.analytic.serving.admission import ENGINE_RESERVE, STATE_SLOTS, admission

MXFP4 = dict(memory.RELEASED_K3_FORMATS)


def sglang(**kw) -> Serving:
    return Serving("kimi-k3", "B300", 8, 8, 8, MXFP4, 8704, **kw)


def test_sglang_low_latency_by_hand():
    s = sglang()
    a = admission(s, 8192, 1024, state_slots=1)  # one state slot a request: vLLM's pool
    cache = memory.sequence_cache_bytes(s.cfg, 9216)
    # 69 KDA layers x 96 heads x 128 x 128 fp32 + conv tails; 24 MLA layers x 576 bf16 per token
    assert cache.kda == 69 * (96 * 128 * 128 * 4 + 3 * 3 * 96 * 128 * 2)
    assert cache.mla == 24 * 576 * 2 * 9216
    one = cache.mla + cache.kda / 8  # the latent whole on each TP rank, 1/8 of the state
    free = 288 * 2 ** 30 * (1 - ENGINE_RESERVE) - placement(s).weight_bytes_per_gpu
    assert a.max_concurrency == int(free // one) == 218  # 160 when 288 GB was read as 288e9 B
    assert a.binding == "MLA latent cache"
    # one count of the decode state: the same bytes step.py places per sequence
    assert sum(a.per_request.values()) == pytest.approx(cache_bytes_per_sequence(s.cfg, 9216, 8, 1) / 8)
    # by default as SGLang's recipes run (radix cache on, extra_buffer): 5 slots, and the state binds
    five = admission(s, 8192, 1024)
    assert STATE_SLOTS == 5 and five.binding == "KDA state"
    assert five.max_concurrency == int(free // (cache.mla + 5 * cache.kda / 8)) == 126


def test_what_binds_moves_with_the_layout():
    one = dict(state_slots=1)  # vLLM's pool: the latent binds on one node until DCP splits it
    dcp = admission(sglang(dcp=8), 8192, 1024, **one)  # each rank keeps 1/8 of every latent: the fp32 state binds
    assert dcp.binding == "KDA state" and dcp.max_concurrency > 3 * admission(sglang(), 8192, 1024, **one).max_concurrency
    assert admission(sglang(), 8192, 1024).binding == "KDA state"  # SGLang's 5 slots
    spec = admission(sglang(spec=Speculation()), 8192, 1024, **one)  # the drafter's weights and cache take room
    assert "draft model cache" in spec.per_request and spec.max_concurrency < 218
    assert spec.weight_bytes == pytest.approx(placement(sglang()).weight_bytes_per_gpu + 2 * 2.7e9 / 8)
    long = admission(sglang(), 100_000, 1024, **one)  # the paged latent grows with the tokens held, the state not
    assert long.per_request["MLA latent cache"] == pytest.approx(24 * 576 * 2 * 101_024)
    assert long.per_request["KDA state"] == admission(sglang(), 8192, 1024, **one).per_request["KDA state"]
    assert long.max_concurrency == int(long.free_bytes // (24 * 576 * 2 * 101_024 + long.per_request["KDA state"]))
    assert long.max_concurrency < 218 / 9  # 11x the tokens, ~9x a request's bytes


def test_nothing_fits_names_the_weights():
    a = admission(Serving("kimi-k3", "MI300X", 8, 8, 8, MXFP4, 8704), 8192, 1024)
    assert a.max_concurrency == 0 and a.binding == "weights" and "weights bind" in a.sentence
    # 192 GiB less the reserve cannot hold the 195 GB of weights per GPU; without the reserve it can
    assert admission(Serving("kimi-k3", "MI300X", 8, 8, 8, MXFP4, 8704), 8192, 1024, reserve=0.0).max_concurrency > 0


@pytest.mark.parametrize("kw, match", [(dict(reserve=1.0), "reserve"), (dict(state_slots=0), "state_slots")])
def test_bad_settings_name_the_constraint(kw, match):
    with pytest.raises(ValueError, match=match):
        admission(sglang(), 8192, 1024, **kw)
