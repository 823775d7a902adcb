"""Figures for the KDA:MLA hybrid page (no Streamlit): take k3lite.analytic.hybrid results, return plotly figures."""
from __future__ import annotations

import plotly.graph_objects as go

from k3lite.viz.style import CONCEPT, NEUTRAL, bytes_log_axis, log_axis, series_color

KDA_COLOR, MLA_COLOR = CONCEPT["kda"], CONCEPT["mla"]


def layer_pattern_figure(layer_types: list[str], title: str = "") -> go.Figure:
    """One coloured cell per layer: KDA (linear, fixed-size state) or MLA (global, growing cache).

    The kinds are named in the legend and the axis labels only the MLA layers: "KDA"/"MLA" written inside 27
    cells and a tick per layer were shrunk to unreadable and overprinted at 390 px."""
    fig = go.Figure()
    for kind, colour, name in (("kda", KDA_COLOR, "KDA (fixed-size state)"), ("mla", MLA_COLOR, "MLA (global)")):
        xs = [i for i, t in enumerate(layer_types) if t == kind]
        fig.add_bar(x=xs, y=[1] * len(xs), marker_color=colour, name=name,
                    hovertemplate=f"layer %{{x}}: {kind.upper()}<extra></extra>")
    mla = [i for i, t in enumerate(layer_types) if t == "mla"]
    fig.update_layout(height=170, margin=dict(l=10, r=10, t=45, b=30), title=title, showlegend=True,
                      yaxis=dict(visible=False), bargap=0.08,
                      xaxis=dict(title="layer (MLA layers numbered)", tickmode="array", tickvals=mla,
                                 range=[-0.5, len(layer_types) - 0.5]))
    return fig


def pattern_color(name: str, i: int = 0) -> str:
    """A series named for its KDA:MLA pattern: all-MLA in the MLA colour, the hybrid in the hybrid colour."""
    if "all MLA" in name or name.startswith("0:1"):
        return MLA_COLOR
    return CONCEPT["hybrid"] if i <= 1 else series_color(i)


def cache_vs_context_figure(contexts: list[int], series: dict[str, list[float]]) -> go.Figure:
    """KV-cache bytes per sequence vs context, one line per pattern (log-log)."""
    fig = go.Figure()
    for i, (name, ys) in enumerate(series.items()):
        fig.add_scatter(x=contexts, y=list(ys), mode="lines+markers", name=name,
                        line=dict(color=pattern_color(name, i)))
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=60, b=10), title="Decode cache per sequence<br>(bf16 latents, fp32 KDA state)",
                      xaxis=log_axis("context (tokens, log)"),
                      yaxis=bytes_log_axis("cache per sequence"),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def tpot_vs_context_figure(contexts: list[int], series: dict[str, list[float]]) -> go.Figure:
    """Modelled time per output token (ms) vs context, one line per pattern."""
    fig = go.Figure()
    for i, (name, ys) in enumerate(series.items()):
        fig.add_scatter(x=contexts, y=[y * 1e3 for y in ys], mode="lines+markers", name=name,
                        line=dict(color=pattern_color(name, i)))
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=40, b=10), title="Time per output token (roofline model)",
                      xaxis=log_axis("context (tokens, log)"), yaxis=dict(title="TPOT (ms)"),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def speedup_by_ratio_figure(ratios: list[int], ours: dict[str, list[float]], ceiling: list[float],
                            reported: dict[str, float]) -> go.Figure:
    """Our modelled speedups vs all-MLA at 1M (one bar series per way of counting: batch 1, the batch HBM allows),
    the bandwidth ceiling, and the reported figure for each way, marked at 3:1 (the report's pattern)."""
    labels = [f"{r}:1" for r in ratios]
    fig = go.Figure()
    # values inside the bars: above them they sat on the ceiling's markers
    for i, (name, ys) in enumerate(ours.items()):
        fig.add_bar(x=labels, y=ys, name=f"ours, {name}", marker_color=CONCEPT["hybrid"] if i == 0 else series_color(i + 1),
                    text=[f"{v:.2f}x" for v in ys], textposition="inside", insidetextanchor="end", textangle=0)
    fig.add_scatter(x=labels, y=ceiling, mode="lines+markers", name="bytes-only ceiling at batch 1 (layers / MLA layers)",
                    line=dict(dash="dot", color=NEUTRAL))
    for i, (name, value) in enumerate(reported.items()):
        fig.add_scatter(x=["3:1"], y=[value], mode="markers+text", name=f"reported, {name}", text=[f"{value}x"],
                        textposition="middle right", marker=dict(symbol="star", size=14, color=CONCEPT["published"],
                                                                 line=dict(width=1, color=series_color(i + 1))))
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10), title="Decode speedup vs all-MLA at 1M context",
                      xaxis=dict(title="KDA : MLA"), yaxis=dict(title="speedup (x)"), legend=dict(orientation="h", y=-0.2),
                      barmode="group")
    return fig
