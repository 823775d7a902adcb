"""Decode memory and weight bytes in one place: every page, benchmark and CLI that shows these numbers calls
these functions (the KDA page, the hybrid page, the serving model, the KDA benchmark).

Per sequence, per layer:
    KDA layer   H x K x V state in fp32 (as `k3lite.model.kda.KDACache` and flash-linear-attention keep it)
                + the short-conv tail: (conv_size - 1) past inputs of q, k and v, in the activation dtype
                (bf16), whatever the context length.
    MLA layer   (kv_lora_rank + qk_rope_head_dim) numbers per token: the compressed latent + the shared
                rope key (DeepSeek-V2/V3's decode cache; `k3lite/model/mla.py`).
    GQA / MHA   K and V for every KV head, per token.
Weights: parameters per component (counted from the real modules on the meta device, `k3lite.analytic.params`) x
bytes per parameter of the chosen storage format, scales included (`PRECISIONS`).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import torch

from k3lite.base.units import ONE_M_CONTEXT, fmt_bytes
from k3lite.base.wording import compare
from k3lite.model.config import K3Config, KDAConfig, MLAConfig
from k3lite.model.presets import get_preset
from k3lite.analytic.params import count_params

KDA_STATE_BYTES_PER_ELEM = 4  # fp32: KDACache.state and fla's recurrent state
ACTIVATION_BYTES_PER_ELEM = 2  # bf16: the conv tail and the MLA latent cache


# ------------------------------------------------------------------------------------------ decode state
def kda_state_bytes(n_heads: int, head_dim: int, conv_size: int = 4, batch: int = 1,
                    state_bytes_per_elem: int = KDA_STATE_BYTES_PER_ELEM,
                    conv_bytes_per_elem: int = ACTIVATION_BYTES_PER_ELEM) -> int:
    """One KDA layer's decode memory: the (H, K, V=K) state + the conv tail of q, k, v. Independent of context.

    `conv_size=0` counts the kernel's state alone (what a kernel benchmark holds)."""
    if min(n_heads, head_dim, batch) < 1 or conv_size < 0:
        raise ValueError(f"n_heads, head_dim, batch must be >= 1 and conv_size >= 0, got "
                         f"{n_heads}, {head_dim}, {batch}, {conv_size}")
    state = n_heads * head_dim * head_dim * state_bytes_per_elem
    conv = 3 * max(conv_size - 1, 0) * n_heads * head_dim * conv_bytes_per_elem
    return batch * (state + conv)


def kda_layer_state_bytes(kda: KDAConfig, batch: int = 1) -> int:
    """`kda_state_bytes` for a config's KDA layer (fp32 state + bf16 conv tail)."""
    return kda_state_bytes(kda.n_heads, kda.head_dim, kda.conv_size, batch)


def mla_cache_bytes_per_token(mla: MLAConfig, bytes_per_elem: int = ACTIVATION_BYTES_PER_ELEM) -> int:
    """One MLA layer's latent cache per token: (kv_lora_rank + qk_rope_head_dim) numbers."""
    return (mla.kv_lora_rank + mla.qk_rope_head_dim) * bytes_per_elem


def kv_cache_bytes(n_tokens: int, n_kv_heads: int, head_dim: int, bytes_per_elem: int = 2, batch: int = 1) -> int:
    """One softmax-attention layer's KV cache (MHA, or GQA with n_kv_heads): K and V per past token, per head."""
    return batch * n_tokens * 2 * n_kv_heads * head_dim * bytes_per_elem


class SequenceCache(NamedTuple):
    """Decode cache of one sequence over the whole stack (bytes)."""

    mla: int  # latent caches of the MLA layers (grows with context)
    kda: int  # fixed KDA states + conv tails

    @property
    def total(self) -> int:
        return self.mla + self.kda


def sequence_cache_bytes(cfg: K3Config, context: int, latent_bytes: float = ACTIVATION_BYTES_PER_ELEM,
                         state_bytes: float = KDA_STATE_BYTES_PER_ELEM,
                         conv_bytes: float = ACTIVATION_BYTES_PER_ELEM) -> SequenceCache:
    """The whole model's decode cache for one sequence of `context` tokens, by layer kind. The bytes per stored
    number (MLA latent, KDA state, conv tail) are the formats the caches are kept in: assumptions a page can move."""
    if context < 0:
        raise ValueError(f"context must be >= 0 tokens, got {context}")
    if min(latent_bytes, state_bytes, conv_bytes) <= 0:
        raise ValueError(f"bytes per stored number must be > 0, got {latent_bytes}, {state_bytes}, {conv_bytes}")
    types = cfg.layer_types()
    n_kda, n_mla = types.count("kda"), types.count("mla")
    kda = n_kda * kda_state_bytes(cfg.kda.n_heads, cfg.kda.head_dim, cfg.kda.conv_size, 1, state_bytes,
                                  conv_bytes) if n_kda else 0
    return SequenceCache(n_mla * context * mla_cache_bytes_per_token(cfg.mla, latent_bytes), kda)


def hybrid_cache_at(latent_bytes: float = ACTIVATION_BYTES_PER_ELEM, state_bytes: float = KDA_STATE_BYTES_PER_ELEM,
                    conv_bytes: float = ACTIVATION_BYTES_PER_ELEM, *, preset: str = "kimi-linear-48b-a3b",
                    context: int = ONE_M_CONTEXT) -> float:
    """The KDA page's headline: one sequence's decode cache of `preset`'s KDA:MLA hybrid at 1M tokens (2^20), in
    bytes, from the bytes per stored number it assumes (its assumptions block moves each ±20%)."""
    return float(sequence_cache_bytes(get_preset(preset), context, latent_bytes, state_bytes, conv_bytes).total)


def kda_memory_sentence(cfg: K3Config, context: int = ONE_M_CONTEXT) -> str:
    """The KDA page's memory sentence: the hybrid's cache against all-MLA's at `context` tokens (the app's 1M is
    2^20, as on the hybrid page), and the context below which a fixed state costs more than the cache it replaces."""
    if cfg.kda is None:
        raise ValueError(f"config {cfg.name!r} has no KDA layers to compare")
    hybrid = sequence_cache_bytes(cfg, context).total
    full = len(cfg.layer_types()) * mla_cache_bytes_per_token(cfg.mla) * context
    word = compare(hybrid, full, "more", "less", "the same")
    share = f"{100 * abs(1 - hybrid / full):.0f}% {word}" if word != "the same" else word
    even = break_even_context(cfg)
    short = mla_cache_bytes_per_token(cfg.mla) * (even // 2)  # the cache a state replaces, halfway below break-even
    costs = compare(kda_layer_state_bytes(cfg.kda), short, "more than", "less than", "as much as")
    name = " (1M)" if context == ONE_M_CONTEXT else ""
    return (f"At {context:,} tokens{name} the hybrid needs {fmt_bytes(hybrid)} against {fmt_bytes(full)} for "
            f"all-MLA: {share}; below ~{even:,} tokens a fixed state costs {costs} the short cache it replaces.")


def gqa_sequence_cache_bytes(cfg: K3Config, context: int, n_kv_heads: int = 8, head_dim: int = 128) -> int:
    """A plain-GQA baseline of the same depth: every layer keeps K and V for `n_kv_heads` heads of `head_dim`
    in bf16 (8 x 128 is Llama-3-70B/405B's GQA; an illustration, not any Kimi model)."""
    return cfg.n_layers * kv_cache_bytes(context, n_kv_heads, head_dim)


def memory_vs_context(cfg, contexts) -> dict[str, list[int]]:
    """Decode memory (bytes) against context length for one K3Config, per layer and for the whole stack.

    Same numbers as `sequence_cache_bytes`: a KDA layer's fp32 state + conv tail, constant; an MLA layer's
    latent + rope key per token; plain multi-head attention with MLA's heads (K and V for every head per
    token, bf16); whole model: every layer MLA vs the config's KDA:MLA pattern.
    """
    if cfg.kda is None:
        raise ValueError(f"config {cfg.name!r} has no KDA layers to compare")
    m = cfg.mla
    state = kda_layer_state_bytes(cfg.kda)
    per_tok_mla = mla_cache_bytes_per_token(m)
    types = cfg.layer_types()
    n_kda, n_mla = types.count("kda"), types.count("mla")
    return {
        "KDA layer: state": [state for _ in contexts],
        "MLA layer: latent KV cache": [per_tok_mla * t for t in contexts],
        "MHA layer (same heads): K+V cache": [m.n_heads * (m.qk_head_dim + m.v_head_dim) * ACTIVATION_BYTES_PER_ELEM * t
                                              for t in contexts],
        f"whole model, all {len(types)} layers MLA": [len(types) * per_tok_mla * t for t in contexts],
        f"whole model, hybrid ({n_kda} KDA + {n_mla} MLA)": [sequence_cache_bytes(cfg, t).total for t in contexts],
    }


def break_even_context(cfg: K3Config) -> int:
    """The context (tokens) below which one KDA layer's fixed state costs more than the MLA cache it replaces."""
    per_tok = mla_cache_bytes_per_token(cfg.mla)
    return -(-kda_layer_state_bytes(cfg.kda) // per_tok)


# ------------------------------------------------------------------------------------- the bounded decay
FP32_MIN_NORMAL_LOG = math.log(torch.finfo(torch.float32).tiny)  # ln(1.18e-38) = -87.3: below it fp32 loses digits


class DecayMemory(NamedTuple):
    log_decay: float  # g per token (<= 0): the channel keeps e^g of its state each token
    tokens_to_threshold: float  # tokens until the kept fraction falls to `threshold`: ln(threshold) / g
    kept_after: list[float]  # e^(g n) for n in the `tokens` asked for


def decay_memory(log_decay: float, tokens: list[int], threshold: float = 0.01) -> DecayMemory:
    """How long one KDA key channel remembers at a constant per-token log-decay g: e^(g n) of a write survives n
    tokens. K3 bounds g below by -5 (config.json `gate_lower_bound`), so no channel forgets faster than e^-5 =
    0.0067 per token: even the fastest keeps 1% of a write for ln(100) / 5 = 0.92 tokens."""
    if log_decay > 0:
        raise ValueError(f"log_decay must be <= 0 (a decay, not a growth), got {log_decay}")
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    span = math.inf if log_decay == 0 else math.log(threshold) / log_decay
    return DecayMemory(log_decay, span, [math.exp(log_decay * n) for n in tokens])


def chunk_decay_floor(lower_bound: float, chunk: int) -> float:
    """The smallest cumulative log-decay a chunk of `chunk` tokens can reach with per-token g >= lower_bound:
    chunk x lower_bound. Chunk-wise kernels divide by it (k / cumulative decay); below FP32_MIN_NORMAL_LOG that
    division overflows, which is what fla's bounded "safe gate" is for."""
    if lower_bound >= 0 or chunk < 1:
        raise ValueError(f"need lower_bound < 0 and chunk >= 1, got {lower_bound}, {chunk}")
    return chunk * lower_bound


# ------------------------------------------------------------------------------------------------ weights
class Precision(NamedTuple):
    name: str
    bytes_per_param: float  # payload + scales
    note: str


PRECISIONS: dict[str, Precision] = {
    "bf16": Precision("bf16", 2.0, "2 bytes, no scales"),
    "fp8": Precision("fp8", 1.0 + 4 / (128 * 128),
                     "E4M3 + one fp32 scale per 128x128 block (DeepSeek-V3's weight format, arXiv 2412.19437 §3.3)"),
    "nvfp4": Precision("nvfp4", 0.5 + 1 / 16,
                       "E2M1 + one FP8 (E4M3) scale per 16 values (+ one fp32 per tensor, negligible)"),
    "mxfp4": Precision("mxfp4", 0.5 + 1 / 32, "E2M1 + one 8-bit (E8M0) scale per 32 values (OCP MX spec)"),
    "int4": Precision("int4", 0.5 + 2 / 32, "INT4 + one bf16 scale per group of 32 (Kimi K2 Thinking's weight-only INT4)"),
}

# which parameter buckets of k3lite.analytic.params each deployable component holds
WEIGHT_COMPONENTS: dict[str, tuple[str, ...]] = {
    "routed_experts": ("routed_experts",),
    "attention": ("attention_kda", "attention_mla"),
    "shared": ("shared_experts", "dense_ffn", "latent_proj"),
    "embeddings": ("embedding", "lm_head"),
    "other": ("router", "attn_res", "norms"),  # always bf16: small and precision-sensitive
}


# As K3 ships (config.json quantization_config): routed experts MXFP4 (4-bit E2M1 packed two per byte + one uint8
# E8M0 scale per group of 32: 4.25 bits per weight); self_attn, shared_experts, the dense mlp, lm_head, vision tower
# and projector are in its `ignore` list, so bf16 (`dtype` bfloat16), and so are the embedding, norms and router.
RELEASED_K3_FORMATS: dict[str, str] = {"routed_experts": "mxfp4", "attention": "bf16", "shared": "bf16",
                                       "embeddings": "bf16"}


def checkpoint_bytes(cfg: K3Config, formats: dict[str, str] | str = RELEASED_K3_FORMATS,
                     extra_bf16_params: int = 0) -> float:
    """Predicted bytes of a checkpoint's tensor data: every parameter at its component's format (`weight_bytes`)
    plus `extra_bf16_params` k3lite does not build (K3: the vision tower, presets.kimi_k3_vision_params()).
    For kimi-k3 at RELEASED_K3_FORMATS this is the released model.safetensors.index.json total_size to 0.1%
    (tests/analytic/test_params.py)."""
    if extra_bf16_params < 0:
        raise ValueError(f"extra_bf16_params must be >= 0, got {extra_bf16_params}")
    return sum(weight_bytes(cfg, formats).values()) + extra_bf16_params * precision("bf16").bytes_per_param


@lru_cache(maxsize=32)
def _param_report(cfg: K3Config):
    return count_params(cfg)


def component_params(cfg: K3Config, active: bool = False) -> dict[str, int]:
    """Parameters per deployable component (total, or active per token with `active=True`)."""
    rep = _param_report(cfg)
    src = rep.active_by_component if active else rep.by_component
    return {comp: sum(src[b] for b in buckets) for comp, buckets in WEIGHT_COMPONENTS.items()}


def precision(name: str) -> Precision:
    if name not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}, got {name!r}")
    return PRECISIONS[name]


def weight_bytes(cfg: K3Config, precisions: dict[str, str] | str = "bf16", active: bool = False) -> dict[str, float]:
    """Bytes of each component's weights at its precision (a name for all of them, or {component: name});
    components not named stay bf16, and "other" (router, norms, AttnRes queries) is always bf16."""
    if isinstance(precisions, str):
        precisions = {c: precisions for c in WEIGHT_COMPONENTS if c != "other"}
    unknown = set(precisions) - set(WEIGHT_COMPONENTS)
    if unknown:
        raise ValueError(f"unknown weight components {sorted(unknown)}; known: {list(WEIGHT_COMPONENTS)}")
    params = component_params(cfg, active)
    return {c: n * precision(precisions.get(c, "bf16") if c != "other" else "bf16").bytes_per_param
            for c, n in params.items()}


# ----------------------------------------------------------------------------------- experts one step reads
def touched_share(n_experts: int, top_k: int, n_tokens: float) -> float:
    """The share of one MoE layer's routed experts a step over `n_tokens` tokens touches, 1 - (1 - k/E)^B, under
    uniform routing (each token picks a given expert with probability k/E, independently of the others)."""
    return 1.0 - (1.0 - top_k / n_experts) ** n_tokens


def expected_experts_touched(n_experts: int, top_k: int, n_tokens: float) -> float:
    """Distinct routed experts a step over `n_tokens` tokens touches in one MoE layer, E (1 - (1 - k/E)^B):
    under uniform routing each token picks a given expert with probability k/E, independently of the other
    tokens. B = 1 gives k; large B gives E (every expert's weights are read once per step)."""
    if not 1 <= top_k <= n_experts:
        raise ValueError(f"top_k must be in [1, n_experts={n_experts}], got {top_k}")
    if n_tokens < 0:
        raise ValueError(f"n_tokens must be >= 0, got {n_tokens}")
    return n_experts * touched_share(n_experts, top_k, n_tokens)


def decode_weight_bytes(cfg: K3Config, batch: float, precisions: dict[str, str] | str = "bf16") -> float:
    """Weight bytes one decode step over `batch` tokens reads on a single GPU holding the whole model: every
    non-routed weight a token uses (the input embedding is a lookup, not read in full) + in each MoE layer the
    distinct experts the batch touches (`expected_experts_touched`), not just top-k."""
    active = weight_bytes(cfg, precisions, active=True)
    routed_total = weight_bytes(cfg, precisions)["routed_experts"]
    n_moe = cfg.ffn_types().count("moe")
    per_expert = routed_total / (n_moe * cfg.moe.n_routed_experts) if n_moe else 0.0
    touched = expected_experts_touched(cfg.moe.n_routed_experts, cfg.moe.top_k, batch) if n_moe else 0.0
    return sum(v for c, v in active.items() if c != "routed_experts") + n_moe * touched * per_expert
