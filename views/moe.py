"""Stable LatentMoE & routing: which experts each token visits, how balancing evens the load, what latent saves.

Thin page: widgets -> one library call per panel -> figure. The live computations and their server-wide caches
are in k3lite/viz/moe_live.py; the drawn path of one token in k3lite/viz/diagrams.py."""
from dataclasses import replace
from functools import partial

import pandas as pd
import streamlit as st

from k3lite.base import sources
from k3lite.base.evidence import derived, measured_here, released
from k3lite.base.wording import times
from k3lite.analytic.sensitivity import Assumption
from k3lite.model.checkpoint import checkpoint_meta
from k3lite.model.config import BALANCING_METHODS, MoEConfig
from k3lite.model.presets import get_preset
from k3lite.interconnect import REFERENCE, deployment_bytes
from k3lite.analytic.latent import latent_cost_per_token, record_overhead, wire_bytes_headline
from k3lite.experiments.moe_balance import run_balance, summary_rows, training_claim
from k3lite.experiments.moe_demo import (MAX_PROMPT_BYTES, STREAM_BYTES, balance_claim, fit_balancers, notice_lines,
                                         prompt_demo)
from k3lite.model.nn import glu_curves, situ_glu
from k3lite.analytic.placement import K3_SCALE_EXPERTS, chance_violation, gpu_view, mean_load_per_expert
from k3lite.experiments.precomputed import moe_page_cfg
from k3lite.viz import moe_live as live
from k3lite.viz.diagrams import latent_path, latent_path_figure
from k3lite.viz.memo import shared_figure
from k3lite.viz.moe import (METHOD_LABELS, activation_rows, gpu_heatmap, latent_tradeoff, load_bars, load_histogram,
                            routing_heatmap, situ_vs_swiglu_figure, violation_curves, violation_vs_updates)
from k3lite.viz.style import fmt_bytes
from views.common import (assumptions_block, explain, lazy_expander, lazy_sections, metric, push_url, reset_button,
                          sentence, show_code, table, url_state, user_errors)
from views.common import try_it  # the page's practice problems, at its foot

EXPERT_FFN, SHARED_FFN = 32, 64  # the live layer on this page (small: it runs on every change; K3's routing shape)
K3 = get_preset("kimi-k3")  # the released config.json
K3_D, K3_FFN = K3.d_model, K3.moe.expert_ffn_dim  # the drawn path and (d) are at K3 width
RATIOS = {"1": 1.0, "1/2": 0.5, "1/4": 0.25, "1/8": 0.125}
K3_CONFIG = released("K3's config.json: d_model, n_routed_experts, num_experts_per_tok, n_shared_experts, latent dim")
LITE = get_preset("lite")
MOE_LAYERS = [i for i, kind in enumerate(LITE.ffn_types()) if kind == "moe"]

st.title("Stable LatentMoE & routing")
st.markdown(f"**How does one token reach {K3.moe.top_k} of {K3.moe.n_routed_experts} experts on other GPUs cheaply, "
            "and how do those experts stay evenly loaded?**")

url_state("moe_experts", K3.moe.n_routed_experts, lo=8, hi=896)  # the page opens at K3's shape (config.json)
url_state("moe_top_k", K3.moe.top_k, lo=1, hi=32)
url_state("moe_shared", K3.moe.n_shared_experts, lo=0, hi=4)
K3_RATIO = next(key for key, r in RATIOS.items() if r * K3_D == K3.moe.latent_dim)  # "1/2": 3584 / 7168
url_state("moe_latent", K3_RATIO, choices=list(RATIOS))
url_state("moe_balancing", "quantile", choices=list(BALANCING_METHODS))
url_state("moe_prompt", "The cat sat on the mat, and 42 dogs barked at 3.14 birds.")
url_state("moe_layer", 4, choices=MOE_LAYERS)

controls, picture = st.columns([1, 3])
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

with picture, user_errors():  # the mechanism at K3 width: analytic, so it answers every slider at once
    k3_moe = MoEConfig(n_routed_experts=E, top_k=K, expert_ffn_dim=K3_FFN, n_shared_experts=SHARED,
                       shared_ffn_dim=K3_FFN, latent_dim=0 if RATIO == 1 else round(K3_D * RATIO),
                       latent_norm=RATIO < 1, latent_norm_at=K3.moe.latent_norm_at)
    path = latent_path(k3_moe, K3_D)
    classic = latent_path(replace(k3_moe, latent_dim=0, latent_norm=False), K3_D)
    st.plotly_chart(shared_figure(latent_path_figure, path,
                                  f"One token at K3 width (d = {K3_D}): {fmt_bytes(path.wire.total)} on the wire "
                                  "per MoE layer", evidence=derived(latent_path, deployment_bytes)), width="stretch")
on_wire, classic_wire = path.wire.total, classic.wire.total
sentence(
    f"At latent ratio {st.session_state.moe_latent} each copy carries l = {path.latent} dims instead of d = {K3_D}: "
    f"**{fmt_bytes(on_wire)}** on the wire per token per MoE layer against {fmt_bytes(classic_wire)} for a classic "
    f"MoE ({times(on_wire, classic_wire, 'more', 'less', digits=1)}), {path.wire.copies.total:.2f} copies each way on "
    f"{REFERENCE.describe()}. A token visits {K} of {E} routed experts ({100 * K / E:.1f}%); its {SHARED} shared "
    "expert(s) run on its own GPU and never cross the wire.", derived(latent_path, deployment_bytes), K3_CONFIG)
show_code(latent_path, latent_path_figure)
with st.expander("How LatentMoE and quantile balancing work (the formulas and the sources)"):
    st.markdown(
        f"""
    K3 has **896 routed experts** and sends each token to **16** of them, plus **2 shared experts** every token
    uses ({sources.EXPERT_COUNTS}). Three problems come with that many experts:
    the router must not pile tokens onto a few favourites (**balancing**), its choices should not flip at the
    slightest nudge (**stability**: every flip reroutes a token to another GPU), and each routed copy is a message
    on the interconnect (**bytes on the wire**). *LatentMoE* shrinks the message: the token is projected from
    `d` down to a latent `l` before it is sent, the experts work in that latent space, and the result is projected
    back up (NVIDIA, arXiv 2601.18089).
    
    **Quantile balancing is grading on a curve set by earlier classes.** Routing stays *token choice*: every
    token takes its top-k experts, but of `s − β` rather than of its raw scores `s`, where `β_j` is expert j's cut.
    After each batch the cuts are read off that batch's scores (Kimi K3 Technical Report, arXiv 2607.24653, §2.3.3
    Eq. 14; first written up by J. Su, kexue.fm/archives/11619): each token routes its top-(k+1) on the biased
    score, and the (k+1)-th is its own cut `α_i`; `β_j` becomes the `(1 − k/E)` quantile of expert j's scores,
    each lowered by its token's cut, `s_:,j − α`: the value that would have given expert j its share `k/E` of the
    batch, with no step size to tune. The cuts are centred (a shift common to all experts changes no choice),
    take effect from the next step, and are frozen at inference. At K3's scale the quantile comes from
    histograms that each GPU fills and one all-reduce adds (`k3lite.model.moe.quantile_bias_histogram`).
    New tokens are routed with cuts fitted on earlier ones, so their load is close to even, not exactly even.
    *Expert choice* (each expert takes the `N·k/E` tokens that rank highest for it in the batch; Zhou et al.,
    arXiv 2202.09368) would be exactly even, but it needs the whole batch before any token can be routed (no use
    when decoding one token at a time), and a token gets however many experts happen to pick it: some get none or
    fewer than k, others more; (b) counts it on this page's tokens. The bias method (DeepSeek-V3) instead nudges
    a per-expert offset by ±γ each step; the aux loss (Switch Transformer) adds a penalty to the training loss.
    """
    )


live.warm_stream_states()  # once per server, in the background (k3lite.viz.moe_live)
model, warning = live.lite_model()
if warning:
    st.warning(warning)
D = model.cfg.d_model


def live_evidence(cfg: MoEConfig, prompt: str, layer: int):
    """(a)-(b)'s evidence: the shipped run at the page's defaults, else this page's own run at your settings."""
    if live.demo_is_shipped(cfg, prompt, layer):
        return measured_here("python -m k3lite.experiments.precomputed (the page's defaults, shipped and hash-checked)")
    return measured_here(f"this page, at your settings: k3lite.viz.moe_live.demo ({cfg.n_routed_experts} experts, "
                         f"top-{cfg.top_k}, layer {layer} of the trained lite model)")


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
        cfg = MoEConfig(n_routed_experts=E, top_k=K, expert_ffn_dim=EXPERT_FFN, n_shared_experts=SHARED,
                        shared_ffn_dim=SHARED_FFN, latent_dim=0 if RATIO == 1 else round(D * RATIO),
                        latent_norm=RATIO < 1, balancing=METHOD, bias_gamma=0.01)
        demo_cfg = replace(cfg, balancing=moe_page_cfg(D).balancing)  # every method is in the demo: one key
        if live.demo_ready(demo_cfg, prompt, layer):
            result = live.demo(demo_cfg, prompt, layer)
        else:
            with st.spinner(f"Fitting each balancing method for {E} experts, top-{K}, then routing the prompt…"):
                result = live.demo(demo_cfg, prompt, layer)
    stats = result.stats[METHOD]
    ran = live_evidence(demo_cfg, prompt, layer)
    m1, m2, m3, m4 = st.columns(4)
    per_expert = mean_load_per_expert(len(result.labels), K, E)
    metric(m1, f"max-violation, {result.eval_tokens:,} held-out bytes", f"{result.eval_violation[METHOD]:.2f}", ran,
              help=f"max(load)/mean(load) - 1; 0 = even. On the prompt alone it reads {stats.max_violation:.2f}, but "
                   f"{len(result.labels)} bytes x top-{K} spread over {E} experts is {per_expert:.2f} assignments per "
                   "expert: too few to measure balance (chance alone overloads some expert), so it is measured on "
                   "held-out text the balancer did not see.")
    metric(m2, "load CV on the prompt", f"{stats.cv:.2f}", ran, help="std/mean of tokens per expert")
    with user_errors():
        wire = deployment_bytes(cfg, REFERENCE, d_model=D)  # the one wire-bytes function (k3lite.interconnect)
    metric(m3, "bytes on the wire per token", fmt_bytes(wire.total), derived(deployment_bytes),
              help=f"dispatch {wire.dispatch:,.0f} B + combine {wire.combine:,.0f} B per MoE layer, expected under uniform "
                   f"routing on {REFERENCE.describe()}: {wire.copies.total:.2f} copies x ({wire.dispatch_record} + "
                   f"{wire.combine_record}) B records of the {stats.dispatch_dim}-dim latent. The Interconnect page "
                   "shows every other deployment.")
    metric(m4, "selection flips under noise", f"{100 * result.stability[METHOD]:.1f}%", ran,
              help="share of top-k choices that change when scores get noise of std 0.01 (held-out tokens)")
    if E > K3_SCALE_EXPERTS:  # a tokens x experts heatmap is hairline static here: show where the experts live
        gpu_choices = [8, 16, 32, 64, 128]
        url_state("moe_gpus", 64, choices=gpu_choices)
        st.select_slider("GPUs the experts are spread over (expert parallelism)", gpu_choices, key="moe_gpus")
        push_url("moe_gpus")
        view = gpu_view(stats.topk_idx[0].numpy(), E, st.session_state.moe_gpus)
        st.plotly_chart(shared_figure(gpu_heatmap, result.labels, view.counts, view.touched, view.expected_touched,
                                      title=f"{METHOD_LABELS[METHOD]}: {E} experts in blocks of "
                                            f"{view.experts_per_gpu:.0f} over {view.n_gpus} GPUs", evidence=ran),
                        width="stretch")
        st.caption(f"Each token's {K} experts sit on {view.touched.mean():.1f} of {view.n_gpus} GPUs on average here "
                   f"(uniform routing: {view.expected_touched:.1f}); every GPU touched other than the token's own "
                   "costs one dispatch and one combine copy.")
        show_code(gpu_view, gpu_heatmap)
    else:
        st.plotly_chart(shared_figure(routing_heatmap, result.labels, stats.topk_idx[0].numpy(),
                                      stats.topk_weight[0].numpy(), E,
                                      title=f"{METHOD_LABELS[METHOD]}: gate weight of each chosen expert", evidence=ran),
                        width="stretch")
        show_code(prompt_demo, routing_heatmap)
    with st.expander("Where these hidden states and routers come from"):
        st.caption(
            f"The prompt runs through the trained lite model (assets/lite.safetensors, "
            f"{checkpoint_meta().get('steps', '?')} training steps); the hidden states entering its MoE at layer {layer} "
            f"(d = {D}) then go into a fresh seeded LatentMoE built from your settings (l = {stats.dispatch_dim}, "
            f"expert FFN {EXPERT_FFN}). Its router is untrained, so which expert gets which byte is arbitrary; how "
            f"*evenly* they spread is the point. Each method's balancing state was fitted first with {result.updates} "
            f"updates (batches of {result.batch} bytes drawn from {result.fit_tokens:,} bytes of text and code).")
    with lazy_expander(f"The trained model's own router at layer {layer} ({LITE.moe.n_routed_experts} experts, "
                     f"top-{LITE.moe.top_k}, {LITE.moe.balancing} balancing)", key="moe_x_trained_model_s_own") as is_open:
        if is_open:
            idx, weight, own_violation = live.own_routing(prompt, layer)
            st.plotly_chart(shared_figure(routing_heatmap, result.labels, idx, weight, LITE.moe.n_routed_experts,
                                          title=f"trained router, max-violation {own_violation:.2f} on this prompt",
                                          evidence=measured_here("this page: the trained lite model's router on your "
                                                                 "prompt (k3lite.viz.moe_live.own_routing)")),
                            width="stretch")

    st.subheader("(b) Tokens per expert under each method, same router, same number of updates, held-out tokens")
    if E > K3_SCALE_EXPERTS:  # 896 bars per panel are unreadable: how many experts got how many tokens
        st.plotly_chart(shared_figure(load_histogram, result.eval_load, result.eval_tokens * K / E, evidence=ran),
                        width="stretch")
    else:
        st.plotly_chart(shared_figure(load_bars, result.eval_load, result.eval_violation, result.stability, evidence=ran),
                        width="stretch")
    st.markdown(live.violation_reading(result, METHOD, METHOD_LABELS))  # a sentence built from the run (ran)
    show_code(fit_balancers, load_histogram if E > K3_SCALE_EXPERTS else load_bars, violation_vs_updates,
              live.violation_reading, chance_violation)
    ec = result.expert_choice
    with st.expander("How (b) was measured, and expert choice for comparison"):
        explain(f"{result.eval_tokens:,} held-out bytes x top-{K} = {result.eval_tokens * K:,} assignments; dashed line = "
                f"the ideal even load ({result.eval_tokens * K / E:.1f} tokens per expert). Every method got {result.updates} "
                f"updates of {result.batch} bytes: bias ±γ = 0.01 each (10x DeepSeek-V3's 0.001, which is meant for "
                "thousands of steps); quantile: β re-read from each batch; aux loss: an Adam step (lr 1e-3) on the router "
                "minimising the Switch aux loss alone, with no task loss pulling back (its best case; in (c) it trains against "
                "a task loss). flips = share of top-k choices that change when the scores get noise of std 0.01. Expert "
                f"choice on the same held-out bytes and raw scores would give every expert exactly {ec.per_expert}, but "
                f"{ec.over_k:,} of the {ec.tokens:,} bytes would get more than {K} experts (up to {ec.most}), {ec.under_k:,} "
                f"fewer and {ec.no_expert:,} none. "
                + ("At the page's default settings (a)–(b) are shipped, computed by this same code with "
                   "`python -m k3lite.experiments.precomputed` and checked by hash; changing any control but the balancing method "
                   "(all four methods are in them) computes them here, live."
                   if live.demo_is_shipped(demo_cfg, prompt, layer) else "Computed on this page."))
    with lazy_expander("How fast each method evens the load (held-out max-violation after 1 to 64 updates)",
                     expanded=False, key="moe_x_fast_method_evens_load") as is_open:
        if is_open:
            st.plotly_chart(shared_figure(violation_vs_updates, result.curves, result.update_counts, result.updates,
                                          evidence=ran),
                            width="stretch")
            sentence(balance_claim(result, METHOD_LABELS) + " Each line is one calibration run per method on the same "
                     "batches, measured on the held-out bytes after each number of updates.", ran)
            notice_b, notice_flips = notice_lines(result, METHOD_LABELS)
            st.markdown(
                f"""
**What to notice**
- {notice_b} How the methods compare once each has had enough updates is in the sentences under (b) and (c),
  computed from those runs.
- Balancing is not free either way: overruling the router can cost quality, while an even load trains every
  expert; the held-out MSE column in (c) shows which won in this run. {notice_flips}
- Halving l halves the bytes on the wire and the routed-expert FLOPs (d); LatentMoE spends the saving on more
  experts and a higher top-k, which is how K3 affords 16 of 896.
"""
            )


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
            runs, runs_shipped = live.balance_runs()
        trained = measured_here("python -m k3lite.experiments.precomputed (shipped; run_balance(steps=150, batch=128))"
                                if runs_shipped else "this server: k3lite.experiments.moe_balance.run_balance(steps=150, "
                                "batch=128)")
        st.plotly_chart(shared_figure(violation_curves, {m: r.max_violation for m, r in runs.items()}, evidence=trained),
                        width="stretch")
        show_code(run_balance, violation_curves)
        with lazy_expander("(c) in numbers: the runs' table and how they were made", key="moe_x_c_numbers_runs_table") as is_open:
            if is_open:
                frame = pd.DataFrame(summary_rows(runs)).rename(columns={
                    "first_viol": "max-violation, first 10% of steps", "last_viol": "max-violation, last 10%",
                    "eval_viol": "held-out max-violation", "eval_loss": "held-out MSE (quality proxy)",
                    "stability": "choices flipped by noise 0.01 (fraction)", "seconds": "train time (s)"})
                table(st, frame, default=trained, hide_index=True, width="stretch")
                explain(training_claim(runs, METHOD_LABELS)
                        + (" Shipped (made by `python -m k3lite.experiments.precomputed`, checked by hash; computed here if stale) by "
                           if runs_shipped else " Trained here (once, then cached) by ")
                        + "`k3lite.experiments.moe_balance.run_balance(steps=150, batch=128)`: d 32, "
                        "16 experts top-2, tokens from 32 clusters with Zipf(1.2) frequencies, target a per-cluster linear map; "
                        "same initial weights and batches for every method. `python -m k3lite.bench balance` runs the longer "
                        "version.")

with tab_d as is_open:
    if is_open:
        st.subheader("(d) Bytes on the wire and expert FLOPs per token vs latent ratio, at K3 width")
        with user_errors():
            costs = [latent_cost_per_token(K3_D, K3_FFN, K, SHARED, K3_FFN, r, n_experts=E) for r in RATIOS.values()]
        st.plotly_chart(shared_figure(latent_tradeoff, costs, RATIO, evidence=derived(latent_cost_per_token)),
                        width="stretch")
        show_code(latent_cost_per_token, deployment_bytes, latent_tradeoff)
        with st.expander("How (d) is computed"):
            explain(f"Computed from d = {K3_D} and expert FFN {K3_FFN} (K3's config.json), top-{K}, "
                    f"{SHARED} shared, {E} experts: wire = expected copies x (FP8 dispatch + BF16 combine record) on "
                    f"{REFERENCE.describe()} (k3lite.interconnect.wire_bytes_per_token); "
                    "routed FLOPs = 2 x 3 x l x FFN x k. Outlined = your latent ratio. Shared experts never cross the wire.")

with tab_e as is_open:
    if is_open:
        st.subheader("(e) Activation ratio: routed experts a token visits")
        with lazy_expander("The table: K3 and other models' activation ratios (with their sources)", key="moe_x_table_k3_other_models") as is_open:
            if is_open:
                table(st, activation_rows(K, E), {"activation": derived(activation_rows)}, hide_index=True,
                      width="stretch")
        show_code(activation_rows)

with tab_f as is_open:
    if is_open:
        st.subheader("(f) The experts' activation: SiTU-GLU vs SwiGLU")
        glu = glu_curves(beta=K3.situ_beta, linear_beta=K3.situ_linear_beta)
        st.plotly_chart(shared_figure(situ_vs_swiglu_figure, glu.z.tolist(), glu.swiglu.tolist(), glu.situ.tolist(),
                                      glu.bound, evidence=derived(glu_curves)), width="stretch")
        show_code(situ_glu, glu_curves)
        at = int(len(glu.z) * 0.75)  # z = 30 on the default range
        with st.expander("What (f) shows, and where K3 uses it"):
            explain(f"K3's experts, shared experts and dense layer use SiTU-GLU (report Eq. 12; `hidden_act` situ, b1 = "
                    f"{K3.situ_beta:g}, b2 = {K3.situ_linear_beta:g} in config.json; `k3lite.model.nn.situ_glu`, in fp32 as the released "
                    f"code). Near zero it is SwiGLU; further out both branches saturate, so a hidden unit never exceeds b1 b2 = "
                    f"{glu.bound:g} (largest on this range: {float(glu.situ.abs().max()):.1f}), where SwiGLU grows like z²: at z = "
                    f"{float(glu.z[at]):g} it gives {float(glu.swiglu[at]):,.0f} against SiTU's {float(glu.situ[at]):.1f}. "
                    f"The lite model here uses {LITE.hidden_act}; `kimi-linear-48b-a3b`, `kimi-k2` and `deepseek-v3` keep SwiGLU.")

# one place for what the page assumes: the headline is the first screen's bytes on the wire
assumptions_block(
    "moe_x_assumptions", "Bytes on the wire per token per MoE layer", partial(wire_bytes_headline, k3_moe, K3_D),
    [Assumption("dispatch_elem_bytes", "bytes per dispatched latent element", 1.0,
                "FP8 dispatch, as DeepEP sends it (plus one fp32 scale per 128 elements)",
                "not adjustable here (the Interconnect page sets it)", "B"),
     Assumption("combine_elem_bytes", "bytes per combined latent element", 2.0,
                "BF16 combine, as DeepEP sends it back", "not adjustable here (the Interconnect page sets it)", "B"),
     Assumption("record_overhead_bytes", "bytes a dispatch + combine record pair adds", record_overhead(k3_moe, K3_D),
                "FP8 scales, routing metadata and padding (k3lite.interconnect)", unit="B")],
    fmt_bytes,
    also=[("routing", "uniform: every expert equally likely, so the copies per token are expected values"),
          ("deployment", REFERENCE.describe()),
          ("the live layer in (a)-(b)", f"K3's routing shape from your sliders, but experts of FFN {EXPERT_FFN} and "
           "a fresh seeded router on the trained lite model's hidden states: routing is live, the experts' size is not"),
          ("calibration text", f"{STREAM_BYTES:,} bytes of text and code: 3/4 to fit the balancers, 1/4 held out"),
          ("balancing updates", "the same budget for every method (32 in (a)-(b)); bias γ 0.01, aux loss Adam lr 1e-3")])

try_it("moe")
