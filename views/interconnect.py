"""Interconnect bytes per token: expert-parallel dispatch/combine under three schemes, analytic and measured."""
from functools import partial

import streamlit as st

from k3lite.analytic.ledger import wire_or_hbm
from k3lite.analytic.training import LAYOUTS, SCHEDULES, step_traffic, traffic_rows
from k3lite.base.evidence import derived, measured_elsewhere, measured_here
from k3lite.base.guards import heavy_work
from k3lite.interconnect import (SCHEME_LABELS, SCHEMES, TOPOLOGIES, WIRE_FORMATS, Deployment, analytic_traffic,
                                 compare_presets, deployment_bytes, link_copies, node_limit_sweep, traffic_table)
from k3lite.interconnect.deepep import SOURCE as DEEPEP_SOURCE
from k3lite.interconnect.deepep import RDMA_PEAK, comparison_table
from k3lite.interconnect.run import expected_for_spec, format_result, measure, predicted_for_routing
from k3lite.interconnect.sentences import layer_sentence
from k3lite.model.presets import get_preset
from k3lite.panels import interconnect as P
from k3lite.panels import interconnect_training as T
from k3lite.viz.interconnect import MEASURED_TRACE, compare_figure, measured_figure, traffic_figure
from k3lite.viz.memo import shared_figure
from k3lite.viz.topology import draw_topology, topology_figure
from views.common import (assumptions_block, compared, explain, fill_from, lazy_expander, metric, push_url,
                          reset_button, sentence, show_code, show_panel, table, url_state, user_errors)
from views.common import try_it  # the page's practice problems, at its foot

PRESETS = ("kimi-k3", "kimi-k2", "deepseek-v3", "lite")
LATENT = P.LATENT

st.title("Interconnect bytes per token")
st.markdown("**Where do one token's bytes go when its experts live on other GPUs, and which link carries them?**")
reset_button("ic_")


@st.cache_data(max_entries=1, show_spinner="Asking the serving model what bounds a decode step…")
def binds() -> str:
    return wire_or_hbm()


with lazy_expander("What dispatch and combine are, and the three schemes", key="ic_x_intro") as is_open:
    if is_open:
        st.markdown(P.INTRO)
        sentence(binds(), derived(wire_or_hbm))

KNOBS = {name: P.preset_knobs(name) for name in PRESETS}  # what choosing a preset sets (views.common.fill_from)
url_state("ic_preset", "kimi-k3", choices=PRESETS)
pair = compared(base=get_preset(st.session_state.ic_preset))  # the panels rebuild a variant from the sliders' config
preset_defaults = KNOBS[st.session_state.ic_preset]
url_state("ic_experts", preset_defaults["ic_experts"], lo=8, hi=1024)
url_state("ic_top_k", preset_defaults["ic_top_k"], lo=1, hi=32)
url_state("ic_latent", preset_defaults["ic_latent"], choices=list(LATENT))
url_state("ic_dispatch", "fp8", choices=["fp8", "bf16"])
url_state("ic_combine", "bf16", choices=["fp8", "bf16"])
url_state("ic_topology", "multi-node-8x8", choices=list(TOPOLOGIES))
url_state("ic_ep", 64, choices=list(P.EP_CHOICES))
url_state("ic_node_limit", 0, lo=0, hi=8)
url_state("ic_scheme", "normal", choices=list(SCHEMES))


@st.cache_data(max_entries=16, show_spinner="Counting one training step's traffic…")
def training_cached(layout: str, schedule: str, micro_batches: int) -> tuple:
    return T.training_steps(layout, schedule, micro_batches)


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
    lay, variants = training_cached(ss.ic_t_layout, ss.ic_t_schedule, int(ss.ic_t_micro))
    if pair is not None:
        show_panel(T.training_pair(lay, pair), "ic_t_pair", container=fig_col)
    show_panel(T.training_main(ss.ic_t_layout, lay, variants), "ic_t_bytes", container=fig_col)
    with lazy_expander("Time per token, the bubble, and what a stage boundary carries", key="ic_x_training_time") \
            as is_open:
        if is_open:
            step = variants["as configured"]
            table(st, traffic_rows(step), default=derived(step_traffic), hide_index=True, width="stretch")
            time_, bubble, boundary = T.training_detail(lay, step)
            left, right = st.columns(2)
            show_panel(time_, "ic_t_time", container=left)
            show_panel(bubble, "ic_t_bubble", container=right)
            show_panel(boundary, "ic_t_boundary")
            st.caption(T.MEASURED_TOO)
            show_code(step_traffic, T.bubble_share)
    args, also = T.training_assumptions()
    assumptions_block(*args, also=also)


url_state("ic_mode", "inference", choices=["inference", "training"])
mode = st.segmented_control("what moves", ["inference", "training"], key="ic_mode",
                            help="inference: one decoded token's dispatch and combine; training: one training "
                                 "step's traffic per token (EP forward and backward, pipeline stages, DP gradients)")
push_url("ic_mode")


@st.cache_data(max_entries=32, show_spinner="Sampling node-limited routing…")
def sweep_cached(preset: str, experts: int, top_k: int, latent: int, topology: str, ep: int, dispatch: str,
                 combine: str, _cfg) -> dict:
    """node_limit_sweep for the page's settings (the first eight arguments are the key; _cfg is built from them)."""
    return node_limit_sweep(_cfg, topology, ep, dispatch, combine)


@st.fragment
def main_panel() -> None:
    """Controls, the drawn topology, the computed sentences and the panels that read the same settings."""
    ss = st.session_state
    topo = TOPOLOGIES[ss.ic_topology]
    ep_options, ss.ic_ep, e_options, ss.ic_experts, snapped = P.expert_options(ss.ic_topology, ss.ic_ep, ss.ic_experts)
    ctl, fig_col = st.columns([1, 3])
    with ctl:
        st.selectbox("topology", list(TOPOLOGIES), key="ic_topology",  # short labels: the full name was clipped
                     format_func={k: t.label for k, t in TOPOLOGIES.items()}.get,
                     help="; ".join(f"**{t.label}**: {t.name}" for t in TOPOLOGIES.values()))
        st.select_slider("EP size (GPUs holding the experts)", ep_options, key="ic_ep")
        st.radio("dispatch scheme", SCHEMES, key="ic_scheme", format_func=SCHEME_LABELS.get)
        st.selectbox("model preset (resets E, top-k, latent)", PRESETS, key="ic_preset",
                     on_change=partial(fill_from, "ic_preset", KNOBS))
        st.select_slider("routed experts E (multiples of the EP size)", e_options, key="ic_experts")
        if snapped is not None:
            st.info(f"E = {snapped} does not split evenly over EP {ss.ic_ep} GPUs: using "
                    f"E = {ss.ic_experts}, the nearest multiple of {e_options[0]}.")
        st.slider("top-k (experts per token)", 1, 32, key="ic_top_k")
        # closed, its four controls are not drawn (their values live in the URL state): a first screen of seven
        # controls instead of eleven, each of which the browser lays out before the picture
        with lazy_expander("wire format and node limit", key="ic_x_wire") as is_open:
            if is_open:
                st.select_slider("latent ratio (latent_dim / d_model)", list(LATENT), key="ic_latent")
                st.radio("dispatch precision", ["fp8", "bf16"], key="ic_dispatch", horizontal=True,
                         help=WIRE_FORMATS["fp8"].description)
                st.radio("combine precision", ["fp8", "bf16"], key="ic_combine", horizontal=True)
                st.slider("node limit M (domains per token, 0 = none)", 0, 8, key="ic_node_limit")
    push_url("ic_preset", "ic_experts", "ic_top_k", "ic_latent", "ic_dispatch", "ic_combine", "ic_topology",
             "ic_ep", "ic_node_limit", "ic_scheme")
    # a setting the model cannot route (e.g. top-k above the experts a node limit leaves) stops this part only
    t = None
    try:
        cfg = P.page_config(get_preset(ss.ic_preset), ss.ic_experts, ss.ic_top_k, LATENT[ss.ic_latent])
        dep = Deployment(topo, ss.ic_ep, ss.ic_dispatch, ss.ic_combine, ss.ic_node_limit, ss.ic_scheme)
        t = analytic_traffic(cfg, dep)
        drawing = draw_topology(cfg, dep)
    except ValueError as e:
        fig_col.error(f"⚠️ {e}")
    if t is not None:
        if pair is not None:
            show_panel(P.wire_pair(cfg, pair, dep), "ic_pair", container=fig_col)
        fig_col.plotly_chart(shared_figure(topology_figure, cfg, dep, evidence=derived(draw_topology)),
                             width="stretch")
        hit_gpus = int((drawing.hops["dispatch_intra"].sum(0) + drawing.hops["dispatch_inter"].sum(0) > 0).sum())
        fig_col.markdown(layer_sentence(t, hit_gpus))
        show_code(draw_topology, deployment_bytes, link_copies)
        with lazy_expander("Bytes per layer and per forward pass, by link and direction",
                           key="interconnect_x_bytes_per_layer_per") as is_open:
            if is_open:
                ev = derived(analytic_traffic)
                for col, (label, value) in zip(st.columns(4) + st.columns(2), P.layer_metrics(t, dep)):
                    metric(col, label, value, ev)
                st.plotly_chart(shared_figure(traffic_figure, t, evidence=ev), width="stretch")
                explain(P.bytes_note(t, dep))
                show_code(analytic_traffic)

    with lazy_expander("Node-limited routing: NIC bytes vs node limit M, three schemes",
                       key="interconnect_x_node_limited_routing_nic") as is_open:
        if is_open:
            if why := P.sweep_blocker(t is not None and dep, topo):
                st.info(why)
            elif not st.toggle("compute the sweep (it samples node-limited routing: the slowest part of this page)",
                               key="ic_sweep"):
                st.caption("Off by default, so that moving a control above does not wait for it.")
            else:
                sweep = sweep_cached(ss.ic_preset, ss.ic_experts, ss.ic_top_k, cfg.moe.latent_dim, ss.ic_topology,
                                     dep.ep_size, dep.dispatch, dep.combine, cfg)
                show_panel(P.node_limit_panel(sweep, ss.ic_node_limit, dep.n_domains), "ic_sweep_fig")
                show_code(node_limit_sweep)

    with lazy_expander("DeepSeek-V3 vs Kimi K2 vs Kimi K3: 8 nodes x 8 GPUs and one NVL72 rack, EP 64",
                       key="interconnect_x_model_comparison") as is_open:
        if is_open:
            with user_errors():
                tables, words = P.three_models(ss.ic_dispatch, ss.ic_combine, ss.ic_node_limit, ss.ic_scheme)
            ev = derived(compare_presets)
            for col, (name, rows) in zip(st.columns(2), tables.items()):
                col.caption(TOPOLOGIES[name].name)
                col.plotly_chart(shared_figure(compare_figure, rows, evidence=ev), width="stretch", key=f"ic_cmp_{name}")
            table(st, [{"topology": TOPOLOGIES[n].label, **r} for n, rows in tables.items() for r in traffic_table(rows)],
                  {"dim on wire": P.CONFIGS, "MoE layers": P.CONFIGS}, default=ev, hide_index=True,
                  width="stretch")  # full width: the headers were cut
            sentence(words, ev, P.CONFIGS)
            show_code(compare_presets)
    if t is not None:
        args, also = P.inference_assumptions(cfg, dep, ss.ic_preset)
        assumptions_block(*args, also=also)


if mode == "training":
    training_panel()
else:
    main_panel()

with lazy_expander("Against DeepEP's published numbers", key="interconnect_x_against_deepep_s_published") as is_open:
    if is_open:
        rows, theirs = comparison_table(), measured_elsewhere(DEEPEP_SOURCE)
        table(st, rows, {c: theirs for c in ("EP", "node limit M (0 = none)", "their bandwidth (GB/s)",
                                             "reported latency (µs)")}, default=derived(comparison_table),
              hide_index=True, width="stretch")
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
    fmt = k3_.radio("precision", ["fp32", "bf16", "fp8"], horizontal=True, key="ic_m_fmt",
                    help="fp32 makes the output check exact (1e-5); bf16/fp8 are checked to their rounding error")
    m_scheme = k4.selectbox("scheme", SCHEMES, index=1, key="ic_m_scheme")
    limit = k5.checkbox("node-limited: 1 pretend node per token", key="ic_m_limit",
                        help="the real router's group-limited top-k, one group per pretend node of ranks/2 ranks")
    if st.button("Measure it", type="primary", key="ic_m_go"):
        with user_errors():
            spec = P.measure_spec(ranks, tokens, fmt, m_scheme, limit)
            with st.status("Measuring…", expanded=True) as status:
                st.write(P.expected_note(spec, expected_for_spec(spec)))  # known before any worker starts: shown first
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
        st.plotly_chart(shared_figure(measured_figure, res, evidence=derived(predicted_for_routing, expected_for_spec),
                                      evidence_by_name={MEASURED_TRACE: measured_here(P.measured_command(res.spec))}),
                        width="stretch")
        explain(P.measured_note(res))
        with st.expander("the full log"):
            st.code(format_result(res), language="text", wrap_lines=True)  # the log was cut at the right edge
        show_code(measure, predicted_for_routing)


if mode != "training":
    measure_panel()

try_it("interconnect")
