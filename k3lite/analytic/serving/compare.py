"""What each design choice buys in dollars, three models side by side, the seed's "six B300" claim, prefill
pools, and the prices the cost page takes (serving/step.py is the model; published.py checks it against every
published serving figure we could find).

Waterfall, one step per choice on the same hardware, from a K3-sized classic design to K3:
    classic     K3's config with the routed experts in d_model: half the experts (448) and half the top-k (8)
                at the same expert width, so the same expert parameters and FLOPs per token (LatentMoE,
                arXiv 2601.18089, reinvests the d/l saved bytes in d/l x more experts and top-k); all layers MLA;
                every weight bf16
    + LatentMoE 896 experts, top-16, in a 3584-wide latent (K3's MoE)
    + 3:1 KDA:MLA (K3's attention)
    + 4-bit experts (MXFP4 routed experts, the rest bf16: memory.RELEASED_K3_FORMATS)  = K3 as released
Each step is evaluated at the largest batch per GPU that fits in HBM and keeps every user at >= 20 tokens/s
(DeepSeek's reported average output speed), so a design that frees HBM can serve more sequences at once.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from k3lite.analytic import memory
from k3lite.model.presets import get_preset
from k3lite.analytic.cost import PRICES, ModelPrice, TaskProfile, analyze, planner_worker
from k3lite.analytic.hardware import get_gpu, gpu_label
from k3lite.base.wording import compare, times
from k3lite.model.cards import display_name
from k3lite.model.variants import classic_variant
from k3lite.analytic.serving.deployment import (
    K3_PRESET, MIN_TOKENS_PER_USER, Serving, price_table,
)
from k3lite.analytic.serving.step import (
    Prefill, Step, best_batch, decode_step, prefill_step, prefill_usd_per_m_input,
)
from k3lite.analytic.serving.frontier import FRONTIER_EP, FRONTIER_TP, cheapest_at, frontier
from k3lite.analytic.serving.price import DEFAULT_SHAPE, Shape, price_at_speed

FP8 = {"routed_experts": "fp8", "attention": "fp8", "shared": "fp8", "embeddings": "fp8"}
FP4_EXPERTS = {**FP8, "routed_experts": "mxfp4"}  # K3's expert format (config.json quantization_config), fp8 rest
BF16 = {**memory.RELEASED_K3_FORMATS, "routed_experts": "bf16"}  # every weight bf16: the waterfall's start
SUPER_NODE = dict(gpu="GB300 NVL72", n_gpus=64, ep=64)  # the seed's "64-GPU super-node", in one NVLink domain


# ------------------------------------------------------------------------------------------ six B300
class WeightsOnGPUs(NamedTuple):
    fmt: str
    bytes_total: float
    gpus: float  # fractional: bytes / HBM per GPU
    whole_gpus: int


def gpus_for_weights(preset: str = K3_PRESET, gpu: str = "B300") -> list[WeightsOnGPUs]:
    """The weights alone at each storage format (all components), in GPUs' worth of HBM."""
    cfg, hbm = get_preset(preset), get_gpu(gpu).hbm_bytes
    rows = []
    for fmt in memory.PRECISIONS:
        b = sum(memory.weight_bytes(cfg, fmt).values())
        rows.append(WeightsOnGPUs(fmt, b, b / hbm, math.ceil(b / hbm)))
    return rows


# ------------------------------------------------------------------------------------------ waterfall
class WaterfallStep(NamedTuple):
    label: str
    serving: Serving
    batch: int
    usd_per_m: float
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float


def waterfall(preset: str = K3_PRESET, context: int = 32768, **hardware) -> list[WaterfallStep]:
    hw = {**SUPER_NODE, **hardware}
    k3 = get_preset(preset)
    classic = classic_variant(k3).with_(kda_ratio=(0, 1))
    latent = k3.with_(name=f"{k3.name} (all MLA)", kda_ratio=(0, 1))
    steps = [("classic: full-width MoE, all MLA, bf16", classic, BF16), ("+ LatentMoE", latent, BF16),
             ("+ 3:1 KDA:MLA", k3, BF16), ("+ MXFP4 experts (= K3 as released)", k3, memory.RELEASED_K3_FORMATS)]
    out = []
    for label, cfg, fmt in steps:
        s = Serving(cfg, weights=fmt, context=context, **hw)
        b = best_batch(s, MIN_TOKENS_PER_USER)
        st = decode_step(s, b)
        out.append(WaterfallStep(label, s, b, st.usd_per_m_output_tokens, st.tokens_per_s_per_gpu,
                                 st.tokens_per_s_per_user))
    return out


# ------------------------------------------------------------------------------------------ side by side
def side_by_side(presets=("kimi-k3", "kimi-k2", "deepseek-v3"), context: int = 32768, **hardware) -> list[dict]:
    """Each model at fp8 and with 4-bit experts on the same hardware, at its best batch (>= 20 tokens/s/user)."""
    hw = {**SUPER_NODE, **hardware}
    rows = []
    for preset in presets:
        name = preset
        for label, fmt in (("fp8", FP8), ("4-bit experts", FP4_EXPERTS)):
            s = Serving(name, weights=fmt, context=context, **hw)
            b = best_batch(s, MIN_TOKENS_PER_USER)
            st = decode_step(s, b)
            rows.append({"model": name, "weights": label, "batch / GPU": b,
                         "tokens/s / GPU": round(st.tokens_per_s_per_gpu), "tokens/s / user": st.tokens_per_s_per_user,
                         "$ / M output": st.usd_per_m_output_tokens, "$ / M input (prefill)": prefill_usd_per_m_input(s),
                         "bound by": st.bound})
    return rows


# ------------------------------------------------------------------------------------------ speculation, prefill pools, prices
def speculation_sentence(s: Serving, batch: float) -> str:
    """What speculation does to one deployment at one batch, against the same step without it."""
    if s.spec is None:
        raise ValueError("speculation_sentence needs a Serving with spec set")
    plain, spec = decode_step(s.with_(spec=None), batch), decode_step(s, batch)
    sp = s.spec
    reach = compare(spec.hbm_bytes, plain.hbm_bytes, "more", "fewer", "the same")
    return (f"Speculation ({sp.draft_tokens} drafted, {sp.acceptance:.2f} kept per step, "
            f"{'the MTP layer' if sp.drafter == 'mtp' else 'a separate draft model'}): tokens/s per user "
            f"{plain.tokens_per_s_per_user:.0f} -> {spec.tokens_per_s_per_user:.0f} "
            f"({spec.tokens_per_s_per_user / plain.tokens_per_s_per_user:.2f}x), $ per M output "
            f"{plain.usd_per_m_output_tokens:.3f} -> {spec.usd_per_m_output_tokens:.3f}. The verification step reads "
            f"{spec.hbm_bytes / plain.hbm_bytes:.2f}x the HBM bytes ("
            + (f"{sp.draft_tokens + 1} tokens per sequence reach {reach} experts" if reach != "the same"
               else "at this batch every hosted expert is read either way")
            + f") and computes {spec.compute_s / plain.compute_s:.0f}x; the drafter adds {1e3 * spec.draft_s:.2f} ms. "
            + ("Speculation pays here." if spec.usd_per_m_output_tokens < plain.usd_per_m_output_tokens else
               f"Speculation does not pay here: verifying {sp.draft_tokens + 1} tokens per sequence makes the step "
               f"{spec.bound}-bound, {1e3 * spec.step_s:.1f} ms instead of {1e3 * plain.step_s:.1f} ms, for "
               f"{sp.acceptance:.2f} tokens kept."))


def _sticker(p: ModelPrice) -> str:
    return f"${p.input_per_m:g} / ${p.output_per_m:g} per M"


class PrefillPool(NamedTuple):
    prefill: Prefill | None  # None: no searched layout of this GPU fits
    serving: Serving | None
    note: str  # why the pool shown is not the one asked for, or why none fits ("" when it is the one asked for)


def prefill_pool(s: Serving, pool: int, chunk_tokens: int) -> PrefillPool:
    """A prefill pool of `pool` GPUs (= EP) of the deployment's GPU, formats and model, its attention TP the
    deployment's where it divides the pool and stays in one NVLink domain (else 1). When that does not fit, the
    smallest searched layout that does (EP in frontier.FRONTIER_EP from `pool` up, TP in FRONTIER_TP inside one NVLink
    domain), said by name; when none fits, why, by name. Never raises for a layout (a bad chunk still does)."""
    gpu = get_gpu(s.gpu)
    domain = gpu.nvlink_domain
    tp = s.tp if pool % s.tp == 0 and s.tp <= domain else 1
    asked = (int(pool), tp)
    tries = [asked] + [(e, t) for e in sorted({*FRONTIER_EP, int(pool)}) if e >= pool for t in FRONTIER_TP
                       if (e, t) != asked and e % t == 0 and t <= domain and (e <= domain or e % domain == 0)]
    why = {}
    for ep, t in tries:
        name = f"{ep} x {gpu_label(s.gpu)}, EP {ep}, TP {t}"
        try:
            layout = s.with_(n_gpus=ep, ep=ep, tp=t, dcp=1, spec=None)
            pre = prefill_step(layout, chunk_tokens)
        except ValueError as e:
            if "chunk_tokens" in str(e):
                raise
            why[name] = str(e)
            continue
        first = next(iter(why), None)
        note = "" if first is None else (f"The pool asked for, {first}, does not fit: {why[first]} The pool shown is "
                                         f"the smallest searched layout of this GPU that does, {name}.")
        return PrefillPool(pre, layout, note)
    first, last = next(iter(why)), list(why)[-1]
    rest = "" if last == first else f", nor does any searched layout up to {last} ({why[last]})"
    return PrefillPool(None, None, f"No prefill pool of {gpu_label(s.gpu)} fits {display_name(s.name)}: "
                                   f"{first} does not ({why[first]}){rest}.")


def price_split_sentence(decode: Step, prefill: Prefill, pool: str, model: str = K3_PRESET) -> tuple[float, dict, str]:
    """(output / input $ at cost, {model: list-price ratio}, the sentence comparing them) for a decode step and
    a prefill pool (`pool` names its GPUs) of the served `model` (a preset name): the verdict compares against that
    model's own sticker price (cost.PRICES), or says it has none."""
    ratio = decode.usd_per_m_output_tokens / prefill.usd_per_m_input_tokens
    listed = {p.name: p.output_per_m / p.input_per_m for k, p in PRICES.items() if k != "small-worker"}
    own = PRICES.get(model) if model != "small-worker" else None
    head = (f"Prefill runs on its own pool ({pool}, chunks of {prefill.chunk_tokens:,} tokens per GPU): "
            f"{prefill.compute_s * 1e6:.1f} µs of compute, {prefill.wire_s * 1e6:.1f} µs on the wire (DeepEP's normal "
            f"kernels) and {prefill.hbm_s * 1e6:.2f} µs of weight reads per token, so it is {prefill.bound}-bound at "
            f"${prefill.usd_per_m_input_tokens:.3f} per M input tokens. Decode at batch {decode.batch_per_gpu:g} costs "
            f"${decode.usd_per_m_output_tokens:.3f} per M output: an output token costs {ratio:.1f}x an input token at "
            "cost")
    others = ", ".join(f"{v:.1f}x for {n}" for n, v in listed.items() if own is None or n != own.name)
    if own is None:
        verdict_ = (f". {model} has no sticker price in this app, so there is no price list of its own to compare "
                    f"with (other models' lists: {others}).")
    else:
        sticker = listed[own.name]
        word = compare(sticker, ratio, "more", "less", "as")
        verdict_ = (f", against {sticker:.1f}x on {own.name}'s own sticker ({_sticker(own)}) and {others}. "
                    f"{own.name}'s sticker charges output "
                    + ("as steeply as" if word == "as" else f"{word} steeply than")
                    + " serving physics does here.")
    return ratio, listed, head + verdict_ + " List prices: " + "; ".join(
        f"{p.name}: {p.source}" for k, p in PRICES.items() if k != "small-worker") + "."


# ------------------------------------------------------------------------------------------ cost page
def physics_price(s: Serving | None = None, prices: dict | None = None, shape: Shape = DEFAULT_SHAPE,
                  speed: float = MIN_TOKENS_PER_USER, model: str = "bound") -> ModelPrice:
    """$ per M input and per M output tokens derived from serving physics, as a ModelPrice the cost page can use next
    to list prices: one request of `shape` at the largest batch that keeps `speed` tokens/s per user
    (price.price_at_speed: prefill and decode GPU-seconds, the price every path shows). No prompt-cache discount is
    derived: K3's listed one. `prices`: the page's price table's overrides ({GPU: $ per GPU-hour})."""
    if s is None:  # the weights as K3 ships them, at the shared price table's $ for its GPU
        s = Serving(**SUPER_NODE)
        s = s.with_(usd_per_gpu_hour=price_table(prices)[s.gpu][0])
    p = price_at_speed(s, shape, speed, model)
    if p is None:
        raise ValueError(f"{s.n_gpus} x {s.gpu} serve no request of {shape.label} at >= {speed:.0f} tokens/s per user")
    floor = "a roofline bound (cost floor)" if model == "bound" else "predicted with the fitted efficiencies"
    return ModelPrice(f"{display_name(s.name)} (serving physics)", p.usd_per_m_input, p.usd_per_m_output,
                      PRICES["kimi-k3"].cache_discount,
                      f"k3lite.analytic.serving on {s.n_gpus} x {s.gpu} at ${s.price:.2f}/GPU-hour, one request of "
                      f"{shape.label} at >= {speed:.0f} tok/s per user ({p.concurrency:,} in flight): "
                      f"{floor}, not a list price", kind="derived")


# ------------------------------------------------------------------------------------------ frontier -> cost page
FAST_TOKENS_PER_USER = 100.0  # "fast-and-pricey": OUR assumption of a fast provider's speed (5x DeepSeek's average)


def frontier_prices(preset: str = K3_PRESET, shape: Shape = DEFAULT_SHAPE,
                    speeds=(MIN_TOKENS_PER_USER, FAST_TOKENS_PER_USER),
                    prices: dict | None = None) -> dict[float, ModelPrice]:
    """{speed: ModelPrice} for the frontier's cheapest setup at each speed (tokens/s per user): its request price at
    `shape` (price.request_price), $ per M input and per M output as the frontier's point carries them (TP 1)."""
    fr = frontier(preset, shape, tps=(1,), prices=prices)  # data-parallel attention, as DeepSeek and SGLang decode: the cost
    #                                          page's two points (and its tests' sentences) are priced at TP 1
    out = {}
    for speed in speeds:
        w = cheapest_at(fr.setups, speed)
        if w is None:
            raise ValueError(f"no setup serves {preset} at >= {speed:.0f} tokens/s per user at {shape.label}")
        out[speed] = ModelPrice(f"{display_name(fr.preset)} at {speed:.0f}+ tok/s (serving cost)", w.usd_per_m_input,
                                w.usd_per_m_output, PRICES["kimi-k3"].cache_discount,
                                f"the frontier's cheapest setup at >= {speed:.0f} tokens/s per user: {w.label}, "
                                f"{w.tokens_per_s_per_user:.0f} tok/s per user; one request of {shape.label}, its "
                                f"prefill on the same GPUs; a cost floor, no margin; cache discount: K3's listed "
                                f"{100 * PRICES['kimi-k3'].cache_discount:.0f}%", kind="derived")
    return out


def task_vs_token_ranking(slow: ModelPrice, fast: ModelPrice, worker: ModelPrice, profile: TaskProfile,
                          planner_share: float, planner_success: float, worker_success: float) -> tuple[float, float, str]:
    """(fast / slow per output token, fast / slow per completed planner/worker task, the sentence): does ranking
    the two serving points by $ per task differ from ranking them by $ per token? Every pair of figures in the
    sentence is printed fast first and labelled."""
    per_token = fast.output_per_m / slow.output_per_m
    tasks = [analyze(planner_worker(m, worker, profile, planner_share, planner_success, worker_success))
             for m in (slow, fast)]
    per_task = tasks[1].per_completed_task / tasks[0].per_completed_task
    same = (per_token > 1) == (per_task > 1)

    def pair(f: float, s: float, digits: int) -> str:
        return f"fast ${f:.{digits}f} vs slow ${s:.{digits}f}"

    return per_token, per_task, (
        f"Priced at the frontier, the fast point is {times(fast.output_per_m, slow.output_per_m, 'dearer', 'cheaper')} "
        f"per output token ({pair(fast.output_per_m, slow.output_per_m, 3)} per M) and "
        f"{times(tasks[1].per_completed_task, tasks[0].per_completed_task, 'dearer', 'cheaper')} per completed "
        f"planner/worker task ({pair(tasks[1].per_completed_task, tasks[0].per_completed_task, 4)}): "
        f"{'the same ranking' if same else 'the ranking flips'}"
        + (f", but the gap shrinks from {max(per_token, 1 / per_token):.2f}x to {max(per_task, 1 / per_task):.2f}x: "
           f"input tokens (priced by the prefill pools, {pair(fast.input_per_m, slow.input_per_m, 3)} per M) and the worker's turns do not speed up "
           f"with interactivity (all output tokens are {pair(tasks[1].output_cost, tasks[0].output_cost, 4)} of "
           "each task)" if same and abs(per_task - 1) < abs(per_token - 1) else "") + ".")
