"""The architecture map: the whole model drawn once from any K3Config (no Streamlit).

Rows run top to bottom in the order a token flows: input (bytes -> embedding), one row per layer, output
(LM head -> next token). A layer row holds its depth mix (Attention Residuals), its mixer (KDA or MLA, by
the config's pattern) and its FFN: a dense gated FFN (SwiGLU, or SiTU-GLU for K3), or LatentMoE's router, latent
down-projection, routed experts, latent up-projection (combine) and shared experts. The residual sources are arcs in the lane on
the left: full AttnRes draws one arc per earlier sublayer output, block AttnRes one per block sum (plus the
partial sum of the current block), a standard residual none (a plain running sum, drawn as one line).

Big configs (more than `max_layer_rows` layers) collapse repeated periods of the KDA:MLA pattern into one
representative period marked "x N"; the AttnRes blocks then appear as source nodes of their own (one per
block sum) wired to the LM head's final mix, which reads every one of them.

Every node carries `customdata = [stage kind, layer, part]`: the forward-pass page maps a click to its stage,
home maps it to the page of the part. Numbers in the hover come from a Trace when one is given (state norm,
max-violation, bytes so far on the reference deployment of k3lite.interconnect) and from `k3lite.analytic.anatomy`
otherwise (parameters, bytes per decoded token).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import plotly.graph_objects as go

from k3lite.analytic.anatomy import PART_PAGE, Anatomy, PartNumbers
from k3lite.model.config import K3Config
from k3lite.interconnect import wire_bytes_per_token
from k3lite.analytic.params import fmt
from k3lite.base.evidence import Evidence
from k3lite.model.trace import Trace
from k3lite.viz.style import HIGHLIGHT_LINE, NEUTRAL, color, fmt_bytes

ROW_PX = 34  # height of one row in pixels
BIG_MARKER = 25  # px: mixers, dense FFN, input and output nodes (must stay under the row height)
LEGEND_PX = 150  # room under the rows for the legend, which wraps to ~6 lines on a 390 px phone
LANE = -0.35  # x where the residual arcs meet the rows
# x of each column of a layer row
COL = {"depth": 0.0, "mixer": 1.0, "router": 2.0, "down": 3.0, "experts": 4.0, "up": 5.0, "shared": 6.0,
       "dense": 4.0}
BRACKET_X = 6.6
ARC_POINTS = 12  # segments per drawn arc


# ------------------------------------------------------------------------------------------ geometry
@dataclass(frozen=True)
class Row:
    kind: str  # "input" | "layer" | "output"
    layer: int | None  # the (first) layer this row draws
    label: str
    repeat: int = 1  # > 1: the row stands for layers layer, layer + period, ... (repeat of them)
    period: int = 1


@dataclass(frozen=True)
class Node:
    part: str  # a k3lite.analytic.anatomy part, or "tokens" / "next" / "depth_mix"
    stage: str  # the forward-pass stage kind it belongs to (k3lite.viz.model.WHAT keys)
    layer: int | None
    row: int
    x: float
    label: str  # shown on the node ("" = symbol only)
    hover: str = ""
    y: float | None = None  # None = on its row; block sources of a collapsed map sit between rows


@dataclass(frozen=True)
class Arc:
    source: str  # "embedding" | "output s" (full) | "block b" | "partial b"
    target_row: int
    y0: float  # where the source sits (row units)
    y1: float  # the reading row


@dataclass
class MapLayout:
    rows: list[Row]
    nodes: list[Node]
    arcs: list[Arc]
    groups: list[tuple[int, int, int]] = field(default_factory=list)  # (first layer, period, repeats)
    block_nodes: list[Node] = field(default_factory=list)  # collapsed maps: one per AttnRes source

    def layer_rows(self) -> list[Row]:
        return [r for r in self.rows if r.kind == "layer"]

    def row_of_layer(self, layer: int) -> int:
        """The row that draws `layer` (a collapsed layer maps to its representative in the period)."""
        for i, r in enumerate(self.rows):
            if r.kind != "layer":
                continue
            span = r.period * r.repeat
            if r.layer == layer or (r.repeat > 1 and r.layer <= layer < r.layer + span
                                    and (layer - r.layer) % r.period == 0):
                return i
        raise ValueError(f"layer {layer} is not on this map")


def collapse(cfg: K3Config, max_layer_rows: int = 16) -> list[tuple[int, int, int]]:
    """Runs of layers as (first layer, period, repeats); repeats > 1 = one period drawn for `repeats`.

    Only periods aligned to the KDA:MLA pattern (starting at a multiple of its period) collapse, so a period
    reads like the config's pattern (KDA KDA KDA MLA); the first dense layers and the forced-global last layer
    stay single rows. Configs with at most `max_layer_rows` layers are drawn in full.
    """
    sig = list(zip(cfg.layer_types(), cfg.ffn_types()))
    n, p = len(sig), sum(cfg.kda_ratio)
    if n <= max_layer_rows:
        return [(i, 1, 1) for i in range(n)]
    runs, i = [], 0
    while i < n:
        if i % p == 0 and i + 2 * p <= n:
            reps = 1
            while i + (reps + 1) * p <= n and sig[i + reps * p: i + (reps + 1) * p] == sig[i: i + p]:
                reps += 1
            if reps >= 2:
                runs.append((i, p, reps))
                i += p * reps
                continue
        runs.append((i, 1, 1))
        i += 1
    return runs


def sources_at(mode: str, sublayer: int, block_size: int) -> list[tuple[str, int, int]]:
    """The depth sources sublayer `sublayer` (0-based; 2 x n_layers = the final mix) reads, as
    (name, first sublayer, last sublayer) of the outputs each one sums; the embedding is (.., -1, -1).

    Mirrors k3lite.model.attnres.ResidualStream: full = every earlier output, block = the completed block sums
    and the partial sum of the current block; standard = one running sum (no depth attention).
    """
    if mode == "standard":
        return []
    out = [("embedding", -1, -1)]
    if mode == "full":
        return out + [(f"output {s}", s, s) for s in range(sublayer)]
    done, rem = divmod(sublayer, block_size)
    out += [(f"block {b}", b * block_size, (b + 1) * block_size - 1) for b in range(done)]
    if rem:
        out.append((f"partial {done}", done * block_size, sublayer - 1))
    return out


def _layer_nodes(cfg: K3Config, layer: int, row: int) -> list[Node]:
    mixer = cfg.layer_types()[layer]
    ffn = cfg.ffn_types()[layer]
    nodes = [Node("attn_res", "depth", layer, row, COL["depth"], ""),
             Node(f"attention_{mixer}", mixer, layer, row, COL["mixer"], mixer.upper())]
    if ffn == "dense":
        nodes.append(Node("dense_ffn", "dense", layer, row, COL["dense"], "dense FFN"))
    else:
        nodes += [Node("router", "router", layer, row, COL["router"], ""),
                  Node("latent_proj", "experts", layer, row, COL["down"], ""),
                  Node("routed_experts", "experts", layer, row, COL["experts"], ""),
                  Node("latent_proj", "combine", layer, row, COL["up"], ""),
                  Node("shared_experts", "combine", layer, row, COL["shared"], "")]
    return nodes


def layout(cfg: K3Config, max_layer_rows: int = 16) -> MapLayout:
    """Rows, nodes and residual arcs of `cfg` (see the module docstring)."""
    runs = collapse(cfg, max_layer_rows)
    rows = [Row("input", None, "input")]
    nodes = [Node("tokens", "tokenize", None, 0, COL["mixer"], "bytes"),
             Node("embedding", "embed", None, 0, COL["experts"], "embed")]
    groups = []
    for first, period, reps in runs:
        if reps > 1:
            groups.append((first, period, reps))
        for j in range(period):
            layer = first + j
            label = f"L{layer}" if reps == 1 else f"L{layer}+{period}n"
            rows.append(Row("layer", layer, label, reps, period))
            nodes += _layer_nodes(cfg, layer, len(rows) - 1)
    rows.append(Row("output", None, "output"))
    out_row = len(rows) - 1
    nodes += [Node("lm_head", "logits", None, out_row, COL["mixer"], "head"),
              Node("next", "next", None, out_row, COL["experts"], "next")]
    lay = MapLayout(rows, nodes, [], groups)
    if cfg.attn_res == "standard":
        return lay
    S = cfg.attn_res_block_size if cfg.attn_res == "block" else 1
    n_sub = 2 * cfg.n_layers
    if not groups:  # drawn in full: one arc per source each layer's FFN sublayer reads (a superset of its mixer's)
        def y_of(first: int, last: int) -> float:  # where a source sits: the row of its last output
            return 0.0 if last < 0 else float(lay.row_of_layer(last // 2)) + (0.15 if last % 2 else -0.15)
        for layer in range(cfg.n_layers):
            row = lay.row_of_layer(layer)
            for name, first, last in sources_at(cfg.attn_res, 2 * layer + 1, S):
                lay.arcs.append(Arc(name, row, y_of(first, last), float(row)))
        for name, first, last in sources_at(cfg.attn_res, n_sub, S):
            lay.arcs.append(Arc(name, out_row, y_of(first, last), float(out_row)))
        return lay
    # collapsed: one node per source of the final mix (every block sum, or every output), spread down the lane
    finals = sources_at(cfg.attn_res, n_sub, S)
    span = out_row - 1
    for k, (name, first, last) in enumerate(finals):
        y = 0.0 if k == 0 else 0.5 + span * k / len(finals)
        what = ("the token embedding" if first < 0 else
                f"sublayers {first}-{last} = layers {first // 2}-{last // 2}")
        lay.block_nodes.append(Node("attn_res", "logits", None, -1, LANE, "", f"<b>{name}</b>: {what}", y))
        lay.arcs.append(Arc(name, out_row, y, float(out_row)))
    return lay


# ---------------------------------------------------------------------------------------- numbers
def _num_static(node: Node, an: Anatomy | None) -> str:
    if an is None:
        return ""
    part: PartNumbers | None
    if node.layer is not None:
        part = an.layers[node.layer].get(node.part)
    else:
        part = an.outside.get(node.part)
    if node.part == "latent_proj" and node.layer is not None:  # each side its own share (down at dispatch)
        part = an.latent_side(node.layer, "down" if node.stage == "experts" else "up")
    if part is None:
        return ""
    parts = [f"{fmt(part.params)} params"]
    if part.active != part.params:
        parts.append(f"{fmt(part.active)} active")
    moved = " + ".join(f"{fmt_bytes(v)} {k}" for k, v in part.bytes.items() if v)
    if moved:
        parts.append(f"per decoded token: {moved}")
    return "<br>".join(parts)


def _num_live(node: Node, trace: Trace | None, wire: float) -> str:
    """Numbers of this prompt's forward pass; `wire` = bytes one token moves per MoE layer (dispatch + combine)."""
    if trace is None:
        return ""
    if node.stage == "tokenize":
        return f"{len(trace.tokens)} byte tokens"
    if node.stage == "embed":
        return f"mean ‖v₀‖ {float(trace.embedding_norm.float().mean()):.2f}"
    if node.stage in ("logits", "next") or node.layer is None or node.layer >= trace.n_layers:
        return f"interconnect bytes per token, all layers: {fmt_bytes(trace.bytes_per_token(wire))}"
    lt = trace.layers[node.layer]
    cum = trace.bytes_cumulative(wire)[node.layer]
    if node.stage == "depth":
        return (f"mixer reads {len(lt.depth_sources_mixer)} sources, FFN {len(lt.depth_sources_ffn)}; "
                f"weight on the embedding {float(lt.depth_weights_mixer[0, :, 0].float().mean()):.2f}")
    if node.stage == "kda":
        return (f"‖S‖ at the last token {float(lt.kda_state_norm[0, -1].float().mean()):.2f} (mean over heads); "
                f"mean decay kept {float(lt.kda_decay.float().exp().mean()):.3f}")
    if node.stage == "mla":
        return f"mean top attention prob {float(lt.mla_attention[0].float().amax(-1).mean()):.2f}"
    if node.stage == "router":
        return f"max-violation {lt.load_max_violation:.2f}; load entropy {lt.load_entropy:.2f} nats"
    if node.stage in ("experts", "combine"):
        return f"{lt.dispatch_dim}-dim copies; bytes per token so far {fmt_bytes(cum)}"
    return f"mean ‖FFN out‖ {float(lt.ffn_out_norm[0].float().mean()):.2f}"


NAMES = {"attn_res": "depth mix (AttnRes)", "attention_kda": "KDA mixer", "attention_mla": "MLA mixer",
         "dense_ffn": "dense FFN", "router": "router", "routed_experts": "routed experts",
         "shared_experts": "shared experts", "tokens": "input bytes", "embedding": "embedding",
         "lm_head": "LM head", "next": "next token"}
SYMBOL = {"attn_res": "diamond", "attention_kda": "square", "attention_mla": "square", "dense_ffn": "square",
          "router": "circle", "routed_experts": "square", "shared_experts": "square", "tokens": "circle",
          "embedding": "square", "lm_head": "square", "next": "circle"}
COLOUR_OF = {"attn_res": "attnres", "attention_kda": "kda", "attention_mla": "mla", "dense_ffn": "dense",
             "router": "router", "routed_experts": "routed", "shared_experts": "shared", "tokens": "embedding",
             "embedding": "embedding", "lm_head": "head", "next": "head", "latent_proj": "latent"}


def _legend_name(node: Node) -> str:
    if node.part == "latent_proj":
        return "latent down (▼) / up (▲)"
    return NAMES[node.part]


def _title(cfg: K3Config, lay: MapLayout) -> str:
    types = cfg.layer_types()
    res = {"standard": "standard residual", "full": "full AttnRes",
           "block": f"block AttnRes (S = {cfg.attn_res_block_size} sublayers per block)"}[cfg.attn_res]
    return (f"{cfg.name}: {cfg.n_layers} layers ({types.count('kda')} KDA + {types.count('mla')} MLA)"
            f"<br>{res}")


# ------------------------------------------------------------------------------------------- figure
def _with_evidence(template: str, evidence: tuple[Evidence, ...]) -> str:
    """A hover template with one grey line per evidence class under it (k3lite.viz.evidence's line style)."""
    lines = "".join(f"<br><span style='color:{NEUTRAL}'>{ev.marker} {ev.kind}: "
                    f"{ev.source if len(ev.source) <= 90 else ev.source[:87] + '…'}</span>" for ev in evidence)
    return f"{template}{lines}<extra></extra>"


def architecture_map(cfg: K3Config, trace: Trace | None = None, anatomy: Anatomy | None = None,
                     highlight: tuple[str, int | None] | None = None, max_layer_rows: int = 16,
                     title: str | None = None, evidence: tuple[Evidence, ...] = ()) -> go.Figure:
    """The map of `cfg` as a plotly figure; `highlight` = (stage kind, layer) outlines that stage's nodes.

    One scatter trace per part (so the legend names them); each point's customdata is
    [stage kind, layer or -1, part]. Numbers: live from `trace`, static from `anatomy` (either or both).
    `evidence`: the classes of those numbers, one grey line each under every node's hover (live numbers are
    measured, the anatomy's derived: a map can carry both).
    """
    if trace is not None and trace.n_layers != cfg.n_layers:
        raise ValueError(f"trace has {trace.n_layers} layers but the config {cfg.name!r} has {cfg.n_layers}")
    lay = layout(cfg, max_layer_rows)
    wire = wire_bytes_per_token(cfg).total  # the reference deployment the MoE and forward-pass pages state
    fig = go.Figure()
    shapes: list[dict] = []  # collected and set once: add_shape re-validates every shape so far (quadratic)
    n_rows = len(lay.rows)
    # highlight band behind the current stage's row
    hl_rows = {n.row for n in lay.nodes if highlight and (n.stage, n.layer) == tuple(highlight)}
    for r in hl_rows:
        shapes.append(dict(type="rect", x0=LANE + 0.1, x1=BRACKET_X - 0.2, y0=r - 0.45, y1=r + 0.45,
                           layer="below", line=dict(width=0), fillcolor=color("baseline"), opacity=0.35))
    # residual stream: a plain line down the lane; the arcs of AttnRes bulge out to its left
    shapes.append(dict(type="line", x0=LANE, x1=LANE, y0=0, y1=n_rows - 1, layer="below",
                       line=dict(color=NEUTRAL, width=1.5)))
    # the arcs: one line trace (quadratic Beziers sampled, None between arcs) instead of a shape per arc,
    # which plotly validates one by one (Streamlit re-validates the figure on every render)
    arc_x: list[float | None] = []
    arc_y: list[float | None] = []
    for a in lay.arcs:
        ctrl_x = LANE - 0.35 - min(2.6, 0.22 * abs(a.y1 - a.y0) + 0.1)
        for k in range(ARC_POINTS + 1):
            t = k / ARC_POINTS
            arc_x.append((1 - t) ** 2 * LANE + 2 * t * (1 - t) * ctrl_x + t ** 2 * LANE)
            arc_y.append((1 - t) ** 2 * a.y0 + 2 * t * (1 - t) * (a.y0 + a.y1) / 2 + t ** 2 * a.y1)
        arc_x.append(None)
        arc_y.append(None)
    if lay.arcs:
        fig.add_scatter(x=arc_x, y=arc_y, mode="lines", name="residual sources (AttnRes)", hoverinfo="skip",
                        showlegend=False,  # one more legend row would squeeze the rows on a phone
                        line=dict(color=color("attnres"), width=1), opacity=0.5 if not lay.groups else 0.65)
    for first, period, reps in lay.groups:  # "x N" brackets on collapsed periods
        r0, r1 = lay.row_of_layer(first), lay.row_of_layer(first + period - 1)
        shapes.append(dict(type="path", path=f"M {BRACKET_X - 0.15},{r0 - 0.35} L {BRACKET_X},{r0 - 0.35} "
                                             f"L {BRACKET_X},{r1 + 0.35} L {BRACKET_X - 0.15},{r1 + 0.35}",
                           line=dict(color=NEUTRAL, width=1.5)))
        fig.add_annotation(x=BRACKET_X + 0.1, y=(r0 + r1) / 2, text=f"<b>× {reps}</b>", showarrow=False,
                           xanchor="left", font=dict(size=13),
                           hovertext=f"layers {first}-{first + period * reps - 1}: this period repeats {reps} times")
    # nodes, one trace per legend entry
    by_name: dict[str, list[Node]] = {}
    for node in lay.nodes + lay.block_nodes:
        by_name.setdefault(_legend_name(node), []).append(node)
    for name, nodes in by_name.items():
        xs, ys, texts, hovers, custom, symbols, widths = [], [], [], [], [], [], []
        for n in nodes:
            y = float(n.row) if n.y is None else n.y
            xs.append(n.x)
            ys.append(y)
            texts.append(n.label)
            where = "" if n.layer is None else f"layer {n.layer}"
            row = lay.rows[n.row] if n.row >= 0 else None
            if row is not None and row.repeat > 1:
                where += f" (and every {row.period}th layer after it: {row.repeat} layers drawn as one)"
            extra = [t for t in (n.hover, _num_live(n, trace, wire), _num_static(n, anatomy)) if t]
            what = "latent down-projection d→l" if (n.part, n.stage) == ("latent_proj", "experts") else (
                "latent up-projection l→d + combine" if n.part == "latent_proj" else NAMES[n.part])
            hovers.append("<br>".join([f"<b>{what}</b> {where}".strip(), *extra]))
            custom.append([n.stage, -1 if n.layer is None else n.layer, n.part])
            symbols.append("triangle-down" if (n.part, n.stage) == ("latent_proj", "experts") else
                           "triangle-up" if n.part == "latent_proj" else SYMBOL[n.part])
            on = highlight is not None and (n.stage, n.layer) == tuple(highlight) and n.row >= 0
            widths.append(HIGHLIGHT_LINE["width"] if on else 0)
        part = nodes[0].part
        big = part.startswith("attention_") or part in ("dense_ffn", "embedding", "lm_head", "tokens", "next")
        fig.add_scatter(
            x=xs, y=ys, mode="markers+text" if any(texts) else "markers", text=texts, name=name,
            textposition="middle center", textfont=dict(size=9, color=HIGHLIGHT_LINE["color"]),
            marker=dict(symbol=symbols, size=[BIG_MARKER if big and t else 14 for t in texts] if big else 14,
                        color=color(COLOUR_OF[part]), line=dict(width=widths, color=HIGHLIGHT_LINE["color"])),
            customdata=custom, hovertext=hovers, hoverinfo="text", cliponaxis=False,
            hovertemplate=_with_evidence("%{hovertext}", evidence) if evidence else None)
    # dense FFN is wider: it spans the MoE columns
    for n in lay.nodes:
        if n.part == "dense_ffn":
            shapes.append(dict(type="rect", x0=COL["router"] - 0.3, x1=COL["shared"] + 0.3, y0=n.row - 0.3,
                               y1=n.row + 0.3, line=dict(color=color("dense"), width=1), layer="below"))
    x_min = LANE - 3.1 if lay.arcs else LANE - 0.5
    fig.update_layout(
        shapes=shapes,
        title=dict(text=title if title is not None else _title(cfg, lay), font=dict(size=12)),
        height=50 + ROW_PX * n_rows + LEGEND_PX, margin=dict(l=10, r=10, t=50, b=10), plot_bgcolor="white",
        showlegend=True, legend=dict(orientation="h", y=-0.02, yanchor="top", font=dict(size=10),
                                     itemclick=False, itemdoubleclick=False),
        hovermode="closest", dragmode=False, clickmode="event+select",
        xaxis=dict(visible=False, range=[x_min, BRACKET_X + 0.9], fixedrange=True),
        yaxis=dict(autorange="reversed", tickmode="array", tickvals=list(range(n_rows)),
                   ticktext=[r.label for r in lay.rows], showgrid=False, zeroline=False, fixedrange=True,
                   tickfont=dict(size=10)),
    )
    return fig


def stage_index(stage_list, kind: str, layer: int | None) -> int:
    """Position in the forward-pass stage list (k3lite.viz.model.stages) of a map node's (stage kind, layer)."""
    for i, s in enumerate(stage_list):
        if s.kind == kind and s.layer == layer:
            return i
    raise ValueError(f"no forward-pass stage {kind!r} at layer {layer}")


def node_stage(stage_list, customdata) -> int:
    """The stage a clicked map node opens: its customdata is [stage kind, layer or -1, part]."""
    kind, layer, _ = customdata
    return stage_index(stage_list, kind, None if layer < 0 else int(layer))


def node_page(customdata) -> str:
    """The page a clicked map node opens (the url path of its part's page; the forward pass for any other)."""
    return PART_PAGE.get(customdata[2], "forward_pass")
