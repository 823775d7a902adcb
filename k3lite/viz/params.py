"""Figures for parameter counts (no Streamlit): take a ParamReport, return a plotly figure."""
from __future__ import annotations

import plotly.graph_objects as go

from k3lite.model.presets import KIMI_K3_STATED_ACTIVE, KIMI_K3_STATED_TOTAL
from k3lite.analytic.params import COMPONENTS, ParamReport
from k3lite.viz.style import CONCEPT, log_axis

# published totals (params), with where they were stated; used for the "ours vs stated" table
PUBLISHED = {
    "deepseek-v3": (671e9, 37e9, "DeepSeek-V3 technical report, arXiv 2412.19437 (MTP module excluded)"),
    "kimi-k2": (1.04e12, 32e9, "Kimi K2 report, arXiv 2507.20534"),
    "kimi-linear-48b-a3b": (48e9, 3e9, "Kimi Linear tech report, arXiv 2510.26692"),
    "kimi-k3": (KIMI_K3_STATED_TOTAL, KIMI_K3_STATED_ACTIVE, "Kimi K3 model card / technical report (arXiv 2607.24653): "
                "2.78T total, 104B active, text model + vision tower (ours: the text model)"),
}
# Where a source says how it counted "active", compare like for like: (stated active, includes the input
# embedding?, source). Elsewhere the convention is not stated and we compare our own (embedding left out).
ACTIVE_CONVENTION = {
    "deepseek-v3": (36.7e9, True, "DeepSeek-V3 README_WEIGHTS.md: 36.7B activated, including 0.9B embedding and "
                                  "0.9B output head"),
}


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
