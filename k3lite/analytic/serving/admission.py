"""How many requests a deployment admits at once, and what binds: HBM after the weights (the model's and the
draft model's) and a reserve for activations, CUDA graphs and workspace, divided by what one request holds.

Per request, on each GPU of its TP group (memory.sequence_cache_bytes is the one count of K3's decode state):
    MLA latent      every cached token's latent + rope key (bf16), paged: it grows with the tokens held
                    (input + output at the end of a request); whole on each GPU of the TP group, or 1/dcp of it
                    under decode context parallelism (step.cache_bytes_per_sequence's sharding)
    KDA state       the fp32 (H, K, V) state of every KDA layer + its conv tail, split over the TP group by heads,
                    reserved WHOLE when the request is admitted, whatever its length, as the engines do, `state_slots`
                    times: SGLang sizes its state pool at `_calculate_mamba_ratio()` slots per running request (1 with
                    the radix cache off; 3 with it on, the running state + 2 ping-pong copies; 3 + 2 = 5 with the
                    extra_buffer strategy and the overlap scheduler), and its K3 recipes run the radix cache on:
                    STATE_SLOTS = 5 by default, as AIConfigurator's K3 model charges too; 1 is vLLM's pool
    draft cache     a draft model's own KV cache over the same tokens: DSpark's drafter config is not published with
                    the numbers we cite, so it is estimated as `draft_layers` layers of 8 KV heads x 128 in bf16 (the
                    GQA illustration of memory.gqa_sequence_cache_bytes), split over the TP group by heads
max concurrency = TP groups x floor(free bytes per GPU / bytes per request per GPU); what binds is the largest
part of a request's bytes (or the weights, when nothing is left).
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.analytic import memory
from k3lite.base.units import fmt_capacity
from k3lite.analytic.hardware import get_gpu
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.step import mla_cache_share, placement

# The engines keep this share of HBM out of their KV and state pools for activations, CUDA graphs and workspace:
# SGLang's K3 recipes run --mem-fraction-static 0.85 (kimi-k3.jsx); vLLM's K3 post --gpu-memory-utilization 0.9
ENGINE_RESERVE = 0.15
DRAFT_KV_HEADS, DRAFT_HEAD_DIM = 8, 128  # the draft model's attention, estimated (see the docstring)
STATE_SLOTS = 5  # KDA state slots a request holds: SGLang's with its radix cache on (the docstring; 1 = vLLM's)
STATE_SLOTS_SOURCE = ("SGLang model_runner_kv_cache_mixin._calculate_mamba_ratio: 1 without the radix cache, 3 with "
                      "it (MAMBA_STATE_PER_REQ_PREFIX_CACHE), + 2 for the extra_buffer strategy with overlap; the K3 "
                      "recipes (kimi-k3.jsx) keep the radix cache on")


class Admission(NamedTuple):
    max_concurrency: int  # requests the replica holds at once
    binding: str  # what limits it: "weights", "MLA latent cache", "KDA state" or "draft model cache"
    hbm_bytes: float  # per GPU
    reserve_bytes: float
    weight_bytes: float  # the model's and the drafter's weights per GPU
    free_bytes: float  # per GPU, for requests
    per_request: dict  # part -> bytes one request holds on each GPU of its TP group
    tokens: int  # tokens a request holds at its end
    sentence: str


def admission(s: Serving, input_len: int, output_len: int, reserve: float = ENGINE_RESERVE,
              state_slots: int = STATE_SLOTS) -> Admission:
    """Requests deployment `s` admits when each holds `input_len + output_len` tokens."""
    if not 0 <= reserve < 1:
        raise ValueError(f"reserve must be a share of HBM in [0, 1), got {reserve}")
    if not isinstance(state_slots, int) or state_slots < 1:
        raise ValueError(f"state_slots must be an integer >= 1, got {state_slots!r}")
    if input_len < 1 or output_len < 0:
        raise ValueError(f"input_len must be >= 1 and output_len >= 0, got {input_len}, {output_len}")
    cfg, gpu, sp = s.cfg, get_gpu(s.gpu), s.spec
    tokens = input_len + output_len
    cache = memory.sequence_cache_bytes(cfg, tokens)
    per_request = {"MLA latent cache": cache.mla * mla_cache_share(cfg, s.cache) / s.dcp, "KDA state": state_slots * cache.kda / s.tp}
    draft_weights = 0.0
    if sp is not None and sp.drafter == "draft-model":
        draft_weights = 2.0 * sp.draft_params / s.tp  # bf16
        per_request["draft model cache"] = sp.draft_layers * memory.kv_cache_bytes(
            tokens, DRAFT_KV_HEADS, DRAFT_HEAD_DIM) / s.tp
    weights = placement(s.with_(context=max(1, tokens))).weight_bytes_per_gpu + draft_weights
    res = reserve * gpu.hbm_bytes
    free = gpu.hbm_bytes - res - weights
    one = sum(per_request.values())
    fit = max(0, int(free // one)) if free > 0 else 0
    binding = "weights" if fit == 0 else max(per_request, key=per_request.get)
    n = (s.n_gpus // s.tp) * fit
    gb = 1e9
    parts = ", ".join(f"{k} {v / gb:.3f} GB" for k, v in per_request.items())
    sentence = (f"{s.n_gpus} x {s.gpu} (TP {s.tp}{f', DCP {s.dcp}' if s.dcp > 1 else ''}): "
                f"{fmt_capacity(gpu.hbm_bytes)} ({gpu.hbm_bytes / gb:.0f} GB) per GPU - {100 * reserve:.0f}% reserve - {weights / gb:.1f} GB of weights leaves {free / gb:.1f} GB; "
                + (f"a request of {tokens:,} tokens holds {one / gb:.3f} GB per GPU ({parts}), so {n:,} fit at once; "
                   f"the {binding} binds." if fit else
                   f"nothing is left for requests: the weights bind (at least {-free / gb:.1f} GB short)."))
    return Admission(n, binding, gpu.hbm_bytes, res, weights, free, per_request, tokens, sentence)
