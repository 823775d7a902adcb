"""K3 and K3 without each idea on the seed's three axes (k3lite.analytic.ablation): one panel per axis, one bar per
variant, K3 outlined; the bars of variants equal to K3 on an axis are drawn pale (nothing changes there)."""
from __future__ import annotations

import math

from plotly.subplots import make_subplots

from k3lite.analytic.ablation import AXES, SPEED, Row
from k3lite.viz.style import HIGHLIGHT_LINE, NEUTRAL, SERIES, TRANSPARENT, byte_unit, fit_titles, translucent


def ablation_figure(rows: list[Row]):
    """Three horizontal-bar panels one above the other (side by side, their titles met at 390 px), K3 on top."""
    if not rows:
        raise ValueError("no rows to draw")
    names = [r.label for r in rows][::-1]
    units = [byte_unit(max(r.value(a) for r in rows))[0] for a in AXES[:2]]
    titles = [f"{AXES[0]} ({units[0]})", f"{AXES[1]} ({units[1]})", f"{AXES[2]}<br>at {SPEED:.0f} tok/s per user"]
    fig = make_subplots(rows=3, cols=1, vertical_spacing=0.12, subplot_titles=titles)
    k3 = rows[0]
    for col, axis in enumerate(AXES, start=1):
        values = [r.value(axis) for r in rows][::-1]
        if axis == AXES[2]:
            scale, unit = 1.0, "$"
            shown = [v for v in values if not math.isnan(v)]
            text = [f"${v:.2f}" if not math.isnan(v) else "out of reach" for v in values]
        else:
            unit, scale = byte_unit(max(values))
            shown = values
            text = [f"{v / scale:.3g} {unit}" for v in values]
        same = [not math.isnan(v) and math.isclose(v, k3.value(axis), rel_tol=1e-9) for v in values]
        colours = [SERIES[0] if n == k3.label else (translucent(SERIES[1], 0.3) if s else SERIES[1])
                   for n, s in zip(names, same)]
        fig.add_bar(y=names, x=[0 if math.isnan(v) else v / scale for v in values], orientation="h",
                    marker=dict(color=colours, line=dict(color=[HIGHLIGHT_LINE["color"] if n == k3.label else
                                                               TRANSPARENT for n in names], width=2)),
                    text=text, textposition="auto", showlegend=False, name=axis, customdata=text,
                    hovertemplate="%{y}: %{customdata}<extra></extra>", row=col, col=1)
        fig.add_vline(x=k3.value(axis) / scale if not math.isnan(k3.value(axis)) else 0, row=col, col=1,
                      line=dict(color=NEUTRAL, dash="dot"))
        fig.update_xaxes(row=col, col=1, showticklabels=bool(shown))  # the unit is in the panel's title
    fig.update_layout(height=160 + 3 * 26 * len(rows), margin=dict(l=10, r=10, t=60, b=10))
    return fit_titles(fig, "Kimi K3 against K3 without one idea")
