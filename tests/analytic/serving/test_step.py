"""The serving physics (k3lite/analytic/serving/step.py): hand-computed cases per formula: placement, one decode
step, the experts a batch touches, prefill, capacity against context, speculation."""
import math

import pytest

from k3lite.analytic import memory
from k3lite.model.presets import get_preset
from k3lite.analytic.hardware import get_gpu
from k3lite.analytic.serving import (
    Serving, best_batch, capacity, check_fits, decode_step, pareto, placement,
    prefill_usd_per_m_input, wire_bytes_per_token,
)
from k3lite.analytic.serving.step import (
    prefill_step,
)
from k3lite.analytic.serving.compare import (
    FP8,
)
from k3lite.interconnect import Topology
from k3lite.interconnect import wire_bytes_per_token as interconnect_wire_bytes
from k3lite.interconnect.deepep import nic_share_normal, nic_terms



def test_placement_by_hand():
    s = Serving("kimi-linear-48b-a3b", "H200", 8, 4, 2, "fp8", 100_000)
    cfg = get_preset("kimi-linear-48b-a3b")
    w = memory.weight_bytes(cfg, "fp8")
    p = placement(s)
    rest = sum(v for c, v in w.items() if c != "routed_experts")
    assert p.weight_bytes_per_gpu == pytest.approx(w["routed_experts"] / 4 + rest / 2)
    # tp 2: batch B per GPU = 2B sequences in the TP group; each rank keeps all 2B whole MLA latent caches and half
    # of each of the 2B KDA states: B x (2 x latent + one whole KDA state) per GPU
    seq = memory.sequence_cache_bytes(cfg, 100_000)
    assert p.cache_bytes_per_sequence == 2 * seq.mla + seq.kda
    # decode context parallelism over the 2 ranks: each keeps half of every latent cache, the KDA states as before
    assert placement(s.with_(dcp=2)).cache_bytes_per_sequence == seq.mla + seq.kda
    assert seq.mla == 7 * 100_000 * 576 * 2
    assert p.max_batch_per_gpu == int((141 * 2 ** 30 - p.weight_bytes_per_gpu) // p.cache_bytes_per_sequence)
    assert p.min_gpus_for_weights == math.ceil(sum(w.values()) / 141e9)


def test_decode_step_by_hand():
    s = Serving("deepseek-v3", "H800", 16, 16, 1, FP8, 4096, overlap=False, usd_per_gpu_hour=3.6)
    cfg, gpu, b = s.cfg, get_gpu("H800"), 32
    st = decode_step(s, b)
    w_all, w_act = memory.weight_bytes(cfg, FP8), memory.weight_bytes(cfg, FP8, active=True)
    hit = 1 - (1 - 8 / 256) ** (b * 16)  # one copy of each expert serves the 16 GPUs' 32 tokens each
    hbm = (sum(v for c, v in w_act.items() if c != "routed_experts") + w_all["routed_experts"] / 16 * hit
           + b * 61 * 4096 * 576 * 2)
    assert st.hbm_bytes == pytest.approx(hbm)
    n = memory.component_params(cfg, active=True)
    attn = 61 * 2 * 128 * 4096 * (2 * 512 + 64)
    compute = b * (2 * sum(n.values()) / gpu.fp8_flops + attn / gpu.bf16_flops)
    assert st.compute_s == pytest.approx(compute)
    intra, inter = wire_bytes_per_token(cfg, s)
    assert intra > 0 and inter > 0  # 16 GPUs = two 8-GPU NVLink domains
    # across domains each call sends on NVLink and the NIC at once, the NIC at DeepEP's achieved share, and pays
    # DeepEP's fitted latency per dispatch and per combine in each of the 58 MoE layers (step.wire_time)
    wb = interconnect_wire_bytes(cfg, Topology("H800", 16, 8, gpu.nvlink_bw, gpu.nic_bw, "-"), 16, "low-latency")
    nic = nic_terms()
    assert wb.intra == pytest.approx(intra) and wb.inter == pytest.approx(inter)
    per_token = (max(wb.dispatch_intra / gpu.nvlink_bw, wb.dispatch_inter / (nic.dispatch_nic_share * gpu.nic_bw))
                 + max(wb.combine_intra / gpu.nvlink_bw, wb.combine_inter / (nic.combine_nic_share * gpu.nic_bw)))
    wire = b * 58 * per_token + 58 * (nic.dispatch_latency_s + nic.combine_latency_s)
    assert st.wire_s == pytest.approx(wire)
    assert st.step_s == pytest.approx(max(hbm / gpu.hbm_bw, compute) + wire)  # no overlap: the wire adds
    on = decode_step(s.with_(overlap=True), b)
    assert on.step_s == pytest.approx(max(hbm / gpu.hbm_bw, compute, wire)) and on.step_s <= st.step_s
    assert st.tokens_per_s_per_gpu == pytest.approx(b / st.step_s)
    assert st.usd_per_m_output_tokens == pytest.approx(1e3 / st.tokens_per_s_per_gpu)  # $3.6/h = $0.001/s


def test_batch_touches_more_experts_and_best_batch():
    s = Serving("kimi-k2", "H200", 16, 16, 1, FP8, 8192)
    one, many = decode_step(s, 1), decode_step(s, 64)
    assert many.hbm_bytes > one.hbm_bytes  # more tokens touch more of the hosted experts (and more cache)
    assert many.tokens_per_s_per_gpu > one.tokens_per_s_per_gpu > many.tokens_per_s_per_user / 64
    top = check_fits(s).max_batch_per_gpu
    assert best_batch(s) == top
    slow = best_batch(s, min_tokens_per_user=40)
    assert decode_step(s, slow).tokens_per_s_per_user >= 40 and (slow == top or decode_step(s, slow + 1).tokens_per_s_per_user < 40)
    curve = pareto(s, points=8)
    assert curve[0].batch_per_gpu == 1 and curve[-1].batch_per_gpu == top
    assert [p.tokens_per_s_per_gpu for p in curve] == sorted(p.tokens_per_s_per_gpu for p in curve)


def test_prefill_estimate_by_hand():
    s = Serving("deepseek-v3", "H800", 16, 16, 1, FP8, 4096, usd_per_gpu_hour=3.6)
    n = memory.component_params(s.cfg, active=True)
    # prefill's MLA un-absorbed: scores over (nope 128 + rope 64), values 128 wide, 128 heads, half the context
    t = 2 * sum(n.values()) / 1979e12 + 61 * 2 * 128 * 2048 * (128 + 64 + 128) / 989e12
    pre = prefill_step(s)
    assert pre.compute_s == pytest.approx(t)
    assert pre.s_per_token == max(pre.compute_s, pre.wire_s, pre.hbm_s)  # overlapped: the slowest term
    assert prefill_usd_per_m_input(s) == pytest.approx(0.001 * pre.s_per_token * 1e6)


def test_capacity_by_hand():
    s = Serving("kimi-linear-48b-a3b", "H200", 8, 8, 1, "fp8", 65536)
    free = 141 * 2 ** 30 - placement(s).weight_bytes_per_gpu
    hybrid = 7 * 65536 * 576 * 2 + 20 * (32 * 128 * 128 * 4 + 3 * 3 * 32 * 128 * 2)
    caps = capacity(s, [65536])
    assert list(caps.values()) == [[int(free // hybrid)], [int(free // (27 * 65536 * 576 * 2))],
                                   [int(free // (27 * 65536 * 2 * 8 * 128 * 2))]]


def test_peak_flops_follow_the_storage_format():
    h100, b300 = get_gpu("H100 SXM"), get_gpu("B300")
    assert h100.peak_flops("bf16") == h100.bf16_flops and h100.peak_flops("fp8") == h100.fp8_flops
    assert h100.peak_flops("nvfp4") == h100.fp8_flops  # Hopper has no FP4 tensor cores
    assert b300.peak_flops("nvfp4") == b300.fp4_flops and b300.peak_flops("int4") == b300.fp8_flops  # weight-only


def test_capacity_hybrid_beats_all_mla_beats_gqa():
    caps = capacity(Serving(), [4096, 131072])
    hybrid, mla, gqa = caps.values()
    assert hybrid[1] > mla[1] > gqa[1]  # at long context the fixed KDA states win
    assert mla[0] > hybrid[0]  # at 4K the fixed states cost more than the short cache they replace


# ------------------------------------------------------------------------------------------ speculative decoding
def test_speculation_by_hand():
    """A verification step runs draft + 1 tokens of each sequence (compute, wire and expert hits scale with them,
    the cache is read once); the drafter adds its own time; each sequence emits `acceptance` tokens."""
    from k3lite.analytic.serving import Speculation
    base = Serving("kimi-k2", "H200", 16, 16, 1, FP8, 8192)
    sp = Speculation(draft_tokens=3, acceptance=2.5, drafter="draft-model", draft_params=1e9)
    b, gpu, cfg = 8, get_gpu("H200"), get_preset("kimi-k2")
    plain, spec = decode_step(base, b), decode_step(base.with_(spec=sp), b)
    w_all, w_act = memory.weight_bytes(cfg, FP8), memory.weight_bytes(cfg, FP8, active=True)
    hit = 1 - (1 - 8 / 384) ** (b * 4 * 16)  # 4 tokens per sequence now reach the experts
    hbm = (sum(v for c, v in w_act.items() if c != "routed_experts") + w_all["routed_experts"] / 16 * hit
           + b * placement(base).cache_bytes_per_sequence)
    assert spec.hbm_bytes == pytest.approx(hbm)
    latency = 60 * (nic_terms().dispatch_latency_s + nic_terms().combine_latency_s)  # once per step, not per token
    assert spec.compute_s == pytest.approx(4 * plain.compute_s)
    assert spec.wire_s - latency == pytest.approx(4 * (plain.wire_s - latency))
    draft = max(2e9 / gpu.hbm_bw, b * 3 * 2e9 / gpu.bf16_flops)
    assert spec.draft_s == pytest.approx(draft)
    assert spec.step_s == pytest.approx(max(hbm / gpu.hbm_bw, spec.compute_s, spec.wire_s) + draft)
    assert spec.tokens_per_s_per_user == pytest.approx(2.5 / spec.step_s)
    assert spec.tokens_per_s_per_gpu == pytest.approx(b * 2.5 / spec.step_s)
    # nothing accepted and a free drafter: verifying more tokens can only cost time
    nothing = decode_step(base.with_(spec=Speculation(3, 1.0, "draft-model", 0.0)), b)
    assert nothing.tokens_per_s_per_user <= plain.tokens_per_s_per_user


def test_prefill_pool_by_hand():
    """Prefill: compute at peak, DeepEP normal-kernel wire, this GPU's weights once per chunk; the max of them."""
    from k3lite.analytic.serving import prefill_step
    s = Serving("kimi-k2", "B300", 32, 32, 1, FP8, 8192, usd_per_gpu_hour=3.6)
    cfg, gpu = s.cfg, get_gpu("B300")
    pre = prefill_step(s, 4096)
    intra, inter = wire_bytes_per_token(cfg, s.with_(scheme="normal"))
    wb = interconnect_wire_bytes(cfg, Topology("B300", 32, 8, gpu.nvlink_bw, gpu.nic_bw, "-"), 32, "normal")
    share, nic = nic_share_normal(32), nic_terms()  # DeepEP's normal-kernel row at EP 32; the calls' latency per chunk
    per_token = (max(wb.dispatch_intra / gpu.nvlink_bw, wb.dispatch_inter / (share * gpu.nic_bw))
                 + max(wb.combine_intra / gpu.nvlink_bw, wb.combine_inter / (share * gpu.nic_bw)))
    latency = nic.dispatch_latency_s + nic.combine_latency_s
    assert pre.wire_s == pytest.approx(60 * (per_token + latency / 4096))  # 60 MoE layers
    assert pre.hbm_s == pytest.approx(placement(s).weight_bytes_per_gpu / 4096 / gpu.hbm_bw)
    assert pre.s_per_token == max(pre.compute_s, pre.wire_s, pre.hbm_s)
    assert pre.usd_per_m_input_tokens == pytest.approx(0.001 * pre.s_per_token * 1e6)
    assert prefill_usd_per_m_input(s) == prefill_step(s).usd_per_m_input_tokens  # one function behind both names
    # the low-latency kernels would send one message per (token, expert): normal ones send fewer bytes
    assert wire_bytes_per_token(cfg, s)[1] > inter
    with pytest.raises(ValueError, match="chunk_tokens"):
        prefill_step(s, 0)


def test_the_overflow_message_names_the_replicated_weights_and_the_knob_that_fixes_them():
    """64 x H100 at TP 1: the non-expert weights (113 GB per GPU, replicated) overflow, not the experts (22.6 GB):
    more EP cannot help; TP 2 or fp8 for them can."""
    with pytest.raises(ValueError) as e:
        check_fits(Serving(gpu="H100 SXM", n_gpus=64, ep=64))
    text = str(e.value)
    assert "raise ep" not in text and "no EP can fix it" in text
    assert "TP >= 2" in text and "non-expert weights stored as fp8" in text
    assert "113.5 GB" in text and "22.6 GB" in text


def test_the_overflow_message_asks_for_more_ep_when_the_experts_overflow():
    with pytest.raises(ValueError) as e:
        check_fits(Serving(gpu="H200", n_gpus=8, ep=8))
    assert "EP >= 39" in str(e.value)
