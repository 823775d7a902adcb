"""Figures for one training step's traffic (no Streamlit): take k3lite.analytic.training results, return plotly.

    training_bytes_figure   bytes per token by kind (EP forward, EP backward, PP, DP), one bar per variant: the step
                            as configured and with one of K3's ideas turned off (idea_variants)
    training_time_figure    GPU-µs per token: each kind on its links, the bubble, the compute, and the EP NIC bytes
                            at DeepEP's measured training-kernel bandwidth beside our link-peak time
    bubble_figure           the bubble's share of a step vs micro-batches, 1F1B / ZB1P / DualPipe
    boundary_figure         vectors per token across each stage boundary: standard, full and block AttnRes

Every trace's hover carries its evidence class (k3lite.viz.evidence.tag_trace).
"""
from __future__ import annotations

import plotly.graph_objects as go

from k3lite.analytic.training import SCHEDULES, StepTraffic, bubble_share
from k3lite.base.evidence import derived, measured_elsewhere
from k3lite.interconnect.deepep import SOURCE as DEEPEP_SOURCE
from k3lite.interconnect.pipeline import PipelineBytes
from k3lite.viz.evidence import tag_trace
from k3lite.viz.style import LINK, NEUTRAL, SERIES, bytes_axis, wrap

KIND_COLOURS = {"EP forward": LINK["nvlink"], "EP backward": SERIES[0], "PP": SERIES[1], "DP": SERIES[2]}
KIND_PATTERN = {"EP backward": dict(shape="x")}


def training_bytes_figure(variants: dict[str, StepTraffic]) -> go.Figure:
    """Stacked bars: bytes per token of one training step by kind, one bar per variant (the first as configured;
    the rest, ideas turned off, faded as counterfactuals)."""
    names = [wrap(n, 18) for n in variants]
    steps = list(variants.values())
    top = max((s.total_bytes for s in steps), default=1.0)
    title, div = bytes_axis("bytes per token, one training step", top)
    faded = [1.0] + [0.45] * (len(steps) - 1)  # counterfactuals: not a step anyone runs
    fig = go.Figure()
    for kind, colour in KIND_COLOURS.items():
        ys = [next(k.total for k in s.kinds if k.kind == kind) / div for s in steps]
        ev = steps[0].by_kind()[kind].evidence
        fig.add_bar(x=names, y=ys, name=kind, marker_color=colour, marker_pattern=KIND_PATTERN.get(kind, {}),
                    marker_opacity=faded,
                    hovertemplate=f"{kind}: %{{y:.3g}} {title.rsplit('(', 1)[1][:-1]}<extra></extra>")
        tag_trace(fig.data[-1], ev)
    fig.update_layout(barmode="stack", height=400, margin=dict(l=10, r=10, t=40, b=10), yaxis_title=title,
                      title=wrap(f"{steps[0].layout.name}: what each idea changes", 60))
    return fig


def training_time_figure(step: StepTraffic) -> go.Figure:
    """Horizontal bars, GPU-µs per token: each kind's link time, the bubble, the compute; a marker where the EP NIC
    bytes would land at DeepEP's measured EP 64 bandwidth."""
    rows = [(k.kind, k.seconds * 1e6, KIND_COLOURS[k.kind], k.evidence) for k in step.kinds]
    rows += [(f"bubble ({step.layout.schedule})", step.bubble_s * 1e6, NEUTRAL, step.evidence["bubble"]),
             ("compute (6 x active params)", step.compute_s * 1e6, SERIES[4], step.evidence["compute_s"])]
    fig = go.Figure()
    for name, us, colour, ev in rows:
        fig.add_bar(y=[name], x=[us], orientation="h", name=name, marker_color=colour, showlegend=False,
                    hovertemplate=f"{name}: %{{x:.1f}} GPU-µs / token<extra></extra>")
        tag_trace(fig.data[-1], ev)
    ep_nic_peak = sum(k.inter for k in step.kinds if k.kind.startswith("EP")) / step.layout.topology.inter_bw * 1e6
    fig.add_scatter(y=["EP forward"], x=[step.deepep_ep_inter_s * 1e6], mode="markers", name="DeepEP measured",
                    marker=dict(symbol="diamond", size=11, color=LINK["nic"]),
                    hovertemplate=(f"EP NIC bytes (fwd + bwd) at DeepEP's measured EP 64 bandwidth: %{{x:.1f}} "
                                   f"GPU-µs / token (at link peak: {ep_nic_peak:.1f})<extra></extra>"))
    tag_trace(fig.data[-1], measured_elsewhere(DEEPEP_SOURCE))
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=40, b=10), xaxis_title="GPU-µs per token",
                      title=wrap(f"{step.layout.name}: time per token", 60))
    return fig


def bubble_figure(pp: int, micro_batches: tuple[int, ...] = (8, 16, 32, 64, 120, 256),
                  chosen: int | None = None) -> go.Figure:
    """The bubble's share of one step vs micro-batches per step, one line per schedule."""
    fig = go.Figure()
    for i, sched in enumerate(SCHEDULES):
        if sched == "dualpipe" and pp % 2:
            continue
        ys = [100 * bubble_share(sched, pp, m) for m in micro_batches]
        fig.add_scatter(x=list(micro_batches), y=ys, mode="lines+markers", name=sched, line=dict(color=SERIES[i]),
                        hovertemplate=f"{sched}, %{{x}} micro-batches: %{{y:.1f}}% of the step<extra></extra>")
        tag_trace(fig.data[-1], derived(bubble_share))
    if chosen:
        fig.add_vline(x=chosen, line=dict(color=NEUTRAL, dash="dot"))
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10), xaxis=dict(title="micro-batches per step",
                      type="log"), yaxis_title="bubble, % of the step", title=f"pipeline bubble at PP {pp}")
    return fig


def boundary_figure(by_mode: dict[str, PipelineBytes]) -> go.Figure:
    """Vectors of d per token across each stage boundary, one line per residual (steps: the bank grows)."""
    fig = go.Figure()
    for i, (mode, pb) in enumerate(by_mode.items()):
        fig.add_scatter(x=[b.after_layer for b in pb.boundaries], y=[b.vectors for b in pb.boundaries],
                        mode="lines+markers", line=dict(shape="hv", color=SERIES[i]), name=mode,
                        hovertemplate=(f"{mode}: after layer %{{x}}, %{{y}} vectors of {pb.d_model} per token "
                                       f"each way<extra></extra>"))
        tag_trace(fig.data[-1], pb.evidence)
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10), xaxis_title="stage boundary after layer",
                      yaxis=dict(title="vectors per token (log)", type="log"),
                      title="what a stage boundary carries")
    return fig
