"""KV cache and decode cost of a KDA:MLA hybrid, analytically (for views/hybrid_attention.py).

For a context of N tokens, per sequence:
    MLA layer:  N x (kv_lora_rank + qk_rope_head_dim) elements   (the compressed latent cache, k3lite/mla.py)
    KDA layer:  H x K x V state + 3 x (conv_size - 1) x H x K conv tail, *independent of N*

Decode time per output token (TPOT), a roofline with one step of `batch` sequences:
    bytes = active weights x bytes/param  +  batch x (cache bytes read)        (every cached byte read once)
    flops = batch x (2 x active params + attention flops)
            MLA (absorbed decode): 2 H N (R + Dr) for scores + 2 H N R for the latent mix, per layer
            KDA: ~ 6 H K V per layer (decay, delta correction, read-out of the state)
    TPOT  = max(bytes / HBM bandwidth, flops / peak flops) / attention_efficiency on the attention part

Claims checked on the page (Kimi Linear tech report, arXiv 2510.26692): up to 75% smaller KV cache and
up to 6.3x faster decoding (TPOT) at 1M context than full MLA.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from k3lite.config import K3Config, get_preset


@dataclass(frozen=True)
class Hardware:
    name: str
    hbm_bytes_per_s: float
    peak_flops: float  # dense bf16
    source: str


HARDWARE = {
    "H100 SXM": Hardware("H100 SXM", 3.35e12, 989e12, "NVIDIA H100 datasheet (3.35 TB/s HBM3, 989 TFLOPS dense BF16)"),
    "H200": Hardware("H200", 4.8e12, 989e12, "NVIDIA H200 datasheet (4.8 TB/s HBM3e, 989 TFLOPS dense BF16)"),
    "B200": Hardware("B200", 8.0e12, 2250e12, "NVIDIA B200 datasheet (8 TB/s HBM3e, 2.25 PFLOPS dense BF16)"),
}

REPORTED = {
    "kv_reduction": (0.75, "up to 75% smaller KV cache (Kimi Linear tech report, arXiv 2510.26692)"),
    "tpot_speedup_1m": (6.3, "up to 6.3x faster decoding (TPOT) at 1M context vs full MLA (arXiv 2510.26692)"),
}


def hybrid_config(kda_per_mla: int, base: str = "kimi-linear-48b-a3b") -> K3Config:
    """`base` with the pattern kda_per_mla : 1 (last layer global); 0 = all MLA."""
    if not isinstance(kda_per_mla, int) or not 0 <= kda_per_mla <= 7:
        raise ValueError(f"KDA:MLA ratio must be an integer 0..7 (KDA layers per MLA layer), got {kda_per_mla!r}")
    cfg = get_preset(base)
    if cfg.kda is None:
        raise ValueError(f"preset {base!r} has no KDA config")
    return cfg.with_(kda_ratio=(kda_per_mla, 1), last_layer_global=True)


@lru_cache(maxsize=64)
def _layer_active(base: str, kda_per_mla: int, mixer: str, ffn: str) -> int:
    """Active params of one layer of the given kind, from the real module on the meta device
    (k3lite.params convention: routed experts count top_k / E)."""
    import torch

    from k3lite.model import Layer

    cfg = hybrid_config(kda_per_mla, base)
    index = next(i for i, (m, f) in enumerate(zip(cfg.layer_types(), cfg.ffn_types())) if (m, f) == (mixer, ffn))
    with torch.device("meta"):
        layer = Layer(cfg, index)
    frac = cfg.moe.top_k / cfg.moe.n_routed_experts
    return round(sum(p.numel() * (frac if ".experts." in f".{n}" else 1) for n, p in layer.named_parameters()))


def _active_params(kda_per_mla: int, base: str) -> int:
    """Active params of the re-patterned model, summed over its layers + head + final norm."""
    cfg = hybrid_config(kda_per_mla, base)
    total = sum(_layer_active(base, kda_per_mla, m, f) for m, f in zip(cfg.layer_types(), cfg.ffn_types()))
    total += cfg.vocab_size * cfg.d_model + cfg.d_model  # LM head (embedding lookup not active) + final norm
    if cfg.attn_res != "standard":
        total += 2 * cfg.d_model  # final AttnRes
    return total


def bytes_ceiling(kda_per_mla: int, base: str = "kimi-linear-48b-a3b") -> float:
    """The most any bandwidth-only model can give: all-MLA cache / hybrid cache as context -> infinity."""
    cfg = hybrid_config(kda_per_mla, base)
    return cfg.n_layers / cfg.layer_types().count("mla")


@dataclass(frozen=True)
class DecodeCost:
    kda_per_mla: int
    context: int
    n_mla: int
    n_kda: int
    cache_bytes: float  # per sequence
    mla_cache_bytes: float
    kda_state_bytes: float
    weight_bytes: float
    bytes_per_step: float
    flops_per_step: float
    tpot_s: float
    memory_bound: bool


def cache_bytes(cfg: K3Config, context: int, bytes_per_elem: int = 2, state_bytes_per_elem: int = 4) -> tuple[float, float]:
    """(MLA latent cache, KDA state + conv tail) bytes for one sequence of `context` tokens."""
    types = cfg.layer_types()
    n_mla, n_kda = types.count("mla"), types.count("kda")
    m = cfg.mla
    mla = n_mla * context * (m.kv_lora_rank + m.qk_rope_head_dim) * bytes_per_elem
    kda = 0.0
    if n_kda:
        k = cfg.kda
        state = k.n_heads * k.head_dim * k.head_dim * state_bytes_per_elem
        conv = 3 * (k.conv_size - 1) * k.n_heads * k.head_dim * bytes_per_elem
        kda = n_kda * (state + conv)
    return float(mla), float(kda)


def decode_cost(kda_per_mla: int, context: int, batch: int = 1, hardware: str = "H100 SXM",
                attention_efficiency: float = 1.0, base: str = "kimi-linear-48b-a3b",
                bytes_per_elem: int = 2) -> DecodeCost:
    """One decode step's roofline time per output token (see module docstring)."""
    if context < 1 or context > 10_000_000:
        raise ValueError(f"context must be 1..10,000,000 tokens, got {context}")
    if batch < 1 or batch > 4096:
        raise ValueError(f"batch must be 1..4096, got {batch}")
    if not 0.01 <= attention_efficiency <= 1.0:
        raise ValueError(f"attention efficiency must be in [0.01, 1], got {attention_efficiency}")
    if hardware not in HARDWARE:
        raise ValueError(f"hardware must be one of {list(HARDWARE)}, got {hardware!r}")
    hw = HARDWARE[hardware]
    cfg = hybrid_config(kda_per_mla, base)
    types = cfg.layer_types()
    n_mla, n_kda = types.count("mla"), types.count("kda")
    mla_b, kda_b = cache_bytes(cfg, context, bytes_per_elem)
    weights = _active_params(kda_per_mla, base) * bytes_per_elem
    m = cfg.mla
    attn_flops = n_mla * (2 * m.n_heads * context * (m.kv_lora_rank + m.qk_rope_head_dim)
                          + 2 * m.n_heads * context * m.kv_lora_rank)
    if n_kda:
        attn_flops += n_kda * 6 * cfg.kda.n_heads * cfg.kda.head_dim * cfg.kda.head_dim
    flops = batch * (2 * _active_params(kda_per_mla, base) + attn_flops)
    # the cache reads are the attention part: a slower long-context kernel stretches only that part
    t_mem = (weights + batch * kda_b) / hw.hbm_bytes_per_s + batch * mla_b / hw.hbm_bytes_per_s / attention_efficiency
    t_flops = flops / hw.peak_flops
    return DecodeCost(kda_per_mla, context, n_mla, n_kda, mla_b + kda_b, mla_b, kda_b, float(weights),
                      weights + batch * (mla_b + kda_b), float(flops), max(t_mem, t_flops), t_mem >= t_flops)


def speedup_vs_full_mla(kda_per_mla: int, context: int, **kw) -> float:
    return decode_cost(0, context, **kw).tpot_s / decode_cost(kda_per_mla, context, **kw).tpot_s


def kv_reduction(kda_per_mla: int, context: int) -> float:
    """1 - cache(hybrid) / cache(all MLA) at `context` tokens."""
    return 1.0 - decode_cost(kda_per_mla, context).cache_bytes / decode_cost(0, context).cache_bytes


def efficiency_to_match(target_speedup: float, kda_per_mla: int = 3, context: int = 1_048_576, **kw) -> float | None:
    """The full-attention kernel efficiency (fraction of the bandwidth roofline) at which our model
    reproduces `target_speedup`; None if no efficiency in [0.01, 1] does (bisection)."""
    kw.pop("attention_efficiency", None)

    def ratio(e: float) -> float:
        return decode_cost(0, context, attention_efficiency=e, **kw).tpot_s / \
            decode_cost(kda_per_mla, context, attention_efficiency=e, **kw).tpot_s

    lo, hi = 0.01, 1.0
    if not (ratio(hi) <= target_speedup <= ratio(lo)):
        return None
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ratio(mid) > target_speedup else (lo, mid)
    return (lo + hi) / 2
