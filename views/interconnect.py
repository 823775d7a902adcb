"""Interconnect bytes per token: expert-parallel dispatch/combine, analytic and measured on real gloo processes."""
import streamlit as st

from k3lite.config import get_preset
from k3lite.guards import heavy_work
from k3lite.interconnect import (
    TOPOLOGIES, WIRE_FORMATS, Deployment, MeasureSpec, analytic_traffic, compare_presets, format_result, measure,
    traffic_table,
)
from k3lite.viz.interconnect import compare_figure, measured_figure, traffic_figure
from k3lite.viz.style import fmt_bytes
from views.common import explain, push_url, url_state, user_errors

PRESETS = ("k3-estimated", "kimi-k2", "deepseek-v3")
LATENT = {"1 (no latent)": 1.0, "1/2": 0.5, "1/4": 0.25, "1/8": 0.125}
EP_CHOICES = (1, 2, 4, 8, 16, 32, 48, 64, 72)

st.title("Interconnect bytes per token")
st.markdown(
    "With expert parallelism every MoE layer sends each token to the GPUs that hold its top-k experts "
    "(**dispatch**) and gets the weighted expert outputs back (**combine**). That traffic, not the matmuls, "
    "often sets the speed of a big MoE. Here you can change what travels (latent vs full hidden state, FP8 vs BF16), "
    "how far (one NVLink domain or across nodes) and how often (experts, top-k, node limit), and then **measure** a "
    "real expert-parallel layer on this server with `torch.distributed` to see the byte count is exactly what the "
    "model predicts."
)


def _load_preset():
    moe = get_preset(st.session_state.ic_preset).moe
    st.session_state.ic_experts = moe.n_routed_experts
    st.session_state.ic_top_k = moe.top_k
    d = get_preset(st.session_state.ic_preset).d_model
    st.session_state.ic_latent = min(LATENT, key=lambda k: abs(LATENT[k] - (moe.latent_dim or d) / d))


url_state("ic_preset", "k3-estimated", choices=PRESETS)
base = get_preset(st.session_state.ic_preset)
url_state("ic_experts", base.moe.n_routed_experts, lo=8, hi=1024)
url_state("ic_top_k", base.moe.top_k, lo=1, hi=32)
url_state("ic_latent", "1/2" if base.moe.latent_dim else "1 (no latent)", choices=list(LATENT))
url_state("ic_dispatch", "fp8", choices=["fp8", "bf16"])
url_state("ic_combine", "bf16", choices=["fp8", "bf16"])
url_state("ic_topology", "nvl72", choices=list(TOPOLOGIES))
url_state("ic_ep", 64, choices=list(EP_CHOICES))
url_state("ic_node_limit", 0, lo=0, hi=8)

c1, c2, c3 = st.columns(3)
with c1:
    st.selectbox("model preset (resets experts, top-k, latent)", PRESETS, key="ic_preset", on_change=_load_preset)
    st.slider("routed experts E", 8, 1024, step=8, key="ic_experts")
    st.slider("top-k (experts per token)", 1, 32, key="ic_top_k")
with c2:
    st.select_slider("latent ratio (latent_dim / d_model)", list(LATENT), key="ic_latent")
    st.radio("dispatch precision", ["fp8", "bf16"], key="ic_dispatch", horizontal=True,
             help=WIRE_FORMATS["fp8"].description)
    st.radio("combine precision", ["fp8", "bf16"], key="ic_combine", horizontal=True)
with c3:
    st.selectbox("topology", list(TOPOLOGIES), key="ic_topology", format_func=lambda k: TOPOLOGIES[k].name)
    topo = TOPOLOGIES[st.session_state.ic_topology]
    ep_options = [e for e in EP_CHOICES if e <= topo.n_gpus]
    if st.session_state.ic_ep not in ep_options:
        st.session_state.ic_ep = ep_options[-1]
    st.select_slider("EP size (GPUs the experts are spread over)", ep_options, key="ic_ep")
    st.slider("node limit M (domains per token, 0 = none)", 0, 8, key="ic_node_limit")
push_url("ic_preset", "ic_experts", "ic_top_k", "ic_latent", "ic_dispatch", "ic_combine", "ic_topology", "ic_ep",
         "ic_node_limit")

with user_errors():
    latent = int(base.d_model * LATENT[st.session_state.ic_latent]) if LATENT[st.session_state.ic_latent] < 1 else 0
    cfg = base.with_(name=f"{base.name} (your settings)", moe={
        "n_routed_experts": st.session_state.ic_experts, "top_k": st.session_state.ic_top_k,
        "latent_dim": latent, "n_groups": 1, "topk_groups": 1})
    dep = Deployment(topo, st.session_state.ic_ep, st.session_state.ic_dispatch, st.session_state.ic_combine,
                     st.session_state.ic_node_limit)
    t = analytic_traffic(cfg, dep)

m1, m2, m3, m4 = st.columns(4)
m1.metric("bytes / token / MoE layer", fmt_bytes(t.per_layer.total))
m2.metric(f"per forward pass ({t.n_moe_layers} MoE layers)", f"{t.per_forward / 1e6:,.2f} MB")
m3.metric("remote GPUs per token", f"{t.copies.remote:.2f}",
          help=f"{t.copies.remote_intra:.2f} in the token's NVLink domain + {t.copies.remote_inter:.2f} beyond it")
m4.metric("time on the wire / token / forward", f"{t.wire_s_forward * 1e6:,.2f} µs")
st.plotly_chart(traffic_figure(t), width="stretch")
explain(
    f"Computed, not measured: E[remote GPUs] from the exact uniform-routing formula "
    f"(1 - C(E-e, k)/C(E, k) per GPU, e = {t.experts_per_gpu:.2f} experts / GPU), times the bytes of one copy: "
    f"{t.dim_on_wire} elements in {dep.dispatch} (+ {8 * t.top_k} B of expert ids and gate weights) out, "
    f"{t.dim_on_wire} in {dep.combine} back. Time on the wire = intra bytes / {topo.intra_bw / 1e9:.0f} GB/s + "
    f"inter bytes / {topo.inter_bw / 1e9:.0f} GB/s per GPU per direction (not overlapped). Bandwidths: {topo.source}."
)

st.subheader("DeepSeek-V3 vs Kimi K2 vs K3 (estimated), same deployment")
with user_errors():
    rows = compare_presets(("deepseek-v3", "kimi-k2", "k3-estimated"), st.session_state.ic_topology,
                           st.session_state.ic_ep, st.session_state.ic_dispatch, st.session_state.ic_combine,
                           st.session_state.ic_node_limit)
st.plotly_chart(compare_figure(rows), width="stretch")
st.dataframe(traffic_table(rows), hide_index=True, width="stretch")  # full width: headers were cut
explain(
    "Each model with its own published config (DeepSeek-V3: arXiv 2412.19437 config.json; Kimi K2: "
    "Kimi-K2-Instruct config.json) or, for K3, the estimated preset (896 experts top-16 from the seed article; "
    "hidden 7168, latent 3584, 93 layers from unofficial config copies). What to notice: K3 sends each token to "
    "about twice as many GPUs (top-16 over 14 experts per GPU) yet its latent is half of d_model, so the bytes "
    "per layer stay close to K2's; across nodes (multi-node topology) the NIC share dominates the time, which is "
    "what node-limited routing attacks."
)

st.subheader("Measure it: a real expert-parallel layer on this server")
st.markdown(
    "Starts separate Python processes joined by `torch.distributed` (gloo, 127.0.0.1 only), shards the experts "
    "of one small real `LatentMoE` across them, routes with its real router and moves tokens with "
    "`all_to_all_single`. Bytes are counted from the buffers handed to the collective (a rank's chunk to itself "
    "is excluded); the output is checked against the single-process `LatentMoE.forward`. Tiny sizes (d_model 64, "
    "latent 32, 16 experts top-4) so it takes seconds; bounded to 60 s and the workers are always reaped."
)
k1, k2, k3, k4 = st.columns(4)
ranks = k1.radio("ranks (processes)", [2, 4], index=1, horizontal=True, key="ic_m_ranks")
tokens = k2.slider("tokens per rank", 8, 64, 32, step=8, key="ic_m_tokens")
fmt = k3.radio("dispatch / combine precision", ["fp32", "bf16", "fp8"], horizontal=True, key="ic_m_fmt",
               help="fp32 makes the output check exact (1e-5); bf16/fp8 are checked to their rounding error")
limit = k4.checkbox("node-limited: 1 pretend domain per token", key="ic_m_limit",
                    help="the real router's group-limited top-k, one group per pretend domain of ranks/2 ranks")
if st.button("Measure it", type="primary", key="ic_m_go"):
    with user_errors():
        spec = MeasureSpec(ranks=ranks, ranks_per_node=max(1, ranks // 2), tokens_per_rank=tokens, dispatch=fmt,
                           combine="bf16" if fmt == "fp8" else fmt, node_limit=int(limit),
                           timeout_s=60.0)
        bar = st.progress(0.0, text="waiting for a free slot")
        with heavy_work("the measured gloo run", timeout_s=5.0):
            try:
                st.session_state.ic_measured = measure(spec, progress=lambda f, msg: bar.progress(f, text=msg))
            except (RuntimeError, TimeoutError) as e:
                st.error(f"The measured run failed and its workers were stopped: {e}")
                st.stop()
res = st.session_state.get("ic_measured")
if res is not None:
    st.plotly_chart(measured_figure(res), width="stretch")
    st.code(format_result(res), language="text", wrap_lines=True)  # the log was cut at the right edge
    explain(
        "Measured and same-routing bars are equal to the byte (an exact integer comparison per rank): the analytic "
        "counting is what a real all_to_all sends. The uniform expectation differs a little because a real "
        "router with one small batch is not uniform. 'Intra' pairs ranks in pretend NVLink domains of "
        f"{res.spec.ranks_per_node}; on loopback all bytes travel the same way."
    )
