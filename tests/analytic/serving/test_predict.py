"""The predictor (k3lite/analytic/serving/predict.py): hand-computed queues and collectives, the decode step from
step.py's bytes and FLOPs, never faster than the bound, and the directions every term must move."""
import pytest

from k3lite.analytic import memory
from k3lite.analytic.hardware import get_gpu
from k3lite.analytic.serving import Serving, Speculation, decode_step, forward_bytes, step_terms, token_flops
from k3lite.analytic.serving.predict import (
    IDEAL, Efficiency, Workload, allreduce_s_per_token, check_workload, predict, queue, terms,
)
from k3lite.analytic.serving.predict import decode_step as predicted_step

MXFP4 = dict(memory.RELEASED_K3_FORMATS)
EFF = Efficiency(80e-6, 0.8, 0.3)


def tp8(**kw) -> Serving:
    return Serving("kimi-k3", "B300", 8, 8, 8, MXFP4, 8704, **kw)


def test_queue_of_a_wave_by_hand():
    # 4 requests of 8,192 tokens in forwards of 16,384: two forwards of T each, two requests finish in each
    w = Workload(4, 8192, 1024, "together", 16384)
    q = queue(lambda n: n / 16384, 4, w)  # T = 1 s per full forward
    assert q.prefill_s == pytest.approx(0.5)  # one request alone: half a forward
    assert q.ttft_s == pytest.approx((1 + 1 + 2 + 2) / 4)
    assert q.stall_s == pytest.approx(2 - 1.5)  # the mean request waits for the prefills queued after its own
    # one at a time (chunk = input): request i's first token after i prefills, mean (c + 1) / 2 prefills
    q1 = queue(lambda n: 0.4, 16, w._replace(chunk_tokens=8192))
    assert q1.ttft_s == pytest.approx(0.4 * 17 / 2) and q1.stall_s == pytest.approx(0.4 * 16 - 0.4 * 17 / 2)
    staggered = queue(lambda n: 0.4, 16, w._replace(arrivals="staggered", chunk_tokens=8192))
    assert staggered.ttft_s == pytest.approx(0.4) and staggered.stall_s == pytest.approx(15 * 0.4)


def test_allreduce_by_hand():
    cfg, nv = tp8().cfg, get_gpu("B300").nvlink_bw
    # attention and the TP-split MoE each all-reduce the bf16 hidden state; a ring moves 2 (tp - 1) / tp of the
    # group's B x tp tokens on each GPU: 2 (tp - 1) per unit of B
    assert allreduce_s_per_token(tp8()) == pytest.approx(2 * 93 * 7168 * 2 * 2 * 7 / nv)
    assert cfg.n_layers == 93 and cfg.d_model == 7168
    ep16 = Serving("kimi-k3", "B300", 16, 16, 8, MXFP4, 8704)  # experts leave the TP group: one all-reduce a layer
    assert allreduce_s_per_token(ep16) == pytest.approx(93 * 7168 * 2 * 2 * 7 / nv)
    assert allreduce_s_per_token(Serving("kimi-k3", "B300", 8, 8, 1, MXFP4, 8704)) == 0


def test_decode_step_from_step_pys_bytes_and_flops():
    s, b = tp8(), 2.0  # 16 sequences on 8 GPUs
    k = terms(s)
    st = predicted_step(k, EFF, b)
    t = step_terms(s)
    gpu = get_gpu("B300")
    hbm = forward_bytes(t, b, 1) / (0.8 * gpu.hbm_bw)
    compute = b * token_flops(s.cfg, 8704).total / (0.3 * gpu.bf16_flops)
    assert st.hbm_s == pytest.approx(hbm) and st.compute_s == pytest.approx(compute)
    assert st.layers_s == pytest.approx(93 * 80e-6)
    assert st.comm_s == pytest.approx(b * allreduce_s_per_token(s))
    assert st.step_s == pytest.approx(93 * 80e-6 + max(hbm, compute) + st.comm_s) and st.draft_s == 0
    spec = predicted_step(terms(tp8(spec=Speculation(7, 4.0))), EFF, b)
    assert spec.tokens_per_step == 4.0 and spec.hbm_bytes == pytest.approx(forward_bytes(t, b, 8))
    assert spec.draft_s == pytest.approx(5 * 80e-6 + max(2 * 2.7e9 / 8 / (0.8 * gpu.hbm_bw),
                                                          b * 7 * 2 * 2.7e9 / (0.3 * gpu.bf16_flops)))


@pytest.mark.parametrize("s", [tp8(), tp8(spec=Speculation()), tp8(dcp=8),
                               Serving("kimi-k3", "GB300 NVL72", 72, 72, 1, MXFP4, 8704),
                               Serving("deepseek-v3", "H800", 16, 16, 1, "fp8", 4096, spec=Speculation(1, 1.8, "mtp"))],
                         ids=["tp8", "tp8-dspark", "tp8-dcp8", "nvl72-ep72", "dsv3-mtp"])
def test_never_faster_than_the_bound(s):
    k = terms(s)
    for b in (0.125, 1, 4, 16):
        bound = decode_step(s, b)
        for e in (IDEAL, EFF):
            st = predicted_step(k, e, b)
            assert st.step_s / st.tokens_per_step >= bound.step_s / bound.tokens_per_step * (1 - 1e-9)


def test_every_term_moves_the_way_physics_says():
    s, w = tp8(), Workload(16)
    base = predict(s, w, EFF)
    assert predict(s, w, EFF._replace(layer_s=2e-4)).tpot_s > base.tpot_s
    assert predict(s, w, EFF._replace(hbm_fraction=0.5)).tpot_s > base.tpot_s
    assert predict(s, w, EFF._replace(flops_fraction=0.1)).ttft_s > base.ttft_s
    more = predict(s, w._replace(concurrency=32), EFF)
    assert more.ttft_s > base.ttft_s and more.tpot_s > base.tpot_s
    assert more.total_tokens_per_s_per_gpu > base.total_tokens_per_s_per_gpu
    assert predict(s, w._replace(arrivals="staggered"), EFF).ttft_s < base.ttft_s
    assert base.latency_s == pytest.approx(base.ttft_s + 1023 * base.tpot_s)
    assert base.total_tokens_per_s_per_gpu == pytest.approx(16 * 9216 / base.latency_s / 8)
    assert base.usd_per_m_output_tokens == pytest.approx(4.5 / 3600 / base.output_tokens_per_s_per_gpu * 1e6)


@pytest.mark.parametrize("w, match", [(Workload(0), "concurrency"), (Workload(1, 0), "lengths"),
                                      (Workload(1, arrivals="poisson"), "arrivals"),
                                      (Workload(1, chunk_tokens=0), "chunk_tokens")])
def test_bad_workloads_name_the_constraint(w, match):
    with pytest.raises(ValueError, match=match):
        check_workload(w)


# ------------------------------------------------------------------------------------------ the queue, in closed form
def _queue_reference(forward_s, n_requests: int, w):
    """The queue forward by forward, as it reads: every forward's end, then each request's first token."""
    import math
    c, L = w.chunk_tokens, w.input_len
    alone = sum(forward_s(min(c, L - i)) for i in range(0, L, c))
    if w.arrivals == "staggered":
        return alone, (n_requests - 1) * alone, alone
    total, ends, t = n_requests * L, [], 0.0
    for start in range(0, total, c):
        t += forward_s(min(c, total - start))
        ends.append(t)
    mean = sum(ends[math.ceil((i + 1) * L / c) - 1] for i in range(n_requests)) / n_requests
    return mean, ends[-1] - mean, alone


def test_floor_sum_is_the_sum_it_names():
    from k3lite.analytic.serving.predict import floor_sum
    for n, m, a, b in [(1, 1, 0, 0), (7, 3, 5, 2), (100, 16384, 8192, 16383), (50, 7, 100, 13), (13, 1000, 1, 999)]:
        assert floor_sum(n, m, a, b) == sum((a * i + b) // m for i in range(n)), (n, m, a, b)


@pytest.mark.parametrize("n, L, c, arrivals", [
    (1, 8192, 16384, "together"), (16, 8192, 16384, "together"), (64, 8192, 16384, "together"),
    (5, 40_000, 16384, "together"), (3, 16384, 16384, "together"), (1000, 1, 16384, "together"),
    (7, 30_000, 4096, "together"), (16, 8000, 16384, "staggered"), (2, 1, 1, "together")])
def test_the_closed_form_queue_is_the_forward_by_forward_queue(n, L, c, arrivals):
    from k3lite.analytic.serving.predict import Workload, queue

    def forward_s(tokens):  # a fixed cost per forward and a cost per token, as prefill_forward_s has
        return 1e-3 + 2e-7 * tokens
    got = queue(forward_s, n, Workload(n, L, 1024, arrivals, c))
    want = _queue_reference(forward_s, n, Workload(n, L, 1024, arrivals, c))
    assert tuple(got) == pytest.approx(want, rel=1e-12)


def test_a_million_one_token_requests_queue_at_once():
    from k3lite.analytic.serving.predict import Workload, queue
    q = queue(lambda tokens: 1e-3, 1_000_000, Workload(1_000_000, 1, 2, "together", 16384))
    forwards = -(-1_000_000 // 16384)  # 62: every request waits for its forward, the last for all of them
    assert q.stall_s + q.ttft_s == pytest.approx(forwards * 1e-3)
