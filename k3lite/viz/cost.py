"""Figures for cost per task (no Streamlit): take k3lite.analytic.cost results, return plotly figures."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from k3lite.analytic.cost import CostBreakdown, CostSamples
from k3lite.viz.style import (CONCEPT, COST, HIGHLIGHT_MARKER, NEUTRAL, SERIES, log_axis, log_vline, model_color,
                              series_color)


def cost_bars_figure(rows: list[CostBreakdown]) -> go.Figure:
    """$ per completed task, stacked: uncached input, cached input, output."""
    names = [r.name for r in rows]
    fig = go.Figure()
    for field, label, colour in (("input_cost", "input (cache miss)", COST["input"]),
                                 ("cached_input_cost", "input (cache hit)", COST["cached_input"]),
                                 ("output_cost", "output", COST["output"])):
        fig.add_bar(x=names, y=[getattr(r, field) for r in rows], name=label, marker_color=colour,
                    hovertemplate=f"{label}: $%{{y:.4f}}<extra></extra>")
    fig.add_scatter(x=names, y=[r.per_completed_task for r in rows], mode="text", showlegend=False,
                    text=[f"${r.per_completed_task:.3f}" for r in rows], textposition="top center")
    top = max((r.per_completed_task for r in rows), default=1)
    fig.update_layout(barmode="stack", height=360, margin=dict(l=10, r=10, t=30, b=10),
                      yaxis=dict(title="$ per completed task", range=[0, top * 1.2]),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def distribution_figure(samples: list[CostSamples]) -> go.Figure:
    """Histogram of $ spent per task (Monte-Carlo), log-spaced bins; dashed line = $ per completed task."""
    fig = go.Figure()
    costs = np.concatenate([s.cost[s.cost > 0] for s in samples]) if samples else np.array([1.0])
    lo, hi = np.log10(costs.min()), np.log10(costs.max()) + 1e-9
    edges = np.logspace(lo, hi, 60)
    colours = [model_color(s.name, fallback=i) for i, s in enumerate(samples)]
    if len(set(colours)) < len(colours):  # two strategies of one model ("K3 alone", "K3 plans"): both were K3's hue
        colours = [series_color(i) for i in range(len(samples))]
    for s, c in zip(samples, colours):
        counts, _ = np.histogram(s.cost, bins=edges)
        fig.add_scatter(x=np.sqrt(edges[:-1] * edges[1:]), y=counts / len(s.cost), mode="lines", line_shape="hvh",
                        name=s.name, line=dict(color=c), fill="tozeroy", opacity=0.6)
        log_vline(fig, s.per_completed_task, line=dict(color=c, dash="dash"))
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=30, b=10), xaxis=log_axis("$ per task (log)"),
                      yaxis_title="fraction of tasks", legend=dict(orientation="h", y=-0.2))
    return fig


def savings_figure(worker_success: np.ndarray, factor: np.ndarray, current: tuple[float, float] | None = None,
                   band: tuple[float, float] = (9.0, 10.0)) -> go.Figure:
    """Savings factor of the planner/worker split vs the big model alone, as the worker's success varies."""
    fig = go.Figure()
    fig.add_hrect(y0=band[0], y1=band[1], fillcolor=CONCEPT["published"], opacity=0.12, line_width=0,
                  annotation_text=f"~{band[0]:g}-{band[1]:g}x (seed article, directional)", annotation_position="top left")
    fig.add_hline(y=1, line=dict(color=NEUTRAL, dash="dot"))
    fig.add_scatter(x=worker_success * 100, y=factor, mode="lines", name="split savings", line=dict(color=SERIES[0]))
    if current is not None:
        fig.add_scatter(x=[current[0] * 100], y=[current[1]], mode="markers+text", text=[f"{current[1]:.1f}x"],
                        textposition="top center", marker=HIGHLIGHT_MARKER, name="your settings")
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=30, b=10), xaxis_title="worker success per attempt (%)",
                      yaxis_title="times cheaper per completed task", showlegend=False)
    return fig
