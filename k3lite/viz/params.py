"""Figures for parameter counts (no Streamlit): take a ParamReport, return a plotly figure."""
from __future__ import annotations

import plotly.graph_objects as go

from k3lite.analytic.params import COMPONENTS, ParamReport
from k3lite.viz.style import CONCEPT, log_axis


def breakdown_figure(report: ParamReport) -> go.Figure:
    """Horizontal bars per component: total vs active parameters, log x axis."""
    comps = [c for c in COMPONENTS if report.by_component[c]]
    fig = go.Figure()
    fig.add_bar(y=comps, x=[report.by_component[c] for c in comps], orientation="h", name="total",
                marker_color=CONCEPT["baseline"])
    fig.add_bar(y=comps, x=[report.active_by_component[c] for c in comps], orientation="h",
                name="active per token", marker_color=CONCEPT["active"])
    fig.update_layout(barmode="group", height=60 + 32 * len(comps), margin=dict(l=10, r=10, t=30, b=10),
                      xaxis=log_axis("parameters (log scale)"), yaxis=dict(autorange="reversed"),
                      legend=dict(orientation="h", y=1.08), title=f"{report.name}: where the parameters live")
    return fig
