"""The bytes-per-decoded-token ledger as a figure (no Streamlit): HBM reads and interconnect bytes, stacked.

Two panels because the two differ by about three orders of magnitude (GB of HBM, MB on the links): one
linear axis would hide the interconnect, a log axis would misdraw a stack. Counterfactual rows ("K3 without
latent") are hatched; the reference models and K3 as designed are solid.
"""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from k3lite.analytic.ledger import SEGMENTS, Ledger
from k3lite.viz.style import COUNTERFACTUAL_PATTERN, LINK, byte_unit, fit_titles, fmt_bytes

HBM = ("hbm_weights", "hbm_cache", "attnres")
WIRE = ("nvlink", "nic")


def _row_label(name: str) -> str:
    """Two short lines so the labels fit beside the bars at phone width: 'Kimi K3 without<br>the latent'."""
    at = [(name.find(word), word) for word in (" without ", " with ") if word in name]
    if not at:
        return name
    i, word = min(at)  # the first change named after the model
    return f"{name[:i]}{word.rstrip()}<br>{name[i + len(word):]}"


def ledger_figure(rows: list[Ledger], counterfactual: frozenset[str] = frozenset(), per: str = "decoded token"
                  ) -> go.Figure:
    """Horizontal stacked bars, one row per ledger; top panel HBM, bottom panel interconnect.
    `counterfactual`: the names drawn hatched (K3 with ideas off). `per`: what one bar's bytes are per (the
    ledger's rows, or `ledger.per_work` rows: "GFLOP of a token's work")."""
    labels = {key: label for key, label in SEGMENTS}
    names = [_row_label(r.name) for r in rows]
    hbm_unit, hbm_div = byte_unit(max((sum(getattr(r, k) for k in HBM) for r in rows), default=1))
    wire_unit, wire_div = byte_unit(max((sum(getattr(r, k) for k in WIRE) for r in rows), default=1) or 1)
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.16, row_heights=[0.5, 0.5],
                        subplot_titles=(f"HBM read per {per} ({hbm_unit})",
                                        f"interconnect per {per} ({wire_unit})"))
    pattern = [COUNTERFACTUAL_PATTERN if r.name in counterfactual else dict(shape="") for r in rows]
    for panel, keys, div in ((1, HBM, hbm_div), (2, WIRE, wire_div)):
        for key in keys:
            fig.add_bar(y=names, x=[getattr(r, key) / div for r in rows], orientation="h", name=labels[key],
                        marker=dict(color=LINK[key], pattern=dict(shape=[p["shape"] for p in pattern],
                                                                  fgcolor=COUNTERFACTUAL_PATTERN["fgcolor"],
                                                                  solidity=COUNTERFACTUAL_PATTERN["solidity"],
                                                                  fillmode=COUNTERFACTUAL_PATTERN["fillmode"])),
                        customdata=[fmt_bytes(getattr(r, key)) for r in rows], legendgroup=key,
                        hovertemplate="%{y}: %{customdata}<extra>" + labels[key] + "</extra>", row=panel, col=1)
        totals = [sum(getattr(r, k) for k in keys) for r in rows]
        fig.add_scatter(y=names, x=[t / div for t in totals], mode="text", text=[fmt_bytes(t) for t in totals],
                        textposition="middle right", showlegend=False, hoverinfo="skip", row=panel, col=1)
        fig.update_xaxes(range=[0, max(totals, default=1) / div * 1.35 or 1], row=panel, col=1)
        fig.update_yaxes(autorange="reversed", automargin=True, row=panel, col=1)
    fig.update_layout(barmode="stack", height=260 + 2 * 46 * len(rows), margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.06, x=0))
    return fit_titles(fig)
