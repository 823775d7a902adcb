"""The tornado: each assumed input moved ±20%, the headline's low and high, widest first (k3lite.analytic.sensitivity)."""
from __future__ import annotations

from typing import Callable

import plotly.graph_objects as go

from k3lite.analytic.sensitivity import Swing
from k3lite.viz.style import NEUTRAL, SERIES, fit_titles, wrap


def tornado_figure(ranked: list[Swing], headline: str, fmt: Callable[[float], str], rel: float = 0.2):
    """One horizontal bar per assumption from the headline at (1-rel)x to (1+rel)x of it, widest on top."""
    if not ranked:
        raise ValueError("no swings to draw")
    rows = list(reversed(ranked))  # plotly draws the first category at the bottom
    names = [wrap(s.name, 26) for s in rows]
    fig = go.Figure()
    for label, pick, colour in ((f"input −{rel:.0%}", lambda s: s.low, SERIES[0]),
                                (f"input +{rel:.0%}", lambda s: s.high, SERIES[1])):
        fig.add_bar(y=names, x=[pick(s) - s.base for s in rows], base=[s.base for s in rows], orientation="h",
                    name=label, marker_color=colour,
                    customdata=[fmt(pick(s)) for s in rows], hovertemplate="%{y}: " + label + " → %{customdata}<extra></extra>")
    fig.add_vline(x=ranked[0].base, line=dict(color=NEUTRAL, dash="dot"))
    fig.update_layout(barmode="overlay", height=90 + 34 * len(rows), margin=dict(l=10, r=10, t=40, b=10),
                      xaxis_title=headline)
    return fit_titles(fig, f"{headline}: each assumption ±{rel:.0%}")
