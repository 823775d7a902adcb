"""The Attention Residuals page's panels (views/attention_residuals.py): what each draws and says, no Streamlit.

    reads_panel(reads, weights, ...)   the first picture: what one sublayer reads over depth, and the reading of it
    compare_panel(pair)                K3's depth state per token after each layer beside the compared model's (a
                                       standard residual where it has no AttnRes), and the reads of a forward pass
    heatmap_panel(trace, token, ...)   every sublayer's depth weights at once
    experiment_panel()                 the shipped residual experiment's loss curves (None when not shipped)
    cost_panels(d, S)                  what block grouping saves as models grow: reads and live bytes per token
    assumptions(d, S)                  the page's assumptions block inputs
"""
from __future__ import annotations

import plotly.graph_objects as go

from k3lite.analytic.hardware import get_gpu
from k3lite.analytic.sensitivity import Assumption
from k3lite.base.evidence import Evidence, derived, measured_here, released
from k3lite.base.wording import direction, times
from k3lite.experiments.lm_train import attnres_results
from k3lite.interconnect.pipeline import boundary_vectors
from k3lite.model.attnres import attnres_cost, block_size_words
from k3lite.model.config import K3Config
from k3lite.model.presets import get_preset
from k3lite.model.variants import comparison_config
from k3lite.panels.core import Pair, Panel, Said, sentence, where_else
from k3lite.viz.archmap import sources_at
from k3lite.viz.attnres import (block_cost_details, block_saving_sentence, cost_curves_figure, depth_heatmap_figure,
                                residual_experiment_claim, residual_experiment_figure)
from k3lite.viz.compare import pair_colors
from k3lite.viz.diagrams import depth_reads_figure
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import fit_titles, fmt_bytes

K3, KIMI_LINEAR = get_preset("kimi-k3"), get_preset("kimi-linear-48b-a3b")
WIDTHS = sorted({KIMI_LINEAR.d_model, 4096, K3.d_model})
BYTES = 2  # bf16 activations
PAIR_CONFIGS = released("the two models' config.json: num_hidden_layers, hidden_size, the residual and its block size "
                        "(k3lite.model.presets; a K3 variant: k3lite.model.variants)")


# ------------------------------------------------------------------------------------------ the first picture
def reads_panel(reads, weights, mode: str, block: int, reader: int, evidence: Evidence) -> tuple[Panel, str]:
    """What sublayer `reader` reads over depth (arcs as thick as its weights; none for a standard residual), and
    the sentence reading it."""
    fig = shared_figure(depth_reads_figure, reads, weights, evidence=evidence)
    name = reads.names[reader + 1]
    if mode == "standard":
        return Panel(fig, evidence=evidence), (f"With a standard residual, {name} reads one running sum: every "
                                              "earlier output added with weight 1, so it cannot tell them apart.")
    n = len(reads.sources)
    top = int(max(range(n), key=lambda j: weights[j]))
    full_count = len(sources_at("full", reader, 1))
    text = (f"{name} reads **{n}** vector{'s' * (n != 1)} "
            + (f"(blocks of {block_size_words(block)}; full AttnRes would read {full_count})" if mode == "block" else "")
            + f" and mixes them with a softmax over depth; on this prompt (mean over its tokens) the largest weight, "
              f"**{weights[top]:.2f}**, goes to the {reads.sources[top][0]}. Arc thickness = weight.")
    return Panel(fig, evidence=evidence, values={"top_weight": float(weights[top]), "vectors": n}), text


# ------------------------------------------------------------------------------------------ K3 beside another
def held_after(cfg: K3Config, layer: int) -> int:
    """Vectors of d one token's residual state holds after `layer` layers (what a pipeline-stage boundary placed
    there carries, k3lite.interconnect.pipeline.boundary_vectors)."""
    return boundary_vectors(cfg.attn_res, 2 * layer, cfg.attn_res_block_size if cfg.attn_res == "block" else 1)


def state_bytes(cfg: K3Config) -> tuple[list[int], list[float]]:
    """(layers 1..L, bytes of depth state per token after each): vectors x d x 2 (bf16)."""
    layers = list(range(1, cfg.n_layers + 1))
    return layers, [float(held_after(cfg, n) * cfg.d_model * BYTES) for n in layers]


def forward_reads(cfg: K3Config, mode: str | None = None) -> float:
    """Bytes every depth mix of one forward pass reads per token (attnres_cost; the ledger's AttnRes reads)."""
    mode = mode or cfg.attn_res
    return float(attnres_cost(cfg.n_layers, cfg.d_model, mode, cfg.attn_res_block_size if mode == "block" else 1,
                              BYTES).read_bytes)


def residual_words(cfg: K3Config) -> tuple[str, str]:
    """(its name, what it keeps per token) for a config's residual, from the config."""
    if cfg.attn_res == "standard":
        return "a standard residual", "one running sum"
    if cfg.attn_res == "full":
        return "full AttnRes", "the embedding and every sublayer output"
    return "block AttnRes", (f"the embedding, one sum per finished block of {block_size_words(cfg.attn_res_block_size)}"
                             " and the running partial sum")


def depth_lines(k3: tuple, other: tuple, names: tuple[str, str], ablation: bool, title: str) -> go.Figure:
    """Two step lines of depth state per token over layers (each model its own depth), one y axis; K3 solid, the
    compared model in its colour (a K3 variant dashed in K3's), as k3lite.viz.compare draws pairs."""
    c1, c2 = pair_colors(names[1], ablation)
    fig = go.Figure()
    for (x, y), name, colour, dash in ((k3, names[0], c1, "solid"), (other, names[1], c2, "dash" if ablation else "solid")):
        fig.add_scatter(x=list(x), y=list(y), name=name, mode="lines", line=dict(color=colour, width=3, dash=dash,
                        shape="hv"), hovertemplate=f"after layer %{{x}}: %{{y:,.4s}}B<extra>{name}</extra>")
    fig.update_layout(xaxis=dict(title="after layer", rangemode="tozero"),
                      yaxis=dict(title="depth state per token (bytes)", ticksuffix="B", exponentformat="SI",
                                 rangemode="tozero"), height=360, margin=dict(l=10, r=10, t=40, b=10))
    return fit_titles(fig, title)


def compare_panel(pair: Pair) -> Panel:
    """K3's residual beside the compared model's, per token: the depth state it holds after each layer (a
    pipeline-stage boundary there carries as much each way) on one axis, and the bytes a forward pass's depth mixes
    read. A model without Attention Residuals is compared through the standard residual it uses."""
    k3, other = pair.k3_label, pair.label
    a, b = state_bytes(pair.k3), state_bytes(pair.other)
    ev = derived(boundary_vectors, attnres_cost, comparison_config)
    fig = shared_figure(depth_lines, a, b, (k3, other), pair.ablation,
                        f"Residual state per token after each layer: {k3} and {other}",
                        evidence=ev)
    la, lb = pair.k3.n_layers, pair.other.n_layers
    va, vb = held_after(pair.k3, la), held_after(pair.other, lb)
    ba, bb = a[1][-1], b[1][-1]
    ra, rb = forward_reads(pair.k3), forward_reads(pair.other)
    values = {"k3_last": ba, "other_last": bb, "k3_reads": ra, "other_reads": rb, "k3_vectors": va, "other_vectors": vb}
    same = pair.other.attn_res == pair.k3.attn_res and direction(ba, bb) == 0 and direction(ra, rb) == 0
    if same:
        name, what = residual_words(pair.k3)
        return Panel(fig, (Said(
            f"{other} keeps {k3}'s {name}: {what}. The same {va} vectors of d = {pair.k3.d_model:,}, "
            f"{fmt_bytes(ba)} per token after layer {la}, and {fmt_bytes(ra)} of depth reads per forward pass (the "
            f"lines match). " + sentence(where_else(pair, "attention_residuals")), (ev, PAIR_CONFIGS)),), ev,
            values=values)
    name, what = residual_words(pair.other)
    if pair.ablation:
        none = f"{other} keeps {what} instead. "
    elif pair.other.attn_res == "standard":
        none = f"{other} has no Attention Residuals: it uses {name}, {what}. "
    else:
        none = f"{other} uses {name}: {what}. "
    said = [Said(none + f"By its last layer {k3} holds {va} vectors of d = {pair.k3.d_model:,} per token "
                 f"({fmt_bytes(ba)}) and {other} {vb} of d = {pair.other.d_model:,} ({fmt_bytes(bb)}): "
                 f"{times(ba, bb, 'more', 'less', digits=1)}: what a pipeline-stage boundary as late as that would send "
                 "each way (the line shows every earlier one).",
                 (ev, PAIR_CONFIGS)),
            Said(f"One forward pass's depth mixes read {fmt_bytes(ra)} per token for {k3} ({la} layers) and "
                 f"{fmt_bytes(rb)} for {other} ({lb}): {times(ra, rb, 'more', 'less', digits=1)}; full AttnRes at {k3}'s depth "
                 f"would read {fmt_bytes(forward_reads(pair.k3, 'full'))}.", (ev, PAIR_CONFIGS))]
    return Panel(fig, tuple(said), ev, values=values)




# ------------------------------------------------------------------------------------------ the sections
def heatmap_panel(trace, last_token: bool, mode: str, block: int, evidence: Evidence) -> Panel:
    """Every sublayer's depth weights at once: the mean over the prompt's tokens, or its last token's."""
    title = f"{mode} residual{f', S = {block}' if mode == 'block' else ''}: what each sublayer reads"
    return Panel(shared_figure(depth_heatmap_figure, trace, len(trace.tokens) - 1 if last_token else None, title,
                               evidence=evidence), evidence=evidence)


def experiment_panel() -> tuple[Panel, str] | None:
    """The shipped residual experiment (loss against steps per run and seed), its claim, and how it was run; None
    when assets/ holds none."""
    runs = attnres_results()
    if not runs:
        return None
    seeds = ", ".join(str(r["seed"]) for r in runs)
    ran = measured_here(f"{runs[0]['command']} (seeds {seeds}; assets/lab_attnres*.json)")
    first = runs[0]
    how = (f"Shipped result (not live): the `lite` preset, {first['steps']} steps of {first['batch']} x "
           f"{first['seq_len']} bytes (k3lite.experiments.lm_train's data), seeds {seeds}; made by `{first['command']}` "
           "(and the same with another seed). The AttnRes paper (arXiv 2603.15031) reports block AttnRes matching a "
           "baseline trained with ~1.25x more compute; a few hundred CPU steps are noisy, which the two seeds show.")
    claim = residual_experiment_claim(runs) + " The paper reports about 1.25x at scale."
    return Panel(shared_figure(residual_experiment_figure, runs, evidence=ran), (Said(claim, (ran,)),), ran), how


LAYERS = list(range(4, 201, 4))  # the cost curves' x axis


def cost_panels(d: int, block: int) -> tuple[Panel, Panel, str, str]:
    """What block grouping saves as models grow: reads and live bytes per token against depth (standard, full,
    block at `block`), the sentence at K3's depth and the numbers in full."""
    costs = {"standard residual": [attnres_cost(n, d, "standard") for n in LAYERS],
             "full AttnRes": [attnres_cost(n, d, "full") for n in LAYERS],
             f"block AttnRes, S = {block}": [attnres_cost(n, d, "block", block) for n in LAYERS]}
    ev = derived(attnres_cost)
    read, live = (Panel(shared_figure(cost_curves_figure, LAYERS, costs, what, evidence=ev), evidence=ev)
                  for what in ("read_bytes", "live_bytes"))
    gpu = get_gpu("H100 SXM")  # the one GPU table (datasheet sources in k3lite/analytic/hardware.py)
    details = (block_cost_details(K3.n_layers, d, block, gpu.hbm_bw, gpu.name)
               + " *Computed* by `k3lite.model.attnres.attnres_cost`: every source vector each mix reads counts once. "
               "*Reported* (arXiv 2603.15031): about 8 blocks recover most of full AttnRes's gain, block AttnRes "
               "matches a baseline trained with 1.25x more compute, at under 2% extra inference latency; their Kimi "
               "Linear 48B test uses 54 sublayers in blocks of 6 (9 blocks + embedding).")
    return read, live, block_saving_sentence(K3.n_layers, d, block), details


def assumptions(d: int, block: int) -> tuple[list[Assumption], list[tuple[str, str]]]:
    """The inputs of the page's headline (block_read_bytes at K3's depth), and the one that is not a number."""
    return ([Assumption("block_size", "block size S", block,
                        f"K3's released config: {block_size_words(K3.attn_res_block_size)}",
                        "the 'block size S for the model' slider", "sublayers"),
             Assumption("d_model", "d_model", d, f"K3's released width, {K3.d_model}", "the 'd_model' slider"),
             Assumption("bytes_per_number", "bytes per number", 2.0, "bf16 activations", unit="B")],
            [("reads", "every source vector each mix reads counts once (nothing kept on chip between mixes)")])
