"""The app's one visual language: a fixed colour per concept, one byte formatter, one way to draw log axes.

Every figure builder takes its colours and units from here, so KDA is the same colour on every page and a
byte count reads the same everywhere (`fmt_bytes`; durations: `fmt_seconds`). Colours come from the Okabe-Ito
palette (distinguishable with the common colour-vision deficiencies) plus greys; "your setting" is drawn as an
outline (`HIGHLIGHT_LINE`), never as one more hue.

Bytes are decimal (SI): 1 kB = 1000 B, 1 MB = 10^6 B, 1 GB = 10^9 B, as in network and HBM-bandwidth datasheets
(GB/s, TB/s) and DeepEP's README; HBM capacity alone is binary (GiB), as the hardware is (the rule:
k3lite.base.units). One formatter each (`fmt_bytes`, `fmt_capacity`), one axis title helper (`bytes_axis`).
"""
from __future__ import annotations

import math

# the one byte and duration formatter lives below every layer (experiments and analytic code print bytes the
# way the figures do); the figures use it from here
from k3lite.base.units import _BYTE_UNITS, byte_unit, fmt_bytes, fmt_capacity, fmt_seconds  # noqa: F401
from k3lite.model.cards import colour_key

# ------------------------------------------------------------------------------------------- colours
# Okabe & Ito (2008), "Color Universal Design": black, orange, sky blue, bluish green, yellow, blue,
# vermillion, reddish purple.
_ORANGE, _SKY, _GREEN, _YELLOW, _BLUE, _VERMILLION, _PURPLE = (
    "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
_GREY, _LIGHT_GREY, _DARK = "#7F7F7F", "#BBBBBB", "#333333"

CONCEPT: dict[str, str] = {
    # sequence mixers
    "kda": _GREEN, "mla": _BLUE, "gdn": _SKY, "mamba2": _YELLOW, "linear": _GREY, "deltanet": _PURPLE,
    "attention": _DARK, "hybrid": _VERMILLION,
    # mixture of experts
    "routed": _ORANGE, "shared": _PURPLE, "latent": _VERMILLION, "router": _YELLOW, "dense": _LIGHT_GREY,
    "attn": _BLUE, "embedding": _LIGHT_GREY, "head": _GREY,
    # references
    "baseline": _LIGHT_GREY, "published": _DARK, "measured": _DARK, "analytic": _ORANGE,
    "correction": _VERMILLION, "active": _DARK, "attnres": _PURPLE,  # the delta rule's write v - S^T k
}
# balancing methods (MoE page): one colour each, the same on every panel
BALANCING: dict[str, str] = {"none": _LIGHT_GREY, "aux_loss": _SKY, "bias": _ORANGE, "quantile": _GREEN}
# link and memory types (bytes ledger, interconnect, serving)
LINK: dict[str, str] = {"nvlink": _SKY, "nic": _VERMILLION, "hbm_weights": _BLUE, "hbm_cache": _GREEN,
                        "attnres": _PURPLE, "compute": _GREY}
# dispatch vs combine
DIRECTION: dict[str, str] = {"dispatch": _BLUE, "combine": _ORANGE}

# the three reference models wherever they stand side by side (bytes ledger, interconnect, cost)
MODEL: dict[str, str] = {"deepseek-v3": _SKY, "kimi-k2": _BLUE, "k3": _VERMILLION}
# $ per task: what the tokens are billed as
COST: dict[str, str] = {"input": _BLUE, "cached_input": _SKY, "output": _ORANGE}
# series that are not a concept (several settings of one knob): palette order, never plotly's default colorway
SERIES: tuple[str, ...] = (_BLUE, _ORANGE, _GREEN, _VERMILLION, _PURPLE, _SKY, _YELLOW, _DARK)

HIGHLIGHT_LINE = dict(color=_DARK, width=3)  # "your setting": an outline, not a hue
TRANSPARENT = "rgba(0,0,0,0)"  # no fill / no outline
HIGHLIGHT_MARKER = dict(color=TRANSPARENT, size=14, line=HIGHLIGHT_LINE)  # a ring around the point
NEUTRAL = _GREY  # reference lines (ideal load, parity, 1x)
CONTROL = _DARK  # theme colour of sliders and buttons (.streamlit/config.toml primaryColor): no concept's hue
# "K3 without latent": hatched bars (white hatching over the segment's own colour)
COUNTERFACTUAL_PATTERN = dict(shape="/", fgcolor="#FFFFFF", solidity=0.35, fillmode="overlay")
SEQUENTIAL_SCALE = "Viridis"  # heatmaps of one quantity (magnitudes, loads)
DIVERGING_SCALE = "RdBu"  # heatmaps of signed quantities (state entries, deltas)


_TABLES = (CONCEPT, BALANCING, LINK, DIRECTION, MODEL, COST)
# every colour a figure may use (traces, lines, shapes); tests check built figures against it
PALETTE: frozenset[str] = frozenset({*(c for t in _TABLES for c in t.values()), *SERIES, _GREY, _LIGHT_GREY,
                                     _DARK, "#FFFFFF", "rgba(0,0,0,0)"})


def color(concept: str) -> str:
    """The colour of `concept` (a key of CONCEPT, BALANCING, LINK, DIRECTION, MODEL or COST); KeyError names the
    known ones."""
    for table in _TABLES:
        if concept in table:
            return table[concept]
    known = sorted({k for t in _TABLES for k in t})
    raise KeyError(f"no colour for {concept!r}; known concepts: {known}")


def translucent(hex_color: str, alpha: float) -> str:
    """A palette colour with opacity `alpha` (bands, fills): '#0072B2', 0.2 -> 'rgba(0, 114, 178, 0.2)'."""
    h = hex_color.lstrip("#")
    return f"rgba({int(h[0:2], 16)}, {int(h[2:4], 16)}, {int(h[4:6], 16)}, {alpha})"


def opaque(colour: str) -> str:
    """The '#RRGGBB' behind a colour string ('rgba(0, 114, 178, 0.2)' -> '#0072B2'); others unchanged."""
    if colour.startswith("rgb"):
        r, g, b = (int(float(v)) for v in colour[colour.index("(") + 1:colour.index(")")].split(",")[:3])
        return f"#{r:02X}{g:02X}{b:02X}"
    return colour


def series_color(i: int) -> str:
    """The i-th colour for series that are settings of one knob (not concepts): cycles through SERIES."""
    return SERIES[i % len(SERIES)]


def model_color(name: str, fallback: int = 0) -> str:
    """The colour on the card of the model `name` names (k3lite.model.cards.colour_key: its preset name, display
    name or label, with or without a tail); a name with no card, or a card with no colour (a user's own config,
    Kimi Linear, lite), gets series_color(fallback)."""
    key = colour_key(name)
    return MODEL[key] if key else series_color(fallback)


# --------------------------------------------------------------------------------------------- units
def bytes_axis(quantity: str, n_max: float) -> tuple[str, float]:
    """Axis title and divisor for byte values up to `n_max`: ("dispatch bytes per token (kB)", 1e3)."""
    name, size = byte_unit(n_max)
    return f"{quantity} ({name})", size


def wrap(text: str, width: int = 28) -> str:
    """Break a figure or subplot title into lines of at most ~`width` characters (Plotly never wraps titles, and
    side-by-side subplot titles ran into each other at 390 px): 'a b c' -> 'a b<br>c'."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "<br>".join([*lines, line] if line else lines)


def fit_titles(fig, title: str = "", width: int = 40, min_top: int = 20):
    """Wrap the figure title for a phone-width figure, pin it to the top of the figure, and give the top margin
    room for its lines plus the top row's subplot titles under it (they overlapped at 390 px). The plot area
    keeps its height: the figure grows by what the margin grows. Returns `fig`."""
    text = wrap(title, width) if title else ""
    lines = text.count("<br>") + 1 if text else 0
    subplot_lines = max((str(a.text).count("<br>") + 1 for a in fig.layout.annotations
                         if a.text and a.yref == "paper" and a.y is not None and a.y >= 0.97
                         and a.yanchor == "bottom"), default=0)
    under = 26 * subplot_lines + 14  # the subplot titles' band (16 px font) between the figure title and the plot
    top = max(min_top, 14 + 24 * lines + under)
    old_top = fig.layout.margin.t if fig.layout.margin.t is not None else 80
    height = fig.layout.height
    # Plotly anchors a multi-line title by its first line, so the lines below it need their own room too
    fig.update_layout(margin=dict(t=top), title=dict(text=text, yref="paper", y=1, yanchor="bottom",
                                                     pad=dict(b=under + 24 * max(0, lines - 1))))
    if height:
        fig.update_layout(height=height + top - old_top)
    return fig


# ------------------------------------------------------------------------------------------- phones
# CSS app.py injects once for every page (st.html), public selectors only (data-testid, plotly's classes):
#  - below NARROW_PX the Plotly toolbar covered titles and legends on almost every chart, and touch has no hover
#    to reveal it only when wanted: there it is hidden (pinch-zoom and the full-screen button remain);
#  - a table wider than its box was clipped at the right edge with no cue (phones and many desktops draw
#    scrollbars only while scrolling): a shadow at the right edge while columns remain to the right, driven by
#    the table's own horizontal scroll (a CSS scroll timeline: no timeline, i.e. nothing to scroll, no shadow).
#  - labels Streamlit cuts with "…" in a narrow column (metric and widget labels, page links) wrap instead.
NARROW_PX = 640
# long labels wrap (metric, widget, page-link labels). Not every descendant of a checkbox's <label>: height: auto
# there collapsed a toggle's track to 0 px and squashed a checkbox's square (its text sits in stWidgetLabel anyway)
TABLE_CUE = "k3-more-right"  # the animation name the browser test looks for
APP_CSS = f"""<style>
@media (max-width: {NARROW_PX}px) {{ .js-plotly-plot .modebar-container {{ display: none !important; }} }}
[data-testid="stDataFrame"] {{ timeline-scope: --k3-table-x; position: relative; }}
[data-testid="stDataFrame"] .dvn-scroller {{ scroll-timeline: --k3-table-x x; }}
[data-testid="stDataFrame"]::after {{
  content: ""; position: absolute; top: 0; right: 0; bottom: 0; width: 32px; pointer-events: none; z-index: 2;
  background: linear-gradient(to right, rgba(51, 51, 51, 0), rgba(51, 51, 51, 0.28)); opacity: 0;
  animation: {TABLE_CUE} linear both; animation-timeline: --k3-table-x;
}}
[data-testid="stMetricLabel"] *, [data-testid="stWidgetLabel"] *, [data-testid="stPageLink-NavLink"] *
  {{ white-space: normal !important; text-overflow: clip !important; overflow: visible !important;
  height: auto !important; }}
@keyframes {TABLE_CUE} {{ 0% {{ opacity: 1; }} 92% {{ opacity: 1; }} 100% {{ opacity: 0; }} }}
</style>"""


def legend_below(fig):
    """Lay the legend out horizontally under the plot, left-aligned, in the figure's bottom margin (yref
    "container": Plotly grows the margin to hold it, so it never sits on the x-axis title or the ticks, which a
    legend at a negative paper y did). At 390 px a legend beside or above the plot took most of the width or ran
    into the title. `k3lite.viz.memo.shared_figure` applies it to every figure it builds. Returns `fig`."""
    if getattr(fig, "layout", None) is None:  # not a plotly figure (a builder may return anything): nothing to place
        return fig
    if fig.layout.showlegend is not False:
        fig.update_layout(legend=dict(orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container"))
    return fig


# byte units a figure must not show: binary units other than GiB (HBM capacity is the one binary quantity:
# k3lite.base.units.fmt_capacity) and the upper-case "KB" spelling
FORBIDDEN_UNITS = ("KiB", "MiB", "TiB", "KB")


def log_axis(title: str) -> dict:
    """Plotly axis settings for a log axis labelled once per decade (1, 10, 100, ...), no 2-5 minor labels."""
    return dict(title=title, type="log", dtick=1, minor=dict(showgrid=True), exponentformat="SI")


def log_vline(fig, x: float, annotation_text: str | None = None, **kwargs):
    """A vertical line at data value `x` on a log x axis, with an optional label at its top. Plotly places a shape
    on a log axis at its data value but an annotation at log10 of its coordinate, and `add_vline` gives both the
    same x: a label of x=50 landed at 10^50 and stretched the axis there. Returns `fig`."""
    if not x > 0:
        raise ValueError(f"a line on a log axis needs x > 0, got {x}")
    kwargs.pop("annotation_position", None)  # the label always sits at the top of the line
    fig.add_vline(x=x, **kwargs)
    if annotation_text:
        # inside the plot, under its top edge (above it, the label ran into a wrapped title at 390 px), on the side
        # of the line with more room (left of a line in the right half of the data, else right of it)
        xs = [v for t in fig.data for v in (t.x if t.x is not None else ()) if isinstance(v, (int, float)) and v > 0]
        right_half = bool(xs) and math.log10(x) > (math.log10(min(xs)) + math.log10(max(xs))) / 2
        fig.add_annotation(x=math.log10(x), xref="x", y=1, yref="y domain", text=annotation_text, showarrow=False,
                           xanchor="right" if right_half else "left", yanchor="top", xshift=-4 if right_half else 4)
    return fig


def bytes_log_axis(quantity: str) -> dict:
    """A log axis of raw byte counts labelled once per decade in decimal units: 1kB, 10kB, ..., 1GB."""
    return {**log_axis(f"{quantity} (bytes, log)"), "ticksuffix": "B"}


# ------------------------------------------------------------------------------------------- drawn diagrams
WHITE = "#FFFFFF"  # the page background: behind a diagram's labels (k3lite.viz.diagrams), in PALETTE already
