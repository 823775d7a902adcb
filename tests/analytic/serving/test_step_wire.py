"""The expert-parallel wire across NVLink domains (step.wire_time, predict.py): DeepEP's achieved NIC share and
per-call latency reach a step whose EP group spans domains, and nothing changes inside one domain (every fitted run)."""
import pytest

from k3lite.analytic.hardware import get_gpu
from k3lite.analytic.serving import Serving, decode_step, wire_bytes_per_token
from k3lite.analytic.serving import step as step_module
from k3lite.analytic.serving.compare import FP8
from k3lite.analytic.serving.fit import FITTED, FITTED_ROWS, row_terms, row_workload
from k3lite.analytic.serving.predict import decode_step as predicted_step, evaluate, terms
from k3lite.analytic.serving.step import step_terms, wire_time
from k3lite.interconnect.deepep import nic_terms

# sglang-b300-low-latency-mxfp4-nospec-c1, predicted with FITTED before the multi-domain terms existed (commit 23e04a2)
TPOT_BEFORE_S, TTFT_BEFORE_S = 0.009791319348963797, 0.37910715867865025


def test_every_fitted_row_is_one_domain_and_unchanged():
    for m in FITTED_ROWS:
        k = row_terms(m)
        assert k.ep_latency_s == 0.0 and k.step.wire_latency_s == 0.0 and k.ep_wire_s == 0.0
    m = next(r for r in FITTED_ROWS if r.key == "sglang-b300-low-latency-mxfp4-nospec-c1")
    p = evaluate(row_terms(m), row_workload(m), FITTED.efficiency)
    assert p.tpot_s == pytest.approx(TPOT_BEFORE_S, rel=1e-12) and p.ttft_s == pytest.approx(TTFT_BEFORE_S, rel=1e-12)


def test_inside_one_domain_the_wire_is_the_bytes_at_nvlink_peak():
    s = Serving("kimi-k3", "B300", 8, 8, 1, "fp8", 8192)
    intra, inter = wire_bytes_per_token(s.cfg, s)
    assert inter == 0
    w = wire_time(s.cfg, s)
    assert w.per_forward_s == 0.0 and w.per_token_s == pytest.approx(92 * intra / get_gpu("B300").nvlink_bw)


def _one_domain(monkeypatch, size: int):
    """The same GPU with an NVLink domain of `size` GPUs (what an NVL rack of it would be)."""
    real = step_module.get_gpu
    monkeypatch.setattr(step_module, "get_gpu", lambda name: real(name)._replace(nvlink_domain=size))


def test_two_domains_pay_the_latency_per_moe_layer(monkeypatch):
    s = Serving("deepseek-v3", "H800", 16, 16, 1, FP8, 4096, overlap=False)
    nic = nic_terms()
    latency = 58 * (nic.dispatch_latency_s + nic.combine_latency_s)  # 58 MoE layers, dispatch + combine each
    across_terms, across_bound = terms(s), decode_step(s, 32)
    assert across_terms.ep_latency_s == pytest.approx(latency) and step_terms(s).wire_latency_s == pytest.approx(latency)
    _one_domain(monkeypatch, 16)
    inside_terms, inside_bound = terms(s), decode_step(s, 32)
    assert inside_terms.ep_latency_s == 0.0
    for batch in (1, 32):
        across, inside = (predicted_step(k, FITTED.efficiency, batch) for k in (across_terms, inside_terms))
        assert across.step_s - inside.step_s >= latency
    assert across_bound.step_s - inside_bound.step_s >= latency  # the bound too (no overlap: the wire adds)


def test_the_nic_runs_at_deepeps_share():
    s = Serving("deepseek-v3", "H800", 144, 144, 1, FP8, 4096)
    intra, inter = wire_bytes_per_token(s.cfg, s)
    at_peak = 58 * (intra / get_gpu("H800").nvlink_bw + inter / get_gpu("H800").nic_bw)
    w, nic = wire_time(s.cfg, s), nic_terms()
    assert w.per_token_s > at_peak  # slower than the NIC at its peak ...
    assert w.per_token_s <= 58 * inter / (min(nic.dispatch_nic_share, nic.combine_nic_share) * 50e9) + 1e-12
