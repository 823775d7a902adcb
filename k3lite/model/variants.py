"""K3 beside a second model, or beside K3 without one of its ideas: every comparison is a real config.

`COMPARISONS` names each: the published models whose card (k3lite.model.cards) has a label, and K3 with one idea
swapped for what it replaces (each Comparison is that variant's card: its label, the pages it shows on and why):
    no-latent        the same-sized classic MoE: experts in d_model, E/c experts and top-k/c (c = d / latent), so the
                     expert FLOPs per token match (the serving waterfall's classic design)
    all-mla          MLA (global attention) in every layer instead of the 3:1 KDA hybrid
    standard-residual  a standard residual stream instead of block Attention Residuals
    aux-loss, bias   Switch's auxiliary loss or DeepSeek-V3's sign-bias update instead of quantile balancing
    swiglu           SwiGLU instead of SiTU-GLU in every feed-forward
`comparison_config(key)` builds it (from K3's released preset, or the one given); the same code then counts, runs
and prices it as it does K3. Nothing is hand-written: a variant is `K3Config.with_` of the preset.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, NamedTuple

from k3lite.model.config import K3Config
from k3lite.model.cards import CARDS, ModelCard
from k3lite.model.presets import get_preset

K3 = "kimi-k3"


def classic_variant(cfg: K3Config) -> K3Config:
    """The same-sized classic design: experts in d_model, E/c experts and top-k/c (c = d_model / latent)."""
    moe = cfg.moe
    if not moe.latent_dim:
        return cfg
    c = cfg.d_model // moe.latent_dim
    return cfg.with_(name=f"{cfg.name} (classic MoE)",
                     moe=replace(moe, n_routed_experts=moe.n_routed_experts // c, top_k=max(1, moe.top_k // c),
                                 latent_dim=0, latent_norm=False))


class Comparison(NamedTuple):
    """A comparison's card: what the control shows, what it swaps and where its difference shows."""

    key: str
    label: str  # what the control shows
    idea: str | None  # the K3 idea it removes (None: another model)
    instead: str  # what stands in its place, in words
    build: Callable[[K3Config], K3Config]
    # the pages (url_path ids of views/registry.py's PAGES) that draw what this comparison changes, and what they
    # draw, in a line: k3lite.panels.core.where_else names them on a page where the two models' numbers agree
    shows_on: tuple[str, ...] = ()
    why: str = ""


def _released(card: ModelCard) -> Comparison:
    return Comparison(card.key, card.label, None, f"{card.name} as released", lambda _: get_preset(card.key))


BALANCING_SHOWS = ("moe",)
BALANCING_WHY = ("how evenly each method loads the experts, which sets the busiest GPU a step waits for; a count "
                 "that routes uniformly sees only the average")
COMPARISONS: dict[str, Comparison] = {c.key: c for c in (
    *(_released(card) for card in CARDS.values() if card.label),
    Comparison("no-latent", "K3 without the latent", "Stable LatentMoE",
               "a same-sized classic MoE (experts in d, E/2 experts, top-k/2)",
               lambda k3: classic_variant(k3).with_(name=f"{k3.name} without the latent"),
               ("moe", "interconnect"), "the expert weights and the bytes each token sends to its experts"),
    Comparison("all-mla", "K3 with MLA everywhere", "the 3:1 KDA hybrid", "MLA (global attention) in every layer",
               lambda k3: k3.with_(name=f"{k3.name} with MLA everywhere", kda_ratio=(0, 1)),
               ("hybrid_attention", "kda"), "the decode cache and the time to read it"),
    Comparison("standard-residual", "K3 with a standard residual", "block Attention Residuals",
               "a standard residual stream", lambda k3: k3.with_(name=f"{k3.name} with a standard residual",
                                                                  attn_res="standard"),
               ("attention_residuals", "interconnect"),
               "what each layer reads from the ones before it, the loss when both train, and what a pipeline stage "
               "passes on in training"),
    Comparison("aux-loss", "K3 with Switch's aux loss", "quantile balancing", "Switch's auxiliary balancing loss",
               lambda k3: k3.with_(name=f"{k3.name} with the aux loss", moe=replace(k3.moe, balancing="aux_loss")),
               BALANCING_SHOWS, BALANCING_WHY),
    Comparison("bias", "K3 with DeepSeek-V3's bias", "quantile balancing", "DeepSeek-V3's sign-bias update",
               lambda k3: k3.with_(name=f"{k3.name} with the bias update", moe=replace(k3.moe, balancing="bias")),
               BALANCING_SHOWS, BALANCING_WHY),
    Comparison("swiglu", "K3 with SwiGLU", "SiTU-GLU", "SwiGLU in every feed-forward",
               lambda k3: k3.with_(name=f"{k3.name} with SwiGLU", hidden_act="swiglu"),
               ("moe",), "what each expert computes: SiTU-GLU's bounded gate beside SwiGLU's, a training-stability "
                         "choice"),
)}
K3_MINUS = tuple(k for k, c in COMPARISONS.items() if c.idea is not None)  # the ablations, in the order above


def comparison_config(key: str, base: K3Config | str = K3) -> K3Config:
    """The config compared with `base` (K3's released preset by default)."""
    if key not in COMPARISONS:
        raise ValueError(f"comparison must be one of {list(COMPARISONS)}, got {key!r}")
    k3 = get_preset(base) if isinstance(base, str) else base
    return COMPARISONS[key].build(k3)

