"""The decode step, once: what one step over a batch reads from HBM, what it computes, and how long it takes.

The hybrid page (one GPU holding the whole model), the serving model (weights sharded over many GPUs, a wire
term, speculation) and the ledger (bytes per decoded token) all build on these functions, so a decode step means
the same thing on every page:

    weights read   every non-routed weight a token uses + in each MoE layer the distinct experts the step's
                   tokens touch: a share 1 - (1 - k/E)^tokens of them (`memory.touched_share`, uniform routing)
    cache read     batch x (MLA latent cache over the context + KDA state), every cached byte read once
                   (`memory.sequence_cache_bytes`)
    FLOPs          2 x active parameters per token + attention over the context (`attention_flops`)
    time           the roofline: max(HBM bytes / bandwidth, FLOPs / peak), and the wire either overlapped
                   (max of the three) or after the rest (added) (`roofline`)
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.analytic import memory
from k3lite.model.config import K3Config


def attention_flops(cfg: K3Config, context: int) -> float:
    """FLOPs of the attention core for one token of one decode step at `context` tokens:
    MLA in its absorbed decode form, scores 2 H N (R + Dr) + latent mix 2 H N R per MLA layer (R = kv_lora_rank,
    Dr = the rope key), and ~6 H K V per KDA layer (decay, delta correction, read-out of the state)."""
    types = cfg.layer_types()
    m = cfg.mla
    f = types.count("mla") * 2 * m.n_heads * context * (2 * m.kv_lora_rank + m.qk_rope_head_dim)
    if cfg.kda is not None:
        f += types.count("kda") * 6 * cfg.kda.n_heads * cfg.kda.head_dim ** 2
    return float(f)


def prefill_attention_flops(cfg: K3Config, context: int) -> float:
    """FLOPs of the attention core for one prompt token attending to `context` earlier ones in prefill: MLA as
    prefill runs it, un-absorbed (keys and values expanded from the latent, as SGLang's and vLLM's MLA backends do
    for prefill): scores 2 H N (Dn + Dr) + value mix 2 H N Dv per MLA layer; KDA as in decode (a chunk-wise prefill
    adds intra-chunk products of the same order). The absorbed form (`attention_flops`) is decode's: it trades
    FLOPs for reading only the latent, and costs 3.4x these FLOPs at DeepSeek-V3's widths."""
    types = cfg.layer_types()
    m = cfg.mla
    f = types.count("mla") * 2 * m.n_heads * context * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
    if cfg.kda is not None:
        f += types.count("kda") * 6 * cfg.kda.n_heads * cfg.kda.head_dim ** 2
    return float(f)


class StepBytes(NamedTuple):
    """What one decode step over `batch` sequences reads on a GPU that holds the whole model."""

    weights: float  # weights read once per step (distinct experts touched by the batch)
    mla_cache: float  # per sequence
    kda_state: float  # per sequence

    @property
    def cache(self) -> float:
        return self.mla_cache + self.kda_state


def step_bytes(cfg: K3Config, batch: float, context: int, precisions: dict[str, str] | str = "bf16",
               latent_bytes: float = memory.ACTIVATION_BYTES_PER_ELEM,
               state_bytes: float = memory.KDA_STATE_BYTES_PER_ELEM) -> StepBytes:
    """The HBM bytes of one decode step over `batch` sequences at `context` tokens, whole model on one GPU; the
    caches kept in `latent_bytes` per MLA latent number and `state_bytes` per KDA state number (bf16, fp32)."""
    cache = memory.sequence_cache_bytes(cfg, context, latent_bytes, state_bytes)
    return StepBytes(memory.decode_weight_bytes(cfg, batch, precisions), cache.mla, cache.kda)


def roofline(hbm_s: float, compute_s: float, wire_s: float = 0.0, overlap: bool = True) -> tuple[float, str]:
    """(step seconds, what bounds it): the slowest of HBM, compute and wire when they overlap; with no overlap
    the wire comes after the HBM/compute roofline. Ties go to HBM, then compute."""
    terms = {"HBM": hbm_s, "compute": compute_s, "wire": wire_s}
    if overlap:
        return max(hbm_s, compute_s, wire_s), max(terms, key=terms.get)
    step = max(hbm_s, compute_s) + wire_s
    bound = "wire" if wire_s > max(hbm_s, compute_s) else max(("HBM", hbm_s), ("compute", compute_s),
                                                               key=lambda kv: kv[1])[0]
    return step, bound
