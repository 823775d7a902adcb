"""The Attention Residuals page's words at each level (views/attention_residuals.py): the question, the sentence
under the depth reads, and at paper level the softmax over depth, the sources a block sublayer reads and what a
token keeps, with their symbols in the code.

Engineer is the page as written (k3lite.panels.attnres); first look rewords it from the same panel values."""
from __future__ import annotations

import math

import numpy as np
import torch

from k3lite.base.evidence import derived, released
from k3lite.model.attnres import DepthAttention, attnres_cost
from k3lite.model.presets import get_preset
from k3lite.panels.core import Panel
from k3lite.panels.words import Formula, first_look_compare, pick
from k3lite.viz.archmap import sources_at
from k3lite.viz.style import fmt_bytes

K3 = get_preset("kimi-k3")
PAPER = "Attention Residuals, Kimi Team, arXiv 2603.15031"


def question(level: str) -> str:
    return pick(level,
                "**Usually every layer receives one pile: everything the layers before it wrote, added together. "
                "Here each layer chooses which earlier layers to read, and how much of each, like rereading chosen "
                "chapters instead of one summary of the whole book.**",
                "**Instead of adding every earlier layer's output into one sum, what if each layer chose which "
                "earlier outputs to read, and how much does reading blocks of them instead save?**")


def compare(level: str, panel: Panel, pair) -> Panel:
    return first_look_compare(level, panel, pair, "last", "what one token carries from layer to layer at the end")


HOW_TITLE = {"first": "How it works, in plain words", "engineer": "How Attention Residuals work (the formula and the paper)",
             "paper": "How Attention Residuals work (the formula and the paper)"}
HOW = {"first": "In a standard model every layer adds its result to one running pile, so a late layer cannot tell an "
                "early layer's work from the one just before it. Attention Residuals keep the results apart, and each "
                "layer learns how much of each earlier result to take. To keep that cheap, K3 groups the layers into "
                "blocks and only keeps one summary per block. The arcs drawn are what the small trained model chose "
                "on your prompt.",
       "engineer": "A standard residual stream adds every sublayer's output into one running sum, so layer 60 cannot "
                   "tell layer 3's contribution from layer 59's. **Attention Residuals** (Kimi Team, arXiv "
                   "2603.15031) keep the outputs apart and give each sublayer a learned pseudo-query `w` that attends "
                   "over depth: `h = Σ_i softmax_i(w · RMSNorm(v_i)) v_i`, with `v_0` the token embedding. The "
                   "**block** variant K3 uses sums the outputs inside blocks of S sublayers and attends over the block "
                   "sums (and the partial sum of the current block), so a token keeps L·2/S vectors instead of 2L. "
                   "The weights drawn are the trained lite model's on your prompt (KDA = Kimi Delta Attention, MLA = "
                   "Multi-head Latent Attention, the two mixers)."}
HOW["paper"] = HOW["engineer"]


def reading(level: str, engineer: str, panel: Panel, reads, weights, reader: int) -> str:
    """The sentence under the depth reads: engineer's; first look: how many it reads and the largest share, from
    the same panel values."""
    if level != "first":
        return engineer
    name = reads.names[reader + 1]
    if weights is None:
        return (f"With a standard residual the {name} gets one pile, every earlier output added with the same "
                "weight: it cannot tell them apart. Pick block or full to let it choose.")
    top = reads.sources[int(max(range(len(reads.sources)), key=lambda j: weights[j]))][0]
    return (f"The {name} reads **{panel.values['vectors']}** earlier outputs and gives the largest share, "
            f"**{panel.values['top_weight']:.0%}**, to {'the ' * (top == 'embedding')}{top}. Thicker arcs, larger "
            "shares.")


# ------------------------------------------------------------------------------------------ paper level
def _depth_softmax(v, w, eps):
    """a_i = softmax_i(w . RMSNorm(v_i)), h = sum_i a_i v_i, as written (numpy); returns (a, h)."""
    v = np.asarray(v, dtype=np.float64)
    normed = v / np.sqrt((v ** 2).mean(axis=-1, keepdims=True) + eps)  # RMSNorm, weight 1
    logits = normed @ np.asarray(w, dtype=np.float64)
    a = np.exp(logits - logits.max())
    a = a / a.sum()
    return np.concatenate([a, a @ v])


def _depth_module(v, w, eps):
    attn = DepthAttention(v.shape[-1], norm_eps=eps).double()
    with torch.no_grad():
        attn.query.copy_(torch.as_tensor(w))
        h, a = attn(torch.as_tensor(v)[:, None, None, :])  # sources (N, B=1, T=1, d)
    return np.concatenate([a[0, 0].numpy(), h[0, 0].numpy()])


def _block_sources(sub, S):
    return 1 + sub // S + (1 if sub % S else 0)  # 1 + floor(l / S) + [l mod S != 0]


def _kept(L, S):
    return 1 + math.ceil(2 * L / S)


def seeded_sources(n: int, d: int, seed: int = 0) -> dict:
    """n source vectors of width d and a pseudo-query w (zero at initialisation; seeded here so the weights differ)."""
    g = torch.Generator().manual_seed(seed)
    return dict(v=torch.randn(n, d, generator=g, dtype=torch.float64).numpy(),
                w=(0.3 * torch.randn(d, generator=g, dtype=torch.float64)).numpy(), eps=1e-6)


def formulas(n_sources: int, d: int, reader: int, block: int) -> list[Formula]:
    """The page's equations: the mix over the reader's `n_sources` (seeded vectors of the lite width d), the sources
    a block sublayer reads at the page's reader and S, and what K3 keeps per token."""
    L, S = K3.n_layers, K3.attn_res_block_size
    k3_cost = attnres_cost(L, K3.d_model, "block", S)
    full = attnres_cost(L, K3.d_model, "full")
    return [
        Formula(r"\begin{aligned} a_{i\to l} &= \mathrm{softmax}_i\big(w_l \cdot \mathrm{RMSNorm}(v_i)\big) \\ "
                r"h_l &= \sum_i a_{i\to l}\, v_i \end{aligned}",
                (("v_i", "sources (N, B, T, d)"), ("w_l", "DepthAttention.query (zero-initialised)"),
                 ("\\mathrm{RMSNorm}", "DepthAttention.key_norm"), ("a_{i\\to l}", "weights"), ("h_l", "h")),
                _depth_softmax, _depth_module, seeded_sources(max(n_sources, 1), d),
                lambda out: f"On {max(n_sources, 1)} seeded sources of d = {d} (what this reader mixes), the weights "
                            f"sum to {out[:max(n_sources, 1)].sum():.3f} and the largest is "
                            f"{out[:max(n_sources, 1)].max():.2f}; with w = 0 each would be "
                            f"1/{max(n_sources, 1)}",
                f"{PAPER}; `k3lite.model.attnres.DepthAttention`", derived(DepthAttention)),
        Formula(r"n_l = 1 + \lfloor l / S \rfloor + [\, l \bmod S \ne 0\,]",
                (("n_l", "len(sources_at('block', sublayer, block_size))"), ("l", "sublayer (the reader)"),
                 ("S", "attn_res_block_size (sublayers)")),
                _block_sources, lambda sub, S: len(sources_at("block", sub, S)), dict(sub=reader, S=block),
                lambda n: f"Sublayer {reader} at S = {block} reads n = {n}: the embedding, the completed block "
                          f"sums and the current block's partial sum (full AttnRes: {reader + 1})",
                PAPER + ", the block variant", derived(sources_at)),
        Formula(r"n_{\mathrm{kept}} = 1 + \lceil 2L / S \rceil \quad (\text{full: } 2L + 1)",
                (("L", "n_layers"), ("S", "attn_res_block_size"),
                 ("n_{\\mathrm{kept}}", "attnres_cost(L, d, 'block', S).live_sources")),
                _kept, lambda L, S: attnres_cost(L, K3.d_model, "block", S).live_sources, dict(L=L, S=S),
                lambda n: f"K3 (L = {L}, S = {S} sublayers = {K3.attn_res_block_layers:g} layers) keeps {n} vectors "
                          f"of d = {K3.d_model} per token, {fmt_bytes(k3_cost.live_bytes)} in bf16, where full "
                          f"AttnRes would keep {full.live_sources} ({fmt_bytes(full.live_bytes)})",
                "K3 config.json attn_res_block_size", released("K3's config.json (k3lite.model.presets)")),
    ]


PAPER_NOTES = (
    "Derivation: a standard pre-norm residual is the special case a_{i→l} = 1 for every source, a sum no sublayer "
    "can reweight. A softmax makes the input a convex mix, so its scale stays that of one output, and w_l = 0 "
    "gives every source 1/N at initialisation. Blocks trade resolution for memory: a token keeps 2L/S + 1 vectors "
    "instead of 2L + 1, which is also what a pipeline stage boundary must carry. The paper reports block AttnRes "
    "matching a baseline trained with about 1.25x more compute, at under 2% extra inference latency, and about 8 "
    "blocks recovering most of full AttnRes's gain. Neighbours: DenseFormer (static depth weights, arXiv "
    "2402.02622), Hyper-Connections (arXiv 2409.19606), MUDDFormer (arXiv 2502.12170). Sources: " + PAPER
    + f"; Kimi K3 Technical Report, arXiv 2607.24653, for K3's blocks of {K3.attn_res_block_layers:g} layers.",
)
