"""Serving: from the architecture to $ per million tokens (placement, capacity, decode step, price)."""
import streamlit as st

from k3lite.config import get_preset
from k3lite.hardware import GPUS
from k3lite.memory import RELEASED_K3_FORMATS
from k3lite.params import count_params
from k3lite.params import fmt as fmt_params
from k3lite.serving import (
    FORMAT_ALIASES, MIN_TOKENS_PER_USER, USD_PER_GPU_HOUR, Serving, capacity, check_fits, decode_step, pareto,
    prefill_usd_per_m_input,
)
from k3lite.serving_compare import gpus_for_weights, side_by_side, validate, waterfall
from k3lite.viz.memo import shared_figure
from k3lite.viz.serving import (
    capacity_figure, gpus_for_weights_figure, pareto_figure, placement_figure, step_figure, validation_figure,
    waterfall_figure,
)
from k3lite.viz.style import fmt_bytes
from views.common import explain, push_url, url_state, user_errors

PRESETS = ["kimi-k3", "kimi-k2", "deepseek-v3", "kimi-linear-48b-a3b"]
FORMATS = [f for f in FORMAT_ALIASES if f != "fp4"]
def dollars(text: str) -> str:
    """Escape $ for Markdown (two dollar signs in one caption would otherwise render as LaTeX)."""
    return text.replace("$", "\\$")


CONTEXTS = [4096, 16384, 32768, 65536, 131072, 262144, 524288, 1048576]

st.title("Serving: from architecture to $ per million tokens")
st.markdown(
    "The price of a token is set by serving physics: the weights are sharded over many GPUs, the KV cache "
    "fights the weights for HBM, and every token hops the interconnect twice per MoE layer. Pick a model, a GPU "
    "and a layout; the page places the weights, counts how many sequences fit, times one decode step "
    "(HBM reads, compute, dispatch + combine) and turns it into tokens/s and dollars. It is a roofline model: "
    "an **upper bound** on throughput (a floor on cost), checked against published measurements below."
)

url_state("sv_preset", "kimi-k3", choices=PRESETS)
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
c1, c2, c3, c4 = st.columns(4)
c1.selectbox("model", PRESETS, key="sv_preset")
c1.selectbox("GPU", list(GPUS), key="sv_gpu")
c2.number_input("GPUs per replica", 1, 1024, key="sv_gpus")
c2.number_input("expert parallel (EP)", 1, 1024, key="sv_ep")
c2.number_input("tensor parallel (TP) of attention", 1, 64, key="sv_tp")
c3.selectbox("routed experts stored as", FORMATS, key="sv_experts")
c3.selectbox("everything else stored as", FORMATS, key="sv_rest")
c3.select_slider("context per sequence (tokens)", CONTEXTS, key="sv_context")
c4.number_input("batch per GPU (0 = the most that fit)", 0, 100_000, key="sv_batch")
c4.toggle("overlap communication with compute", key="sv_overlap")
c4.number_input("$ per GPU-hour (0 = default)", 0.0, 999.0, step=0.1, key="sv_price")
push_url("sv_preset", "sv_gpu", "sv_gpus", "sv_ep", "sv_tp", "sv_experts", "sv_rest", "sv_context", "sv_batch",
         "sv_overlap", "sv_price")
ss = st.session_state
rest = ss.sv_rest
with user_errors():
    s = Serving(ss.sv_preset, ss.sv_gpu, int(ss.sv_gpus), int(ss.sv_ep), int(ss.sv_tp),
                {"routed_experts": ss.sv_experts, "attention": rest, "shared": rest, "embeddings": rest},
                int(ss.sv_context), bool(ss.sv_overlap), float(ss.sv_price) or None)
    place = check_fits(s, int(ss.sv_batch) or None)  # refuses what does not fit before anything else runs
    batch = int(ss.sv_batch) or place.max_batch_per_gpu
    step = decode_step(s, batch)
price_src = USD_PER_GPU_HOUR[s.gpu][1] if not ss.sv_price else "your number"

st.subheader("1. Placement: weights per GPU and what is left for the cache")
m1, m2, m3, m4 = st.columns(4)
m1.metric("weights per GPU", fmt_bytes(place.weight_bytes_per_gpu))
m2.metric("HBM left for cache + activations", fmt_bytes(place.free_hbm_bytes_per_gpu))
m3.metric(f"{s.gpu} GPUs for the weights alone", f"{place.min_gpus_for_weights}")
m4.metric(f"sequences of {s.context:,} tokens per GPU", f"{place.max_batch_per_gpu:,}")
st.plotly_chart(shared_figure(placement_figure, place.by_component, batch * place.cache_bytes_per_sequence, place.hbm_bytes,
                              f"One {s.gpu} at batch {batch}"), width="stretch")
gpu = GPUS[s.gpu]
st.caption(f"{s.gpu}: {gpu.source}." + (f" Not verified: {gpu.unverified}." if gpu.unverified else "")
           + " Byte counts: `k3lite.memory` (parameters counted from the real modules on the meta device; 4-bit "
           "formats include their scales: NVFP4 +1/16 byte, MXFP4 +1/32, INT4 +2/32 per parameter).")

st.markdown("**The seed's claim**: K3 'even at reduced precision spreads its weights across roughly six GPUs in an "
            "NVIDIA DGX B300 just for the weights'.")
six = gpus_for_weights("kimi-k3", "B300")
st.plotly_chart(shared_figure(gpus_for_weights_figure, [r.fmt for r in six], [r.gpus for r in six], 6, "B300"), width="stretch")
true_for = [r.fmt for r in six if r.whole_gpus == 6]
n_fp8 = next(r.whole_gpus for r in six if r.fmt == "fp8")
explain(f"Computed: the {fmt_params(count_params(get_preset('kimi-k3')).total)} weights need {', '.join(f'{r.gpus:.1f} ({r.fmt})' for r in six)} B300s' worth of "
        f"288 GB. 'Roughly six' is true for {', '.join(true_for) or 'no format'}: 4-bit weights with their scales. "
        f"At fp8 it takes {n_fp8} GPUs, {'more than' if n_fp8 > 8 else 'within'} one 8-GPU DGX B300.")

st.subheader("2. Capacity: how many sequences fit, by attention design")
caps = capacity(s, CONTEXTS)
st.plotly_chart(shared_figure(capacity_figure, CONTEXTS, caps), width="stretch")
at = CONTEXTS.index(s.context)
explain(f"At {s.context:,} tokens with these weights per GPU: " + "; ".join(f"{k}: {v[at]:,}" for k, v in caps.items())
        + " sequences per GPU. Cache bytes from `k3lite.memory` (the hybrid page's functions): MLA latent per "
        "token, KDA fixed state + conv tail, GQA K and V per token.")

st.subheader("3. One decode step, tokens/s and $ per million output tokens")
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
        f"serving benchmark plots. Prefill (compute-bound estimate at peak FLOPs): "
        f"${prefill_usd_per_m_input(s):.3f} per M input tokens. Price: ${s.price:.2f} per GPU-hour ({price_src})."))


@st.cache_data(show_spinner="Evaluating the waterfall, the side-by-side and the published checks…", max_entries=8)
def comparisons(context: int):
    return waterfall(context=context), side_by_side(context=context), validate()


with user_errors():
    steps, rows, checks = comparisons(s.context)

st.subheader("4. What each choice buys")
biggest_delta, biggest = min(((b.usd_per_m - a.usd_per_m, b) for a, b in zip(steps, steps[1:])), key=lambda d: d[0])
st.plotly_chart(shared_figure(waterfall_figure, [w.label for w in steps], [w.usd_per_m for w in steps]), width="stretch")
hw0 = steps[0].serving
explain(dollars(f"Same hardware for every bar ({hw0.n_gpus} x {hw0.gpu}, EP {hw0.ep}, context {s.context:,}), each at "
        f"the largest batch per GPU that fits and keeps every user at >= {MIN_TOKENS_PER_USER:.0f} tokens/s. "
        + "; ".join(f"{w.label}: ${w.usd_per_m:.3f} (batch {w.batch})" for w in steps)
        + f". The biggest step is '{biggest.label}' ({biggest_delta:+.3f} $/M); overall K3's choices take the cost to "
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

st.subheader("5. Checked against published serving figures")
st.plotly_chart(shared_figure(validation_figure, [c["short"] for c in checks], [c["measured tokens/s / GPU"] for c in checks],
                              [c["model tokens/s / GPU"] for c in checks]), width="stretch")
st.dataframe([{k: (round(v, 2) if isinstance(v, float) else v) for k, v in c.items() if k != "short"} for c in checks],
             hide_index=True, width="stretch")
lo, hi = min(c["model / measured"] for c in checks), max(c["model / measured"] for c in checks)
verdict = ("never below, as an upper bound must" if lo >= 1 else
           f"BELOW a measurement for {', '.join(c['deployment'] for c in checks if c['model / measured'] < 1)}: "
           "the model misses something those systems do")
explain(f"The model lands {lo:.2f}x to {hi:.2f}x the measured tokens/s (with overlap, at each publication's "
        f"batch and context): {verdict}. What it leaves out: kernel efficiency below "
        "peak, expert load imbalance (EPLB gave SGLang 2.54x in decode), launch and synchronisation "
        "latency and activation memory (the wire bytes are DeepEP low-latency's, one message per token and "
        "selected expert, from `k3lite.interconnect`). DeepSeek's own figure "
        "also includes speculative multi-token prediction, which the model does not credit.")
