"""Serving: architecture to $ per million tokens. Widgets and layout; k3lite/panels/serving*.py compute the rest."""
from functools import partial

import streamlit as st

from k3lite.analytic.hardware import CUSTOM_FIELDS, gpu_label
from k3lite.analytic.memory import RELEASED_K3_FORMATS
from k3lite.analytic.serving import K3_PRESET, PREFILL_CHUNK_TOKENS, USD_PER_GPU_HOUR
from k3lite.analytic.serving.deployment import CACHE_FORMATS, CACHE_SOURCE, PRICE_URL_KEYS
from k3lite.analytic.serving.export import scenario_link
from k3lite.analytic.serving.frontier import FRONTIER_CACHES, FRONTIER_TP, INTERACTIVE_TOKENS_PER_USER
from k3lite.panels import serving as P
from k3lite.panels import serving_sections as S
from views.common import (
    assumptions_block, compared, draw_items, evidence_columns, fill_from, kept_editor, lazy_expander, metric, my_gpu,
    push_url, reset_button, section_errors, show_code, show_panel, try_it, url_state, user_errors,
)

PRESETS, FORMATS, SPEC_DEFAULTS = P.PRESETS, P.FORMATS, P.spec_defaults(P.PRESETS)  # the model's own speculation


st.title("Serving: from architecture to $ per million tokens")
st.markdown("**What does a token of K3 cost to serve, on which GPU, at the speed a user wants?**")
reset_button("sv_")
st.expander("How the price of a token is computed").markdown(P.HOW)
url_state("sv_preset", K3_PRESET, choices=PRESETS)
MY_GPU, my_error = my_gpu()  # your own GPU: its numbers travel in the URL like every other input
url_state("sv_gpu", "GB300 NVL72", choices=P.gpu_choices(MY_GPU))
if st.session_state.sv_gpu not in P.gpu_choices(MY_GPU):  # your GPU's numbers changed, or it was switched off
    st.session_state.sv_gpu = MY_GPU or "GB300 NVL72"
url_state("sv_gpus", 64, lo=1, hi=1024)
url_state("sv_ep", 64, lo=1, hi=1024)
url_state("sv_tp", 1, lo=1, hi=64)
url_state("sv_batch", 0, lo=0, hi=100_000)
url_state("sv_experts", RELEASED_K3_FORMATS["routed_experts"], choices=FORMATS)  # as K3 ships: MXFP4 experts,
url_state("sv_rest", RELEASED_K3_FORMATS["attention"], choices=FORMATS)  # bf16 everything else (config.json)
url_state("sv_context", 32768, choices=S.CONTEXTS)
url_state("sv_overlap", True)
url_state("sv_spec", False)
url_state("sv_bound", False)
url_state("sv_draft", SPEC_DEFAULTS[st.session_state.sv_preset]["sv_draft"], lo=1, hi=32)  # the model's own
url_state("sv_accept", SPEC_DEFAULTS[st.session_state.sv_preset]["sv_accept"], lo=1.0, hi=33.0)  # speculation
url_state("sv_speed", INTERACTIVE_TOKENS_PER_USER, lo=1.0, hi=1000.0)
url_state("sv_t_speed", INTERACTIVE_TOKENS_PER_USER, lo=1.0, hi=1000.0)  # the target's four: its expander draws them
for key, v, lo, hi in P.SHAPE_INPUTS:  # the one request shape every price is for
    url_state(key, v, lo=lo, hi=hi)
url_state("sv_t_users", 1000, lo=1, hi=100_000_000)
pair = compared(base=st.session_state.sv_preset)
fig_col, ctl = st.columns([3, 1])  # the chart first: on a phone columns stack, controls below it
ctl.selectbox("model", PRESETS, key="sv_preset", on_change=partial(fill_from, "sv_preset", SPEC_DEFAULTS))
ctl.select_slider("context per sequence (tokens)", S.CONTEXTS, key="sv_context")
ctl.number_input("interactive speed (tokens/s per user)", 1.0, 1000.0, step=5.0, key="sv_speed",
                 help="our assumption of a typical interactive speed: 2.5x DeepSeek's 20-22 tokens/s average")
ctl.number_input("request: input tokens", 1, 10_000_000, step=1024, key="sv_t_in", help=P.SHAPE_HELP)
ctl.number_input("request: output tokens", 2, 1_000_000, step=256, key="sv_t_out")
ctl.number_input("request: share of the input from a prefix cache", 0.0, 0.99, step=0.05, key="sv_cached")
ctl.toggle("speculative decoding", key="sv_spec", help="MTP layer where the model ships one, else a draft model")
ctl.toggle("roofline bound instead of the prediction", key="sv_bound",
           help="the bound assumes every step runs at the HBM, FLOP or wire roofline; measured runs are slower")
if st.session_state.sv_spec:
    ctl.number_input("draft tokens per step", 1, 32, key="sv_draft")
    ctl.number_input("acceptance (tokens per step)", 1.0, 33.0, step=0.1, key="sv_accept")
# the expanders below draw their inputs only while open; each input is seeded from and mirrored to the URL
for g, key in PRICE_URL_KEYS.items():  # the one price table: frontier, deployment and the cost page's physics row
    url_state(key, float(USD_PER_GPU_HOUR[g][0]), lo=0.1, hi=999.0)
with ctl, lazy_expander("GPU-hour prices ($)", key="serving_x_gpu_hour_prices") as is_open:
    for g, key in PRICE_URL_KEYS.items() if is_open else ():
        st.number_input(g, 0.1, 999.0, step=0.1, key=key, help=f"default {USD_PER_GPU_HOUR[g][0]:g}: "
                        f"{USD_PER_GPU_HOUR[g][1]}. A value you type is yours, and every panel and the cost page use it")
prices = {g: float(st.session_state[key]) for g, key in PRICE_URL_KEYS.items()}
with ctl, lazy_expander("Your own GPU", key="serving_x_my_gpu") as is_open:
    if is_open:
        st.toggle("search it too (and offer it to your deployment)", key="sv_my_on")
        for f, what, *_ , lo, hi in CUSTOM_FIELDS:
            st.number_input(what, float(lo), float(hi), step=1.0 if f == "nvlink_domain" else None, key=f"sv_my_{f}")
if my_error:
    ctl.error(f"⚠️ Your GPU: {my_error}")
url_state("sv_formats", list(P.DEFAULT_FORMATS), choices=list(P.FORMAT_KEYS))
url_state("sv_tps", [str(t) for t in FRONTIER_TP], choices=[str(t) for t in FRONTIER_TP])
url_state("sv_caches", list(FRONTIER_CACHES), choices=list(CACHE_FORMATS))
with ctl, lazy_expander("What the frontier searches", key="serving_x_search") as is_open:
    if is_open:
        st.multiselect("weight formats", list(P.FORMAT_KEYS), key="sv_formats", format_func=P.FORMAT_KEYS.get,
                       help="K3 ships MXFP4 experts + bf16 rest; the others are re-quantisations")
        st.multiselect("attention TP (1 = data-parallel attention)", [str(t) for t in FRONTIER_TP], key="sv_tps")
        st.multiselect("MLA cache format", list(CACHE_FORMATS), key="sv_caches", help=CACHE_SOURCE)
ss = st.session_state
SEARCH = P.search(ss.sv_formats, ss.sv_tps, ss.sv_caches, MY_GPU)
with lazy_expander("Your deployment: GPU, parallelism, formats, batch (sections 1-4 below)",
                   key="serving_x_your_deployment") as is_open:
    if is_open:
        c1, c2, c3, c4 = st.columns(4)
        c1.selectbox("GPU", P.gpu_choices(MY_GPU), key="sv_gpu", format_func=gpu_label)
        c1.number_input("GPUs per replica", 1, 1024, key="sv_gpus")
        c2.number_input("expert parallel (EP)", 1, 1024, key="sv_ep")
        c2.number_input("tensor parallel (TP) of attention", 1, 64, key="sv_tp")
        c3.selectbox("routed experts stored as", FORMATS, key="sv_experts")
        c3.selectbox("everything else stored as", FORMATS, key="sv_rest")
        c4.number_input("batch per GPU (0 = the most that fit)", 0, 100_000, key="sv_batch")
        c4.toggle("overlap communication with compute", key="sv_overlap")
push_url("sv_my_on", *(f"sv_my_{f}" for f, *_ in CUSTOM_FIELDS), "sv_formats", "sv_tps", "sv_caches", "sv_preset",
         "sv_gpu", "sv_gpus", "sv_ep", "sv_tp", "sv_experts", "sv_rest", "sv_context", "sv_batch", "sv_overlap", "sv_spec",
         "sv_draft", "sv_accept", "sv_speed", "sv_bound", "sv_t_speed", "sv_t_in", "sv_t_out", "sv_cached", "sv_t_users",
         *PRICE_URL_KEYS.values())
NAME, CONTEXT, SPEED = ss.sv_preset, int(ss.sv_context), float(ss.sv_speed)
SHAPE = P.Shape(int(ss.sv_t_in), int(ss.sv_t_out), float(ss.sv_cached))
with user_errors():  # a speculation the model cannot run is every panel's input: it stops the page
    spec = P.speculation(ss.sv_spec, ss.sv_draft, ss.sv_accept, NAME)
# the deployment's own errors stay in its own panel: the frontier and the verdict do not depend on it
d = P.deployment(NAME, ss.sv_gpu, ss.sv_gpus, ss.sv_ep, ss.sv_tp, ss.sv_experts, ss.sv_rest, CONTEXT, ss.sv_overlap,
                 prices, spec, ss.sv_batch, SHAPE)
with user_errors():
    view = P.frontier_view(NAME, SHAPE, prices, spec, bool(ss.sv_bound), SEARCH, SPEED, pair)
first = [(P.prediction_check_panel(), "sv_check"), (view.panel, "sv_frontier")]  # compared: the frontier first
for panel, key in first if pair is None else first[::-1]:
    show_panel(panel, key, container=fig_col)
if d.step is None:
    fig_col.error(f"Your deployment ({d.layout}): {d.error}", icon="⚠️")
else:
    show_panel(P.deployment_panel(d), "sv_deployment", container=fig_col)
show_code(*P.CODE)
with lazy_expander("What the prediction fits and assumes, run by run", key="serving_x_prediction_terms") as is_open:
    if is_open:
        draw_items(P.prediction_terms(), "sv_terms")
with lazy_expander("Each GPU at this speed, and where the prices come from", key="serving_x_gpu_speed_prices") as is_open:
    if is_open:
        draw_items(P.per_gpu(view.frontier, SEARCH, SPEED, spec, NAME), "sv_per_gpu")
        frame, config = evidence_columns(S.YOUR_PROVIDER_ROWS, S.YOUR_PROVIDER_EV)  # the editor is drawn under the chart
        yours, bad = S.your_providers(kept_editor(frame.to_dict("records"), "sv_providers", draw=False))
        draw_items(S.providers(view.frontier, view.verdict.winner, SPEED, yours, bad), "sv_providers")
        kept_editor(frame.to_dict("records"), "sv_providers", draw=True, hide_index=True, column_config=config)
TARGET_IN = S.target_inputs(ss.sv_t_speed, ss.sv_t_users, SHAPE)
tgt, target_error = S.target(d, **TARGET_IN)
with lazy_expander("Solve for my target (users, speed)", key="serving_x_solve") as is_open:
    if is_open and d.step is None:
        st.info(P.NOT_RUN)
    elif is_open:
        t1, t4 = st.columns(2)  # the request shape is the page's, beside the chart
        t1.number_input("tokens/s per user", 1.0, 1000.0, step=5.0, key="sv_t_speed")
        t4.number_input("users online at once", 1, 100_000_000, step=100, key="sv_t_users")
        if target_error:
            st.error(f"⚠️ {target_error}")
        else:
            draw_items(S.target_section(d, tgt), "sv_target")
with lazy_expander("Export this scenario", key="serving_x_export") as is_open:
    if is_open:
        link = scenario_link(st.context.url, st.query_params.to_dict())
        as_json, as_csv = S.scenario(d, SPEED, view.verdict.winner, tgt, TARGET_IN, NAME, CONTEXT, link)
        d1, d2 = st.columns(2)
        d1.download_button("scenario as JSON", as_json, "k3lite-serving-scenario.json", "application/json")
        d2.download_button("scenario as CSV", as_csv, "k3lite-serving-scenario.csv", "text/csv")
        st.caption(f"Every value with its unit and evidence class. This link reopens the page on it: {link}")
for label, key, section in (
        ("1. Placement: weights per GPU and what is left for the cache", "serving_x_1_placement_weights_per", S.placement),
        ("2. Capacity: how many sequences fit, by attention design", "serving_x_2_capacity_many_sequences",
         S.capacity_section),
        ("3. One decode step, tokens/s and $ per million output tokens", "serving_x_3_one_decode_step", S.decode)):
    with lazy_expander(label, key=key) as is_open:
        if is_open and d.step is None:
            st.info(P.NOT_RUN)
        elif is_open:
            draw_items(section(d), key)


@st.fragment
def prefill_panel(d: P.Deployment) -> None:
    """Its own two controls rerun only this panel."""
    with lazy_expander("3b. Prefill and decode as separate pools", key="serving_x_3b_prefill_decode_as") as is_open:
        if is_open and d.step is None:
            st.info(P.NOT_RUN)
        elif is_open:
            url_state("sv_pre_ep", 32, lo=1, hi=1024)
            url_state("sv_pre_chunk", PREFILL_CHUNK_TOKENS, lo=256, hi=1_000_000)
            pre_fig, pre_ctl = st.columns([3, 1])
            pre_ctl.number_input("prefill pool: GPUs = EP", 1, 1024, key="sv_pre_ep", help="DeepSeek's inference "
                                 "overview (day 6): prefill units of 32 GPUs (EP32), decode of 144 (EP144)")
            pre_ctl.number_input("prefill batch (tokens per GPU per forward)", 256, 1_000_000, step=1024,
                                 key="sv_pre_chunk", help=f"default 16,384: {P.PREFILL_CHUNK_SOURCE}")
            push_url("sv_pre_ep", "sv_pre_chunk")
            fig, metrics, *rest = S.prefill(d, int(st.session_state.sv_pre_ep), int(st.session_state.sv_pre_chunk))
            draw_items([fig], "sv_prefill_fig", pre_fig)
            for m in metrics:
                metric(pre_ctl, m.label, m.value, m.evidence, help=m.help)
            draw_items(rest, "sv_prefill")


prefill_panel(d)
for label, key, items in (("4. What each choice buys", "serving_x_4_choice_buys", lambda: S.choices(CONTEXT)),
                          ("5. Checked against published serving figures", "serving_x_5_checked_against_published",
                           lambda: S.published(CONTEXT, S.k3_acceptance(NAME, float(ss.sv_accept))))):
    with lazy_expander(label, key=key) as is_open:
        if is_open:
            with section_errors():  # a section's error stays in it: the sections after it still draw
                draw_items(items(), key)
block = P.page_assumptions(view, NAME, SHAPE, prices, spec, SEARCH, SPEED)  # None: no setup reaches the speed
if block is not None:
    assumptions_block("serving_x_assumptions", block.headline_name, block.headline, block.assumptions, block.fmt,
                      also=block.also)
try_it("serving")
