"""The KDA page with a comparison on: the decode memory one sequence holds, K3 beside the compared model.

K3 keeps a fixed KDA state (+ conv tail) in its KDA layers and an MLA latent cache, growing with the context, in the
rest; DeepSeek-V3, Kimi K2 and K3 with MLA everywhere have no KDA (MLA in every layer: their caches are compared),
Kimi Linear 48B has KDA too (its state per layer is compared). Every number comes from k3lite.analytic.memory, the
function the hybrid and serving pages call; one log-log axis holds both models, per layer and for the whole stack.
    holdings(cfg)                        what one sequence holds, by layer kind (a Holdings)
    decode_memory_panel(pair, context)   the figure and its two computed sentences
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go

from k3lite.analytic import memory
from k3lite.base.evidence import derived
from k3lite.base.units import fmt_bytes
from k3lite.base.wording import compare, times
from k3lite.model.config import K3Config
from k3lite.panels.core import Panel, Pair, Said, where_else
from k3lite.viz.compare import pair_colors
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import HIGHLIGHT_LINE, bytes_log_axis, fit_titles, log_axis, log_vline

CONTEXT = 131_072  # the page's context with a comparison on (128K); the control moves it
CONTEXT_CHOICES = tuple(2 ** p for p in range(10, 21))  # 1K .. 1M (2^20, as the hybrid page)
GRID = np.unique(np.round(np.logspace(0, 20, 61, base=2)).astype(int)).tolist()  # 1 .. 1M tokens


class Holdings(NamedTuple):
    """What one sequence of `name` holds for decoding, by layer kind (bytes)."""

    name: str
    n_kda: int
    n_mla: int
    kda_layer: int  # one KDA layer's fixed state + conv tail (0 without KDA layers)
    mla_per_token: int  # one MLA layer's latent cache per token
    kda_heads: int  # heads of its KDA layer (0 without)

    def layer_cache(self, context: int) -> int:
        """One MLA layer's cache at `context` tokens."""
        return self.mla_per_token * context

    def at(self, context: int, cfg: K3Config) -> memory.SequenceCache:
        """The whole stack at `context` tokens (memory.sequence_cache_bytes, the serving pages' count)."""
        return memory.sequence_cache_bytes(cfg, context)

    @property
    def slope(self) -> int:
        """Bytes the whole stack adds per token of context."""
        return self.n_mla * self.mla_per_token


def holdings(cfg: K3Config) -> Holdings:
    types = cfg.layer_types()
    n_kda, n_mla = types.count("kda"), types.count("mla")
    state = memory.kda_layer_state_bytes(cfg.kda) if n_kda else 0
    return Holdings(cfg.name, n_kda, n_mla, state, memory.mla_cache_bytes_per_token(cfg.mla),
                    cfg.kda.n_heads if n_kda else 0)


def memory_pair_figure(grid: list[int], curves: dict[str, list[float]], names: tuple[str, str], ablation: bool,
                       context: int, title: str) -> go.Figure:
    """Both models on one log-log axis: each one's whole stack (thick) and its layers (thin: a flat KDA state, a
    growing MLA cache). `curves` keys: "<which>|<kind>" with which in (0, 1) (K3, the compared model)."""
    colors = pair_colors(names[1], ablation)
    fig = go.Figure()
    for key, ys in curves.items():
        which, kind = key.split("|")
        i = int(which)
        dash = "dash" if (i == 1 and ablation) else "solid"
        whole = kind.startswith("whole")
        fig.add_scatter(x=grid, y=ys, mode="lines", name=f"{names[i]}: {kind}",
                        line=dict(color=colors[i], width=4 if whole else 1.8, dash=dash),
                        hovertemplate="%{x:,} tokens: %{y:,.4s}B<extra>" + f"{names[i]}: {kind}" + "</extra>")
    fig.update_xaxes(**log_axis("context (tokens, log)"))
    fig.update_yaxes(**bytes_log_axis("decode memory"))
    log_vline(fig, context, f"{context:,}", line=dict(color=HIGHLIGHT_LINE["color"], width=1, dash="dot"))
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=50, b=10), legend=dict(font=dict(size=11)))
    return fit_titles(fig, title)


def _kinds(h: Holdings) -> str:
    return " + ".join(f"{n} {k}" for n, k in ((h.n_kda, "KDA"), (h.n_mla, "MLA")) if n)


def _crossing(a: Holdings, b: Holdings) -> float | None:
    """The context (tokens) where the two stacks hold the same, when their lines cross above 1 token."""
    if a.slope == b.slope:
        return None
    c = (a.n_kda * a.kda_layer - b.n_kda * b.kda_layer) / (b.slope - a.slope)
    return c if c > 1 else None


def decode_memory_panel(pair: Pair, context: int = CONTEXT) -> Panel:
    """K3's decode memory beside the compared model's, per layer and for the whole stack, over context; two
    computed sentences at `context` tokens: what each holds, then the difference and what drives it."""
    if context < 1:
        raise ValueError(f"context must be >= 1 token, got {context}")
    k, o = holdings(pair.k3), holdings(pair.other)
    K3, other = pair.k3_label, pair.label
    grid = sorted(set(GRID) | {context})
    ev = derived(memory.sequence_cache_bytes)
    kt, ot = k.at(context, pair.k3), o.at(context, pair.other)
    title = f"One sequence's decode memory: {K3} and {other} (fp32 state, bf16 caches)"
    fig = shared_figure(memory_pair_figure, grid, _curves_on(grid, k, o, pair),
                        (K3, other), pair.ablation, context, title, evidence=ev)
    values = {"context": float(context), "k3_kda": float(kt.kda), "k3_mla": float(kt.mla), "k3_total": float(kt.total),
              "other_kda": float(ot.kda), "other_mla": float(ot.mla), "other_total": float(ot.total),
              "k3_kda_layer": float(k.kda_layer), "other_kda_layer": float(o.kda_layer)}
    at = f"{context:,} tokens"
    k3_holds = (f"{K3}'s {k.n_kda} KDA layers hold {fmt_bytes(kt.kda)} per sequence whatever the context and its "
                f"{k.n_mla} MLA layers {fmt_bytes(kt.mla)}, growing with it" if k.n_kda else
                f"{K3}'s {k.n_mla} MLA layers hold {fmt_bytes(kt.mla)}, growing with it")
    if k == o._replace(name=k.name):
        said = (f"At {at} {other} holds exactly what {K3} holds (the same {_kinds(k)} layers: "
                f"{fmt_bytes(kt.kda)} of fixed state, {fmt_bytes(kt.mla)} of cache growing with the context): "
                f"{pair.comparison.idea or 'what differs'} is not in the attention, so nothing changes here; "
                f"{where_else(pair, 'kda') or 'its difference shows on the other pages'}.")
        return Panel(fig, (Said(said, (ev,)),), ev, values=values)
    if not o.n_kda:
        o_holds = f"{other} has no KDA: its {o.n_mla} MLA layers hold {fmt_bytes(ot.mla)}, growing with it"
    else:
        per = times(o.kda_layer, k.kda_layer, "more", "less", "the same")
        o_holds = (f"{other} has KDA too: its {o.n_kda} KDA layers hold {fmt_bytes(ot.kda)} "
                   f"({fmt_bytes(o.kda_layer)} a layer with {o.kda_heads} heads, {per} than {K3}'s "
                   f"{fmt_bytes(k.kda_layer)} with {k.kda_heads}) and its {o.n_mla} MLA layers {fmt_bytes(ot.mla)}")
    first = Said(f"At {at} {k3_holds}; {o_holds}.", (ev,))
    word = times(kt.total, ot.total, "more than", "less than", "the same as")
    drive = (f"{K3}'s cache grows by {fmt_bytes(k.slope)} per token ({k.n_mla} MLA layers × "
             f"{fmt_bytes(k.mla_per_token)}), {other}'s by {fmt_bytes(o.slope)} ({o.n_mla} × "
             f"{fmt_bytes(o.mla_per_token)})")
    if k.n_kda and o.n_kda:
        drive += f"; both pay a fixed state besides ({fmt_bytes(kt.kda)} against {fmt_bytes(ot.kda)})"
    elif k.n_kda:
        drive += f"; {K3} pays a fixed {fmt_bytes(kt.kda)} for its KDA states instead"
    cross = _crossing(k, o)
    if cross is not None:
        short = max(1, int(cross // 2))
        ks, os_ = k.at(short, pair.k3).total, o.at(short, pair.other).total
        drive += (f"; the lines cross at ~{cross:,.0f} tokens: at {short:,} tokens {K3} holds "
                  f"{compare(ks, os_, 'more', 'less', 'as much')} ({fmt_bytes(ks)} against {fmt_bytes(os_)})")
        values["crossing"] = float(cross)
    second = Said(f"Whole model: {K3} holds {fmt_bytes(kt.total)}, {word} {other}'s {fmt_bytes(ot.total)}. "
                  f"What drives it: {drive}.", (ev,))
    return Panel(fig, (first, second), ev, values=values)


def _curves_on(grid: list[int], k: Holdings, o: Holdings, pair: Pair) -> dict[str, list[float]]:
    """(name, values) of every line over `grid` (the page's context included, so a test reads it off the figure)."""
    out = {}
    for which, (h, cfg) in enumerate(((k, pair.k3), (o, pair.other))):
        out[f"{which}|whole model ({_kinds(h)})"] = [float(h.at(t, cfg).total) for t in grid]
        if h.n_kda:
            out[f"{which}|a KDA layer"] = [float(h.kda_layer)] * len(grid)
        if h.n_mla:
            out[f"{which}|an MLA layer"] = [float(h.layer_cache(t)) for t in grid]
    return out
