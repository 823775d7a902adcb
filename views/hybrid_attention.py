"""3:1 hybrid attention: KV cache and decode time vs context for KDA:MLA patterns of Kimi Linear 48B-A3B.
Widgets and layout only: the panels (k3lite/panels/hybrid.py) compute every figure and sentence."""
from functools import partial

import streamlit as st

from k3lite.analytic.hybrid import (
    HYBRID_GPUS, batch_limited_speedup, bytes_ceiling, capacity_sentence, decode_cost, headline_sentence,
    hybrid_config, kv_reduction, method_text, reference_gpu, throughput_gain,
)
from k3lite.analytic.hardware import CUSTOM_FIELDS, gpu_label
from k3lite.panels import hybrid as panels
from k3lite.panels.words import hybrid as words
from views.common import (
    assumptions_block, compared, explain, lazy_expander, metric, my_gpu, push_url, reset_button, show_code, show_panel,
    url_state, user_errors,
)
from views.common import try_it  # the page's practice problems, at its foot
from views.levels import draw_formulas, level

st.title("3:1 hybrid attention")
LEVEL = level()  # the sidebar's *Explain for*: the words change (k3lite/panels/words/hybrid.py), the pictures do not
st.markdown(words.question(LEVEL))
reset_button("hy_")
pair = compared()
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
MY_GPU, _ = my_gpu()  # the reader's own GPU, typed on the serving page (kept for the session, or from the link)
GPU_CHOICES = list(HYBRID_GPUS) + ([MY_GPU] if MY_GPU else [])
MY_KEYS = ("sv_my_on", *(f"sv_my_{f}" for f, *_ in CUSTOM_FIELDS))  # a link to this page carries your GPU too
url_state("hy_hw", DEFAULT_GPU, choices=GPU_CHOICES)
if st.session_state.hy_hw not in GPU_CHOICES:  # your GPU's numbers changed on the serving page, or it was switched off
    st.session_state.hy_hw = DEFAULT_GPU
url_state("hy_eff", 1.0, lo=0.05, hi=1.0)


@st.fragment
def main_panel() -> None:
    fig_col, ctl = st.columns([3, 1])  # the chart first: on a phone columns stack, controls below it
    ctl.slider("KDA : MLA ratio (KDA layers per MLA layer)", 0, 7, key="hy_ratio", format="%d:1")
    ctl.slider("batch (sequences decoded together)", 1, 256, key="hy_batch")
    ctl.selectbox("GPU", GPU_CHOICES, key="hy_hw", format_func=gpu_label,
                  help="your own GPU joins the list once typed under the serving page's 'Your own GPU'")
    ctl.slider("MLA kernel efficiency (fraction of HBM bandwidth)", 0.05, 1.0, step=0.05, key="hy_eff")
    push_url("hy_ratio", "hy_batch", "hy_hw", "hy_eff", *(MY_KEYS if MY_GPU else ()))
    ratio, batch, hw, eff = (st.session_state.hy_ratio, st.session_state.hy_batch, st.session_state.hy_hw,
                             st.session_state.hy_eff)
    with user_errors():
        hybrid_config(ratio)
        panels.curves(ratio, batch, hw, eff)
    if pair is not None:  # K3 beside the compared model first: what the reader asked for
        show_panel(words.compare(LEVEL, panels.compare_panel(pair, hw), pair), "hy_compare", fig_col)
    show_panel(panels.pattern_panel(ratio), "hy_pattern", fig_col)
    left, right = fig_col.columns(2)
    show_panel(panels.cache_panel(ratio, batch, hw, eff), "hy_cache", left)
    show_panel(panels.tpot_panel(ratio, batch, hw, eff), "hy_tpot", right)

    # capacity: the model has to fit before its time means anything
    level, text = capacity_sentence(ratio, batch, hw, eff)
    (fig_col.warning if level == "warning" else fig_col.info)(words.capacity(LEVEL, level, text, hw))
    fig_col.markdown(words.headline(LEVEL, ratio, batch, hw, eff))
    if hw == DEFAULT_GPU:
        fig_col.caption(words.gpu_caption(LEVEL, hw))
    show_code(decode_cost, kv_reduction, headline_sentence)
    if LEVEL == "paper":  # under the figures and their controls (a phone stacks the controls after the figures)
        draw_formulas("The equations, each symbol in the code", words.formulas(ratio, batch, hw, eff), words.PAPER_NOTES)
    with lazy_expander("Ours vs the reported figures, and the speedup at every ratio",
                       key="hybrid_attention_x_ours_reported_figures_speedup") as is_open:
        if is_open:
            for row in panels.ours_and_reported(ratio, batch, hw, eff):
                for col, (label, value, evidence, kw) in zip(st.columns(4), row):
                    metric(col, label, value, evidence, **kw)
            show_panel(panels.speedup_panel(ratio, batch, hw, eff), "hy_speedup")
            show_code(batch_limited_speedup, bytes_ceiling)

    with st.expander("How we compute it, and how it compares with the reported figures"):
        st.markdown(method_text(ratio, batch, hw, eff))
        show_code(method_text)
        explain(panels.notice_text(ratio, batch, hw))

    assumptions_block(
        "hy_x_assumptions", f"The throughput gain at 1M on {gpu_label(hw)} (3:1 vs all-MLA, each at the batch its HBM allows)",
        partial(throughput_gain, hardware=hw), panels.assumptions(hw, eff), lambda v: f"{v:.2f}x",
        also=panels.ALSO)


main_panel()

try_it("hybrid_attention")
