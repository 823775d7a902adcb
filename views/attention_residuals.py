"""Attention Residuals: which earlier outputs each sublayer reads (drawn, with the trained lite model's depth weights),
what block grouping saves, and the shipped training experiment's loss curves."""

from functools import partial

import streamlit as st
import torch

from k3lite.base.evidence import derived, measured_here
from k3lite.model.attnres import attnres_cost, block_size_words
from k3lite.analytic.budget import check_budget
from k3lite.model.checkpoint import load_lite_model, with_config
from k3lite.base.tokenizer import MAX_PROMPT_CHARS, encode
from k3lite.panels import attnres as panels
from k3lite.panels.attnres import K3, KIMI_LINEAR, WIDTHS
from k3lite.panels.words import attnres as words
from k3lite.viz.archmap import sources_at
from k3lite.viz.attnres import (block_read_bytes, block_saving_sentence, cost_curves_figure, depth_heatmap_figure,
                                depth_matrix, residual_experiment_claim, residual_experiment_figure)
from k3lite.viz.diagrams import depth_reads, depth_reads_figure
from k3lite.viz.style import fmt_bytes
from views.common import (assumptions_block, compared, explain, lazy_sections, push_url, reset_button, show_code,
                          show_panel, url_state, user_errors)
from views.common import try_it  # the page's practice problems, at its foot
from views.levels import draw_formulas, level


st.title("Attention Residuals")
LEVEL = level()  # the sidebar's *Explain for*: the words change (k3lite/panels/words/attnres.py), the pictures do not
st.markdown(words.question(LEVEL))
pair = compared()


@st.cache_resource(show_spinner="Loading the trained lite model…")
def base_model():
    return load_lite_model()


# each entry is a model sharing the base model's weights (with_config: ~2 MB of RSS each, not 29): room for every mode
# and block size (standard, full, block S = 1..16), so a class moving the slider stops rebuilding them (0.1-0.2 s each,
# the largest share of this page's reruns)
@st.cache_resource(show_spinner=False, max_entries=18)
def variant(mode: str, block: int):
    model, _ = base_model()
    if (mode, block) == (model.cfg.attn_res, model.cfg.attn_res_block_size):
        return model
    return with_config(model, attn_res=mode, attn_res_block_size=block)


@st.cache_data(show_spinner="Running the model…", max_entries=64)
def depth_trace(prompt: str, mode: str, block: int):
    ids = encode(prompt)
    with torch.inference_mode():
        # the depth view: the page reads only the depth weights, and a full trace of a 2,000-character prompt is
        # ~139 MB (MLA attention maps grow as T^2): 64 of those were this cache's bound
        return variant(mode, block)(torch.tensor([ids]), trace=True).trace.depth_view()


model, warning = base_model()
if warning:
    st.warning(warning)
N_SUB = 2 * model.cfg.n_layers  # sublayers; N_SUB itself is the final mix before the LM head

url_state("ar_prompt", "def add(a, b):\n    return a + b")
url_state("ar_mode", "block", choices=["standard", "full", "block"])
url_state("ar_block", 4, lo=1, hi=16)
url_state("ar_reader", N_SUB, lo=0, hi=N_SUB)
picture, controls = st.columns([3, 1])  # the diagram first: on a phone columns stack, controls below it
with controls:
    st.radio("residual", ["standard", "full", "block"], key="ar_mode", horizontal=True)
    st.slider("block size S (sublayers per block)", 1, 16, key="ar_block", disabled=st.session_state.ar_mode != "block")
    st.slider(f"reading sublayer (0 = layer 0's mixer, {N_SUB} = the final mix)", 0, N_SUB, key="ar_reader")
    st.text_area(f"prompt (up to {MAX_PROMPT_CHARS} characters; any unicode)", key="ar_prompt",
                 max_chars=MAX_PROMPT_CHARS, height=90)
    reset_button("ar_")
push_url("ar_mode", "ar_block", "ar_reader")
mode, block, reader = st.session_state.ar_mode, st.session_state.ar_block, st.session_state.ar_reader
with user_errors():
    # checked on every run, outside the cache: a budget lowered after a cached run still refuses (and refuses before
    # building the variant or running it)
    check_budget(model.cfg.with_(attn_res=mode, attn_res_block_size=block), 1, len(encode(st.session_state.ar_prompt)))
    trace = depth_trace(st.session_state.ar_prompt, mode, block)
    reads = depth_reads(model.cfg.n_layers, mode, block, reader, [lt.mixer_type for lt in trace.layers])
weights = depth_matrix(trace)[reader][: len(reads.sources)] if mode != "standard" else None
# the depth weights come from running the shipped checkpoint on the prompt, here; a standard residual has none to run
LIVE = measured_here("live on this server: the shipped lite checkpoint (assets/lite.safetensors) on the prompt, "
                     f"{mode} residual, S = {block}: model(ids, trace=True).trace.depth_view()")
if pair is not None:  # K3's residual beside the compared model's at full scale; the live view under it
    show_panel(words.compare(LEVEL, panels.compare_panel(pair), pair), "ar_compare", container=picture)
reads_panel, reading = panels.reads_panel(reads, weights, mode, block, reader,
                                          LIVE if mode != "standard" else derived(depth_reads))
show_panel(reads_panel, "ar_reads", container=picture)
st.markdown(words.reading(LEVEL, reading, reads_panel, reads, weights, reader))
trained = (model.cfg.attn_res, model.cfg.attn_res_block_size)
if mode != trained[0] or (mode == "block" and block != trained[1]):
    st.caption(f"The checkpoint was trained with {trained[0]} S = {trained[1]}; this view reuses its weights under "
               "another residual, not retrained.")
show_code(depth_reads, sources_at, depth_reads_figure)
with st.expander(words.HOW_TITLE[LEVEL]):
    st.markdown(words.HOW[LEVEL])
if LEVEL == "paper":
    draw_formulas("The equations, each symbol in the code", words.formulas(len(reads.sources), model.cfg.d_model, reader,
                  block), words.PAPER_NOTES)


@st.fragment
def heatmap_panel() -> None:
    """Every sublayer's depth weights at once; the token choice reruns only this panel."""
    st.subheader("Every sublayer's depth weights at once")
    tok = st.radio("weights of", ["mean over the prompt's tokens", "last token"], horizontal=True, key="ar_token")
    show_panel(panels.heatmap_panel(trace, not tok.startswith("mean"), mode, block, LIVE), "ar_heatmap")
    show_code(depth_matrix, depth_heatmap_figure)
    with st.expander("What to notice in the heatmap"):
        explain(
            "Each row sums to 1 (full/block): a sublayer's input is a convex mix of earlier outputs, not their sum. "
            "Rows that put weight far from the diagonal are sublayers that reach back past their neighbours, often to "
            "the embedding. With S = 1 block equals full; with one block (S ≥ 16 here) the only sources are the "
            "embedding and the running sum. Standard shows the plain sum's coefficients (all 1).")


SECTIONS = ["Every sublayer's weights", "Does it train better?", "What blocks save at scale"]
tab_heatmap, tab_train, tab_cost = lazy_sections(SECTIONS, key="ar_section")  # none drawn until picked
with tab_heatmap as is_open:
    if is_open:
        heatmap_panel()

with tab_train as is_open:
    if is_open:
        st.subheader("Does it train better? The shipped experiment")
        experiment = panels.experiment_panel()
        if experiment:
            show_panel(experiment[0], "ar_experiment")
            show_code(residual_experiment_figure, residual_experiment_claim)
            with st.expander("How the experiment was run"):
                st.caption(experiment[1])
        else:
            st.info("No shipped residual experiment in assets/ (lab_attnres*.json); `python -m k3lite.experiments.train --task attnres` "
                    "makes one.")


@st.fragment
def cost_panel() -> None:
    """What block grouping saves as models grow: its own two controls rerun only this panel."""
    st.subheader("What block grouping saves as models grow")
    url_state("ar_d", K3.d_model, choices=WIDTHS)
    url_state("ar_S", K3.attn_res_block_size, lo=1, hi=64)  # K3's config: 12 layers = 24 sublayers
    d1, d2 = st.columns(2)
    d1.select_slider("d_model", WIDTHS, key="ar_d", help=f"{KIMI_LINEAR.d_model} = Kimi Linear 48B, {K3.d_model} = K2 / K3")
    d2.slider("block size S for the model (sublayers)", 1, 64, key="ar_S",
              help=f"K3's released config.json states its block size in layers (attn_res_block_size "
                   f"{K3.attn_res_block_layers:g}); ours counts sublayers (2 per layer): "
                   f"{block_size_words(K3.attn_res_block_size)}")
    push_url("ar_d", "ar_S")
    d, S = st.session_state.ar_d, st.session_state.ar_S
    read, live, saving, details = panels.cost_panels(d, S)
    e1, e2 = st.columns(2)
    show_panel(read, "ar_cost_read", container=e1)
    show_panel(live, "ar_cost_live", container=e2)
    st.markdown(saving)
    show_code(attnres_cost, cost_curves_figure, block_saving_sentence)
    with st.expander("The numbers in full, and what the paper reports"):
        st.markdown(details)
        explain("Full AttnRes grows quadratically in depth (sublayer l reads l vectors), block grows like L²/S, "
                "standard linearly; the memory a token must keep drops from 2L + 1 to 2L/S + 1 vectors.")
    numbers, also = panels.assumptions(d, S)
    assumptions_block("ar_x_assumptions", f"Block AttnRes's reads per token at K3's {K3.n_layers} layers",
                      partial(block_read_bytes, n_layers=K3.n_layers), numbers, fmt_bytes, also=also)


with tab_cost as is_open:
    if is_open:
        cost_panel()

try_it("attention_residuals")
