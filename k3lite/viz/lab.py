"""Figures for the lab page: training curves per mixer, and accuracy vs sequence length.

Plain functions: data in (the curve dicts of `k3lite.experiments.lab.LabResult`, or rows of
`k3lite.experiments.lab_sweep_aggregate.aggregate`), a plotly figure out, so they are tested without a browser.
"""
from __future__ import annotations

import altair as alt
import pandas as pd
import plotly.graph_objects as go

from k3lite.experiments.lab import MIXER_LABELS, MIXERS
from k3lite.experiments.lab_sweep_sentences import short_name
from k3lite.experiments.lab_state_jobs import Job


def run_name(run: dict) -> str:
    return Job(**run["job"]).name
from k3lite.viz.style import CONCEPT, fit_titles, fmt_bytes, translucent

# one colour per mixer, the same on every page (k3lite.viz.style)
COLORS = {m: CONCEPT[m] for m in MIXERS}


def smooth(values: list[float], window: int = 10) -> list[float]:
    """Trailing moving average (the raw per-batch curves are noisy at batch size 32)."""
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


def curves_figure(runs: dict[str, dict], metric: str = "acc", total_steps: int | None = None) -> go.Figure:
    """Training curves: `runs` maps mixer -> {"curve": {step, loss, acc}, "evals": {step, loss, acc}}.

    Lines are the smoothed training-batch metric; markers are held-out evaluations.
    """
    if metric not in ("acc", "loss"):
        raise ValueError(f"metric must be 'acc' or 'loss', got {metric!r}")
    fig = go.Figure()
    for mixer, run in runs.items():
        color = COLORS.get(mixer, CONCEPT["baseline"])
        label = MIXER_LABELS.get(mixer, mixer)
        curve = run.get("curve", {})
        scale = 100.0 if metric == "acc" else 1.0
        if curve.get("step"):
            fig.add_trace(go.Scatter(x=curve["step"], y=[scale * v for v in smooth(curve[metric])], mode="lines",
                                     name=label, line=dict(color=color), legendgroup=mixer))
        evals = run.get("evals", {})
        if evals.get("step"):
            fig.add_trace(go.Scatter(x=evals["step"], y=[scale * v for v in evals[metric]], mode="markers",
                                     name=f"{label} (held-out)", marker=dict(color=color, size=8),
                                     legendgroup=mixer, showlegend=False))
    ytitle = "accuracy on answer tokens (%)" if metric == "acc" else "loss on answer tokens (nats/token)"
    fig.update_layout(xaxis_title="training step", yaxis_title=ytitle, height=360,
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=-0.25))
    if total_steps:
        fig.update_xaxes(range=[0, total_steps])
    if metric == "acc":
        fig.update_yaxes(range=[0, 101])
    return fig


def sweep_figure(rows: list[dict], task: str) -> go.Figure:
    """Shipped sweep: held-out accuracy (%) vs length, one line per mixer (mean over seeds) with a band from the
    worst to the best seed. `rows` from `k3lite.experiments.lab_sweep_aggregate.aggregate`."""
    rows = sorted((r for r in rows if r["task"] == task), key=lambda r: r["seq_len"])
    mixers = sorted({r["mixer"] for r in rows}, key=lambda m: MIXERS.index(m) if m in MIXERS else 99)
    fig = go.Figure()
    for mixer in mixers:
        pts = [r for r in rows if r["mixer"] == mixer]
        xs = [r["seq_len"] for r in pts]
        color = COLORS.get(mixer, CONCEPT["baseline"])
        fig.add_trace(go.Scatter(x=xs + xs[::-1], y=[100 * r["max"] for r in pts] + [100 * r["min"] for r in pts][::-1],
                                 fill="toself", fillcolor=translucent(color, 0.18), line=dict(width=0, color=color), hoverinfo="skip",
                                 showlegend=False, legendgroup=mixer))
        fig.add_trace(go.Scatter(
            x=xs, y=[100 * r["mean"] for r in pts], mode="lines+markers", name=MIXER_LABELS.get(mixer, mixer),
            line=dict(color=color, width=2.5), legendgroup=mixer,
            customdata=[[r["n"], 100 * r["min"], 100 * r["max"], r["lr"]] for r in pts],
            hovertemplate="T=%{x}: mean %{y:.1f}% over %{customdata[0]} seeds (min %{customdata[1]:.1f}, "
                          "max %{customdata[2]:.1f}), lr %{customdata[3]}<extra>%{fullData.name}</extra>"))
    lengths = sorted({r["seq_len"] for r in rows})
    # the legend sits below, one mixer per line on a phone: 30 px more per mixer keeps the plot area from being
    # squeezed under its own axis title (six mixers with softmax attention overlapped the title at 390 px)
    n_mixers = len({r["mixer"] for r in rows if r["task"] == task})
    fig.update_layout(xaxis_title="sequence length (tokens)", yaxis_title="held-out accuracy (%)",
                      height=240 + 30 * max(n_mixers, 4), margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", y=-0.3))
    fig.update_xaxes(type="log", tickvals=lengths, ticktext=[str(t) for t in lengths])
    fig.update_yaxes(range=[0, 101])
    return fit_titles(fig, f"{task}: held-out accuracy vs length (band: worst to best seed)")


def state_figure(runs: list[dict], rows: list[dict]) -> go.Figure:
    """The lab's headline: held-out recall vs the memory one mixer layer keeps (log bytes). Every seed is a point
    (`runs`: records of `k3lite.experiments.lab_state`, lab init, each (mixer, head dim) at its chosen LR), the mean over seeds
    a line per mixer (`rows`: `k3lite.experiments.lab_state_aggregate.aggregate`). Softmax attention's points sit at
    its KV cache."""
    fig = go.Figure()
    mixers = [m for m in MIXERS if any(r["mixer"] == m for r in rows)]
    for i, mixer in enumerate(mixers):
        color = COLORS.get(mixer, CONCEPT["baseline"])
        label = MIXER_LABELS.get(mixer, mixer)
        pts = sorted((r for r in rows if r["mixer"] == mixer), key=lambda r: r["state_bytes"])
        seeds = [r for r in seed_runs(runs, rows) if r["job"]["mixer"] == mixer]
        # a small per-mixer offset along x so the seeds of mixers with the same state do not hide each other
        nudge = 1.0 + 0.035 * (i - (len(mixers) - 1) / 2) if mixer != "attention" else 1.0
        fig.add_trace(go.Scatter(
            x=[r["state_bytes"] * nudge for r in seeds], y=[100 * r["final_eval_acc"] for r in seeds], mode="markers",
            marker=dict(color=translucent(color, 0.55), size=7, line=dict(width=0)), legendgroup=mixer,
            showlegend=False, name=f"{label} (seeds)",
            customdata=[[r["job"]["head_dim"], r["job"]["seed"], r["job"]["lr"], r["steps_done"]] for r in seeds],
            hovertemplate="K=%{customdata[0]}, seed %{customdata[1]}: %{y:.1f}% (lr %{customdata[2]}, "
                          "%{customdata[3]} steps)<extra>" + label + "</extra>"))
        fig.add_trace(go.Scatter(
            x=[r["state_bytes"] * nudge for r in pts], y=[100 * r["mean"] for r in pts], mode="lines+markers",
            name=label, line=dict(color=color, width=2.5), marker=dict(size=9, symbol="diamond"), legendgroup=mixer,
            customdata=[[r["head_dim"], r["n"], 100 * r["std"], r["lr"]] for r in pts],
            hovertemplate="K=%{customdata[0]}: mean %{y:.1f}% ± %{customdata[2]:.1f} over %{customdata[1]} seeds "
                          "(lr %{customdata[3]})<extra>%{fullData.name}</extra>"))
    ticks = sorted({r["state_bytes"] for r in rows})
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.28),
                      xaxis=dict(title="memory per layer (fp32, log)", type="log",
                                 tickvals=ticks, ticktext=[fmt_bytes(t) for t in ticks]),
                      yaxis=dict(title="held-out recall (%)", range=[0, 102]))
    return fit_titles(fig, "MQAR recall vs memory size (points: seeds; lines: mean)")


def seed_runs(runs: list[dict], rows: list[dict]) -> list[dict]:
    """The runs the headline figure draws as points: exactly the runs behind `rows`
    (`lab_state_aggregate.aggregate`: lab init, the chosen LR, one run per seed, its longer-cap rerun where it has
    one)."""
    names = {n for r in rows for n in r["names"]}
    return [r for r in runs if run_name(r) in names]


def seed_explorer(runs: list[dict], rows: list[dict], pick: tuple[str, int] | None = None):
    """A linked pair (altair): on top, every seed's final held-out recall per (mixer, head dim); click a point and
    the lower chart shows that cell's seeds' held-out recall over training, one line per seed, so whether a number is
    flat or still rising at the step cap can be seen per seed. `pick` = the (mixer, head dim) shown first."""
    shown = seed_runs(runs, rows)
    if not shown:
        raise ValueError("seed_explorer needs at least one finished run at a chosen learning rate")
    finals = pd.DataFrame([{"mixer": short_name(r["job"]["mixer"]),
                            "K": r["job"]["head_dim"], "seed": r["job"]["seed"],
                            "recall": round(100 * r["final_eval_acc"], 2), "steps": r["steps_done"]} for r in shown])
    curves = pd.DataFrame([{"mixer": short_name(r["job"]["mixer"]), "K": r["job"]["head_dim"],
                            "seed": r["job"]["seed"], "step": step, "recall": round(100 * acc, 2)}
                           for r in shown for step, acc in zip(r["evals"]["step"], r["evals"]["acc"])])
    mixer, K = pick or (shown[0]["job"]["mixer"], shown[0]["job"]["head_dim"])
    cell = alt.selection_point(fields=["mixer", "K"], on="click", empty=False, name="cell",
                               value=[{"mixer": short_name(mixer), "K": K}])
    order = [short_name(m) for m in MIXERS if any(r["job"]["mixer"] == m for r in shown)]
    colour = alt.Color("mixer:N", scale=alt.Scale(domain=order, range=[COLORS.get(m, CONCEPT["baseline"]) for m in MIXERS
                                                                       if short_name(m) in order]),
                       legend=alt.Legend(orient="bottom", columns=3, title=None))
    left = alt.Chart(finals).mark_circle(size=70).encode(
        x=alt.X("K:O", title="head dim K", axis=alt.Axis(labelAngle=0)), xOffset="mixer:N",
        y=alt.Y("recall:Q", title="final held-out recall (%)", scale=alt.Scale(domain=[0, 100])),
        color=colour, opacity=alt.condition(cell, alt.value(1.0), alt.value(0.35)),
        tooltip=["mixer", "K", "seed", "recall", "steps"],
    ).add_params(cell).properties(width=340, height=260, title="every seed (click a point)")
    right = alt.Chart(curves).mark_line(point=True).encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("recall:Q", title="held-out recall (%)", scale=alt.Scale(domain=[0, 100])),
        detail="seed:N", color=colour, tooltip=["mixer", "K", "seed", "step", "recall"],
    ).transform_filter(cell).properties(width=340, height=260, title="that cell's seeds over training")
    return alt.vconcat(left, right).resolve_scale(color=alt.ResolveMode("shared"))  # stacked: fits a phone as well as a desktop
