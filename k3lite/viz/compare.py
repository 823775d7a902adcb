"""Two models on shared axes: the figures the comparison panels (k3lite.panels) build from.

One look everywhere: K3 (or the page's config) in K3's colour, solid; the compared model in its own colour when it
is another released model (DeepSeek-V3, Kimi K2: k3lite.viz.style.MODEL), or in K3's colour hatched (bars) or
dashed (lines) when it is K3 without one idea, so "the same model, one idea swapped" reads as such.
    paired_bars(categories, first, second, names, ablation, axis)   grouped bars, one axis for both
    paired_lines(x, first, second, names, ablation, x_axis, y_axis)  two curves over one x
"""
from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from k3lite.viz.style import COUNTERFACTUAL_PATTERN, MODEL, fit_titles, model_color, series_color


def pair_colors(second_name: str, ablation: bool) -> tuple[str, str]:
    """(K3's colour, the compared model's): a K3 variant keeps K3's; another model its MODEL colour, else the
    palette's green."""
    k3 = MODEL["k3"]
    if ablation:
        return k3, k3
    other = model_color(second_name, fallback=2)
    return k3, (series_color(2) if other == k3 else other)


def paired_bars(categories: Sequence[str], first: Sequence[float], second: Sequence[float] | None,
                names: tuple[str, str], ablation: bool, axis: dict, *, title: str = "",
                text: tuple[Sequence[str], Sequence[str]] | None = None, hover: str = "%{y:,.4g}") -> go.Figure:
    """Grouped bars: `first` (K3) and `second` (the compared model, or None for K3 alone) per category, on one
    y axis (`axis`: plotly yaxis settings, e.g. style.bytes_log_axis). `text`: bar labels for each."""
    c1, c2 = pair_colors(names[1], ablation)
    fig = go.Figure()
    fig.add_bar(x=list(categories), y=list(first), name=names[0], marker_color=c1,
                text=None if text is None else list(text[0]), textposition="outside",
                hovertemplate=f"{hover}<extra>{names[0]}</extra>")
    if second is not None:
        marker = dict(color=c2, pattern=COUNTERFACTUAL_PATTERN) if ablation else dict(color=c2)
        fig.add_bar(x=list(categories), y=list(second), name=names[1], marker=marker,
                    text=None if text is None else list(text[1]), textposition="outside",
                    hovertemplate=f"{hover}<extra>{names[1]}</extra>")
    fig.update_layout(barmode="group", yaxis=axis, height=360, margin=dict(l=10, r=10, t=40, b=10),
                      uniformtext=dict(mode="hide", minsize=9))
    return fit_titles(fig, title)


def paired_lines(x: Sequence[float], first: Sequence[float], second: Sequence[float] | None,
                 names: tuple[str, str], ablation: bool, x_axis: dict, y_axis: dict, *, title: str = "",
                 hover: str = "%{x:,.4g}: %{y:,.4g}") -> go.Figure:
    """Two curves over the same x (K3 solid; the compared model dashed when it is a K3 variant), one y axis."""
    c1, c2 = pair_colors(names[1], ablation)
    fig = go.Figure()
    fig.add_scatter(x=list(x), y=list(first), name=names[0], mode="lines+markers", line=dict(color=c1, width=3),
                    hovertemplate=f"{hover}<extra>{names[0]}</extra>")
    if second is not None:
        fig.add_scatter(x=list(x), y=list(second), name=names[1], mode="lines+markers",
                        line=dict(color=c2, width=3, dash="dash" if ablation else "solid"),
                        hovertemplate=f"{hover}<extra>{names[1]}</extra>")
    fig.update_layout(xaxis=x_axis, yaxis=y_axis, height=360, margin=dict(l=10, r=10, t=40, b=10))
    return fit_titles(fig, title)
