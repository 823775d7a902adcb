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
from k3lite.base.units import GIB, ONE_M_CONTEXT, fmt_bytes, fmt_capacity
from k3lite.base.wording import compare, times
from k3lite.model.cards import display_name
from k3lite.model.config import K3Config
from k3lite.model.presets import get_preset
from k3lite.analytic.hardware import GPU, GPUS, get_gpu, gpu_label

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
# each quote's evidence class (k3lite.base.evidence), as data: the 75% is the report's statement of its design (3 of
# 4 layers keep no growing cache); both speedups and the 11.48 ms are its measured TPOT figures (Fig. 7b, Fig. 1b)
REPORTED_KIND = {"kv_reduction": "released", "tpot_speedup_1m_batch1": "measured elsewhere",
                 "mla_tpot_1m_ms": "measured elsewhere", "tpot_speedup_1m": "measured elsewhere"}


@dataclass(frozen=True)
class Storage:
    """Bytes per stored number: the formats every byte count here assumes (the page's assumptions block moves them)."""
    weight: float = 2.0  # bf16 weights
    latent: float = float(memory.ACTIVATION_BYTES_PER_ELEM)  # bf16 MLA latent cache
    state: float = float(memory.KDA_STATE_BYTES_PER_ELEM)  # fp32 KDA state (the conv tail stays bf16)


BF16 = Storage()


def _gpu(hardware: str | GPU) -> GPU:
    """A GPU of the table by name, or a GPU given whole (the assumptions block's HBM moved ±20%)."""
    return hardware if isinstance(hardware, GPU) else get_gpu(hardware)


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


def decode_cost(kda_per_mla: int, context: int, batch: int = 1, hardware: str | GPU = "H100 SXM",
                attention_efficiency: float = 1.0, base: str = "kimi-linear-48b-a3b",
                storage: Storage = BF16) -> DecodeCost:
    """One decode step's roofline time per output token and its HBM footprint (see module docstring)."""
    if context < 1 or context > 10_000_000:
        raise ValueError(f"context must be 1..10,000,000 tokens, got {context}")
    if batch < 1 or batch > 4096:
        raise ValueError(f"batch must be 1..4096, got {batch}")
    if not 0.01 <= attention_efficiency <= 1.0:
        raise ValueError(f"attention efficiency must be in [0.01, 1], got {attention_efficiency}")
    hw = _gpu(hardware)  # a clear ValueError for an unknown name; short names ("H100") accepted
    cfg = hybrid_config(kda_per_mla, base)
    types = cfg.layer_types()
    n_mla, n_kda = types.count("mla"), types.count("kda")
    w_scale = storage.weight / BF16.weight
    weights, mla_b, kda_b = decode.step_bytes(cfg, batch, context, latent_bytes=storage.latent,
                                              state_bytes=storage.state)
    weights *= w_scale
    touched = memory.expected_experts_touched(cfg.moe.n_routed_experts, cfg.moe.top_k, batch)
    total_w = sum(memory.weight_bytes(cfg).values()) * w_scale
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


def efficiency_to_match(target_speedup: float, kda_per_mla: int = 3, context: int = ONE_M_CONTEXT, **kw) -> float | None:
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


def max_context_on_one_gpu(kda_per_mla: int, batch: int = 1, hardware: str | GPU = "H100 SXM",
                           base: str = "kimi-linear-48b-a3b") -> int:
    """Longest context at which all weights (bf16) + `batch` sequences' caches fit one GPU's HBM; 0 if the
    weights alone (or the fixed KDA states) do not fit."""
    cfg = hybrid_config(kda_per_mla, base)
    free = _gpu(hardware).hbm_bytes - sum(memory.weight_bytes(cfg).values())
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


def gpus_for_one_sequence(kda_per_mla: int, context: int, hardware: str | GPU = "H100 SXM",
                          base: str = "kimi-linear-48b-a3b", storage: Storage = BF16) -> int:
    """GPUs of this kind whose HBM together holds every weight (bf16) and both patterns' (all-MLA and
    `kda_per_mla`:1) cache for one sequence: the smallest deployment on which the comparison can run at all."""
    return max(decode_cost(r, context, 1, hardware, base=base, storage=storage).gpus_needed for r in {0, kda_per_mla})


def batch_limited(kda_per_mla: int, context: int, hardware: str | GPU = "H100 SXM", attention_efficiency: float = 1.0,
                  n_gpus: int | None = None, base: str = "kimi-linear-48b-a3b", storage: Storage = BF16) -> BatchLimited:
    """The batch the HBM left by the weights allows (capped at 4,096) and its time per output token.
    `n_gpus` defaults to `gpus_for_one_sequence(kda_per_mla, ...)`; bytes and FLOPs split evenly over them."""
    n = gpus_for_one_sequence(kda_per_mla, context, hardware, base, storage) if n_gpus is None else n_gpus
    if n < 1:
        raise ValueError(f"n_gpus must be >= 1, got {n}")
    one = decode_cost(kda_per_mla, context, 1, hardware, attention_efficiency, base, storage)
    free = n * one.hbm_bytes - one.weight_bytes_total
    batch = min(4096, int(free // one.cache_bytes)) if free > 0 else 0
    if batch < 1:
        raise ValueError(f"{n} x {gpu_label(_gpu(hardware).name)} cannot hold the {kda_per_mla}:1 model's weights and one "
                         f"{context:,}-token sequence; use n_gpus >= "
                         f"{gpus_for_one_sequence(kda_per_mla, context, hardware, base, storage)}")
    step = decode_cost(kda_per_mla, context, batch, hardware, attention_efficiency, base, storage).tpot_s / n
    bw = _gpu(hardware).hbm_bw * n
    floor = (one.mla_cache_bytes / attention_efficiency + one.kda_state_bytes) / bw
    return BatchLimited(kda_per_mla, n, batch, step, step / batch, floor)


def batch_limited_speedup(kda_per_mla: int, context: int, hardware: str | GPU = "H100 SXM",
                          attention_efficiency: float = 1.0, base: str = "kimi-linear-48b-a3b",
                          storage: Storage = BF16) -> float:
    """Per-token GPU time of all-MLA / of `kda_per_mla`:1, each at the batch it fits on the same GPUs: a throughput
    gain (the report's "theoretical" speedup, modelled), not a shorter wait for each user."""
    n = gpus_for_one_sequence(kda_per_mla, context, hardware, base, storage)
    full = batch_limited(0, context, hardware, attention_efficiency, n, base, storage)
    mix = batch_limited(kda_per_mla, context, hardware, attention_efficiency, n, base, storage)
    return full.per_token_s / mix.per_token_s


def throughput_gain(attention_efficiency: float = 1.0, hbm_gib: float | None = None, hbm_tb_s: float | None = None,
                    weight_bytes: float = BF16.weight, latent_bytes: float = BF16.latent,
                    state_bytes: float = BF16.state, *, hardware: str | None = None, kda_per_mla: int = 3,
                    context: int = ONE_M_CONTEXT) -> float:
    """The hybrid page's headline: the 3:1 model's throughput gain over all-MLA at 1M tokens, each at the batch its
    HBM allows (`batch_limited_speedup`), from the inputs it assumes: the MLA kernel's efficiency (capped at the
    bandwidth peak, 1), the GPU's HBM capacity (GiB) and bandwidth (TB/s), and bytes per weight, per MLA latent
    number and per KDA state number. None takes the GPU's (default: `reference_gpu()`) datasheet value."""
    gpu = get_gpu(hardware or reference_gpu())
    gpu = gpu._replace(hbm_bytes=gpu.hbm_bytes if hbm_gib is None else hbm_gib * GIB,
                       hbm_bw=gpu.hbm_bw if hbm_tb_s is None else hbm_tb_s * 1e12)
    return batch_limited_speedup(kda_per_mla, context, gpu, min(attention_efficiency, 1.0),
                                 storage=Storage(weight_bytes, latent_bytes, state_bytes))


@lru_cache(maxsize=1)
def reference_gpu() -> str:
    """The GPU the hybrid page opens on and the tour quotes: the first that holds both patterns at 1M tokens."""
    return first_gpu_that_fits(ONE_M_CONTEXT)


def first_gpu_that_fits(context: int, batch: int = 1, ratios: tuple[int, ...] = (0, 3),
                        base: str = "kimi-linear-48b-a3b") -> str:
    """The first GPU of HYBRID_GPUS on which every pattern in `ratios` (default: all-MLA and 3:1) fits at `context`
    and `batch`: the hybrid page opens on it, so its default scenario is one GPU can actually hold (it opened on
    an 80 GB H100, which the 98 GB of bf16 weights alone overflow)."""
    for gpu in HYBRID_GPUS:
        if all(decode_cost(r, context, batch=batch, hardware=gpu, base=base).fits for r in ratios):
            return gpu
    raise ValueError(f"no GPU in {list(HYBRID_GPUS)} holds batch {batch} at {context:,} tokens for ratios {ratios}")


# ------------------------------------------------------------------------- the page's computed sentences
def model_name(base: str = "kimi-linear-48b-a3b") -> str:
    """The readable name of the model the page's numbers are for (its card's)."""
    return display_name(base)


def _context_words(context: int) -> str:
    return "1M tokens" if context == ONE_M_CONTEXT else f"{context:,} tokens"


def _share_than(a: float, b: float, more: str, less: str) -> str:
    """'74.1% less than' / 'the same as': a against b, the word chosen from the numbers."""
    word = compare(a, b, more, less, "the same as")
    return word if word == "the same as" else f"{100 * abs(1 - a / b):.1f}% {word} than"


def headline_sentence(kda_per_mla: int, batch: int = 1, hardware: str = "H100 SXM", attention_efficiency: float = 1.0,
                      context: int = ONE_M_CONTEXT, base: str = "kimi-linear-48b-a3b") -> str:
    """The page's sentence under its figures: the pattern's cache and decode step against all-MLA's."""
    kw = dict(batch=batch, hardware=hardware, attention_efficiency=attention_efficiency, base=base)
    at, full = decode_cost(kda_per_mla, context, **kw), decode_cost(0, context, **kw)
    speed = times(full.tpot_s, at.tpot_s, "faster", "slower")
    return (f"At {_context_words(context)} {model_name(base)} at {kda_per_mla}:1 keeps **{fmt_bytes(at.cache_bytes)}** "
            f"of cache per sequence, {_share_than(at.cache_bytes, full.cache_bytes, 'more', 'less')} all-MLA "
            f"(every layer global): {fmt_bytes(full.cache_bytes)}. One decode step of batch {batch} takes "
            f"{at.tpot_s * 1e3:.2f} ms against {full.tpot_s * 1e3:.2f} ms for all-MLA on one {gpu_label(_gpu(hardware).name)}: "
            f"**{speed}** (the report: {REPORTED['tpot_speedup_1m_batch1'][0]}x at batch 1, "
            f"{REPORTED['tpot_speedup_1m'][0]}x theoretical).")


def capacity_sentence(kda_per_mla: int, batch: int = 1, hardware: str = "H100 SXM", attention_efficiency: float = 1.0,
                      context: int = ONE_M_CONTEXT, base: str = "kimi-linear-48b-a3b") -> tuple[str, str]:
    """('warning' or 'info', text): whether the weights and `batch` sequences of both patterns fit one GPU."""
    kw = dict(batch=batch, hardware=hardware, attention_efficiency=attention_efficiency, base=base)
    at, full = decode_cost(kda_per_mla, context, **kw), decode_cost(0, context, **kw)
    gpu = _gpu(hardware)
    hbm, ctx, r = fmt_capacity(gpu.hbm_bytes), _context_words(context), kda_per_mla
    if at.weight_bytes_total > gpu.hbm_bytes:
        return "warning", (
            f"**Does not fit one {gpu_label(gpu.name)}:** the weights alone are {fmt_bytes(at.weight_bytes_total)} in bf16, "
            f"{compare(at.weight_bytes_total, gpu.hbm_bytes, 'more than', 'less than')} its {hbm} of HBM. Batch "
            f"{batch} at {ctx} needs {fmt_bytes(at.hbm_needed_bytes)} ({r}:1) / {fmt_bytes(full.hbm_needed_bytes)} "
            f"(all-MLA): {at.gpus_needed} / {full.gpus_needed} GPUs of this kind. The times below are one GPU's "
            "roofline, not reachable on one.")
    if not at.fits or not full.fits:
        return "warning", (
            f"**Capacity:** on one {gpu_label(gpu.name)} ({hbm}), batch {batch} of the {r}:1 model fits up to "
            f"{max_context_on_one_gpu(r, batch, hardware, base):,} tokens of context. At {ctx} it needs "
            f"{fmt_bytes(at.hbm_needed_bytes)} ({r}:1, {at.gpus_needed} GPU(s)) and all-MLA "
            f"{fmt_bytes(full.hbm_needed_bytes)} ({full.gpus_needed} GPUs): beyond one GPU the times below are not "
            "reachable as drawn.")
    return "info", (f"Capacity: batch {batch} at {ctx} fits one {gpu_label(gpu.name)} ({hbm}) for both patterns "
                    f"({fmt_bytes(at.hbm_needed_bytes)} and {fmt_bytes(full.hbm_needed_bytes)}).")


def method_text(kda_per_mla: int, batch: int = 1, hardware: str = "H100 SXM", attention_efficiency: float = 1.0,
                base: str = "kimi-linear-48b-a3b") -> str:
    """The page's 'How we compute it' paragraphs: our model against the report's figures, every number computed and
    every comparison word chosen from them. The report's own words (REPORTED) are quoted as it states them."""
    kw = dict(hardware=hardware, attention_efficiency=attention_efficiency, base=base)
    cfg3, one_m = hybrid_config(3, base), ONE_M_CONTEXT
    n_moe, n_exp, k = cfg3.ffn_types().count("moe"), cfg3.moe.n_routed_experts, cfg3.moe.top_k
    at, three = decode_cost(kda_per_mla, one_m, batch, **kw), decode_cost(3, one_m, batch, **kw)
    one, one_full = decode_cost(3, one_m, 1, **kw), decode_cost(0, one_m, 1, **kw)
    wide = three if batch > 1 else decode_cost(3, one_m, 16, **kw)
    n = gpus_for_one_sequence(3, one_m, hardware, base)
    full_b, mix_b = (batch_limited(r, one_m, hardware, attention_efficiency, n, base) for r in (0, 3))
    filled = full_b.per_token_s / mix_b.per_token_s
    batch1, same_batch = one_full.tpot_s / one.tpot_s, decode_cost(0, one_m, batch, **kw).tpot_s / three.tpot_s
    rep1, rep_full, gpu = REPORTED["tpot_speedup_1m_batch1"][0], REPORTED["tpot_speedup_1m"][0], _gpu(hardware)
    other = (f"; at {kda_per_mla}:1, {at.n_kda} states add {at.kda_state_bytes / 1e6:.0f} MB"
             if kda_per_mla not in (0, 3) else "")
    plural = "s touch" if batch > 1 else " touches"
    wait = compare(mix_b.step_s, full_b.step_s, "longer", "less", "as long")
    return f"""
**Reported**: {REPORTED['kv_reduction'][1]}; {REPORTED['tpot_speedup_1m_batch1'][1]}; {REPORTED['tpot_speedup_1m'][1]}.

**Ours** (`k3lite/analytic/hybrid.py` on `k3lite/analytic/memory.py`, the same byte functions as the KDA and serving
pages), for {model_name(base)}: an MLA layer caches (kv_lora {cfg3.mla.kv_lora_rank} + rope key
{cfg3.mla.qk_rope_head_dim}) bf16 numbers per token; a KDA layer keeps a {cfg3.kda.n_heads} × {cfg3.kda.head_dim} ×
{cfg3.kda.head_dim} fp32 state plus a {cfg3.kda.conv_size - 1}-token conv tail
({fmt_bytes(memory.kda_layer_state_bytes(cfg3.kda))} per layer), whatever the context. One decode step of batch
{batch} reads the non-routed weights plus, in each of the {n_moe} MoE layers, the distinct experts the {batch}
sequence{plural}: E(1 − (1 − k/E)^B) = {at.experts_touched:.1f} of {n_exp} (k = {k} at batch 1), i.e.
{at.weight_bytes / 1e9:.1f} GB of bf16 weights for the {kda_per_mla}:1 model, plus every sequence's cache; time =
max(bytes / HBM bandwidth, FLOPs / peak FLOPs) on one {gpu_label(gpu.name)} ({gpu.source}). At 1M tokens (2^20 = {one_m:,}) the
step is {'memory' if at.memory_bound else 'compute'}-bound.

**The KV reduction**: with {three.n_mla} of {three.n_mla + three.n_kda} layers global, the 3:1 cache is
{_share_than(three.cache_bytes, decode_cost(0, one_m, batch, **kw).cache_bytes, 'larger', 'smaller')} all-MLA's (its
{three.n_kda} fixed KDA states add {three.kda_state_bytes / 1e6:.0f} MB per sequence{other}).

**Two speedups, two batches.** The report gives both: with batch size 1 (its Fig. 7b) it states {rep1}x for the 3:1
model against all-MLA at 1M; ours is {batch1:.2f}x (all-MLA {one_full.tpot_s * 1e3:.2f} ms, the report's
{REPORTED['mla_tpot_1m_ms'][0]} ms, vs {one.tpot_s * 1e3:.2f} ms per token on one {gpu_label(gpu.name)}). For 3:1 no bandwidth
model with one sequence can exceed {three.n_mla + three.n_kda} / {three.n_mla} = {bytes_ceiling(3, base):.2f}x (dotted
line): the {one.weight_bytes / 1e9:.1f} GB of weights the 3:1 model reads every step at batch size 1 pull it below.
Its headline {rep_full}x is, in its own words, *theoretical*: the cache the hybrid does not keep leaves HBM for
additional sequences, and the step time is shared by them. Ours, modelled the same way: on {full_b.n_gpus} ×
{gpu_label(gpu.name)} (the fewest that hold the weights and one 1M-token sequence of each pattern; bytes split evenly over them),
all-MLA fits batch {full_b.batch} and 3:1 batch {mix_b.batch}, so a step takes {full_b.step_s * 1e3:.2f} ms vs
{mix_b.step_s * 1e3:.2f} ms: each user of the 3:1 model waits {wait} between tokens, but the GPUs turn out a token
every {full_b.per_token_s * 1e3:.2f} ms vs {mix_b.per_token_s * 1e3:.2f} ms, {filled:.2f}x the throughput (the
report's Fig. 1b calls this shared time TPOT). Ours stays {compare(filled, rep_full, 'above', 'below', 'at')} the
reported {rep_full}x: every sequence of a batch still reads its own {one.cache_bytes / 1e9:.1f} GB (3:1) cache each
step, so even with the weights fully shared the time per token cannot fall below that read
({mix_b.cache_floor_s * 1e3:.2f} ms): {full_b.per_token_s / mix_b.cache_floor_s:.1f}x at most against all-MLA's
{full_b.per_token_s * 1e3:.2f} ms. The report does not give the GPU, batches or kernels behind {rep_full}x, so we
cannot say which of them closes the rest. At the page's batch {batch} (same batch for both) ours is
{same_batch:.2f}x: a batch shares the weight reads, but for a MoE model not in proportion: the 3:1 model's weights
read per sequence fall from {one.weight_bytes / 1e9:.1f} GB at batch 1 to {wide.weight_bytes / wide.batch / 1e9:.2f}
GB at batch {wide.batch}, not {one.weight_bytes / wide.batch / 1e9:.2f} GB, because its {wide.batch} sequences touch
{wide.experts_touched:.0f} distinct experts per MoE layer, not {k}. Lowering the MLA kernel efficiency (full attention
over 1M tokens rarely runs at the bandwidth peak) raises both of ours.
"""
