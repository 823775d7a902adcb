"""The serving page's first screen, as panels (views/serving.py lays them out; no Streamlit here).

    deployment(...)            the reader's deployment (the GPU choice is made here, in one place): placed, its batch,
                               its predicted and bound decode steps, or the error that stops it
    prediction_check_panel()   the predictor against every published run (fit.checked)
    frontier_view(...)         the speed-price frontier, its verdict and, with a comparison, the compared model on the
                               same axes with the difference in sentences (serving_compare)
    deployment_panel(d)        the deployment's one sentence under the frontier
    prediction_terms(), per_gpu(...)   the tables behind the first screen
    page_assumptions(...)      the assumptions block's inputs: the tornado's rows, built in one place
A section is a list of items drawn in order: a Panel (k3lite.panels.core), a row of Metric, a Table, a Note, a Code.
"""
from __future__ import annotations

import math
from functools import lru_cache, partial
from typing import Any, NamedTuple

from k3lite.analytic.cost import PRICES
from k3lite.analytic.hardware import GPUS, gpu_label, gpu_name
from k3lite.analytic.sensitivity import Assumption
from k3lite.analytic.serving import (
    FORMAT_ALIASES, K3_PRESET, PREFILL_CHUNK_TOKENS, Serving, Speculation, check_fits, decode_step, has_mtp,
)
from k3lite.analytic.serving.deployment import (
    CACHE_FORMATS, MTP_LAYERS, against_deepseek, default_speculation, price_evidence, price_kind, price_table, speculation_source,
)
from k3lite.analytic.serving.fit import FITTED, MEANING, checked, checked_sentence, fit
from k3lite.analytic.serving.frontier import (
    DEFAULT_FORMATS, FORMAT_KEYS, FRONTIER_CACHES, FRONTIER_EP, FRONTIER_FORMATS, FRONTIER_GPUS, FRONTIER_TP,
    cheapest_usd_per_m, frontier,
    per_gpu_at, per_gpu_rows, verdict,
)
from k3lite.analytic.serving.predict import as_step, terms
from k3lite.analytic.serving.price import DEFAULT_SHAPE, Shape, request_price
from k3lite.analytic.serving.step import PREFILL_CHUNK_SOURCE
from k3lite.base.evidence import Evidence, assumed, derived, released
from k3lite.model.variants import comparison_config
from k3lite.model.presets import get_preset
from k3lite.panels.core import Code, Metric, Note, Pair, Panel, Said, Table  # noqa: F401 (the sections' items)
from k3lite.panels.serving_compare import compared_spec, difference, frontier_pair_figure
from k3lite.panels.serving_envelope import RUNS, groups_items, verdict_said
from k3lite.viz.memo import shared_figure
from k3lite.viz.serving import frontier_figure, prediction_figure

# the evidence each number on this page carries (k3lite.base.evidence)
FITTED_EV = derived(fit)  # the efficiencies: least squares over RUNS (`python -m k3lite.analytic.serving predict`)
PRICE_EV = assumed("$ per GPU-hour: assumed, or a quoted rental rate (listed) where the price list cites one")
CONFIG_EV = released("the model's config.json (k3lite.model.presets) and the GPU table's datasheets")
LIST_EV = PRICES["kimi-k3"].evidence  # K3's list price: listed, the same entry and class as on the cost page
HOW = (
    "The price of a token is set by serving physics: the weights are sharded over many GPUs, the KV cache "
    "fights the weights for HBM, and every token hops the interconnect twice per MoE layer. Pick a model, a GPU "
    "and a layout; the page places the weights, counts how many sequences fit, times one decode step "
    "(HBM reads, compute, dispatch + combine) and turns it into tokens/s and dollars. That roofline is an **upper "
    "bound** on throughput (a floor on cost). The **prediction** adds what real engines spend: a fixed time per "
    "layer, the share of HBM bandwidth and of peak FLOPs they achieve (three terms fitted to published K3 runs), "
    "TP all-reduces, and prefills queued against decode when users arrive together. Every price on the page is one "
    "request of the **request shape** (input tokens, output tokens, the share of the input a prefix cache serves): "
    "its prefill and decode GPU-seconds, as $ per M input, $ per M output, and blended over both at that shape.")
CODE = (checked, frontier, terms, decode_step)  # the first screen's "code behind this figure"
SHAPE_HELP = ("every price on the page is one request of this shape (price.request_price): its prefill and decode "
              "GPU-seconds, quoted per M input, per M output and blended over both")
SHAPE_INPUTS = (("sv_t_in", DEFAULT_SHAPE.input_len, 1, 10_000_000), ("sv_t_out", DEFAULT_SHAPE.output_len, 2, 1_000_000),
                ("sv_cached", DEFAULT_SHAPE.cached, 0.0, 0.99))  # (URL key, default, low, high)
NOT_RUN = "Your deployment does not run (its message is under the frontier): change it in 'Your deployment'."


PRESETS = [K3_PRESET, "kimi-k2", "deepseek-v3", "kimi-linear-48b-a3b"]  # the page's model choice
FORMATS = [f for f in FORMAT_ALIASES if f != "fp4"]  # a deployment's storage formats ("fp4" is NVFP4's alias)
# the URL carries short keys for the searched formats: a format's name has a comma in it, and a list travels
# comma-joined


def search(formats, tps, caches, my_gpu: str | None = None) -> tuple:
    """(weight formats, TP sizes, cache formats, GPUs) the frontier searches, from the page's three boxes (format
    keys, TP sizes as text, cache formats; an emptied box searches its default) and the reader's own GPU, searched
    beside the table's when given."""
    return (tuple(FORMAT_KEYS[k] for k in formats or DEFAULT_FORMATS), tuple(int(t) for t in tps) or FRONTIER_TP,
            tuple(caches) or FRONTIER_CACHES, FRONTIER_GPUS + ((my_gpu,) if my_gpu else ()))


# ------------------------------------------------------------------------------------------ the deployment
def gpu_choices(mine: str | None = None) -> list[str]:
    """The GPUs the deployment can be placed on (hardware.GPUS), and the reader's own when given."""
    return list(GPUS) + ([mine] if mine else [])


def speculation(on: bool, draft: int, acceptance: float, preset: str) -> Speculation | None:
    """The page's speculation: the model's MTP layer where it ships one, else a draft model (None when off)."""
    return Speculation(int(draft), float(acceptance), "mtp" if has_mtp(preset) else "draft-model") if on else None


class Deployment(NamedTuple):
    serving: Serving | None  # None when the layout does not even build
    place: Any = None  # step.Placement
    batch: int | None = None
    step: Any = None  # the roofline bound (step.Step); None when it does not run
    predicted: Any = None  # the predictor's step at the same batch
    error: str = ""
    price_source: str = ""
    layout: str = ""  # "64 x GB300 NVL72, EP 64, TP 1": what its error names
    price: Any = None  # price.RequestPrice: one request of the page's shape at this batch, predicted
    bound_price: Any = None  # the same by the roofline bound

    @property
    def price_evidence(self) -> Evidence:
        return price_evidence(self.price_source)


def deployment(preset: str, gpu: str, n_gpus: int, ep: int, tp: int, experts: str, rest: str, context: int,
               overlap: bool, prices: dict, spec: Speculation | None, batch: int = 0,
               shape: Shape = DEFAULT_SHAPE) -> Deployment:
    """The reader's deployment, priced from the page's one price table (`prices`: GPU -> $ per GPU-hour as typed);
    batch 0 = the most that fit at `context` and at the shape's length. Its price is one request of `shape` at that batch (price.request_price,
    batch x GPUs requests in flight). A layout that does not fit or does not build keeps its message in `error`."""
    source = price_table(prices)[gpu_name(gpu)]
    layout = f"{n_gpus} x {gpu_label(gpu)}, EP {ep}, TP {tp}"
    s = None
    try:
        s = Serving(preset, gpu, int(n_gpus), int(ep), int(tp),
                    {"routed_experts": experts, "attention": rest, "shared": rest, "embeddings": rest},
                    int(context), bool(overlap), source[0], spec=spec)
        place = check_fits(s, int(batch) or None)  # refuses what does not fit before anything else runs
        shaped = s.with_(context=shape.input_len + shape.output_len)  # the priced request must fit too
        b = int(batch) or min(place.max_batch_per_gpu, check_fits(shaped).max_batch_per_gpu)
        check_fits(shaped, b)
        c = b * s.n_gpus
        return Deployment(s, place, b, decode_step(s, b), as_step(terms(s), FITTED.efficiency, b), "", source[1],
                          layout, request_price(s, shape, c, "predicted", acceptance=spec.acceptance if spec else None),
                          request_price(s, shape, c, "bound"))
    except ValueError as e:
        return Deployment(s, error=str(e), price_source=source[1], layout=layout)


def deployment_panel(d: Deployment) -> Panel:
    """The deployment's sentence under the frontier (its error is the page's to draw: d.error)."""
    s, p, b = d.serving, d.price, d.bound_price
    text = (f"Your deployment ({s.n_gpus} × {gpu_label(s.gpu)}, EP {s.ep}, TP {s.tp}, batch {d.batch}/GPU, "
            f"{p.concurrency:,} requests in flight): predicted {p.tokens_per_s_per_user:.1f} tokens/s per user, "
            f"{p.says()}; bound {b.tokens_per_s_per_user:.1f}, ${b.usd_per_m:.3f} per M tokens.")
    return Panel(None, (Said(text, (derived(request_price, as_step, decode_step), d.price_evidence)),),
                 values={"predicted_usd": p.usd_per_m, "bound_usd": b.usd_per_m,
                         "predicted_usd_input": p.usd_per_m_input, "predicted_usd_output": p.usd_per_m_output})


# ------------------------------------------------------------------------------------------ the predictor, checked
@lru_cache(maxsize=1)  # a fit of every published run but one, per run: the same for every reader
def _checked():
    return checked()


def prediction_check_panel() -> Panel:
    check = _checked()
    fig = shared_figure(prediction_figure, check.rows, evidence=derived(checked),
                        evidence_by_name={"roofline bound": derived(decode_step)})
    return Panel(fig, (Said(checked_sentence(check), (derived(checked, checked_sentence), RUNS)),),
                 evidence=derived(checked))


def prediction_terms() -> list:
    """The fitted terms, every run predicted against measured, and each group of runs held out (the 'what the
    prediction fits' expander)."""
    terms_rows = [{"term": k, "value": f"{v * 1e6:.0f} µs" if k == "layer_s" else f"{v:.2f}", "what it means": MEANING[k]}
                  for k, v in FITTED.values().items()]
    runs = [{"run": r["row"], "fitted": r["fitted"], "TPOT measured (ms)": round(r["measured TPOT (ms)"], 2),
             "TPOT predicted (ms)": round(r["predicted TPOT (ms)"], 2), "TPOT error": f"{100 * r['tpot error']:+.0f}%",
             "TTFT measured (s)": round(r["measured TTFT (s)"], 3), "TTFT predicted (s)": round(r["predicted TTFT (s)"], 3),
             "TTFT error": f"{100 * r['ttft error']:+.0f}%" if r["TTFT scored"] else "arrivals unknown",
             "bound TPOT (ms)": round(r["bound TPOT (ms)"], 2), "source": r["source"]} for r in _checked().rows]
    return [Table(terms_rows, {"value": FITTED_EV}),
            Note("Fitted (least squares on log errors, `k3lite.analytic.serving.fit`) to the published runs below; "
                 "every other input is released (K3's config), a datasheet's (the GPU table) or cited (the runs' "
                 "settings). The GPU-hour prices are assumed unless the price list says cited."),
            Table(runs, {"TPOT measured (ms)": RUNS, "TTFT measured (s)": RUNS, "bound TPOT (ms)": derived(decode_step)},
                  derived(checked)), *groups_items()]


# ------------------------------------------------------------------------------------------ the frontier
@lru_cache(maxsize=32)  # every reader at the same settings shares one search (~0.2 s each)
def page_frontier(preset: str, shape: Shape, prices: tuple, spec: Speculation | None, model: str, search: tuple,
                  vs: str | None = None):
    """The frontier of `preset` (or of the config compared with it, `vs` a COMPARISONS key) over the page's search
    (formats, TP sizes, cache formats) at the page's prices ((GPU, $) pairs)."""
    formats, tps, caches, gpus = search
    cfg = preset if vs is None else comparison_config(vs, get_preset(preset))
    return frontier(cfg, shape, prices=dict(prices), spec=spec, model=model, formats=formats, tps=tps, caches=caches,
                    gpus=gpus)


class FrontierView(NamedTuple):
    panel: Panel
    frontier: Any  # frontier.Frontier
    verdict: Any  # frontier.Verdict
    predicted: Any  # the predicted frontier (the assumptions block's), the same object when the page predicts


def frontier_view(preset: str, shape: Shape, prices: dict, spec: Speculation | None, bound: bool, search: tuple,
                  speed: float, pair: Pair | None = None) -> FrontierView:
    """The speed-price frontier at the page's settings and its verdict; with a pair, the compared config searched
    the same way on the same axes, and two sentences on the difference at `speed`."""
    model, key = ("bound" if bound else "predicted"), tuple(sorted(prices.items()))
    fr = page_frontier(preset, shape, key, spec, model, search)
    v = verdict(fr, speed)
    w = v.winner
    said = [Said(("**Roofline bound** (a floor on price). " if bound else "**Predicted.** ") + v.sentence,
                 (derived(frontier, verdict), price_evidence(fr.prices[w.gpu][1]) if w else PRICE_EV, FITTED_EV))]
    values = {"usd_per_m": w.usd_per_m, "usd_per_m_input": w.usd_per_m_input,
              "usd_per_m_output": w.usd_per_m_output} if w else {}
    args = (fr.points, fr.envelope, fr.by_gpu, speed, w)
    if pair is None:
        fig = shared_figure(frontier_figure, *args, evidence=derived(frontier),
                            evidence_by_name={"cheapest at that speed": derived(verdict)})
    else:
        other = page_frontier(preset, shape, key, compared_spec(pair, spec), model, search, pair.key)
        o = verdict(other, speed).winner
        fig = shared_figure(frontier_pair_figure, *args, other.envelope, o, (pair.k3_label, pair.label), pair.ablation,
                            evidence=derived(frontier), evidence_by_name={"cheapest at that speed": derived(verdict)})
        sentences, diff = difference(fr, other, speed, pair)
        said += [Said(s.text, (derived(frontier, difference), PRICE_EV, FITTED_EV)) for s in sentences]
        values.update(diff)
    if not bound:  # how far the answer sits from the runs, last: the band is the predictor's error, a bound has none
        said += verdict_said(fr, w, speed)
    pred = fr if not bound else page_frontier(preset, shape, key, spec, "predicted", search)
    return FrontierView(Panel(fig, tuple(said), derived(frontier), values=values), fr, v, pred)


def per_gpu(fr, search: tuple, speed: float, spec: Speculation | None, name: str) -> list:
    """'Each GPU at this speed': what was searched, speculation's source, and every GPU's cheapest point or why none."""
    hopper = ", ".join(g for g in FRONTIER_GPUS if not GPUS[g].fp4_flops)
    items = [Note(f"Priced: one request of {fr.shape.label} (price.request_price: its prefill and decode GPU-seconds; "
                  "$ per M tokens blended at that shape, and split into $ per M input and per M output). "
                  f"Searched (change it under 'What the frontier searches'): one replica on EP GPUs, EP in "
                  f"{', '.join(map(str, FRONTIER_EP))}; attention TP {', '.join(map(str, search[1]))} (TP 1: "
                  f"data-parallel attention); weights {'; '.join(search[0])}; MLA cache {', '.join(search[2])}; every "
                  "batch that fits. Prices (sources on hover): " + ", ".join(
                      f"{gpu_label(g)} {price_kind(fr.prices[g][1])}" for g in (*GPUS, *(g for g in search[3] if g not in GPUS)))
                  + ". "
                  + f"Our assumption: the Hopper GPUs ({hopper}) have no FP4 tensor cores, so their 4-bit experts are "
                  "modelled as dequantised to FP8 (4-bit bytes read, FP8 FLOPs).")]
    if spec is not None:
        items.append(Note(f"Speculation: {name} ships {MTP_LAYERS[name][0]} MTP layer(s) ({MTP_LAYERS[name][1]}), so "
                          f"the drafter is {'its MTP layer' if spec.drafter == 'mtp' else 'a separate model'}. "
                          f"Defaults: {speculation_source(name)}."))
    none = {"$ / M tokens (in + out)": None, "$ / M input": None, "$ / M output": None, "tok/s / user": None,
            "tok/s / GPU": None, "bound by": ""}
    rows = [{"GPU": gpu_label(g), "setup": p.label, "$ / M tokens (in + out)": round(p.usd_per_m, 3),
             "$ / M input": round(p.usd_per_m_input, 3), "$ / M output": round(p.usd_per_m_output, 3),
             "tok/s / user": round(p.tokens_per_s_per_user, 1), "tok/s / GPU": round(p.tokens_per_s_per_gpu),
             "bound by": p.bound} if p is not None else {"GPU": gpu_label(g), "setup": f"none: {why}", **none}
            for g, p, why in per_gpu_rows(fr, search[3], speed)]
    evs = {}  # each row's price class, from its source (deployment.price_evidence): listed, or assumed
    for r, g in zip(rows, search[3]):
        ev = evs.setdefault(price_evidence(fr.prices[g][1]).kind, price_evidence(fr.prices[g][1]))
        r.update({"$ / GPU-hour": fr.prices[g][0], "price is": f"{price_kind(fr.prices[g][1])} {ev.marker}"})
    col = tuple(evs.values())
    return items + [Table(rows, {"$ / GPU-hour": col if len(col) > 1 else col[0]}, derived(per_gpu_at, frontier))]


# ------------------------------------------------------------------------------------------ assumptions
@lru_cache(maxsize=64)  # the tornado moves each assumption ±20%: each a frontier search
def headline(preset: str, prices: tuple, spec: Speculation | None, price_gpu: str, search: tuple,
             **assumed_values) -> float:
    """The page's headline: frontier.cheapest_usd_per_m over the page's search (`search`: formats, TPs, caches)."""
    formats, tps, caches, gpus = search
    return cheapest_usd_per_m(preset, dict(prices), spec, price_gpu=price_gpu, formats=formats, tps=tps,
                              caches=caches, gpus=gpus, **assumed_values)


def usd_or_out_of_reach(speed: float, v: float) -> str:
    return f"${v:.3f}" if math.isfinite(v) else f"out of reach (no setup keeps {speed:.0f} tok/s per user)"


class Assumptions(NamedTuple):
    """views.common.assumptions_block's arguments, in its order."""

    headline_name: str
    headline: Any
    assumptions: list
    fmt: Any
    also: list


def page_assumptions(view: FrontierView, preset: str, shape: Shape, prices: dict, spec: Speculation | None,
                     search: tuple, speed: float) -> Assumptions | None:
    """The tornado's rows (each assumed input of the headline, moved ±20% by the block) and the assumptions that are
    not a number; None when no setup reaches the speed (no headline to move)."""
    top = verdict(view.predicted, speed).winner
    if top is None:
        return None
    eff, key, table = FITTED.efficiency, tuple(sorted(prices.items())), price_table(prices)
    fitted_why = ("fitted to the published B300 runs (k3lite.analytic.serving.fit; `python -m "
                  "k3lite.analytic.serving predict` prints it)")
    rows = [
        Assumption("usd_per_gpu_hour", f"{gpu_label(top.gpu)} $ per GPU-hour", table[top.gpu][0], table[top.gpu][1],
                   "the 'GPU-hour prices ($)' expander", "$"),
        Assumption("input_len", "input tokens per request", float(shape.input_len),
                   "SGLang's and vLLM's K3 benchmarks (8k in / 1k out)", "the 'request shape' inputs", "tokens"),
        Assumption("hbm_fraction", "achieved share of HBM bandwidth", eff.hbm_fraction, fitted_why),
        Assumption("flops_fraction", "achieved share of peak FLOPs", eff.flops_fraction, fitted_why),
        Assumption("layer_s", "fixed time per layer per forward pass", eff.layer_s, fitted_why, unit="s"),
    ] + ([Assumption("acceptance", "tokens kept per speculation step", float(spec.acceptance),
                     speculation_source(preset), "the 'acceptance' input")] if spec is not None else [])
    rest = dict(output_len=shape.output_len, cached=shape.cached)  # the shape's parts the tornado does not move
    faster = headline(preset, key, spec, top.gpu, search, speed=1.2 * speed, input_len=float(shape.input_len), **rest)
    also = [("interactive speed", f"{speed:.0f} tokens/s per user, our assumption ({against_deepseek(speed)}): "
             + (f"at {1.2 * speed:.0f} no setup reaches it with the fitted efficiencies, so it is a threshold, "
                "not a dial for the tornado" if math.isinf(faster) else
                f"at {1.2 * speed:.0f} the cheapest setup costs ${faster:.3f} per M tokens (input + output)")),
            ("weight format", format_swing(preset, key, spec, top.gpu, search, speed, shape)),
            ("request shape", f"{shape.label}: the price is blended over its input and output tokens"),
            ("Hopper and 4-bit experts", "H100, H800 and H200 have no FP4 tensor cores: their NVFP4 / MXFP4 "
             "experts are modelled as dequantised to FP8 (4-bit bytes, FP8 FLOPs)"),
            ("prefill chunk", f"{PREFILL_CHUNK_TOKENS:,} tokens per GPU per forward: {PREFILL_CHUNK_SOURCE}"),
            ("routing", "uniform: every expert equally likely for every token (wire bytes, experts hit)"),
            ("engine reserve", "15% of HBM kept out of the cache pools (SGLang's --mem-fraction-static 0.85)")]
    return Assumptions(f"Predicted $ per M tokens ({shape.label}, input + output) at >= {speed:.0f} tok/s per user",
                       partial(headline, preset, key, spec, top.gpu, search, speed=float(speed), **rest), rows,
                       partial(usd_or_out_of_reach, float(speed)), also)


def format_swing(preset: str, prices: tuple, spec: Speculation | None, price_gpu: str, search: tuple,
                 speed: float, shape: Shape = DEFAULT_SHAPE) -> str:
    """The headline with the frontier held to each weight format and to each MLA cache format in turn: a format is a
    choice, not a number to move ±20%, so its range is the formats themselves (the page searches the ones ticked)."""
    def usd(s: tuple) -> str:
        return usd_or_out_of_reach(speed, headline(preset, prices, spec, price_gpu, s, speed=float(speed),
                                                   input_len=float(shape.input_len), output_len=shape.output_len,
                                                   cached=shape.cached))

    weights = [f"{f}: {usd(((f,), *search[1:]))}" for f in FRONTIER_FORMATS]
    caches = [f"{c}: {usd((search[0], search[1], (c,), search[3]))}" for c in CACHE_FORMATS]
    return (f"the cheapest setup at >= {speed:.0f} tok/s per user, per M tokens at {shape.label}, with the weights as "
            f"{'; '.join(weights)}; with the MLA cache as {'; '.join(caches)} (the page searches "
            f"{'; '.join(search[0])} and a {', '.join(search[2])} cache).")


def spec_defaults(presets) -> dict:
    """Each model's own speculation defaults (DeepSeek-V3's MTP figures, K3's DSpark figures for the rest), as the
    page's two inputs."""
    return {p: {"sv_draft": default_speculation(p).draft_tokens, "sv_accept": default_speculation(p).acceptance}
            for p in presets}
