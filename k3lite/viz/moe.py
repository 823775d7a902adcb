"""Figures for MoE routing (no Streamlit): plain functions that take routing data and return plotly figures."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from k3lite.model.config import routed_fraction
from k3lite.model.cards import display_name
from k3lite.model.presets import get_preset
from k3lite.analytic.latent import LatentCost
from k3lite.viz.style import (BALANCING, CONCEPT, HIGHLIGHT_LINE, HIGHLIGHT_MARKER, LINK, NEUTRAL, SEQUENTIAL_SCALE,
                              byte_unit, fit_titles, log_axis, log_vline, wrap)

METHOD_LABELS = {"none": "none (raw top-k)", "aux_loss": "aux loss (Switch)", "bias": "bias (DeepSeek-V3)",
                 "quantile": "quantile (QB)"}
METHOD_COLORS = BALANCING  # one colour per balancing method, the same on every page

# Activation ratios (top-k / routed experts) for the routing page's table. Where the expert counts are known the
# ratio is computed from them (presets: k3lite/model/presets.py); otherwise the seed article's rounded figure is quoted.
ACTIVATION_COUNTS = (  # (model, top-k, routed experts, where the counts come from)
    ("Nemotron 3 Ultra", 22, 512, "NVIDIA LatentMoE, arXiv 2601.18089"),
)
ACTIVATION_PRESETS = (  # (preset in k3lite/model/presets.py, named by its card; where its counts come from)
    ("kimi-k2", "its config.json"),
    ("kimi-k3", "its config.json"),
)
ACTIVATION_QUOTED = (  # (model, ratio as quoted, note): counts not checked against a primary source
    ("MiniMax M3", 0.031, "as quoted in the seed article (a third-party blog post)"),
    ("Inkling", 0.031, "as quoted in the seed article (a third-party blog post)"),
)


def routing_heatmap(labels: Sequence[str], topk_idx: np.ndarray, topk_weight: np.ndarray, n_experts: int,
                    title: str = "") -> go.Figure:
    """Tokens (rows) x experts (columns); colour = gate weight of a chosen expert, blank = not chosen."""
    topk_idx, topk_weight = np.asarray(topk_idx), np.asarray(topk_weight, dtype=float)
    t = topk_idx.shape[0]
    z = np.full((t, n_experts), np.nan)
    np.put_along_axis(z, topk_idx, topk_weight, axis=1)
    fig = go.Figure(go.Heatmap(z=z, x=np.arange(n_experts), y=np.arange(t), colorscale=SEQUENTIAL_SCALE,
                               colorbar=dict(title="gate weight"), hoverongaps=False,
                               hovertemplate="token %{y}<br>expert %{x}<br>weight %{z:.3f}<extra></extra>"))
    fig.update_layout(height=min(900, 140 + 16 * t), margin=dict(l=10, r=10, t=40, b=10),
                      xaxis=dict(title="routed expert (index)"),
                      yaxis=dict(title="token (byte)", tickmode="array", tickvals=list(range(t)),
                                 ticktext=[f"{i}:{s}" for i, s in enumerate(labels)], autorange="reversed"))
    return fit_titles(fig, title)


def load_bars(loads: dict[str, Sequence[int]], violations: dict[str, float] | None = None,
              flips: dict[str, float] | None = None) -> go.Figure:
    """One panel per balancing method: assignments per expert, dashed line at the ideal (mean) load.
    Panel titles: max-violation, and (if given) the fraction of top-k choices flipped by score noise."""
    methods = list(loads)
    if violations is None:
        violations = {m: float(np.max(loads[m]) / np.mean(loads[m]) - 1) for m in methods}
    # one short fact per title line, two panels per row: four panels side by side ran their titles into each
    # other at phone width ("max-violatima:2.55-flips")
    titles = [f"{METHOD_LABELS.get(m, m)}<br>max-violation {violations[m]:.2f}"
              + (f"<br>flips {100 * flips[m]:.0f}%" if flips else "") for m in methods]
    cols = min(2, len(methods))
    rows = -(-len(methods) // cols)
    fig = make_subplots(rows=rows, cols=cols, shared_yaxes=True, horizontal_spacing=0.06,
                        vertical_spacing=0.3 if rows > 1 else 0.0, subplot_titles=titles)
    for i, m in enumerate(methods):
        r, c = divmod(i, cols)
        load = np.asarray(loads[m])
        fig.add_bar(x=np.arange(len(load)), y=load, marker_color=METHOD_COLORS.get(m), name=m, showlegend=False,
                    row=r + 1, col=c + 1, hovertemplate="expert %{x}: %{y} tokens<extra></extra>")
        fig.add_hline(y=float(load.mean()), line_dash="dash", line_color=NEUTRAL, row=r + 1, col=c + 1)
        fig.update_xaxes(title_text="expert", row=r + 1, col=c + 1)
        if c == 0:
            fig.update_yaxes(title_text="tokens (count)", row=r + 1, col=1)
    fig.update_annotations(font_size=12)
    fig.update_layout(height=220 + 240 * rows, margin=dict(l=10, r=10, t=80, b=10))
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
    mine = [current_ratio is not None and abs(c.ratio - current_ratio) < 1e-9 for c in costs]
    unit, div = byte_unit(max((c.wire_bytes for c in costs), default=1))
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                        subplot_titles=(wrap("bytes on the wire per token (dispatch + combine)", 18),
                                        wrap("FLOPs per token in the MoE layer", 14)))
    # your ratio: outlined (HIGHLIGHT_LINE), not another hue
    fig.add_bar(x=names, y=[c.wire_bytes / div for c in costs], marker_color=CONCEPT["latent"], showlegend=False,
                marker_line=dict(color=HIGHLIGHT_LINE["color"], width=[HIGHLIGHT_LINE["width"] if m else 0 for m in mine]),
                row=1, col=1, hovertemplate="%{x}: %{y:.1f} " + unit + "<extra></extra>")
    for field, label, color in (("routed_flops", "routed experts", CONCEPT["routed"]),
                                ("proj_flops", "latent down/up projections", CONCEPT["latent"]),
                                ("shared_flops", "shared experts", CONCEPT["shared"])):
        fig.add_bar(x=names, y=[getattr(c, field) / 1e9 for c in costs], name=label, marker_color=color,
                    row=1, col=2, hovertemplate="%{x}: %{y:.3f} GFLOP<extra>" + label + "</extra>")
    fig.update_layout(barmode="stack", height=400, margin=dict(l=10, r=10, t=70, b=10),
                      legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(title_text="latent ratio l / d", row=1, col=1)
    fig.update_xaxes(title_text="latent ratio l / d", row=1, col=2)
    fig.update_yaxes(title_text=f"{unit} per token per MoE layer (FP8 out, BF16 back)", row=1, col=1)
    fig.update_yaxes(title_text="GFLOP per token", row=1, col=2)
    return fit_titles(fig)


def activation_rows(top_k: int, n_experts: int) -> list[dict]:
    """This page's activation ratio next to published models': computed from expert counts where they are
    known (`routed_fraction`, the function the home page uses), quoted from the seed article otherwise."""
    rows = [dict(model="this page's layer", activation=f"{100 * routed_fraction(top_k, n_experts):.2f}%",
                 how=f"computed: {top_k} of {n_experts} routed experts")]
    counted = [*ACTIVATION_COUNTS, *((display_name(preset), get_preset(preset).moe.top_k,
                                      get_preset(preset).moe.n_routed_experts, f"preset {preset} ({source})")
                                     for preset, source in ACTIVATION_PRESETS)]
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
        log_vline(fig, budget, line_dash="dash", line_color=HIGHLIGHT_LINE["color"],
                  annotation_text=f"{budget} updates: bars above")
    axis = log_axis("balancing updates (batches seen)")
    # decades only when the counts are dense (1, 2, 4, ..., 1024 would overprint at 390 px)
    ticks = list(counts) if len(counts) <= 8 else [n for n in counts if math.log10(n).is_integer()] or list(counts)
    axis.update(tickvals=ticks, ticktext=[str(n) for n in ticks],
                range=[math.log10(min(counts)) - 0.05, math.log10(max(counts)) + 0.05])
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=-0.3),
                      xaxis=axis, yaxis=dict(title=wrap("held-out max-violation max(load)/mean(load) − 1", 30),
                                             rangemode="tozero"))
    return fig


def gpu_heatmap(labels: Sequence[str], counts: np.ndarray, touched: np.ndarray, expected_touched: float,
                title: str = "") -> go.Figure:
    """K3-scale routing: tokens (rows) x GPUs (columns), cell = how many of the token's k experts live on that
    GPU (blank = none); right: GPUs each token touches, with the uniform-routing expectation dashed."""
    counts = np.asarray(counts, dtype=float)
    t, g = counts.shape
    z = np.where(counts > 0, counts, np.nan)
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=[0.78, 0.22], horizontal_spacing=0.03,
                        subplot_titles=("experts of the token<br>on each GPU", "GPUs<br>touched"))
    fig.add_trace(go.Heatmap(z=z, x=np.arange(g), y=np.arange(t), colorscale=SEQUENTIAL_SCALE, zmin=1,
                             zmax=max(2.0, float(np.nanmax(z)) if np.isfinite(z).any() else 2.0), hoverongaps=False,
                             colorbar=dict(title="experts", x=1.01, xanchor="left", thickness=10, len=0.9),
                             hovertemplate="token %{y}<br>GPU %{x}: %{z:.0f} of its experts<extra></extra>"), 1, 1)
    fig.add_trace(go.Bar(x=np.asarray(touched), y=np.arange(t), orientation="h", marker_color=LINK["nvlink"],
                         showlegend=False, hovertemplate="token %{y}: %{x} GPUs<extra></extra>"), 1, 2)
    fig.add_vline(x=expected_touched, line_dash="dash", line_color=NEUTRAL, row=1, col=2)
    fig.update_layout(height=min(900, 160 + 16 * t), margin=dict(l=10, r=10, t=70, b=10),
                      yaxis=dict(title="token (byte)", tickmode="array", tickvals=list(range(t)),
                                 ticktext=[f"{i}:{s}" for i, s in enumerate(labels)], autorange="reversed"))
    fig.update_xaxes(title_text=f"GPU (of {g})", row=1, col=1)
    fig.update_xaxes(title_text="GPUs", rangemode="tozero", row=1, col=2)
    return fit_titles(fig, title)


def experts_touched_figure(batches: Sequence[int], touched: Sequence[float], n_experts: int, top_k: int,
                           batch: int) -> go.Figure:
    """Distinct experts one decode step touches (and so reads from HBM) against the tokens in the step, log x: k at
    one token, rising to all E; the chosen batch marked."""
    fig = go.Figure(go.Scatter(x=list(batches), y=list(touched), mode="lines+markers", line_color=LINK["nvlink"],
                               name="experts touched", hovertemplate="B = %{x}: %{y:.1f} experts<extra></extra>"))
    at = dict(zip(batches, touched))[batch]
    fig.add_trace(go.Scatter(x=[batch], y=[at], mode="markers+text", marker=HIGHLIGHT_MARKER,
                             text=[f"B = {batch}: {at:.1f}"], textposition="bottom right", showlegend=False,
                             hoverinfo="skip"))
    fig.add_hline(y=n_experts, line_dash="dot", line_color=NEUTRAL, annotation_text=f"all {n_experts} experts",
                  annotation_position="top left")
    fig.update_layout(height=320, margin=dict(l=10, r=10, t=50, b=10), showlegend=False,
                      xaxis=dict(title="tokens in one decode step (batch B)", type="log", tickvals=list(batches)),
                      yaxis=dict(title="distinct experts touched", rangemode="tozero"))
    return fit_titles(fig, f"{n_experts} experts, top-{top_k}, routing uniform")


def load_histogram(loads: dict[str, Sequence[int]], ideal: float) -> go.Figure:
    """Expert-load histogram per balancing method (held-out tokens): how many experts got how many tokens.
    An even load is one tall bar at the ideal (dashed); a skewed one a long right tail of overloaded experts."""
    fig = go.Figure()
    top = max((max(v) for v in loads.values() if len(v)), default=1)
    size = max(1, int(np.ceil(top / 40)))
    for m, load in loads.items():
        fig.add_histogram(x=np.asarray(load), name=METHOD_LABELS.get(m, m), marker_color=BALANCING.get(m),
                          opacity=0.6, xbins=dict(start=-0.5, end=top + size, size=size),
                          hovertemplate="%{x} tokens: %{y} experts<extra>" + METHOD_LABELS.get(m, m) + "</extra>")
    fig.add_vline(x=ideal, line_dash="dash", line_color=NEUTRAL, annotation_text=f"even: {ideal:.1f}",
                  annotation_position="top right")
    fig.update_layout(barmode="overlay", height=340, margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.2),
                      xaxis=dict(title="tokens routed to an expert (held-out)"),
                      yaxis=dict(title="experts (count)"))
    return fig


def situ_vs_swiglu_figure(z: Sequence[float], swiglu: Sequence[float], situ: Sequence[float], bound: float) -> go.Figure:
    """(f) One hidden unit along gate = up = z: SwiGLU grows like z^2, SiTU-GLU saturates below b1 b2."""
    fig = go.Figure()
    fig.add_scatter(x=list(z), y=list(swiglu), name="SwiGLU: silu(z) · z", mode="lines",
                    line=dict(color=CONCEPT["baseline"]))
    fig.add_scatter(x=list(z), y=list(situ), name="SiTU-GLU (K3): b1 tanh(z/b1) σ(z) · b2 tanh(z/b2)", mode="lines",
                    line=dict(color=CONCEPT["routed"], width=3))
    for y in (bound, -bound):
        fig.add_hline(y=y, line_dash="dot", line_color=HIGHLIGHT_LINE["color"])
    fig.update_xaxes(title_text="pre-activation z (gate = up = z)")
    fig.update_yaxes(title_text="hidden unit", range=[-3 * bound, 3 * bound])
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=-0.25))
    return fig
