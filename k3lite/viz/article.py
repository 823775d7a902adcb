"""The article page's figure (no Streamlit): where the article's 1.8% and the app's parameter share come from, drawn."""
from __future__ import annotations

import plotly.graph_objects as go

from k3lite.analytic.sparsity import SparsityShares
from k3lite.viz.style import color


def shares_figure(s: SparsityShares) -> go.Figure:
    """Two bars on one percentage axis: the routed experts a token visits (the article's share, of experts), and
    the parameters it multiplies with (the app's share), split into its routed experts and the always-on rest."""
    fig = go.Figure()
    fig.add_bar(y=["experts a token visits"], x=[100 * s.expert_share], orientation="h", name="routed experts visited",
                marker_color=color("routed"), text=[f"{s.top_k} of {s.n_routed} = {100 * s.expert_share:.2f}%"],
                textposition="outside", cliponaxis=False)
    fig.add_bar(y=["parameters a token uses"], x=[100 * s.routed_active / s.total], orientation="h",
                name="in those routed experts", marker_color=color("routed"), showlegend=False,
                hovertemplate="routed experts visited: %{x:.2f}%<extra></extra>")
    fig.add_bar(y=["parameters a token uses"], x=[100 * s.always_on / s.total], orientation="h",
                name="always on (no router skips it)",
                marker_color=color("shared"), text=[f"total {100 * s.param_share:.2f}%"], textposition="outside",
                cliponaxis=False, hovertemplate="always on (attention, shared experts, router, latent projections, dense layers, LM head): "
                              "%{x:.2f}%<extra></extra>")
    fig.update_layout(barmode="stack", height=230, margin=dict(l=10, r=60, t=40, b=10),
                      title=f"K3: {100 * s.expert_share:.1f}% of experts, {100 * s.param_share:.2f}% of parameters",
                      xaxis=dict(title="% of the model", range=[0, 100 * s.param_share * 1.45]),
                      yaxis=dict(autorange="reversed", automargin=True))
    return fig
