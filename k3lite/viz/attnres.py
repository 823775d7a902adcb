"""Figures for Attention Residuals (no Streamlit): depth-weight heatmaps from a Trace, and the cost model."""
from __future__ import annotations


import numpy as np
import plotly.graph_objects as go

from k3lite.base.units import fmt_bytes, fmt_seconds
from k3lite.base.wording import times
from k3lite.model.attnres import AttnResCost, attnres_cost, block_size_words
from k3lite.model.trace import Trace
from k3lite.viz.style import NEUTRAL, SEQUENTIAL_SCALE, color, fit_titles, log_axis, series_color


def sublayer_names(n_layers: int, layer_types: list[str] | None = None) -> list[str]:
    names = []
    for i in range(n_layers):
        mixer = (layer_types[i].upper() if layer_types else "mixer")
        names += [f"L{i} {mixer}", f"L{i} FFN"]
    return names + ["LM head"]


def source_names(trace: Trace) -> list[str]:
    """Column labels: source j is the embedding (j = 0), then the j-th sublayer output (full, and standard,
    whose plain sum has one coefficient per output) or block j (block: S = attn_res_block_size sublayers)."""
    n_sub = 2 * trace.n_layers
    size = trace.attn_res_block_size if trace.attn_res == "block" else 1
    subs = sublayer_names(trace.n_layers, [lt.mixer_type for lt in trace.layers])[:-1]
    names = ["embedding"]
    for j in range(1, n_sub // size + (1 if n_sub % size else 0) + 1):
        first, last = (j - 1) * size, min(j * size, n_sub) - 1
        if first > n_sub - 1:
            break
        names.append(subs[first] if first == last else f"B{j}: {subs[first]}…{subs[last]}")
    return names


def depth_matrix(trace: Trace, token: int | None = None) -> np.ndarray:
    """(2L + 1, n_sources) weight of each source in each sublayer's input; NaN where a source does not
    exist yet. `token` None = mean over the prompt's tokens (batch row 0)."""
    rows = []
    for lt in trace.layers:
        rows += [lt.depth_weights_mixer, lt.depth_weights_ffn]
    rows.append(trace.final_depth_weights)
    width = max(r.shape[-1] for r in rows)
    mat = np.full((len(rows), width), np.nan)
    for i, w in enumerate(rows):
        w = w[0].float()  # (T, N)
        vec = w.mean(0) if token is None else w[token]
        mat[i, : vec.shape[0]] = vec.numpy()
    return mat


def depth_heatmap_figure(trace: Trace, token: int | None = None, title: str = "") -> go.Figure:
    mat = depth_matrix(trace, token)
    rows = sublayer_names(trace.n_layers, [lt.mixer_type for lt in trace.layers])
    cols = source_names(trace)[: mat.shape[1]]
    label = "coefficient (plain sum: every source 1)" if trace.attn_res == "standard" else "depth weight (softmax)"
    text = np.where(np.isnan(mat), "", np.vectorize(lambda v: f"{v:.2f}")(np.nan_to_num(mat)))
    fig = go.Figure(go.Heatmap(z=mat, x=cols, y=rows, colorscale=SEQUENTIAL_SCALE, zmin=0,
                               zmax=1 if trace.attn_res != "standard" else 1.0, text=text, texttemplate="%{text}",
                               colorbar=dict(title="weight"),
                               hovertemplate="%{y} reads %{x}: %{z:.3f}<extra></extra>"))
    # automargin: the slanted source names were clipped at the bottom edge ("…dding")
    fig.update_layout(height=200 + 26 * len(rows), margin=dict(l=10, r=10, t=40, b=10), xaxis=dict(title="source (earlier output or block sum)", tickangle=-35,
                                                       automargin=True),
                      yaxis=dict(title="sublayer reading", autorange="reversed", automargin=True))
    return fit_titles(fig, title or label)


def cost_curves_figure(layers: list[int], costs: dict[str, list[AttnResCost]], what: str = "read_bytes") -> go.Figure:
    """Per-token bytes (reads or live memory) of the depth mixing vs number of layers, one line per mode."""
    fig = go.Figure()
    for i, (name, cs) in enumerate(costs.items()):
        fig.add_scatter(x=layers, y=[getattr(c, what) / 1e6 for c in cs], mode="lines", name=name,
                        line=dict(color=series_color(i)))
    title = {"read_bytes": "Cross-layer reads per token<br>(MB, all sublayers together)",
             "live_bytes": "Outputs kept alive per token (MB)"}[what]
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=60, b=10), title=title,
                      xaxis=dict(title="layers (2 sublayers each)"), yaxis=log_axis("MB per token (log)"),
                      legend=dict(orientation="h", y=-0.25))
    return fig


# ------------------------------------------------------------------------------------------ the residual experiment
def _run_name(run: dict, shortest: int) -> str:
    if run["mode"] != "standard":
        return f"{run['mode']} AttnRes"
    return "standard residual" if run["steps"] == shortest else f"standard, {run['steps']} steps"


def residual_experiment_figure(results: list[dict]) -> go.Figure:
    """Validation loss (nats/byte) against training steps, one panel line per run and seed: solid = AttnRes
    (full, block), grey = the standard residual, dotted = the longer standard runs used to find how many steps
    standard needs to match AttnRes (`standard_steps_to_match`)."""
    fig = go.Figure()
    mode_colour = {"full": color("attnres"), "block": color("mla")}
    for s, res in enumerate(results):
        shortest = min(r["steps"] for r in res["runs"])
        for run in res["runs"]:
            steps = [e["step"] for e in run["evals"]]  # (the untrained model's 5.57 nats/byte is off the scale)
            loss = [e["mean"] for e in run["evals"]]
            longer = run["mode"] == "standard" and run["steps"] > shortest
            colour = mode_colour.get(run["mode"], NEUTRAL)
            fig.add_scatter(x=steps, y=loss, mode="lines+markers", name=f"{_run_name(run, shortest)}, seed {res['seed']}",
                            legendgroup=f"seed {res['seed']}", marker=dict(size=5, symbol=["circle", "diamond"][s % 2]),
                            line=dict(color=colour, width=1.5 if longer else 2.5, dash="dot" if longer else
                                      ("solid" if s == 0 else "dash")),
                            hovertemplate="step %{x}: %{y:.3f} nats/byte<extra>%{fullData.name}</extra>")
    first = results[0]
    last_step = max(e["step"] for res in results for run in res["runs"] for e in run["evals"])
    fig.update_layout(height=400, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(title="training steps", range=[40, last_step + 10]),
                      yaxis=dict(title="loss (nats/byte)", range=[1.9, 3.2]))
    return fit_titles(fig, f"Validation loss of the lite LM ({first['batch']} x {first['seq_len']} bytes per step)")


def residual_experiment_claim(results: list[dict]) -> str:
    """How many steps the standard residual needed to match each AttnRes variant, per seed, from the files."""
    parts = []
    for res in results:
        shortest = min(r["steps"] for r in res["runs"])
        said = [f"{m['ratio']:.2f}x ({mode})" if m["reached"] else f"not reached ({mode})"
                for mode, m in res["standard_steps_to_match"].items()]
        parts.append(f"seed {res['seed']}: " + ", ".join(said))
    ratios = [m["ratio"] for res in results for m in res["standard_steps_to_match"].values() if m["reached"]]
    span = f" ({min(ratios):.2f}–{max(ratios):.2f}x)" if ratios else ""
    return (f"Steps the standard residual needed to match the validation loss AttnRes reached in {shortest} steps: "
            + "; ".join(parts) + f"{span}, interpolated on its longer runs (dotted).")


# ----------------------------------------------------------------------------- what blocks save, in words
def block_read_bytes(block_size: float, d_model: float, bytes_per_number: float = 2.0, n_layers: int = 93) -> float:
    """The page's headline: bytes block AttnRes reads per token across all depth mixes (`attnres_cost`), from the
    inputs it assumes; a block size or width moved ±20% is rounded to whole sublayers and dimensions."""
    return float(attnres_cost(n_layers, max(1, round(d_model)), "block", max(1, round(block_size)),
                              bytes_per_number).read_bytes)


def _ratio(block: float, full: float, noun: str, more: str, less: str, amount: str = "many") -> str:
    """'2.9x fewer reads' / 'as many reads as full AttnRes': block against full, the word from the numbers."""
    word = times(block, full, more, less, "same", digits=1)
    return f"as {amount} {noun} as full AttnRes" if word == "same" else f"{word} {noun}"


def block_saving_sentence(n_layers: int, d_model: int, block_size: int) -> str:
    """The page's sentence under the cost curves: block against full AttnRes at K3's depth."""
    full, block = attnres_cost(n_layers, d_model, "full"), attnres_cost(n_layers, d_model, "block", block_size)
    return (f"At {n_layers} layers (K3), d_model {d_model}: blocks of {block_size_words(block_size)} read "
            f"**{_ratio(block.read_bytes, full.read_bytes, 'bytes', 'more', 'fewer')}** "
            f"({fmt_bytes(block.read_bytes)} vs {fmt_bytes(full.read_bytes)} for full, per token) and keep "
            f"{_ratio(block.live_bytes, full.live_bytes, 'memory', 'more', 'less', 'much')}.")


def block_cost_details(n_layers: int, d_model: int, block_size: int, hbm_bw: float, gpu_name: str) -> str:
    """The expander's numbers in full: reads and live vectors of full and block AttnRes, and the reads' time at
    `hbm_bw` bytes/s."""
    full, block = attnres_cost(n_layers, d_model, "full"), attnres_cost(n_layers, d_model, "block", block_size)
    return (f"At **{n_layers} layers** (K3's config.json; {2 * n_layers} sublayers + the final mix), d_model "
            f"{d_model}, bf16: full AttnRes reads {fmt_bytes(full.read_bytes)} per token across all mixes and keeps "
            f"{full.live_sources} vectors ({fmt_bytes(full.live_bytes)}) per token alive; blocks of "
            f"{block_size_words(block_size)} read {fmt_bytes(block.read_bytes)} and keep {block.live_sources} "
            f"({fmt_bytes(block.live_bytes)}): {_ratio(block.read_bytes, full.read_bytes, 'reads', 'more', 'fewer')}, "
            f"{_ratio(block.live_bytes, full.live_bytes, 'memory', 'more', 'less', 'much')}. At {hbm_bw / 1e12:.2f} TB/s "
            f"({gpu_name} HBM, NVIDIA datasheet; `k3lite/analytic/hardware.py`) those reads cost "
            f"{fmt_seconds(block.read_bytes / hbm_bw)} per token vs {fmt_seconds(full.read_bytes / hbm_bw)} for full.")
