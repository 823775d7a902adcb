"""KDA's state written and decayed token by token, from the TRAINED lite checkpoint (no Streamlit).

`trained_kda_run` feeds a prompt through the trained lite model, takes the exact input one of its KDA layers sees
(a forward pre-hook on that layer's mixer: the normed residual stream, after Attention Residuals' depth mix), and
runs the readable token-by-token recurrence (`k3lite.model.kda.kda_trajectory`, i.e. `gated_delta_step`) on that layer's
own q, k, v, decay and beta, keeping every state S_t.

`state_animation` draws those states as a Plotly animation that plays in the browser (frames + play button +
slider, no server round trip per step): the state S_t (K x V) beside what step t writes along k_t (the delta
rule's correction, times beta) against the new value v_t.
"""
from __future__ import annotations


from typing import NamedTuple, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from k3lite.model.kda import kda_trajectory
from k3lite.model.trace import own_inputs
from k3lite.viz.style import CONCEPT, DIVERGING_SCALE

MAX_FRAMES = 128  # tokens animated: each frame carries one K x V state (128 x 32 x 32 numbers ~ 1 MB of JSON)


class KDARun(NamedTuple):
    """One head-agnostic run of a KDA layer on one input: arrays are numpy, batch dimension dropped."""

    layer: int  # index of the layer in the model
    a: np.ndarray  # (T, H, K) per-channel decay exp(g_t)
    beta: np.ndarray  # (T, H) write strength
    v: np.ndarray  # (T, H, V) new values
    states: np.ndarray  # (T, H, K, V) S_t after step t
    correction: np.ndarray  # (T, H, V) v_t - S'^T k_t
    norm: np.ndarray  # (T, H) ||S_t||_F


def kda_layers(model) -> list[int]:
    """Indices of the model's KDA layers."""
    return [i for i, layer in enumerate(model.layers) if layer.mixer_type == "kda"]


def layer_input(model, tokens: torch.Tensor, layer: int) -> torch.Tensor:
    """The input (B, T, d_model) the mixer of `layer` receives when the model runs on `tokens`."""
    if layer not in kda_layers(model):
        raise ValueError(f"layer must be one of the KDA layers {kda_layers(model)}, got {layer}")
    with own_inputs({layer: model.layers[layer].mixer}) as seen, torch.inference_mode():
        model(tokens)
    return seen[layer][0].clone()  # clone: leave inference mode


def run_kda_layer(mixer, x: torch.Tensor, layer: int = -1) -> KDARun:
    """The readable recurrence on `mixer`'s own inputs for x (1, T, d_model), every state kept."""
    with torch.inference_mode():
        inp = mixer.kernel_inputs(x)
        traj = kda_trajectory(inp.q, inp.k, inp.v, inp.g, inp.beta, keep_states=True)
    return KDARun(layer, inp.g.exp()[0].numpy(), inp.beta[0].numpy(), inp.v[0].float().numpy(),
                  traj.states[0].numpy(), traj.correction[0].numpy(), traj.state_norm[0].numpy())


def trained_kda_run(model, ids: Sequence[int], layer: int) -> KDARun:
    """The trained model's KDA layer `layer` on the byte ids of a prompt, with the input it really sees."""
    x = layer_input(model, torch.tensor([list(ids)]), layer)
    return run_kda_layer(model.layers[layer].mixer, x, layer)


# the animation's frame in px: the bands under the plot (top, bottom) hold, in turn, the x axes' ticks and titles,
# play / pause, the token slider with its ticks, and the figure's title; the margin below holds them all
ANIMATION_HEIGHT = 600
ANIMATION_MARGIN = dict(l=10, r=10, t=80, b=235)
CONTROL_BANDS = {"axis titles": (0, 50), "buttons": (58, 92), "slider": (100, 160), "title": (170, 190)}


def state_animation(states: np.ndarray, correction: np.ndarray, v: np.ndarray, beta: np.ndarray,
                    labels: Sequence[str], title: str = "") -> go.Figure:
    """Frames of one head: S_t (K x V heatmap, one colour scale for all t) beside beta_t * correction_t and v_t.

    states (T, K, V), correction (T, V), v (T, V), beta (T,). At most MAX_FRAMES frames (the first tokens).
    Frame t's heatmap z is states[t] exactly; play / pause and the slider run in the browser.
    """
    # float32, the layer's own precision: each frame's numbers are sent as 4 bytes, not 8 (half the figure)
    states, correction, v, beta = (np.asarray(x, dtype=np.float32) for x in (states, correction, v, beta))
    T = min(len(states), MAX_FRAMES)
    if T < 1:
        raise ValueError("state_animation needs at least one token")
    lim = float(np.percentile(np.abs(states[:T]), 99.5)) or 1.0  # a few outliers would wash out the rest
    bar_lim = float(max(np.abs(v[:T]).max(), np.abs(beta[:T, None] * correction[:T]).max())) or 1.0
    dims = list(range(v.shape[1]))

    def traces(t: int) -> list:
        return [go.Heatmap(z=states[t], zmin=-lim, zmax=lim, colorscale=DIVERGING_SCALE,
                           colorbar=dict(title="S", x=1.0, xanchor="left", thickness=10, len=0.9),
                           hovertemplate="key channel %{y}<br>value dim %{x}<br>S = %{z:.3f}<extra></extra>"),
                go.Bar(x=dims, y=v[t], name="v_t: the new value", marker_color=CONCEPT["baseline"]),
                go.Bar(x=dims, y=beta[t] * correction[t], name="β_t (v_t − S'ᵀk_t): what is written",
                       marker_color=CONCEPT["correction"])]

    def caption(t: int) -> str:
        rel = np.linalg.norm(correction[t]) / max(np.linalg.norm(v[t]), 1e-9)
        return f"token {t} {labels[t]!r}: β = {beta[t]:.2f}, ‖correction‖/‖v‖ = {rel:.2f}"

    fig = make_subplots(rows=1, cols=2, column_widths=[0.55, 0.45], horizontal_spacing=0.12,
                        subplot_titles=("state S_t", "written at step t"))
    for i, tr in enumerate(traces(0)):
        fig.add_trace(tr, 1, 1 if i == 0 else 2)
    # the frames as plain dicts, added without plotly's per-property validation (0.3 s for 47 frames, most of a
    # control's rerun): only the numbers change from frame to frame, and the first frame was validated above
    frames = [dict(data=[dict(type="heatmap", z=states[t]), dict(type="bar", y=v[t]),
                         dict(type="bar", y=beta[t] * correction[t])],
                   traces=[0, 1, 2], name=str(t), layout=dict(title=dict(text=caption(t)))) for t in range(T)]
    step = dict(frame=dict(duration=250, redraw=True), transition=dict(duration=0), mode="immediate")
    # the controls stacked under the axis titles, each in its own band (CONTROL_BANDS, px below the plot): side by
    # side, at 390 px the pause button sat on the slider's start and the play button under "value dim"
    plot_h = ANIMATION_HEIGHT - ANIMATION_MARGIN["t"] - ANIMATION_MARGIN["b"]
    fig.update_layout(
        title=dict(text=caption(0), font=dict(size=13)), barmode="overlay", height=ANIMATION_HEIGHT,
        margin=ANIMATION_MARGIN,
        updatemenus=[dict(type="buttons", direction="left", x=0.0, y=-CONTROL_BANDS["buttons"][0] / plot_h,
                          xanchor="left", yanchor="top", showactive=False, pad=dict(t=0, r=6),
                          buttons=[dict(label="▶ play", method="animate", args=[None, dict(step, fromcurrent=True)]),
                                   dict(label="❚❚", method="animate",
                                        args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate")])])],
        sliders=[dict(active=0, x=0.0, len=1.0, y=-CONTROL_BANDS["slider"][0] / plot_h, yanchor="top", pad=dict(t=0),
                      currentvalue=dict(visible=False),  # the title names the token
                      steps=[dict(label=str(t), method="animate", args=[[str(t)], step]) for t in range(T)])])
    fig.update_yaxes(autorange="reversed", title_text="key channel", row=1, col=1)
    fig.update_xaxes(title_text="value dim", row=1, col=1)
    fig.update_yaxes(range=[-1.05 * bar_lim, 1.05 * bar_lim], row=1, col=2)
    fig.update_xaxes(title_text="value dim", row=1, col=2)
    fig = go.Figure(fig.to_dict() | {"frames": frames}, _validate=False)
    if title:  # under the controls, where it cannot hit the frame's title
        fig.add_annotation(text=title, xref="paper", yref="paper", x=0, y=-CONTROL_BANDS["title"][0] / plot_h,
                           showarrow=False, xanchor="left", yanchor="top", font=dict(size=11))
    return fig
