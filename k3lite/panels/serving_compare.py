"""The serving page's comparison: K3 (the page's model) and the compared config priced by the same frontier search,
on the same speed-price axes, with computed sentences on the difference and what drives it.

    compared_spec(pair, spec)      the speculation the compared model runs when the page speculates
    frontier_pair_figure(...)      the page's frontier figure with the compared model's envelope on the same axes
    difference(k3, other, ...)     at the page's speed: $ per M tokens (input + output) for each, and what drives the difference
                                   (bytes read per decoded token, cache per sequence and the sequences that fit,
                                   how many searched setups hold the weights)
"""
from __future__ import annotations

from k3lite.analytic.serving.deployment import Speculation, default_speculation, has_mtp
from k3lite.analytic.serving.frontier import Frontier, FrontierPoint, cheapest_at
from k3lite.analytic.serving.step import cache_bytes_per_sequence, forward_bytes
from k3lite.base.wording import compare, times
from k3lite.panels.core import Pair, Said, where_else
from k3lite.viz.compare import pair_colors
from k3lite.viz.serving import frontier_figure, log_axis_125
from k3lite.viz.style import HIGHLIGHT_LINE, fmt_bytes

def compared_spec(pair: Pair, spec: Speculation | None) -> Speculation | None:
    """The compared model speculates when the page does: a K3 variant with the page's drafter where it can run it
    (a variant ships no MTP layer of its own), another model with its own defaults (deployment.default_speculation)."""
    if spec is None:
        return None
    if pair.ablation and (spec.drafter == "draft-model" or has_mtp(pair.other)):
        return spec
    return default_speculation(pair.other if pair.ablation else pair.other.name)


def frontier_pair_figure(points, envelope, by_gpu, speed: float, chosen, other_envelope, other_chosen,
                         names: tuple[str, str], ablation: bool):
    """frontier_figure (K3's setups, each GPU's envelope, the cheapest of all, named for K3: names[0]) with the
    compared model's cheapest of all (names[1]) on the same log axes: its colour (another model) or K3's dashed (K3
    without one idea)."""
    fig = frontier_figure(points, envelope, by_gpu, speed, chosen)
    fig.update_traces(selector=dict(name="cheapest of all"), name=f"{names[0]}: cheapest of all", showlegend=True)
    other_name = names[1]
    colour = pair_colors(other_name, ablation)[1]
    hover = ("%{customdata[0]}<br>%{x:.1f} tok/s/user, $%{y:.3f}/M output, %{customdata[1]:,.0f} tok/s/GPU"
             f"<extra>{other_name}</extra>")
    xs, ys = [p.tokens_per_s_per_user for p in other_envelope], [p.usd_per_m for p in other_envelope]
    # a wide band like K3's cheapest of all (the GPUs' thin lines use the palette's hues too)
    fig.add_scatter(x=xs, y=ys, mode="lines", name=f"{other_name}: cheapest of all", hovertemplate=hover,
                    customdata=[[p.label, p.tokens_per_s_per_gpu] for p in other_envelope], opacity=0.6,
                    line=dict(color=colour, width=7, dash="dash" if ablation else "solid"))
    if other_chosen is not None:
        fig.add_scatter(x=[other_chosen.tokens_per_s_per_user], y=[other_chosen.usd_per_m],
                        mode="markers", name=f"{other_name}: cheapest at that speed", hovertemplate=hover,
                        customdata=[[other_chosen.label, other_chosen.tokens_per_s_per_gpu]],
                        marker=dict(color=colour, size=13, symbol="diamond", line=HIGHLIGHT_LINE))
    xs_all = [p.tokens_per_s_per_user for p in points] + xs + [speed]
    fig.update_layout(xaxis=log_axis_125("tokens/s per user (interactivity)", xs_all),
                      yaxis=log_axis_125("$ per M tokens, input + output", [p.usd_per_m for p in points] + ys))
    return fig


def _terms_of(fr: Frontier, p: FrontierPoint):
    """The step terms of the setup that made point p."""
    return next(u.terms for u in fr.setups if (u.gpu, u.ep, u.formats, u.tp, u.cache) == (p.gpu, p.ep, p.formats,
                                                                                       p.tp, p.cache)
                and (u.terms.spec is not None) == p.speculative)


def bytes_per_token(fr: Frontier, p: FrontierPoint) -> float:
    """HBM bytes one GPU reads per decoded token at point p (weights its tokens touch + their cache, / batch)."""
    return forward_bytes(_terms_of(fr, p), p.batch_per_gpu, 1) / p.batch_per_gpu


def difference(k3: Frontier, other: Frontier, speed: float, pair: Pair) -> tuple[tuple[Said, ...], dict]:
    """At >= speed tokens/s per user: each model's cheapest $ per M tokens (input + output, at the shape) on the same search and prices,
    the ratio, and what drives it; a comparison that changes nothing here says so and where it shows.
    Returns (sentences, values): values holds every number the sentences print, by name."""
    a, b = pair.k3_label, pair.label
    w, o = cheapest_at(k3.setups, speed), cheapest_at(other.setups, speed)
    if w is None or o is None:
        slow = [(n, f) for n, f, p in ((a, k3, w), (b, other, o)) if p is None]
        text = "; ".join(f"{n} reaches no {speed:.0f} tokens/s per user on any searched setup (its fastest: "
                         f"{max(q.tokens_per_s_per_user for q in f.points):.0f})" for n, f in slow)
        fast = [(n, p) for n, p in ((a, w), (b, o)) if p is not None]
        text += "".join(f"; {n} costs ${p.usd_per_m:.3f} per M tokens (input + output) there ({p.label})"
                        for n, p in fast)
        return (Said(text[0].upper() + text[1:] + ".", ()),), {}
    values = {"k3_usd": w.usd_per_m, "other_usd": o.usd_per_m,
              "k3_bytes": bytes_per_token(k3, w), "other_bytes": bytes_per_token(other, o),
              "k3_cache": cache_bytes_per_sequence(pair.k3, k3.context, cache=w.cache),
              "other_cache": cache_bytes_per_sequence(pair.other, other.context, cache=o.cache),
              "k3_weights": _terms_of(k3, w).weight_bytes_per_gpu,
              "other_weights": _terms_of(other, o).weight_bytes_per_gpu,
              "k3_fit": w.max_batch_per_gpu, "other_fit": o.max_batch_per_gpu,
              "k3_setups": len(k3.setups), "other_setups": len(other.setups)}
    ratio = times(values["other_usd"], values["k3_usd"], "dearer", "cheaper", same="the same price")
    first = (f"At >= {speed:.0f} tokens/s per user, the same search and prices: {a} ${w.usd_per_m:.3f} "
             f"per M tokens, input + output ({w.label}), {b} ${o.usd_per_m:.3f} ({o.label}): {b} is {ratio}.")
    same_bytes = compare(values["other_bytes"], values["k3_bytes"], "more", "less", "same")
    same_cache = compare(values["other_cache"], values["k3_cache"], "more", "less", "same")
    if pair.other.with_(name=pair.k3.name) == pair.k3:  # the page's model is the compared one, or lacks the idea
        second = (f"{b} is the same config as {a}" + (f": {a} lacks {pair.comparison.idea}, so nothing is swapped." if pair.ablation
                                                      else ": pick another model above or another comparison."))
        return (Said(first, ()), Said(second, ())), values
    if ratio == "the same price" and same_bytes == same_cache == "same":
        where = where_else(pair, "serving") or "its difference shows on the page that draws it"
        second = (f"It changes nothing here: with {pair.comparison.instead} a GPU reads the same "
                  f"{fmt_bytes(values['k3_bytes'])} per token it decodes and a sequence caches the same "
                  f"{fmt_bytes(values['k3_cache'])} per {k3.context:,} tokens as with {pair.comparison.idea}; "
                  f"{where}.")
        return (Said(first, ()), Said(second, ())), values  # evidence: added by the caller, in one place
    bytes_word = times(values["other_bytes"], values["k3_bytes"], "more", "less", same="the same")
    cache_word = times(values["other_cache"], values["k3_cache"], "more", "less", same="the same")
    second = (f"What drives it: a GPU reads {fmt_bytes(values['other_bytes'])} of HBM per token it decodes for {b} vs "
              f"{fmt_bytes(values['k3_bytes'])} for {a} ({bytes_word}, at batch {o.batch_per_gpu} vs "
              f"{w.batch_per_gpu}); a {k3.context:,}-token sequence caches {fmt_bytes(values['other_cache'])} vs "
              f"{fmt_bytes(values['k3_cache'])} ({cache_word}); at those setups {o.max_batch_per_gpu:,} vs "
              f"{w.max_batch_per_gpu:,} sequences fit per GPU beside {fmt_bytes(values['other_weights'])} vs "
              f"{fmt_bytes(values['k3_weights'])} of weights, and {len(other.setups)} vs {len(k3.setups)} of the "
              "searched setups hold the weights at all.")
    return (Said(first, ()), Said(second, ())), values
