"""The speed-price frontier: every GPU, format and EP size at once, the way the market sees a model.

For one model and request shape (price.Shape: input, output, cached share), each setup (GPU x weight formats x EP
size, one replica on EP GPUs with data-parallel attention, as DeepSeek and SGLang decode; with and without speculative
decoding when a drafter is given) gives a curve over batch size: tokens/s per user against the request's price, $ per
M tokens blended at the shape (price.request_price: prefill and decode GPU-seconds, the one price every path shows). The *lower envelope* of all the curves is the cheapest
setup at each interactivity: read left to right, slow-and-cheap to fast-and-pricey. Per GPU, the same envelope over
that GPU's setups is its row of the frontier.

    envelope   sort all points by tokens/s per user, fastest first; keep a point when it is cheaper than every
               faster one. The kept points, slowest first, rise in price as they rise in speed.
    cheapest   at a speed s: the cheapest point with tokens/s per user >= s (on the envelope by construction).

CLI (serving/__main__.py): python -m k3lite.analytic.serving frontier --preset kimi-k3 --input-len 8192 --output-len 1024 --json
"""
from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from k3lite.base.units import fmt_capacity
from k3lite.model.config import K3Config
from k3lite.model.presets import PRESETS, get_preset
from k3lite.model.cards import display_name
from k3lite.analytic.hardware import get_gpu, gpu_label
from k3lite.analytic.serving.deployment import CACHE_FORMATS, K3_PRESET, Serving, Speculation, price_kind, price_table
from k3lite.analytic.serving.admission import ENGINE_RESERVE, admission
from k3lite.analytic.serving.fit import FITTED
from k3lite.analytic.serving.predict import Efficiency, as_step
from k3lite.analytic.serving.price import (
    DEFAULT_SHAPE, RequestPrice, Shape, bound_price, bound_terms, check_shape, concurrency_step, fastest_concurrency,
    predicted_price, predicted_terms,
)
from k3lite.analytic.serving.step import Prefill, Step, StepTerms, curve_batches, placement, step_at

_REST = ("attention", "shared", "embeddings")
# the storage formats the frontier tries: each is what some released checkpoint or vendor quantisation ships
FRONTIER_FORMATS: dict[str, dict[str, str]] = {
    "fp8": {"routed_experts": "fp8", **{c: "fp8" for c in _REST}},  # DeepSeek-V3's and Kimi K2's release
    "MXFP4 experts, bf16 rest (K3's released formats)": {"routed_experts": "mxfp4", **{c: "bf16" for c in _REST}},  # Kimi K3's
    "NVFP4 experts, fp8 rest": {"routed_experts": "nvfp4", **{c: "fp8" for c in _REST}},  # a Blackwell-native quantisation
}
RELEASED = "MXFP4 experts, bf16 rest (K3's released formats)"  # the format K3 ships in: the page's default search
# short names of the formats (the page's URL and the CLI's --formats): a format's full name has commas in it
FORMAT_KEYS = {"released": RELEASED, "nvfp4": "NVFP4 experts, fp8 rest", "fp8": "fp8"}
assert set(FORMAT_KEYS.values()) == set(FRONTIER_FORMATS), "every frontier format has a short key"
DEFAULT_FORMATS = ("released",)  # what the page and the CLI search unless told: the formats K3 ships in
DEFAULT_MODEL = "predicted"  # the page's and the CLI's default model
FRONTIER_EP = (8, 16, 32, 64, 72, 128, 144)  # GPUs per replica = EP size. An EP wider than one NVLink domain must
#                                              fill whole domains (72 on NVL72)
FRONTIER_TP = (1, 2, 4, 8)  # attention's TP inside the replica: 1 = data-parallel attention (DeepSeek's, SGLang's
#                             decode), EP = TP = 8 = tensor-parallel attention on one node (vLLM's K3 post); a TP group
#                             stays inside one NVLink domain
FRONTIER_CACHES = ("bf16",)  # the MLA latent cache's format by default (deployment.CACHE_FORMATS has fp8 too)
# the GPUs a default frontier compares: the NVIDIA parts. AMD's (hardware.GPUS has them) join when asked for by name:
# their $/GPU-hour are a marketplace listing or assumed, and the predictor's efficiencies (predict.py) are fitted on
# B300 runs only, while SGLang's own MI350X runs show a different per-layer latency (fit.py, held-out rows)
FRONTIER_GPUS = ("H100 SXM", "H800", "H200", "B200", "B300", "GB300 NVL72")
INTERACTIVE_TOKENS_PER_USER = 50.0  # "a typical interactive speed": OUR assumption (2.5x DeepSeek's 20-22 tok/s)
CURVE_POINTS = 16  # batch sizes per setup (log-spaced 1 .. the most that fit)
MODELS = ("bound", "predicted")  # step.py's roofline, or predict.py with fitted efficiencies


class FrontierPoint(NamedTuple):
    gpu: str
    ep: int  # = GPUs per replica
    formats: str  # a FRONTIER_FORMATS key
    batch_per_gpu: float  # sequences per GPU: whole requests per TP group (k / TP), so fractional when TP > 1
    tokens_per_s_per_user: float  # what each user sees (predicted: prefill stalls included, price.py)
    tokens_per_s_per_gpu: float  # output tokens per GPU-second, the prefill's GPU-seconds included
    usd_per_m: float  # $ per M tokens blended at the shape: input and output (price.RequestPrice.usd_per_m)
    usd_per_gpu_hour: float
    bound: str
    hbm_s: float
    compute_s: float
    wire_s: float
    draft_s: float
    step_s: float
    crosses_nic: bool  # EP spans more than one NVLink domain: part of the wire is the NIC
    hbm_used_bytes: float  # weights + the batch's cache on one GPU
    hbm_bytes: float
    max_batch_per_gpu: int  # the most sequences that fit next to the weights
    speculative: bool = False  # drafted and verified (k3lite.analytic.serving.Speculation)
    tp: int = 1  # attention's tensor parallelism (1: data-parallel attention)
    cache: str = "bf16"  # the MLA latent cache's format
    price: RequestPrice | None = None  # the request's price at this point: $ per M input, per M output, blended

    @property
    def usd_per_m_input(self) -> float:
        return self.price.usd_per_m_input

    @property
    def usd_per_m_output(self) -> float:
        return self.price.usd_per_m_output

    @property
    def label(self) -> str:
        return (f"{gpu_label(self.gpu)}, EP {self.ep}, TP {self.tp}, {self.formats}"
                + (f", {self.cache} cache" if self.cache != "bf16" else "") + f", batch {self.batch_per_gpu:g}"
                + (", speculative" if self.speculative else ""))

    def row(self) -> dict:
        """Plain JSON values (the CLI prints these)."""
        row = {k: v for k, v in self._asdict().items() if k != "price"}
        return {**row, "usd_per_m_input": self.usd_per_m_input, "usd_per_m_output": self.usd_per_m_output,
                "prefill_share": self.price.prefill_share, "label": self.label}


class Setup(NamedTuple):
    """One deployment the frontier tries, with its batch-independent step terms (k3lite.analytic.serving.step_terms)."""

    gpu: str
    ep: int
    formats: str
    terms: StepTerms
    crosses_nic: bool
    hbm_bytes: float
    predicted: tuple | None = None  # (predict.Terms, predict.Efficiency, max batch per GPU) for model="predicted"
    tp: int = 1
    cache: str = "bf16"
    shape: Shape = DEFAULT_SHAPE
    prefill: Prefill | None = None  # the bound's prefill over the shape's input (price.bound_terms)
    max_concurrency: int = 0  # requests the replica admits (predicted: admission.py; bound: what fits), 0 = max batch

    def price(self, batch: float) -> RequestPrice:
        """The request's price at `batch` sequences per GPU (price.py: the one price of every path)."""
        c = round(batch * self.ep)  # requests in flight on the replica (EP GPUs)
        if self.predicted is None:
            return bound_price(self.terms, self.prefill, self.shape, c, self.ep)
        k, e, _ = self.predicted
        return predicted_price(k, self.shape, c, e, self.terms.usd_per_gpu_hour)

    def step(self, batch: int) -> Step:
        """The decode step at `batch`: step.py's bound, or the predictor's (predict.as_step)."""
        if self.predicted is None:
            return step_at(self.terms, batch)
        k, e, _ = self.predicted
        return as_step(k, e, batch)

    @property
    def max_batch(self) -> int:
        return self.terms.max_batch_per_gpu if self.predicted is None else self.predicted[2]

    def point(self, batch: int) -> FrontierPoint:
        st, pr = self.step(batch), self.price(batch)
        t = self.terms
        return FrontierPoint(self.gpu, self.ep, self.formats, batch, pr.tokens_per_s_per_user, pr.tokens_per_s_per_gpu,
                             pr.usd_per_m, t.usd_per_gpu_hour, st.bound, st.hbm_s, st.compute_s,
                             st.wire_s, st.draft_s, st.step_s, self.crosses_nic,
                             t.weight_bytes_per_gpu + batch * t.cache_bytes_per_sequence, self.hbm_bytes,
                             self.max_batch, t.spec is not None, self.tp, self.cache, pr)

    def fastest_batch(self, speed: float) -> float | None:
        """The largest batch that keeps every user at >= speed tokens/s (the cheapest such point: per-user speed
        falls and tokens/s per GPU rises with batch), in whole requests per TP group as the solver searches
        (price.concurrency_step), or None when even one request per group is slower."""
        top = self.max_concurrency or self.max_batch * self.ep
        c = fastest_concurrency(lambda c: self.price(c / self.ep).tokens_per_s_per_user, speed, top,
                                concurrency_step(self.ep, self.tp, top))
        return c / self.ep or None


class Frontier(NamedTuple):
    preset: str
    shape: Shape  # the request every point prices (price.Shape)
    setups: tuple[Setup, ...]
    points: tuple[FrontierPoint, ...]
    envelope: tuple[FrontierPoint, ...]  # over every GPU
    by_gpu: dict  # GPU -> its own envelope
    skipped: tuple[str, ...]  # setups that do not fit, and why
    prices: dict  # every GPU in the table (not only those compared) -> ($ per GPU-hour, where the number comes from)

    @property
    def context(self) -> int:
        """Tokens a sequence of the shape holds when its last token is decoded (what placement fits)."""
        return self.shape.input_len + self.shape.output_len


def lower_envelope(points) -> list[FrontierPoint]:
    """The cheapest point at each interactivity: kept when cheaper than every faster point; slowest first."""
    kept, best = [], float("inf")
    for p in sorted(points, key=lambda p: (-p.tokens_per_s_per_user, p.usd_per_m)):
        if p.usd_per_m < best:
            kept.append(p)
            best = p.usd_per_m
    return kept[::-1]


def frontier(preset: str | K3Config = K3_PRESET, shape: Shape = DEFAULT_SHAPE, gpus=None, formats=None, eps=FRONTIER_EP,
             prices: dict | None = None, spec: Speculation | None = None, overlap: bool = True,
             points: int = CURVE_POINTS, model: str = "bound", efficiency: Efficiency | None = None,
             tps=FRONTIER_TP, caches=FRONTIER_CACHES) -> Frontier:
    """Every setup's curve over batch size, the overall envelope and each GPU's envelope (see the docstring), each
    point the price of one request of `shape` (price.request_price).

    model "bound": step.py's roofline, every batch that fits in HBM at the shape's average context. model
    "predicted": predict.py with `efficiency` (default: the fit to published K3 runs, fit.FITTED), prefills queued as
    the solver queues them, every batch the engines admit (admission.py, their HBM reserve kept): never cheaper than
    the bound at any speed."""
    if not isinstance(shape, Shape):
        raise ValueError(f"shape must be a price.Shape (input, output, cached share), got {shape!r}")
    check_shape(shape)
    context = shape.input_len + shape.output_len  # what a sequence holds when its last token is decoded
    if not isinstance(preset, K3Config) and preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)} or a K3Config, got {preset!r}")
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    eff = (efficiency or FITTED.efficiency) if model == "predicted" else None
    gpus = list(FRONTIER_GPUS) if gpus is None else [get_gpu(g).name for g in gpus]
    if not gpus:
        raise ValueError("give at least one GPU")
    formats = list(FRONTIER_FORMATS) if formats is None else list(formats)
    for f in formats:
        if f not in FRONTIER_FORMATS:
            raise ValueError(f"formats must be among {list(FRONTIER_FORMATS)}, got {f!r}")
    if not formats or not tps or not caches:
        raise ValueError("give at least one format, one TP size and one cache format")
    for c in caches:
        if c not in CACHE_FORMATS:
            raise ValueError(f"caches must be among {list(CACHE_FORMATS)}, got {c!r}")
    prices = price_table(prices)  # refuses a price outside (0, 1000); a changed one is the reader's
    cfg = preset if isinstance(preset, K3Config) else get_preset(preset)  # built once: every Serving shares it
    setups, skipped = [], []
    for gpu_key in gpus:
        gpu = get_gpu(gpu_key)
        for fmt, ep, tp, cache in ((f, e, t, c) for f in formats for e in eps for t in tps for c in caches):
            name = f"{gpu_key}, EP {ep}, TP {tp}, {fmt}" + (f", {cache} cache" if cache != "bf16" else "")
            if ep > gpu.nvlink_domain and ep % gpu.nvlink_domain:
                skipped.append(f"{name}: EP wider than one {gpu.nvlink_domain}-GPU NVLink domain must fill whole "
                               "domains")
                continue
            if ep % tp:  # (a TP group wider than the NVLink domain: Serving refuses it, deployment.check_tp)
                skipped.append(f"{name}: a TP group must divide the replica")
                continue
            try:  # with speculation on, each setup is tried with and without it: a provider may choose
                for sp in (None, spec) if spec is not None else (None,):
                    s = Serving(cfg, gpu_key, ep, ep, tp, FRONTIER_FORMATS[fmt], context, overlap,
                                prices[gpu_key][0], spec=sp, cache=cache)
                    pl = placement(s)  # checked here, not by step_terms: its message searches for the knob
                    if pl.free_hbm_bytes_per_gpu <= 0:
                        raise ValueError(f"the weights ({pl.weight_bytes_per_gpu / 1e9:,.0f} GB per GPU) exceed its "
                                         f"{pl.hbm_bytes / 1e9:,.0f} GB of HBM")
                    pred = None
                    if eff is not None:
                        admitted = admission(s, shape.input_len, shape.output_len).max_concurrency
                        top = admitted // s.n_gpus
                        if top < 1:
                            raise ValueError(f"not one sequence of {context:,} tokens fits next to the "
                                             f"weights and the engines' {100 * ENGINE_RESERVE:.0f}% reserve")
                        pred = (predicted_terms(s, shape), eff, top)
                    dec, pre = bound_terms(s, shape)
                    setups.append(Setup(gpu_key, ep, fmt, dec, ep > gpu.nvlink_domain, gpu.hbm_bytes,
                                        pred, tp, cache, shape, pre, admitted if pred else 0))
            except ValueError as e:
                skipped.append(f"{name}: {e}")
    if not setups:
        raise ValueError(f"no setup fits {cfg.name} at {shape.label} on {', '.join(gpus)}: " + "; ".join(skipped[:3]))
    out = [u.point(b) for u in setups for b in curve_batches(u.max_batch, points)]
    by_gpu = {g: tuple(lower_envelope([p for p in out if p.gpu == g])) for g in gpus}
    return Frontier(cfg.name, shape, tuple(setups), tuple(out), tuple(lower_envelope(out)),
                    {g: e for g, e in by_gpu.items() if e}, tuple(skipped), prices)


def cheapest_at(setups, speed: float) -> FrontierPoint | None:
    """The cheapest point of these setups that keeps every user at >= speed tokens/s, each setup at its exact
    best batch (not the sampled curve); None when none is that fast."""
    best = [u.point(b) for u in setups if (b := u.fastest_batch(speed)) is not None]
    return min(best, key=lambda p: p.usd_per_m) if best else None


def per_gpu_at(fr: Frontier, speed: float) -> dict[str, FrontierPoint]:
    """Each GPU's cheapest point at >= speed tokens/s per user (GPUs that cannot reach it are left out)."""
    best = {g: cheapest_at([u for u in fr.setups if u.gpu == g], speed) for g in fr.by_gpu}
    return {g: p for g, p in best.items() if p is not None}


def why_none(fr: Frontier, gpu: str, speed: float) -> str:
    """Why `gpu` has no point at >= speed tokens/s per user: none of its setups fits (the reason of the widest
    one tried), or the fastest of them is slower."""
    mine = [p for p in fr.points if p.gpu == gpu]
    if mine:
        top = max(mine, key=lambda p: p.tokens_per_s_per_user)
        return (f"its fastest setup reaches {top.tokens_per_s_per_user:.0f} tokens/s per user, under {speed:.0f} "
                f"({top.label})")
    reasons = [r for r in fr.skipped if r.startswith(gpu + ",")]
    return ("no setup fits: " + reasons[-1]) if reasons else "not searched"


def per_gpu_rows(fr: Frontier, gpus, speed: float) -> list[tuple[str, FrontierPoint | None, str]]:
    """(GPU, its cheapest point at >= speed or None, why none) for every GPU in `gpus`: none left out silently."""
    at = per_gpu_at(fr, speed)
    return [(g, at.get(g), "" if g in at else why_none(fr, g, speed)) for g in gpus]


class Verdict(NamedTuple):
    speed: float  # tokens/s per user asked for
    winner: FrontierPoint | None
    runner_up: FrontierPoint | None  # the cheapest point on another GPU
    ratio: float  # runner-up $ / winner $
    sentence: str


def _drive(w: FrontierPoint, r: FrontierPoint) -> str:
    """Why w is cheaper than r, from the two points' numbers: $ per token = $ per GPU-hour / tokens/s per GPU."""
    price = r.usd_per_gpu_hour / w.usd_per_gpu_hour
    speed = w.tokens_per_s_per_gpu / r.tokens_per_s_per_gpu
    parts = []
    if abs(price - 1) > 0.005:
        parts.append(f"its GPU-hour costs {1 / price:.2f}x the {r.gpu}'s (${w.usd_per_gpu_hour:.2f} vs "
                     f"${r.usd_per_gpu_hour:.2f})")
    parts.append(f"each GPU makes {speed:.2f}x the tokens/s ({w.tokens_per_s_per_gpu:,.0f} vs "
                 f"{r.tokens_per_s_per_gpu:,.0f}) at batch {w.batch_per_gpu:g} vs {r.batch_per_gpu:g}")
    main = "throughput per GPU" if abs(speed - 1) >= abs(price - 1) else "the GPU-hour price"  # the wider ratio
    why = {"HBM": "reading weights and cache from HBM", "compute": "at the tensor-core peak",
           "latency": "the layers' fixed time per forward pass"}

    def where(p: FrontierPoint) -> str:
        if p.bound == "wire":
            return "dispatch + combine on the NIC, as EP spans NVLink domains" if p.crosses_nic else "on NVLink"
        return why[p.bound]

    return (f"{'; '.join(parts)}. The main factor is {main}: the winner's step is {w.bound}-bound "
            f"({1e3 * w.step_s:.1f} ms, {where(w)}), the {r.gpu}'s {r.bound}-bound ({1e3 * r.step_s:.1f} ms, "
            f"{where(r)}); at this speed the winner runs {w.batch_per_gpu:g} of the {w.max_batch_per_gpu} sequences that fit "
            f"in its {fmt_capacity(w.hbm_bytes)}, the {r.gpu} {r.batch_per_gpu:g} of {r.max_batch_per_gpu} in "
            f"{fmt_capacity(r.hbm_bytes)}")


def verdict(fr: Frontier, speed: float = INTERACTIVE_TOKENS_PER_USER) -> Verdict:
    """The seed's question at one interactivity: which hardware serves cheapest, by how much, and why."""
    if not speed > 0:
        raise ValueError(f"speed must be > 0 tokens/s per user, got {speed}")
    w = cheapest_at(fr.setups, speed)
    if w is None:
        top = max(p.tokens_per_s_per_user for p in fr.points)
        return Verdict(speed, None, None, float("nan"),
                       f"No setup reaches {speed:.0f} tokens/s per user for {display_name(fr.preset)} at {fr.shape.label} "
                       f"(the fastest: {top:.0f}).")
    r = cheapest_at([u for u in fr.setups if u.gpu != w.gpu], speed)
    head = (f"At >= {speed:.0f} tokens/s per user, {display_name(fr.preset)} is served cheapest on "
            f"{w.label}: {w.price.says()}, {w.tokens_per_s_per_user:.0f} tok/s per user.")
    if r is None:
        return Verdict(speed, w, None, float("nan"), head + " No other GPU reaches that speed.")
    ratio = r.usd_per_m / w.usd_per_m
    assumed = [g for g in (w.gpu, r.gpu) if price_kind(fr.prices[g][1]) == "assumed"]
    at = per_gpu_at(fr, speed)
    dear = max(at.values(), key=lambda p: p.usd_per_m)
    tied = [g for g, p in at.items() if p.usd_per_m >= 0.995 * dear.usd_per_m]
    dearest = (f" The dearest GPU at this speed is the {' and the '.join(tied)}: ${dear.usd_per_m:.3f} "
               f"({dear.usd_per_m / w.usd_per_m:.1f}x the winner, {dear.label})."
               if dear.gpu not in (w.gpu, r.gpu) else "")
    caveat = (f" The {' and '.join(assumed)} GPU-hour price{'s are' if len(assumed) > 1 else ' is'} assumed, not "
              f"cited: the ranking moves with {'them' if len(assumed) > 1 else 'it'}." if assumed else "")
    return Verdict(speed, w, r, ratio, head + f" The next GPU, {r.label}, costs ${r.usd_per_m:.3f} "
                   f"({ratio:.2f}x). Why: " + _drive(w, r) + "." + dearest + caveat)


def cheapest_usd_per_m(preset: str = K3_PRESET, prices: dict | None = None, spec: Speculation | None = None, *,
                       input_len: float = DEFAULT_SHAPE.input_len, output_len: int = DEFAULT_SHAPE.output_len,
                       cached: float = DEFAULT_SHAPE.cached, speed: float = INTERACTIVE_TOKENS_PER_USER,
                       layer_s: float = FITTED.efficiency.layer_s, hbm_fraction: float = FITTED.efficiency.hbm_fraction,
                       flops_fraction: float = FITTED.efficiency.flops_fraction, acceptance: float | None = None,
                       price_gpu: str | None = None, usd_per_gpu_hour: float | None = None, formats=None,
                       tps=FRONTIER_TP, caches=FRONTIER_CACHES, gpus=None) -> float:
    """The serving page's headline: $ per M tokens (blended at the request shape: input and output) of the predicted
    frontier's cheapest setup at >= `speed` tokens/s per user, with every input the page assumes as an argument (its
    assumptions block moves each ±20%): the input tokens per request (rounded to whole tokens), the speed asked for, the three fitted efficiencies, the
    speculation's acceptance (capped at draft_tokens + 1, where every draft is kept) and `price_gpu`'s $ per
    GPU-hour (the other GPUs at `prices`). Infinite when no setup reaches the speed: a slower engine (a lower
    achieved bandwidth, a longer fixed time per layer) can put the speed out of reach, and the tornado shows it."""
    if spec is not None and acceptance is not None:
        spec = replace(spec, acceptance=max(1.0, min(acceptance, spec.draft_tokens + 1.0)))
    p = dict(prices or {})
    if price_gpu is not None and usd_per_gpu_hour is not None:
        p[price_gpu] = usd_per_gpu_hour
    shape = Shape(max(1, round(input_len)), int(output_len), float(cached))
    fr = frontier(preset, shape, prices=p, spec=spec, model="predicted", points=2,
                  efficiency=Efficiency(layer_s, hbm_fraction, flops_fraction), formats=formats, tps=tps,
                  caches=caches, gpus=gpus)
    w = cheapest_at(fr.setups, speed)
    return float("inf") if w is None else w.usd_per_m
