"""The interconnect page's training panels: one training step's traffic per token, the page's model beside the
compared one on the same layout (no Streamlit).

    training_steps(layout, schedule, micro_batches)   the layout and its idea variants (k3lite.analytic.training)
    training_pair(layout, pair)         bytes per token of one step by kind (EP forward, EP backward, PP, DP), both
                                        models on the layout, paired on one axis, with what drives the difference
    training_assumptions()              the assumptions block's arguments
Every byte comes from `k3lite.analytic.training.step_traffic` (whose EP bytes are wire_bytes_per_token's copies x
the training records); every comparison word from `k3lite.base.wording`.
"""
from __future__ import annotations

import functools
from dataclasses import replace

from k3lite.analytic.sensitivity import Assumption
from k3lite.analytic.training import (
    LAYOUTS, SCHEDULE_SOURCES, StepTraffic, TrainingLayout, bubble_share, idea_variants, step_traffic,
    training_headline, training_sentence,
)
from k3lite.interconnect.pipeline import residual_comparison
from k3lite.interconnect.sentences import routing_rule_words
from k3lite.base.evidence import derived, measured_here, released
from k3lite.base.units import fmt_bytes, fmt_seconds
from k3lite.base.wording import times
from k3lite.model.presets import get_preset
from k3lite.model.variants import comparison_config
from k3lite.model.cards import display_name as model_name
from k3lite.panels.core import Pair, Panel, Said, changes_nothing, other_name, rebase, sentence, where_else
from k3lite.viz.compare import paired_bars
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import bytes_axis
from k3lite.viz.training import boundary_figure, bubble_figure, training_bytes_figure, training_time_figure

KINDS = ("EP forward", "EP backward", "PP", "DP")
DRIVES = {"EP forward": "copies x record width: top-k, E and the latent, as in inference",
          "EP backward": "the forward's copies turned round, gradients in their own wire formats",
          "PP": "the residual's vectors across each stage boundary (layers, d_model, AttnRes blocks)",
          "DP": "the parameters each GPU's shard reduce-scatters and all-gathers"}


@functools.lru_cache(maxsize=16)
def training_steps(layout: str, schedule: str, micro_batches: int) -> tuple[TrainingLayout, dict[str, StepTraffic]]:
    """The page's layout with its schedule and micro-batches, and the step with each of K3's ideas turned off
    (kept: every session at the same settings reads the same; nothing returned is mutated)."""
    lay = replace(LAYOUTS[layout](), schedule=schedule, micro_batches=micro_batches)
    return lay, idea_variants(lay)


def other_step(lay: TrainingLayout, pair: Pair) -> StepTraffic:
    """The compared model's step on the same layout: a released model as its preset; a K3 variant built from the
    layout's model (step_traffic counts its DP bytes from its own parameters)."""
    return step_traffic(other_layout(lay, pair), cfg=comparison_config(pair.key, get_preset(lay.preset))
                        if pair.ablation else None)


def other_layout(lay: TrainingLayout, pair: Pair) -> TrainingLayout:
    """The layout the compared model runs on: the page's, with a released model's own node limit (DeepSeek-V3's
    published 4 nodes; none for a model without a published layout, whose config's routing then holds) in place of
    the page's model's; a K3 variant keeps the page's."""
    if pair.ablation:
        return lay
    name = pair.other.name
    return replace(lay, preset=name, node_limit=LAYOUTS[name]().node_limit if name in LAYOUTS else 0)


def training_pair(lay: TrainingLayout, pair: Pair) -> Panel:
    """Bytes per token of one training step by kind, the layout's model and the compared one on one axis."""
    mine, name = step_traffic(lay), model_name(lay.preset)
    pair = rebase(pair, get_preset(lay.preset))  # a K3 variant of the layout's model
    other = other_name(pair, lay.preset)
    theirs = other_step(lay, pair)
    a, b = mine.by_kind(), theirs.by_kind()
    top = max(max(k.total for k in mine.kinds), max(k.total for k in theirs.kinds), 1.0)
    title, div = bytes_axis("bytes per token, one training step", top)
    ya, yb = [a[k].total / div for k in KINDS], [b[k].total / div for k in KINDS]
    unit = title.rsplit("(", 1)[1][:-1]
    fig = shared_figure(paired_bars, list(KINDS), ya, yb, (name, pair.label), pair.ablation,
                        dict(title=title, rangemode="tozero"),
                        title=f"one training step per token, PP {lay.pp} x EP {lay.ep} x DP {lay.dp}, {lay.schedule}",
                        text=([f"{v:.3g}" for v in ya], [f"{v:.3g}" for v in yb]), hover=f"%{{y:.3g}} {unit}",
                        evidence=derived(step_traffic))
    ev = (derived(step_traffic), lay.evidence.get("pp", derived(step_traffic)))
    if not pair.ablation:
        ev += (released("each model's config.json"),)
    ta, tb = mine.total_bytes, theirs.total_bytes
    values = {"k3_total": ta, "other_total": tb, **{f"k3 {k}": a[k].total for k in KINDS},
              **{f"other {k}": b[k].total for k in KINDS}}
    where = (f"PP {lay.pp} x EP {lay.ep} x DP {lay.dp}, {lay.schedule}, {lay.micro_batches} micro-batches of "
             f"{lay.micro_batch_tokens} tokens")
    if all(a[k].total == b[k].total for k in KINDS):
        said = [Said(f"{other} moves exactly the bytes {name} does per token of one training step: "
                     f"{fmt_bytes(ta)} on {where} (EP forward {fmt_bytes(a['EP forward'].total)}, EP backward "
                     f"{fmt_bytes(a['EP backward'].total)}, PP {fmt_bytes(a['PP'].total)}, DP "
                     f"{fmt_bytes(a['DP'].total)}, each equal).", ev)]
        if (where := where_else(pair, "interconnect")) and not changes_nothing(pair):
            said.append(Said(sentence(where), ev))
        return Panel(fig, tuple(said), derived(step_traffic), values=values)
    gap = max(KINDS, key=lambda k: abs(a[k].total - b[k].total))
    same = [k for k in KINDS if a[k].total == b[k].total]
    routed = ", ".join(f"{who} with {routing_rule_words(moe, layout.deployment())}" for who, moe, layout in (
        (name, get_preset(lay.preset).moe, lay), (other, pair.other.moe, other_layout(lay, pair))))
    first = Said(f"On {where}, {name} moves {fmt_bytes(ta)} per token of one training step against "
                 f"{other}'s {fmt_bytes(tb)}: {times(ta, tb, 'more', 'less')}, and spends "
                 f"{fmt_seconds(mine.comm_s)} of GPU time on the links against {fmt_seconds(theirs.comm_s)} "
                 f"(EP routed as each config and layout say: {routed}).", ev)
    second = Said(f"The largest difference is {gap}: {fmt_bytes(a[gap].total)} against {fmt_bytes(b[gap].total)}, "
                  f"{times(a[gap].total, b[gap].total, 'more', 'less')}, set by {DRIVES[gap]}."
                  + (f" Equal on both: {', '.join(same)}." if same else ""), ev)
    return Panel(fig, (first, second), derived(step_traffic), values=values)


def training_assumptions() -> tuple:
    """The training view's assumptions block's arguments (key, headline name, headline, assumptions, format) and
    its `also`: K3's GPU-µs per token of communication + bubble, each input moved ±20%."""
    args = ("ic_x_training_assumptions", "GPU-µs per token of communication + bubble (K3, assumed layout)",
            training_headline,
            [Assumption("micro_batches", "micro-batches per step", 120, "one 4K sequence each: 15,360 / DP 128",
                        "the 'micro-batches per step' slider"),
             Assumption("micro_batch_tokens", "tokens per micro-batch", 4096, "DeepSeek-V3's 4K sequences"),
             Assumption("grad_bytes", "bytes per gradient element (DP)", 2, "BF16 gradients reduce-scattered"),
             Assumption("pp_bytes", "bytes per element across a stage boundary", 2, "BF16 activations")],
            lambda v: f"{v:.1f} GPU-µs")
    also = [("layout", "K3's training layout is unpublished: DeepSeek-V3's PP 16 x EP 64 x DP 128 is taken"),
            ("overlap", "communication and compute are not overlapped in these times")]
    return args, also


LAYOUT_NAMES = {"kimi-k3": "K3 (assumed layout)", "deepseek-v3": "DeepSeek-V3 (published)"}
LAYOUT_HELP = ("DeepSeek-V3's published layout: PP 16 x EP 64 x DP 128 on H800s, FP8 dispatch (its report §3.2). K3's "
               "is unpublished: K3 is shown on DeepSeek-V3's layout (assumed), so the difference is the model's")
SCHEDULE_HELP = "; ".join(f"{k}: {v}" for k, v in SCHEDULE_SOURCES.items())
MEASURED_TOO = ("Backward bytes and stage boundaries are measured on this server too (gloo, exact integers against "
                "these counts): `python -m k3lite.interconnect measure --backward`, `python -m k3lite.interconnect "
                "pipeline`.")


def training_main(layout: str, lay: TrainingLayout, variants: dict[str, StepTraffic]) -> Panel:
    """The step's bytes per token by kind, as configured and with each idea off, and what to notice (`layout`:
    the key of LAYOUTS that `lay` was built from)."""
    fig = shared_figure(training_bytes_figure, variants, evidence=derived(step_traffic))
    words = training_sentence(layout, lay.schedule, lay.micro_batches)
    return Panel(fig, (Said(words, (derived(training_sentence), lay.evidence.get("pp", derived(step_traffic)))),))


def training_detail(lay: TrainingLayout, step: StepTraffic) -> tuple[Panel, Panel, Panel]:
    """Time per token on the links, the bubble against micro-batches, and what a stage boundary carries (with
    where the backward and the boundaries are measured)."""
    return (Panel(shared_figure(training_time_figure, step, evidence=derived(step_traffic))),
            Panel(shared_figure(bubble_figure, lay.pp, chosen=lay.micro_batches, evidence=derived(bubble_share))),
            Panel(shared_figure(boundary_figure, residual_comparison(get_preset(lay.preset), lay.pp),
                                evidence=derived(residual_comparison)),
                  (Said(MEASURED_TOO, (measured_here("python -m k3lite.interconnect measure --backward; python -m "
                                                     "k3lite.interconnect pipeline"),)),)))
