"""KV cache and decode cost of a KDA:MLA hybrid, analytically (for views/hybrid_attention.py).

Every byte count comes from `k3lite.analytic.memory` (the same functions as the KDA and serving pages). Per sequence,
for a context of N tokens:
    MLA layer:  N x (kv_lora_rank + qk_rope_head_dim) bf16 numbers   (the compressed latent cache, k3lite/model/mla.py)
    KDA layer:  H x K x V fp32 state + 3 x (conv_size - 1) x H x K bf16 conv tail, *independent of N*

Decode time per output token (TPOT), a roofline with one step of `batch` sequences on one GPU:
    bytes = weights the step reads  +  batch x (cache bytes read)                (every cached byte read once)
            weights: every non-routed weight a token uses + in each MoE layer the distinct experts the batch
            touches, E (1 - (1 - k/E)^B) of them (`memory.expected_experts_touched`): k at batch 1, -> E
    flops = batch x (2 x active params + attention flops)
            MLA (absorbed decode): 2 H N (R + Dr) for scores + 2 H N R for the latent mix, per layer
            KDA: ~ 6 H K V per layer (decay, delta correction, read-out of the state)
    TPOT  = max(bytes / HBM bandwidth, flops / peak flops) / attention_efficiency on the attention part
Capacity: all weights (bf16) + batch x cache must fit the GPU's HBM; if not, `DecodeCost.fits` is False and
`gpus_needed` says how many GPUs of that kind would hold it. The time stays the one-GPU roofline, flagged as
not reachable on one GPU (splitting over GPUs is the serving model's job, k3lite/analytic/serving/step.py).

Claims checked on the page (Kimi Linear tech report, arXiv 2510.26692): up to 75% smaller KV cache; at 1M
context a 2.3x faster decode at batch 1 (§6.3; Fig. 7b, "batch size = 1", annotates 2.2x) and a *theoretical* 6.3x
from the larger batches the smaller cache allows (§6.3, Fig. 1b: "1.84ms vs. 11.48ms"). The second is modelled
here the same way (`batch_limited`): each pattern decodes the largest batch whose caches fit the HBM the weights
leave free, and the time per output token is the step time shared by that batch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from k3lite.analytic import decode, memory
from k3lite.model.config import K3Config
from k3lite.model.presets import get_preset
from k3lite.analytic.hardware import GPUS, get_gpu

HYBRID_GPUS = tuple(GPUS)  # the page's choices: the shared table (its names include the page's earlier three)

REPORTED = {
    "kv_reduction": (0.75, "up to 75% smaller KV cache (Kimi Linear tech report, arXiv 2510.26692)"),
    # §6.3: "Kimi Linear achieves a 2.3x speedup at a 1M token context" (Fig. 7b, batch size = 1, marks 2.2x)
    "tpot_speedup_1m_batch1": (2.3, "2.3x faster decoding at 1M context for one sequence (arXiv 2510.26692 §6.3; "
                                    "Fig. 7b, \"batch size = 1\", marks 2.2x)"),
    # §6.3: "...reallocate memory resources to support larger batch sizes ... this memory efficiency results in
    # a theoretical decoding speedup of up to 6.3x"; Fig. 1b: "6.3x faster TPOT (1.84ms vs. 11.48ms)"
    "mla_tpot_1m_ms": (11.48, "all-MLA 11.48 ms per output token at 1M context (arXiv 2510.26692 Fig. 1b)"),
    "tpot_speedup_1m": (6.3, "a theoretical decoding speedup of up to 6.3x at 1M context from the larger batches the "
                             "smaller cache allows, 1.84 ms vs 11.48 ms per output token (arXiv 2510.26692 §6.3, "
                             "Fig. 1b)"),
}


def hybrid_config(kda_per_mla: int, base: str = "kimi-linear-48b-a3b") -> K3Config:
    """`base` with the pattern kda_per_mla : 1 (last layer global); 0 = all MLA."""
    if not isinstance(kda_per_mla, int) or not 0 <= kda_per_mla <= 7:
        raise ValueError(f"KDA:MLA ratio must be an integer 0..7 (KDA layers per MLA layer), got {kda_per_mla!r}")
    cfg = get_preset(base)
    if cfg.kda is None:
        raise ValueError(f"preset {base!r} has no KDA config")
    return cfg.with_(kda_ratio=(kda_per_mla, 1), last_layer_global=True)


def active_params(kda_per_mla: int, base: str = "kimi-linear-48b-a3b") -> int:
    """Active params per token of the re-patterned model (k3lite.analytic.params convention, via k3lite.analytic.memory)."""
    return sum(memory.component_params(hybrid_config(kda_per_mla, base), active=True).values())


def bytes_ceiling(kda_per_mla: int, base: str = "kimi-linear-48b-a3b") -> float:
    """The most any bandwidth-only model can give: all-MLA cache / hybrid cache as context -> infinity."""
    cfg = hybrid_config(kda_per_mla, base)
    return cfg.n_layers / cfg.layer_types().count("mla")


@dataclass(frozen=True)
class DecodeCost:
    kda_per_mla: int
    context: int
    batch: int
    n_mla: int
    n_kda: int
    cache_bytes: float  # per sequence
    mla_cache_bytes: float
    kda_state_bytes: float
    weight_bytes: float  # weights one step reads (distinct experts touched by the batch)
    experts_touched: float  # per MoE layer, expected
    weight_bytes_total: float  # every weight, what HBM must hold
    bytes_per_step: float
    flops_per_step: float
    tpot_s: float
    memory_bound: bool
    hbm_needed_bytes: float  # all weights + batch x cache
    hbm_bytes: float  # one GPU's HBM
    gpus_needed: int  # GPUs of this kind whose HBM together holds hbm_needed_bytes

    @property
    def fits(self) -> bool:
        return self.hbm_needed_bytes <= self.hbm_bytes

    @property
    def cache_share(self) -> float:
        """Fraction of the bytes a step reads that are cache (the rest are weights)."""
        return 1.0 - self.weight_bytes / self.bytes_per_step


def decode_cost(kda_per_mla: int, context: int, batch: int = 1, hardware: str = "H100 SXM",
                attention_efficiency: float = 1.0, base: str = "kimi-linear-48b-a3b") -> DecodeCost:
    """One decode step's roofline time per output token and its HBM footprint (see module docstring)."""
    if context < 1 or context > 10_000_000:
        raise ValueError(f"context must be 1..10,000,000 tokens, got {context}")
    if batch < 1 or batch > 4096:
        raise ValueError(f"batch must be 1..4096, got {batch}")
    if not 0.01 <= attention_efficiency <= 1.0:
        raise ValueError(f"attention efficiency must be in [0.01, 1], got {attention_efficiency}")
    hw = get_gpu(hardware)  # a clear ValueError for an unknown name; short names ("H100") accepted
    cfg = hybrid_config(kda_per_mla, base)
    types = cfg.layer_types()
    n_mla, n_kda = types.count("mla"), types.count("kda")
    weights, mla_b, kda_b = decode.step_bytes(cfg, batch, context)
    touched = memory.expected_experts_touched(cfg.moe.n_routed_experts, cfg.moe.top_k, batch)
    total_w = sum(memory.weight_bytes(cfg).values())
    flops = batch * (2 * active_params(kda_per_mla, base) + decode.attention_flops(cfg, context))
    # the cache reads are the attention part: a slower long-context kernel stretches only that part
    t_mem = (weights + batch * kda_b) / hw.hbm_bw + batch * mla_b / hw.hbm_bw / attention_efficiency
    t_flops = flops / hw.bf16_flops
    tpot, bound = decode.roofline(t_mem, t_flops)
    need = total_w + batch * (mla_b + kda_b)
    return DecodeCost(kda_per_mla, context, batch, n_mla, n_kda, float(mla_b + kda_b), float(mla_b), float(kda_b),
                      float(weights), touched, float(total_w), weights + batch * (mla_b + kda_b), float(flops),
                      tpot, bound == "HBM", float(need), hw.hbm_bytes, math.ceil(need / hw.hbm_bytes))


def cache_passes_weights(kda_per_mla: int, batch: int = 1, base: str = "kimi-linear-48b-a3b") -> int:
    """The context (tokens) from which the batch's cache is more of the bytes a decode step reads than the
    weights are: batch x (n_mla x per-token latent x N + KDA states) >= weights read at this batch."""
    cfg = hybrid_config(kda_per_mla, base)
    n_mla = cfg.layer_types().count("mla")
    kda_b = memory.sequence_cache_bytes(cfg, 0).kda
    per_token = n_mla * memory.mla_cache_bytes_per_token(cfg.mla)
    need = memory.decode_weight_bytes(cfg, batch) / batch - kda_b
    return max(1, math.ceil(need / per_token))


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


def max_context_on_one_gpu(kda_per_mla: int, batch: int = 1, hardware: str = "H100 SXM",
                           base: str = "kimi-linear-48b-a3b") -> int:
    """Longest context at which all weights (bf16) + `batch` sequences' caches fit one GPU's HBM; 0 if the
    weights alone (or the fixed KDA states) do not fit."""
    cfg = hybrid_config(kda_per_mla, base)
    free = get_gpu(hardware).hbm_bytes - sum(memory.weight_bytes(cfg).values())
    per_seq_fixed = memory.sequence_cache_bytes(cfg, 0).kda
    per_token = memory.sequence_cache_bytes(cfg, 1).mla
    room = free / batch - per_seq_fixed
    return max(0, int(room // per_token)) if room > 0 else 0


@dataclass(frozen=True)
class BatchLimited:
    """One pattern decoding the largest batch its caches allow in the HBM of `n_gpus` GPUs."""
    kda_per_mla: int
    n_gpus: int
    batch: int
    step_s: float  # one decode step of the whole batch, the roofline split ideally over n_gpus
    per_token_s: float  # step_s / batch: GPU time per output token, the inverse of throughput (Fig. 1b's "TPOT");
    #                     each sequence still waits step_s between two of its tokens
    cache_floor_s: float  # reading one sequence's cache once: per_token_s -> this as the weights are shared


def gpus_for_one_sequence(kda_per_mla: int, context: int, hardware: str = "H100 SXM",
                          base: str = "kimi-linear-48b-a3b") -> int:
    """GPUs of this kind whose HBM together holds every weight (bf16) and both patterns' (all-MLA and
    `kda_per_mla`:1) cache for one sequence: the smallest deployment on which the comparison can run at all."""
    return max(decode_cost(r, context, 1, hardware, base=base).gpus_needed for r in {0, kda_per_mla})


def batch_limited(kda_per_mla: int, context: int, hardware: str = "H100 SXM", attention_efficiency: float = 1.0,
                  n_gpus: int | None = None, base: str = "kimi-linear-48b-a3b") -> BatchLimited:
    """The batch the HBM left by the weights allows (capped at 4,096) and its time per output token.
    `n_gpus` defaults to `gpus_for_one_sequence(kda_per_mla, ...)`; bytes and FLOPs split evenly over them."""
    n = gpus_for_one_sequence(kda_per_mla, context, hardware, base) if n_gpus is None else n_gpus
    if n < 1:
        raise ValueError(f"n_gpus must be >= 1, got {n}")
    one = decode_cost(kda_per_mla, context, 1, hardware, attention_efficiency, base)
    free = n * one.hbm_bytes - one.weight_bytes_total
    batch = min(4096, int(free // one.cache_bytes)) if free > 0 else 0
    if batch < 1:
        raise ValueError(f"{n} x {hardware} cannot hold the {kda_per_mla}:1 model's weights and one "
                         f"{context:,}-token sequence; use n_gpus >= {gpus_for_one_sequence(kda_per_mla, context, hardware, base)}")
    step = decode_cost(kda_per_mla, context, batch, hardware, attention_efficiency, base).tpot_s / n
    bw = get_gpu(hardware).hbm_bw * n
    floor = (one.mla_cache_bytes / attention_efficiency + one.kda_state_bytes) / bw
    return BatchLimited(kda_per_mla, n, batch, step, step / batch, floor)


def batch_limited_speedup(kda_per_mla: int, context: int, hardware: str = "H100 SXM",
                          attention_efficiency: float = 1.0, base: str = "kimi-linear-48b-a3b") -> float:
    """Per-token GPU time of all-MLA / of `kda_per_mla`:1, each at the batch it fits on the same GPUs: a throughput
    gain (the report's "theoretical" speedup, modelled), not a shorter wait for each user."""
    n = gpus_for_one_sequence(kda_per_mla, context, hardware, base)
    full = batch_limited(0, context, hardware, attention_efficiency, n, base)
    mix = batch_limited(kda_per_mla, context, hardware, attention_efficiency, n, base)
    return full.per_token_s / mix.per_token_s
@lru_cache(maxsize=1)
def reference_gpu() -> str:
    """The GPU the hybrid page opens on and the tour quotes: the first that holds both patterns at 1M tokens."""
    return first_gpu_that_fits(1_048_576)


def first_gpu_that_fits(context: int, batch: int = 1, ratios: tuple[int, ...] = (0, 3),
                        base: str = "kimi-linear-48b-a3b") -> str:
    """The first GPU of HYBRID_GPUS on which every pattern in `ratios` (default: all-MLA and 3:1) fits at `context`
    and `batch`: the hybrid page opens on it, so its default scenario is one GPU can actually hold (it opened on
    an 80 GB H100, which the 98 GB of bf16 weights alone overflow)."""
    for gpu in HYBRID_GPUS:
        if all(decode_cost(r, context, batch=batch, hardware=gpu, base=base).fits for r in ratios):
            return gpu
    raise ValueError(f"no GPU in {list(HYBRID_GPUS)} holds batch {batch} at {context:,} tokens for ratios {ratios}")
