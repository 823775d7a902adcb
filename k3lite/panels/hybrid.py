"""The 3:1 hybrid page's panels (views/hybrid_attention.py): every number, figure and sentence it shows.

    pattern_panel(ratio)                         the re-patterned 48B model's layer types
    cache_panel / tpot_panel(ratio, batch, ...)  cache per sequence and time per output token vs context, all-MLA
                                                 against ratio:1 (Kimi Linear 48B-A3B, k3lite.analytic.hybrid)
    speedup_panel(ratio, hw, eff)                our speedup at every ratio against the reported figures
    compare_panel(pair, hw)                      K3 and the compared model's cache per sequence vs context on one
                                                 log-log axis, what drives the difference, and how many sequences'
                                                 caches one GPU holds for each
The page holds the widgets and lays these out.
"""
from __future__ import annotations

import math
from functools import lru_cache

from k3lite.analytic import memory
from k3lite.analytic.hardware import get_gpu, gpu_label
from k3lite.analytic.hybrid import (
    BF16, REPORTED, REPORTED_KIND, batch_limited, batch_limited_speedup, bytes_ceiling, cache_passes_weights, decode_cost,
    gpus_for_one_sequence, hybrid_config, kv_reduction,
)
from k3lite.analytic.sensitivity import Assumption
from k3lite.base.evidence import Evidence, derived
from k3lite.base.units import GIB, ONE_M_CONTEXT as ONE_M, fmt_bytes, fmt_capacity
from k3lite.base.wording import compare, times
from k3lite.model.config import K3Config
from k3lite.panels.core import Pair, Panel, Said, sentence, where_else
from k3lite.viz.compare import paired_lines
from k3lite.viz.hybrid import (
    cache_vs_context_figure, layer_pattern_figure, speedup_by_ratio_figure, tpot_vs_context_figure,
)
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import bytes_log_axis, log_axis

CONTEXTS = [4096, 16384, 65536, 131072, 262144, 524288, ONE_M]  # ONE_M: "1M" of context is 2^20, on every page
REPORTED_EV = {k: Evidence(REPORTED_KIND[k], quote) for k, (_, quote) in REPORTED.items()}  # the class the data carries


@lru_cache(maxsize=64)  # the meta-device parameter counts behind decode_cost: once per setting per server
def curves(ratio: int, batch: int, hw: str, eff: float):
    """({0 and ratio: DecodeCost at each of CONTEXTS}, speedup at 1M by ratio at `batch`, at batch 1, and each at
    the batch its HBM allows)."""
    kw = dict(batch=batch, hardware=hw, attention_efficiency=eff)
    rows = {r: [decode_cost(r, n, **kw) for n in CONTEXTS] for r in sorted({0, ratio})}
    by_ratio = [decode_cost(0, ONE_M, **kw).tpot_s / decode_cost(r, ONE_M, **kw).tpot_s for r in range(8)]
    one = dict(hardware=hw, attention_efficiency=eff)
    batch1 = [decode_cost(0, ONE_M, **one).tpot_s / decode_cost(r, ONE_M, **one).tpot_s for r in range(8)]
    filled = [batch_limited_speedup(r, ONE_M, **one) for r in range(8)]
    return rows, by_ratio, batch1, filled


def _names(ratio: int) -> dict[int, str]:
    return {0: "0:1 (all MLA)", ratio: f"{ratio}:1"}


def pattern_panel(ratio: int) -> Panel:
    types = hybrid_config(ratio).layer_types()
    title = f"{ratio}:1 → {types.count('kda')} KDA + {types.count('mla')} MLA layers"
    return Panel(shared_figure(layer_pattern_figure, types, title, evidence=derived(hybrid_config)),
                 evidence=derived(hybrid_config))


def cache_panel(ratio: int, batch: int, hw: str, eff: float) -> Panel:
    rows = curves(ratio, batch, hw, eff)[0]
    series = {_names(ratio)[r]: [c.cache_bytes for c in v] for r, v in rows.items()}
    return Panel(shared_figure(cache_vs_context_figure, CONTEXTS, series, evidence=derived(decode_cost)),
                 evidence=derived(decode_cost))


def tpot_panel(ratio: int, batch: int, hw: str, eff: float) -> Panel:
    rows = curves(ratio, batch, hw, eff)[0]
    series = {_names(ratio)[r]: [c.tpot_s for c in v] for r, v in rows.items()}
    return Panel(shared_figure(tpot_vs_context_figure, CONTEXTS, series, evidence=derived(decode_cost)),
                 evidence=derived(decode_cost))


def default_gpu_caption(hw: str) -> str:
    """Why the page opens on this GPU (shown only when it is the default)."""
    h100 = get_gpu("H100 SXM")
    weights = decode_cost(3, ONE_M, hardware=hw).weight_bytes_total
    return (f"Opens on the {gpu_label(hw)}: the first GPU in the list whose HBM holds the bf16 weights ({fmt_bytes(weights)}) "
            f"and one 1M-token sequence of both patterns; an H100 SXM holds {fmt_capacity(h100.hbm_bytes)}.")


def ours_and_reported(ratio: int, batch: int, hw: str, eff: float) -> tuple[list[tuple], list[tuple]]:
    """The expander's two rows of metrics: (label, value, evidence, keyword arguments for metric)."""
    rows, _by, batch1, filled = curves(ratio, batch, hw, eff)  # batch1, filled: whatever the page's batch
    at_1m = rows[ratio][-1]
    full_b, mix_b = (batch_limited(r, ONE_M, hw, eff, gpus_for_one_sequence(3, ONE_M, hw)) for r in (0, 3))
    rep1, rep_full = REPORTED["tpot_speedup_1m_batch1"][0], REPORTED["tpot_speedup_1m"][0]
    ours = [(f"KV cache per sequence at 1M, ours ({ratio}:1)", fmt_bytes(at_1m.cache_bytes), derived(decode_cost),
             dict(delta=f"-{100 * kv_reduction(ratio, ONE_M):.1f}% vs all-MLA", delta_color="inverse")),
            ("KV reduction at 1M, ours (3:1)", f"{100 * kv_reduction(3, ONE_M):.1f}%", derived(kv_reduction), {}),
            ("decode speedup at 1M, batch 1, ours (3:1)", f"{batch1[3]:.2f}x", derived(decode_cost), {}),
            ("throughput gain at 1M, each at the batch its HBM allows, ours (3:1)", f"{filled[3]:.2f}x",
             derived(batch_limited_speedup),
             dict(help=f"All-MLA batch {full_b.batch} vs 3:1 batch {mix_b.batch} on {full_b.n_gpus} × {gpu_label(hw)}."))]
    reported = [("reported: KV reduction (3:1)", f"up to {100 * REPORTED['kv_reduction'][0]:.0f}%",
                 REPORTED_EV["kv_reduction"], {}),
                ("reported: decode speedup at 1M, batch 1", f"{rep1}x", REPORTED_EV["tpot_speedup_1m_batch1"], {}),
                ("reported: theoretical speedup at 1M, larger batches", f"{rep_full}x", REPORTED_EV["tpot_speedup_1m"],
                 {})]
    return ours, reported


def speedup_panel(ratio: int, batch: int, hw: str, eff: float) -> Panel:
    """Our speedup at 1M at every ratio (batch 1 and the batch the HBM allows) against the reported figures."""
    _rows, _by, batch1, filled = curves(ratio, batch, hw, eff)
    rep1, rep_full = REPORTED["tpot_speedup_1m_batch1"][0], REPORTED["tpot_speedup_1m"][0]
    fig = shared_figure(speedup_by_ratio_figure, list(range(8)), {"batch 1": batch1, "batch the HBM allows": filled},
                        [bytes_ceiling(r) for r in range(8)],
                        {"batch 1": rep1, "theoretical, larger batches": rep_full},
                        evidence=derived(decode_cost, batch_limited_speedup),
                        evidence_by_name={
                            "bytes-only ceiling at batch 1 (layers / MLA layers)": derived(bytes_ceiling),
                            "reported, batch 1": REPORTED_EV["tpot_speedup_1m_batch1"],
                            "reported, theoretical, larger batches": REPORTED_EV["tpot_speedup_1m"]})
    return Panel(fig, evidence=derived(decode_cost, batch_limited_speedup))


def notice_text(ratio: int, batch: int, hw: str) -> str:
    """The 'what to notice' paragraph: where the cache passes the weights, and ratios with equal MLA counts."""
    cross_full, cross_ratio = cache_passes_weights(0, batch), cache_passes_weights(ratio, batch)
    n_layers = len(hybrid_config(ratio).layer_types())
    n_mla = [hybrid_config(r).layer_types().count("mla") for r in range(8)]
    same = [f"{r}:1 equals {r - 1}:1" for r in range(2, 8) if n_mla[r] == n_mla[r - 1]]
    same_mla = (f" {', '.join(same)} here: with {n_layers} layers and the last one forced global, both patterns "
                "have the same number of MLA layers.") if same else ""
    mid = decode_cost(0, 131072, batch=batch, hardware=hw), decode_cost(ratio, 131072, batch=batch, hardware=hw)
    return (f"What to notice: at batch {batch} the cache becomes most of the bytes a decode step reads only beyond "
            f"~{cross_full:,} tokens for all-MLA and ~{cross_ratio:,} tokens for {ratio}:1 (at 131K it is "
            f"{100 * mid[0].cache_share:.0f}% and {100 * mid[1].cache_share:.0f}% of the bytes read); past that point "
            "the share of global layers sets both the cache size and the long-context speed, below it the weights do. "
            + same_mla)


def assumptions(hw: str, eff: float) -> list[Assumption]:
    """The page's assumed inputs (the throughput gain's arguments, k3lite.analytic.hybrid.throughput_gain)."""
    gpu = get_gpu(hw)
    change_gpu = "the 'GPU' select (the datasheet's value)"
    return [
        Assumption("attention_efficiency", "MLA kernel efficiency", eff,
                   "the roofline's ideal reads the cache at peak bandwidth; real full-attention kernels over 1M "
                   "tokens fall short (capped at the peak, 1)", "the 'MLA kernel efficiency' slider", "of peak"),
        Assumption("hbm_gib", "HBM per GPU", round(gpu.hbm_bytes / GIB, 1),
                   "the datasheet's capacity, binary as the hardware is; the engines' own reserve is not taken off",
                   change_gpu, "GiB"),
        Assumption("hbm_tb_s", "HBM bandwidth", gpu.hbm_bw / 1e12, "the datasheet's peak", change_gpu, "TB/s"),
        Assumption("weight_bytes", "bytes per weight", BF16.weight, "bf16, as the released checkpoint"),
        Assumption("latent_bytes", "bytes per MLA cache number", BF16.latent, "a bf16 latent cache"),
        Assumption("state_bytes", "bytes per KDA state number", BF16.state,
                   "an fp32 state, as KDACache and flash-linear-attention keep it"),
    ]


ALSO = [("routing", "uniform: a batch touches E(1 − (1 − k/E)^B) distinct experts per MoE layer"),
        ("several GPUs", "bytes and FLOPs split evenly over them, no communication time")]


# ------------------------------------------------------------------------------------- K3 beside another model


def _cache(cfg: K3Config, context: int) -> float:
    c = memory.sequence_cache_bytes(cfg, context)
    return float(c.mla + c.kda)


def _layers(cfg: K3Config) -> tuple[int, int, int]:
    """(layers, MLA layers, KDA layers)."""
    types = cfg.layer_types()
    return len(types), types.count("mla"), types.count("kda")


def _drives(name: str, cfg: K3Config) -> str:
    """What a model's cache is made of, in words: MLA layers' growing latent and KDA layers' fixed state."""
    n, n_mla, n_kda = _layers(cfg)
    if not n_kda:
        return f"{name} has MLA in every one of its {n} layers"
    state = memory.sequence_cache_bytes(cfg, 0).kda
    return (f"{name} keeps MLA's latent in {n_mla} of its {n} layers and a fixed {fmt_bytes(state)} of KDA state "
            f"in the other {n_kda}")


def _context_words(context: int) -> str:
    return "1M tokens" if context == ONE_M else f"{context:,} tokens"


def _past_its_window(names, cfgs, context: int) -> str:
    """A clause for each model whose released context window (its preset's max_seq_len) is shorter than `context`:
    its cache there is an extrapolation, not a setting it ships with."""
    short = [(n, c.max_seq_len) for n, c in zip(names, cfgs) if c.max_seq_len < context]
    return "".join(f" {n} as released is a {w // 1024:,}K-context model ({w:,} tokens, the window it "
                   f"was released with): at {_context_words(context)} its cache is an extrapolation."
                   for n, w in short)


@lru_cache(maxsize=64)
def compare_panel(pair: Pair, hw: str, context: int = ONE_M) -> Panel:
    """K3 (pair.k3) and the compared model: cache per sequence vs context on one log-log axis, the ratio at
    `context` and what drives it, and how many sequences' caches one `hw` holds for each."""
    k3, other = pair.k3, pair.other
    names = (pair.k3_label, pair.label)
    xs = sorted(set(CONTEXTS) | {context})
    fig = shared_figure(paired_lines, xs, [_cache(k3, n) for n in xs], [_cache(other, n) for n in xs], names,
                        pair.ablation, log_axis("context (tokens, log)"), bytes_log_axis("cache per sequence"),
                        title=f"Decode cache per sequence: {names[0]} and {names[1]}",
                        hover="%{x:,} tokens: %{y:.3s}B", evidence=derived(memory.sequence_cache_bytes))
    a, b = _cache(k3, context), _cache(other, context)
    (n, mla_a, kda_a), (m, mla_b, kda_b) = _layers(k3), _layers(other)
    per_a, per_b = memory.mla_cache_bytes_per_token(k3.mla), memory.mla_cache_bytes_per_token(other.mla)
    at = _context_words(context)
    if compare(a, b, "more", "less", "same") == "same":
        where = sentence(where_else(pair, "hybrid_attention"))
        first = (f"At {at} one {names[0]} sequence keeps the same {fmt_bytes(a)} of cache as {names[1]} "
                 f"({fmt_bytes(b)}): {pair.comparison.instead} leaves every attention layer as it is ({mla_a} MLA + "
                 f"{kda_a} KDA in both)." + (f" {where}" if where else ""))
    else:
        per = (f"each MLA layer stores {fmt_bytes(per_a)} per token in both" if per_a == per_b else
               f"each MLA layer stores {fmt_bytes(per_a)} per token against {fmt_bytes(per_b)}")
        hybrid_too = ""
        if kda_b and not pair.ablation:
            ratio = ":".join(str(x) for x in other.kda_ratio)
            hybrid_too = (f" {names[1]} is a {ratio} hybrid too ({kda_b} KDA + {mla_b} MLA), with "
                          f"{times(m, n, 'more', 'fewer')} layers.")
        first = (f"At {at} one {names[0]} sequence keeps {fmt_bytes(a)} of cache, {times(a, b, 'more', 'less')} "
                 f"than {names[1]} ({fmt_bytes(b)}). {_drives(names[0], k3)}; {_drives(names[1], other)}; {per}, "
                 f"so the count of MLA layers ({mla_a} against {mla_b}) sets the difference.{hybrid_too}")
    first += _past_its_window(names, (k3, other), context)
    gpu = get_gpu(hw)
    fit_a, fit_b = (math.floor(gpu.hbm_bytes / c) if c else 0 for c in (a, b))
    second = (f"One {gpu_label(gpu.name)}'s {fmt_capacity(gpu.hbm_bytes)} of HBM, given wholly to cache (the weights on "
              f"other GPUs), holds {fit_a:,} sequence{'s' if fit_a != 1 else ''} of {at} for {names[0]} and "
              f"{fit_b:,} for {names[1]}.")
    ev = derived(memory.sequence_cache_bytes)
    return Panel(fig, (Said(first, (ev,)), Said(second, (ev,))), evidence=ev,
                 values={"k3_cache": a, "other_cache": b, "k3_fit": fit_a, "other_fit": fit_b,
                         "k3_mla": mla_a, "other_mla": mla_b, "k3_kda": kda_a, "other_kda": kda_b},
                 title="")
