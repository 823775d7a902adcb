"""Figures for MoE routing (no Streamlit): plain functions that take routing data and return plotly figures."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from k3lite.config import get_preset
from k3lite.moe import LatentCost
from k3lite.params import routed_fraction
from k3lite.viz.style import BALANCING, log_axis

METHOD_LABELS = {"none": "none (raw top-k)", "aux_loss": "aux loss (Switch)", "bias": "bias (DeepSeek-V3)",
                 "quantile": "quantile (QB)"}
METHOD_COLORS = {"none": "#7f7f7f", "aux_loss": "#1f77b4", "bias": "#ff7f0e", "quantile": "#2ca02c"}

# Activation ratios (top-k / routed experts) for the routing page's table. Where the expert counts are known the
# ratio is computed from them (presets: k3lite/config.py); otherwise the seed article's rounded figure is quoted.
ACTIVATION_COUNTS = (  # (model, top-k, routed experts, where the counts come from)
    ("Nemotron 3 Ultra", 22, 512, "NVIDIA LatentMoE, arXiv 2601.18089"),
)
ACTIVATION_PRESETS = (  # (model, preset in k3lite/config.py, where its counts come from)
    ("Kimi K2", "kimi-k2", "its config.json"),
    ("Kimi K3", "k3-estimated", "counts as stated in the K3 announcement"),
)
ACTIVATION_QUOTED = (  # (model, ratio as quoted, note): counts not checked against a primary source
    ("MiniMax M3", 0.031, "as quoted in the seed article (K3 announcement)"),
    ("Inkling", 0.031, "as quoted in the seed article (K3 announcement)"),
)


def routing_heatmap(labels: Sequence[str], topk_idx: np.ndarray, topk_weight: np.ndarray, n_experts: int,
                    title: str = "") -> go.Figure:
    """Tokens (rows) x experts (columns); colour = gate weight of a chosen expert, blank = not chosen."""
    topk_idx, topk_weight = np.asarray(topk_idx), np.asarray(topk_weight, dtype=float)
    t = topk_idx.shape[0]
    z = np.full((t, n_experts), np.nan)
    np.put_along_axis(z, topk_idx, topk_weight, axis=1)
    fig = go.Figure(go.Heatmap(z=z, x=np.arange(n_experts), y=np.arange(t), colorscale="Viridis",
                               colorbar=dict(title="gate weight"), hoverongaps=False,
                               hovertemplate="token %{y}<br>expert %{x}<br>weight %{z:.3f}<extra></extra>"))
    fig.update_layout(title=title, height=min(900, 140 + 16 * t), margin=dict(l=10, r=10, t=40, b=10),
                      xaxis=dict(title="routed expert (index)"),
                      yaxis=dict(title="token (byte)", tickmode="array", tickvals=list(range(t)),
                                 ticktext=[f"{i}:{s}" for i, s in enumerate(labels)], autorange="reversed"))
    return fig


def load_bars(loads: dict[str, Sequence[int]], violations: dict[str, float] | None = None,
              flips: dict[str, float] | None = None) -> go.Figure:
    """One panel per balancing method: assignments per expert, dashed line at the ideal (mean) load.
    Panel titles: max-violation, and (if given) the fraction of top-k choices flipped by score noise."""
    methods = list(loads)
    if violations is None:
        violations = {m: float(np.max(loads[m]) / np.mean(loads[m]) - 1) for m in methods}
    titles = [f"{METHOD_LABELS.get(m, m)}<br>max-violation {violations[m]:.2f}"
              + (f" · flips {100 * flips[m]:.0f}%" if flips else "") for m in methods]
    fig = make_subplots(rows=1, cols=len(methods), shared_yaxes=True, horizontal_spacing=0.03,
                        subplot_titles=titles)
    for c, m in enumerate(methods, start=1):
        load = np.asarray(loads[m])
        fig.add_bar(x=np.arange(len(load)), y=load, marker_color=METHOD_COLORS.get(m), name=m, showlegend=False,
                    row=1, col=c, hovertemplate="expert %{x}: %{y} tokens<extra></extra>")
        fig.add_hline(y=float(load.mean()), line_dash="dash", line_color="black", row=1, col=c)
        fig.update_xaxes(title_text="expert", row=1, col=c)
    fig.update_yaxes(title_text="tokens routed (count)", row=1, col=1)
    fig.update_layout(height=330, margin=dict(l=10, r=10, t=60, b=10))
    return fig


def violation_curves(curves: dict[str, Sequence[float]], smooth: int = 10) -> go.Figure:
    """Max-violation per training step for each method (thin: raw; thick: moving average of `smooth`)."""
    fig = go.Figure()
    for m, v in curves.items():
        v = np.asarray(v, dtype=float)
        steps = np.arange(1, len(v) + 1)
        fig.add_scatter(x=steps, y=v, mode="lines", line=dict(width=1, color=METHOD_COLORS.get(m)), opacity=0.3,
                        showlegend=False, hoverinfo="skip")
        w = max(1, min(smooth, len(v)))
        avg = np.convolve(v, np.ones(w) / w, mode="valid")
        fig.add_scatter(x=steps[w - 1:], y=avg, mode="lines", name=METHOD_LABELS.get(m, m),
                        line=dict(width=3, color=METHOD_COLORS.get(m)))
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=1.12),
                      xaxis=dict(title="training step"),
                      yaxis=dict(title="max-violation  max(load)/mean(load) − 1", rangemode="tozero"))
    return fig


def latent_tradeoff(costs: Sequence[LatentCost], current_ratio: float | None = None) -> go.Figure:
    """Left: wire bytes per token vs latent ratio. Right: FLOPs per token (routed / projections / shared)."""
    names = [("1" if c.ratio == 1 else f"1/{round(1 / c.ratio)}") + f" (l={c.latent_dim})" for c in costs]
    colors = ["#d62728" if current_ratio is not None and abs(c.ratio - current_ratio) < 1e-9 else "#9fb7d9"
              for c in costs]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("bytes on the wire per token (dispatch + combine)",
                                                        "FLOPs per token in the MoE layer"))
    fig.add_bar(x=names, y=[c.wire_bytes / 1024 for c in costs], marker_color=colors, showlegend=False,
                row=1, col=1, hovertemplate="%{x}: %{y:.1f} KiB<extra></extra>")
    for field, label, color in (("routed_flops", "routed experts", "#2ca02c"),
                                ("proj_flops", "latent down/up projections", "#ff7f0e"),
                                ("shared_flops", "shared experts", "#7f7f7f")):
        fig.add_bar(x=names, y=[getattr(c, field) / 1e9 for c in costs], name=label, marker_color=color,
                    row=1, col=2, hovertemplate="%{x}: %{y:.3f} GFLOP<extra>" + label + "</extra>")
    fig.update_layout(barmode="stack", height=360, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(title_text="latent ratio l / d", row=1, col=1)
    fig.update_xaxes(title_text="latent ratio l / d", row=1, col=2)
    fig.update_yaxes(title_text="KiB per token (bf16)", row=1, col=1)
    fig.update_yaxes(title_text="GFLOP per token", row=1, col=2)
    return fig


def activation_rows(top_k: int, n_experts: int) -> list[dict]:
    """This page's activation ratio next to published models': computed from expert counts where they are
    known (`routed_fraction`, the function the home page uses), quoted from the seed article otherwise."""
    rows = [dict(model="this page's layer", activation=f"{100 * routed_fraction(top_k, n_experts):.2f}%",
                 how=f"computed: {top_k} of {n_experts} routed experts")]
    counted = [*ACTIVATION_COUNTS, *((name, get_preset(preset).moe.top_k, get_preset(preset).moe.n_routed_experts,
                                      f"preset {preset} ({source})") for name, preset, source in ACTIVATION_PRESETS)]
    rows += [dict(model=name, activation=f"{100 * routed_fraction(k, e):.2f}%",
                  how=f"computed: {k} of {e} routed experts; {source}") for name, k, e, source in counted]
    rows += [dict(model=name, activation=f"~{100 * ratio:.1f}%", how=note) for name, ratio, note in ACTIVATION_QUOTED]
    return rows


def violation_vs_updates(curves: dict[str, Sequence[float]], counts: Sequence[int], budget: int | None = None,
                         labels: dict[str, str] | None = None) -> go.Figure:
    """Held-out max-violation after n balancing updates, one line per method (log x: 1, 2, 4, ...).

    `budget`: the update count the other panels use, marked with a vertical line.
    """
    labels = labels or METHOD_LABELS
    fig = go.Figure()
    for m, v in curves.items():
        fig.add_scatter(x=list(counts), y=list(v), mode="lines+markers", name=labels.get(m, m),
                        line=dict(width=3, color=BALANCING.get(m), dash="dot" if m == "none" else "solid"),
                        hovertemplate="%{x} updates: max-violation %{y:.2f}<extra>" + labels.get(m, m) + "</extra>")
    if budget is not None:
        fig.add_vline(x=budget, line_dash="dash", line_color="black",
                      annotation_text=f"{budget} updates: bars above", annotation_position="top")
    axis = log_axis("balancing updates (batches seen)")
    axis.update(tickvals=list(counts), ticktext=[str(n) for n in counts])
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=1.15),
                      xaxis=axis, yaxis=dict(title="held-out max-violation  max(load)/mean(load) − 1",
                                             rangemode="tozero"))
    return fig
