"""Interconnect bytes per token: expert-parallel dispatch/combine under three schemes, analytic and measured."""
from dataclasses import replace
from functools import partial

import streamlit as st

from k3lite.model.presets import get_preset
from k3lite.base.guards import heavy_work
from k3lite.analytic.ledger import ONE_OFF, variant, wire_or_hbm
from k3lite.analytic.sensitivity import Assumption
from k3lite.analytic.training import (
    LAYOUTS, SCHEDULE_SOURCES, SCHEDULES, bubble_share, idea_variants, step_traffic, traffic_rows, training_headline,
    training_sentence,
)
from k3lite.interconnect.pipeline import residual_comparison
from k3lite.base.evidence import derived, measured_elsewhere, measured_here, released
from k3lite.interconnect import (
    SCHEME_LABELS, SCHEMES, TOPOLOGIES, WIRE_FORMATS, Deployment, analytic_traffic, compare_presets,
    deployment_bytes, even_expert_counts, link_copies, node_limit_sweep, snap_experts, traffic_table,
)
from k3lite.interconnect.deepep import SOURCE as DEEPEP_SOURCE
from k3lite.interconnect.deepep import RDMA_PEAK, comparison_table
from k3lite.interconnect.headline import layer_bytes_at
from k3lite.interconnect.measured import MeasureSpec
from k3lite.interconnect.sentences import comparison_sentence, layer_sentence, node_limit_sentence
from k3lite.interconnect.run import expected_for_spec, format_result, measure, predicted_for_routing
from k3lite.viz.interconnect import (MEASURED_TRACE, compare_figure, measured_figure, node_limit_figure,
                                    traffic_figure)
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import fmt_bytes, fmt_seconds
from k3lite.viz.topology import draw_topology, topology_figure
from k3lite.viz.training import boundary_figure, bubble_figure, training_bytes_figure, training_time_figure
from views.common import (assumptions_block, explain, fill_from, lazy_expander, metric, push_url, reset_button,
                          sentence, show_code, table, url_state, user_errors)
from views.common import try_it  # the page's practice problems, at its foot

PRESETS = ("kimi-k3", "kimi-k2", "deepseek-v3", "lite")
BIG = ("deepseek-v3", "kimi-k2", "kimi-k3")
LATENT = {"1 (no latent)": 1.0, "1/2": 0.5, "1/4": 0.25, "1/8": 0.125}
EP_CHOICES = (1, 2, 4, 8, 16, 32, 48, 64, 72)

st.title("Interconnect bytes per token")
st.markdown("**Where do one token's bytes go when its experts live on other GPUs, and which link carries them?**")
reset_button("ic_")


@st.cache_data(max_entries=1, show_spinner="Asking the serving model what bounds a decode step…")
def binds() -> str:
    return wire_or_hbm()


with lazy_expander("What dispatch and combine are, and the three schemes", key="ic_x_intro") as is_open:
    if is_open:
        st.markdown(
            "With expert parallelism (EP) every MoE layer sends each token to the GPUs that hold its top-k experts "
            "(**dispatch**) and gets the weighted expert outputs back (**combine**). "
            "How many copies travel depends on the kernels: a flat all_to_all sends "
            "one copy per remote GPU (**direct**); DeepEP's **normal** kernels send one copy per remote *node* over "
            "RDMA through the NIC (network interface card) and fan it out over NVLink there; its **low-latency** "
            "kernels send one message per chosen expert. Change what travels, how far and how, then **measure** a "
            "real expert-parallel layer on this server with `torch.distributed`.")
        sentence(binds(), derived(wire_or_hbm))


def preset_knobs(name: str) -> dict:
    """A preset's E, top-k and nearest latent ratio, as this page's widget values."""
    cfg = get_preset(name)
    ratio = (cfg.moe.latent_dim or cfg.d_model) / cfg.d_model
    return {"ic_experts": cfg.moe.n_routed_experts, "ic_top_k": cfg.moe.top_k,
            "ic_latent": min(LATENT, key=lambda k: abs(LATENT[k] - ratio))}


KNOBS = {name: preset_knobs(name) for name in PRESETS}  # what choosing a preset sets (views.common.fill_from)
url_state("ic_preset", "kimi-k3", choices=PRESETS)
base = get_preset(st.session_state.ic_preset)
preset_defaults = KNOBS[st.session_state.ic_preset]
url_state("ic_experts", preset_defaults["ic_experts"], lo=8, hi=1024)
url_state("ic_top_k", preset_defaults["ic_top_k"], lo=1, hi=32)
url_state("ic_latent", preset_defaults["ic_latent"], choices=list(LATENT))
url_state("ic_dispatch", "fp8", choices=["fp8", "bf16"])
url_state("ic_combine", "bf16", choices=["fp8", "bf16"])
url_state("ic_topology", "multi-node-8x8", choices=list(TOPOLOGIES))
url_state("ic_ep", 64, choices=list(EP_CHOICES))
url_state("ic_node_limit", 0, lo=0, hi=8)
url_state("ic_scheme", "normal", choices=list(SCHEMES))



# ------------------------------------------------------------------------------------------ training
@st.cache_data(max_entries=16, show_spinner="Counting one training step's traffic…")
def training_cached(layout: str, schedule: str, micro_batches: int) -> tuple:
    lay = replace(LAYOUTS[layout](), schedule=schedule, micro_batches=micro_batches)
    return lay, idea_variants(lay)


@st.fragment
def training_panel() -> None:
    """One training step's traffic per token: EP forward and backward, pipeline boundaries, DP gradients."""
    url_state("ic_t_layout", "kimi-k3", choices=list(LAYOUTS))
    url_state("ic_t_schedule", "dualpipe", choices=list(SCHEDULES))
    url_state("ic_t_micro", 120, lo=8, hi=256)  # the slider's range: a link outside it falls back
    ctl, fig_col = st.columns([1, 3])
    ctl.selectbox("layout", list(LAYOUTS), key="ic_t_layout",
                  format_func={"kimi-k3": "K3 (assumed layout)", "deepseek-v3": "DeepSeek-V3 (published)"}.get,
                  help="DeepSeek-V3's published layout: PP 16 x EP 64 x DP 128 on H800s, FP8 dispatch (its report "
                       "§3.2). K3's is unpublished: K3 is shown on DeepSeek-V3's layout (assumed), so the difference "
                       "is the model's")
    ctl.selectbox("pipeline schedule", list(SCHEDULES), key="ic_t_schedule",
                  help="; ".join(f"{k}: {v}" for k, v in SCHEDULE_SOURCES.items()))
    ctl.slider("micro-batches per step", 8, 256, key="ic_t_micro")
    push_url("ic_t_layout", "ic_t_schedule", "ic_t_micro")
    ss = st.session_state
    lay, variants = training_cached(ss.ic_t_layout, ss.ic_t_schedule, int(ss.ic_t_micro))
    step = variants["as configured"]
    fig_col.plotly_chart(shared_figure(training_bytes_figure, variants, evidence=derived(step_traffic)),
                         width="stretch")
    sentence(training_sentence(ss.ic_t_layout, ss.ic_t_schedule, int(ss.ic_t_micro)), derived(training_sentence),
             lay.evidence.get("pp", derived(step_traffic)), container=fig_col)
    with lazy_expander("Time per token, the bubble, and what a stage boundary carries", key="ic_x_training_time") \
            as is_open:
        if is_open:
            table(st, traffic_rows(step), default=derived(step_traffic), hide_index=True, width="stretch")
            left, right = st.columns(2)
            left.plotly_chart(shared_figure(training_time_figure, step, evidence=derived(step_traffic)),
                              width="stretch")
            right.plotly_chart(shared_figure(bubble_figure, lay.pp, chosen=lay.micro_batches,
                                             evidence=derived(bubble_share)), width="stretch")
            st.plotly_chart(shared_figure(boundary_figure, residual_comparison(get_preset(lay.preset), lay.pp),
                                          evidence=derived(residual_comparison)), width="stretch")
            st.caption("Backward bytes and stage boundaries are measured on this server too (gloo, exact integers "
                       "against these counts): `python -m k3lite.interconnect measure --backward`, `python -m "
                       "k3lite.interconnect pipeline`.")
            show_code(step_traffic, bubble_share)
    assumptions_block(
        "ic_x_training_assumptions", "GPU-µs per token of communication + bubble (K3, assumed layout)",
        training_headline,
        [Assumption("micro_batches", "micro-batches per step", 120, "one 4K sequence each: 15,360 / DP 128",
                    "the 'micro-batches per step' slider"),
         Assumption("micro_batch_tokens", "tokens per micro-batch", 4096, "DeepSeek-V3's 4K sequences"),
         Assumption("grad_bytes", "bytes per gradient element (DP)", 2, "BF16 gradients reduce-scattered"),
         Assumption("pp_bytes", "bytes per element across a stage boundary", 2, "BF16 activations")],
        lambda v: f"{v:.1f} GPU-µs",
        also=[("layout", "K3's training layout is unpublished: DeepSeek-V3's PP 16 x EP 64 x DP 128 is taken"),
              ("overlap", "communication and compute are not overlapped in these times")])


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
    # E must shard evenly over the EP size (node-limited routing needs it, and so do real deployments): the E
    # slider offers only those values, and a value that no longer fits (EP or preset changed, an old link) snaps
    # with a note. The EP size is read first, since the E slider's options depend on it.
    topo = TOPOLOGIES[st.session_state.ic_topology]
    ep_options = [e for e in EP_CHOICES if e <= topo.n_gpus]
    if st.session_state.ic_ep not in ep_options:
        st.session_state.ic_ep = ep_options[-1]
    e_options = even_expert_counts(st.session_state.ic_ep)
    snapped = None
    if st.session_state.ic_experts not in e_options:
        snapped = st.session_state.ic_experts
        st.session_state.ic_experts = snap_experts(snapped, st.session_state.ic_ep)

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
            st.info(f"E = {snapped} does not split evenly over EP {st.session_state.ic_ep} GPUs: using "
                    f"E = {st.session_state.ic_experts}, the nearest multiple of {e_options[0]}.")
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
    scheme, limit = st.session_state.ic_scheme, st.session_state.ic_node_limit
    dispatch, combine = st.session_state.ic_dispatch, st.session_state.ic_combine

    # a setting the model cannot route (e.g. top-k above the experts a node limit leaves) stops this part only
    t = None
    try:
        ratio = LATENT[st.session_state.ic_latent]
        latent = round(base.d_model * ratio) if ratio < 1 else 0
        cfg = base.with_(name=f"{base.name} (your settings)", moe={
            "n_routed_experts": st.session_state.ic_experts, "top_k": st.session_state.ic_top_k,
            "latent_dim": latent, "n_groups": 1, "topk_groups": 1})
        dep = Deployment(topo, st.session_state.ic_ep, dispatch, combine, limit, scheme)
        t = analytic_traffic(cfg, dep)
        drawing = draw_topology(cfg, dep)
    except ValueError as e:
        fig_col.error(f"⚠️ {e}")
    if t is not None:
        fig_col.plotly_chart(shared_figure(topology_figure, cfg, dep, evidence=derived(draw_topology)),
                             width="stretch")
        b = t.per_layer
        hit_gpus = int((drawing.hops["dispatch_intra"].sum(0) + drawing.hops["dispatch_inter"].sum(0) > 0).sum())
        fig_col.markdown(layer_sentence(t, hit_gpus))
        show_code(draw_topology, deployment_bytes, link_copies)
        with lazy_expander("Bytes per layer and per forward pass, by link and direction", key="interconnect_x_bytes_per_layer_per") as is_open:
            if is_open:
                ev = derived(analytic_traffic)
                m1, m2, m3, m4 = st.columns(4)
                metric(m1, "bytes / token / MoE layer", fmt_bytes(b.total), ev)
                metric(m2, f"per forward pass ({t.n_moe_layers} MoE layers)", fmt_bytes(t.per_forward), ev)
                metric(m3, "copies per token: NVLink + NIC", f"{t.copies.intra:.2f} + {t.copies.inter:.2f}", ev)
                metric(m4, "time on the wire / token / forward", fmt_seconds(t.wire_s_forward), ev)
                l1, l2 = st.columns(2)
                metric(l1, "NVLink bytes / layer, time", f"{fmt_bytes(b.intra)}, {fmt_seconds(b.intra / topo.intra_bw)}", ev)
                metric(l2, "NIC bytes / layer, time", f"{fmt_bytes(b.inter)}, {fmt_seconds(b.inter / topo.inter_bw)}", ev)
                st.plotly_chart(shared_figure(traffic_figure, t, evidence=ev), width="stretch")
                explain(
                    f"Computed, not measured: expected copies under uniform routing ({SCHEME_LABELS[scheme]}; formulas "
                    f"in k3lite/interconnect/analytic.py) x the bytes of one record: {b.dispatch_record} B out "
                    f"({t.dim_on_wire} elements in {dep.dispatch} + routing metadata), {b.combine_record} B back "
                    f"({dep.combine}); {fmt_bytes(b.metadata)} of the {fmt_bytes(b.total)} are metadata and padding. "
                    f"Time = intra bytes / {topo.intra_bw / 1e9:.0f} GB/s + inter bytes / {topo.inter_bw / 1e9:.0f} "
                    f"GB/s per GPU per direction (not overlapped). Bandwidths: {topo.source}.")
                show_code(analytic_traffic)

    with lazy_expander("Node-limited routing: NIC bytes vs node limit M, three schemes", key="interconnect_x_node_limited_routing_nic") as is_open:
        if is_open:
            if t is None:
                st.info("Pick a setting the model can route (above) to see the node-limit sweep.")
            elif dep.n_domains < 2:
                st.info(f"EP {dep.ep_size} on {topo.name} is one NVLink domain: nothing crosses a NIC, so the node "
                        "limit has nothing to cut. Pick the 8 x 8 topology to see it.")
            elif not st.toggle("compute the sweep (it samples node-limited routing: the slowest part of this page)", key="ic_sweep"):
                st.caption("Off by default, so that moving a control above does not wait for it.")
            else:
                sweep = sweep_cached(st.session_state.ic_preset, st.session_state.ic_experts, st.session_state.ic_top_k, cfg.moe.latent_dim,
                                     st.session_state.ic_topology, dep.ep_size, dep.dispatch, dep.combine, cfg)
                st.plotly_chart(shared_figure(node_limit_figure, sweep, limit, evidence=derived(node_limit_sweep)),
                                width="stretch")
                if words := node_limit_sentence(sweep, dep.n_domains):
                    sentence(words, derived(node_limit_sweep, node_limit_sentence))
                show_code(node_limit_sweep)

    with lazy_expander("DeepSeek-V3 vs Kimi K2 vs Kimi K3: 8 nodes x 8 GPUs and one NVL72 rack, EP 64",
                       key="interconnect_x_model_comparison") as is_open:
        if is_open:
            comparison(dispatch, combine, limit, scheme)

    if t is not None:
        assumptions(cfg, dep)


def comparison(dispatch: str, combine: str, limit: int, scheme: str) -> None:
    with user_errors():
        tables = {name: compare_presets(BIG, name, 64, dispatch, combine, limit if name == "multi-node-8x8" else 0,
                                        scheme) for name in ("multi-node-8x8", "nvl72")}
        # the counterfactual beside the comparison: K3 moves the most bytes, but without its latent it would move
        # more (same deployment; the ledger's definition of "K3 without latent", k3lite/analytic/ledger.py)
        k3_plain = variant(get_preset("kimi-k3"), ONE_OFF["latent"]).with_(name="K3 without latent")
        for name, rows in tables.items():
            rows.append(analytic_traffic(k3_plain, Deployment(TOPOLOGIES[name], 64, dispatch, combine,
                                                              limit if name == "multi-node-8x8" else 0, scheme)))
    ev = derived(compare_presets)
    for col, (name, rows) in zip(st.columns(2), tables.items()):
        col.caption(TOPOLOGIES[name].name)
        col.plotly_chart(shared_figure(compare_figure, rows, evidence=ev), width="stretch", key=f"ic_cmp_{name}")
    configs = released("each model's config.json (DeepSeek-V3, Kimi-K2-Instruct, moonshotai/Kimi-K3)")
    table(st, [{"topology": TOPOLOGIES[n].label, **r} for n, rows in tables.items() for r in traffic_table(rows)],
          {"dim on wire": configs, "MoE layers": configs}, default=ev, hide_index=True,
          width="stretch")  # full width: the headers were cut
    one_node = {r.name: r for r in compare_presets(BIG, "dgx-b300", 8, dispatch, combine, 0, scheme)}
    sentence(comparison_sentence({r.name: r for r in tables["multi-node-8x8"]}, one_node, get_preset("kimi-k3"),
                                 get_preset("kimi-k2")), ev, configs)
    show_code(compare_presets)


def assumptions(cfg, dep: Deployment) -> None:
    """What this page's headline (bytes per token per MoE layer at its deployment) assumes, moved ±20% each."""
    fmts = {side: WIRE_FORMATS[getattr(dep, side)] for side in ("dispatch", "combine")}
    assumptions_block(
        "ic_x_assumptions", f"Bytes per token per MoE layer ({st.session_state.ic_preset} at your settings, "
                            f"{dep.topology.label}, EP {dep.ep_size})",
        partial(layer_bytes_at, cfg, dep),
        [Assumption("dispatch_elem_bytes", "dispatch: bytes per element on the wire", fmts["dispatch"].elem_bytes,
                    fmts["dispatch"].description, "the 'dispatch precision' control", "B"),
         Assumption("combine_elem_bytes", "combine: bytes per element on the wire", fmts["combine"].elem_bytes,
                    fmts["combine"].description, "the 'combine precision' control", "B"),
         Assumption("copies_scale", "copies per token, against uniform routing's expectation", 1.0,
                    f"uniform routing: {dep.scheme} sends {deployment_bytes(cfg, dep).copies.total:.2f} copies per token "
                    "on average; a real router's batch differs (the measured run below says by how much)"),
         Assumption("metadata_scale", "routing metadata and padding per record, against DeepEP's layout", 1.0,
                    "the record layouts read from DeepEP's buffers (k3lite/interconnect/deployment.py)")],
        fmt_bytes,
        also=[("routing", "uniform over the experts, every token independent; the busiest GPU's extra load is "
                          "not in this average (the home ledger's balancing toggle counts it)"),
              ("link bandwidths", f"{dep.topology.source} (the wire times, not the bytes)"),
              ("what counts", "only copies that leave the token's GPU; DeepEP's own tables also count local ones")])


if mode == "training":
    training_panel()
else:
    main_panel()

with lazy_expander("Against DeepEP's published numbers", key="interconnect_x_against_deepep_s_published") as is_open:
    if is_open:
        rows = comparison_table()
        theirs = measured_elsewhere(DEEPEP_SOURCE)
        table(st, rows, {c: theirs for c in ("EP", "node limit M (0 = none)", "their bandwidth (GB/s)",
                                             "reported latency (µs)")}, default=derived(comparison_table),
              hide_index=True, width="stretch")
        ll8 = next(r for r in rows if r["kernels"] == "low-latency" and r["EP"] == 8 and r["direction"] == "dispatch")
        n16 = next(r for r in rows if r["kernels"] == "normal" and r["EP"] == 16 and r["direction"] == "dispatch")
        over_nic = sorted({r["EP"] for r in rows if r["bottleneck link"] == "RDMA" and r["kernels"] == "low-latency"
                           and r["implied wire bandwidth (GB/s)"] * 1e9 > 1.1 * RDMA_PEAK})
        explain(
            f"{DEEPEP_SOURCE}. Their bandwidth is logical: bytes they count / time. For the low-latency rows their bytes "
            f"at their bandwidth reproduce the reported latency (EP 8 dispatch: {ll8['their time (µs)']} µs vs "
            f"{ll8['reported latency (µs)']} µs reported), so the accounting is the same as ours except for what is "
            f"counted: they count messages to the token's own GPU and, for the normal kernels, the copy to the token's "
            f"own node; we count only what leaves it, plus metadata. Our bytes take {ll8['ours / theirs']:.3f}x their "
            f"time on EP 8 low-latency ((G-1)/G of the messages leave the GPU) and {n16['ours / theirs']:.3f}x on EP 16 "
            f"normal (two nodes: about half the node copies are the own node). Low-latency rows whose implied wire "
            f"bandwidth (our bytes / their time) exceeds the NIC's ~50 GB/s by over 10% (EP {over_nic}) cannot have been "
            "pure RDMA: part of that traffic took NVLink (internode_ll.cu uses a peer-to-peer pointer when one exists).")
        show_code(comparison_table)


@st.fragment
def measure_panel() -> None:
    """A real expert-parallel layer on gloo processes: the expectation at once, progress, then the measurement."""
    st.subheader("Measure it: a real expert-parallel layer on this server")
    with st.expander("How the measurement works"):
        st.markdown(
            "Starts separate Python processes joined by `torch.distributed` (gloo, 127.0.0.1 only), shards the "
            "experts of one small real `LatentMoE` across them, routes with its real router and moves records laid "
            "out as the chosen scheme's (two levels of process groups for DeepEP normal: an all_to_all among "
            "same-local-rank peers of the pretend nodes, then one inside each node). Bytes are counted from the "
            "buffers handed to the collectives; the output is checked against the single-process "
            "`LatentMoE.forward`. Tiny sizes, bounded to 60 s, workers always reaped. `python -m k3lite.interconnect "
            "worker` runs the same worker under torchrun on a real cluster.")
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
            spec = MeasureSpec(ranks=ranks, ranks_per_node=max(1, ranks // 2), tokens_per_rank=tokens, dispatch=fmt,
                               combine="bf16" if fmt == "fp8" else fmt, node_limit=int(limit), scheme=m_scheme,
                               timeout_s=60.0)
            with st.status("Measuring…", expanded=True) as status:
                expected = expected_for_spec(spec)  # known before any worker starts: shown first
                st.write(f"Expected under uniform routing: {fmt_bytes(expected.total)} per token per layer "
                         f"({fmt_bytes(expected.dispatch)} out, {fmt_bytes(expected.combine)} back); now measuring "
                         f"{spec.ranks} real ranks…")
                bar = st.progress(0.0, text="waiting for a free slot")
                with heavy_work("the measured gloo run", timeout_s=5.0):
                    try:
                        st.session_state.ic_measured = measure(
                            spec, progress=lambda f, msg: bar.progress(f, text=msg))
                    except (RuntimeError, TimeoutError) as e:
                        status.update(label="failed", state="error")
                        st.error(f"The measured run failed and its workers were stopped: {e}")
                        st.stop()
                status.update(label=f"Measured in {st.session_state.ic_measured.wall_s:.1f} s", state="complete",
                              expanded=False)
    res = st.session_state.get("ic_measured")
    if res is not None:
        sp = res.spec
        ran = measured_here(f"python -m k3lite.interconnect measure --ranks {sp.ranks} --ranks-per-node "
                            f"{sp.ranks_per_node} --tokens {sp.tokens_per_rank} --dispatch {sp.dispatch} --combine "
                            f"{sp.combine} --node-limit {sp.node_limit} --scheme {sp.scheme} (gloo, this server)")
        st.plotly_chart(shared_figure(measured_figure, res, evidence=derived(predicted_for_routing, expected_for_spec),
                                      evidence_by_name={MEASURED_TRACE: ran}), width="stretch")
        explain(
            f"Measured vs the analytic count for the same routing decisions, rank by rank: "
            f"{'equal to the byte' if res.agree else 'DIFFERENT'} (exact integer comparison). Against the "
            f"uniform-routing expectation the headline uses, this batch is {100 * res.uniform_gap():+.1f}% off: a "
            f"real router on {res.n_tokens} tokens is not uniform. 'Intra' pairs ranks in pretend nodes of "
            f"{res.spec.ranks_per_node}; on loopback all bytes travel the same way.")
        with st.expander("the full log"):
            st.code(format_result(res), language="text", wrap_lines=True)  # the log was cut at the right edge
        show_code(measure, predicted_for_routing)


if mode != "training":
    measure_panel()

try_it("interconnect")
