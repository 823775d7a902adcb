"""Figures for the serving page (no Streamlit): take k3lite.analytic.serving results (its step, compare and frontier modules), return figures."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from k3lite.analytic.hardware import GPUS, gpu_label
from k3lite.viz.evidence import tag_trace
from k3lite.viz.style import (
    CONCEPT, HIGHLIGHT_LINE, HIGHLIGHT_MARKER, LINK, NEUTRAL, bytes_axis, fit_titles, log_axis, log_vline, series_color,
    translucent, wrap,
)

COMPONENT_COLOUR = {"routed_experts": CONCEPT["routed"], "attention": CONCEPT["attn"], "shared": CONCEPT["shared"],
                    "embeddings": CONCEPT["embedding"], "other": CONCEPT["router"]}
_LAYOUT = dict(margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.25))


def _short(v: float) -> str:
    """A tick label: 0.2, 5, 20, 1k, 2k, 50k, 1M (SI, no trailing zeros)."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if v >= scale:
            return f"{v / scale:g}{suffix}"
    return f"{v:g}"


def log_axis_125(title: str, values, max_labels: int = 7) -> dict:
    """style.log_axis with labelled ticks at 1-2-5 x 10^k inside the data's span, so an axis that spans less than a
    decade or two (the frontier at 1M context) still reads: 1-2-5 where 3 to `max_labels` of them fall in the span
    (a phone's width holds about 7), 1-2-3-5 or 1-1.5-2-3-4-5-7 on a narrower span, 1-3 or decades on a wider one. Explicit tickvals: the style check accepts them."""
    vs = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vs:
        return log_axis(title)
    lo, hi = math.log10(min(vs)), math.log10(max(vs))

    def at(steps) -> list[float]:
        return [m * 10 ** k for k in range(math.floor(lo) - 1, math.ceil(hi) + 1) for m in steps
                if lo - 0.05 <= math.log10(m * 10 ** k) <= hi + 0.05]

    # 1-2-5 first; denser where that leaves fewer than 3 labels (a span under a decade), sparser where it crowds
    options = [at(s) for s in ((1, 2, 5), (1, 2, 3, 5), (1, 1.5, 2, 3, 4, 5, 7), (1, 3), (1,))]
    ticks = next((o for o in options[:3] if 3 <= len(o) <= max_labels), None) \
        or next((o for o in options[3:] if len(o) <= max_labels), None) \
        or options[-1][::max(1, math.ceil(len(options[-1]) / max_labels))]  # every other decade or sparser
    if len(options[2]) < 3:  # a span too narrow for three even of the densest: the ends and the (geometric) middle,
        #                        rounded to two figures (a request price dominated by a 1M-token prefill spans 1.5x)
        ticks = sorted({float(f"{v:.2g}") for v in (min(vs), math.sqrt(min(vs) * max(vs)), max(vs))})
    return {**log_axis(title), "tickvals": ticks, "ticktext": [_short(v) for v in ticks]}


def placement_figure(by_component: Mapping[str, float], cache_bytes: float, hbm_bytes: float, title: str) -> go.Figure:
    """One GPU's HBM: weights per component, the cache of the batch, the rest free; a line at capacity."""
    top = max(hbm_bytes, sum(by_component.values()) + cache_bytes)
    axis, div = bytes_axis("bytes per GPU", top)
    fig = go.Figure()
    for comp, b in by_component.items():
        if b > 0:
            fig.add_bar(x=[b / div], y=["HBM"], orientation="h", name=comp.replace("_", " "),
                        marker_color=COMPONENT_COLOUR[comp], hovertemplate="%{x:.1f}<extra>" + comp + "</extra>")
    fig.add_bar(x=[cache_bytes / div], y=["HBM"], orientation="h", name="KV cache / state of the batch",
                marker_color=LINK["hbm_cache"])
    fig.add_vline(x=hbm_bytes / div, line=HIGHLIGHT_LINE, annotation_text="HBM capacity")
    fig.update_layout(barmode="stack", height=260, title=title, xaxis_title=axis, yaxis=dict(visible=False),
                      margin=_LAYOUT["margin"], legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0.3))
    return fig


def step_figure(hbm_s: float, compute_s: float, wire_s: float, step_s: float, overlap: bool) -> go.Figure:
    """The three terms of one decode step and the step time they give (max with overlap, max + wire without)."""
    names = ["HBM reads", "compute", "dispatch + combine", "step"]
    vals = [hbm_s, compute_s, wire_s, step_s]
    colours = [LINK["hbm_weights"], LINK["compute"], LINK["nic"], NEUTRAL]
    fig = go.Figure(go.Bar(x=[v * 1e3 for v in vals], y=names, orientation="h", marker_color=colours,
                           text=[f"{v * 1e3:.1f} ms" for v in vals], textposition="auto"))
    rule = "max of the three (full overlap)" if overlap else "max(HBM, compute) + wire (no overlap)"
    fig.update_layout(height=240, title=f"One decode step: {rule}", xaxis_title="time (ms)", **_LAYOUT)
    return fig


def pareto_figure(per_user: Sequence[float], per_gpu: Sequence[float], batches: Sequence[int],
                  chosen: tuple[float, float] | None = None) -> go.Figure:
    """Throughput (tokens/s per GPU) vs interactivity (tokens/s per user), one point per batch size."""
    fig = go.Figure(go.Scatter(x=list(per_user), y=list(per_gpu), mode="lines+markers", name="batch 1 .. max",
                               line=dict(color=CONCEPT["hybrid"]), customdata=list(batches),
                               hovertemplate="batch %{customdata}: %{x:.1f} tok/s/user, %{y:,.0f} tok/s/GPU<extra></extra>"))
    if chosen:
        fig.add_scatter(x=[chosen[0]], y=[chosen[1]], mode="markers", name="your batch",
                        marker=HIGHLIGHT_MARKER)
    fig.update_layout(height=380, xaxis=log_axis_125("tokens/s per user", [*per_user, chosen and chosen[0]]),
                      yaxis=log_axis_125("tokens/s per GPU", [*per_gpu, chosen and chosen[1]]), **_LAYOUT)
    fit_titles(fig, "Throughput vs interactivity (each point a batch size)")  # wrapped for phone width
    return fig


def capacity_figure(contexts: Sequence[int], series: Mapping[str, Sequence[int]]) -> go.Figure:
    colours = [CONCEPT["hybrid"], CONCEPT["mla"], CONCEPT["attention"]]
    fig = go.Figure()
    for (name, ys), colour in zip(series.items(), colours):
        fig.add_scatter(x=list(contexts), y=[max(y, 0.5) for y in ys], mode="lines+markers", name=name,
                        line=dict(color=colour), customdata=list(ys),
                        hovertemplate="%{x:,} tokens: %{customdata} sequences<extra>" + name + "</extra>")
    fig.update_layout(height=360, title="Concurrent sequences per GPU (0 drawn at 0.5)",
                      xaxis=log_axis("context (tokens)"), yaxis=log_axis("sequences that fit"), **_LAYOUT)
    return fig


def waterfall_figure(labels: Sequence[str], usd: Sequence[float]) -> go.Figure:
    """$ per M output tokens: the classic design, then each choice's change, then K3."""
    deltas = [usd[0]] + [b - a for a, b in zip(usd, usd[1:])]
    fig = go.Figure(go.Waterfall(x=list(labels) + ["K3"], y=deltas + [usd[-1]],
                                 measure=["absolute"] + ["relative"] * (len(usd) - 1) + ["total"],
                                 text=[f"${usd[0]:.3f}"] + [f"{d:+.3f}" for d in deltas[1:]] + [f"${usd[-1]:.3f}"],
                                 textposition="outside",
                                 increasing=dict(marker=dict(color=LINK["nic"])),
                                 decreasing=dict(marker=dict(color=CONCEPT["kda"])),
                                 totals=dict(marker=dict(color=NEUTRAL))))
    fig.update_layout(height=380, yaxis_title="$ / M output tokens", showlegend=False, margin=_LAYOUT["margin"],
                      xaxis=dict(automargin=True))
    return fit_titles(fig, "$ per million output tokens, one design choice at a time")


def gpus_for_weights_figure(formats: Sequence[str], gpus: Sequence[float], claim: float, gpu: str) -> go.Figure:
    fig = go.Figure(go.Bar(x=list(formats), y=list(gpus), marker_color=CONCEPT["routed"], showlegend=False,
                           text=[f"{g:.1f}" for g in gpus], textposition="outside"))
    # the claim's line is named in the legend: its label written on the line ran through the bars' value labels
    fig.add_hline(y=claim, line=HIGHLIGHT_LINE)
    fig.add_scatter(x=[None], y=[None], mode="lines", line=HIGHLIGHT_LINE, name=f"the seed: 'roughly six {gpu}s'")
    fig.update_layout(height=320, yaxis_title="GPUs", xaxis_title="storage format of every weight",
                      margin=_LAYOUT["margin"])
    return fit_titles(fig, f"{gpu} GPUs' worth of HBM for the weights alone")


def validation_figure(labels: Sequence[str], measured: Sequence[float], model: Sequence[float]) -> go.Figure:
    fig = go.Figure()
    labels = [wrap(label, 18) for label in labels]  # long setups ran past the figure's edge at 390 px
    fig.add_bar(x=labels, y=list(measured), name="published measurement", marker_color=CONCEPT["published"])
    fig.add_bar(x=labels, y=list(model), name="this model (upper bound)", marker_color=CONCEPT["hybrid"])
    fig.update_layout(barmode="group", height=360, yaxis_title="tokens/s per GPU", **_LAYOUT)
    fig.update_xaxes(automargin=True, tickangle=0)
    return fit_titles(fig, "Decode tokens/s per GPU: published vs model")


def frontier_figure(points: Sequence, envelope: Sequence, by_gpu: Mapping[str, Sequence], speed: float,
                    chosen=None) -> go.Figure:
    """The speed-price frontier (k3lite.analytic.serving.frontier): every setup (GPU, EP, formats) as a faint line
    through its batch sizes, each GPU's envelope as its line, the overall envelope as a wide grey band under them, a
    vertical line at the speed asked about and a ring on the cheapest point at that speed. x: tokens/s per user,
    y: $ per M output tokens, both log.

    The setups are lines, not ~900 separate markers: one path per setup draws in a fraction of the time (the
    markers were ~0.3 s of the page's first chart in the browser), and a line shows the batch trade-off directly."""
    fig = go.Figure()
    hover = ("%{customdata[0]}<br>%{x:.1f} tok/s/user, $%{y:.3f}/M tokens (input + output), %{customdata[1]:,.0f} tok/s/GPU, "
             "%{customdata[2]}-bound<extra></extra>")

    def data(ps):
        return dict(x=[p.tokens_per_s_per_user for p in ps], y=[p.usd_per_m for p in ps],
                    customdata=[[p.label, p.tokens_per_s_per_gpu, p.bound] for p in ps], hovertemplate=hover)

    fig.add_scatter(**data(envelope), mode="lines", name="cheapest of all", line=dict(color=NEUTRAL, width=10),
                    opacity=0.35)
    for gpu, own in by_gpu.items():
        colour = series_color(list(GPUS).index(gpu) if gpu in GPUS else len(GPUS))  # a GPU keeps its colour; yours the next
        setups: dict[tuple, list] = {}
        for p in points:
            if p.gpu == gpu:
                setups.setdefault((p.ep, p.tp, p.formats, p.cache, p.speculative), []).append(p)
        runs = [sorted(ps, key=lambda p: p.batch_per_gpu) for ps in setups.values()]
        lines, dots = [ps for ps in runs if len(ps) > 1], [ps[0] for ps in runs if len(ps) == 1]
        if lines:  # one trace per GPU, each setup a separate stretch of it (None breaks the line)
            parts = [data(ps) for ps in lines]
            d = {k: [v for part in parts for v in [*part[k], None]][:-1] for k in ("x", "y", "customdata")}
            fig.add_scatter(**d, hovertemplate=hover, mode="lines", name=f"{gpu}: every setup", legendgroup=gpu, showlegend=False,
                            connectgaps=False, line=dict(color=translucent(colour, 0.3), width=1))
        if dots:  # a setup with one batch size that fits has no line to draw
            fig.add_scatter(**data(dots), mode="markers", name=f"{gpu}: every setup", legendgroup=gpu,
                            showlegend=False, marker=dict(color=translucent(colour, 0.3), size=4))
        fig.add_scatter(**data(own), mode="lines+markers", name=gpu_label(gpu), legendgroup=gpu,
                        line=dict(color=colour, width=2), marker=dict(color=colour, size=5))
    log_vline(fig, speed, line=dict(color=NEUTRAL, dash="dot"), annotation_text=f"{speed:.0f} tok/s/user")
    if chosen is not None:
        fig.add_scatter(x=[chosen.tokens_per_s_per_user], y=[chosen.usd_per_m], mode="markers",
                        name="cheapest at that speed", marker=HIGHLIGHT_MARKER,
                        customdata=[[chosen.label, chosen.tokens_per_s_per_gpu, chosen.bound]], hovertemplate=hover)
    xs = [p.tokens_per_s_per_user for p in points] + [speed]
    fig.update_layout(height=460, xaxis=log_axis_125("tokens/s per user (interactivity)", xs),
                      yaxis=log_axis_125("$ per M tokens, input + output", [p.usd_per_m for p in points]),
                      **_LAYOUT)
    return fit_titles(fig, "Speed vs price: every GPU, format, EP and TP size (lower right is better)")


def price_ratio_figure(labels: Sequence[str], ratios: Sequence[float]) -> go.Figure:
    """$ per M output / $ per M input: the first bar derived from serving physics, the rest list prices."""
    x = [wrap(label, 18) for label in labels]
    fig = go.Figure()  # two traces: the derived bar and the list prices carry different evidence in their hovers
    for name, xs, ys, colour in (("this deployment, at cost", x[:1], ratios[:1], CONCEPT["hybrid"]),
                                 ("list prices", x[1:], ratios[1:], CONCEPT["published"])):
        fig.add_bar(x=xs, y=list(ys), name=name, marker_color=colour, text=[f"{r:.1f}x" for r in ys],
                    textposition="outside", hovertemplate="%{x}: %{y:.2f}x<extra></extra>")
    fig.update_layout(height=320, yaxis_title="output price / input price", showlegend=False, margin=_LAYOUT["margin"])
    fig.update_xaxes(automargin=True, tickangle=0)
    return fit_titles(fig, "How many input tokens one output token costs")


def prediction_figure(rows: Sequence[dict]) -> go.Figure:
    """Published K3 runs, measured (x) against predicted (y), time per output token and time to first token side by
    side, log-log (fit.checked's rows). Filled: the prediction (leave-one-out for the fitted runs); open: step.py's
    roofline bound for the same run, faint; the diagonal is a perfect prediction, the dotted lines +-25%. TTFT is
    drawn only where the runs' arrivals are known (SGLang's waves); held-out runs (another GPU) in their own colour."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(wrap("time per output token (ms)", 16), wrap("time to first token (s)", 16)),
                        horizontal_spacing=0.12)
    panels = (("TPOT (ms)", lambda r: True), ("TTFT (s)", lambda r: r["TTFT scored"]))
    groups = (("fitted (B300)", lambda r: r["fitted"], CONCEPT["hybrid"]),
              ("held out (other GPU)", lambda r: not r["fitted"], CONCEPT["mla"]))
    for col, (unit, shown) in enumerate(panels, start=1):
        kept = [r for r in rows if shown(r)]
        lo = min(min(r[f"measured {unit}"], r[f"bound {unit}"]) for r in kept) / 1.5
        hi = max(max(r[f"measured {unit}"], r[f"predicted {unit}"]) for r in kept) * 1.5
        for factor, dash in ((1.0, "solid"), (1.25, "dot"), (0.75, "dot")):
            fig.add_scatter(x=[lo, hi], y=[lo * factor, hi * factor], mode="lines", showlegend=False, hoverinfo="skip",
                            line=dict(color=NEUTRAL, width=1, dash=dash), row=1, col=col)
        for name, member, colour in groups:
            group = [r for r in kept if member(r)]
            if not group:
                continue
            text = [f"{r['row']}<br>measured {r[f'measured {unit}']:.3g}, predicted {r[f'predicted {unit}']:.3g}, "
                    f"bound {r[f'bound {unit}']:.3g}" for r in group]
            fig.add_scatter(x=[r[f"measured {unit}"] for r in group], y=[r[f"bound {unit}"] for r in group],
                            mode="markers", name="roofline bound", legendgroup="bound", showlegend=col == 1 and
                            member is groups[0][1], marker=dict(symbol="circle-open", color=NEUTRAL, size=7),
                            opacity=0.5, text=text, hovertemplate="%{text}<extra>bound</extra>", row=1, col=col)
            fig.add_scatter(x=[r[f"measured {unit}"] for r in group], y=[r[f"predicted {unit}"] for r in group],
                            mode="markers", name=f"predicted, {name}", legendgroup=name, showlegend=col == 1,
                            marker=dict(color=colour, size=9), text=text,
                            hovertemplate="%{text}<extra>predicted</extra>", row=1, col=col)
        span = [math.log10(lo), math.log10(hi)]
        fig.update_xaxes(**log_axis("measured"), range=span, row=1, col=col)
        fig.update_yaxes(**log_axis("ours"), range=span, row=1, col=col)
    fig.update_layout(height=380, **_LAYOUT)
    return fit_titles(fig, "Published K3 runs: measured vs predicted")


def providers_figure(envelope, providers, speed: float, provider_usd: Sequence[float]) -> go.Figure:
    """What providers charge for K3 against the self-hosted frontier's cheapest setups (`envelope`: FrontierPoints),
    on the frontier's axes, both $ per M tokens at the frontier's request shape, input and output (`provider_usd`: each
    provider's, in order): a provider with a speed is a point, one without (none of the cited publishes one) a dashed
    line across, providers at one price sharing it."""
    fig = go.Figure()
    xs = [p.tokens_per_s_per_user for p in envelope]
    fig.add_scatter(x=xs, y=[p.usd_per_m for p in envelope], mode="lines", name="self-hosted: cheapest",
                    line=dict(color=NEUTRAL, width=4), customdata=[[p.label] for p in envelope],
                    hovertemplate="%{x:.0f} tok/s per user: $%{y:.3f} per M (%{customdata[0]})<extra></extra>")
    timed = [p for p in providers if p.tokens_per_s is not None]
    lo, hi = min(xs + [speed] + [p.tokens_per_s for p in timed]), max(xs + [speed] + [p.tokens_per_s for p in timed])
    prices: dict[float, list] = {}
    usd_of = dict(zip(providers, provider_usd))
    for p in providers:
        if p.tokens_per_s is None:
            prices.setdefault(usd_of[p], []).append(p)
    for i, (usd, group) in enumerate(sorted(prices.items())):
        names = ", ".join(p.name for p in group)
        fig.add_scatter(x=[lo, hi], y=[usd, usd], mode="lines", name=f"{names}: ${usd:.3f}",
                        line=dict(color=series_color(i + 1), dash="dash", width=2),
                        hovertemplate=f"{names}: ${usd:.3f} per M tokens, speed not published<extra></extra>")
        tag_trace(fig.data[-1], group[0].evidence)  # a cited price, not the frontier's derivation
    for p in timed:
        fig.add_scatter(x=[p.tokens_per_s], y=[usd_of[p]], mode="markers+text", name=p.name, text=[p.name],
                        textposition="top center", marker=dict(color=series_color(len(prices) + 1), size=10,
                                                               symbol="diamond"),
                        hovertemplate=f"{p.name}: ${usd_of[p]:.3f} per M tokens at %{{x:.0f}} tok/s<extra></extra>")
        tag_trace(fig.data[-1], p.evidence)
    log_vline(fig, speed, line=dict(color=NEUTRAL, dash="dot"), annotation_text=f"{speed:.0f} tok/s/user")
    ys = [p.usd_per_m for p in envelope] + list(provider_usd)
    y_axis = {**log_axis_125("$ per M tokens, input + output", ys),  # headroom: the speed's label sits above the top line
              "range": [math.log10(0.8 * min(ys)), math.log10(2.0 * max(ys))]}
    fig.update_layout(height=360, xaxis=log_axis_125("tokens/s per user", xs + [lo, hi]), yaxis=y_axis, **_LAYOUT)
    return fit_titles(fig, "Providers' price against the self-hosted cost")
