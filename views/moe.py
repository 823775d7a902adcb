"""Stable LatentMoE & routing: which experts each token visits, how balancing evens the load, what latent saves.

Thin page: widgets -> one panel per picture (k3lite/panels/moe.py, k3lite/panels/moe_routing.py) -> show it. The
live computations and their server-wide caches are in k3lite/viz/moe_live.py."""
from dataclasses import replace
from functools import partial

import streamlit as st

from k3lite.analytic.latent import latent_cost_per_token, wire_bytes_headline
from k3lite.base.evidence import derived
from k3lite.analytic.placement import K3_SCALE_EXPERTS, chance_violation, gpu_view
from k3lite.experiments.moe_balance import run_balance
from k3lite.experiments.moe_demo import MAX_PROMPT_BYTES, STREAM_BYTES, fit_balancers, prompt_demo
from k3lite.interconnect import deployment_bytes
from k3lite.model.config import BALANCING_METHODS
from k3lite.model.nn import glu_curves, situ_glu
from k3lite.panels import moe as panels
from k3lite.panels import moe_routing as routing
from k3lite.panels.moe import K3, K3_RATIO, LITE, RATIOS
from k3lite.panels.words import moe as words
from k3lite.viz import moe_live as live
from k3lite.viz.diagrams import latent_path, latent_path_figure
from k3lite.viz.moe import (METHOD_LABELS, activation_rows, gpu_heatmap, latent_tradeoff, load_bars, load_histogram,
                            routing_heatmap, violation_curves, violation_vs_updates)
from k3lite.viz.style import fmt_bytes
from views.common import (assumptions_block, compared, explain, lazy_expander, lazy_sections, metric, push_url,
                          reset_button, show_code, show_panel, table, url_state, user_errors)
from views.common import try_it  # the page's practice problems, at its foot
from views.levels import draw_formulas, level

MOE_LAYERS = [i for i, kind in enumerate(LITE.ffn_types()) if kind == "moe"]

st.title("Stable LatentMoE & routing")
LEVEL = level()  # the sidebar's *Explain for*: the words change (k3lite/panels/words/moe.py), the pictures do not
st.markdown(words.question(LEVEL))
pair = compared()

url_state("moe_experts", K3.moe.n_routed_experts, lo=8, hi=896)  # the page opens at K3's shape (config.json)
url_state("moe_top_k", K3.moe.top_k, lo=1, hi=32)
url_state("moe_shared", K3.moe.n_shared_experts, lo=0, hi=4)
url_state("moe_latent", K3_RATIO, choices=list(RATIOS))
url_state("moe_balancing", "quantile", choices=list(BALANCING_METHODS))
url_state("moe_prompt", "The cat sat on the mat, and 42 dogs barked at 3.14 birds.")
url_state("moe_layer", 4, choices=MOE_LAYERS)

picture, controls = st.columns([3, 1])  # the diagram first: on a phone columns stack, controls below it
with controls:
    st.slider("routed experts E", 8, 896, key="moe_experts", help="K3: 896")
    st.slider("top-k (experts per token)", 1, 32, key="moe_top_k", help="K3: 16")
    st.slider("shared experts (always on, full d)", 0, 4, key="moe_shared", help="K3: 2")
    st.select_slider("latent ratio l / d (1 = classic MoE)", list(RATIOS), key="moe_latent",
                     help="Kimi K3: 3584 / 7168 = 1/2 (config.json)")
    st.selectbox("balancing method", list(BALANCING_METHODS), key="moe_balancing",
                 format_func=METHOD_LABELS.get)
    reset_button("moe_")
push_url("moe_experts", "moe_top_k", "moe_shared", "moe_latent", "moe_balancing")

E, K, SHARED = st.session_state.moe_experts, st.session_state.moe_top_k, st.session_state.moe_shared
RATIO, METHOD = RATIOS[st.session_state.moe_latent], st.session_state.moe_balancing

with user_errors():  # the mechanism at K3 width: analytic, so it answers every slider at once
    k3_moe = panels.k3_width_moe(E, K, SHARED, RATIO)
    path = panels.path_panel(k3_moe, st.session_state.moe_latent)
if pair is not None:  # the two configs at full scale first; your sliders' path under them
    with user_errors():
        balance = routing.shipped_balance() if pair.other.moe.balancing != pair.k3.moe.balancing else None
    show_panel(words.compare(LEVEL, panels.compare_panel(pair, balance), pair), "moe_compare", container=picture)
show_panel(replace(path, sentences=()), "moe_path", container=picture)
show_panel(replace(path, figure=None, sentences=words.path_said(LEVEL, path, st.session_state.moe_latent)), "moe_path_said")
show_code(latent_path, latent_path_figure)
with st.expander(words.HOW_TITLE[LEVEL]):
    st.markdown(words.how(LEVEL))
if LEVEL == "paper":
    draw_formulas("The equations, each symbol in the code", words.formulas(k3_moe, st.session_state.get("moe_batch", 16)), words.PAPER_NOTES)


live.warm_stream_states()  # once per server, in the background (k3lite.viz.moe_live)
model, warning = live.lite_model()
if warning:
    st.warning(warning)
D = model.cfg.d_model


@st.fragment
def routing_panels() -> None:
    """(a) and (b): the prompt and the layer are this panel's own controls, so moving them reruns only it."""
    st.subheader("(a) Which experts each token of the prompt visits")
    c6, c7 = st.columns([4, 1])
    c6.text_input(f"prompt (at most {MAX_PROMPT_BYTES} bytes of UTF-8; one token per byte)", key="moe_prompt")
    c7.selectbox("hidden states from layer", MOE_LAYERS, key="moe_layer", help="MoE layers of the trained lite model")
    push_url("moe_prompt", "moe_layer")
    prompt, layer = st.session_state.moe_prompt, st.session_state.moe_layer
    with user_errors():
        cfg = routing.live_cfg(E, K, SHARED, RATIO, METHOD, D)
        demo_cfg = routing.demo_cfg(cfg, D)
        if live.demo_ready(demo_cfg, prompt, layer):
            result = live.demo(demo_cfg, prompt, layer)
        else:
            with st.spinner(f"Fitting each balancing method for {E} experts, top-{K}, then routing the prompt…"):
                result = live.demo(demo_cfg, prompt, layer)
    ran = routing.live_evidence(demo_cfg, prompt, layer)
    for col, m in zip(st.columns(4), routing.routing_metrics(result, METHOD, cfg, D, ran)):
        metric(col, m.label, m.value, m.evidence, help=m.help)
    if E > K3_SCALE_EXPERTS:  # a tokens x experts heatmap is hairline static here: show where the experts live
        url_state("moe_gpus", 64, choices=routing.GPU_CHOICES)
        st.select_slider("GPUs the experts are spread over (expert parallelism)", routing.GPU_CHOICES, key="moe_gpus")
        push_url("moe_gpus")
        show_panel(routing.where_panel(result, METHOD, E, K, st.session_state.moe_gpus, ran), "moe_gpu_map")
        show_code(gpu_view, gpu_heatmap)
    else:
        show_panel(routing.heatmap_panel(result, METHOD, E, ran), "moe_heatmap")
        show_code(prompt_demo, routing_heatmap)
    with st.expander("Where these hidden states and routers come from"):
        st.caption(routing.origin_note(result, METHOD, layer, D))
    with lazy_expander(f"The trained model's own router at layer {layer} ({LITE.moe.n_routed_experts} experts, "
                     f"top-{LITE.moe.top_k}, {LITE.moe.balancing} balancing)", key="moe_x_trained_model_s_own") as is_open:
        if is_open:
            show_panel(routing.own_router_panel(prompt, layer, result.labels), "moe_own_router")

    st.subheader("(b) Tokens per expert under each method, same router, same number of updates, held-out tokens")
    show_panel(routing.load_panel(result, E, K, ran), "moe_loads")
    st.markdown(live.violation_reading(result, METHOD, METHOD_LABELS))  # a sentence built from the run (ran)
    show_code(fit_balancers, load_histogram if E > K3_SCALE_EXPERTS else load_bars, violation_vs_updates,
              live.violation_reading, chance_violation)
    with st.expander("How (b) was measured, and expert choice for comparison"):
        explain(routing.measured_note(result, E, K, live.demo_is_shipped(demo_cfg, prompt, layer)))
    with lazy_expander("How fast each method evens the load (held-out max-violation after 1 to 64 updates)",
                     expanded=False, key="moe_x_fast_method_evens_load") as is_open:
        if is_open:
            updates, notice = routing.updates_panel(result, METHOD, ran)
            show_panel(updates, "moe_updates")
            st.markdown(notice)


SECTIONS = ["(a)–(b) Routing and balance on a prompt", "(c) Balance during training", "(d) The latent trade-off",
            "(e) Activation ratio", "(f) SiTU-GLU"]
tab_ab, tab_c, tab_d, tab_e, tab_f = lazy_sections(SECTIONS, key="moe_section")  # none drawn until picked
with tab_ab as is_open:
    if is_open:
        routing_panels()

with tab_c as is_open:
    if is_open:
        st.subheader("(c) Max-violation over training steps (small MoE trained on a skewed stream)")
        with user_errors():  # ServerBusy while another heavy job runs
            training, rows, note = routing.training_panel()
        show_panel(training, "moe_training")
        show_code(run_balance, violation_curves)
        with lazy_expander("(c) in numbers: the runs' table and how they were made", key="moe_x_c_numbers_runs_table") as is_open:
            if is_open:
                table(st, rows, default=training.evidence, hide_index=True, width="stretch")
                explain(note)

with tab_d as is_open:
    if is_open:
        st.subheader("(d) Bytes on the wire and expert FLOPs per token vs latent ratio, at K3 width")
        with user_errors():
            tradeoff, how = panels.tradeoff_panel(E, K, SHARED, RATIO)
        show_panel(tradeoff, "moe_tradeoff")
        show_code(latent_cost_per_token, deployment_bytes, latent_tradeoff)
        with st.expander("How (d) is computed"):
            explain(how)

with tab_e as is_open:
    if is_open:
        st.subheader("(e) Activation ratio: routed experts a token visits, and a decode step reads")
        url_state("moe_batch", 16, choices=list(panels.STEP_BATCHES))
        st.select_slider("tokens in one decode step (batch B)", panels.STEP_BATCHES, key="moe_batch")
        push_url("moe_batch")
        with user_errors():
            show_panel(panels.touched_panel(E, K, st.session_state.moe_batch), "moe_touched")
        with lazy_expander("The table: K3 and other models' activation ratios (with their sources)", key="moe_x_table_k3_other_models") as is_open:
            if is_open:
                table(st, activation_rows(K, E), {"activation": derived(activation_rows)}, hide_index=True,
                      width="stretch")
        show_code(activation_rows, panels.touched_panel)

with tab_f as is_open:
    if is_open:
        st.subheader("(f) The experts' activation: SiTU-GLU vs SwiGLU")
        situ, where = panels.situ_panel(K3)
        show_panel(situ, "moe_situ")
        show_code(situ_glu, glu_curves)
        with st.expander("What (f) shows, and where K3 uses it"):
            explain(where)

# one place for what the page assumes: the headline is the first screen's bytes on the wire
numbers, also = panels.assumptions(k3_moe, routing.EXPERT_FFN, STREAM_BYTES)
assumptions_block("moe_x_assumptions", "Bytes on the wire per token per MoE layer",
                  partial(wire_bytes_headline, k3_moe, panels.K3_D), numbers, fmt_bytes, also=also)

try_it("moe")
