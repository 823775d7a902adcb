"""Figures for Kimi Delta Attention (no Streamlit): plain functions from arrays to plotly figures."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from k3lite.viz.style import (CONCEPT, DIVERGING_SCALE, HIGHLIGHT_LINE, SEQUENTIAL_SCALE, bytes_log_axis, log_axis,
                              fit_titles, series_color, wrap)

# the probe's mechanisms by display name -> the one colour of that mixer everywhere
MECH_COLORS = {"linear attention": CONCEPT["linear"], "DeltaNet": CONCEPT["deltanet"],
               "Gated DeltaNet": CONCEPT["gdn"], "KDA": CONCEPT["kda"]}


def memory_color(name: str, i: int = 0) -> str:
    """Colour of a memory_vs_context curve by what it counts: hybrid, KDA, MLA, MHA (full softmax attention)."""
    for word, concept in (("hybrid", "hybrid"), ("KDA", "kda"), ("MLA", "mla"), ("MHA", "attention")):
        if word in name:
            return CONCEPT[concept]
    return series_color(i)


def decay_heatmap(a: np.ndarray, labels: Sequence[str], head: int) -> go.Figure:
    """(a) Per-channel decay a_t = exp(g_t), time x channel, beside the one scalar GDN would use.

    a: (T, K) decays in (0, 1] of one head. The scalar column is the geometric mean over channels,
    exp(mean_k g_t): a Gated DeltaNet gate with the same total log-decay per step.
    """
    a = np.asarray(a, dtype=float)
    T, K = a.shape
    scalar = np.exp(np.log(np.clip(a, 1e-30, 1.0)).mean(axis=1, keepdims=True))  # (T, 1)
    rows = [f"{t}: {lab}" for t, lab in enumerate(labels)]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=[0.8, 0.2], horizontal_spacing=0.03,
                        subplot_titles=(wrap(f"KDA, head {head}: one decay per key channel", 20), "GDN:<br>scalar"))
    common = dict(zmin=0.0, zmax=1.0, colorscale=SEQUENTIAL_SCALE)
    fig.add_trace(go.Heatmap(z=a, x=list(range(K)), y=rows, colorbar=dict(title="a_t"), **common,
                             hovertemplate="token %{y}<br>channel %{x}<br>a = %{z:.3f}<extra></extra>"), 1, 1)
    fig.add_trace(go.Heatmap(z=scalar, x=["scalar"], y=rows, showscale=False, **common,
                             hovertemplate="token %{y}<br>a = %{z:.3f}<extra></extra>"), 1, 2)
    fig.update_yaxes(autorange="reversed", title_text="token (time ↓)", row=1, col=1)
    fig.update_xaxes(title_text="key channel k", row=1, col=1)
    fig.update_layout(height=max(340, min(920, 14 * T + 140)), margin=dict(l=10, r=10, t=70, b=10))
    return fit_titles(fig)


def state_figure(S: np.ndarray, correction: np.ndarray, v: np.ndarray, t: int, label: str) -> go.Figure:
    """(b) The state S_t (K x V) after step t, and the delta-rule correction v_t - S'^T k_t beside v_t."""
    S, correction, v = (np.asarray(x, dtype=float) for x in (S, correction, v))
    lim = float(np.abs(S).max()) or 1.0
    fig = make_subplots(rows=1, cols=2, column_widths=[0.52, 0.48], horizontal_spacing=0.15,
                        subplot_titles=(wrap(f"state S_t after token {t} ({label})", 20),
                                        wrap("what step t writes along k_t", 20)))
    # the colour scale at the right edge: in the gap between the panels it sat on the bars' axis at 390 px
    fig.add_trace(go.Heatmap(z=S, zmin=-lim, zmax=lim, colorscale=DIVERGING_SCALE,
                             colorbar=dict(title="S (left)", x=1.0, xanchor="left", thickness=10, len=0.9),
                             hovertemplate="key channel %{y}<br>value dim %{x}<br>S = %{z:.3f}<extra></extra>"), 1, 1)
    dims = list(range(len(v)))
    fig.add_trace(go.Bar(x=dims, y=v, name="v_t (the new value)", marker_color=CONCEPT["baseline"]), 1, 2)
    fig.add_trace(go.Bar(x=dims, y=correction, name="v_t − S'ᵀk_t (the correction)", marker_color=CONCEPT["correction"]), 1, 2)
    fig.update_yaxes(autorange="reversed", title_text="key channel", row=1, col=1)
    fig.update_xaxes(title_text="value dim", row=1, col=1)
    fig.update_xaxes(title_text="value dim", row=1, col=2)
    fig.update_layout(barmode="group", height=400, margin=dict(l=10, r=10, t=70, b=10),
                      legend=dict(orientation="h", y=-0.2))
    return fit_titles(fig)


def memory_figure(contexts: Sequence[int], curves: Mapping[str, Sequence[float]], title: str = "") -> go.Figure:
    """(c) Decode memory vs context length, log-log; one line per curve (bytes)."""
    fig = go.Figure()
    for i, (name, ys) in enumerate(curves.items()):
        dash = "solid" if name.startswith("whole") else "dot"
        fig.add_trace(go.Scatter(x=list(contexts), y=list(ys), name=name, mode="lines",
                                 line=dict(dash=dash, color=memory_color(name, i)),
                                 hovertemplate="%{x:,} tokens: %{y:,.0f} bytes<extra>" + name + "</extra>"))
    fig.update_xaxes(**log_axis("context length (tokens, log)"))
    fig.update_yaxes(**bytes_log_axis("decode memory"))  # formats are in the title: a long axis title hit it
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=50, b=10), legend=dict(font=dict(size=11)))
    return fit_titles(fig, title)


def state_norm_figure(norms: np.ndarray, t: int, head: int) -> go.Figure:
    """||S_t||_F over time for one head, with the scrubbed step marked."""
    norms = np.asarray(norms, dtype=float)
    fig = go.Figure(go.Scatter(y=norms, mode="lines+markers", marker=dict(size=4), name="‖S_t‖_F",
                               line=dict(color=CONCEPT["kda"])))
    fig.add_vline(x=t, line_dash="dash", line_color=HIGHLIGHT_LINE["color"])
    fig.update_xaxes(title_text="token t")
    fig.update_yaxes(title_text=f"‖S_t‖_F (head {head})", rangemode="tozero")
    fig.update_layout(height=220, margin=dict(l=10, r=10, t=20, b=10), showlegend=False)
    return fig


def recall_figure(scores: Mapping[str, np.ndarray], title: str = "") -> go.Figure:
    """(d) Recall (cosine of read-back vs stored value) of every written pair, by write position."""
    fig = go.Figure()
    for name, s in scores.items():
        s = np.asarray(s, dtype=float)
        fig.add_trace(go.Scatter(y=s, mode="lines", name=name, line=dict(color=MECH_COLORS.get(name)),
                                 hovertemplate="pair %{x}: cos = %{y:.2f}<extra>" + name + "</extra>"))
    fig.update_xaxes(title_text="position the pair was written at (0 = first, oldest)")
    fig.update_yaxes(title_text="recall: cos(Sᵀk_i, v_i)", range=[-0.3, 1.05])
    fig.update_layout(title=title, height=360, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def decay_memory_figure(tokens: Sequence[int], kept: Mapping[str, Sequence[float]], threshold: float) -> go.Figure:
    """(f) Fraction of a write one key channel keeps after n tokens, per constant per-token decay (log y)."""
    fig = go.Figure()
    for i, (name, ys) in enumerate(kept.items()):
        fig.add_scatter(x=list(tokens), y=list(ys), name=name, mode="lines",
                        line=dict(color=memory_color(name, i), dash="solid" if "bound" in name else "dot"))
    fig.add_hline(y=threshold, line_dash="dash", line_color=HIGHLIGHT_LINE["color"])
    fig.update_xaxes(title_text="tokens since the write")
    fig.update_yaxes(**log_axis("fraction kept (log)"))
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=30, b=10), legend=dict(font=dict(size=11)))
    return fig
