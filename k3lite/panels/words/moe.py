"""The MoE page's words at each level (views/moe.py): the question under the title, the first picture's sentence,
the 'how it works' expander, and at paper level the equations with their symbols in the code.

Engineer is the page as written (k3lite.panels.moe); first look and paper reword it from the same panel values."""
from __future__ import annotations

import numpy as np
import torch

from k3lite.analytic.latent import record_overhead, wire_bytes_headline
from k3lite.analytic.memory import expected_experts_touched
from k3lite.base.evidence import derived
from k3lite.interconnect import REFERENCE, deployment_bytes
from k3lite.model.config import MoEConfig
from k3lite.model.moe.balancing import quantile_bias
from k3lite.model.moe.experts import active_expert_flops_per_token
from k3lite.panels.core import Panel, Said
from k3lite.panels.moe import K3, K3_D, how_it_works
from k3lite.panels.words import Formula, first_look_compare, pick
from k3lite.viz.style import fmt_bytes

REPORT = "Kimi K3 Technical Report, arXiv 2607.24653"


def question(level: str) -> str:
    """The bold line under the title."""
    k, e = K3.moe.top_k, K3.moe.n_routed_experts
    return pick(level,
                f"**K3 has {e} small networks, the experts, spread over many GPUs; each token uses only {k} of "
                "them. Sending a token to them costs bytes, and the picture follows one token's trip.**",
                f"**How does one token reach {k} of {e} experts on other GPUs cheaply, and how do those experts stay "
                "evenly loaded?**")


def path_said(level: str, path: Panel, ratio_label: str) -> tuple[Said, ...]:
    """The sentence under the first picture: engineer's as the panel wrote it; first look: the one number (the wire
    bytes per token, from the same panel values and evidence)."""
    if level != "first":
        return path.sentences
    wire, classic = path.values["wire"], path.values["classic_wire"]
    if ratio_label == "1":
        text = (f"At latent ratio 1 nothing is shrunk: each token travels at full width, **{fmt_bytes(wire)}** on "
                "the wire per token per MoE layer. Move the latent ratio to see what shrinking saves.")
    else:
        text = (f"The number that matters: **{fmt_bytes(wire)}** leave the GPU per token per MoE layer, against "
                f"{fmt_bytes(classic)} if the token travelled at full width. K3 shrinks each token to {ratio_label} "
                "of its width before it travels, like posting a small copy of a photo instead of the original, "
                "and the experts work on the small copy.")
    return (Said(text, path.sentences[0].evidence),)


def compare(level: str, panel: Panel, pair) -> Panel:
    return first_look_compare(level, panel, pair, "wire", "bytes on the wire per token per MoE layer")


HOW_TITLE = {"first": "How it works, in plain words",
             "engineer": "How LatentMoE and quantile balancing work (the formulas and the sources)",
             "paper": "How LatentMoE and quantile balancing work (the formulas and the sources)"}


def how(level: str) -> str:
    """The expander's text."""
    m = K3.moe
    return pick(level,
                f"A K3 layer holds {m.n_routed_experts} experts. A small router picks {m.top_k} for each token, so "
                "each expert learns its own kind of token. Two things can go wrong. Some experts get far more "
                "tokens than others, and the busiest one holds everyone up: K3 re-sets each expert's bar to entry "
                "after every batch, so each gets about its fair share. And the experts live on other GPUs, so every "
                "token is a message: K3 makes the message smaller before sending it.", how_it_works())


# ------------------------------------------------------------------------------------------ paper level
def _wire(c, lat, b_d, b_c, o):
    return c * (lat * (b_d + b_c) + o)  # c (l (b_d + b_c) + o)


def _flops(lat, F, k):
    return 2 * 3 * lat * F * k  # 2 · 3 l F k


def _eq14(s, k, b):
    """Eq. 14 as it reads, in numpy: alpha_i = (k+1)-th largest of s_i + b; b^_j = -Q_{1-k/E}(s_:,j - alpha_i)."""
    s, b = np.asarray(s, dtype=np.float64), np.asarray(b, dtype=np.float64)
    alpha = -np.sort(-(s + b), axis=1)[:, k]  # (N,)
    b_hat = -np.quantile(s - alpha[:, None], 1 - k / s.shape[1], axis=0)  # (E,)
    return b_hat - b_hat.mean()


def _touched(E, k, B):
    return E * (1 - (1 - k / E) ** B)  # E (1 - (1 - k/E)^B)


def balancing_batch(n_experts: int, top_k: int, seed: int = 0) -> torch.Tensor:
    """The seeded batch of sigmoid scores Eq. 14 is shown on: 4 N k / E >= 4 tokens per expert's share."""
    n = 4 * -(-n_experts // top_k)
    return torch.rand(n, n_experts, generator=torch.Generator().manual_seed(seed))


def _loads(scores: torch.Tensor, k: int, bias) -> torch.Tensor:
    chosen = torch.topk(scores + torch.as_tensor(bias, dtype=scores.dtype), k, dim=-1).indices
    return torch.bincount(chosen.flatten(), minlength=scores.shape[1])


def formulas(moe: MoEConfig, batch: int) -> list[Formula]:
    """The page's equations at its numbers: the sliders' layer `moe` at K3 width, (e)'s decode batch."""
    E, k, F = moe.n_routed_experts, moe.top_k, moe.expert_ffn_dim
    lat = moe.latent_dim or K3_D  # the symbol l
    c = deployment_bytes(moe, REFERENCE, K3_D).copies.total  # the copies the headline multiplies
    scores = balancing_batch(E, k)
    share = scores.shape[0] * k / E
    return [
        Formula(r"W = c\,\big(l\,(b_d + b_c) + o\big)",
                (("W", "wire_bytes_headline(moe, d_model)"), ("c", "deployment_bytes(...).copies.total"),
                 ("l", "MoEConfig.latent_dim"), ("b_d", "dispatch_elem_bytes (FP8: 1)"),
                 ("b_c", "combine_elem_bytes (BF16: 2)"), ("o", "record_overhead(moe, d_model)")),
                _wire, lambda **_: wire_bytes_headline(moe, K3_D),
                dict(c=c, lat=lat, b_d=1.0, b_c=2.0, o=record_overhead(moe, K3_D)),
                lambda v: f"The wire bytes a token costs per MoE layer: {c:.2f} copies each way of l = {lat} numbers "
                          f"give W = {fmt_bytes(v)}, the first picture's number",
                "LatentMoE, NVIDIA arXiv 2601.18089; K3's form, report Eq. 11; wire formats as DeepEP sends them",
                derived(wire_bytes_headline)),
        Formula(r"F_{\mathrm{routed}} = 2 \cdot 3\, l\, F\, k",
                (("F_{\\mathrm{routed}}", "active_expert_flops_per_token(dim, ffn_dim, top_k)"),
                 ("l", "dim: latent_dim"), ("F", "MoEConfig.expert_ffn_dim"), ("k", "MoEConfig.top_k")),
                _flops, lambda lat, F, k: active_expert_flops_per_token(lat, F, k), dict(lat=lat, F=F, k=k),
                lambda v: f"The routed experts' work per token: three matmuls of l x F in each of {k} SwiGLU-style "
                          f"experts, {v / 1e9:.2f} GFLOP; the latent shrinks it by d / l = {K3_D / lat:g}x",
                f"K3 config.json: expert FFN {K3.moe.expert_ffn_dim} in a {K3.moe.latent_dim} latent; LatentMoE "
                "reinvests the saving in more experts",
                derived(active_expert_flops_per_token)),
        Formula(r"\begin{aligned} \alpha_i &= \mathrm{top}_{k+1}\!\big(s_{i,:} + b\big) \\ "
                r"\hat b_j &= -Q_{1-k/E}\big(s_{:,j} - \alpha\big) \\ b &= \hat b - \overline{\hat b} \end{aligned}",
                (("s", "scores (N, E)"), ("b", "bias (E,)"), ("\\alpha_i", "alpha"), ("\\hat b_j", "b_hat"),
                 ("Q", "torch.quantile"), ("k", "k"), ("E", "n_experts")),
                _eq14, lambda s, k, b: quantile_bias(torch.as_tensor(s), k, torch.as_tensor(b)).numpy(),
                dict(s=scores, k=k, b=torch.zeros(E)),
                lambda v: (lambda n: f"On a seeded batch of {scores.shape[0]} random tokens, one update gives every "
                           f"expert between {int(n.min())} and {int(n.max())} tokens where its share k N / E is "
                           f"{share:g} (raw scores: {int(_loads(scores, k, 0).min())} to "
                           f"{int(_loads(scores, k, 0).max())}); no step size")(_loads(scores, k, v)),
                f"quantile balancing, {REPORT} §2.3.3 Eq. 14, `k3lite.model.moe.balancing.quantile_bias`; the "
                "DeepSeek-V3 bias method (arXiv 2412.19437) instead moves b by ±γ a step",
                derived(quantile_bias)),
        Formula(r"\mathbb{E}[\,n_{\mathrm{touched}}\,] = E\,\big(1 - (1 - k/E)^{B}\big)",
                (("n_{\\mathrm{touched}}", "expected_experts_touched(n_experts, top_k, n_tokens)"),
                 ("E", "n_experts"), ("k", "top_k"), ("B", "n_tokens (the moe_batch control in (e))")),
                _touched, lambda E, k, B: expected_experts_touched(E, k, B), dict(E=E, k=k, B=batch),
                lambda v: f"A decode step of B = {batch} tokens reads {v:.1f} distinct experts' weights per layer "
                          f"(uniform routing: each token picks a given expert with probability k / E = {k / E:.4f})",
                "section (e); the count the hybrid and serving pages' weight reads use",
                derived(expected_experts_touched)),
    ]


PAPER_NOTES = (
    "Derivation of Eq. 14: the load-balancing linear program over routings has one dual variable per token "
    "(its cut α_i: exactly k experts above it) and one per expert (b_j); holding one fixed, the other is an "
    "order statistic, so one alternating step reads both off the batch with no step size. The mean is removed "
    "because adding a constant to every b_j changes no top-k. The bias is fitted on a batch and used on the next "
    "one, frozen at inference; K3 pools the per-GPU histograms with one all-reduce "
    "(`quantile_bias_histogram`). Sources: " + REPORT + " §2.3.3; J. Su, kexue.fm/archives/11619; DeepSeek-V3, "
    "arXiv 2412.19437 (sigmoid router, bias balancing); DeepEP (deepseek-ai/DeepEP) for the FP8 dispatch and "
    "BF16 combine records.",
)
