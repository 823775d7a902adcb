"""The KDA page's words at each level (views/kda.py): the question, the animation's sentence and its caption, and at
paper level the gated delta rule, the decay bound and the decode state with their symbols in the code.

Engineer is the page as written (k3lite.panels.kda); first look rewords it from the same run and panel values."""
from __future__ import annotations

import math

import numpy as np
import torch

from k3lite.analytic import memory
from k3lite.base.evidence import derived, released
from k3lite.model.kda.ops import kda_trajectory
from k3lite.model.presets import get_preset
from k3lite.panels.core import Panel
from k3lite.panels.words import Formula, first_look_compare, pick
from k3lite.viz.style import fmt_bytes

K3 = get_preset("kimi-k3")
KIMI_LINEAR = "Kimi Linear tech report, arXiv 2510.26692"


def question(level: str) -> str:
    return pick(level,
                "**Attention that keeps a fixed-size notebook instead of every past token: each token fades what "
                "is written a little, then writes down only what the notebook got wrong.**",
                "**How does a fixed-size state remember a prompt: what does each token write into it, and what does "
                "it forget?**")


def state_said(level: str, shown: Panel, head_dim: int, T: int) -> str:
    """The animation's sentence (markdown under it): engineer's as the panel wrote it; first look: the one number,
    the state's fixed size (the same head_dim and T the panel's sentence reads)."""
    if level != "first":
        return shown.text
    return (f"The state stays **{head_dim} × {head_dim} numbers** per head for all {T} tokens, and would for a "
            "million. Every column fades at its own pace, some within a token, others far slower, and each token "
            "writes only what the state did not already hold. Press ▶ play to watch it.")


def compare(level: str, panel: Panel, pair) -> Panel:
    context = int(panel.values["context"])
    return first_look_compare(level, panel, pair, "total", f"the memory one conversation of {context:,} tokens holds "
                              "for writing its next token")


def input_caption(level: str, engineer: str, layer: int) -> str:
    return pick(level, f"One real layer ({layer}) of the small model trained for this app, reading your prompt one "
                       "byte at a time.", engineer)


RULE_TITLE = {"first": "What the animation shows, in plain words",
              "engineer": "The rule being animated: the gated delta rule, per channel",
              "paper": "The rule being animated: the gated delta rule, per channel"}


def rule(level: str, engineer: str) -> str:
    """The rule's expander: engineer's GATED_DELTA_RULE (LaTeX); first look says it without a formula."""
    return pick(level, "Ordinary attention keeps every past token, so its memory grows with the prompt. KDA keeps one "
                       "fixed grid of numbers per head instead and edits it token by token. First every column of the "
                       "grid fades a little, each at its own pace, so old details can go while useful ones stay. Then "
                       "the layer asks the grid what it already knows about the new token and writes in only the "
                       "difference. In the animation the red bars are that difference; without the correction the "
                       "grid would only ever grow.", engineer)


KERNEL_NOTE = {"first": "The app checks its fast training code against these plain versions.",
               "engineer": "The model trains with a faster kernel (`k3lite/model/kda/ops.py`, `chunk.py`: factored "
                           "exponents, a recursive triangular inverse, a hand-written backward); tests/model/"
                           "test_kda.py holds it equal to these readable versions."}
KERNEL_NOTE["paper"] = KERNEL_NOTE["engineer"]


# ------------------------------------------------------------------------------------------ paper level
def seeded_inputs(T: int, K: int, seed: int = 0) -> dict[str, np.ndarray]:
    """One head's q, k (L2-normalised), v, log-decay g <= 0 and beta in (0, 1) for T tokens: what the rule is shown
    on (the page's T and head dim)."""
    rng = np.random.default_rng(seed)
    q, k = (x / np.linalg.norm(x, axis=-1, keepdims=True) for x in rng.standard_normal((2, T, K)))
    return dict(q=q, k=k, v=rng.standard_normal((T, K)), g=-rng.uniform(0.0, 0.5, (T, K)), beta=rng.uniform(0, 1, T))


def _delta_rule(q, k, v, g, beta):
    """S_t = (I - b_t k_t k_t^T) Diag(a_t) S_{t-1} + b_t k_t v_t^T, as written; returns (S_T, o_T)."""
    K = k.shape[1]
    S = np.zeros((K, v.shape[1]))
    for t in range(len(k)):
        S = (np.eye(K) - beta[t] * np.outer(k[t], k[t])) @ np.diag(np.exp(g[t])) @ S + beta[t] * np.outer(k[t], v[t])
    return np.concatenate([S.ravel(), K ** -0.5 * S.T @ q[-1]])


def _trajectory(q, k, v, g, beta):
    t = [torch.as_tensor(x, dtype=torch.float64)[None, :, None] for x in (q, k, v, g, beta)]  # (1, T, 1, ...)
    run = kda_trajectory(*t, keep_states=True)
    return np.concatenate([run.states[0, -1, 0].numpy().ravel(), run.o[0, -1, 0].numpy()])


def _one_percent(g_min):
    return math.log(0.01) / g_min  # n = ln(0.01) / g_min


def _state_bytes(H, K, w, b_s, b_c):
    return H * K * K * b_s + 3 * (w - 1) * H * K * b_c  # H K V b_s + 3 (w - 1) H K b_c, V = K


def _chunk_floor(C, g_min):
    return C * g_min


def formulas(T: int, head_dim: int) -> list[Formula]:
    """The page's equations: the rule on T seeded tokens of the page's head size, then K3's bound and state."""
    bound, kda = K3.kda.decay_lower_bound, K3.kda
    n_kda = K3.layer_types().count("kda")
    return [
        Formula(r"\begin{aligned} S_t &= \big(I - \beta_t k_t k_t^{\top}\big)\,\mathrm{Diag}(a_t)\,S_{t-1} \\ "
                r"&\quad + \beta_t k_t v_t^{\top} \\ o_t &= K^{-1/2}\, S_t^{\top} q_t \end{aligned}",
                (("S_t", "S (B, H, K, V)"), ("a_t = e^{g_t}", "g_t.exp()"), ("\\beta_t", "beta_t"),
                 ("k_t, v_t, q_t", "ops.gated_delta_step(q_t, k_t, v_t, ...)"), ("K^{-1/2}", "scale"), ("o_t", "o_t")),
                _delta_rule, _trajectory, seeded_inputs(T, head_dim),
                lambda out: f"On {T} seeded tokens with K = V = {head_dim} the rule as written and `kda_trajectory` "
                            f"(decay, then the correction) end on the same state, ‖S‖ = "
                            f"{np.linalg.norm(out[:head_dim * head_dim]):.3f}: {head_dim * head_dim:,} numbers per "
                            "head whatever T",
                f"gated delta rule, {KIMI_LINEAR}; per-channel a_t is what makes it KDA rather than Gated DeltaNet",
                derived(kda_trajectory)),
        Formula(r"\begin{aligned} g_t &= g_{\min}\,\sigma(\cdot) \ \ge\ g_{\min} \\ "
                r"n_{1\%} &= \frac{\ln 0.01}{g_{\min}} \end{aligned}",
                (("g_{\\min}", "KDAConfig.decay_lower_bound (config.json gate_lower_bound)"),
                 ("n_{1\\%}", "memory.decay_memory(g, tokens).tokens_to_threshold")),
                _one_percent, lambda g_min: memory.decay_memory(g_min, [1]).tokens_to_threshold, dict(g_min=bound),
                lambda n: f"K3's bound g_min = {bound:g}: a channel keeps at least e^{bound:g} = {math.exp(bound):.4f} "
                          f"of its state per token, so even the fastest keeps 1% of a write for {n:.2f} tokens",
                "K3 config.json `gate_lower_bound`, passed to fla's kernels as `lower_bound`",
                derived(memory.decay_memory)),
        Formula(r"C\, g_{\min} \ \ \text{vs}\ \ \ln(\text{fp32 min normal}) = -87.3",
                (("C", "chunk"), ("C\\, g_{\\min}", "memory.chunk_decay_floor(lower_bound, chunk)")),
                _chunk_floor, lambda C, g_min: memory.chunk_decay_floor(g_min, C), dict(C=16, g_min=bound),
                lambda floor: f"Over a 16-token chunk the cumulative decay can fall to e^{floor:g}, above fp32's "
                              f"e^{memory.FP32_MIN_NORMAL_LOG:.1f}: the chunk-wise kernels divide by it and stay finite",
                "the chunk-wise form (WY/UT transform), " + KIMI_LINEAR, derived(memory.chunk_decay_floor)),
        Formula(r"M_{\mathrm{KDA}} = H\,K\,V\,b_s + 3\,(w - 1)\,H\,K\,b_c",
                (("H, K", "KDAConfig.n_heads, head_dim (V = K)"), ("w", "conv_size"),
                 ("b_s", "KDA_STATE_BYTES_PER_ELEM (fp32: 4)"), ("b_c", "ACTIVATION_BYTES_PER_ELEM (bf16: 2)"),
                 ("M_{\\mathrm{KDA}}", "memory.kda_state_bytes")),
                _state_bytes, lambda H, K, w, b_s, b_c: memory.kda_state_bytes(H, K, w, 1, b_s, b_c),
                dict(H=kda.n_heads, K=kda.head_dim, w=kda.conv_size, b_s=memory.KDA_STATE_BYTES_PER_ELEM,
                     b_c=memory.ACTIVATION_BYTES_PER_ELEM),
                lambda m: f"One K3 KDA layer holds {fmt_bytes(m)} per sequence at any context; its {n_kda} KDA "
                          f"layers {fmt_bytes(n_kda * m)}",
                f"K3 config.json: {kda.n_heads} KDA heads of {kda.head_dim}, conv {kda.conv_size}, KDA on {n_kda} of "
                f"{K3.n_layers} layers",
                released("K3's config.json (k3lite.model.presets)")),
    ]


PAPER_NOTES = (
    "Derivation: expand the write, S_t = S' + β_t k_t (v_t − S'ᵀ k_t)ᵀ with S' = Diag(a_t) S_{t−1}: one step of "
    "gradient descent on ½‖S'ᵀ k_t − v_t‖² with step β_t, hence the delta rule; the decay comes first. Special "
    "cases of the same kernel: a_t equal across channels is Gated DeltaNet, a_t = 1 DeltaNet, no correction gated "
    "linear attention. Chunk-wise, the rule becomes a lower-triangular solve per chunk (UT transform) and a state "
    "carried across chunks; tests/model/test_kda.py holds it equal to the recurrence. Sources: " + KIMI_LINEAR
    + "; flash-linear-attention `fla/ops/kda/naive.py`; Kimi K3 Technical Report, arXiv 2607.24653.",
)
