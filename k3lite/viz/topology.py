"""Dispatch and combine drawn on the topology: one token's copies over NVLink and the NIC (no Streamlit).

The picture the interconnect page opens on, in the architecture map's style (Plotly shapes, markers and arrow
annotations): the EP GPUs grouped in their NVLink domains (one 8-GPU node, 8 nodes of 8, or one 72-GPU NVL72
rack), the token's own GPU, the GPUs that hold its top-k experts for one seeded uniform routing draw, and an arrow
for every copy the chosen scheme sends, coloured by link (NVLink inside a domain, NIC between domains).

Where the numbers come from (none is recomputed here):
  the arrows        `k3lite.interconnect.link_copies` for the drawn token's routing (row = sender, column = receiver)
  the routing draw  `k3lite.interconnect.sample_uniform_routing` (seeded; node-limited routing when M > 0)
  the placement     `k3lite.interconnect.expert_to_gpu`
  the hop labels    `k3lite.interconnect.deployment_bytes` (= wire_bytes_per_token): bytes per copy and the
                    expected bytes per token on each link, dispatch out and combine back
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go

from k3lite.model.config import K3Config
from k3lite.interconnect import (
    SCHEME_LABELS, Deployment, WireBytes, deployment_bytes, expert_to_gpu, link_copies, sample_uniform_routing,
)
from k3lite.viz.style import HIGHLIGHT_LINE, LINK, NEUTRAL, color, fit_titles, fmt_bytes, translucent

DOMAINS_PER_ROW = 4  # 8 nodes of 8 -> two rows of four boxes


class TopologyDrawing(NamedTuple):
    """What the figure shows, for tests and the page's sentences."""

    wire: WireBytes  # deployment_bytes(cfg, dep): expected bytes per token per MoE layer
    experts: np.ndarray  # (k,) the drawn token's experts
    hops: dict[str, np.ndarray]  # link_copies(...) for that token: {phase: (G, G) copies}
    labels: dict[str, str]  # "nvlink" / "nic" -> the label drawn on that link kind


def hop_label(link: str, wire: WireBytes) -> str:
    """The label of one link kind: bytes per copy each way, and the expected bytes per token per layer on it
    (all from `wire`, i.e. deployment_bytes / wire_bytes_per_token)."""
    if link == "nvlink":
        out, back, copies = wire.dispatch_intra, wire.combine_intra, wire.copies.intra
    elif link == "nic":
        out, back, copies = wire.dispatch_inter, wire.combine_inter, wire.copies.inter
    else:
        raise ValueError(f"link must be 'nvlink' or 'nic', got {link!r}")
    name = "NVLink" if link == "nvlink" else "NIC"
    return (f"{name}: {copies:.2f} copies/token × {wire.dispatch_record} B out + {wire.combine_record} B back<br>"
            f"= {fmt_bytes(out)} + {fmt_bytes(back)} per token per MoE layer")


def draw_topology(cfg: K3Config, dep: Deployment, seed: int = 0) -> TopologyDrawing:
    """The drawing's numbers: expected bytes (library), one seeded token's experts and its copies per link."""
    moe = cfg.moe
    wire = deployment_bytes(cfg, dep)
    g, G = dep.gpus_per_domain, dep.ep_size
    topk = sample_uniform_routing(1, moe.n_routed_experts, moe.top_k, G, g, dep.node_limit, seed=seed,
                                  n_groups=moe.n_groups, topk_groups=moe.topk_groups)  # (1, k), the model's rule
    hops = link_copies(topk, np.array([0]), expert_to_gpu(moe.n_routed_experts, G), g, dep.scheme)
    labels = {link: hop_label(link, wire) for link in ("nvlink", "nic")}
    return TopologyDrawing(wire, topk[0], hops, labels)


def _grid(n: int) -> tuple[int, int]:
    """(columns, rows) of GPUs inside one domain box."""
    cols = 4 if n <= 8 else math.ceil(math.sqrt(n))
    return cols, math.ceil(n / cols)


NAME_STRIP = 0.8  # the strip at the bottom of each domain box that holds its name (above it, arrow heads covered it)
HEAD_SHAFT = 0.9  # a curved hop's head is drawn from this far back along the curve's end (data units, ~1 GPU)
ROW_GAP = 1.6  # between rows of domain boxes: where the hops to the next row run


def _box_size(cols: int, rows: int) -> tuple[float, float]:
    return cols + 1.0, rows + 1.0 + NAME_STRIP


def _hop(fig: go.Figure, a: np.ndarray, b: np.ndarray, box_top: float, row_gap_y: float, colour: str,
         width: float) -> tuple[float, float]:
    """The line of one copy from GPU `a` to GPU `b`, curved so it crosses no other GPU: to the same grid row, an arc
    over the row (higher the further it goes, so hops to several domains are told apart, not read as a chain through
    the nearest); to a lower row, out to the left of the source's box, along the gap between the rows and down into
    the receiver. Anything else (inside a domain, to a GPU diagonal of it) is straight. Returns the point the arrow
    head comes from (the curve's last tangent), so the head is drawn along the curve."""
    (x0, y0), (x1, y1) = a, b
    if abs(y1 - y0) < 1e-9 and abs(x1 - x0) > 1.5:  # same grid row, not adjacent: an arc over it
        lift = box_top - y0 + 0.35 * abs(x1 - x0) ** 0.5 if abs(x1 - x0) > 4 else 0.5 + 0.1 * abs(x1 - x0)
        c1, c2 = (x0, y0 + lift), (x1, y1 + lift)
    elif y1 < row_gap_y < y0:  # down to the next row of domains: left out of the box, along the gap, down into it
        c1, c2 = (x0 - 2.5, row_gap_y + 0.5), (x1, row_gap_y - 0.3)
    else:
        return x0, y0
    fig.add_shape(type="path", path=f"M {x0},{y0} C {c1[0]},{c1[1]} {c2[0]},{c2[1]} {x1},{y1}", layer="below",
                  line=dict(color=colour, width=width))
    tx, ty = c2[0] - x1, c2[1] - y1  # the curve ends heading from c2 to b: the head's short shaft lies on it
    norm = max(math.hypot(tx, ty), 1e-9)
    return x1 + HEAD_SHAFT * tx / norm, y1 + HEAD_SHAFT * ty / norm


def gpu_positions(dep: Deployment) -> np.ndarray:
    """(G, 2) x, y of each EP GPU: domains in rows of DOMAINS_PER_ROW boxes, GPUs in a grid inside each box."""
    g = dep.gpus_per_domain
    cols, rows = _grid(g)
    box_w, box_h = _box_size(cols, rows)
    pos = np.zeros((dep.ep_size, 2))
    for gpu in range(dep.ep_size):
        d, local = divmod(gpu, g)
        bx, by = (d % DOMAINS_PER_ROW) * (box_w + 1.2), -(d // DOMAINS_PER_ROW) * (box_h + 1.6)
        pos[gpu] = bx + 1 + local % cols, by - 1 - local // cols
    return pos


def topology_figure(cfg: K3Config, dep: Deployment, seed: int = 0, height: int | None = None) -> go.Figure:
    """One token's dispatch on `dep` (combine retraces every arrow backwards), hops coloured by link."""
    d = draw_topology(cfg, dep, seed)
    g, D, G = dep.gpus_per_domain, dep.n_domains, dep.ep_size
    pos = gpu_positions(dep)
    cols, rows = _grid(g)
    box_w, box_h = _box_size(cols, rows)
    fig = go.Figure()
    names = []
    for dom in range(D):  # the NVLink domains; each name in its box's bottom strip, drawn over any hop line
        bx, by = (dom % DOMAINS_PER_ROW) * (box_w + 1.2), -(dom // DOMAINS_PER_ROW) * (box_h + ROW_GAP)
        fig.add_shape(type="rect", x0=bx + 0.3, x1=bx + box_w - 0.3, y0=by - box_h + 0.3, y1=by - 0.3,
                      line=dict(color=LINK["nvlink"], width=2), fillcolor=translucent(LINK["nvlink"], 0.08), layer="below")
        names.append(dict(x=bx + box_w - 0.4, y=by - box_h + 0.35, text="NVLink domain" if D == 1 else f"node {dom}",
                          showarrow=False, xanchor="right", yanchor="bottom", font=dict(size=11, color=NEUTRAL)))
    expert_gpu = expert_to_gpu(cfg.moe.n_routed_experts, G)
    hit = np.zeros(G, dtype=int)
    np.add.at(hit, expert_gpu[d.experts], 1)
    kind = np.where(np.arange(G) == 0, "source", np.where(hit > 0, "hit", "idle"))
    styles = {"source": ("the token's GPU", color("active"), 16), "hit": ("holds ≥ 1 of its experts", color("routed"), 14),
              "idle": ("other EP GPUs", color("dense"), 10 if G > 16 else 12)}
    for k, (label, colour, size) in styles.items():
        sel = np.nonzero(kind == k)[0]
        fig.add_scatter(x=pos[sel, 0], y=pos[sel, 1], mode="markers", name=label,
                        marker=dict(symbol="square", size=size, color=colour,
                                    line=HIGHLIGHT_LINE if k == "source" else dict(width=0)),
                        customdata=np.stack([sel, hit[sel]], 1) if len(sel) else None,
                        hovertemplate="GPU %{customdata[0]}: %{customdata[1]} of the token's experts<extra></extra>")
    for link, phase in (("nvlink", "dispatch_intra"), ("nic", "dispatch_inter")):
        send, recv = np.nonzero(d.hops[phase])
        for s, r in zip(send, recv):
            n, width = int(d.hops[phase][s, r]), 2.5 if link == "nic" else 1.5
            top = -(s // g // DOMAINS_PER_ROW) * (box_h + ROW_GAP) - 0.3  # the sender's box top
            ax, ay = _hop(fig, pos[s], pos[r], top, top - box_h + 0.6 - ROW_GAP / 2, LINK[link], width)
            curved = (ax, ay) != tuple(pos[s])
            fig.add_annotation(x=pos[r, 0], y=pos[r, 1], ax=ax, ay=ay, xref="x", yref="y",
                               axref="x", ayref="y", showarrow=True, arrowhead=2, arrowsize=1, standoff=6,
                               startstandoff=0 if curved else 6, arrowwidth=width, arrowcolor=LINK[link],
                               text="", name=link,
                               hovertext=f"{'NVLink' if link == 'nvlink' else 'NIC'}: GPU {s} → GPU {r}, {n} "
                                         f"cop{'y' if n == 1 else 'ies'} of {d.wire.dispatch_record} B; combine "
                                         f"returns {n} × {d.wire.combine_record} B")
        # legend entries for the two link kinds, labelled with the expected bytes (library numbers)
        fig.add_scatter(x=[None], y=[None], mode="lines", line=dict(color=LINK[link], width=3), name=d.labels[link])
    for name in names:
        fig.add_annotation(**name)
    fig.update_xaxes(visible=False, scaleanchor="y", scaleratio=1)
    fig.update_yaxes(visible=False)
    n_rows = math.ceil(D / DOMAINS_PER_ROW)
    fig.update_layout(height=height or int(150 + 90 * n_rows * max(rows, 2) / 2 + 90), margin=dict(l=5, r=5, b=5),
                      hovermode="closest")
    return fit_titles(fig, f"One token, top-{cfg.moe.top_k} of {cfg.moe.n_routed_experts} experts on EP {G} "
                           f"({D} domain{'s' if D > 1 else ''} of {g}), {SCHEME_LABELS[dep.scheme]}", width=48)
