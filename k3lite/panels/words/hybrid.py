"""The 3:1 hybrid page's words at each level (views/hybrid_attention.py): the question, the sentence under the
figures, the GPU caption, and at paper level the cache, its reduction, the roofline step and the speedup.

Engineer is the page as written (k3lite.analytic.hybrid, k3lite.panels.hybrid); first look and paper reword it from
the same decode_cost calls, with the same arguments."""
from __future__ import annotations

from k3lite.analytic import memory
from k3lite.analytic.hardware import get_gpu, gpu_label
from k3lite.analytic.hybrid import (ONE_M_CONTEXT, REPORTED, decode_cost, headline_sentence, hybrid_config,
                                    kv_reduction, model_name, speedup_vs_full_mla)
from k3lite.base.evidence import derived
from k3lite.base.wording import times
from k3lite.panels import hybrid as panels
from k3lite.panels.words import Formula, first_look_compare, pick
from k3lite.viz.style import fmt_bytes

KIMI_LINEAR = "Kimi Linear tech report, arXiv 2510.26692"


def question(level: str) -> str:
    return pick(level,
                "**To write each new word a model rereads its memory of the conversation. Full attention keeps a "
                "note for every past word; KDA keeps a fixed-size summary. What if three of every four layers "
                "kept the summary?**",
                f"**{model_name()} at a 1M-token context: what does swapping three of every four global attention "
                "layers for fixed-state KDA layers save in cache and time per output token?**")


def _costs(ratio: int, batch: int, hw: str, eff: float):
    kw = dict(batch=batch, hardware=hw, attention_efficiency=eff)  # headline_sentence's own arguments
    return decode_cost(ratio, ONE_M_CONTEXT, **kw), decode_cost(0, ONE_M_CONTEXT, **kw)


def headline(level: str, ratio: int, batch: int, hw: str, eff: float) -> str:
    """The sentence under the figures: engineer's headline_sentence; first look: the one number (the cache one
    1M-token conversation keeps), from the same decode_cost calls."""
    if level != "first":
        return headline_sentence(ratio, batch, hw, eff)
    at, full = _costs(ratio, batch, hw, eff)
    if ratio == 0:
        return (f"At 0:1 every layer keeps the full record: **{fmt_bytes(full.cache_bytes)}** of memory for one "
                "conversation of a million tokens. Move the ratio to see what the summaries save.")
    return (f"The number that matters: for one conversation of a million tokens the {ratio}:1 model keeps "
            f"**{fmt_bytes(at.cache_bytes)}** of memory instead of {fmt_bytes(full.cache_bytes)}, and writes each "
            f"new token {times(full.tpot_s, at.tpot_s, 'faster', 'slower')}. Like a running summary instead "
            "of a transcript; a summary can miss details, so some layers keep the transcript.")


def capacity(level: str, kind: str, engineer: str, hw: str) -> str:
    """The capacity notice: a warning in the engineer's words at every level (it says what does not fit); when
    everything fits, first look says so plainly."""
    return f"Both versions fit on one {gpu_label(hw)}." if level == "first" and kind == "info" else engineer


def compare(level: str, panel, pair):
    return first_look_compare(level, panel, pair, "cache", "the memory one conversation of a million tokens keeps")


def gpu_caption(level: str, hw: str) -> str:
    return pick(level, f"It opens on the {gpu_label(hw)}, the first GPU in the list that holds the model and one "
                       "conversation of a million tokens.", panels.default_gpu_caption(hw))


# ------------------------------------------------------------------------------------------ paper level
def _cache(n_mla, T, d_c, d_r, b_l, n_kda, m_kda):
    return n_mla * T * (d_c + d_r) * b_l + n_kda * m_kda


def _reduction(c_r, c_0):
    return 1 - c_r / c_0


def _tpot(W, B, m_kda, m_mla, BW, eta, F, P):
    return max((W + B * m_kda) / BW + B * m_mla / (eta * BW), F / P)


def _speedup(t_0, t_r):
    return t_0 / t_r


def formulas(ratio: int, batch: int, hw: str, eff: float) -> list[Formula]:
    """The page's equations at its controls (ratio, batch, GPU, MLA efficiency), at 1M tokens."""
    cfg = hybrid_config(ratio)
    at, full = _costs(ratio, batch, hw, eff)
    gpu = get_gpu(hw)
    kw = dict(batch=batch, hardware=hw, attention_efficiency=eff)
    m_kda = memory.kda_layer_state_bytes(cfg.kda) if at.n_kda else 0
    ev = derived(decode_cost)
    return [
        Formula(r"C(T) = n_{\mathrm{MLA}}\, T\, (d_c + d_r)\, b_\ell \;+\; n_{\mathrm{KDA}}\, M_{\mathrm{KDA}}",
                (("C(T)", "decode_cost(...).cache_bytes"), ("n_{\\mathrm{MLA}}, n_{\\mathrm{KDA}}", "n_mla, n_kda"),
                 ("d_c", "MLAConfig.kv_lora_rank"), ("d_r", "MLAConfig.qk_rope_head_dim"),
                 ("b_\\ell", "latent_bytes (bf16: 2)"), ("M_{\\mathrm{KDA}}", "memory.kda_layer_state_bytes")),
                _cache, lambda **_: at.cache_bytes,
                dict(n_mla=at.n_mla, T=ONE_M_CONTEXT, d_c=cfg.mla.kv_lora_rank, d_r=cfg.mla.qk_rope_head_dim,
                     b_l=memory.ACTIVATION_BYTES_PER_ELEM, n_kda=at.n_kda, m_kda=m_kda),
                lambda c: f"At T = 2^20 and {ratio}:1 ({at.n_mla} MLA, {at.n_kda} KDA layers) one sequence keeps "
                          f"C = {fmt_bytes(c)}: the MLA term grows with T, the KDA term does not",
                "MLA's latent cache, DeepSeek-V3 (arXiv 2412.19437); " + KIMI_LINEAR, ev),
        Formula(r"1 - \frac{C_{r:1}(T)}{C_{0:1}(T)}",
                (("C_{r:1}", "decode_cost(ratio, T).cache_bytes"), ("1 - C_{r:1}/C_{0:1}", "kv_reduction(ratio, T)")),
                _reduction, lambda **_: kv_reduction(ratio, ONE_M_CONTEXT),
                dict(c_r=at.cache_bytes, c_0=full.cache_bytes),
                lambda r: f"{100 * r:.1f}% smaller than all-MLA at 1M tokens; the report: "
                          f"{REPORTED['kv_reduction'][0]:.0%} for 3:1",
                REPORTED["kv_reduction"][1], derived(kv_reduction)),
        Formula(r"\begin{aligned} t &= \max\big(t_{\mathrm{HBM}},\ F_B / P\big) \\ t_{\mathrm{HBM}} &= "
                r"\frac{W_B + B\,M_{\mathrm{KDA}}}{\mathrm{BW}} + \frac{B\,M_{\mathrm{MLA}}}{\eta\,\mathrm{BW}} "
                r"\end{aligned}",
                (("t", "decode_cost(...).tpot_s"), ("W_B", "weight_bytes (experts the batch touches)"),
                 ("B", "batch"), ("M_{\\mathrm{KDA}}, M_{\\mathrm{MLA}}", "kda_state_bytes, mla_cache_bytes"),
                 ("\\mathrm{BW}", "GPU.hbm_bw"), ("\\eta", "attention_efficiency"),
                 ("F_B", "flops_per_step"), ("P", "GPU.bf16_flops")),
                _tpot, lambda **_: at.tpot_s,
                dict(W=at.weight_bytes, B=batch, m_kda=at.kda_state_bytes, m_mla=at.mla_cache_bytes, BW=gpu.hbm_bw,
                     eta=eff, F=at.flops_per_step, P=gpu.bf16_flops),
                lambda t: f"One decode step of batch {batch} on one {gpu_label(gpu.name)}: t = {t * 1e3:.2f} ms, "
                          f"{'HBM' if at.memory_bound else 'compute'}-bound (a roofline: the larger of the two times)",
                "a roofline on the GPU's datasheet HBM bandwidth and bf16 FLOPs", ev),
        Formula(r"S = \frac{t_{0:1}}{t_{r:1}}",
                (("S", "speedup_vs_full_mla(ratio, T, ...)"), ("t_{r:1}", "decode_cost(ratio, T, ...).tpot_s")),
                _speedup, lambda **_: speedup_vs_full_mla(ratio, ONE_M_CONTEXT, **kw),
                dict(t_0=full.tpot_s, t_r=at.tpot_s),
                lambda s: f"S = {s:.2f}x at batch {batch}; the report measures "
                          f"{REPORTED['tpot_speedup_1m_batch1'][0]}x at batch 1 and states "
                          f"{REPORTED['tpot_speedup_1m'][0]}x as the theoretical gain from larger batches",
                f"{KIMI_LINEAR} §6.3, Fig. 7b and Fig. 1b", derived(speedup_vs_full_mla)),
    ]


PAPER_NOTES = (
    "Derivation: decoding one token reads every weight the batch touches once, and each sequence's whole cache "
    "once; at long context and small batch the cache term dominates, so the step time falls with the MLA layers "
    "removed, until the weights or the FLOPs take over. The report's "
    f"{REPORTED['tpot_speedup_1m'][0]:g}x is not a batch-1 number: the smaller cache lets a GPU hold more sequences, "
    "and the gain is in tokens per second across them. Sources: " + KIMI_LINEAR + " §6.3 (Fig. 1b, Fig. 7b); DeepSeek-V3, "
    "arXiv 2412.19437, for MLA's latent cache; Kimi K3 Technical Report, arXiv 2607.24653, for K3's own KDA / MLA stack.",
)
