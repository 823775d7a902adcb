"""Serving: from the architecture to $ per million tokens (placement, capacity, decode step, price)."""
import streamlit as st

from k3lite.model.presets import get_preset
from k3lite.analytic.hardware import GPUS
from k3lite.analytic.memory import RELEASED_K3_FORMATS
from k3lite.analytic.params import count_params
from k3lite.analytic.params import fmt as fmt_params
from k3lite.analytic.serving import (
    DSPARK_DRAFT_TOKENS, FORMAT_ALIASES, K3_PRESET, MIN_TOKENS_PER_USER, MTP_LAYERS, PREFILL_CHUNK_TOKENS, SPEC_SOURCE,
    USD_PER_GPU_HOUR, Serving, Speculation, capacity, check_fits, decode_step, has_mtp, pareto, prefill_step,
)
from k3lite.analytic.serving.compare import (
    gpus_for_weights, price_split_sentence, side_by_side, speculation_sentence, validate, validate_vllm_k3,
    vllm_k3_sentence, waterfall,
)
from k3lite.analytic.serving.fit import FITTED, MEANING, checked, checked_sentence
from k3lite.analytic.serving.frontier import INTERACTIVE_TOKENS_PER_USER, frontier, per_gpu_at, verdict
from k3lite.analytic.serving.predict import as_step, terms
from k3lite.viz.memo import shared_figure
from k3lite.viz.serving import (
    capacity_figure, frontier_figure, gpus_for_weights_figure, pareto_figure, placement_figure, prediction_figure,
    price_ratio_figure, step_figure, validation_figure, waterfall_figure,
)
from k3lite.viz.style import fmt_bytes
from views.common import explain, lazy_expander, push_url, reset_button, show_code, url_state, user_errors

PRESETS = [K3_PRESET, "kimi-k2", "deepseek-v3", "kimi-linear-48b-a3b"]
FORMATS = [f for f in FORMAT_ALIASES if f != "fp4"]
def dollars(text: str) -> str:
    """Escape $ for Markdown (two dollar signs in one caption would otherwise render as LaTeX)."""
    return text.replace("$", "\\$")


CONTEXTS = [4096, 16384, 32768, 65536, 131072, 262144, 524288, 1048576]

st.title("Serving: from architecture to $ per million tokens")
st.markdown("**What does a token of K3 cost to serve, on which GPU, at the speed a user wants?**")
reset_button("sv_")
with st.expander("How the price of a token is computed"):
    st.markdown(
        "The price of a token is set by serving physics: the weights are sharded over many GPUs, the KV cache "
        "fights the weights for HBM, and every token hops the interconnect twice per MoE layer. Pick a model, a GPU "
        "and a layout; the page places the weights, counts how many sequences fit, times one decode step "
        "(HBM reads, compute, dispatch + combine) and turns it into tokens/s and dollars. That roofline is an **upper "
        "bound** on throughput (a floor on cost). The **prediction** adds what real engines spend: a fixed time per "
        "layer, the share of HBM bandwidth and of peak FLOPs they achieve (three terms fitted to published K3 runs), "
        "TP all-reduces, and prefills queued against decode when users arrive together.")

url_state("sv_preset", K3_PRESET, choices=PRESETS)
url_state("sv_gpu", "GB300 NVL72", choices=list(GPUS))
url_state("sv_gpus", 64, lo=1, hi=1024)
url_state("sv_ep", 64, lo=1, hi=1024)
url_state("sv_tp", 1, lo=1, hi=64)
url_state("sv_experts", RELEASED_K3_FORMATS["routed_experts"], choices=FORMATS)  # as K3 ships: MXFP4 experts,
url_state("sv_rest", RELEASED_K3_FORMATS["attention"], choices=FORMATS)  # bf16 everything else (config.json)
url_state("sv_context", 32768, choices=CONTEXTS)
url_state("sv_batch", 0, lo=0, hi=100_000)
url_state("sv_overlap", True)
url_state("sv_price", 0.0, lo=0.0, hi=999.0)
url_state("sv_spec", False)
url_state("sv_draft", DSPARK_DRAFT_TOKENS, lo=1, hi=32)
url_state("sv_accept", Speculation().acceptance, lo=1.0, hi=33.0)
url_state("sv_speed", INTERACTIVE_TOKENS_PER_USER, lo=1.0, hi=1000.0)
url_state("sv_bound", False)
ctl, fig_col = st.columns([1, 3])
ctl.selectbox("model", PRESETS, key="sv_preset")
ctl.select_slider("context per sequence (tokens)", CONTEXTS, key="sv_context")
ctl.number_input("interactive speed (tokens/s per user)", 1.0, 1000.0, step=5.0, key="sv_speed",
                 help="our assumption of a typical interactive speed: 2.5x DeepSeek's 20-22 tokens/s average")
ctl.toggle("speculative decoding", key="sv_spec", help="MTP layer where the model ships one, else a draft model")
ctl.toggle("roofline bound instead of the prediction", key="sv_bound",
           help="the bound assumes every step runs at the HBM, FLOP or wire roofline; measured runs are slower")
if st.session_state.sv_spec:
    ctl.number_input("draft tokens per step", 1, 32, key="sv_draft")
    ctl.number_input("acceptance (tokens per step)", 1.0, 33.0, step=0.1, key="sv_accept")
# the two expanders below draw their inputs only while open (a closed one costs the first screen nothing); every
# input is seeded from and mirrored to the URL, so a value set in one survives its expander closing
PRICE_KEYS = {g: "sv_usd_" + g.replace(" ", "_") for g in GPUS}  # no spaces: they are URL parameters
for g, key in PRICE_KEYS.items():
    url_state(key, float(USD_PER_GPU_HOUR[g][0]), lo=0.1, hi=999.0)
with ctl, lazy_expander("GPU-hour prices ($)", key="serving_x_gpu_hour_prices") as is_open:
    if is_open:
        for g, key in PRICE_KEYS.items():
            st.number_input(g, 0.1, 999.0, step=0.1, key=key, help=USD_PER_GPU_HOUR[g][1])
prices = {g: float(st.session_state[key]) for g, key in PRICE_KEYS.items()}
with lazy_expander("Your deployment: GPU, parallelism, formats, batch (sections 1-4 below)",
                   key="serving_x_your_deployment") as is_open:
    if is_open:
        c1, c2, c3, c4 = st.columns(4)
        c1.selectbox("GPU", list(GPUS), key="sv_gpu")
        c1.number_input("GPUs per replica", 1, 1024, key="sv_gpus")
        c2.number_input("expert parallel (EP)", 1, 1024, key="sv_ep")
        c2.number_input("tensor parallel (TP) of attention", 1, 64, key="sv_tp")
        c3.selectbox("routed experts stored as", FORMATS, key="sv_experts")
        c3.selectbox("everything else stored as", FORMATS, key="sv_rest")
        c4.number_input("batch per GPU (0 = the most that fit)", 0, 100_000, key="sv_batch")
        c4.toggle("overlap communication with compute", key="sv_overlap")
        c4.number_input("$ per GPU-hour (0 = default)", 0.0, 999.0, step=0.1, key="sv_price")
push_url("sv_preset", "sv_gpu", "sv_gpus", "sv_ep", "sv_tp", "sv_experts", "sv_rest", "sv_context", "sv_batch",
         "sv_overlap", "sv_price", "sv_spec", "sv_draft", "sv_accept", "sv_speed", "sv_bound", *PRICE_KEYS.values())
ss = st.session_state
rest = ss.sv_rest
with user_errors():
    spec = Speculation(int(ss.sv_draft), float(ss.sv_accept), "mtp" if has_mtp(ss.sv_preset) else "draft-model") \
        if ss.sv_spec else None
    s = Serving(ss.sv_preset, ss.sv_gpu, int(ss.sv_gpus), int(ss.sv_ep), int(ss.sv_tp),
                {"routed_experts": ss.sv_experts, "attention": rest, "shared": rest, "embeddings": rest},
                int(ss.sv_context), bool(ss.sv_overlap), float(ss.sv_price) or None, spec=spec)
    place = check_fits(s, int(ss.sv_batch) or None)  # refuses what does not fit before anything else runs
    batch = int(ss.sv_batch) or place.max_batch_per_gpu
    step = decode_step(s, batch)
    predicted = as_step(terms(s), FITTED.efficiency, batch)
price_src = USD_PER_GPU_HOUR[s.gpu][1] if not ss.sv_price else "your number"


@st.cache_data(max_entries=1, show_spinner="Predicting every published run from a fit of the others…")
def checked_cached():
    return checked()


@st.cache_data(max_entries=32, show_spinner="Predicting every setup's curve…")
def frontier_cached(preset: str, context: int, prices: tuple, spec_: Speculation | None, model: str):
    return frontier(preset, context, prices=dict(prices), spec=spec_, model=model)


check = checked_cached()
fig_col.plotly_chart(shared_figure(prediction_figure, check.rows), width="stretch")
fig_col.markdown(checked_sentence(check))
model = "bound" if ss.sv_bound else "predicted"
with user_errors():
    fr = frontier_cached(s.name, s.context, tuple(sorted(prices.items())), spec, model)
    verdict_ = verdict(fr, float(ss.sv_speed))
fig_col.plotly_chart(shared_figure(frontier_figure, fr.points, fr.envelope, fr.by_gpu, float(ss.sv_speed),
                                   verdict_.winner), width="stretch")
fig_col.markdown(dollars(("**Roofline bound** (a floor on price). " if ss.sv_bound else "**Predicted.** ")
                         + verdict_.sentence))
fig_col.markdown(dollars(
    f"Your deployment ({s.n_gpus} × {s.gpu}, EP {s.ep}, TP {s.tp}, batch {batch}/GPU): predicted "
    f"{predicted.tokens_per_s_per_user:.1f} tokens/s per user, ${predicted.usd_per_m_output_tokens:.3f} per M output "
    f"tokens; bound {step.tokens_per_s_per_user:.1f}, ${step.usd_per_m_output_tokens:.3f}."))
show_code(checked, frontier, terms, decode_step)
with lazy_expander("What the prediction fits and assumes, run by run", key="serving_x_prediction_terms") as is_open:
    if is_open:
        st.dataframe([{"term": k, "value": f"{v * 1e6:.0f} µs" if k == "layer_s" else f"{v:.2f}", "evidence": "fitted",
                       "what it means": MEANING[k]} for k, v in FITTED.values().items()], hide_index=True,
                     width="stretch")
        st.caption("Fitted (least squares on log errors, `k3lite.analytic.serving.fit`) to the published runs below; "
                   "every other input is released (K3's config), a datasheet's (the GPU table) or cited (the runs' "
                   "settings). The GPU-hour prices are assumed unless the price list says cited.")
        st.dataframe([{"run": r["row"], "fitted": r["fitted"], "TPOT measured (ms)": round(r["measured TPOT (ms)"], 2),
                       "TPOT predicted (ms)": round(r["predicted TPOT (ms)"], 2),
                       "TPOT error": f"{100 * r['tpot error']:+.0f}%",
                       "TTFT measured (s)": round(r["measured TTFT (s)"], 3),
                       "TTFT predicted (s)": round(r["predicted TTFT (s)"], 3),
                       "TTFT error": f"{100 * r['ttft error']:+.0f}%" if r["TTFT scored"] else "arrivals unknown",
                       "bound TPOT (ms)": round(r["bound TPOT (ms)"], 2), "source": r["source"]}
                      for r in check.rows], hide_index=True, width="stretch")
with lazy_expander("Each GPU at this speed, and where the prices come from", key="serving_x_gpu_speed_prices") as is_open:
    if is_open:
        st.caption("Each setup: one replica on EP GPUs (data-parallel attention), every batch that fits; formats: fp8, "
                   "MXFP4 experts + bf16 (K3's release), NVFP4 experts + fp8. Prices (sources on hover): " + ", ".join(
                       f"{g} {'assumed' if fr.prices[g][1].startswith('assumed') else 'cited'}" for g in GPUS) + ".")
        if spec is not None:
            st.caption(f"Speculation: {s.name} ships {MTP_LAYERS[s.name][0]} MTP layer(s) ({MTP_LAYERS[s.name][1]}), so "
                       f"the drafter is {'its MTP layer' if spec.drafter == 'mtp' else 'a separate model'}. Defaults: "
                       f"{SPEC_SOURCE}.")
        st.dataframe([{"GPU": g, "setup": p.label, "$ / M output": round(p.usd_per_m_output_tokens, 3),
                       "tok/s / user": round(p.tokens_per_s_per_user, 1), "tok/s / GPU": round(p.tokens_per_s_per_gpu),
                       "bound by": p.bound, "$ / GPU-hour": fr.prices[g][0]}
                      for g, p in per_gpu_at(fr, float(ss.sv_speed)).items()],
                     hide_index=True, width="stretch")

with lazy_expander("1. Placement: weights per GPU and what is left for the cache", key="serving_x_1_placement_weights_per") as is_open:
    if is_open:
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("weights per GPU", fmt_bytes(place.weight_bytes_per_gpu))
        m2.metric("HBM left for cache + activations", fmt_bytes(place.free_hbm_bytes_per_gpu))
        m3.metric(f"{s.gpu} GPUs for the weights alone", f"{place.min_gpus_for_weights}")
        m4.metric(f"sequences of {s.context:,} tokens per GPU", f"{place.max_batch_per_gpu:,}")
        st.plotly_chart(shared_figure(placement_figure, place.by_component, batch * place.cache_bytes_per_sequence, place.hbm_bytes,
                                      f"One {s.gpu} at batch {batch}"), width="stretch")
        gpu = GPUS[s.gpu]
        st.caption(f"{s.gpu}: {gpu.source}." + (f" Not verified: {gpu.unverified}." if gpu.unverified else "")
                   + " Byte counts: `k3lite.analytic.memory` (parameters counted from the real modules on the meta device; 4-bit "
                   "formats include their scales: NVFP4 +1/16 byte, MXFP4 +1/32, INT4 +2/32 per parameter).")

        st.markdown("**The seed's claim**: K3 'even at reduced precision spreads its weights across roughly six GPUs in an "
                    "NVIDIA DGX B300 just for the weights'.")
        six = gpus_for_weights(K3_PRESET, "B300")
        st.plotly_chart(shared_figure(gpus_for_weights_figure, [r.fmt for r in six], [r.gpus for r in six], 6, "B300"), width="stretch")
        true_for = [r.fmt for r in six if r.whole_gpus == 6]
        n_fp8 = next(r.whole_gpus for r in six if r.fmt == "fp8")
        explain(f"Computed: the {fmt_params(count_params(get_preset(K3_PRESET)).total)} weights need {', '.join(f'{r.gpus:.1f} ({r.fmt})' for r in six)} B300s' worth of "
                f"288 GB. 'Roughly six' is true for {', '.join(true_for) or 'no format'}: 4-bit weights with their scales. "
                f"At fp8 it takes {n_fp8} GPUs, {'more than' if n_fp8 > 8 else 'within'} one 8-GPU DGX B300.")

        show_code(check_fits, gpus_for_weights)

with lazy_expander("2. Capacity: how many sequences fit, by attention design", key="serving_x_2_capacity_many_sequences") as is_open:
    if is_open:
        caps = capacity(s, CONTEXTS)
        st.plotly_chart(shared_figure(capacity_figure, CONTEXTS, caps), width="stretch")
        at = CONTEXTS.index(s.context)
        explain(f"At {s.context:,} tokens with these weights per GPU: " + "; ".join(f"{k}: {v[at]:,}" for k, v in caps.items())
                + " sequences per GPU. Cache bytes from `k3lite.analytic.memory` (the hybrid page's functions): MLA (Multi-head Latent Attention) latent per "
                "token, KDA fixed state + conv tail, GQA K and V per token.")

        show_code(capacity)

with lazy_expander("3. One decode step, tokens/s and $ per million output tokens", key="serving_x_3_one_decode_step") as is_open:
    if is_open:
        k1, k2, k3, k4 = st.columns(4)
        k1.metric("step time", f"{step.step_s * 1e3:.1f} ms", help=f"bound by {step.bound}")
        k2.metric("tokens/s per GPU", f"{step.tokens_per_s_per_gpu:,.0f}")
        k3.metric("tokens/s per user", f"{step.tokens_per_s_per_user:.1f}")
        k4.metric("$ per M output tokens", f"${step.usd_per_m_output_tokens:.3f}",
                  help=f"at ${s.price:.2f} per GPU-hour ({price_src})")
        st.plotly_chart(shared_figure(step_figure, step.hbm_s, step.compute_s, step.wire_s, step.step_s, s.overlap), width="stretch")
        curve = pareto(s)
        st.plotly_chart(shared_figure(pareto_figure, [p.tokens_per_s_per_user for p in curve], [p.tokens_per_s_per_gpu for p in curve],
                                      [p.batch_per_gpu for p in curve], (step.tokens_per_s_per_user, step.tokens_per_s_per_gpu)),
                        width="stretch")
        explain(dollars(f"At batch {batch} the step is {step.bound}-bound ({step.hbm_s * 1e3:.1f} ms of HBM reads, "
                f"{step.compute_s * 1e3:.1f} ms of compute, {step.wire_s * 1e3:.1f} ms on the wire). Going from batch "
                f"{curve[0].batch_per_gpu} to {curve[-1].batch_per_gpu} raises tokens/s per GPU "
                f"{curve[-1].tokens_per_s_per_gpu / curve[0].tokens_per_s_per_gpu:.0f}x and lowers each user's speed from "
                f"{curve[0].tokens_per_s_per_user:.0f} to {curve[-1].tokens_per_s_per_user:.0f} tokens/s: the trade every "
                f"serving benchmark plots. " + (speculation_sentence(s, batch) if spec else "")
                + f" Price: ${s.price:.2f} per GPU-hour ({price_src})."))
        show_code(decode_step, pareto)


@st.fragment
def prefill_panel(s: Serving, step) -> None:
    """Its own two controls rerun only this panel."""
    with lazy_expander("3b. Prefill and decode as separate pools", key="serving_x_3b_prefill_decode_as") as is_open:
        if is_open:
            url_state("sv_pre_ep", 32, lo=1, hi=1024)
            url_state("sv_pre_chunk", PREFILL_CHUNK_TOKENS, lo=256, hi=1_000_000)
            pre_fig, pre_ctl = st.columns([3, 1])
            pre_ctl.number_input("prefill pool: GPUs = EP", 1, 1024, key="sv_pre_ep",
                                 help="DeepSeek's inference overview (day 6): prefill units of 32 GPUs (EP32), decode of 144 (EP144)")
            pre_ctl.number_input("prefill batch (tokens per GPU per forward)", 256, 1_000_000, step=1024, key="sv_pre_chunk",
                                 help="default: vLLM's max_num_batched_tokens for the high-memory tier (K3 post, PR #51726)")
            push_url("sv_pre_ep", "sv_pre_chunk")
            with user_errors():
                pre = prefill_step(s.with_(n_gpus=int(st.session_state.sv_pre_ep), ep=int(ss.sv_pre_ep), tp=1, spec=None), int(ss.sv_pre_chunk))
            ratio, listed, split_text = price_split_sentence(step, pre, f"{ss.sv_pre_ep} x {s.gpu}, EP {ss.sv_pre_ep}")
            pre_fig.plotly_chart(shared_figure(price_ratio_figure, ["this deployment, at cost"] + [f"{n} list price" for n in listed],
                                               [ratio, *listed.values()]), width="stretch")
            pre_ctl.metric("$ per M input (prefill)", f"${pre.usd_per_m_input_tokens:.3f}", help=f"{pre.bound}-bound")
            pre_ctl.metric("$ per M output (decode)", f"${step.usd_per_m_output_tokens:.3f}", help=f"{step.bound}-bound")
            explain(dollars(split_text))
            show_code(prefill_step, price_split_sentence)


prefill_panel(s, step)


@st.cache_data(show_spinner="Evaluating the waterfall, the side-by-side and the published checks…", max_entries=8)
def comparisons(context: int):
    return waterfall(context=context), side_by_side(context=context), validate()


with user_errors():
    steps, rows, checks = comparisons(s.context)

with lazy_expander("4. What each choice buys", key="serving_x_4_choice_buys") as is_open:
    if is_open:
        deltas = [(b.usd_per_m - a.usd_per_m, b) for a, b in zip(steps, steps[1:])]
        biggest_delta, biggest = max(deltas, key=lambda d: abs(d[0]))  # the largest step either way
        saving_delta, saving = min(deltas, key=lambda d: d[0])
        raises = [f"'{w.label}' ({d:+.3f} $/M)" for d, w in deltas if d > 0 and w is not biggest]
        st.plotly_chart(shared_figure(waterfall_figure, [w.label for w in steps], [w.usd_per_m for w in steps]), width="stretch")
        hw0 = steps[0].serving
        explain(dollars(f"Same hardware for every bar ({hw0.n_gpus} x {hw0.gpu}, EP {hw0.ep}, context {s.context:,}), each at "
                f"the largest batch per GPU that fits and keeps every user at >= {MIN_TOKENS_PER_USER:.0f} tokens/s. "
                + "; ".join(f"{w.label}: ${w.usd_per_m:.3f} (batch {w.batch})" for w in steps)
                + f". The biggest step is '{biggest.label}' ({biggest_delta:+.3f} $/M)"
                + (f"; the biggest saving is '{saving.label}' ({saving_delta:+.3f} $/M)" if saving is not biggest and saving_delta < 0
                   else "")
                + (f"; {' and '.join(raises)} raise{'s' if len(raises) == 1 else ''} the cost"
                   f"{' too' if biggest_delta > 0 else ''}" if raises else "")
                + f"; overall K3's choices take the cost to "
                f"{steps[-1].usd_per_m / steps[0].usd_per_m:.2f}x the classic design's."))
        st.dataframe([{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
                     hide_index=True, width="stretch")
        cheap = min(rows, key=lambda r: r["$ / M output"])
        dear = max(rows, key=lambda r: r["$ / M output"])
        explain(dollars(f"Side by side on the same hardware and context: the cheapest is {cheap['model']} with {cheap['weights']} "
                        f"(${cheap['$ / M output']:.3f} per M output tokens at {cheap['batch / GPU']} sequences per GPU), the "
                        f"dearest {dear['model']} with {dear['weights']} (${dear['$ / M output']:.3f} at {dear['batch / GPU']}). "
                        + ("Every row is HBM-bound, so the sequences that fit next to the weights set the price."
                           if all(r["bound by"] == "HBM" for r in rows) else
                           "Bound by: " + ", ".join(f"{r['model']} {r['weights']}: {r['bound by']}" for r in rows) + ".")))

        show_code(waterfall, side_by_side)

with lazy_expander("5. Checked against published serving figures", key="serving_x_5_checked_against_published") as is_open:
    if is_open:
        @st.cache_data(max_entries=16, show_spinner=False)
        def vllm_checks(acceptance: float):
            return validate_vllm_k3(Speculation(DSPARK_DRAFT_TOKENS, acceptance))


        # the post's draft length, the page's acceptance (the default where it exceeds what 8 drafts allow)
        k3_acceptance = float(ss.sv_accept) if ss.sv_accept <= DSPARK_DRAFT_TOKENS + 1 else Speculation().acceptance
        with user_errors():
            k3_rows = vllm_checks(k3_acceptance)
        labels = [c["short"] for c in checks] + [f"vLLM K3, 8 B300 TP8, {r['concurrency']} user(s)" for r in k3_rows]
        st.plotly_chart(shared_figure(validation_figure, labels,
                                      [c["measured tokens/s / GPU"] for c in checks] + [r["measured tokens/s (node)"] / 8 for r in k3_rows],
                                      [c["model tokens/s / GPU"] for c in checks] + [r["model tokens/s (node)"] / 8 for r in k3_rows]),
                        width="stretch")
        st.dataframe([{k: (round(v, 2) if isinstance(v, float) else v) for k, v in c.items() if k != "short"} for c in checks],
                     hide_index=True, width="stretch")
        lo, hi = min(c["model / measured"] for c in checks), max(c["model / measured"] for c in checks)
        standing = ("never below, as an upper bound must" if lo >= 1 else
                    f"BELOW a measurement for {', '.join(c['deployment'] for c in checks if c['model / measured'] < 1)}: "
                    "the model misses something those systems do")
        explain(f"The model lands {lo:.2f}x to {hi:.2f}x the measured tokens/s (with overlap, at each publication's "
                f"batch and context): {standing}. What it leaves out: kernel efficiency below "
                "peak, expert load imbalance (EPLB gave SGLang 2.54x in decode), launch and synchronisation "
                "latency and activation memory (the wire bytes are DeepEP low-latency's, one message per token and "
                "selected expert, from `k3lite.interconnect`). DeepSeek's own figure "
                "also includes speculative multi-token prediction, which the model does not credit.")
        st.dataframe([{k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()} for r in k3_rows],
                     hide_index=True, width="stretch")
        explain(dollars(vllm_k3_sentence(k3_rows, k3_acceptance)))
        show_code(validate, validate_vllm_k3)
