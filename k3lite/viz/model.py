"""Figures for the forward-pass stepper (no Streamlit): the stage list and one picture per stage, from a Trace."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from k3lite.model.cards import display_name
from k3lite.model.presets import get_preset
from k3lite.base.tokenizer import token_label
from k3lite.model.trace import Trace
from k3lite.viz.style import (CONCEPT, DIVERGING_SCALE, LINK, NEUTRAL, SEQUENTIAL_SCALE,
                              fit_titles, series_color, wrap)

LITE_CFG = get_preset("lite")  # the model the forward-pass page runs
LITE_DENSE = LITE_CFG.first_k_dense
GLU_NAME = {"swiglu": "SwiGLU", "situ": "SiTU-GLU"}[LITE_CFG.hidden_act]
DENSE_PRESETS = ("deepseek-v3", "kimi-k2", "kimi-linear-48b-a3b")  # named by their cards

WHAT = {
    "tokenize": "The prompt becomes bytes: k3lite's tokenizer is byte-level (vocab 256), so any unicode works and "
                "a non-ASCII character becomes 2-4 tokens. Nothing to download.",
    "embed": "Each token id picks one row of the embedding table (a lookup, no matmul): v₀, a d_model-long vector "
             "per token. It is also the first source every Attention Residual can read.",
    "depth": "Attention Residuals: before the mixer, this layer's pseudo-query attends over depth — the embedding "
             "and the earlier block sums — and its input is their softmax-weighted mix (rows sum to 1).",
    "kda": "Kimi Delta Attention: a fixed-size state S (heads x K x V) is decayed per channel by a_t = exp(g_t), "
           "then corrected by the delta rule with strength β_t. Bright = the channel keeps its memory; dark = it "
           "forgets. Decoding carries only S, whatever the context length.",
    "mla": "Gated MLA, the global layer: softmax attention over every earlier token, with K and V rebuilt from a "
           "compressed latent (the only thing the decode cache stores); a sigmoid gate scales the output. "
           "Here: NoPE — positions come from the KDA layers.",
    "router": "The router scores all routed experts from the full hidden state (sigmoid) and picks the top-k per "
              "token, balanced by quantile balancing; the gate weights are the chosen raw scores, renormalised.",
    "experts": "LatentMoE: each token is projected down to the latent dimension and sent to its k experts. The "
               "load bar shows how many tokens each expert got. With expert parallelism a copy for an expert on "
               "another GPU crosses the interconnect; one for the token's own GPU does not, and DeepEP's normal "
               "kernels send one copy per remote node over the NIC and fan it out over NVLink there.",
    "combine": "Expert outputs come back (combine), are summed with the gate weights, "
               + ("RMS-normalised (as K3: the norm sits on the aggregated output), "
                  if LITE_CFG.moe.latent_norm and LITE_CFG.moe.latent_norm_at == "combine" else "")
               + "projected up to d_model and added to the always-on shared experts. Dispatch + combine bytes "
               "accumulate layer by layer.",
    "dense": (f"The first layer{'s use' if LITE_DENSE > 1 else ' uses'} a dense {GLU_NAME} FFN instead of MoE "
              f"(first_k_dense = {LITE_DENSE} in this model; " + ", ".join(
                  f"{display_name(p)}: {get_preset(p).first_k_dense}" for p in DENSE_PRESETS) + " in their published configs): "
              "a dense layer moves no bytes between GPUs."),
    "logits": "A final Attention Residual mixes all block sums, RMSNorm, then the (tied) embedding matrix turns "
              "the last hidden state into 256 logits, one per byte.",
    "next": "Softmax over the logits: the probability of each next byte. Greedy decoding takes the top one; "
            "Generate continues with the decode caches (KDA state, MLA latent) instead of re-running the prompt.",
}


@dataclass(frozen=True)
class Stage:
    kind: str  # a key of WHAT
    layer: int | None
    title: str


def stages(trace_or_types) -> list[Stage]:
    """The stepper's stages for a model, from its Trace (or a list of (mixer, ffn) pairs)."""
    pairs = ([(lt.mixer_type, lt.ffn_type) for lt in trace_or_types.layers] if isinstance(trace_or_types, Trace)
             else list(trace_or_types))
    out = [Stage("tokenize", None, "Tokenize"), Stage("embed", None, "Embed")]
    for i, (mixer, ffn) in enumerate(pairs):
        out.append(Stage("depth", i, f"Layer {i}: depth mix (Attention Residuals)"))
        out.append(Stage(mixer, i, f"Layer {i}: {'KDA (linear, per-channel decay)' if mixer == 'kda' else 'gated MLA (global)'}"))
        if ffn == "moe":
            out += [Stage("router", i, f"Layer {i}: router"), Stage("experts", i, f"Layer {i}: experts (dispatch)"),
                    Stage("combine", i, f"Layer {i}: combine")]
        else:
            out.append(Stage("dense", i, f"Layer {i}: dense FFN"))
    return out + [Stage("logits", None, "Logits"), Stage("next", None, "Next token")]


def _labels(trace: Trace) -> list[str]:
    return [token_label(t) for t in trace.tokens]


MAX_TOKEN_TICKS = 12  # token labels on a per-token axis: ~25 px each at 390 px (44 smeared; every token is in the hover)


def _token_axis(fig: go.Figure, labels: list[str], axis: str = "x", **kw) -> None:
    step = max(1, -(-len(labels) // MAX_TOKEN_TICKS))
    ticks = dict(tickmode="array", tickvals=list(range(0, len(labels), step)), ticktext=labels[::step])
    fig.update_layout(**{f"{axis}axis": {**ticks, **kw}})


def _layout(fig: go.Figure, title: str, height: int = 360) -> go.Figure:
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=45, b=10))
    return fit_titles(fig, title)


TOKEN_COLUMNS = 12  # tokens per row of the token grid: at 390 px a cell is ~25 px, room for "xe6" over "230"
TOKEN_FONT_PX = 10
TOKEN_ROW_PX = 34


def tokens_figure(trace: Trace) -> go.Figure:
    """The prompt's byte tokens as a grid, TOKEN_COLUMNS to a row, each cell its label over its id. One long row of
    44 cells overprinted its ids on a phone; rows of 12 stay readable at 390 px and the grid grows down instead."""
    ids = list(trace.tokens)
    n_rows = max(1, -(-len(ids) // TOKEN_COLUMNS))
    pad = n_rows * TOKEN_COLUMNS - len(ids)
    cells = ids + [None] * pad

    def grid(values):
        return [values[r * TOKEN_COLUMNS:(r + 1) * TOKEN_COLUMNS] for r in range(n_rows)]

    text = grid([f"{token_label(i)}<br>{i}" if i is not None else "" for i in cells])
    position = grid([p if p < len(ids) else None for p in range(len(cells))])
    fig = go.Figure(go.Heatmap(z=grid(cells), text=text, texttemplate="%{text}", customdata=position,
                               textfont=dict(size=TOKEN_FONT_PX), colorscale=SEQUENTIAL_SCALE, zmin=0, zmax=255,
                               showscale=False, xgap=1, ygap=1, hoverongaps=False,
                               hovertemplate="position %{customdata}: byte %{z}<extra></extra>"))
    fig.update_xaxes(visible=False, range=[-0.5, TOKEN_COLUMNS - 0.5])
    fig.update_yaxes(autorange="reversed", tickmode="array", tickvals=list(range(n_rows)),
                     ticktext=[str(r * TOKEN_COLUMNS) for r in range(n_rows)], title="position", fixedrange=True)
    return _layout(fig, f"{len(ids)} byte tokens (label, id), {TOKEN_COLUMNS} to a row", 55 + TOKEN_ROW_PX * n_rows)


def embedding_figure(trace: Trace) -> go.Figure:
    emb = trace.embedding[0].float().numpy()  # (T, d)
    labels = _labels(trace)
    fig = go.Figure(go.Heatmap(z=emb.T, colorscale=DIVERGING_SCALE, zmid=0, colorbar=dict(title="value"),
                               hovertemplate="token %{x}, dim %{y}: %{z:.3f}<extra></extra>"))
    _token_axis(fig, labels, title="token")
    fig.update_yaxes(title="embedding dimension")
    return _layout(fig, "v₀ = Embed(token): one column per token")


def depth_figure(trace: Trace, layer: int) -> go.Figure:
    lt = trace.layers[layer]
    w = lt.depth_weights_mixer[0].float().numpy()  # (T, N)
    names = ["embedding"] + [f"block {j}" if trace.attn_res == "block" else f"output {j}"
                             for j in lt.depth_sources_mixer[1:]]
    # stacked, each with the sources as its y labels: side by side, the heatmap's labels ran over the bars at 390 px
    fig = make_subplots(rows=2, cols=1, row_heights=[0.3, 0.7], vertical_spacing=0.16,
                        subplot_titles=("depth weight, mean over tokens", "per token"))
    fig.add_bar(y=names, x=w.mean(0), orientation="h", row=1, col=1, marker_color=CONCEPT["attnres"],
                showlegend=False, hovertemplate="%{y}: %{x:.3f}<extra></extra>")
    fig.add_heatmap(z=w.T, y=names, colorscale=SEQUENTIAL_SCALE, zmin=0, zmax=1, row=2, col=1,
                    colorbar=dict(title="weight", len=0.6, y=0, yanchor="bottom"),
                    hovertemplate="token %{x}, %{y}: %{z:.3f}<extra></extra>")
    fig.update_xaxes(range=[0, 1], row=1, col=1)  # its title is the subplot's (an axis title met "per token")
    labels = _labels(trace)
    step = max(1, -(-len(labels) // MAX_TOKEN_TICKS))  # 44 tick labels smeared into one another at 390 px
    fig.update_xaxes(tickmode="array", tickvals=list(range(0, len(labels), step)), ticktext=labels[::step], row=2, col=1)
    return _layout(fig, f"Layer {layer}: which earlier outputs the mixer reads ({trace.attn_res}"
                        f"{f', S = {trace.attn_res_block_size}' if trace.attn_res == 'block' else ''})", 460)


def kda_figure(trace: Trace, layer: int, head: int = 0) -> go.Figure:
    lt = trace.layers[layer]
    H = lt.kda_beta.shape[-1]
    head = min(head, H - 1)
    keep = lt.kda_decay[0, :, head].float().exp().numpy()  # (T, K): a_t = exp(g_t), fraction kept per step
    labels = _labels(trace)
    fig = make_subplots(rows=2, cols=1, row_heights=[0.65, 0.35], shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=(wrap(f"head {head}: decay a_t = exp(g_t) per key channel (1 = keep)", 36),
                                        wrap("β_t (write strength) and ‖S_t‖ per head", 36)))
    fig.add_heatmap(z=keep.T, colorscale=SEQUENTIAL_SCALE, zmin=0, zmax=1, row=1, col=1, colorbar=dict(title="a_t", len=0.6, y=0.7),
                    hovertemplate="token %{x}, channel %{y}: keeps %{z:.3f}<extra></extra>")
    T = len(labels)
    for h in range(H):
        fig.add_scatter(x=list(range(T)), y=lt.kda_beta[0, :, h].float().numpy(), mode="lines", name=f"β head {h}",
                        line=dict(color=series_color(h)), legendgroup=f"h{h}", row=2, col=1)
    norms = lt.kda_state_norm[0].float().numpy()  # (T, H)
    scale = max(float(norms.max()), 1e-9)
    for h in range(H):
        fig.add_scatter(x=list(range(T)), y=norms[:, h] / scale, mode="lines",
                        line=dict(dash="dot", color=series_color(h)), legendgroup=f"h{h}",
                        name=f"‖S‖ head {h} (÷ {scale:.2f})", row=2, col=1)
    step = max(1, -(-T // MAX_TOKEN_TICKS))
    fig.update_xaxes(tickmode="array", tickvals=list(range(0, T, step)), ticktext=labels[::step], row=2, col=1)
    fig.update_yaxes(title="channel", row=1, col=1)
    fig.update_yaxes(title="value", range=[0, 1.05], row=2, col=1)
    # legend under the plot: on the right it was drawn over the colourbar
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.12, x=0))
    return _layout(fig, f"Layer {layer}: KDA gates", 560)


def mla_figure(trace: Trace, layer: int, head: int | None = None) -> go.Figure:
    lt = trace.layers[layer]
    attn = lt.mla_attention[0].float()  # (H, T, S)
    a = attn.mean(0) if head is None else attn[min(head, attn.shape[0] - 1)]
    labels = _labels(trace)
    fig = go.Figure(go.Heatmap(z=a.numpy(), colorscale=SEQUENTIAL_SCALE, zmin=0, colorbar=dict(title="prob"),
                               hovertemplate="query %{y} → key %{x}: %{z:.3f}<extra></extra>"))
    _token_axis(fig, labels, "x", title="key (attended token)")
    _token_axis(fig, labels, "y", title="query token", autorange="reversed")
    return _layout(fig, f"Layer {layer}: MLA attention ({'mean over heads' if head is None else f'head {head}'})", 460)


def routing_figure(trace: Trace, layer: int) -> go.Figure:
    lt = trace.layers[layer]
    idx, w = lt.router_topk_idx[0], lt.router_topk_weight[0].float()  # (T, k)
    E = lt.router_scores.shape[-1]
    grid = torch.zeros(idx.shape[0], E).scatter_(1, idx, w).numpy()  # (T, E) gate weight, 0 = not chosen
    grid = np.where(grid > 0, grid, np.nan)
    labels = _labels(trace)
    fig = go.Figure(go.Heatmap(z=grid.T, colorscale=SEQUENTIAL_SCALE, colorbar=dict(title="gate weight"),
                               hovertemplate="token %{x} → expert %{y}: %{z:.3f}<extra></extra>"))
    _token_axis(fig, labels, "x", title="token")
    fig.update_yaxes(title=f"routed expert (of {E})")
    k = idx.shape[1]
    return _layout(fig, f"Layer {layer}: token × expert routing (top-{k} of {E})", 420)


def load_figure(trace: Trace, layer: int) -> go.Figure:
    lt = trace.layers[layer]
    load = lt.expert_load.float().numpy()
    fig = go.Figure(go.Bar(x=list(range(len(load))), y=load, marker_color=CONCEPT["routed"]))
    fig.add_hline(y=float(load.mean()), line_dash="dot", line_color=NEUTRAL, annotation_text="perfect balance")
    fig.update_xaxes(title="expert")
    fig.update_yaxes(title="tokens routed")
    return _layout(fig, f"Layer {layer}: expert load (max/mean − 1 = {lt.load_max_violation:.2f}; "
                        f"{lt.dispatch_dim}-dim latent per copy)", 320)


CUMULATIVE_BYTES = "interconnect bytes per token so far"  # the combine stage's computed bars (not the trace's)


def combine_figure(trace: Trace, layer: int, wire_per_layer: float) -> go.Figure:
    """wire_per_layer: bytes per token per MoE layer from k3lite.interconnect.wire_bytes_per_token."""
    cum = trace.bytes_cumulative(wire_per_layer)
    labels = _labels(trace)
    fig = make_subplots(rows=1, cols=2, subplot_titles=(wrap("FFN output norm per token", 20),
                                                        wrap("interconnect bytes per token, cumulative", 20)))
    lt = trace.layers[layer]
    fig.add_bar(x=list(range(len(labels))), y=lt.ffn_out_norm[0].float().numpy(), row=1, col=1, showlegend=False,
                marker_color=CONCEPT["routed"])
    colors = [LINK["nvlink"] if i <= layer else CONCEPT["baseline"] for i in range(len(cum))]
    fig.add_bar(x=[f"L{i}" for i in range(len(cum))], y=cum, marker_color=colors, row=1, col=2, showlegend=False,
                name=CUMULATIVE_BYTES)
    fig.update_yaxes(title="bytes per token (dispatch + combine)", row=1, col=2)
    step = max(1, -(-len(labels) // MAX_TOKEN_TICKS))
    fig.update_xaxes(tickmode="array", tickvals=list(range(0, len(labels), step)), ticktext=labels[::step], row=1, col=1)
    return _layout(fig, f"Layer {layer}: combine — {cum[layer]:,.0f} bytes per token so far")


def dense_figure(trace: Trace, layer: int) -> go.Figure:
    lt = trace.layers[layer]
    labels = _labels(trace)
    fig = go.Figure(go.Bar(x=list(range(len(labels))), y=lt.ffn_out_norm[0].float().numpy(),
                           marker_color=CONCEPT["dense"]))
    _token_axis(fig, labels, title="token")
    fig.update_yaxes(title="‖FFN output‖")
    return _layout(fig, f"Layer {layer}: dense {GLU_NAME} output norm per token (0 bytes on the interconnect)", 320)


def final_depth_figure(trace: Trace) -> go.Figure:
    w = trace.final_depth_weights[0].float().numpy()  # (T, N)
    names = ["embedding"] + [f"block {j}" for j in trace.final_depth_sources[1:]]
    fig = go.Figure(go.Bar(x=names, y=w.mean(0), marker_color=CONCEPT["attnres"]))
    fig.update_yaxes(title="depth weight (mean over tokens)", range=[0, 1])
    return _layout(fig, "Final Attention Residual: what the LM head reads", 300)


def top5_figure(top_ids: list[int], top_probs: list[float]) -> go.Figure:
    labels = [f"{token_label(i)} ({i})" for i in top_ids]
    fig = go.Figure(go.Bar(x=[p * 100 for p in top_probs], y=labels, orientation="h", marker_color=CONCEPT["head"],
                           text=[f"{100 * p:.1f}%" for p in top_probs], textposition="outside"))
    fig.update_layout(yaxis=dict(autorange="reversed"), xaxis=dict(title="probability (%)", range=[0, 105]))
    return _layout(fig, "Top-5 next-byte probabilities", 300)


def stage_figure(trace: Trace, stage: Stage, top: tuple[list[int], list[float]] | None = None, head: int = 0,
                 wire_per_layer: float | None = None):
    """The picture for one stage (the combine stage needs wire_per_layer: bytes per token per MoE layer)."""
    if stage.kind == "tokenize":
        return tokens_figure(trace)
    if stage.kind == "embed":
        return embedding_figure(trace)
    if stage.kind == "depth":
        return depth_figure(trace, stage.layer)
    if stage.kind == "kda":
        return kda_figure(trace, stage.layer, head)
    if stage.kind == "mla":
        return mla_figure(trace, stage.layer, None)
    if stage.kind == "router":
        return routing_figure(trace, stage.layer)
    if stage.kind == "experts":
        return load_figure(trace, stage.layer)
    if stage.kind == "combine":
        if wire_per_layer is None:
            raise ValueError("the combine stage needs wire_per_layer (k3lite.interconnect.wire_bytes_per_token)")
        return combine_figure(trace, stage.layer, wire_per_layer)
    if stage.kind == "dense":
        return dense_figure(trace, stage.layer)
    if stage.kind == "logits":
        return final_depth_figure(trace)
    if stage.kind == "next":
        if top is None:
            raise ValueError("the next-token stage needs the top-5 probabilities")
        return top5_figure(*top)
    raise ValueError(f"unknown stage kind {stage.kind!r}")
