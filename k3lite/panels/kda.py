"""The Kimi Delta Attention page's panels (views/kda.py lays them out; no Streamlit here).

    kda_run, most_varied_head          the trained lite layer run on a prompt or on Gaussian vectors
    state_panel, input_caption         the state animation and what it shows, read from the same run
    decay_panel, norm_panel            (a) per-channel decay, (b) the state's size
    bounded_decay_panel                (f) K3's decay bound, what it means for memory and for chunk kernels
    memory_panel                       one preset's decode memory against context (a fixed state vs growing caches)
    probe_panel, probe_rows            the hand-built recall probe
    decode_memory_panel                K3 beside the compared model: the state/cache one sequence holds for decoding
                                       (k3lite.panels.kda_compare)
"""
from __future__ import annotations

import math

import numpy as np
import torch

from k3lite.analytic import memory
from k3lite.analytic.hybrid import REPORTED
from k3lite.base.evidence import Evidence, derived, measured_here
from k3lite.base.tokenizer import token_label, validate_prompt
from k3lite.analytic.sensitivity import Assumption
from k3lite.base.units import ONE_M_CONTEXT, fmt_bytes
from k3lite.model.config import K3Config
from k3lite.model.kda import probe_claims
from k3lite.model.presets import get_preset
from k3lite.panels.core import Panel, Said
from k3lite.panels.kda_compare import decode_memory_panel  # noqa: F401  (the page's comparison, re-exported)
from k3lite.viz.kda import decay_heatmap, decay_memory_figure, memory_figure, recall_figure, state_norm_figure
from k3lite.viz.kda_state import MAX_FRAMES, run_kda_layer, state_animation, trained_kda_run
from k3lite.viz.memo import shared_figure

MAX_T = 256  # tokens run live (the state trajectory keeps T x H x K x V numbers); the animation shows MAX_FRAMES
SEED = 0
LIVE = "live on this server: the shipped lite checkpoint (assets/lite.safetensors), k3lite.viz.kda_state."
MEMORY_PRESETS = ("kimi-linear-48b-a3b", "kimi-k3", "lite")  # the memory section's choices
# up to "1M" of context, 2^20 tokens as on the hybrid page (units.ONE_M_CONTEXT)
CONTEXTS = np.unique(np.round(np.logspace(0, 20, 61, base=2)).astype(int)).tolist()


# the rule the animation shows, as the paper writes it (LaTeX: the page sends it only when its expander opens)
GATED_DELTA_RULE = r"""
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
"""


# --------------------------------------------------------------------------------------------- the live run
def kda_run(model, source: str, prompt: str, T: int, layer: int) -> dict:
    """One KDA layer of the trained model run on the prompt's bytes ("prompt") or on T Gaussian vectors straight
    into the layer ("random", no model below it): the KDARun's arrays and the token labels."""
    if source == "prompt":
        ids = list(validate_prompt(prompt, max_bytes=MAX_T))
        out, labels = trained_kda_run(model, ids, layer), [token_label(b) for b in ids]
    else:
        x = torch.randn(1, T, model.cfg.d_model, generator=torch.Generator().manual_seed(SEED))
        out, labels = run_kda_layer(model.layers[layer].mixer, x, layer), [f"x{t}" for t in range(T)]
    return {"labels": labels, **out._asdict()}


def most_varied_head(model, prompt: str, layers: list[int]) -> tuple[int, int]:
    """(layer, head) whose key channels forget most differently on `prompt`: the page opens on it, so the
    animation shows per-channel decay at work (many trained heads barely decay at all)."""
    ids = list(validate_prompt(prompt, max_bytes=MAX_T))
    n_heads = model.cfg.kda.n_heads
    spread = {(layer, h): float(np.log(np.clip(r.a[:, h], 1e-30, 1.0)).mean(0).std())
              for layer in layers for r in [trained_kda_run(model, ids, layer)] for h in range(n_heads)}
    return max(spread, key=spread.get)


def live_evidence(source: str, layer: int, T: int) -> Evidence:
    """What ran: the trained layer on this input, here and now (the tooltip names the call)."""
    return measured_here(LIVE + (f"trained_kda_run(model, prompt bytes, layer {layer})" if source == "prompt"
                                 else f"run_kda_layer(layer {layer}, {T} Gaussian vectors, seed {SEED})"))


def _slowest(n: float) -> str:
    return ("the slowest hardly forgets (it halves only after more than 10,000 tokens)" if n > 1e4 else
            f"the slowest every {n:,.0f} tokens")


def state_panel(res: dict, head: int, layer: int, head_dim: int, evidence: Evidence) -> Panel:
    """The state animation of one head and the sentence read from the same run (the page shows it as markdown)."""
    T = len(res["labels"])
    fig = shared_figure(state_animation, res["states"][:, head], res["correction"][:, head], res["v"][:, head],
                        res["beta"][:, head], res["labels"],
                        f"layer {layer}, head {head}: press ▶ play, or drag the slider to a token", evidence=evidence)
    written = res["beta"][:, head] * np.linalg.norm(res["correction"][:, head], axis=1)  # (T,) size of each write
    rel = np.linalg.norm(res["correction"][:, head], axis=1) / np.maximum(np.linalg.norm(res["v"][:, head], axis=1),
                                                                          1e-9)
    log_a = np.log(np.clip(res["a"][:, head], 1e-30, 1.0)).mean(axis=0)  # (K,) mean log-decay per key channel
    half = np.log(0.5) / np.minimum(log_a, -1e-12)  # (K,) tokens for a channel to halve its contents
    t_big, t_small = int(written.argmax()), int(written.argmin())
    text = (f"The state stays {head_dim} × {head_dim} for all {T} tokens; its norm ends at "
            f"{res['norm'][-1, head]:.2f} (largest {res['norm'][:, head].max():.2f}, after token "
            f"{int(res['norm'][:, head].argmax())}). The biggest write is token {t_big} ({res['labels'][t_big]!r}, "
            f"β = {res['beta'][t_big, head]:.2f}), the smallest token {t_small} ({res['labels'][t_small]!r}); on "
            f"average the correction it writes is {100 * rel.mean():.0f}% of the new value's size (100% = the state "
            f"knew nothing about that key). Each key channel forgets at its own rate: the fastest halves its contents "
            f"every {half.min():,.1f} tokens, {_slowest(half.max())}.")
    return Panel(fig, (Said(text, (evidence,)),), evidence,
                 values={"final_norm": float(res["norm"][-1, head]), "fastest_half": float(half.min())})


def input_caption(cfg: K3Config, layer: int, source: str, T: int) -> str:
    """The caption naming the layer and the input it was fed."""
    return (f"Layer: `KimiDeltaAttention` {layer} of the **trained** `lite` checkpoint (d = {cfg.d_model}, "
            f"{cfg.kda.n_heads} heads × K = V = {cfg.kda.head_dim}; assets/lite.safetensors), "
            + (f"fed the trained model's own byte embeddings of the prompt ({T} bytes), as they arrive at this layer "
               "(after the layers below it and Attention Residuals' depth mix). " if source == "prompt"
               else f"fed {T} Gaussian random vectors (seed {SEED}) straight into its projections instead of a "
                    "prompt. ")
            + f"The animation shows the first {min(T, MAX_FRAMES)} tokens.")


def decay_panel(res: dict, head: int, evidence: Evidence) -> Panel:
    """(a) The decay of every key channel at every token, beside the one scalar Gated DeltaNet would apply."""
    fig = shared_figure(decay_heatmap, res["a"][:, head], res["labels"], head, evidence=evidence)
    spread = float(np.log(res["a"][:, head]).std(axis=1).mean())
    return Panel(fig, (Said(
        f"Each row is one token; bright = keep (a ≈ 1), dark = forget. Within a row the channels differ (mean "
        f"spread of log a across channels: {spread:.2f} nats): KDA can keep some key directions while flushing "
        "others. The right column is the single scalar Gated DeltaNet would apply to all channels (the geometric "
        "mean of the row, same total forgetting).", (evidence,)),), evidence, values={"spread": spread})


def norm_panel(res: dict, head: int, evidence: Evidence) -> Panel:
    """(b) ‖S_t‖_F after each token."""
    T = len(res["labels"])
    fig = shared_figure(state_norm_figure, res["norm"][:, head], T - 1, head, evidence=evidence)
    return Panel(fig, (Said("‖S_t‖_F after each token: the decay pulls it down, each write pushes it up; it never "
                            "needs more than K × V numbers.", (evidence,)),), evidence)


DECAY_RATES = (-0.01, -0.1, -1.0)  # the bounded-decay panel's rates per token, beside K3's bound
DECAY_SPAN = range(0, 41)  # its tokens since the write


def bounded_decay_panel(lite_min: float, lite: K3Config, k3: K3Config) -> Panel:
    """(f) K3's decay bound (config.json gate_lower_bound): how long a write survives at a few rates, and the chunk
    kernels' floor. `lite_min`: the smallest log-decay of the page's run."""
    bound = k3.kda.decay_lower_bound
    span = list(DECAY_SPAN)
    rates = {f"g = {g:g} per token": g for g in DECAY_RATES} | {f"g = {bound:g} (K3's bound)": bound}
    mems = {name: memory.decay_memory(g, span) for name, g in rates.items()}
    ev = derived(memory.decay_memory)
    fig = shared_figure(decay_memory_figure, span, {n: m.kept_after for n, m in mems.items()}, 0.01, evidence=ev)
    fast, slow = mems[f"g = {bound:g} (K3's bound)"], mems["g = -0.01 per token"]
    floors = {c: memory.chunk_decay_floor(bound, c) for c in (16, 64)}
    text = (f"K3 writes its decay as g = {bound:g} · sigmoid(…) (config.json `gate_lower_bound` {bound:g}; the "
            f"released code passes it to fla's kernels as `lower_bound`), so every key channel keeps at least "
            f"e^{bound:g} = {math.exp(bound):.4f} of its state per token: 1% of a write survives "
            f"{fast.tokens_to_threshold:.2f} tokens at the fastest, {slow.tokens_to_threshold:,.0f} at g = -0.01. The "
            f"bound limits how *fast* a channel forgets, not how long it remembers (g → 0 keeps everything). It also "
            f"keeps chunk-wise kernels finite: over a 16-token chunk the decay can fall to e^{floors[16]:g}, above "
            f"fp32's smallest normal number e^{memory.FP32_MIN_NORMAL_LOG:.1f}; over 64 tokens to e^{floors[64]:g}, "
            "far below it. This page's layer "
            + (f"has the bound too: its smallest log-decay on this input is {lite_min:.2f}."
               if lite.kda.decay_lower_bound is not None else
               f"is unbounded: its smallest log-decay on this input is {lite_min:.2f}."))
    return Panel(fig, (Said(text, (ev,)),), ev, values={"fastest_1pct": fast.tokens_to_threshold})


# ------------------------------------------------------------------------------------------- decode memory
def memory_assumptions() -> dict:
    """The KDA page's assumptions block for the hybrid's cache at 1M (`assumptions_block`'s keywords): the byte
    sizes it rests on, how its headline prints, and what else it assumes."""
    return dict(assumptions=[Assumption("latent_bytes", "bytes per MLA cache number", memory.ACTIVATION_BYTES_PER_ELEM,
                                    "a bf16 latent cache", unit="B"),
                         Assumption("state_bytes", "bytes per KDA state number", memory.KDA_STATE_BYTES_PER_ELEM,
                                    "fp32, as KDACache and flash-linear-attention keep it", unit="B"),
                         Assumption("conv_bytes", "bytes per conv-tail number", memory.ACTIVATION_BYTES_PER_ELEM,
                                    "bf16 activations: the last conv_size - 1 inputs of q, k and v", unit="B")],
                fmt=fmt_bytes,
                also=[("1M tokens", f"2^20 = {ONE_M_CONTEXT:,} tokens, as context windows are sized"),
                      ("the model", "the preset picked under 'Memory for decoding vs context length'")])


MEMORY_HEADS = (0, 16, 32, 48, 64, 96)  # the memory section's KDA head counts; 0 = the preset's own
MEMORY_HEAD_DIMS = (0, 64, 128, 256)  # (the same for the head dim)


def own_or(n: int) -> str:
    """A memory-section choice as its control shows it: 0 is the preset's own value."""
    return "the model's own" if n == 0 else str(n)


def memory_config(preset: str, heads: int = 0, head_dim: int = 0) -> K3Config:
    """The preset with its KDA layers re-sized (0 keeps the preset's heads / head dim): what the memory section
    draws, and what a practice problem's hint opens it at."""
    cfg = get_preset(preset)
    changed = {k: v for k, v in (("n_heads", heads), ("head_dim", head_dim)) if v}
    for k, v in changed.items():
        if v < 1:
            raise ValueError(f"KDA {k} must be >= 1, got {v}")
    return cfg.with_(kda=changed) if changed else cfg


def memory_panel(preset: str, heads: int = 0, head_dim: int = 0) -> Panel:
    """One preset's decode memory against context (its KDA layers re-sized by `heads` / `head_dim` when not 0):
    a KDA layer's fixed state, MLA's and MHA's growing caches, the whole model all-MLA against its hybrid."""
    cfg = memory_config(preset, heads, head_dim)
    curves = memory.memory_vs_context(cfg, CONTEXTS)
    ev = derived(memory.memory_vs_context)
    fig = shared_figure(memory_figure, CONTEXTS, curves, f"{cfg.name}: fp32 KDA state + bf16 conv tail, bf16 caches",
                        evidence=ev)
    state = memory.kda_layer_state_bytes(cfg.kda)
    resized = " (its KDA layers re-sized here)" if cfg != get_preset(preset) else ""
    text = (f"Computed from the preset's dimensions{resized} by `k3lite.analytic.memory` (the same function as the "
            f"hybrid and serving pages): a KDA layer keeps {fmt_bytes(state)} ({state:,} bytes) at any length ({cfg.kda.n_heads} × "
            f"{cfg.kda.head_dim} × {cfg.kda.head_dim} fp32 state, as `KDACache` and fla keep it, plus a "
            f"{cfg.kda.conv_size - 1}-token bf16 conv tail of q, k, v); an MLA (Multi-head Latent Attention) layer "
            f"keeps (kv_lora {cfg.mla.kv_lora_rank} + rope {cfg.mla.qk_rope_head_dim}) bf16 numbers per token. "
            + memory.kda_memory_sentence(cfg, CONTEXTS[-1])
            + f" The Kimi Linear report (arXiv 2510.26692) states \"up to {100 * REPORTED['kv_reduction'][0]:.0f}%\" "
            f"smaller KV cache for its 3:1 hybrid, and at 1M context {REPORTED['tpot_speedup_1m_batch1'][0]:g}x faster "
            f"decoding at batch 1 and a theoretical {REPORTED['tpot_speedup_1m'][0]:g}x from the larger batch the "
            "small cache allows (the hybrid page models both).")
    return Panel(fig, (Said(text, (ev,)),), ev, values={"state": float(state)})


# ----------------------------------------------------------------------------------------- the recall probe
def probe_evidence(n: int, decay: float, keys: str, leak: float) -> Evidence:
    return measured_here(f"k3lite.model.kda.recall_probe({n}, fast_decay={decay}, keys={keys!r}, leak={leak}), "
                         "live on this server")


def probe_panel(probe, n: int, leak: float, evidence: Evidence) -> Panel:
    """The probe's recall per pair for each mechanism, and what the numbers show (k3lite.model.kda.probe_claims)."""
    fig = shared_figure(recall_figure, {m: s.numpy() for m, s in probe.scores.items()}, evidence=evidence)
    recent = min(8, n)
    text = (f"Hand-built, not trained (`k3lite.model.kda.recall_probe`): n random unit (key, value) pairs in K = 32 "
            f"dims are written with β = 1, then every key is read back from the final state; recall = cosine with "
            f"the stored value. KDA keeps 8 of 32 channels at a = 1 and decays the other 24 by your factor; Gated "
            f"DeltaNet gets one scalar with the same mean log-decay (a = {probe.gdn_decay:.3f}). 'aligned': pair 0 "
            f"(the fact) has its key in KDA's slow channels and later keys mostly in the fast ones ({leak:.0%} leak "
            "into the slow ones); 'random': nothing lines up with the slow channels. What these numbers show: "
            + " ".join(probe_claims(probe, recent)))
    return Panel(fig, (Said(text, (evidence,)),), evidence, values={"gdn_decay": float(probe.gdn_decay)})


def probe_rows(probe, n: int) -> dict[str, list]:
    """The probe's table: each mechanism's recall of the oldest pair and its mean over the last pairs."""
    recent = min(8, n)
    return {"mechanism": list(probe.scores),
            "recall of pair 0 (the oldest)": [float(s[0]) for s in probe.scores.values()],
            f"mean recall, last {recent} pairs": [float(s[-recent:].mean()) for s in probe.scores.values()]}
