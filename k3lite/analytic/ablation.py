"""K3 and K3 without each of its ideas, on the seed's three axes, each bar a live computation.

For K3 as released and each variant of `k3lite.model.variants.K3_MINUS` (one idea swapped for what it replaces):
    bytes per decoded token   the home ledger's count (`ledger.ledger_of`): wire, weights, cache, AttnRes reads
    cache per sequence        the decode cache one sequence holds at the context (`memory.sequence_cache_bytes`)
    $ per M tokens (in + out) at a speed every user sees, on one deployment, by the fitted predictor
                              (`serving.target.solve`: the concurrency that keeps the speed, capped by HBM)
The balancing variants move the same bytes in this count: the ledger assumes every method balances the GPUs
evenly (how evenly each does is measured on the MoE page), so their effect here is none, and the sentence says so.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

from k3lite.analytic import memory
from k3lite.analytic.ledger import Deploy, ledger_of
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.target import solve
from k3lite.base.units import fmt_bytes
from k3lite.base.wording import compare, times
from k3lite.model.cards import display_name
from k3lite.model.presets import get_preset
from k3lite.model.variants import COMPARISONS, K3, K3_MINUS, comparison_config

AXES = ("bytes per decoded token", "cache per sequence", "$ per M tokens (8k in + 1k out)")
# the deployment the $ axis prices on: one 8-GPU B300 node, TP 8 (the replica SGLang's K3 recipe runs), K3's released
# formats; 30 tokens/s per user, 8K in / 1K out
SERVE = dict(gpu="B300", n_gpus=8, ep=8, tp=8)
SPEED, INPUT_LEN, OUTPUT_LEN = 30.0, 8192, 1024


class Row(NamedTuple):
    key: str  # "k3" or a K3_MINUS key
    label: str
    idea: str | None
    bytes_per_token: float
    cache_per_sequence: float
    usd_per_m: float  # nan when the speed is out of reach or nothing fits

    def value(self, axis: str) -> float:
        return {AXES[0]: self.bytes_per_token, AXES[1]: self.cache_per_sequence, AXES[2]: self.usd_per_m}[axis]


def _row(key: str, label: str, idea: str | None, cfg, context: int, deploy: Deploy) -> Row:
    led = ledger_of(cfg, context, deploy, label=label)
    cache = memory.sequence_cache_bytes(cfg, context).total
    try:
        usd = solve(Serving(preset=cfg, **SERVE), SPEED, 1, INPUT_LEN, OUTPUT_LEN).usd_per_m
    except ValueError:  # nothing fits on the node
        usd = float("nan")
    return Row(key, label, idea, led.total, float(cache), usd)


def ablation(context: int = 131_072, deploy: Deploy = Deploy()) -> list[Row]:
    """K3, then K3 without each idea (K3_MINUS order)."""
    k3 = get_preset(K3)
    rows = [_row("k3", display_name(K3), None, k3, context, deploy)]
    for key in K3_MINUS:
        c = COMPARISONS[key]
        rows.append(_row(key, c.label, c.idea, comparison_config(key, k3), context, deploy))
    return rows


def _effect(k3: float, other: float, fmt, rel_tol: float = 1e-9) -> str:
    """What the idea does to K3's number: K3's value against the variant's (the difference, and the ratio when it
    is not within 0.5%)."""
    if math.isnan(k3) or math.isnan(other):
        return "out of reach on one side"
    word = compare(k3, other, "more", "less", "the same", rel_tol=rel_tol)
    if word == "the same":
        return f"the same ({fmt(k3)})"
    ratio = times(k3, other, "more", "less")
    ratio = "" if ratio == "about the same" else f", {ratio}"
    return f"{fmt(abs(k3 - other))} {word} ({fmt(k3)} vs {fmt(other)}{ratio})"


def sentences(rows: list[Row], elsewhere: Callable[[str], str] = lambda key: "") -> list[str]:
    """Per idea: what K3 has on each axis against K3 without it, signs as computed (an idea that costs says so).
    `elsewhere(key)`: the clause naming where a variant's difference shows besides these axes ("" for none; the
    panel's k3lite.panels.core.where_else)."""
    k3 = rows[0]
    out = []
    usd = lambda v: f"${v:.2f}"  # noqa: E731 - a formatter, one line
    for r in rows[1:]:
        effects = [f"bytes per decoded token {_effect(k3.bytes_per_token, r.bytes_per_token, fmt_bytes)}",
                   f"cache per sequence {_effect(k3.cache_per_sequence, r.cache_per_sequence, fmt_bytes)}",
                   f"$ per M tokens {_effect(k3.usd_per_m, r.usd_per_m, usd, 1e-3)}"]
        if all(e.split(" (")[0].endswith("the same") for e in effects):
            out.append(f"**{r.idea}** (vs {COMPARISONS[r.key].instead}): the same on all three axes; "
                       f"{elsewhere(r.key) or 'what it buys is not in these numbers'}.")
            continue
        verdict = ""
        if not math.isnan(k3.usd_per_m) and not math.isnan(r.usd_per_m):
            word = compare(k3.usd_per_m, r.usd_per_m, "dearer", "cheaper", "no cheaper or dearer",
                           rel_tol=1e-3)
            verdict = f": at {SPEED:.0f} tokens/s per user it makes K3 {word} to serve"
        where = f" {elsewhere(r.key)[0].upper()}{elsewhere(r.key)[1:]}." if elsewhere(r.key) else ""
        out.append(f"**{r.idea}** (vs {COMPARISONS[r.key].instead}): K3 has " + "; ".join(effects) + verdict + "."
                   + where)
    return out


def deployment_sentence() -> str:
    """The one deployment the $ axis prices on (SERVE), named, and why its $ sits apart from the Serving page's
    frontier answer at the same speed, from its own numbers: the $ axis is the fitted predictor (target.solve:
    achieved shares of peak, a fixed time per layer, prefill stalls), the frontier by default the roofline bound
    (step.decode_step at the best batch that keeps the speed): the bound on this very node says how much of the gap
    is the model and not the deployment."""
    from k3lite.analytic.serving.frontier import RELEASED  # here: only the home page's panel asks
    from k3lite.analytic.serving.price import Shape, price_at_speed  # (the reason above)

    s = Serving(preset=get_preset(K3), **SERVE)
    t = solve(s, SPEED, 1, INPUT_LEN, OUTPUT_LEN)
    bound = price_at_speed(s, Shape(INPUT_LEN, OUTPUT_LEN), SPEED, "bound").usd_per_m  # the one request price
    cap = "the speed caps it" if t.binding == "speed" else f"{t.binding} caps it"
    return (f"The $ axis prices one deployment: one node of {s.n_gpus} x {s.gpu} (EP {s.ep}, attention TP {s.tp}, "
            f"{RELEASED}), {INPUT_LEN:,} input and {OUTPUT_LEN:,} output tokens per request, {SPEED:.0f} tokens/s "
            f"per user, by the fitted predictor (achieved shares of peak, a fixed time per layer, prefill stalls): "
            f"{t.concurrency:,} requests keep the speed there ({cap}), ${t.usd_per_m:.3f} per M tokens "
            f"(input + output) for K3. The Serving page's frontier predicts by default, searched over GPUs and "
            f"replicas; the bound on this same node at this speed is ${bound:.3f}: the predictor prices the node "
            f"{times(t.usd_per_m, bound, 'dearer', 'cheaper')} than the bound does. Every variant here is "
            "priced the same way on the same node.")
