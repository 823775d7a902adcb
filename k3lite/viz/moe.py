"""Figures for MoE routing (no Streamlit): plain functions that take routing data and return plotly figures."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from k3lite.moe import LatentCost

METHOD_LABELS = {"none": "none (raw top-k)", "aux_loss": "aux loss (Switch)", "bias": "bias (DeepSeek-V3)",
                 "quantile": "quantile (QB)"}
METHOD_COLORS = {"none": "#7f7f7f", "aux_loss": "#1f77b4", "bias": "#ff7f0e", "quantile": "#2ca02c"}

# Published activation ratios (top-k / routed experts) quoted in the seed article (K3 announcement).
PUBLISHED_ACTIVATION = (
    ("Nemotron 3 Ultra", 0.043, "22 of 512 routed experts"),
    ("MiniMax M3", 0.031, "as quoted"),
    ("Kimi K2", 0.02, "8 of 384 routed experts"),
    ("Kimi K3", 0.018, "16 of 896 routed experts"),
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
    """This page's activation ratio next to the published ones (seed article)."""
    rows = [dict(model="this page's layer", activation=f"{100 * top_k / n_experts:.1f}%",
                 how=f"computed: {top_k} of {n_experts} routed experts")]
    rows += [dict(model=name, activation=f"~{100 * ratio:.1f}%", how=f"seed article (K3 announcement); {note}")
             for name, ratio, note in PUBLISHED_ACTIVATION]
    return rows
