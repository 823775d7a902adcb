"""Figures for interconnect bytes per token (no Streamlit): take k3lite.interconnect results, return plotly."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from k3lite.interconnect import SCHEME_LABELS, TokenTraffic
from k3lite.interconnect.measured import KINDS
from k3lite.interconnect.run import MeasureResult
from k3lite.viz.style import CONCEPT, HIGHLIGHT_LINE, LINK, WHITE, bytes_axis, fmt_bytes, fmt_seconds, wrap

SEGMENTS = (  # (LayerBytes field, legend label, colour): the colour is the link; combine is hatched
    ("dispatch_intra", "dispatch, intra-domain (NVLink)", LINK["nvlink"]),
    ("dispatch_inter", "dispatch, inter-domain (NIC)", LINK["nic"]),
    ("combine_intra", "combine, intra-domain (NVLink)", LINK["nvlink"]),
    ("combine_inter", "combine, inter-domain (NIC)", LINK["nic"]),
)


MEASURED_TRACE = "measured (bytes handed to all_to_all_single)"  # the measured run's bars (their evidence differs)

def _pattern(key: str) -> dict:
    return dict(shape="x" if key.startswith("combine") else "")


def traffic_figure(t: TokenTraffic) -> go.Figure:
    """Stacked bars for one config: bytes per token per MoE layer (kB) and per forward pass (MB)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("per MoE layer<br>(kB / token)",
                                                        f"per forward pass, {t.n_moe_layers}<br>MoE layers (MB / token)"))
    for key, label, colour in SEGMENTS:
        v = getattr(t.per_layer, key)
        fig.add_bar(x=[t.name], y=[v / 1e3], name=label, marker_color=colour, marker_pattern=_pattern(key),
                    legendgroup=key, row=1, col=1, hovertemplate=f"{label}: %{{y:.2f}} kB<extra></extra>")
        fig.add_bar(x=[t.name], y=[v * t.n_moe_layers / 1e6], name=label, marker_color=colour,
                    marker_pattern=_pattern(key), legendgroup=key,
                    showlegend=False, row=1, col=2, hovertemplate=f"{label}: %{{y:.3f}} MB<extra></extra>")
    # units are in the subplot titles: the right panel's own y-axis title sat on the left panel at 390 px
    fig.update_layout(barmode="stack", height=380, margin=dict(l=10, r=10, t=70, b=10),
                      legend=dict(orientation="h", y=-0.15))
    return fig


def compare_figure(rows: list[TokenTraffic]) -> go.Figure:
    """Side by side: MB per token per forward pass, stacked by direction and domain, wire time on top."""
    fig = go.Figure()
    names = [r.name for r in rows]
    # a counterfactual row ("K3 without latent") is faded: not a model anyone ships
    faded = [0.45 if " without " in r.name else 1.0 for r in rows]
    for key, label, colour in SEGMENTS:
        fig.add_bar(x=names, y=[getattr(r.per_layer, key) * r.n_moe_layers / 1e6 for r in rows], name=label,
                    marker_color=colour, marker_pattern=_pattern(key), marker_opacity=faded,
                    hovertemplate=f"{label}: %{{y:.3f}} MB<extra></extra>")
    fig.add_scatter(x=names, y=[r.per_forward / 1e6 for r in rows], mode="text", showlegend=False,
                    # two short lines: "39.0 MB, 68.3 µs" on one ran into its neighbours at 390 px
                    text=[f"{fmt_bytes(r.per_forward)}<br>{fmt_seconds(r.wire_s_forward)}" for r in rows],
                    textposition="top center")
    top = max((r.per_forward for r in rows), default=1) / 1e6
    fig.update_layout(barmode="stack", height=380, margin=dict(l=10, r=10, t=40, b=10),
                      yaxis=dict(title="MB / token / forward pass", range=[0, top * 1.35]),
                      legend=dict(orientation="h", y=-0.15), title="same deployment, each model's own config")
    return fig


def measured_figure(res: MeasureResult) -> go.Figure:
    """Bytes per token by kind: measured on gloo vs analytic for the same routing vs uniform expectation."""
    n = res.n_tokens
    m, p = res.total("measured"), res.total("predicted")
    labels = [k.replace("_", " ") for k in KINDS]
    fig = go.Figure()
    fig.add_bar(x=labels, y=[m[k] / n for k in KINDS], name=MEASURED_TRACE,
                marker_color=CONCEPT["measured"])
    fig.add_bar(x=labels, y=[p[k] / n for k in KINDS], name="analytic, same routing decisions",
                marker_color=CONCEPT["analytic"])
    fig.add_bar(x=labels, y=[getattr(res.uniform, k) for k in KINDS], name="analytic, uniform routing E[.]",
                marker_color=CONCEPT["baseline"])
    fig.update_layout(barmode="group", height=360, margin=dict(l=10, r=10, t=40, b=10),
                      yaxis_title="bytes / token / layer", legend=dict(orientation="h", y=-0.2),
                      title=f"{res.spec.ranks} gloo ranks, {n} tokens")
    return fig


SCHEME_DASH = {"direct": "solid", "normal": "dash", "low-latency": "dot"}  # one link colour, schemes by line style
SCHEME_SYMBOL = {"direct": "circle", "normal": "square", "low-latency": "diamond"}


def node_limit_figure(sweep: dict[str, list[tuple[int, float]]], current: int = 0) -> go.Figure:
    """NIC bytes per token per MoE layer vs node limit M, one line per dispatch scheme (from node_limit_sweep)."""
    top = max((b for pts in sweep.values() for _, b in pts), default=1.0)
    title, div = bytes_axis("NIC bytes per token per MoE layer", top)
    fig = go.Figure()
    for scheme, pts in sweep.items():
        fig.add_scatter(x=[m for m, _ in pts], y=[b / div for _, b in pts], name=wrap(SCHEME_LABELS[scheme], 36),
                        mode="lines+markers", line=dict(color=LINK["nic"], dash=SCHEME_DASH[scheme]),
                        marker=dict(symbol=SCHEME_SYMBOL[scheme], size=9),
                        hovertemplate=f"{scheme}, M = %{{x}}: %{{y:.2f}}<extra></extra>")
    if current:
        # at the foot of the line, on a white ground and beside it: at its top it sat on a scheme's dotted line
        fig.add_vline(x=current, line=HIGHLIGHT_LINE, annotation_text=f"your M = {current}",
                      annotation_position="bottom right", annotation=dict(bgcolor=WHITE, xshift=2))
    limits = sorted({m for pts in sweep.values() for m, _ in pts})  # infeasible limits are left out of the sweep
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25),
                      xaxis=dict(title=wrap("node limit M (domains a token may use; the last point = no limit)", 40),
                                 tickmode="array", tickvals=limits),
                      yaxis=dict(title=title, rangemode="tozero"))
    return fig
