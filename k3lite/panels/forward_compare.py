"""The forward-pass page with a comparison on: at full scale, the bytes one decoded token reads per stage of the
forward pass, K3 beside the compared model (the live run on the page is the small lite model; this is the two real
configs, counted by k3lite.analytic.anatomy, the numbers behind the architecture map).

Both models are counted the same way so the bars show the architecture, not a storage choice: every weight in fp8
(the home ledger's format, as DeepSeek-V3 ships), batch 1, caches bf16 at the page's context. HBM bytes per stage
(weights a token multiplies with, the attention cache or state it reads, the AttnRes depth sources) and, as its own
bar, the bytes it sends between GPUs (dispatch + combine on the reference deployment, interconnect.REFERENCE).
    stage_bytes(cfg, context)           {stage: bytes per decoded token}
    bytes_by_part_panel(pair, context)  the paired bars and two computed sentences
"""
from __future__ import annotations

import plotly.graph_objects as go

from k3lite.analytic.anatomy import Anatomy, anatomy
from k3lite.analytic.ledger import WEIGHT_PRECISION
from k3lite.base.evidence import derived
from k3lite.base.units import fmt_bytes
from k3lite.base.wording import times
from k3lite.interconnect import REFERENCE
from k3lite.interconnect.sentences import routing_clause
from k3lite.model.attnres import attnres_cost
from k3lite.model.config import K3Config
from k3lite.panels.core import Panel, Pair, Said, where_else
from k3lite.viz.compare import pair_colors
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import COUNTERFACTUAL_PATTERN, bytes_log_axis, fit_titles

CONTEXT = 131_072  # tokens of context the cache bars assume (anatomy's default, the home ledger's 128K)
WIRE = "between GPUs: dispatch + combine"
# stage of the forward pass: (anatomy parts, byte kinds), in the order a token meets them
STAGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "embedding and LM head": (("embedding", "lm_head"), ("weights",)),
    "attention weights": (("attention_kda", "attention_mla"), ("weights",)),
    "attention cache and state": (("attention_kda", "attention_mla"), ("cache",)),
    "depth mix (AttnRes)": (("attn_res",), ("weights", "attnres")),
    "router": (("router",), ("weights",)),
    "latent down/up projections": (("latent_proj",), ("weights",)),
    "routed experts": (("routed_experts",), ("weights",)),
    "shared experts and dense FFN": (("shared_experts", "dense_ffn"), ("weights",)),
    WIRE: (("routed_experts",), ("wire",)),
}


def _anatomy(cfg: K3Config, context: int) -> Anatomy:
    return anatomy(cfg, context, WEIGHT_PRECISION)


def _residual_reads(cfg: K3Config) -> float:
    """What the depth mix reads for one token: AttnRes's sources, or a standard residual's one running sum per
    sublayer (the ledger's and the Attention Residuals page's count, k3lite.model.attnres.attnres_cost)."""
    return float(attnres_cost(cfg.n_layers, cfg.d_model, cfg.attn_res, cfg.attn_res_block_size).read_bytes)


def stage_bytes(cfg: K3Config, context: int = CONTEXT) -> dict[str, float]:
    """Bytes one decoded token reads (or, for WIRE, sends) in each stage of `cfg`'s forward pass; the depth mix with
    a standard residual's reads too (anatomy draws no part for a model without AttnRes)."""
    tot = _anatomy(cfg, context).totals()
    out = {stage: float(sum(tot[p].bytes.get(k, 0.0) for p in parts for k in kinds if k != "attnres"))
           for stage, (parts, kinds) in STAGES.items()}
    out["depth mix (AttnRes)"] += _residual_reads(cfg)
    return out


def _layers(cfg: K3Config, parts: tuple[str, ...]) -> str:
    """Which layers hold these parts: '69 KDA + 24 MLA layers', '58 MoE layers'."""
    types, ffn = cfg.layer_types(), cfg.ffn_types()
    if parts[0].startswith("attention"):
        return " + ".join(f"{types.count(k)} {k.upper()}" for k in ("kda", "mla") if types.count(k)) + " layers"
    if parts[0] in ("routed_experts", "router", "latent_proj"):
        return f"{ffn.count('moe')} MoE layers"
    if parts[0] == "shared_experts":
        return f"{ffn.count('moe')} MoE + {ffn.count('dense')} dense layers"
    return f"{cfg.n_layers} layers"


def _driver(stage: str, cfg: K3Config, context: int) -> str:
    """What sets one model's bytes in a stage, from its config and anatomy."""
    parts, kinds = STAGES[stage]
    a = _anatomy(cfg, context)
    if not stage_bytes(cfg, context)[stage]:
        return f"no {stage}"
    if "attnres" in kinds:
        if cfg.attn_res == "standard":
            return f"a standard residual, reading one running sum per sublayer: {fmt_bytes(_residual_reads(cfg))} a token"
        weights = stage_bytes(cfg, context)[stage] - _residual_reads(cfg)
        return (f"{cfg.attn_res} Attention Residuals, reading {fmt_bytes(_residual_reads(cfg))} of earlier layers' "
                f"outputs a token" + (f" and {fmt_bytes(weights)} of its own weights" if weights > 0 else ""))
    if stage == WIRE:
        return f"{cfg.moe.top_k} routed copies per token in each of {_layers(cfg, parts)}"
    if "cache" in kinds:
        mla, kda = cfg.layer_types().count("mla"), cfg.layer_types().count("kda")
        return f"{mla} MLA caches of {context:,} tokens" + (f" and {kda} fixed KDA states" if kda else ", no KDA state")
    if parts == ("routed_experts",):
        return (f"top-{cfg.moe.top_k} of {cfg.moe.n_routed_experts} experts in {_layers(cfg, parts)}, "
                f"{a.part('routed_experts').active / 1e9:.1f}B parameters a token multiplies with")
    active = sum(a.part(p).active for p in parts)
    return f"{active / 1e9:.2f}B active parameters in {_layers(cfg, parts)}"


def stage_bars(stages: list[str], first: list[float], second: list[float], names: tuple[str, str], ablation: bool,
               title: str) -> go.Figure:
    """Horizontal paired bars on one log axis (long stage names stay readable on a phone): K3 solid, the compared
    model in its colour, hatched when it is K3 without one idea. A zero (the stage is absent) draws no bar."""
    c1, c2 = pair_colors(names[1], ablation)
    fig = go.Figure()
    for name, xs, marker in ((names[0], first, dict(color=c1)),
                             (names[1], second, dict(color=c2, pattern=COUNTERFACTUAL_PATTERN) if ablation
                              else dict(color=c2))):
        fig.add_bar(y=stages, x=[v if v > 0 else None for v in xs], name=name, orientation="h", marker=marker,
                    hovertemplate="%{y}: %{x:,.4s}B<extra>" + name + "</extra>")
    fig.update_layout(barmode="group", xaxis={**bytes_log_axis("per token"), "title": "bytes per decoded token, log"}, height=480,
                      yaxis=dict(autorange="reversed", automargin=True), margin=dict(l=10, r=10, t=50, b=10))
    return fit_titles(fig, title)


def bytes_by_part_panel(pair: Pair, context: int = CONTEXT) -> Panel:
    """K3 and the compared model at full scale: bytes per decoded token in each stage, and the sentences naming the
    biggest difference (what drives it) and the totals."""
    k, o = stage_bytes(pair.k3, context), stage_bytes(pair.other, context)
    shown = [s for s in STAGES if k[s] or o[s]]
    K3, other = pair.k3_label, pair.label
    title = (f"At full scale, one decoded token: {K3} and {other} ({WEIGHT_PRECISION} weights, batch 1, "
             f"{context:,}-token context)")
    ev = derived(anatomy)
    fig = shared_figure(stage_bars, shown, [k[s] for s in shown], [o[s] for s in shown], (K3, other), pair.ablation,
                        title, evidence=ev)
    hbm_k, hbm_o = (sum(v for s, v in d.items() if s != WIRE) for d in (k, o))
    values = {**{f"k3|{s}": k[s] for s in shown}, **{f"other|{s}": o[s] for s in shown},
              "k3_hbm": hbm_k, "other_hbm": hbm_o, "k3_wire": k[WIRE], "other_wire": o[WIRE]}
    if all(k[s] == o[s] for s in STAGES):
        said = Said(f"{other} reads exactly what {K3} reads in every stage ({fmt_bytes(hbm_k)} of HBM and "
                    f"{fmt_bytes(k[WIRE])} between GPUs per decoded token): {pair.comparison.idea or 'what differs'} "
                    f"changes no bytes here; {where_else(pair, 'forward_pass') or 'its difference shows on the other pages'}.",
                    (ev,))
        return Panel(fig, (said,), ev, title="", values=values)
    big = max(shown, key=lambda s: abs(k[s] - o[s]))
    word = times(k[big], o[big], "more than", "less than", "the same as")
    first = Said(f"The biggest difference is {big}: {K3} {'sends' if big == WIRE else 'reads'} {fmt_bytes(k[big])} "
                 f"per decoded token, {word} {other}'s {fmt_bytes(o[big])}. What drives it: {K3} has "
                 f"{_driver(big, pair.k3, context)}; {other} has {_driver(big, pair.other, context)}.", (ev,))
    second = Said(f"In all, {K3} reads {fmt_bytes(hbm_k)} of HBM per decoded token, "
                  f"{times(hbm_k, hbm_o, 'more than', 'less than', 'the same as')} {other}'s {fmt_bytes(hbm_o)}, and "
                  f"sends {fmt_bytes(k[WIRE])} between GPUs ({', '.join(REFERENCE.describe().split(', ')[:2])}; "
                  f"{routing_clause([(K3, pair.k3.moe), (other, pair.other.moe)], REFERENCE)}), "
                  f"{times(k[WIRE], o[WIRE], 'more than', 'less than', 'the same as')} {other}'s "
                  f"{fmt_bytes(o[WIRE])}.", (ev,))
    values["biggest"] = abs(k[big] - o[big])
    return Panel(fig, (first, second), ev, title="", values=values)
