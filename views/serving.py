"""Serving: from the architecture to $ per million tokens (placement, capacity, decode step, price)."""
import math
from functools import partial

import streamlit as st

from k3lite.model.presets import get_preset
from k3lite.analytic.hardware import GPUS
from k3lite.analytic.memory import RELEASED_K3_FORMATS
from k3lite.analytic.params import count_params
from k3lite.analytic.params import fmt as fmt_params
from k3lite.analytic.serving import (
    DSPARK_DRAFT_TOKENS, FORMAT_ALIASES, K3_PRESET, MIN_TOKENS_PER_USER, MTP_LAYERS, PREFILL_CHUNK_TOKENS, SPEC_SOURCE,
    USD_PER_GPU_HOUR, Serving, Speculation, capacity, check_fits, decode_step, has_mtp, pareto, placement,
    prefill_step,
)
from k3lite.analytic.sensitivity import Assumption
from k3lite.analytic.serving.deployment import default_speculation, speculation_source
from k3lite.analytic.serving.measured import SGLANG_MI350X_SOURCE, SGLANG_SOURCE, VLLM_K3_SOURCE
from k3lite.analytic.serving.step import PREFILL_CHUNK_SOURCE
from k3lite.base.evidence import assumed, derived, measured_elsewhere, released
from k3lite.analytic.serving.compare import (
    gpus_for_weights, price_split_sentence, side_by_side, speculation_sentence, validate, validate_vllm_k3,
    vllm_k3_sentence, waterfall,
)
from k3lite.analytic.serving.fit import FITTED, MEANING, checked, checked_sentence, fit
from k3lite.analytic.serving.frontier import (
    FRONTIER_CACHES, FRONTIER_EP, FRONTIER_FORMATS, FRONTIER_GPUS, FRONTIER_TP, INTERACTIVE_TOKENS_PER_USER, RELEASED,
    cheapest_usd_per_m, frontier, per_gpu_at, per_gpu_rows, verdict,
)
from k3lite.analytic.serving.deployment import (
    CACHE_FORMATS, CACHE_SOURCE, PRICE_URL_KEYS, price_evidence, price_kind, price_table,
)
from k3lite.analytic.hardware import gpu_name
from k3lite.analytic.serving.predict import as_step, terms
from k3lite.analytic.serving.target import solve
from k3lite.analytic.serving.export import scenario_link, serving_scenario
from k3lite.base.scenario import to_csv, to_json
from k3lite.viz.memo import shared_figure
from k3lite.viz.serving import (
    capacity_figure, frontier_figure, gpus_for_weights_figure, pareto_figure, placement_figure, prediction_figure,
    price_ratio_figure, step_figure, validation_figure, waterfall_figure,
)
from k3lite.base.units import fmt_capacity
from k3lite.viz.style import fmt_bytes
from views.common import (
    assumptions_block, fill_from, lazy_expander, metric, push_url, reset_button, sentence, show_code, table, url_state,
    user_errors,
)

PRESETS = [K3_PRESET, "kimi-k2", "deepseek-v3", "kimi-linear-48b-a3b"]
FORMATS = [f for f in FORMAT_ALIASES if f != "fp4"]
def dollars(text: str) -> str:
    """Escape $ for Markdown (two dollar signs in one caption would otherwise render as LaTeX)."""
    return text.replace("$", "\\$")


CONTEXTS = [4096, 16384, 32768, 65536, 131072, 262144, 524288, 1048576]
# the evidence each number on this page carries (k3lite.base.evidence)
RUNS = measured_elsewhere(f"published K3 runs: {SGLANG_SOURCE}; {VLLM_K3_SOURCE}; MI350X: {SGLANG_MI350X_SOURCE}")
FITTED_EV = derived(fit)  # the efficiencies: least squares over RUNS (`python -m k3lite.analytic.serving predict`)
PRICE_EV = assumed("$ per GPU-hour: assumed, or a quoted rental rate where the price list cites one")
CONFIG_EV = released("the model's config.json (k3lite.model.presets) and the GPU table's datasheets")
LIST_EV = released("the providers' list prices (k3lite.analytic.cost.PRICES, each with its source)")
# each model's own speculation defaults: DeepSeek-V3's MTP figures, K3's DSpark figures for the rest
SPEC_DEFAULTS = {p: {"sv_draft": default_speculation(p).draft_tokens, "sv_accept": default_speculation(p).acceptance}
                 for p in PRESETS}

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
url_state("sv_spec", False)
url_state("sv_draft", SPEC_DEFAULTS[st.session_state.sv_preset]["sv_draft"], lo=1, hi=32)  # the model's own
url_state("sv_accept", SPEC_DEFAULTS[st.session_state.sv_preset]["sv_accept"], lo=1.0, hi=33.0)  # speculation
url_state("sv_speed", INTERACTIVE_TOKENS_PER_USER, lo=1.0, hi=1000.0)
url_state("sv_bound", False)
ctl, fig_col = st.columns([1, 3])
ctl.selectbox("model", PRESETS, key="sv_preset", on_change=partial(fill_from, "sv_preset", SPEC_DEFAULTS))
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
PRICE_KEYS = PRICE_URL_KEYS  # the one price table: frontier, deployment and the cost page's physics row
for g, key in PRICE_KEYS.items():
    url_state(key, float(USD_PER_GPU_HOUR[g][0]), lo=0.1, hi=999.0)
with ctl, lazy_expander("GPU-hour prices ($)", key="serving_x_gpu_hour_prices") as is_open:
    if is_open:
        for g, key in PRICE_KEYS.items():
            st.number_input(g, 0.1, 999.0, step=0.1, key=key, help=f"default {USD_PER_GPU_HOUR[g][0]:g}: "
                            f"{USD_PER_GPU_HOUR[g][1]}. A value you type is yours, and every panel and the cost "
                            "page use it")
prices = {g: float(st.session_state[key]) for g, key in PRICE_KEYS.items()}
PRICES_NOW = price_table(prices)  # {GPU: ($, source)}: a typed price is the reader's ('yours')
# the URL carries short keys: a format's name has a comma in it, and a list travels comma-joined
FORMAT_KEYS = {"released": RELEASED, "nvfp4": "NVFP4 experts, fp8 rest", "fp8": "fp8"}
assert set(FORMAT_KEYS.values()) == set(FRONTIER_FORMATS), "every frontier format has a URL key"
url_state("sv_formats", ["released"], choices=list(FORMAT_KEYS))
url_state("sv_tps", [str(t) for t in FRONTIER_TP], choices=[str(t) for t in FRONTIER_TP])
url_state("sv_caches", list(FRONTIER_CACHES), choices=list(CACHE_FORMATS))
with ctl, lazy_expander("What the frontier searches", key="serving_x_search") as is_open:
    if is_open:
        st.multiselect("weight formats", list(FORMAT_KEYS), key="sv_formats", format_func=FORMAT_KEYS.get,
                       help="K3 ships MXFP4 experts + bf16 rest; the others are re-quantisations")
        st.multiselect("attention TP (1 = data-parallel attention)", [str(t) for t in FRONTIER_TP], key="sv_tps")
        st.multiselect("MLA cache format", list(CACHE_FORMATS), key="sv_caches", help=CACHE_SOURCE)
SEARCH = (tuple(FORMAT_KEYS[k] for k in st.session_state.sv_formats) or (RELEASED,),
          tuple(int(t) for t in st.session_state.sv_tps) or FRONTIER_TP,
          tuple(st.session_state.sv_caches) or FRONTIER_CACHES)  # an emptied box searches its default
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
push_url("sv_formats", "sv_tps", "sv_caches", "sv_preset", "sv_gpu", "sv_gpus", "sv_ep", "sv_tp", "sv_experts", "sv_rest", "sv_context", "sv_batch",
         "sv_overlap", "sv_spec", "sv_draft", "sv_accept", "sv_speed", "sv_bound", *PRICE_KEYS.values())
ss = st.session_state
rest = ss.sv_rest
NAME, CONTEXT = ss.sv_preset, int(ss.sv_context)  # what the frontier and the sections below it read
with user_errors():  # a speculation the model cannot run is every panel's input: it stops the page
    spec = Speculation(int(ss.sv_draft), float(ss.sv_accept), "mtp" if has_mtp(ss.sv_preset) else "draft-model") \
        if ss.sv_spec else None
# the deployment's own errors stay in its own panel: the frontier and the verdict do not depend on it
s = place = step = predicted = None
deploy_error = ""
try:
    s = Serving(ss.sv_preset, ss.sv_gpu, int(ss.sv_gpus), int(ss.sv_ep), int(ss.sv_tp),
                {"routed_experts": ss.sv_experts, "attention": rest, "shared": rest, "embeddings": rest},
                int(ss.sv_context), bool(ss.sv_overlap), PRICES_NOW[gpu_name(ss.sv_gpu)][0], spec=spec)
    place = check_fits(s, int(ss.sv_batch) or None)  # refuses what does not fit before anything else runs
    batch = int(ss.sv_batch) or place.max_batch_per_gpu
    step = decode_step(s, batch)
    predicted = as_step(terms(s), FITTED.efficiency, batch)
except ValueError as e:
    deploy_error, step = str(e), None
NOT_RUN = "Your deployment does not run (its message is under the frontier): change it in 'Your deployment'."
price_src = PRICES_NOW[gpu_name(ss.sv_gpu)][1]  # the same table the frontier reads
DEPLOY_PRICE_EV = price_evidence(price_src)


@st.cache_data(max_entries=1, show_spinner="Predicting every published run from a fit of the others…")
def checked_cached():
    return checked()


@st.cache_data(max_entries=32, show_spinner="Predicting every setup's curve…")
def frontier_cached(preset: str, context: int, prices: tuple, spec_: Speculation | None, model: str, search: tuple):
    formats, tps, caches = search
    return frontier(preset, context, prices=dict(prices), spec=spec_, model=model, formats=formats, tps=tps,
                    caches=caches)


check = checked_cached()
fig_col.plotly_chart(shared_figure(prediction_figure, check.rows, evidence=derived(checked),
                                   evidence_by_name={"roofline bound": derived(decode_step)}), width="stretch")
sentence(checked_sentence(check), derived(checked, checked_sentence), RUNS, container=fig_col)
model = "bound" if ss.sv_bound else "predicted"
with user_errors():
    fr = frontier_cached(NAME, CONTEXT, tuple(sorted(prices.items())), spec, model, SEARCH)
    verdict_ = verdict(fr, float(ss.sv_speed))
fig_col.plotly_chart(shared_figure(frontier_figure, fr.points, fr.envelope, fr.by_gpu, float(ss.sv_speed),
                                   verdict_.winner, evidence=derived(frontier), evidence_by_name={
                                       "cheapest at that speed": derived(verdict)}), width="stretch")
sentence(dollars(("**Roofline bound** (a floor on price). " if ss.sv_bound else "**Predicted.** ") + verdict_.sentence),
         derived(frontier, verdict), price_evidence(fr.prices[verdict_.winner.gpu][1]) if verdict_.winner else PRICE_EV,
         FITTED_EV, container=fig_col)
if step is None:
    fig_col.error(f"Your deployment ({ss.sv_gpus} x {ss.sv_gpu}, EP {ss.sv_ep}, TP {ss.sv_tp}): {deploy_error}",
                  icon="⚠️")
else:
    sentence(dollars(
        f"Your deployment ({s.n_gpus} × {s.gpu}, EP {s.ep}, TP {s.tp}, batch {batch}/GPU): predicted "
        f"{predicted.tokens_per_s_per_user:.1f} tokens/s per user, ${predicted.usd_per_m_output_tokens:.3f} per M "
        f"output tokens; bound {step.tokens_per_s_per_user:.1f}, ${step.usd_per_m_output_tokens:.3f}."),
        derived(as_step, decode_step), DEPLOY_PRICE_EV, container=fig_col)
show_code(checked, frontier, terms, decode_step)
with lazy_expander("What the prediction fits and assumes, run by run", key="serving_x_prediction_terms") as is_open:
    if is_open:
        table(st, [{"term": k, "value": f"{v * 1e6:.0f} µs" if k == "layer_s" else f"{v:.2f}",
                    "what it means": MEANING[k]} for k, v in FITTED.values().items()], {"value": FITTED_EV},
              hide_index=True, width="stretch")
        st.caption("Fitted (least squares on log errors, `k3lite.analytic.serving.fit`) to the published runs below; "
                   "every other input is released (K3's config), a datasheet's (the GPU table) or cited (the runs' "
                   "settings). The GPU-hour prices are assumed unless the price list says cited.")
        table(st, [{"run": r["row"], "fitted": r["fitted"], "TPOT measured (ms)": round(r["measured TPOT (ms)"], 2),
                       "TPOT predicted (ms)": round(r["predicted TPOT (ms)"], 2),
                       "TPOT error": f"{100 * r['tpot error']:+.0f}%",
                       "TTFT measured (s)": round(r["measured TTFT (s)"], 3),
                       "TTFT predicted (s)": round(r["predicted TTFT (s)"], 3),
                       "TTFT error": f"{100 * r['ttft error']:+.0f}%" if r["TTFT scored"] else "arrivals unknown",
                    "bound TPOT (ms)": round(r["bound TPOT (ms)"], 2), "source": r["source"]}
                   for r in check.rows], {"TPOT measured (ms)": RUNS, "TTFT measured (s)": RUNS,
                                          "bound TPOT (ms)": derived(decode_step)},
              default=derived(checked), hide_index=True, width="stretch")
with lazy_expander("Each GPU at this speed, and where the prices come from", key="serving_x_gpu_speed_prices") as is_open:
    if is_open:
        st.caption(f"Searched (change it under 'What the frontier searches'): one replica on EP GPUs, EP in "
                   f"{', '.join(map(str, FRONTIER_EP))}; attention TP {', '.join(map(str, SEARCH[1]))} (TP 1: "
                   f"data-parallel attention); weights {'; '.join(SEARCH[0])}; MLA cache {', '.join(SEARCH[2])}; every "
                   "batch that fits. Prices (sources on hover): " + ", ".join(
                       f"{g} {price_kind(fr.prices[g][1])}" for g in GPUS) + ". "
                   + f"Our assumption: the Hopper GPUs ({', '.join(g for g in FRONTIER_GPUS if not GPUS[g].fp4_flops)}) "
                   "have no FP4 tensor cores, so their 4-bit experts are modelled as dequantised to FP8 (4-bit bytes "
                   "read, FP8 FLOPs).")
        if spec is not None:
            st.caption(f"Speculation: {NAME} ships {MTP_LAYERS[NAME][0]} MTP layer(s) ({MTP_LAYERS[NAME][1]}), so "
                       f"the drafter is {'its MTP layer' if spec.drafter == 'mtp' else 'a separate model'}. Defaults: "
                       f"{speculation_source(NAME)}.")
        table(st, [{"GPU": g, "setup": p.label, "$ / M output": round(p.usd_per_m_output_tokens, 3),
                    "tok/s / user": round(p.tokens_per_s_per_user, 1), "tok/s / GPU": round(p.tokens_per_s_per_gpu),
                    "bound by": p.bound, "$ / GPU-hour": fr.prices[g][0], "price is": price_kind(fr.prices[g][1])}
                   if p is not None else
                   {"GPU": g, "setup": f"none: {why}", "$ / M output": None, "tok/s / user": None,
                    "tok/s / GPU": None, "bound by": "", "$ / GPU-hour": fr.prices[g][0],
                    "price is": price_kind(fr.prices[g][1])}
                   for g, p, why in per_gpu_rows(fr, FRONTIER_GPUS, float(ss.sv_speed))], {"$ / GPU-hour": PRICE_EV},
              default=derived(per_gpu_at, frontier), hide_index=True, width="stretch")

url_state("sv_t_speed", INTERACTIVE_TOKENS_PER_USER, lo=1.0, hi=1000.0)
url_state("sv_t_in", 8192, lo=1, hi=10_000_000)
url_state("sv_t_out", 1024, lo=0, hi=1_000_000)
url_state("sv_t_users", 1000, lo=1, hi=100_000_000)
push_url("sv_t_speed", "sv_t_in", "sv_t_out", "sv_t_users")
TARGET_IN = {"speed": float(ss.sv_t_speed), "users": int(ss.sv_t_users), "input_len": int(ss.sv_t_in),
             "output_len": int(ss.sv_t_out)}
tgt, target_error = None, ""
if step is not None:
    try:  # a fraction of a millisecond: computed for the export too, whether its panel is open or not
        tgt = solve(s, **TARGET_IN, acceptance=spec.acceptance if spec else None)
    except ValueError as e:
        target_error = str(e)
with lazy_expander("Solve for my target (users, speed)", key="serving_x_solve") as is_open:
    if is_open and step is None:
        st.info(NOT_RUN)
    elif is_open:
        t1, t2, t3, t4 = st.columns(4)
        t1.number_input("tokens/s per user", 1.0, 1000.0, step=5.0, key="sv_t_speed")
        t2.number_input("input tokens per request", 1, 10_000_000, step=1024, key="sv_t_in")
        t3.number_input("output tokens per request", 0, 1_000_000, step=256, key="sv_t_out")
        t4.number_input("users online at once", 1, 100_000_000, step=100, key="sv_t_users")
        if target_error:
            st.error(f"⚠️ {target_error}")
        else:
            ev = derived(solve)
            money = f"at ${s.price:.2f} per GPU-hour ({price_src})"
            r1, r2, r3, r4, r5 = st.columns(5)
            metric(r1, "requests per replica", f"{tgt.concurrency:,}", ev, help=f"of {tgt.admitted:,} admitted in "
                   f"HBM; what caps it: {tgt.binding}")
            metric(r2, "at your target: $ per M output", f"${tgt.usd_per_m_output:.3f}" if tgt.concurrency else "—", ev,
                   help=money)
            metric(r3, "replicas", f"{tgt.replicas:,}", ev, help=f"{s.n_gpus} GPUs each")
            metric(r4, "GPUs", f"{tgt.gpus:,}", ev)
            metric(r5, "$ per month", f"${tgt.usd_per_month:,.0f}" if tgt.concurrency else "—", ev,
                   help=f"730 hours {money}")
            sentence(dollars(tgt.sentence), ev, FITTED_EV, DEPLOY_PRICE_EV)
            show_code(solve)

with lazy_expander("Export this scenario", key="serving_x_export") as is_open:
    if is_open:
        link = scenario_link(st.context.url, st.query_params.to_dict())
        ins, outs = serving_scenario(s, DEPLOY_PRICE_EV, float(ss.sv_speed), verdict_.winner, batch if step else None,
                                     predicted, step, tgt, TARGET_IN, deploy_error)
        title = f"k3lite serving scenario: {NAME} at {CONTEXT:,} tokens"
        d1, d2 = st.columns(2)
        d1.download_button("scenario as JSON", to_json(title, ins, outs, link), "k3lite-serving-scenario.json",
                           "application/json")
        d2.download_button("scenario as CSV", to_csv(ins, outs), "k3lite-serving-scenario.csv", "text/csv")
        st.caption(f"Every value with its unit and evidence class. This link reopens the page on it: {link}")

with lazy_expander("1. Placement: weights per GPU and what is left for the cache", key="serving_x_1_placement_weights_per") as is_open:
    if is_open and step is None:
        st.info(NOT_RUN)
    elif is_open:
        m1, m2, m3, m4 = st.columns(4)
        ev = derived(placement)
        metric(m1, "weights per GPU", fmt_bytes(place.weight_bytes_per_gpu), ev)
        metric(m2, "HBM left for cache + activations", fmt_bytes(place.free_hbm_bytes_per_gpu), ev,
               help=f"of the {s.gpu}'s {fmt_capacity(place.hbm_bytes)} (binary, as HBM is sold)")
        metric(m3, f"{s.gpu} GPUs for the weights alone", f"{place.min_gpus_for_weights}", ev)
        metric(m4, f"sequences of {s.context:,} tokens per GPU", f"{place.max_batch_per_gpu:,}", ev)
        st.plotly_chart(shared_figure(placement_figure, place.by_component, batch * place.cache_bytes_per_sequence,
                                      place.hbm_bytes, f"One {s.gpu} at batch {batch}", evidence=ev), width="stretch")
        gpu = GPUS[s.gpu]
        st.caption(f"{s.gpu}: {gpu.source}." + (f" Not verified: {gpu.unverified}." if gpu.unverified else "")
                   + " Byte counts: `k3lite.analytic.memory` (parameters counted from the real modules on the meta device; 4-bit "
                   "formats include their scales: NVFP4 +1/16 byte, MXFP4 +1/32, INT4 +2/32 per parameter).")

        st.markdown("**The seed's claim**: K3 'even at reduced precision spreads its weights across roughly six GPUs in an "
                    "NVIDIA DGX B300 just for the weights'.")
        six = gpus_for_weights(K3_PRESET, "B300")
        st.plotly_chart(shared_figure(gpus_for_weights_figure, [r.fmt for r in six], [r.gpus for r in six], 6, "B300",
                                      evidence=derived(gpus_for_weights)), width="stretch")
        released_b300 = sum(placement(Serving(K3_PRESET, "B300", 1, 1, 1)).by_component.values()) / GPUS["B300"].hbm_bytes
        whole = {r.whole_gpus for r in six if r.fmt in ("nvfp4", "mxfp4", "int4")}
        n_fp8 = next(r.whole_gpus for r in six if r.fmt == "fp8")
        sentence(f"Computed: the {fmt_params(count_params(get_preset(K3_PRESET)).total)} weights need "
                 f"{', '.join(f'{r.gpus:.2f} ({r.fmt})' for r in six)} B300s' worth of "
                 f"{fmt_capacity(GPUS['B300'].hbm_bytes)}; as released (MXFP4 experts, bf16 rest) {released_b300:.2f}. "
                 f"4-bit weights with their scales take {' or '.join(map(str, sorted(whole)))} whole B300s: "
                 f"'roughly six' {'holds' if whole & {5, 6} else 'does not hold'}. At fp8 it takes {n_fp8} GPUs, "
                 f"{'beyond' if n_fp8 > 8 else 'within'} one 8-GPU DGX B300.", derived(gpus_for_weights, placement))

        show_code(check_fits, gpus_for_weights)

with lazy_expander("2. Capacity: how many sequences fit, by attention design", key="serving_x_2_capacity_many_sequences") as is_open:
    if is_open and step is None:
        st.info(NOT_RUN)
    elif is_open:
        caps = capacity(s, CONTEXTS)
        st.plotly_chart(shared_figure(capacity_figure, CONTEXTS, caps, evidence=derived(capacity)), width="stretch")
        at = CONTEXTS.index(s.context)
        sentence(f"At {s.context:,} tokens with these weights per GPU: " + "; ".join(f"{k}: {v[at]:,}" for k, v in caps.items())
                + " sequences per GPU. Cache bytes from `k3lite.analytic.memory` (the hybrid page's functions): MLA (Multi-head Latent Attention) latent per "
                 "token, KDA fixed state + conv tail, GQA K and V per token.", derived(capacity), CONFIG_EV)

        show_code(capacity)

with lazy_expander("3. One decode step, tokens/s and $ per million output tokens", key="serving_x_3_one_decode_step") as is_open:
    if is_open and step is None:
        st.info(NOT_RUN)
    elif is_open:
        k1, k2, k3, k4 = st.columns(4)
        ev = derived(decode_step)
        metric(k1, "step time", f"{step.step_s * 1e3:.1f} ms", ev, help=f"bound by {step.bound}")
        metric(k2, "tokens/s per GPU", f"{step.tokens_per_s_per_gpu:,.0f}", ev)
        metric(k3, "tokens/s per user", f"{step.tokens_per_s_per_user:.1f}", ev)
        metric(k4, "$ per M output tokens", f"${step.usd_per_m_output_tokens:.3f}", ev,
               help=f"at ${s.price:.2f} per GPU-hour ({price_src})")
        st.plotly_chart(shared_figure(step_figure, step.hbm_s, step.compute_s, step.wire_s, step.step_s, s.overlap,
                                      evidence=ev), width="stretch")
        curve = pareto(s)
        st.plotly_chart(shared_figure(pareto_figure, [p.tokens_per_s_per_user for p in curve],
                                      [p.tokens_per_s_per_gpu for p in curve], [p.batch_per_gpu for p in curve],
                                      (step.tokens_per_s_per_user, step.tokens_per_s_per_gpu), evidence=derived(pareto)),
                        width="stretch")
        sentence(dollars(f"At batch {batch} the step is {step.bound}-bound ({step.hbm_s * 1e3:.1f} ms of HBM reads, "
                f"{step.compute_s * 1e3:.1f} ms of compute, {step.wire_s * 1e3:.1f} ms on the wire). Going from batch "
                f"{curve[0].batch_per_gpu} to {curve[-1].batch_per_gpu} raises tokens/s per GPU "
                f"{curve[-1].tokens_per_s_per_gpu / curve[0].tokens_per_s_per_gpu:.0f}x and lowers each user's speed from "
                f"{curve[0].tokens_per_s_per_user:.0f} to {curve[-1].tokens_per_s_per_user:.0f} tokens/s: the trade every "
                f"serving benchmark plots. " + (speculation_sentence(s, batch) if spec else "")
                + f" Price: ${s.price:.2f} per GPU-hour ({price_src})."), derived(decode_step, pareto), DEPLOY_PRICE_EV,
                 *([derived(speculation_sentence), assumed(speculation_source(s.name))] if spec else []))
        show_code(decode_step, pareto)


@st.fragment
def prefill_panel(s: Serving, step) -> None:
    """Its own two controls rerun only this panel."""
    with lazy_expander("3b. Prefill and decode as separate pools", key="serving_x_3b_prefill_decode_as") as is_open:
        if is_open and step is None:
            st.info(NOT_RUN)
        elif is_open:
            url_state("sv_pre_ep", 32, lo=1, hi=1024)
            url_state("sv_pre_chunk", PREFILL_CHUNK_TOKENS, lo=256, hi=1_000_000)
            pre_fig, pre_ctl = st.columns([3, 1])
            pre_ctl.number_input("prefill pool: GPUs = EP", 1, 1024, key="sv_pre_ep",
                                 help="DeepSeek's inference overview (day 6): prefill units of 32 GPUs (EP32), decode of 144 (EP144)")
            pre_ctl.number_input("prefill batch (tokens per GPU per forward)", 256, 1_000_000, step=1024, key="sv_pre_chunk",
                                 help=f"default 16,384: {PREFILL_CHUNK_SOURCE}")
            push_url("sv_pre_ep", "sv_pre_chunk")
            with user_errors():
                pre = prefill_step(s.with_(n_gpus=int(st.session_state.sv_pre_ep), ep=int(ss.sv_pre_ep), tp=1, spec=None), int(ss.sv_pre_chunk))
            ratio, listed, split_text = price_split_sentence(step, pre, f"{ss.sv_pre_ep} x {s.gpu}, EP {ss.sv_pre_ep}",
                                                             s.name)
            pre_fig.plotly_chart(shared_figure(price_ratio_figure, ["this deployment, at cost"] + [f"{n} list price" for n in listed],
                                               [ratio, *listed.values()], evidence=derived(prefill_step, decode_step),
                                               evidence_by_name={"list prices": LIST_EV}), width="stretch")
            metric(pre_ctl, "$ per M input (prefill)", f"${pre.usd_per_m_input_tokens:.3f}", derived(prefill_step),
                   help=f"{pre.bound}-bound")
            metric(pre_ctl, "$ per M output (decode)", f"${step.usd_per_m_output_tokens:.3f}", derived(decode_step),
                   help=f"{step.bound}-bound")
            sentence(dollars(split_text), derived(price_split_sentence, prefill_step, decode_step), LIST_EV, DEPLOY_PRICE_EV)
            show_code(prefill_step, price_split_sentence)


prefill_panel(s, step)


@st.cache_data(show_spinner="Evaluating the waterfall, the side-by-side and the published checks…", max_entries=8)
def comparisons(context: int):
    return waterfall(context=context), side_by_side(context=context), validate()


with user_errors():
    steps, rows, checks = comparisons(CONTEXT)

with lazy_expander("4. What each choice buys", key="serving_x_4_choice_buys") as is_open:
    if is_open:
        deltas = [(b.usd_per_m - a.usd_per_m, b) for a, b in zip(steps, steps[1:])]
        biggest_delta, biggest = max(deltas, key=lambda d: abs(d[0]))  # the largest step either way
        saving_delta, saving = min(deltas, key=lambda d: d[0])
        raises = [f"'{w.label}' ({d:+.3f} $/M)" for d, w in deltas if d > 0 and w is not biggest]
        st.plotly_chart(shared_figure(waterfall_figure, [w.label for w in steps], [w.usd_per_m for w in steps],
                                      evidence=derived(waterfall)), width="stretch")
        hw0 = steps[0].serving
        sentence(dollars(f"Same hardware for every bar ({hw0.n_gpus} x {hw0.gpu}, EP {hw0.ep}, context {CONTEXT:,}), each at "
                f"the largest batch per GPU that fits and keeps every user at >= {MIN_TOKENS_PER_USER:.0f} tokens/s. "
                + "; ".join(f"{w.label}: ${w.usd_per_m:.3f} (batch {w.batch})" for w in steps)
                + f". The biggest step is '{biggest.label}' ({biggest_delta:+.3f} $/M)"
                + (f"; the biggest saving is '{saving.label}' ({saving_delta:+.3f} $/M)" if saving is not biggest and saving_delta < 0
                   else "")
                + (f"; {' and '.join(raises)} raise{'s' if len(raises) == 1 else ''} the cost"
                   f"{' too' if biggest_delta > 0 else ''}" if raises else "")
                + f"; overall K3's choices take the cost to "
                f"{steps[-1].usd_per_m / steps[0].usd_per_m:.2f}x the classic design's."), derived(waterfall), PRICE_EV)
        table(st, [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
              default=derived(side_by_side), hide_index=True, width="stretch")
        cheap = min(rows, key=lambda r: r["$ / M output"])
        dear = max(rows, key=lambda r: r["$ / M output"])
        sentence(dollars(f"Side by side on the same hardware and context: the cheapest is {cheap['model']} with {cheap['weights']} "
                        f"(${cheap['$ / M output']:.3f} per M output tokens at {cheap['batch / GPU']} sequences per GPU), the "
                        f"dearest {dear['model']} with {dear['weights']} (${dear['$ / M output']:.3f} at {dear['batch / GPU']}). "
                        + ("Every row is HBM-bound, so the sequences that fit next to the weights set the price."
                           if all(r["bound by"] == "HBM" for r in rows) else
                           "Bound by: " + ", ".join(f"{r['model']} {r['weights']}: {r['bound by']}" for r in rows) + ".")),
                 derived(side_by_side), PRICE_EV)

        show_code(waterfall, side_by_side)

with lazy_expander("5. Checked against published serving figures", key="serving_x_5_checked_against_published") as is_open:
    if is_open:
        @st.cache_data(max_entries=16, show_spinner=False)
        def vllm_checks(acceptance: float):
            return validate_vllm_k3(Speculation(DSPARK_DRAFT_TOKENS, acceptance))


        # the post's draft length, the page's acceptance while K3 is the model (else, or where it exceeds what 8
        # drafts allow, K3's DSpark default: another model's acceptance says nothing about K3's drafter)
        k3_acceptance = (float(ss.sv_accept) if NAME == K3_PRESET and ss.sv_accept <= DSPARK_DRAFT_TOKENS + 1
                         else Speculation().acceptance)
        with user_errors():
            k3_rows = vllm_checks(k3_acceptance)
        labels = [c["short"] for c in checks] + [f"vLLM K3, 8 B300 TP8, {r['concurrency']} user(s)" for r in k3_rows]
        published = measured_elsewhere("each publication: " + "; ".join(c["source"] for c in checks)
                                       + f"; {VLLM_K3_SOURCE}")
        st.plotly_chart(shared_figure(validation_figure, labels,
                                      [c["measured tokens/s / GPU"] for c in checks] + [r["measured tokens/s (node)"] / 8 for r in k3_rows],
                                      [c["model tokens/s / GPU"] for c in checks] + [r["model tokens/s (node)"] / 8 for r in k3_rows],
                                      evidence=derived(validate, validate_vllm_k3),
                                      evidence_by_name={"published measurement": published}),
                        width="stretch")
        table(st, [{k: (round(v, 2) if isinstance(v, float) else v) for k, v in c.items() if k != "short"} for c in checks],
              {"measured tokens/s / GPU": published, "batch / GPU": published, "context": published},
              default=derived(validate), hide_index=True, width="stretch")
        lo, hi = min(c["model / measured"] for c in checks), max(c["model / measured"] for c in checks)
        standing = ("never below, as an upper bound must" if lo >= 1 else
                    f"BELOW a measurement for {', '.join(c['deployment'] for c in checks if c['model / measured'] < 1)}: "
                    "the model misses something those systems do")
        sentence(f"The model lands {lo:.2f}x to {hi:.2f}x the measured tokens/s (with overlap, at each publication's "
                f"batch and context): {standing}. What it leaves out: kernel efficiency below "
                "peak, expert load imbalance (EPLB gave SGLang 2.54x in decode), launch and synchronisation "
                "latency and activation memory (the wire bytes are DeepEP low-latency's, one message per token and "
                "selected expert, from `k3lite.interconnect`). DeepSeek's own figure "
                 "also includes speculative multi-token prediction, which the model does not credit.",
                 derived(validate), published)
        vllm = measured_elsewhere(VLLM_K3_SOURCE)
        table(st, [{k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()} for r in k3_rows],
              {"concurrency": vllm, "measured tokens/s (node)": vllm}, default=derived(validate_vllm_k3),
              hide_index=True, width="stretch")
        sentence(dollars(vllm_k3_sentence(k3_rows, k3_acceptance)), derived(vllm_k3_sentence, validate_vllm_k3), vllm,
                 assumed(SPEC_SOURCE))
        show_code(validate, validate_vllm_k3)


def usd_or_out_of_reach(speed: float, v: float) -> str:
    return f"${v:.3f}" if math.isfinite(v) else f"out of reach (no setup keeps {speed:.0f} tok/s per user)"


@st.cache_data(max_entries=64, show_spinner="Moving each assumption ±20%…")
def headline_cached(preset: str, prices_: tuple, spec_: Speculation | None, price_gpu: str, search: tuple,
                    **assumed_values) -> float:
    formats, tps, caches = search
    return cheapest_usd_per_m(preset, dict(prices_), spec_, price_gpu=price_gpu, formats=formats, tps=tps,
                              caches=caches, **assumed_values)


with user_errors():
    fr_pred = fr if model == "predicted" else frontier_cached(NAME, CONTEXT, tuple(sorted(prices.items())), spec,
                                                              "predicted", SEARCH)
    top = verdict(fr_pred, float(ss.sv_speed)).winner
if top is not None:
    eff = FITTED.efficiency
    fitted_why = ("fitted to the published B300 runs (k3lite.analytic.serving.fit; `python -m "
                  "k3lite.analytic.serving predict` prints it)")
    page_assumptions = [
        Assumption("usd_per_gpu_hour", f"{top.gpu} $ per GPU-hour", prices[top.gpu], PRICES_NOW[top.gpu][1],
                   "the 'GPU-hour prices ($)' expander", "$"),
        Assumption("context", "context per sequence", float(CONTEXT), "a typical chat-and-tools request",
                   "the 'context per sequence' slider", "tokens"),
        Assumption("hbm_fraction", "achieved share of HBM bandwidth", eff.hbm_fraction, fitted_why),
        Assumption("flops_fraction", "achieved share of peak FLOPs", eff.flops_fraction, fitted_why),
        Assumption("layer_s", "fixed time per layer per forward pass", eff.layer_s, fitted_why, unit="s"),
    ] + ([Assumption("acceptance", "tokens kept per speculation step", float(spec.acceptance),
                     speculation_source(NAME), "the 'acceptance' input")] if spec is not None else [])
    faster = headline_cached(NAME, tuple(sorted(prices.items())), spec, top.gpu, SEARCH, speed=1.2 * float(ss.sv_speed))
    assumptions_block(
        "serving_x_assumptions", f"Predicted $ per M output tokens at >= {ss.sv_speed:.0f} tok/s per user",
        partial(headline_cached, NAME, tuple(sorted(prices.items())), spec, top.gpu, SEARCH, speed=float(ss.sv_speed)),
        page_assumptions,
        partial(usd_or_out_of_reach, float(ss.sv_speed)),
        also=[("interactive speed", f"{ss.sv_speed:.0f} tokens/s per user, our assumption (2.5x DeepSeek's 20-22): "
               + (f"at {1.2 * ss.sv_speed:.0f} no setup reaches it with the fitted efficiencies, so it is a threshold, "
                  "not a dial for the tornado" if math.isinf(faster) else
                  f"at {1.2 * ss.sv_speed:.0f} the cheapest setup costs ${faster:.3f} per M output tokens")),
              ("output length", "not modelled on its own: every sequence holds the whole context"),
              ("Hopper and 4-bit experts", "H100, H800 and H200 have no FP4 tensor cores: their NVFP4 / MXFP4 "
               "experts are modelled as dequantised to FP8 (4-bit bytes, FP8 FLOPs)"),
              ("prefill chunk", f"{PREFILL_CHUNK_TOKENS:,} tokens per GPU per forward: {PREFILL_CHUNK_SOURCE}"),
              ("routing", "uniform: every expert equally likely for every token (wire bytes, experts hit)"),
              ("engine reserve", "15% of HBM kept out of the cache pools (SGLang's --mem-fraction-static 0.85)")])
