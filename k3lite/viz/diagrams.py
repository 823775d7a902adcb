"""Drawn diagrams of two mechanisms, live from a config, in the architecture map's style (Plotly shapes and
annotations, no Streamlit):

- `latent_path_figure`: LatentMoE's path of one token, with the bytes of each hop: the token (d_model) ->
  down-projection to the latent -> dispatch on the wire -> top-k experts on other GPUs -> combine -> RMSNorm ->
  up-projection, and the shared experts beside it at full width. The wire bytes come from THE wire-bytes
  function (`k3lite.interconnect.deployment_bytes`), a vector's bytes from the wire formats' `row_bytes`;
  nothing is recomputed here.
- `depth_reads_figure`: which earlier outputs (full AttnRes) or block sums (block AttnRes) one sublayer's
  softmax over depth reads, from `k3lite.viz.archmap.sources_at` (the rule the model's ResidualStream uses);
  with a Trace's depth weights the arcs are as thick as the weight each source got.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go

from k3lite.model.config import MoEConfig
from k3lite.interconnect import REFERENCE, Deployment, WireBytes, deployment_bytes, wire_format
from k3lite.viz.archmap import sources_at
from k3lite.viz.style import (DIRECTION, HIGHLIGHT_LINE, HIGHLIGHT_MARKER, NEUTRAL, WHITE, color, fit_titles, fmt_bytes,
                               translucent)

CLEAR = HIGHLIGHT_MARKER["color"]  # fully transparent (hover carriers, empty fills)
LABEL_BG = translucent(WHITE, 0.85)  # behind a hop's label, so an arrow under it stays readable

ACTIVATION = "bf16"  # activations between the blocks on one GPU (the wire formats are the deployment's)
MAX_DRAWN_EXPERTS = 8  # squares drawn for the k experts; more are summarised as "... x k"


# ------------------------------------------------------------------------------------------ LatentMoE: one token
class Hop(NamedTuple):
    key: str  # token | down | dispatch | combine | norm | up | shared
    label: str  # what travels
    bytes: float  # bytes of this hop, per token (wire hops: expected over uniform routing, per MoE layer)
    wire: bool  # crosses the interconnect


class LatentPath(NamedTuple):
    d_model: int
    latent: int  # = d_model for a classic MoE
    top_k: int
    n_shared: int
    norm_at: str  # where the latent RMSNorm sits: "dispatch" | "combine" | "" (none)
    wire: WireBytes  # deployment_bytes of the config: dispatch/combine totals, copies, records
    hops: tuple[Hop, ...]

    def hop(self, key: str) -> Hop:
        return next(h for h in self.hops if h.key == key)


def latent_path(moe: MoEConfig, d_model: int, deployment: Deployment = REFERENCE) -> LatentPath:
    """The hops of one token through a (Latent)MoE layer and the bytes of each (per token, per layer)."""
    wire = deployment_bytes(moe, deployment, d_model)
    latent = moe.latent_dim or d_model
    act = wire_format(ACTIVATION).row_bytes
    norm_at = moe.latent_norm_at if moe.latent_dim and moe.latent_norm else ""
    hops = [Hop("token", f"x: d = {d_model}, {ACTIVATION.upper()}", act(d_model), False)]
    if moe.latent_dim:
        hops.append(Hop("down", f"W↓ x: l = {latent}, {ACTIVATION.upper()}", act(latent), False))
    hops += [
        Hop("dispatch", f"dispatch: {wire.copies.total:.2f} copies x {wire.dispatch_record:,} B "
                        f"({deployment.dispatch.upper()} record)", wire.dispatch, True),
        Hop("combine", f"combine: {wire.copies.total:.2f} copies x {wire.combine_record:,} B "
                       f"({deployment.combine.upper()} record)", wire.combine, True),
    ]
    if moe.latent_dim:
        hops.append(Hop("up", f"W↑ h: d = {d_model}, {ACTIVATION.upper()}", act(d_model), False))
    if moe.n_shared_experts:
        hops.append(Hop("shared", f"{moe.n_shared_experts} shared expert(s) at d = {d_model}: on this GPU", 0.0,
                        False))
    return LatentPath(d_model, latent, moe.top_k, moe.n_shared_experts, norm_at, wire, tuple(hops))


LABEL_ABOVE = 0.33  # a hop's byte label above its arrow, clear of the boxes' text (they overlapped at 390 px)
BOX_FONT, GLYPH_PX, LINE_PX, PAD_PX = 11, 6.4, 14, 3  # a box's text; its mean glyph width and line height (px)


class Box(NamedTuple):
    """A labelled box, sized in pixels around its text (an annotation's border), so the text fits it at any figure
    width: boxes in data units held their text at 1400 px and spilled it at 390 (the figure is as wide as the screen,
    the text is not). Arrows stop at its edge by `standoff`, in pixels too."""
    x: float
    y: float
    half_w: float  # px
    half_h: float  # px


def _box(fig: go.Figure, x: float, y: float, text: str, fill: str, hover: str = "") -> Box:
    lines = text.split("<br>")
    fig.add_annotation(x=x, y=y, text=text, showarrow=False, font=dict(size=BOX_FONT), bgcolor=translucent(fill, 0.25),
                       bordercolor=fill, borderwidth=2, borderpad=PAD_PX)
    if hover:  # an invisible marker carries the hover text (shapes have none)
        fig.add_scatter(x=[x], y=[y], mode="markers", marker=dict(size=28, color=CLEAR),
                        hovertemplate=hover + "<extra></extra>", showlegend=False)
    return Box(x, y, max(len(line) for line in lines) * GLYPH_PX / 2 + PAD_PX + 2,
               len(lines) * LINE_PX / 2 + PAD_PX + 2)


def _reach(end: Box | tuple[float, float], dx: float, dy: float, point: float) -> float:
    """Pixels from a box's centre to its edge along an arrow: its half width for a sideways arrow, its half height for
    an upright one, else the larger half (a slanted arrow's angle changes with the figure's width; its head must stay
    off the text at every width). `point` for an end that is a point, not a box."""
    if not isinstance(end, Box):
        return point
    return 2 + (end.half_w if abs(dy) < 1e-9 else end.half_h if abs(dx) < 1e-9 else max(end.half_w, end.half_h))


def _arrow(fig: go.Figure, a: Box | tuple[float, float], b: Box | tuple[float, float], colour: str, label: str = "",
           dy: float = 0.12, width: float = 2, head: bool = True, side: str = "center") -> None:
    """An arrow from `a` to `b` (a box: from its centre, starting and stopping at its edge; a point: at it). With
    `head=False` a plain segment, the first leg of a path that turns a corner (at a point, where the legs meet).
    `side`: the label's anchor at the arrow's middle ("right": left of it), so two slanted arrows' labels part."""
    (x0, y0), (x1, y1) = a[:2], b[:2]
    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="", showarrow=True,
                       arrowhead=2 if head else 0, arrowsize=1, arrowwidth=width, arrowcolor=colour,
                       standoff=_reach(b, x1 - x0, y1 - y0, 2 if head else 0),
                       startstandoff=_reach(a, x1 - x0, y1 - y0, 0))
    if label:
        fig.add_annotation(x=(x0 + x1) / 2, y=(y0 + y1) / 2 + dy, text=label, showarrow=False, xanchor=side,
                           font=dict(size=11, color=colour), bgcolor=LABEL_BG)


def latent_path_figure(path: LatentPath, title: str = "") -> go.Figure:
    """One token's trip through a LatentMoE layer: this GPU on the top lane, the experts' GPUs below it; each
    arrow carries its bytes (the hops of `path`, nothing recomputed)."""
    fig = go.Figure()
    top, bottom = 1.0, 0.0
    latent = path.latent < path.d_model
    wire_colour, back_colour = DIRECTION["dispatch"], DIRECTION["combine"]
    # lanes
    fig.add_shape(type="rect", x0=-0.6, x1=10.6, y0=0.55, y1=1.75, line=dict(width=0), fillcolor=CLEAR)
    fig.add_annotation(x=-0.55, y=1.62, text="<b>this token's GPU</b>", showarrow=False, xanchor="left",
                       font=dict(size=11, color=NEUTRAL))
    fig.add_shape(type="line", x0=-0.6, x1=10.6, y0=0.5, y1=0.5, line=dict(color=NEUTRAL, width=1, dash="dot"))
    fig.add_annotation(x=-0.55, y=-0.42, text=f"<b>expert GPUs</b> (on {path.wire.copies.gpus_hit:.1f} GPUs on "
                                              "average, own included)",
                       showarrow=False, xanchor="left", font=dict(size=11, color=NEUTRAL))
    token, down, up = path.hop("token"), (path.hop("down") if latent else None), (path.hop("up") if latent else None)
    dispatch, combine = path.hop("dispatch"), path.hop("combine")
    # top lane, left: token -> down-projection (-> RMSNorm at dispatch)
    first = last = _box(fig, 0.35, top, f"token<br>d = {path.d_model}", color("embedding"), hover=token.label)
    if latent:
        last = _box(fig, 2.6, top, f"W↓<br>{path.d_model}→<br>{path.latent}", color("latent"), hover=down.label)
        _arrow(fig, first, last, NEUTRAL, fmt_bytes(token.bytes), dy=LABEL_ABOVE)
        if path.norm_at == "dispatch":
            norm = _box(fig, 4.4, top, "RMS<br>Norm", color("latent"))
            _arrow(fig, last, norm, NEUTRAL, fmt_bytes(down.bytes), dy=LABEL_ABOVE)
            last = norm
    # bottom lane: the k experts
    drawn = min(path.top_k, MAX_DRAWN_EXPERTS)
    xs = np.linspace(4.0, 6.0, drawn) if drawn > 1 else np.array([5.0])
    for i, ex in enumerate(xs):
        fig.add_shape(type="rect", x0=ex - 0.11, x1=ex + 0.11, y0=bottom - 0.15, y1=bottom + 0.15,
                      line=dict(color=color("routed"), width=1.5), fillcolor=translucent(color("routed"), 0.4))
    more = f" (of them {drawn} drawn)" if path.top_k > drawn else ""
    fig.add_annotation(x=5.0, y=bottom - 0.27, text=f"top-{path.top_k} routed experts, each in l = {path.latent}{more}",
                       showarrow=False, font=dict(size=11))
    fig.add_scatter(x=list(xs), y=[bottom] * drawn, mode="markers", marker=dict(size=14, color=CLEAR),
                    hovertemplate=f"routed expert (one of {path.top_k}), works in {path.latent} dims"
                                  "<extra></extra>", showlegend=False)
    _arrow(fig, last, (xs[0] - 0.1, bottom + 0.17), wire_colour, f"dispatch {fmt_bytes(dispatch.bytes)}", dy=0.0,
           width=3, side="right" if xs[0] > last.x else "left")
    # back up: combine -> (RMSNorm at combine) -> W_up -> out
    last = _box(fig, 6.25, top, "Σ gate<br>· out", color("routed"), hover=f"weighted sum of the k outputs, "
                                                                          f"{path.latent} dims")
    _arrow(fig, (xs[-1] + 0.1, bottom + 0.17), last, back_colour, f"combine {fmt_bytes(combine.bytes)}", dy=0.0,
           width=3, side="left")
    if latent:
        if path.norm_at == "combine":
            norm = _box(fig, 8.15, top, "RMS<br>Norm", color("latent"))
            _arrow(fig, last, norm, NEUTRAL)
            last = norm
        w_up = _box(fig, 9.95, top, f"W↑<br>{path.latent}→<br>{path.d_model}", color("latent"), hover=up.label)
        _arrow(fig, last, w_up, NEUTRAL)
        fig.add_annotation(x=9.95, y=top - 0.42, text=f"out {fmt_bytes(up.bytes)}", showarrow=False,
                           font=dict(size=11, color=NEUTRAL))
        last = w_up
    else:
        fig.add_annotation(x=10.6, y=top, text=f"out: d = {path.d_model}<br>(classic MoE:<br>no projections)",
                           showarrow=False, xanchor="right", font=dict(size=11))
    if path.n_shared:
        shared = path.hop("shared")
        box = _box(fig, 5.0, 1.45, f"{path.n_shared} shared expert{'s' if path.n_shared > 1 else ''}<br>"
                                   f"d = {path.d_model}", color("shared"),
                   hover=shared.label + " (never crosses the wire)")
        # over the top lane, clear of its byte labels: up from the token, across, down into the last box
        corner_in, corner_out = (first.x, box.y), (last.x, box.y)
        _arrow(fig, first, corner_in, color("shared"), head=False)
        _arrow(fig, corner_in, box, color("shared"))
        _arrow(fig, box, corner_out, color("shared"), head=False)
        _arrow(fig, corner_out, last, color("shared"))
    total = dispatch.bytes + combine.bytes
    fig.update_layout(
        height=330, margin=dict(l=5, r=5, t=50, b=5), plot_bgcolor="white", hovermode="closest",
        xaxis=dict(visible=False, range=[-0.65, 10.65], fixedrange=True),
        yaxis=dict(visible=False, range=[-0.55, 1.8], fixedrange=True),
        meta={"hops": {h.key: h.bytes for h in path.hops}})
    return fit_titles(fig, title or f"One token through {'LatentMoE' if latent else 'a classic MoE'}: "
                                    f"{fmt_bytes(total)} on the wire per layer", width=48)


# ------------------------------------------------------------------------------------------ AttnRes: depth reads
class DepthReads(NamedTuple):
    names: tuple[str, ...]  # sublayer names, embedding first ... final mix last
    reader: int  # the sublayer whose input is drawn (0-based; 2 x n_layers = the final mix)
    mode: str
    block_size: int
    sources: tuple[tuple[str, int, int], ...]  # archmap.sources_at: (name, first sublayer, last sublayer)


def depth_reads(n_layers: int, mode: str, block_size: int, reader: int,
                mixer_types: list[str] | None = None) -> DepthReads:
    """What sublayer `reader` reads over depth under `mode` and `block_size` (sublayers)."""
    n_sub = 2 * n_layers
    if not 0 <= reader <= n_sub:
        raise ValueError(f"reader must be a sublayer in 0..{n_sub} (the final mix), got {reader}")
    if block_size < 1:
        raise ValueError(f"block size must be >= 1 sublayer, got {block_size}")
    names = ["embedding"]
    for i in range(n_layers):
        mixer = mixer_types[i].upper() if mixer_types else "mixer"
        names += [f"L{i} {mixer}", f"L{i} FFN"]
    names.append("final mix (LM head)")
    return DepthReads(tuple(names), reader, mode, block_size, tuple(sources_at(mode, reader, block_size)))


def depth_reads_figure(reads: DepthReads, weights: np.ndarray | None = None, title: str = "") -> go.Figure:
    """Sublayers top to bottom (embedding first); the reading sublayer outlined; one arc per source it reads
    (block sums span their block), as thick as the source's depth weight when `weights` (one per source, in
    `reads.sources` order) is given."""
    n_rows = len(reads.names)  # embedding + 2L sublayers + final mix
    y_of = lambda sub: -(sub + 1)  # noqa: E731  sublayer s sits at row s + 1; the embedding (s = -1) at row 0
    reader_y = y_of(reads.reader)
    fig = go.Figure()
    attn = color("attnres")
    if reads.mode == "block":  # the blocks as shaded bands
        n_sub = n_rows - 2
        for b, first in enumerate(range(0, n_sub, reads.block_size)):
            last = min(first + reads.block_size, n_sub) - 1
            fig.add_shape(type="rect", x0=0.8, x1=3.2, y0=y_of(last) - 0.42, y1=y_of(first) + 0.42,
                          line=dict(color=attn, width=1), fillcolor=translucent(attn, 0.08 if b % 2 else 0.16),
                          layer="below")
            fig.add_annotation(x=3.15, y=(y_of(first) + y_of(last)) / 2, text=f"block {b}", showarrow=False,
                               xanchor="right", font=dict(size=10, color=attn))
    # the sublayers
    row_y = [-r for r in range(n_rows)]
    colours = [color("embedding")] + [color("attn") if i % 2 == 0 else color("routed") for i in range(n_rows - 2)] \
        + [color("head")]
    fig.add_scatter(x=[1.0] * n_rows, y=row_y, mode="markers+text", text=list(reads.names), textposition="middle right",
                    marker=dict(size=12, color=colours, symbol="square"), hoverinfo="skip", showlegend=False,
                    textfont=dict(size=11))
    fig.add_shape(type="rect", x0=0.7, x1=3.3, y0=reader_y - 0.45, y1=reader_y + 0.45,
                  line=dict(color=HIGHLIGHT_LINE["color"], width=2.5), fillcolor=CLEAR)
    # arcs: from each source (its last sublayer, or the span's middle for a block) to the reader, in the left lane
    if reads.mode == "standard":
        fig.add_shape(type="line", x0=0.35, x1=0.35, y0=0, y1=reader_y, line=dict(color=NEUTRAL, width=3))
        fig.add_annotation(x=0.3, y=reader_y / 2, text="one running sum", textangle=-90, showarrow=False,
                           font=dict(size=11, color=NEUTRAL), xanchor="right")
    else:
        w = np.asarray(weights, dtype=float) if weights is not None else None
        for j, (name, first, last) in enumerate(reads.sources):
            y0 = y_of(last) if first == last else (y_of(first) + y_of(last)) / 2
            depth = abs(reader_y - y0)
            bulge = 0.65 - 0.75 * depth / max(n_rows, 1)  # farther sources bulge further left
            t = np.linspace(0, 1, 16)
            xs = (1 - t) ** 2 * 0.85 + 2 * t * (1 - t) * bulge + t ** 2 * 0.85
            ys = (1 - t) ** 2 * y0 + 2 * t * (1 - t) * (y0 + reader_y) / 2 + t ** 2 * reader_y
            weight = float(w[j]) if w is not None and j < len(w) and np.isfinite(w[j]) else None
            width = 1.5 + 10 * weight if weight is not None else 2
            label = name + (f": weight {weight:.2f}" if weight is not None else "")
            fig.add_scatter(x=xs, y=ys, mode="lines", line=dict(color=attn, width=width), showlegend=False,
                            hovertemplate=f"{reads.names[reads.reader + 1]} reads {label}<extra></extra>")
    n_read = len(reads.sources) if reads.mode != "standard" else 1
    fig.update_layout(
        height=90 + 22 * n_rows, margin=dict(l=5, r=5, t=50, b=5), plot_bgcolor="white",
        xaxis=dict(visible=False, range=[-0.1, 3.4], fixedrange=True),
        yaxis=dict(visible=False, range=[-n_rows + 0.4, 0.6], fixedrange=True),
        meta={"reads": [s[0] for s in reads.sources]})
    return fit_titles(fig, title or f"{reads.names[reads.reader + 1]} reads {n_read} vector"
                                    f"{'s' if n_read != 1 else ''} over depth", width=48)
