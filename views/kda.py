"""Kimi Delta Attention: per-channel decay, the state as it is written, memory vs context, a recall probe, the bound."""
import inspect
import math

import numpy as np
import pandas as pd
import streamlit as st
import torch

from k3lite.model import kda

from k3lite.analytic import memory
from k3lite.model.config import get_preset
from k3lite.base.rng import seeded
from k3lite.base.tokenizer import token_label, validate_prompt
from k3lite.viz.kda import (decay_heatmap, decay_memory_figure, memory_figure, recall_figure, state_figure,
                            state_norm_figure)
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import fmt_bytes
from views.common import explain, push_url, url_state, user_errors

MAX_T = 256  # tokens shown live (the state trajectory keeps T x H x K x V numbers)
SEED = 0
LITE = get_preset("lite")
H = LITE.kda.n_heads

st.title("Kimi Delta Attention")
st.markdown(
    r"""
Softmax attention keeps every past key and value (the KV cache grows with the context). **KDA** keeps one
fixed matrix per head instead, the state $S \in \mathbb{R}^{K \times V}$, and edits it token by token with the
*gated delta rule* (Kimi Linear tech report, arXiv 2510.26692):

$$S_t = (I - \beta_t k_t k_t^\top)\,\mathrm{Diag}(a_t)\,S_{t-1} + \beta_t k_t v_t^\top, \qquad o_t = K^{-1/2}\,S_t^\top q_t$$

First every key channel forgets by its own factor $a_t = e^{g_t}$ (Gated DeltaNet has one scalar per head;
that is the only difference), then the rule reads what the state currently says for $k_t$ and writes only the
**correction** $v_t - S'^\top k_t$ ($q_t, k_t$ are L2-normalised; the read is scaled by $K^{-1/2}$, as in
flash-linear-attention). Linear attention has neither idea; Mamba-2 adds the decay (one scalar per head),
DeltaNet the correction (and no decay); Gated DeltaNet combines the two; KDA makes the decay per channel.
"""
)

url_state("kda_source", "prompt", choices=["prompt", "random"])
url_state("kda_prompt", "Alice gave Bob the key; later Bob used the key.")
url_state("kda_T", 48, lo=1, hi=MAX_T)
url_state("kda_head", 0, lo=0, hi=H - 1)
c1, c2, c3 = st.columns([1, 3, 1])
c1.radio("input", ["prompt", "random"], key="kda_source", help="random = Gaussian vectors instead of byte embeddings")
if st.session_state.kda_source == "prompt":
    c2.text_input(f"prompt (at most {MAX_T} UTF-8 bytes; one token per byte)", key="kda_prompt")
else:
    c2.slider("tokens T", 1, MAX_T, key="kda_T")
c3.slider("head", 0, H - 1, key="kda_head", help=f"the layer has {H} heads")
push_url("kda_source", "kda_prompt", "kda_T", "kda_head")


@st.cache_resource
def demo_layer():
    """A freshly initialised (untrained) KDA layer of the `lite` preset and a byte embedding, fixed seed."""
    with seeded(SEED):  # not a bare global reseed: other sessions' builds would interleave their draws (k3lite.base.rng)
        embed = torch.nn.Embedding(256, LITE.d_model)
        return embed.eval(), kda.KimiDeltaAttention(LITE.d_model, LITE.kda).eval()


@st.cache_data(max_entries=32, show_spinner="Running the KDA layer…")
def run(source: str, prompt: str, T: int) -> dict:
    embed, layer = demo_layer()
    with torch.inference_mode():
        if source == "prompt":
            ids = list(validate_prompt(prompt, max_bytes=MAX_T))
            x, labels = embed(torch.tensor([ids])), [token_label(b) for b in ids]
        else:
            x = torch.randn(1, T, LITE.d_model, generator=torch.Generator().manual_seed(SEED))
            labels = [f"x{t}" for t in range(T)]
        inp = layer.kernel_inputs(x)
        traj = kda.kda_trajectory(inp.q, inp.k, inp.v, inp.g, inp.beta, keep_states=True)
    return {"labels": labels, "a": inp.g.exp()[0].numpy(), "beta": inp.beta[0].numpy(), "v": inp.v[0].numpy(),
            "states": traj.states[0].numpy(), "correction": traj.correction[0].numpy(),
            "norm": traj.state_norm[0].numpy()}


head = st.session_state.kda_head
with user_errors():
    if not 0 <= head < H:
        raise ValueError(f"head must be in [0, {H - 1}] (this layer has {H} heads), got {head}")
    T_req = st.session_state.kda_T
    if st.session_state.kda_source == "random" and not 1 <= T_req <= MAX_T:
        raise ValueError(f"tokens T must be in [1, {MAX_T}], got {T_req}")
    res = run(st.session_state.kda_source, st.session_state.kda_prompt, T_req)
T = len(res["labels"])
st.caption(
    f"Layer: `KimiDeltaAttention` of the `lite` preset (d = {LITE.d_model}, {H} heads × K = V = {LITE.kda.head_dim}), "
    f"**freshly initialised with seed {SEED}, not trained** (the trained model comes with the forward-pass page), "
    + (f"fed fixed random byte embeddings of the prompt ({T} bytes). " if st.session_state.kda_source == "prompt" else
       f"fed {T} Gaussian random vectors (seed {SEED}) instead of a prompt. ")
    + "Its gates are what initialisation gives (dt ∈ [0.001, 0.1], "
    "A ∈ [1, 16] per head, as in Mamba-2 / Gated DeltaNet), so the *pattern* is arbitrary; the mechanism is real."
)

st.subheader("(a) The decay: one factor per key channel, per token")
st.plotly_chart(shared_figure(decay_heatmap, res["a"][:, head], res["labels"], head), width="stretch")
spread = np.log(res["a"][:, head]).std(axis=1).mean()
explain(f"Each row is one token; bright = keep (a ≈ 1), dark = forget. Within a row the channels differ "
        f"(mean spread of log a across channels: {spread:.2f} nats): KDA can keep some key directions while "
        "flushing others. The right column is the single scalar Gated DeltaNet would apply to all channels "
        "(the geometric mean of the row, same total forgetting).")

st.subheader("(b) The state as it is written: scrub through time")
url_state("kda_t", 0, lo=0, hi=MAX_T - 1)
if st.session_state.kda_t > T - 1:
    st.info(f"time step {st.session_state.kda_t} is past the last token; showing t = {T - 1} (T = {T} tokens).")
    st.session_state.kda_t = T - 1
if T > 1:
    st.slider("time step t", 0, T - 1, key="kda_t")
push_url("kda_t")
t = min(st.session_state.kda_t, T - 1)
m1, m2, m3 = st.columns(3)
m1.metric("token", f"{t}: {res['labels'][t]}")
m2.metric("write strength β_t", f"{res['beta'][t, head]:.3f}", help="sigmoid(W_b x_t), in (0, 1); unitless")
m3.metric("‖correction‖ / ‖v_t‖", f"{np.linalg.norm(res['correction'][t, head]) / max(np.linalg.norm(res['v'][t, head]), 1e-9):.2f}",
          help="1 = the state knew nothing about k_t; 0 = it already stored exactly v_t")
st.plotly_chart(shared_figure(state_figure, res["states"][t, head], res["correction"][t, head], res["v"][t, head], t,
                              f"head {head}"), width="stretch")
st.plotly_chart(shared_figure(state_norm_figure, res["norm"][:, head], t, head), width="stretch")
explain("The state is a K × V matrix whatever the context length. The red bars are what the delta rule actually "
        "writes (times β_t) along k_t: the new value minus what the decayed state already returns for k_t. "
        "Plain linear attention would write all of v_t (grey) every time and the state would only grow.")

st.subheader("(c) Memory for decoding vs context length")
url_state("kda_preset", "kimi-linear-48b-a3b", choices=["kimi-linear-48b-a3b", "kimi-k3", "lite"])
st.selectbox("model", ["kimi-linear-48b-a3b", "kimi-k3", "lite"], key="kda_preset")
push_url("kda_preset")
preset = get_preset(st.session_state.kda_preset)
contexts = np.unique(np.logspace(0, 6, 61).astype(int)).tolist()
curves = memory.memory_vs_context(preset, contexts)
st.plotly_chart(shared_figure(memory_figure, contexts, curves, f"{preset.name}: fp32 KDA state + bf16 conv tail, bf16 caches"),
                width="stretch")
hybrid = memory.sequence_cache_bytes(preset, contexts[-1]).total
full = len(preset.layer_types()) * memory.mla_cache_bytes_per_token(preset.mla) * contexts[-1]
state = memory.kda_layer_state_bytes(preset.kda)
explain(f"Computed from the preset's dimensions by `k3lite.analytic.memory` (the same function as the hybrid and serving "
        f"pages): a KDA layer keeps {fmt_bytes(state)} at any length ({preset.kda.n_heads} × "
        f"{preset.kda.head_dim} × {preset.kda.head_dim} fp32 state, as `KDACache` and fla keep it, plus a "
        f"{preset.kda.conv_size - 1}-token bf16 conv tail of q, k, v); an MLA layer keeps (kv_lora "
        f"{preset.mla.kv_lora_rank} + rope {preset.mla.qk_rope_head_dim}) bf16 numbers per token. At "
        f"{contexts[-1]:,} tokens the hybrid needs {fmt_bytes(hybrid)} against {fmt_bytes(full)} for "
        f"all-MLA: {100 * (1 - hybrid / full):.0f}% less; below ~{memory.break_even_context(preset):,} tokens a "
        "fixed state costs more than the short cache it replaces. The Kimi Linear report (arXiv 2510.26692) states "
        "\"up to 75%\" smaller KV cache for its 3:1 hybrid, and at 1M context 2.3x faster decoding at batch 1 and a "
        "theoretical 6.3x from the larger batch the small cache allows (the hybrid page models both).")

st.subheader("(d) Recall probe: linear attention vs DeltaNet vs Gated DeltaNet vs KDA")
url_state("kda_probe", False)
url_state("kda_probe_keys", "aligned", choices=["aligned", "random"])
url_state("kda_probe_n", 64, lo=1, hi=512)
url_state("kda_probe_decay", 0.9, lo=0.5, hi=1.0)
url_state("kda_probe_leak", 0.3, lo=0.0, hi=1.0)
if st.toggle("run the probe", key="kda_probe"):
    p1, p2, p3, p4 = st.columns(4)
    p1.radio("keys", ["aligned", "random"], key="kda_probe_keys", horizontal=True)
    p2.slider("pairs written n", 1, 512, key="kda_probe_n")
    p3.slider("decay of KDA's fast channels", 0.5, 1.0, step=0.01, key="kda_probe_decay")
    p4.slider("leak of later keys into the slow channels", 0.0, 1.0, step=0.05, key="kda_probe_leak",
              help="'aligned' keys only: 0 = the fact's channels are never written again")
    with user_errors():
        probe = kda.recall_probe(st.session_state.kda_probe_n, fast_decay=st.session_state.kda_probe_decay,
                                 keys=st.session_state.kda_probe_keys, leak=st.session_state.kda_probe_leak)
    st.plotly_chart(shared_figure(recall_figure, {m: s.numpy() for m, s in probe.scores.items()}), width="stretch")
    recent = min(8, st.session_state.kda_probe_n)
    st.dataframe(pd.DataFrame({"mechanism": list(probe.scores),
                               "recall of pair 0 (the oldest)": [float(s[0]) for s in probe.scores.values()],
                               f"mean recall, last {recent} pairs": [float(s[-recent:].mean()) for s in probe.scores.values()]}),
                 hide_index=True, width="stretch")
    explain(f"Hand-built, not trained (`k3lite.model.kda.recall_probe`): n random unit (key, value) pairs in K = 32 dims are "
            f"written with β = 1, then every key is read back from the final state; recall = cosine with the stored "
            f"value. KDA keeps 8 of 32 channels at a = 1 and decays the other 24 by your factor; Gated DeltaNet gets "
            f"one scalar with the same mean log-decay (a = {probe.gdn_decay:.3f}). 'aligned': pair 0 (the fact) has its "
            f"key in KDA's slow channels and later keys mostly in the fast ones ({st.session_state.kda_probe_leak:.0%} "
            "leak into the slow ones); 'random': nothing lines up with the slow channels. What these numbers show: "
            + " ".join(kda.probe_claims(probe, recent)))
push_url("kda_probe", "kda_probe_keys", "kda_probe_n", "kda_probe_decay", "kda_probe_leak")

st.subheader("(f) The bounded decay: what e⁻⁵ per token means for memory")
K3 = get_preset("kimi-k3")
BOUND = K3.kda.decay_lower_bound  # config.json gate_lower_bound
span = list(range(0, 41))
rates = {f"g = {g:g} per token": g for g in (-0.01, -0.1, -1.0)} | {f"g = {BOUND:g} (K3's bound)": BOUND}
mems = {name: memory.decay_memory(g, span) for name, g in rates.items()}
st.plotly_chart(shared_figure(decay_memory_figure, span, {n: m.kept_after for n, m in mems.items()}, 0.01), width="stretch")
fast, slow = mems[f"g = {BOUND:g} (K3's bound)"], mems["g = -0.01 per token"]
floors = {c: memory.chunk_decay_floor(BOUND, c) for c in (16, 64)}
lite_min = float(np.log(res["a"]).min())
explain(f"K3 writes its decay as g = {BOUND:g} · sigmoid(…) (config.json `gate_lower_bound` {BOUND:g}; the released code "
        f"passes it to fla's kernels as `lower_bound`), so every key channel keeps at least e^{BOUND:g} = "
        f"{math.exp(BOUND):.4f} of its state per token: 1% of a write survives {fast.tokens_to_threshold:.2f} tokens at "
        f"the fastest, {slow.tokens_to_threshold:,.0f} at g = -0.01. The bound limits how *fast* a channel forgets, not how "
        f"long it remembers (g → 0 keeps everything). It also keeps chunk-wise kernels finite: over a 16-token chunk "
        f"the decay can fall to e^{floors[16]:g}, above fp32's smallest normal number e^{memory.FP32_MIN_NORMAL_LOG:.1f}; "
        f"over 64 tokens to e^{floors[64]:g}, far below it. This page's layer "
        + (f"has the bound too: its smallest log-decay on this input is {lite_min:.2f}."
           if LITE.kda.decay_lower_bound is not None else
           f"is unbounded: its smallest log-decay on this input is {lite_min:.2f}."))

st.subheader("(g) The code that just ran")
with st.expander("the recurrence: `kda.gated_delta_step` and `kda.kda_trajectory` (what made (a) and (b))"):
    st.code(inspect.getsource(kda.gated_delta_step) + "\n\n" + inspect.getsource(kda.kda_trajectory), language="python")
with st.expander("the chunk-wise kernel the model trains with: `kda.chunk_gated_delta` (tested equal to the recurrence, ≤ 1e-4)"):
    st.code(inspect.getsource(kda.chunk_gated_delta), language="python")
