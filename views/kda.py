"""Kimi Delta Attention: the trained layer's state written and decayed (a browser animation), per-channel decay,
memory vs context, a recall probe, the bound."""
import math
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st
import torch

from k3lite.model import kda

from k3lite.analytic import memory
from k3lite.analytic.sensitivity import Assumption
from k3lite.base.evidence import derived, measured_here
from k3lite.base.units import ONE_M_CONTEXT
from k3lite.model.presets import get_preset
from k3lite.model.checkpoint import load_lite_model
from k3lite.base.tokenizer import token_label, validate_prompt
from k3lite.viz.kda import decay_heatmap, decay_memory_figure, memory_figure, recall_figure, state_norm_figure
from k3lite.viz.kda_state import MAX_FRAMES, kda_layers, run_kda_layer, state_animation, trained_kda_run
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import fmt_bytes
from k3lite.model.kda.layer import KimiDeltaAttention
from k3lite.model.kda.naive import naive_kda_matrix
from k3lite.model.kda.reference import chunk_kda_reference
from views.common import (
    assumptions_block, explain, lazy_expander, push_url, reset_button, show_code, table, url_state, user_errors,
)
from views.common import try_it  # the page's practice problems, at its foot

MAX_T = 256  # tokens run live (the state trajectory keeps T x H x K x V numbers); the animation shows MAX_FRAMES
SEED = 0
LITE = get_preset("lite")
H = LITE.kda.n_heads
LIVE = "live on this server: the shipped lite checkpoint (assets/lite.safetensors), k3lite.viz.kda_state."

st.title("Kimi Delta Attention")
st.markdown("**How does a fixed-size state remember a prompt: what does each token write into it, and what does "
            "it forget?**")
reset_button("kda_")


@st.cache_resource(show_spinner="Loading the trained lite model…")
def lite_model():
    return load_lite_model()


MODEL, WARNING = lite_model()
KDA_LAYERS = kda_layers(MODEL)


@st.cache_data(max_entries=32, show_spinner="Running the trained KDA layer…")
def run(source: str, prompt: str, T: int, layer: int) -> dict:
    if source == "prompt":
        ids = list(validate_prompt(prompt, max_bytes=MAX_T))
        out, labels = trained_kda_run(MODEL, ids, layer), [token_label(b) for b in ids]
    else:  # Gaussian vectors straight into the trained layer (no model below it)
        x = torch.randn(1, T, LITE.d_model, generator=torch.Generator().manual_seed(SEED))
        out, labels = run_kda_layer(MODEL.layers[layer].mixer, x, layer), [f"x{t}" for t in range(T)]
    return {"labels": labels, **out._asdict()}


def _slowest(n: float) -> str:
    return ("the slowest hardly forgets (it halves only after more than 10,000 tokens)" if n > 1e4 else
            f"the slowest every {n:,.0f} tokens")


@st.cache_data(show_spinner=False, max_entries=1)  # called with the one default prompt
def default_view(prompt: str) -> tuple[int, int]:
    """(layer, head) whose key channels forget most differently on the default prompt: the page opens on it, so the
    animation shows per-channel decay at work (many trained heads barely decay at all)."""
    ids = list(validate_prompt(prompt, max_bytes=MAX_T))
    spread = {(layer, h): float(np.log(np.clip(r.a[:, h], 1e-30, 1.0)).mean(0).std())
              for layer in KDA_LAYERS for r in [trained_kda_run(MODEL, ids, layer)] for h in range(H)}
    return max(spread, key=spread.get)


url_state("kda_source", "prompt", choices=["prompt", "random"])
PROMPT = "Alice gave Bob the key; later Bob used the key."
url_state("kda_prompt", PROMPT)
url_state("kda_T", 48, lo=1, hi=MAX_T)
DEFAULT_LAYER, DEFAULT_HEAD = default_view(PROMPT)
url_state("kda_layer", DEFAULT_LAYER, choices=KDA_LAYERS)
url_state("kda_head", DEFAULT_HEAD, lo=0, hi=H - 1)


@st.fragment
def state_panel() -> None:
    """The animation of the state and everything read from the same run."""
    ctl, fig_col = st.columns([1, 3])
    ctl.radio("input", ["prompt", "random"], key="kda_source",
              help="random = Gaussian vectors fed straight to the layer instead of the prompt")
    if st.session_state.kda_source == "prompt":
        ctl.text_input(f"prompt (at most {MAX_T} UTF-8 bytes; one token per byte)", key="kda_prompt")
    else:
        ctl.slider("tokens T", 1, MAX_T, key="kda_T")
    ctl.selectbox("KDA layer of the trained model", KDA_LAYERS, key="kda_layer",
                  help=f"the lite model's KDA layers (the others, {[i for i in range(len(MODEL.layers)) if i not in KDA_LAYERS]}, are MLA, Multi-head Latent Attention)")
    ctl.slider("head", 0, H - 1, key="kda_head", help=f"each layer has {H} heads")
    push_url("kda_source", "kda_prompt", "kda_T", "kda_layer", "kda_head")
    head, layer = st.session_state.kda_head, st.session_state.kda_layer
    with user_errors():
        if not 0 <= head < H:
            raise ValueError(f"head must be in [0, {H - 1}] (this layer has {H} heads), got {head}")
        T_req = st.session_state.kda_T
        if st.session_state.kda_source == "random" and not 1 <= T_req <= MAX_T:
            raise ValueError(f"tokens T must be in [1, {MAX_T}], got {T_req}")
        res = run(st.session_state.kda_source, st.session_state.kda_prompt, T_req, layer)
    T = len(res["labels"])
    # what ran: the trained layer on this input, here and now (the tooltip names the call)
    live = measured_here(LIVE + (f"trained_kda_run(model, prompt bytes, layer {layer})" if st.session_state.kda_source
                                 == "prompt" else f"run_kda_layer(layer {layer}, {T} Gaussian vectors, seed {SEED})"))
    if WARNING:
        fig_col.warning(WARNING)
    fig_col.plotly_chart(shared_figure(state_animation, res["states"][:, head], res["correction"][:, head],
                                       res["v"][:, head], res["beta"][:, head], res["labels"],
                                       f"layer {layer}, head {head}: press ▶ play, or drag the slider to a token",
                                       evidence=live), width="stretch")
    written = res["beta"][:, head] * np.linalg.norm(res["correction"][:, head], axis=1)  # (T,) size of each write
    rel = np.linalg.norm(res["correction"][:, head], axis=1) / np.maximum(np.linalg.norm(res["v"][:, head], axis=1), 1e-9)
    log_a = np.log(np.clip(res["a"][:, head], 1e-30, 1.0)).mean(axis=0)  # (K,) mean log-decay per key channel
    half = np.log(0.5) / np.minimum(log_a, -1e-12)  # (K,) tokens for a channel to halve its contents
    t_big, t_small = int(written.argmax()), int(written.argmin())
    fig_col.markdown(
        f"The state stays {LITE.kda.head_dim} × {LITE.kda.head_dim} for all {T} tokens; its norm ends at "
        f"{res['norm'][-1, head]:.2f} (largest {res['norm'][:, head].max():.2f}, after token "
        f"{int(res['norm'][:, head].argmax())}). The biggest write is token {t_big} ({res['labels'][t_big]!r}, "
        f"β = {res['beta'][t_big, head]:.2f}), the smallest token {t_small} ({res['labels'][t_small]!r}); on "
        f"average the correction it writes is {100 * rel.mean():.0f}% of the new value's size (100% = the state knew "
        f"nothing about that key). Each key channel forgets at its own rate: the fastest halves its contents every "
        f"{half.min():,.1f} tokens, {_slowest(half.max())}.")
    show_code(kda.gated_delta_step, kda.kda_trajectory, trained_kda_run)
    st.caption(
        f"Layer: `KimiDeltaAttention` {layer} of the **trained** `lite` checkpoint (d = {LITE.d_model}, {H} heads × "
        f"K = V = {LITE.kda.head_dim}; assets/lite.safetensors), "
        + (f"fed the trained model's own byte embeddings of the prompt ({T} bytes), as they arrive at this layer "
           "(after the layers below it and Attention Residuals' depth mix). " if st.session_state.kda_source == "prompt"
           else f"fed {T} Gaussian random vectors (seed {SEED}) straight into its projections instead of a prompt. ")
        + f"The animation shows the first {min(T, MAX_FRAMES)} tokens.")

    # lazy: its formulas are LaTeX, and a first run that sends any makes the browser load KaTeX (~260 kB of script)
    # before the animation draws
    with lazy_expander("The rule being animated: the gated delta rule, per channel", key="kda_x_rule") as is_open:
        if is_open:
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
In the animation the red bars are what the rule writes (times β_t) along k_t; plain linear attention would
write all of v_t (grey) every time and the state would only grow.
""")

    with lazy_expander("(a) The decay: one factor per key channel, per token", key="kda_x_decay_one_factor_per") as is_open:
        if is_open:
            st.plotly_chart(shared_figure(decay_heatmap, res["a"][:, head], res["labels"], head, evidence=live),
                            width="stretch")
            spread = np.log(res["a"][:, head]).std(axis=1).mean()
            explain(f"Each row is one token; bright = keep (a ≈ 1), dark = forget. Within a row the channels differ "
                    f"(mean spread of log a across channels: {spread:.2f} nats): KDA can keep some key directions while "
                    "flushing others. The right column is the single scalar Gated DeltaNet would apply to all channels "
                    "(the geometric mean of the row, same total forgetting).")
            show_code(decay_heatmap)
    with lazy_expander("(b) The state's size over time", key="kda_x_b_state_s_size") as is_open:
        if is_open:
            st.plotly_chart(shared_figure(state_norm_figure, res["norm"][:, head], T - 1, head, evidence=live),
                            width="stretch")
            explain("‖S_t‖_F after each token: the decay pulls it down, each write pushes it up; it never needs more "
                    "than K × V numbers.")
    with lazy_expander("(f) The bounded decay: what e⁻⁵ per token means for memory", key="kda_x_bounded_decay") as is_open:
        if is_open:
            bounded_decay(float(np.log(res["a"]).min()))


def bounded_decay(lite_min: float) -> None:
    K3 = get_preset("kimi-k3")
    BOUND = K3.kda.decay_lower_bound  # config.json gate_lower_bound
    span = list(range(0, 41))
    rates = {f"g = {g:g} per token": g for g in (-0.01, -0.1, -1.0)} | {f"g = {BOUND:g} (K3's bound)": BOUND}
    mems = {name: memory.decay_memory(g, span) for name, g in rates.items()}
    st.plotly_chart(shared_figure(decay_memory_figure, span, {n: m.kept_after for n, m in mems.items()}, 0.01,
                                  evidence=derived(memory.decay_memory)), width="stretch")
    fast, slow = mems[f"g = {BOUND:g} (K3's bound)"], mems["g = -0.01 per token"]
    floors = {c: memory.chunk_decay_floor(BOUND, c) for c in (16, 64)}
    explain(f"K3 writes its decay as g = {BOUND:g} · sigmoid(…) (config.json `gate_lower_bound` {BOUND:g}; the released "
            f"code passes it to fla's kernels as `lower_bound`), so every key channel keeps at least e^{BOUND:g} = "
            f"{math.exp(BOUND):.4f} of its state per token: 1% of a write survives {fast.tokens_to_threshold:.2f} tokens "
            f"at the fastest, {slow.tokens_to_threshold:,.0f} at g = -0.01. The bound limits how *fast* a channel "
            f"forgets, not how long it remembers (g → 0 keeps everything). It also keeps chunk-wise kernels finite: over "
            f"a 16-token chunk the decay can fall to e^{floors[16]:g}, above fp32's smallest normal number "
            f"e^{memory.FP32_MIN_NORMAL_LOG:.1f}; over 64 tokens to e^{floors[64]:g}, far below it. This page's layer "
            + (f"has the bound too: its smallest log-decay on this input is {lite_min:.2f}."
               if LITE.kda.decay_lower_bound is not None else
               f"is unbounded: its smallest log-decay on this input is {lite_min:.2f}."))
    show_code(memory.decay_memory)


state_panel()


@st.fragment
def memory_panel() -> None:
    with lazy_expander("Memory for decoding vs context length: a fixed state against a growing cache", key="kda_x_memory_decoding_context_length") as is_open:
        if is_open:
            url_state("kda_preset", "kimi-linear-48b-a3b", choices=["kimi-linear-48b-a3b", "kimi-k3", "lite"])
            st.selectbox("model", ["kimi-linear-48b-a3b", "kimi-k3", "lite"], key="kda_preset")
            push_url("kda_preset")
            preset = get_preset(st.session_state.kda_preset)
            # up to "1M" of context, 2^20 tokens as on the hybrid page (units.ONE_M_CONTEXT)
            contexts = np.unique(np.round(np.logspace(0, 20, 61, base=2)).astype(int)).tolist()
            curves = memory.memory_vs_context(preset, contexts)
            st.plotly_chart(shared_figure(memory_figure, contexts, curves, f"{preset.name}: fp32 KDA state + bf16 conv tail, bf16 caches",
                                          evidence=derived(memory.memory_vs_context)), width="stretch")
            state = memory.kda_layer_state_bytes(preset.kda)
            explain(f"Computed from the preset's dimensions by `k3lite.analytic.memory` (the same function as the hybrid and serving "
                    f"pages): a KDA layer keeps {fmt_bytes(state)} at any length ({preset.kda.n_heads} × "
                    f"{preset.kda.head_dim} × {preset.kda.head_dim} fp32 state, as `KDACache` and fla keep it, plus a "
                    f"{preset.kda.conv_size - 1}-token bf16 conv tail of q, k, v); an MLA (Multi-head Latent Attention) layer keeps (kv_lora "
                    f"{preset.mla.kv_lora_rank} + rope {preset.mla.qk_rope_head_dim}) bf16 numbers per token. "
                    + memory.kda_memory_sentence(preset, contexts[-1])
                    + " The Kimi Linear report (arXiv 2510.26692) states \"up to 75%\" smaller KV cache for its 3:1 "
                    "hybrid, and at 1M context 2.3x faster decoding at batch 1 and a theoretical 6.3x from the larger "
                    "batch the small cache allows (the hybrid page models both).")

            show_code(memory.memory_vs_context, memory.kda_memory_sentence)


memory_panel()


@st.fragment
def probe_panel() -> None:
    st.subheader("Recall probe: linear attention vs DeltaNet vs Gated DeltaNet vs KDA")
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
        ran = measured_here(f"k3lite.model.kda.recall_probe({st.session_state.kda_probe_n}, fast_decay="
                            f"{st.session_state.kda_probe_decay}, keys={st.session_state.kda_probe_keys!r}, "
                            f"leak={st.session_state.kda_probe_leak}), live on this server")
        st.plotly_chart(shared_figure(recall_figure, {m: s.numpy() for m, s in probe.scores.items()}, evidence=ran),
                        width="stretch")
        recent = min(8, st.session_state.kda_probe_n)
        table(st, pd.DataFrame({"mechanism": list(probe.scores),
                                "recall of pair 0 (the oldest)": [float(s[0]) for s in probe.scores.values()],
                                f"mean recall, last {recent} pairs": [float(s[-recent:].mean()) for s in probe.scores.values()]}),
              default=ran, hide_index=True, width="stretch")
        explain(f"Hand-built, not trained (`k3lite.model.kda.recall_probe`): n random unit (key, value) pairs in K = 32 dims are "
                f"written with β = 1, then every key is read back from the final state; recall = cosine with the stored "
                f"value. KDA keeps 8 of 32 channels at a = 1 and decays the other 24 by your factor; Gated DeltaNet gets "
                f"one scalar with the same mean log-decay (a = {probe.gdn_decay:.3f}). 'aligned': pair 0 (the fact) has its "
                f"key in KDA's slow channels and later keys mostly in the fast ones ({st.session_state.kda_probe_leak:.0%} "
                "leak into the slow ones); 'random': nothing lines up with the slow channels. What these numbers show: "
                + " ".join(kda.probe_claims(probe, recent)))
        show_code(kda.recall_probe)
    push_url("kda_probe", "kda_probe_keys", "kda_probe_n", "kda_probe_decay", "kda_probe_leak")


probe_panel()

PRESET = st.session_state.get("kda_preset", "kimi-linear-48b-a3b")  # the memory section's model
assumptions_block(
    "kda_x_assumptions", f"The hybrid's decode cache per sequence at 1M tokens ({PRESET})",
    partial(memory.hybrid_cache_at, preset=PRESET),
    [Assumption("latent_bytes", "bytes per MLA cache number", memory.ACTIVATION_BYTES_PER_ELEM, "a bf16 latent cache",
                unit="B"),
     Assumption("state_bytes", "bytes per KDA state number", memory.KDA_STATE_BYTES_PER_ELEM,
                "fp32, as KDACache and flash-linear-attention keep it", unit="B"),
     Assumption("conv_bytes", "bytes per conv-tail number", memory.ACTIVATION_BYTES_PER_ELEM,
                "bf16 activations: the last conv_size - 1 inputs of q, k and v", unit="B")],
    fmt_bytes, also=[("1M tokens", f"2^20 = {ONE_M_CONTEXT:,} tokens, as context windows are sized"),
                     ("the model", "the preset picked under 'Memory for decoding vs context length'")])

show_code(naive_kda_matrix, chunk_kda_reference, KimiDeltaAttention.kernel_inputs_reference,
          title="The algorithm as the paper writes it: the recurrence token by token, then chunk-wise (WY/UT transform)")
st.caption("The model trains with a faster kernel (`k3lite/model/kda/ops.py`, `chunk.py`: factored exponents, a "
           "recursive triangular inverse, a hand-written backward); tests/model/test_kda.py holds it equal to these "
           "readable versions.")

try_it("kda")
