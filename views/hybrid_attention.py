"""3:1 hybrid attention: KV cache and decode time vs context for KDA:MLA patterns of Kimi Linear 48B-A3B."""
from functools import partial

import streamlit as st

from k3lite.analytic.hardware import get_gpu
from k3lite.analytic.hybrid import (
    BF16, HYBRID_GPUS, REPORTED, batch_limited, batch_limited_speedup, bytes_ceiling, cache_passes_weights,
    capacity_sentence, decode_cost, gpus_for_one_sequence, headline_sentence, hybrid_config, kv_reduction,
    method_text, model_name, reference_gpu, throughput_gain,
)
from k3lite.analytic.sensitivity import Assumption
from k3lite.base.evidence import derived, measured_elsewhere, released
from k3lite.base.units import GIB, ONE_M_CONTEXT as ONE_M, fmt_capacity
from k3lite.viz.hybrid import (
    cache_vs_context_figure, layer_pattern_figure, speedup_by_ratio_figure, tpot_vs_context_figure,
)
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import fmt_bytes
from views.common import (
    assumptions_block, explain, lazy_expander, metric, push_url, reset_button, show_code, url_state,
    user_errors,
)
from views.common import try_it  # the page's practice problems, at its foot

CONTEXTS = [4096, 16384, 65536, 131072, 262144, 524288, ONE_M]  # ONE_M: "1M" of context is 2^20, on every page
REPORT = "Kimi Linear tech report, arXiv 2510.26692"
REPORTED_EV = {"kv_reduction": released(REPORTED["kv_reduction"][1]),  # the report's statement, not a run we can see
               "tpot_speedup_1m_batch1": measured_elsewhere(REPORTED["tpot_speedup_1m_batch1"][1]),  # its Fig. 7b run
               "tpot_speedup_1m": released(REPORTED["tpot_speedup_1m"][1])}  # "theoretical", in its own words

st.title("3:1 hybrid attention")
st.markdown(f"**{model_name()} at a 1M-token context: what does swapping three of every four global attention "
            "layers for fixed-state KDA layers save in cache and time per output token?**")
reset_button("hy_")
with st.expander("The idea: a growing cache against a fixed state"):
    st.markdown(
        "A global attention layer (MLA, Multi-head Latent Attention) must keep something for *every* past token, so "
        "its cache and its per-token read grow with the context. A KDA (Kimi Delta Attention) layer keeps a "
        "fixed-size state however long the context. Kimi Linear and K3 interleave three KDA layers with one MLA "
        "layer. Move the ratio and see what that does to the decode cache and the time per output token of **Kimi "
        "Linear 48B-A3B** (27 layers; the real config has MLA every 4th layer and the last), up to a 1M-token "
        "context.")

url_state("hy_ratio", 3, lo=0, hi=7)
url_state("hy_batch", 1, lo=1, hi=256)
DEFAULT_GPU = reference_gpu()  # a default that fits (it opened on an 80 GB H100); the tour quotes the same
url_state("hy_hw", DEFAULT_GPU, choices=list(HYBRID_GPUS))
url_state("hy_eff", 1.0, lo=0.05, hi=1.0)


@st.cache_data(show_spinner="Counting parameters of the re-patterned 48B model on the meta device…", max_entries=64)
def curves(ratio: int, batch: int, hw: str, eff: float):
    kw = dict(batch=batch, hardware=hw, attention_efficiency=eff)
    rows = {r: [decode_cost(r, n, **kw) for n in CONTEXTS] for r in sorted({0, ratio})}
    by_ratio = [decode_cost(0, ONE_M, **kw).tpot_s / decode_cost(r, ONE_M, **kw).tpot_s for r in range(8)]
    one = dict(hardware=hw, attention_efficiency=eff)
    batch1 = [decode_cost(0, ONE_M, **one).tpot_s / decode_cost(r, ONE_M, **one).tpot_s for r in range(8)]
    filled = [batch_limited_speedup(r, ONE_M, **one) for r in range(8)]
    return rows, by_ratio, batch1, filled


@st.fragment
def main_panel() -> None:
    ctl, fig_col = st.columns([1, 3])
    ctl.slider("KDA : MLA ratio (KDA layers per MLA layer)", 0, 7, key="hy_ratio", format="%d:1")
    ctl.slider("batch (sequences decoded together)", 1, 256, key="hy_batch")
    ctl.selectbox("GPU", list(HYBRID_GPUS), key="hy_hw")
    ctl.slider("MLA kernel efficiency (fraction of HBM bandwidth)", 0.05, 1.0, step=0.05, key="hy_eff")
    push_url("hy_ratio", "hy_batch", "hy_hw", "hy_eff")
    ratio, batch, hw, eff = (st.session_state.hy_ratio, st.session_state.hy_batch, st.session_state.hy_hw,
                             st.session_state.hy_eff)
    with user_errors():
        cfg = hybrid_config(ratio)
        rows, by_ratio, batch1, filled = curves(ratio, batch, hw, eff)

    types = cfg.layer_types()
    fig_col.plotly_chart(shared_figure(layer_pattern_figure, types, f"{ratio}:1 → {types.count('kda')} KDA + {types.count('mla')} MLA layers",
                                       evidence=derived(hybrid_config)), width="stretch")

    names = {0: "0:1 (all MLA)", ratio: f"{ratio}:1"}
    left, right = fig_col.columns(2)
    left.plotly_chart(shared_figure(cache_vs_context_figure, CONTEXTS, {names[r]: [c.cache_bytes for c in v] for r, v in rows.items()},
                                    evidence=derived(decode_cost)), width="stretch")
    right.plotly_chart(shared_figure(tpot_vs_context_figure, CONTEXTS, {names[r]: [c.tpot_s for c in v] for r, v in rows.items()},
                                     evidence=derived(decode_cost)), width="stretch")

    ours_kv = kv_reduction(ratio, ONE_M)
    at_1m = rows[ratio][-1]
    rep1, rep_full = REPORTED["tpot_speedup_1m_batch1"][0], REPORTED["tpot_speedup_1m"][0]
    full_b, mix_b = (batch_limited(r, ONE_M, hw, eff, gpus_for_one_sequence(3, ONE_M, hw)) for r in (0, 3))
    # capacity: the model has to fit before its time means anything
    level, text = capacity_sentence(ratio, batch, hw, eff)
    (fig_col.warning if level == "warning" else fig_col.info)(text)
    fig_col.markdown(headline_sentence(ratio, batch, hw, eff))
    if hw == DEFAULT_GPU:
        h100 = get_gpu("H100 SXM")
        fig_col.caption(f"Opens on the {hw}: the first GPU in the list whose HBM holds the bf16 weights "
                        f"({fmt_bytes(at_1m.weight_bytes_total)}) and one 1M-token sequence of both patterns; an "
                        f"H100 SXM holds {fmt_capacity(h100.hbm_bytes)}.")
    show_code(decode_cost, kv_reduction, headline_sentence)
    with lazy_expander("Ours vs the reported figures, and the speedup at every ratio", key="hybrid_attention_x_ours_reported_figures_speedup") as is_open:
        if is_open:
            m1, m2, m3, m4 = st.columns(4)
            metric(m1, f"KV cache per sequence at 1M, ours ({ratio}:1)", fmt_bytes(at_1m.cache_bytes),
                   derived(decode_cost), delta=f"-{100 * ours_kv:.1f}% vs all-MLA", delta_color="inverse")
            metric(m2, "KV reduction at 1M, ours (3:1)", f"{100 * kv_reduction(3, ONE_M):.1f}%", derived(kv_reduction))
            metric(m3, "decode speedup at 1M, batch 1, ours (3:1)", f"{batch1[3]:.2f}x", derived(decode_cost))
            metric(m4, "throughput gain at 1M, each at the batch its HBM allows, ours (3:1)", f"{filled[3]:.2f}x",
                   derived(batch_limited_speedup),
                   help=f"All-MLA batch {full_b.batch} vs 3:1 batch {mix_b.batch} on {full_b.n_gpus} × {hw}.")
            r1, r2, r3, _ = st.columns(4)
            metric(r1, "reported: KV reduction (3:1)", f"up to {100 * REPORTED['kv_reduction'][0]:.0f}%",
                   REPORTED_EV["kv_reduction"])
            metric(r2, "reported: decode speedup at 1M, batch 1", f"{rep1}x", REPORTED_EV["tpot_speedup_1m_batch1"])
            metric(r3, "reported: theoretical speedup at 1M, larger batches", f"{rep_full}x",
                   REPORTED_EV["tpot_speedup_1m"])
            st.plotly_chart(shared_figure(speedup_by_ratio_figure, list(range(8)),
                                          {"batch 1": batch1, "batch the HBM allows": filled}, [bytes_ceiling(r) for r in range(8)],
                                          {"batch 1": rep1, "theoretical, larger batches": rep_full},
                                          evidence=derived(decode_cost, batch_limited_speedup),
                                          evidence_by_name={
                                              "bytes-only ceiling at batch 1 (layers / MLA layers)": derived(bytes_ceiling),
                                              "reported, batch 1": REPORTED_EV["tpot_speedup_1m_batch1"],
                                              "reported, theoretical, larger batches": REPORTED_EV["tpot_speedup_1m"]}),
                            width="stretch")

            show_code(batch_limited_speedup, bytes_ceiling)

    with st.expander("How we compute it, and how it compares with the reported figures"):
        st.markdown(method_text(ratio, batch, hw, eff))
        show_code(method_text)
        cross_full, cross_ratio = cache_passes_weights(0, batch), cache_passes_weights(ratio, batch)
        n_mla = [hybrid_config(r).layer_types().count("mla") for r in range(8)]
        same = [f"{r}:1 equals {r - 1}:1" for r in range(2, 8) if n_mla[r] == n_mla[r - 1]]
        same_mla = (f" {', '.join(same)} here: with {len(types)} layers and the last one forced global, both patterns "
                    "have the same number of MLA layers.") if same else ""
        mid = decode_cost(0, 131072, batch=batch, hardware=hw), decode_cost(ratio, 131072, batch=batch, hardware=hw)
        explain(f"What to notice: at batch {batch} the cache becomes most of the bytes a decode step reads only beyond "
                f"~{cross_full:,} tokens for all-MLA and ~{cross_ratio:,} tokens for {ratio}:1 (at 131K it is "
                f"{100 * mid[0].cache_share:.0f}% and {100 * mid[1].cache_share:.0f}% of the bytes read); past that point "
                "the share of global layers sets both the cache size and the long-context speed, below it the weights do. "
                + same_mla)

    gpu = get_gpu(hw)
    change_gpu = "the 'GPU' select (the datasheet's value)"
    assumptions_block(
        "hy_x_assumptions", f"The throughput gain at 1M on {hw} (3:1 vs all-MLA, each at the batch its HBM allows)",
        partial(throughput_gain, hardware=hw), [
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
        ], lambda v: f"{v:.2f}x",
        also=[("routing", "uniform: a batch touches E(1 − (1 − k/E)^B) distinct experts per MoE layer"),
              ("several GPUs", "bytes and FLOPs split evenly over them, no communication time")])



main_panel()

try_it("hybrid_attention")
