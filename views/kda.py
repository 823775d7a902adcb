"""Kimi Delta Attention: the trained layer's state written and decayed (a browser animation), per-channel decay,
memory vs context, a recall probe, the bound; with a comparison on, K3's decode memory beside the compared model's.
The panels compute (k3lite.panels.kda); this page holds the widgets and lays them out."""
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from k3lite.model import kda
from k3lite.analytic import memory
from k3lite.model.presets import get_preset
from k3lite.model.checkpoint import load_lite_model
from k3lite.panels import kda as panels
from k3lite.panels.kda_compare import CONTEXT, CONTEXT_CHOICES, decode_memory_panel
from k3lite.panels.words import kda as words
from k3lite.viz.kda import decay_heatmap
from k3lite.viz.kda_state import kda_layers, trained_kda_run
from k3lite.model.kda.layer import KimiDeltaAttention
from k3lite.model.kda.naive import naive_kda_matrix
from k3lite.model.kda.reference import chunk_kda_reference
from views.common import (assumptions_block, compared, explain, lazy_expander, push_url, reset_button, show_code,
                          show_panel, table, url_state, user_errors)
from views.common import try_it  # the page's practice problems, at its foot
from views.levels import draw_formulas, level

MAX_T = panels.MAX_T
LITE = get_preset("lite")
H = LITE.kda.n_heads

st.title("Kimi Delta Attention")
LEVEL = level()  # the sidebar's *Explain for*: the words change (k3lite/panels/words/kda.py), the pictures do not
st.markdown(words.question(LEVEL))
reset_button("kda_")
PAIR = compared()
if PAIR is not None:  # the comparison first: what one sequence holds for decoding, K3 beside the compared model
    url_state("kda_vs_context", CONTEXT, choices=list(CONTEXT_CHOICES))
    st.select_slider("context (tokens)", CONTEXT_CHOICES, key="kda_vs_context", format_func="{:,}".format)
    push_url("kda_vs_context")
    show_panel(words.compare(LEVEL, decode_memory_panel(PAIR, st.session_state.kda_vs_context), PAIR), "kda_vs_memory")
    show_code(decode_memory_panel)


@st.cache_resource(show_spinner="Loading the trained lite model…")
def lite_model():
    return load_lite_model()


MODEL, WARNING = lite_model()
KDA_LAYERS = kda_layers(MODEL)


@st.cache_data(max_entries=32, show_spinner="Running the trained KDA layer…")
def run(source: str, prompt: str, T: int, layer: int) -> dict:
    return panels.kda_run(MODEL, source, prompt, T, layer)


@st.cache_data(show_spinner=False, max_entries=1)  # called with the one default prompt
def default_view(prompt: str) -> tuple[int, int]:
    return panels.most_varied_head(MODEL, prompt, KDA_LAYERS)


url_state("kda_source", "prompt", choices=["prompt", "random"])
PROMPT = "Alice gave Bob the key; later Bob used the key."
url_state("kda_prompt", PROMPT)
url_state("kda_T", 48, lo=1, hi=MAX_T)
DEFAULT_LAYER, DEFAULT_HEAD = default_view(PROMPT)
url_state("kda_layer", DEFAULT_LAYER, choices=KDA_LAYERS)
url_state("kda_head", DEFAULT_HEAD, lo=0, hi=H - 1)


@st.fragment
def state_panel() -> None:
    """The animation of the state and everything read from the same run."""
    fig_col, ctl = st.columns([3, 1])  # the animation first: on a phone columns stack, controls below it
    ctl.radio("input", ["prompt", "random"], key="kda_source",
              help="random = Gaussian vectors fed straight to the layer instead of the prompt")
    if st.session_state.kda_source == "prompt":
        ctl.text_input(f"prompt (at most {MAX_T} UTF-8 bytes; one token per byte)", key="kda_prompt")
    else:
        ctl.slider("tokens T", 1, MAX_T, key="kda_T")
    ctl.selectbox("KDA layer of the trained model", KDA_LAYERS, key="kda_layer",
                  help=f"the lite model's KDA layers (the others, {[i for i in range(len(MODEL.layers)) if i not in KDA_LAYERS]}, are MLA, Multi-head Latent Attention)")
    ctl.slider("head", 0, H - 1, key="kda_head", help=f"each layer has {H} heads")
    push_url("kda_source", "kda_prompt", "kda_T", "kda_layer", "kda_head")
    head, layer, source = st.session_state.kda_head, st.session_state.kda_layer, st.session_state.kda_source
    with user_errors():
        if not 0 <= head < H:
            raise ValueError(f"head must be in [0, {H - 1}] (this layer has {H} heads), got {head}")
        T_req = st.session_state.kda_T
        if source == "random" and not 1 <= T_req <= MAX_T:
            raise ValueError(f"tokens T must be in [1, {MAX_T}], got {T_req}")
        res = run(source, st.session_state.kda_prompt, T_req, layer)
    T = len(res["labels"])
    live = panels.live_evidence(source, layer, T)
    if WARNING:
        fig_col.warning(WARNING)
    shown = panels.state_panel(res, head, layer, LITE.kda.head_dim, live)
    fig_col.plotly_chart(shown.figure, width="stretch")
    fig_col.markdown(words.state_said(LEVEL, shown, LITE.kda.head_dim, T))
    show_code(kda.gated_delta_step, kda.kda_trajectory, trained_kda_run)
    st.caption(words.input_caption(LEVEL, panels.input_caption(LITE, layer, source, T), layer))
    if LEVEL == "paper":
        draw_formulas("The equations, each symbol in the code", words.formulas(T, LITE.kda.head_dim), words.PAPER_NOTES)

    # lazy: its formulas are LaTeX, and a first run that sends any makes the browser load KaTeX (~260 kB of script)
    # before the animation draws
    with lazy_expander(words.RULE_TITLE[LEVEL], key="kda_x_rule") as is_open:
        if is_open:
            st.markdown(words.rule(LEVEL, panels.GATED_DELTA_RULE))

    with lazy_expander("(a) The decay: one factor per key channel, per token", key="kda_x_decay_one_factor_per") as is_open:
        if is_open:
            shown = panels.decay_panel(res, head, live)
            st.plotly_chart(shown.figure, width="stretch")
            explain(shown.text)
            show_code(decay_heatmap)
    with lazy_expander("(b) The state's size over time", key="kda_x_b_state_s_size") as is_open:
        if is_open:
            shown = panels.norm_panel(res, head, live)
            st.plotly_chart(shown.figure, width="stretch")
            explain(shown.text)
    with lazy_expander("(f) The bounded decay: what e⁻⁵ per token means for memory", key="kda_x_bounded_decay") as is_open:
        if is_open:
            shown = panels.bounded_decay_panel(float(np.log(res["a"]).min()), LITE, get_preset("kimi-k3"))
            st.plotly_chart(shown.figure, width="stretch")
            explain(shown.text)
            show_code(memory.decay_memory)


state_panel()


@st.fragment
def memory_panel() -> None:
    with lazy_expander("Memory for decoding vs context length: a fixed state against a growing cache", key="kda_x_memory_decoding_context_length") as is_open:
        if is_open:
            url_state("kda_preset", "kimi-linear-48b-a3b", choices=list(panels.MEMORY_PRESETS))
            url_state("kda_mem_heads", 0, choices=panels.MEMORY_HEADS)
            url_state("kda_mem_head_dim", 0, choices=panels.MEMORY_HEAD_DIMS)
            c1, c2, c3 = st.columns(3)
            c1.selectbox("model", list(panels.MEMORY_PRESETS), key="kda_preset")
            c2.selectbox("KDA heads", panels.MEMORY_HEADS, key="kda_mem_heads", format_func=panels.own_or)
            c3.selectbox("KDA head dim", panels.MEMORY_HEAD_DIMS, key="kda_mem_head_dim", format_func=panels.own_or)
            push_url("kda_preset", "kda_mem_heads", "kda_mem_head_dim")
            shown = panels.memory_panel(st.session_state.kda_preset, st.session_state.kda_mem_heads,
                                        st.session_state.kda_mem_head_dim)
            st.plotly_chart(shown.figure, width="stretch")
            explain(shown.text)
            show_code(memory.memory_vs_context, memory.kda_memory_sentence)


memory_panel()


@st.fragment
def probe_panel() -> None:
    st.subheader("Recall probe: linear attention vs DeltaNet vs Gated DeltaNet vs KDA")
    url_state("kda_probe", False)
    url_state("kda_probe_keys", "aligned", choices=["aligned", "random"])
    url_state("kda_probe_n", 64, lo=1, hi=512)
    url_state("kda_probe_decay", 0.9, lo=0.5, hi=1.0)
    url_state("kda_probe_leak", 0.3, lo=0.0, hi=1.0)
    if st.toggle("run the probe", key="kda_probe"):
        p1, p2, p3, p4 = st.columns(4)
        p1.radio("keys", ["aligned", "random"], key="kda_probe_keys", horizontal=True)
        p2.slider("pairs written n", 1, 512, key="kda_probe_n")
        p3.slider("decay of KDA's fast channels", 0.5, 1.0, step=0.01, key="kda_probe_decay")
        p4.slider("leak of later keys into the slow channels", 0.0, 1.0, step=0.05, key="kda_probe_leak",
                  help="'aligned' keys only: 0 = the fact's channels are never written again")
        n, keys = st.session_state.kda_probe_n, st.session_state.kda_probe_keys
        decay, leak = st.session_state.kda_probe_decay, st.session_state.kda_probe_leak
        with user_errors():
            probe = kda.recall_probe(n, fast_decay=decay, keys=keys, leak=leak)
        ran = panels.probe_evidence(n, decay, keys, leak)
        shown = panels.probe_panel(probe, n, leak, ran)
        st.plotly_chart(shown.figure, width="stretch")
        table(st, pd.DataFrame(panels.probe_rows(probe, n)), default=ran, hide_index=True, width="stretch")
        explain(shown.text)
        show_code(kda.recall_probe)
    push_url("kda_probe", "kda_probe_keys", "kda_probe_n", "kda_probe_decay", "kda_probe_leak")


probe_panel()

PRESET = st.session_state.get("kda_preset", "kimi-linear-48b-a3b")  # the memory section's model
assumptions_block("kda_x_assumptions", f"The hybrid's decode cache per sequence at 1M tokens ({PRESET})",
                  partial(memory.hybrid_cache_at, preset=PRESET), **panels.memory_assumptions())

show_code(naive_kda_matrix, chunk_kda_reference, KimiDeltaAttention.kernel_inputs_reference,
          title="The algorithm as the paper writes it: the recurrence token by token, then chunk-wise (WY/UT transform)")
st.caption(words.KERNEL_NOTE[LEVEL])

try_it("kda")
