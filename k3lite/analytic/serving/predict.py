"""A prediction of what a deployment measures, not only a bound: time to first token, time per output token and
throughput of a closed-loop benchmark at a concurrency, from the ONE byte and FLOP count of step.py plus three
efficiencies fitted to published K3 runs (fit.py; the runs in measured.py).

The physics (per GPU of one TP group; B = sequences per GPU as step.py counts them, c / n_gpus):
    forward pass    n_layers x layer_s  +  max(HBM bytes / (hbm_fraction x HBM bandwidth),
                                               FLOPs / (flops_fraction x bf16 peak))  +  collectives
                    HBM bytes: step.forward_bytes (non-routed weights, the experts the step's tokens touch, every
                    cached byte once). FLOPs: step.token_flops per token, all at the bf16 peak: the engines' K3 paths
                    multiply 4- and 8-bit weights as bf16 (MXFP4 experts dequantised; NVIDIA's NVFP4 checkpoint keeps
                    its attention in FP8 weight-only), and the data agree: SGLang's MXFP4 and NVFP4 prefills take the
                    same time (378 vs 369 ms) though their FP4/FP8 peaks differ 1.6x.
    collectives     TP all-reduce of the hidden state (bf16, ring: 2 (tp - 1) / tp of it per GPU) after attention,
                    and after the MoE when its experts are split over the same TP group (tp == ep, the engines'
                    TP8 default); with ep > tp the MoE's dispatch + combine instead (step.wire_bytes_per_token).
                    At the fabric's bandwidth; their latency is part of layer_s, except where the EP group spans
                    NVLink domains: there each MoE layer's dispatch and combine also pay DeepEP's fitted per-call
                    latency and the NIC runs at DeepEP's achieved share of its peak (step.wire_time).
    decode step     one forward over B x (d + 1) tokens with speculation (d drafted), + the drafter's forward
                    (draft_layers x layer_s + its bf16 weights or its FLOPs), keeping `acceptance` tokens a sequence
    prefill         forwards of `chunk_tokens` tokens (SGLang's chunked_prefill_size), every weight read once per
                    forward, FLOPs over the input at half its length (step.prefill_step's rule), + the drafter's
    arrivals        "together": a closed-loop benchmark with fixed lengths (SGLang's bench_serving) starts its c
                    requests at once and they finish together, so each wave queues c prefills: request i's first
                    token comes when the forward holding its last input token ends; the scheduler runs waiting
                    prefills before decoding (SGLang's prefill-first policy), so a request's decode also waits for
                    the prefills queued after its own. "staggered": requests arrive spread out (streams that drift
                    apart, as speculation's per-request acceptance makes them): a prefill alone, and each request's
                    decode sees the other c - 1 prefills once.
    per request     TTFT (mean over a wave), TPOT = decode step / acceptance + the prefills it waits for / (output - 1),
                    latency = TTFT + (output - 1) x TPOT; throughput per GPU = c x tokens / latency / n_gpus

With layer_s = 0 and both fractions 1 the forward is the roofline (step.py's bound, a little slower: FLOPs at the
bf16 peak, collectives not overlapped), so a prediction is never faster than the bound (tests check it).
"""
from __future__ import annotations

import math
from typing import NamedTuple

from k3lite.analytic.hardware import get_gpu
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.step import (
    PREFILL_CHUNK_TOKENS, Step, StepTerms, forward_bytes, step_terms, token_flops, wire_time,
)

ARRIVALS = ("together", "staggered")
HIDDEN_BYTES = 2  # the all-reduced hidden state is bf16


class Efficiency(NamedTuple):
    """What the hardware and engine achieve of the roofline (fitted: fit.FITTED)."""

    layer_s: float  # fixed seconds per layer per forward pass: kernel launches, synchronisation, all-reduce latency
    hbm_fraction: float  # achieved share of peak HBM bandwidth while reading weights and cache
    flops_fraction: float  # achieved share of the bf16 tensor peak


IDEAL = Efficiency(0.0, 1.0, 1.0)  # the roofline in the predictor's own terms


class Workload(NamedTuple):
    """A closed-loop benchmark: `concurrency` requests in flight, each `input_len` tokens in, `output_len` out."""

    concurrency: int
    input_len: int = 8192
    output_len: int = 1024
    arrivals: str = "together"
    chunk_tokens: int = PREFILL_CHUNK_TOKENS


def check_workload(w: Workload) -> None:
    if not isinstance(w.concurrency, int) or w.concurrency < 1:
        raise ValueError(f"concurrency must be an integer >= 1, got {w.concurrency!r}")
    if w.input_len < 1 or w.output_len < 1:
        raise ValueError(f"input and output lengths must be >= 1 token, got {w.input_len}, {w.output_len}")
    if w.arrivals not in ARRIVALS:
        raise ValueError(f"arrivals must be one of {ARRIVALS}, got {w.arrivals!r}")
    if w.chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be >= 1, got {w.chunk_tokens}")


# ------------------------------------------------------------------------------------------ the terms
class Terms(NamedTuple):
    """Everything a prediction needs that does not depend on the efficiencies (built once per deployment)."""

    step: StepTerms  # step.py's batch-independent terms at the decode context
    decode_flops: float  # FLOPs per decoded token (step.token_flops at the decode context)
    prefill_flops: float  # FLOPs per input token (+ the drafter's), at half the input
    allreduce_s: float  # TP all-reduce seconds per token per unit of B at the fabric's bandwidth
    ep_wire_s: float  # decode dispatch + combine per token (0 when the experts sit in the TP group)
    prefill_wire_s: float  # prefill dispatch + combine per token (DeepEP normal kernels; 0 likewise)
    hbm_bw: float
    bf16_flops: float
    n_gpus: int
    dp: int  # TP groups (data-parallel attention) in the replica
    draft_weight_bytes: float  # the drafter's bf16 weights on one GPU (split over the TP group)
    ep_latency_s: float = 0.0  # dispatch + combine calls' fixed latency per forward (EP across NVLink domains)


def allreduce_s_per_token(s: Serving) -> float:
    """All-reduce seconds per token per unit of B (B x tp tokens per TP group): after attention, and after the MoE
    when its experts are split over the same TP group; each a ring over tp GPUs moving 2 (tp - 1) / tp of the
    group's hidden states on every GPU."""
    if s.tp == 1:
        return 0.0
    cfg, gpu = s.cfg, get_gpu(s.gpu)
    per_layer = 2 if s.ep == s.tp else 1
    return per_layer * cfg.n_layers * cfg.d_model * HIDDEN_BYTES * 2 * (s.tp - 1) / gpu.nvlink_bw


def terms(s: Serving, w: Workload | None = None) -> Terms:
    """The prediction's fixed terms for deployment `s` under workload `w`: decode at input + output / 2 tokens,
    prefill over the input. Without a workload, decode at `s.context` (prefill terms at the same length)."""
    if w is not None:
        check_workload(w)
    dec = s if w is None else s.with_(context=w.input_len + w.output_len // 2)
    prompt = s.context if w is None else w.input_len
    t = step_terms(dec)  # refuses what does not fit
    gpu = get_gpu(s.gpu)
    sp = s.spec
    drafter = sp is not None and sp.drafter == "draft-model"
    pre = token_flops(s.cfg, max(1, prompt // 2), prefill=True).total + (2.0 * sp.draft_params if drafter else 0.0)
    expert_parallel = s.ep > s.tp  # dispatch + combine only when the experts leave the TP group
    return Terms(t, token_flops(s.cfg, dec.context).total, pre, allreduce_s_per_token(s),
                 t.wire_s_per_token if expert_parallel else 0.0,
                 wire_time(s.cfg, s.with_(scheme="normal")).per_token_s if expert_parallel else 0.0,
                 gpu.hbm_bw, gpu.bf16_flops, s.n_gpus, s.n_gpus // s.tp,
                 2.0 * sp.draft_params / s.tp if drafter else 0.0,
                 t.wire_latency_s if expert_parallel else 0.0)


# ------------------------------------------------------------------------------------------ one step
class DecodeStep(NamedTuple):
    layers_s: float  # n_layers x layer_s
    hbm_s: float
    compute_s: float
    comm_s: float
    draft_s: float
    step_s: float  # the whole step: verification forward + drafter
    tokens_per_step: float  # tokens a sequence keeps per step (the acceptance with speculation)
    hbm_bytes: float


def decode_step(k: Terms, e: Efficiency, batch: float, acceptance: float | None = None) -> DecodeStep:
    """One decode step at `batch` sequences per GPU (speculation as the deployment's Speculation says; `acceptance`
    overrides its tokens kept per step, unchecked: the fit explores it freely and tests check where it lands)."""
    t, sp = k.step, k.step.spec
    tok = 1 if sp is None else sp.draft_tokens + 1
    n = batch * tok
    nbytes = forward_bytes(t, batch, tok)
    layers, hbm = t.n_layers * e.layer_s, nbytes / (e.hbm_fraction * k.hbm_bw)
    compute = n * k.decode_flops / (e.flops_fraction * k.bf16_flops)
    comm = n * (k.allreduce_s + k.ep_wire_s) + k.ep_latency_s
    verify = layers + max(hbm, compute) + comm
    draft, kept = 0.0, 1.0
    if sp is not None:
        kept = sp.acceptance if acceptance is None else acceptance
        if sp.drafter == "mtp":  # one more layer of the model per drafted token, one after another
            one = forward_bytes(t, batch, 1) / (e.hbm_fraction * k.hbm_bw)
            single = layers + max(one, batch * k.decode_flops / (e.flops_fraction * k.bf16_flops)) + batch * (
                k.allreduce_s + k.ep_wire_s) + k.ep_latency_s
            draft = sp.draft_tokens * single / t.n_layers
        else:  # one forward of the draft model per block: its layers' latency, its weights or its FLOPs
            draft = sp.draft_layers * e.layer_s + max(
                k.draft_weight_bytes / (e.hbm_fraction * k.hbm_bw),
                batch * sp.draft_tokens * 2.0 * sp.draft_params / (e.flops_fraction * k.bf16_flops))
    return DecodeStep(layers, hbm, compute, comm, draft, verify + draft, kept, nbytes)


def as_step(k: Terms, e: Efficiency, batch: float) -> Step:
    """The predicted decode step as a step.Step (what the frontier plots): tokens/s, $ per M output tokens, and the
    largest of its terms ("latency" when the layers' fixed time outweighs HBM, compute and the wire)."""
    st = decode_step(k, e, batch)
    tps = batch * st.tokens_per_step / st.step_s
    parts = {"HBM": st.hbm_s, "compute": st.compute_s, "wire": st.comm_s, "latency": st.layers_s}
    return Step(batch, st.hbm_bytes, st.hbm_s, st.compute_s, st.comm_s, st.step_s, tps, st.tokens_per_step / st.step_s,
                k.step.usd_per_gpu_hour / 3600 / tps * 1e6, max(parts, key=parts.get), st.draft_s, st.tokens_per_step)


def prefill_forward_s(k: Terms, e: Efficiency, tokens: float) -> float:
    """One prefill forward over `tokens` tokens of one TP group: every weight read once, FLOPs split over tp."""
    t = k.step
    tp = k.n_gpus // k.dp
    hbm = t.weight_bytes_per_gpu / (e.hbm_fraction * k.hbm_bw)
    compute = tokens * k.prefill_flops / tp / (e.flops_fraction * k.bf16_flops)
    return (t.n_layers * e.layer_s + max(hbm, compute) + tokens / tp * (k.allreduce_s + k.prefill_wire_s)
            + k.ep_latency_s)


# ------------------------------------------------------------------------------------------ arrivals
class Queue(NamedTuple):
    ttft_s: float  # mean over the requests of one TP group
    stall_s: float  # the prefills a request's decode waits for, in all
    prefill_s: float  # one request's prefill alone


def floor_sum(n: int, m: int, a: int, b: int) -> int:
    """sum(floor((a * i + b) / m) for i in range(n)) for integers n, m >= 1 and a, b >= 0, in O(log) steps (the
    Euclid-like reduction of AtCoder Library's floor_sum; tests check it against the sum itself)."""
    ans = 0
    while True:
        if a >= m:
            ans += n * (n - 1) // 2 * (a // m)
            a %= m
        if b >= m:
            ans += n * (b // m)
            b %= m
        y_max = a * n + b
        if y_max < m:
            return ans
        n, b = divmod(y_max, m)
        m, a = a, m


def queue(forward_s, n_requests: int, w: Workload) -> Queue:
    """Time to first token and decode stalls of `n_requests` requests of one TP group under `w.arrivals`, given the
    time of one prefill forward over n tokens, `forward_s(n)`.

    "together": one queue of n x L input tokens cut into forwards of c tokens, every forward but the last full;
    forward j (0-based) ends at (j + 1) x forward_s(c), the last partial one at the sum of all. Request i's first
    token comes with forward ceil((i + 1) L / c) - 1, so the mean first token is a sum of ceilings, summed in closed
    form (floor_sum): the cost does not grow with the requests or the forwards (tests check it against the
    forward-by-forward queue, which took minutes for a million one-token requests)."""
    c, L = w.chunk_tokens, w.input_len
    full, part = divmod(L, c)
    alone = full * forward_s(c) + (forward_s(part) if part else 0.0)
    if w.arrivals == "staggered":
        return Queue(alone, (n_requests - 1) * alone, alone)
    n_full, rest = divmod(n_requests * L, c)
    one = forward_s(c) if n_full else 0.0
    last = n_full * one + (forward_s(rest) if rest else 0.0)  # when the queue's last forward ends
    in_full = min(n_requests, n_full * c // L)  # requests whose first token comes with a full forward
    # sum over those of ceil((i + 1) L / c) = floor((L i + L + c - 1) / c), i = 0 .. in_full - 1
    mean = (one * floor_sum(in_full, c, L, L + c - 1) + last * (n_requests - in_full)) / n_requests
    return Queue(mean, last - mean, alone)


# ------------------------------------------------------------------------------------------ the prediction
class Prediction(NamedTuple):
    ttft_s: float
    tpot_s: float
    latency_s: float  # one request, first token to last
    output_tokens_per_s_per_gpu: float
    total_tokens_per_s_per_gpu: float  # input + output tokens (SGLang's tokens_per_sec_per_gpu)
    output_tokens_per_s_per_user: float  # 1 / TPOT
    usd_per_m_output_tokens: float  # every GPU-second of the run charged to the output tokens
    step: DecodeStep
    prefill_s: float  # one request's prefill alone
    stall_s_per_token: float  # the other requests' prefills, spread over a request's output tokens


def evaluate(k: Terms, w: Workload, e: Efficiency, usd_per_gpu_hour: float = 0.0,
             acceptance: float | None = None) -> Prediction:
    """The prediction from precomputed terms (fit.py calls this many times per fit; `acceptance` as decode_step)."""
    if not (e.layer_s >= 0 and e.hbm_fraction > 0 and e.flops_fraction > 0):
        raise ValueError(f"efficiencies must be layer_s >= 0 and fractions > 0, got {e}")
    c, out = w.concurrency, w.output_len
    st = decode_step(k, e, c / k.n_gpus, acceptance)
    q = queue(lambda n: prefill_forward_s(k, e, n), math.ceil(c / k.dp), w)
    stall = q.stall_s / (out - 1) if out > 1 else 0.0
    tpot = st.step_s / st.tokens_per_step + stall
    latency = q.ttft_s + (out - 1) * tpot
    out_tps = c * out / latency / k.n_gpus
    return Prediction(q.ttft_s, tpot, latency, out_tps, c * (w.input_len + out) / latency / k.n_gpus, 1.0 / tpot,
                      usd_per_gpu_hour / 3600 / out_tps * 1e6, st, q.prefill_s, stall)


def predict(s: Serving, w: Workload, e: Efficiency) -> Prediction:
    """What a closed-loop benchmark of deployment `s` at workload `w` measures, with efficiencies `e`."""
    return evaluate(terms(s, w), w, e, s.price)
