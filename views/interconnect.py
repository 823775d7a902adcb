"""Interconnect bytes per token: expert-parallel dispatch/combine under three schemes, analytic and measured."""
from functools import partial

import streamlit as st

from k3lite.analytic.ledger import wire_or_hbm
from k3lite.analytic.training import LAYOUTS, SCHEDULES, step_traffic, traffic_rows
from k3lite.base.evidence import derived, measured_elsewhere
from k3lite.base.guards import heavy_work
from k3lite.interconnect import SCHEME_LABELS, SCHEMES, TOPOLOGIES, WIRE_FORMATS, analytic_traffic, compare_presets, \
    deployment_bytes, link_copies, node_limit_sweep
from k3lite.interconnect.deepep import SOURCE as DEEPEP_SOURCE
from k3lite.interconnect.deepep import RDMA_PEAK, comparison_table
from k3lite.interconnect.run import expected_for_spec, format_result, measure, predicted_for_routing
from k3lite.interconnect.sentences import layer_sentence
from k3lite.model.presets import get_preset
from k3lite.panels import interconnect as P
from k3lite.panels import interconnect_training as T
from k3lite.viz.memo import shared_figure
from k3lite.viz.topology import draw_topology, topology_figure
from views.common import (assumptions_block, compared, explain, fill_from, lazy_expander, metric, push_url,
                          reset_button, sentence, show_code, show_panel, table, url_state, user_errors)
from views.common import try_it  # the page's practice problems, at its foot

st.title("Interconnect bytes per token")
st.markdown("**Where do one token's bytes go when its experts live on other GPUs, and which link carries them?**")
reset_button("ic_")

with lazy_expander("What dispatch and combine are, and the three schemes", key="ic_x_intro") as is_open:
    if is_open:
        st.markdown(P.INTRO)
        with st.spinner("Asking the serving model what bounds a decode step…"):
            sentence(P.binds(), derived(wire_or_hbm))

KNOBS = {name: P.preset_knobs(name) for name in P.PRESETS}  # what choosing a preset sets (views.common.fill_from)
url_state("ic_preset", "kimi-k3", choices=P.PRESETS)
pair = compared(base=get_preset(st.session_state.ic_preset))  # the panels rebuild a variant from the sliders' config
url_state("ic_experts", KNOBS[st.session_state.ic_preset]["ic_experts"], lo=8, hi=1024)
url_state("ic_top_k", KNOBS[st.session_state.ic_preset]["ic_top_k"], lo=1, hi=32)
url_state("ic_latent", KNOBS[st.session_state.ic_preset]["ic_latent"], choices=list(P.LATENT))
url_state("ic_dispatch", "fp8", choices=["fp8", "bf16"])
url_state("ic_combine", "bf16", choices=["fp8", "bf16"])
url_state("ic_topology", "multi-node-8x8", choices=list(TOPOLOGIES))
url_state("ic_ep", 64, choices=list(P.EP_CHOICES))
url_state("ic_node_limit", 0, lo=0, hi=8)
url_state("ic_scheme", "normal", choices=list(SCHEMES))


@st.fragment
def training_panel() -> None:
    """One training step's traffic per token: EP forward and backward, pipeline boundaries, DP gradients."""
    url_state("ic_t_layout", "kimi-k3", choices=list(LAYOUTS))
    url_state("ic_t_schedule", "dualpipe", choices=list(SCHEDULES))
    url_state("ic_t_micro", 120, lo=8, hi=256)  # the slider's range: a link outside it falls back
    ctl, fig_col = st.columns([1, 3])
    ctl.selectbox("layout", list(LAYOUTS), key="ic_t_layout", format_func=T.LAYOUT_NAMES.get, help=T.LAYOUT_HELP)
    ctl.selectbox("pipeline schedule", list(SCHEDULES), key="ic_t_schedule", help=T.SCHEDULE_HELP)
    ctl.slider("micro-batches per step", 8, 256, key="ic_t_micro")
    push_url("ic_t_layout", "ic_t_schedule", "ic_t_micro")
    ss = st.session_state
    with st.spinner("Counting one training step's traffic…"):
        lay, variants = T.training_steps(ss.ic_t_layout, ss.ic_t_schedule, int(ss.ic_t_micro))
    if pair is not None:
        show_panel(T.training_pair(lay, pair), "ic_t_pair", container=fig_col)
    show_panel(T.training_main(ss.ic_t_layout, lay, variants), "ic_t_bytes", container=fig_col)
    with lazy_expander(P.SECTIONS["ic_x_training_time"], key="ic_x_training_time") as is_open:
        if is_open:
            step = variants["as configured"]
            table(st, traffic_rows(step), default=derived(step_traffic), hide_index=True, width="stretch")
            for panel, where, key in zip(T.training_detail(lay, step), [*st.columns(2), st], ("time", "bubble", "pp")):
                show_panel(panel, f"ic_t_{key}", container=where)
            show_code(step_traffic, T.bubble_share)
    args, also = T.training_assumptions()
    assumptions_block(*args, also=also)


url_state("ic_mode", "inference", choices=["inference", "training"])
mode = st.segmented_control("what moves", ["inference", "training"], key="ic_mode", help=P.MODE_HELP)
push_url("ic_mode")


@st.fragment
def main_panel() -> None:
    """Controls, the drawn topology, the computed sentences and the panels that read the same settings."""
    ss = st.session_state
    ep_options, ss.ic_ep, e_options, ss.ic_experts, snapped = P.expert_options(ss.ic_topology, ss.ic_ep, ss.ic_experts)
    fig_col, ctl = st.columns([3, 1])  # the drawing first: on a phone columns stack, controls below it
    with ctl:
        st.selectbox("topology", list(TOPOLOGIES), key="ic_topology", format_func=P.TOPOLOGY_NAMES.get,
                     help=P.TOPOLOGY_HELP)
        st.select_slider("EP size (GPUs holding the experts)", ep_options, key="ic_ep")
        st.radio("dispatch scheme", SCHEMES, key="ic_scheme", format_func=SCHEME_LABELS.get)
        st.selectbox("model preset (resets E, top-k, latent)", P.PRESETS, key="ic_preset",
                     on_change=partial(fill_from, "ic_preset", KNOBS))
        st.select_slider("routed experts E (multiples of the EP size)", e_options, key="ic_experts")
        if snapped is not None:
            st.info(P.snap_note(snapped, ss.ic_ep, ss.ic_experts, e_options[0]))
        st.slider("top-k (experts per token)", 1, 32, key="ic_top_k")
        # closed, its four controls are not drawn (their values live in the URL state): a first screen of seven
        # controls instead of eleven, each of which the browser lays out before the picture
        with lazy_expander("wire format and node limit", key="ic_x_wire") as is_open:
            if is_open:
                st.select_slider("latent ratio (latent_dim / d_model)", list(P.LATENT), key="ic_latent")
                st.radio("dispatch precision", ["fp8", "bf16"], key="ic_dispatch", horizontal=True,
                         help=WIRE_FORMATS["fp8"].description)
                st.radio("combine precision", ["fp8", "bf16"], key="ic_combine", horizontal=True)
                st.slider("node limit M (domains per token; 0 = the model's own routing rule only)", 0, 8,
                          key="ic_node_limit")
    push_url("ic_preset", "ic_experts", "ic_top_k", "ic_latent", "ic_dispatch", "ic_combine", "ic_topology",
             "ic_ep", "ic_node_limit", "ic_scheme")
    cfg, dep, t, hit_gpus, why = P.settings(ss.ic_preset, ss.ic_experts, ss.ic_top_k, ss.ic_latent, ss.ic_topology,
                                            ss.ic_ep, ss.ic_dispatch, ss.ic_combine, ss.ic_node_limit, ss.ic_scheme)
    if why:  # a setting the model cannot route stops this part only
        fig_col.error(f"⚠️ {why}")
    if t is not None:
        if pair is not None:
            show_panel(P.wire_pair(cfg, pair, dep), "ic_pair", container=fig_col)
        fig_col.plotly_chart(shared_figure(topology_figure, cfg, dep, evidence=derived(draw_topology)),
                             width="stretch")
        fig_col.markdown(layer_sentence(t, hit_gpus))
        show_code(draw_topology, deployment_bytes, link_copies)
        with lazy_expander(P.SECTIONS[key := "interconnect_x_bytes_per_layer_per"], key=key) as is_open:
            if is_open:
                for col, (label, value) in zip(st.columns(4) + st.columns(2), P.layer_metrics(t, dep)):
                    metric(col, label, value, derived(analytic_traffic))
                show_panel(P.bytes_panel(t, dep), "ic_bytes")
                show_code(analytic_traffic)
    with lazy_expander(P.SECTIONS[key := "interconnect_x_node_limited_routing_nic"], key=key) as is_open:
        if is_open:
            if why := P.sweep_blocker(dep, TOPOLOGIES[ss.ic_topology]):
                st.info(why)
            elif not st.toggle(P.SWEEP_TOGGLE, key="ic_sweep"):
                st.caption("Off by default, so that moving a control above does not wait for it.")
            else:
                with st.spinner("Sampling node-limited routing…"):
                    show_panel(P.node_limit_panel(cfg, dep, ss.ic_topology), "ic_sweep_fig")
                show_code(node_limit_sweep)
    with lazy_expander(P.SECTIONS[key := "interconnect_x_model_comparison"], key=key) as is_open:
        if is_open:
            with user_errors():
                panels, rows, said = P.three_models(ss.ic_dispatch, ss.ic_combine, ss.ic_node_limit, ss.ic_scheme)
            for col, (name, panel) in zip(st.columns(2), panels.items()):
                show_panel(panel, f"ic_cmp_{name}", container=col)
            table(st, rows, {"dim on wire": P.CONFIGS, "MoE layers": P.CONFIGS}, default=derived(compare_presets),
                  hide_index=True, width="stretch")  # full width: the headers were cut
            sentence(said.text, *said.evidence)
            show_code(compare_presets)
    if t is not None:
        args, also = P.inference_assumptions(cfg, dep, ss.ic_preset)
        assumptions_block(*args, also=also)


(training_panel if mode == "training" else main_panel)()

with lazy_expander("Against DeepEP's published numbers", key="interconnect_x_against_deepep_s_published") as is_open:
    if is_open:
        rows = comparison_table()
        table(st, rows, dict.fromkeys(P.DEEPEP_THEIRS, measured_elsewhere(DEEPEP_SOURCE)),
              default=derived(comparison_table), hide_index=True, width="stretch")
        explain(P.deepep_note(rows, DEEPEP_SOURCE, RDMA_PEAK))
        show_code(comparison_table)


@st.fragment
def measure_panel() -> None:
    """A real expert-parallel layer on gloo processes: the expectation at once, progress, then the measurement."""
    st.subheader("Measure it: a real expert-parallel layer on this server")
    with st.expander("How the measurement works"):
        st.markdown(P.MEASURE_HOW)
    k1, k2_, k3_, k4, k5 = st.columns(5)
    ranks = k1.radio("ranks (processes)", [2, 4], index=0, horizontal=True, key="ic_m_ranks")
    tokens = k2_.slider("tokens per rank", 8, 64, 32, step=8, key="ic_m_tokens")
    fmt = k3_.radio("precision", ["fp32", "bf16", "fp8"], horizontal=True, key="ic_m_fmt", help=P.FORMAT_HELP)
    m_scheme = k4.selectbox("scheme", SCHEMES, index=1, key="ic_m_scheme")
    limit = k5.checkbox("node-limited: 1 pretend node per token", key="ic_m_limit", help=P.LIMIT_HELP)
    if st.button("Measure it", type="primary", key="ic_m_go"):
        with user_errors(), st.status("Measuring…", expanded=True) as status:
            spec = P.measure_spec(ranks, tokens, fmt, m_scheme, limit)
            st.write(P.expected_note(spec, expected_for_spec(spec)))  # known at once: shown first
            bar = st.progress(0.0, text="waiting for a free slot")
            with heavy_work("the measured gloo run", timeout_s=5.0):
                try:
                    st.session_state.ic_measured = measure(spec, progress=lambda f, msg: bar.progress(f, text=msg))
                except (RuntimeError, TimeoutError) as e:
                    status.update(label="failed", state="error")
                    st.error(f"The measured run failed and its workers were stopped: {e}")
                    st.stop()
            status.update(label=f"Measured in {st.session_state.ic_measured.wall_s:.1f} s", state="complete",
                          expanded=False)
    if (res := st.session_state.get("ic_measured")) is not None:
        show_panel(P.measured_panel(res), "ic_measured_fig")
        with st.expander("the full log"):
            st.code(format_result(res), language="text", wrap_lines=True)  # the log was cut at the right edge
        show_code(measure, predicted_for_routing)


if mode != "training":
    measure_panel()

try_it("interconnect")
