"""K3 beside a second model, or beside K3 without one of its ideas: every comparison is a real config.

`COMPARISONS` names each: three published models (their presets) and K3 with one idea swapped for what it replaces:
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
    key: str
    label: str  # what the control shows
    idea: str | None  # the K3 idea it removes (None: another model)
    instead: str  # what stands in its place, in words
    build: Callable[[K3Config], K3Config]


COMPARISONS: dict[str, Comparison] = {c.key: c for c in (
    Comparison("deepseek-v3", "DeepSeek-V3", None, "DeepSeek-V3 as released", lambda _: get_preset("deepseek-v3")),
    Comparison("kimi-k2", "Kimi K2", None, "Kimi K2 as released", lambda _: get_preset("kimi-k2")),
    Comparison("kimi-linear-48b-a3b", "Kimi Linear 48B", None, "Kimi Linear 48B-A3B as released",
               lambda _: get_preset("kimi-linear-48b-a3b")),
    Comparison("no-latent", "K3 without the latent", "Stable LatentMoE",
               "a same-sized classic MoE (experts in d, E/2 experts, top-k/2)",
               lambda k3: classic_variant(k3).with_(name=f"{k3.name} without the latent")),
    Comparison("all-mla", "K3 with MLA everywhere", "the 3:1 KDA hybrid", "MLA (global attention) in every layer",
               lambda k3: k3.with_(name=f"{k3.name} with MLA everywhere", kda_ratio=(0, 1))),
    Comparison("standard-residual", "K3 with a standard residual", "block Attention Residuals",
               "a standard residual stream", lambda k3: k3.with_(name=f"{k3.name} with a standard residual",
                                                                  attn_res="standard")),
    Comparison("aux-loss", "K3 with Switch's aux loss", "quantile balancing", "Switch's auxiliary balancing loss",
               lambda k3: k3.with_(name=f"{k3.name} with the aux loss", moe=replace(k3.moe, balancing="aux_loss"))),
    Comparison("bias", "K3 with DeepSeek-V3's bias", "quantile balancing", "DeepSeek-V3's sign-bias update",
               lambda k3: k3.with_(name=f"{k3.name} with the bias update", moe=replace(k3.moe, balancing="bias"))),
    Comparison("swiglu", "K3 with SwiGLU", "SiTU-GLU", "SwiGLU in every feed-forward",
               lambda k3: k3.with_(name=f"{k3.name} with SwiGLU", hidden_act="swiglu")),
)}
K3_MINUS = tuple(k for k, c in COMPARISONS.items() if c.idea is not None)  # the ablations, in the order above


def comparison_config(key: str, base: K3Config | str = K3) -> K3Config:
    """The config compared with `base` (K3's released preset by default)."""
    if key not in COMPARISONS:
        raise ValueError(f"comparison must be one of {list(COMPARISONS)}, got {key!r}")
    k3 = get_preset(base) if isinstance(base, str) else base
    return COMPARISONS[key].build(k3)



# how a sentence names a preset (here, not in presets.py: the shipped page results' fingerprint covers that file): the model's own name, not the preset's id
DISPLAY_NAMES = {"lite": "lite", "kimi-k3": "Kimi K3", "kimi-linear-48b-a3b": "Kimi Linear 48B-A3B",
                 "kimi-k2": "Kimi K2", "deepseek-v3": "DeepSeek-V3"}


def display_name(name: str) -> str:
    """'kimi-k3' -> 'Kimi K3'; a variant's name keeps its tail ('kimi-k3 with MLA everywhere' -> 'Kimi K3 with MLA
    everywhere'); any other name unchanged."""
    for key, shown in DISPLAY_NAMES.items():
        if name == key or name.startswith(key + " "):
            return shown + name[len(key):]
    return name
