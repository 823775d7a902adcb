"""One request, one price: what one request of a given shape costs on a deployment, split as providers quote it.

Every path that shows a price (the frontier's points, the per-GPU table, "your deployment", the solver, the providers
comparison, the export, the cost page's serving-physics row, every CLI verb) calls `request_price` here.

A request shape (`Shape`: input tokens, output tokens, the share of the input a prefix cache serves) on a deployment
(`Serving`, one replica of n_gpus GPUs) with `concurrency` requests in flight per replica:
    predicted   (predict.evaluate, the fitted efficiencies: what the solver models) a wave of `concurrency` requests
                arrives together; the scheduler runs the wave's prefills first (SGLang's prefill-first policy), then
                decodes. A request's wall time = its wave's prefill queue + (output - 1) decode steps / acceptance;
                prefill GPU-s = n_gpus x the wave's prefill time / concurrency, decode GPU-s = n_gpus x the decode
                time / concurrency; per-user speed = 1 / TPOT, the prefill stalls included
    bound       (step.py's roofline, no queue) decode GPU-s = output / tokens/s per GPU at batch concurrency / n_gpus;
                prefill GPU-s = uncached input x step.prefill_step's seconds per token per GPU
Cached input is not prefilled (its tokens still sit in the context the decode reads). Then, at $ per GPU-hour h:
    $ per M input    = h / 3600 x prefill GPU-s / input tokens x 1e6   (cached and uncached input alike)
    $ per M output   = h / 3600 x decode GPU-s / output tokens x 1e6
    $ per M blended  = h / 3600 x (prefill + decode GPU-s) / (input + output tokens) x 1e6: the price at the shape
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.analytic.serving.admission import admission
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.fit import FITTED
from k3lite.analytic.serving.predict import Efficiency, Terms, Workload, evaluate, terms
from k3lite.analytic.serving.step import Prefill, StepTerms, prefill_step, step_at, step_terms

PRICE_MODELS = ("predicted", "bound")


class Shape(NamedTuple):
    """One request as a provider bills it: tokens in (`cached` of them from a prefix cache) and tokens out."""

    input_len: int = 8192  # SGLang's and vLLM's K3 benchmarks (8k in / 1k out): the shape the fit's runs measure
    output_len: int = 1024
    cached: float = 0.0  # share of the input a prefix cache serves (not prefilled), 0 <= cached < 1

    @property
    def uncached_len(self) -> int:
        """Input tokens the prefill computes (at least one: the last token is always run)."""
        return max(1, round(self.input_len * (1.0 - self.cached)))

    @property
    def decode_context(self) -> int:
        """The average context while the request decodes: its input and half its output (predict.terms' rule)."""
        return self.input_len + self.output_len // 2

    @property
    def label(self) -> str:
        cached = f", {100 * self.cached:.0f}% of it cached" if self.cached else ""
        return f"{self.input_len:,} in{cached} / {self.output_len:,} out"


DEFAULT_SHAPE = Shape()


def check_shape(shape: Shape) -> Shape:
    if not (isinstance(shape.input_len, int) and 1 <= shape.input_len <= 10_000_000):
        raise ValueError(f"input tokens per request must be an integer in 1..10,000,000, got {shape.input_len!r}")
    if not (isinstance(shape.output_len, int) and 2 <= shape.output_len <= 1_000_000):
        raise ValueError(f"output tokens per request must be an integer in 2..1,000,000, got {shape.output_len!r}")
    if not 0.0 <= shape.cached < 1.0:
        raise ValueError(f"the cached share of the input must be in [0, 1), got {shape.cached}")
    return shape


class RequestPrice(NamedTuple):
    """One request's GPU time and price at a shape (see the module docstring)."""

    model: str  # "predicted" or "bound"
    shape: Shape
    concurrency: float  # requests in flight per replica
    n_gpus: int
    prefill_gpu_s: float  # per request
    decode_gpu_s: float  # per request
    tokens_per_s_per_user: float  # what each user sees (predicted: 1 / TPOT, prefill stalls included)
    usd_per_gpu_hour: float

    @property
    def batch_per_gpu(self) -> float:
        return self.concurrency / self.n_gpus

    @property
    def usd_per_request(self) -> float:
        return self.usd_per_gpu_hour / 3600 * (self.prefill_gpu_s + self.decode_gpu_s)

    @property
    def usd_per_m_input(self) -> float:
        return self.usd_per_gpu_hour / 3600 * self.prefill_gpu_s / self.shape.input_len * 1e6

    @property
    def usd_per_m_output(self) -> float:
        return self.usd_per_gpu_hour / 3600 * self.decode_gpu_s / self.shape.output_len * 1e6

    @property
    def usd_per_m(self) -> float:
        """The blended price at the shape: every GPU-second of the request over its input + output tokens."""
        return self.usd_per_request / (self.shape.input_len + self.shape.output_len) * 1e6

    @property
    def prefill_share(self) -> float:
        return self.prefill_gpu_s / (self.prefill_gpu_s + self.decode_gpu_s)

    @property
    def tokens_per_s_per_gpu(self) -> float:
        """Output tokens per GPU-second, prefill included."""
        return self.shape.output_len / (self.prefill_gpu_s + self.decode_gpu_s)

    def says(self) -> str:
        """What the price covers, in words built from it: '$4.12 per M tokens at 8,192 in / 1,024 out (input and
        output: $3.10 per M input, $12.30 per M output; prefill 61% of the GPU time)'."""
        return (f"${self.usd_per_m:.3f} per M tokens at {self.shape.label} (input and output: "
                f"${self.usd_per_m_input:.3f} per M input, ${self.usd_per_m_output:.3f} per M output; prefill "
                f"{100 * self.prefill_share:.0f}% of the GPU time)")

    def row(self) -> dict:
        """Plain JSON values (the CLI and the export print these)."""
        return {"model": self.model, "input_len": self.shape.input_len, "output_len": self.shape.output_len,
                "cached": self.shape.cached, "concurrency": self.concurrency, "prefill_gpu_s": self.prefill_gpu_s,
                "decode_gpu_s": self.decode_gpu_s, "tokens_per_s_per_user": self.tokens_per_s_per_user,
                "usd_per_m_input": self.usd_per_m_input, "usd_per_m_output": self.usd_per_m_output,
                "usd_per_m": self.usd_per_m}


# ------------------------------------------------------------------------------------------ the two models
def predicted_terms(s: Serving, shape: Shape = DEFAULT_SHAPE) -> Terms:
    """predict.terms at the shape (decode at its average context, prefill FLOPs over its whole input)."""
    check_shape(shape)
    return terms(s, Workload(1, shape.input_len, shape.output_len))


def predicted_price(k: Terms, shape: Shape, concurrency: int, e: Efficiency, usd_per_gpu_hour: float,
                    acceptance: float | None = None) -> RequestPrice:
    """`request_price` from precomputed terms (predicted_terms): the frontier and the solver call this per point."""
    w = Workload(int(concurrency), shape.uncached_len, shape.output_len)
    p = evaluate(k, w, e, usd_per_gpu_hour, acceptance)
    decode_wall = (shape.output_len - 1) * p.step.step_s / p.step.tokens_per_step
    per = k.n_gpus / w.concurrency  # GPU-seconds per request per second of the replica's wall time
    return RequestPrice("predicted", shape, w.concurrency, k.n_gpus, per * (p.latency_s - decode_wall),
                        per * decode_wall, p.output_tokens_per_s_per_user, usd_per_gpu_hour)


def bound_terms(s: Serving, shape: Shape = DEFAULT_SHAPE) -> tuple[StepTerms, Prefill]:
    """step.py's decode terms at the shape's average context and its prefill over the shape's input."""
    check_shape(shape)
    return step_terms(s.with_(context=shape.decode_context)), prefill_step(s.with_(context=shape.input_len))


def bound_price(t: StepTerms, pre: Prefill, shape: Shape, concurrency: float, n_gpus: int) -> RequestPrice:
    """`request_price` of the bound from precomputed terms (bound_terms)."""
    st = step_at(t, concurrency / n_gpus)
    return RequestPrice("bound", shape, concurrency, n_gpus, shape.uncached_len * pre.s_per_token,
                        shape.output_len / st.tokens_per_s_per_gpu, st.tokens_per_s_per_user, t.usd_per_gpu_hour)


def request_price(s: Serving, shape: Shape = DEFAULT_SHAPE, concurrency: int = 1, model: str = "predicted",
                  efficiency: Efficiency | None = None, acceptance: float | None = None) -> RequestPrice:
    """One request of `shape` on deployment `s` with `concurrency` requests in flight per replica: its prefill and
    decode GPU-seconds and its price (module docstring). `efficiency` defaults to the fit (fit.FITTED)."""
    if model not in PRICE_MODELS:
        raise ValueError(f"model must be one of {PRICE_MODELS}, got {model!r}")
    if not (isinstance(concurrency, int) and concurrency >= 1):
        raise ValueError(f"concurrency must be an integer >= 1 request per replica, got {concurrency!r}")
    if model == "bound":
        return bound_price(*bound_terms(s, shape), shape, concurrency, s.n_gpus)
    return predicted_price(predicted_terms(s, shape), shape, concurrency, efficiency or FITTED.efficiency, s.price,
                           acceptance)


def concurrency_step(n_gpus: int, tp: int, top: int) -> int:
    """The concurrency grid every search walks: whole requests per TP group (n_gpus / tp data-parallel attention
    groups), the even load a DP-attention engine balances to (the model's decode step takes the average batch, so an
    uneven split would be priced as if even); one request at a time when the replica admits fewer than one per group."""
    groups = n_gpus // tp
    return groups if top >= groups else 1


def fastest_concurrency(speed_at, speed: float, top: int, step: int = 1) -> int:
    """The largest concurrency in step, 2 step, ..., top whose `speed_at(c)` (tokens/s per user, falling with c) is
    >= speed; 0 when even `step` is slower. The frontier and the solver search with this, on concurrency_step's grid."""
    hi = top // step
    if hi < 1 or speed_at(step) < speed:
        return 0
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if speed_at(mid * step) >= speed else (lo, mid - 1)
    return lo * step



def price_at_speed(s: Serving, shape: Shape = DEFAULT_SHAPE, speed: float = 0.0, model: str = "predicted",
                   efficiency: Efficiency | None = None) -> RequestPrice | None:
    """The request's price at the largest concurrency on the search grid (concurrency_step) that keeps every user at
    >= `speed` tokens/s (the frontier's and the solver's rule: at most what the engines admit, predicted, or what fits,
    bound); None when even the first step is slower. The cost page's serving-physics row is priced here."""
    if model not in PRICE_MODELS:
        raise ValueError(f"model must be one of {PRICE_MODELS}, got {model!r}")
    n = s.n_gpus
    if model == "bound":
        t, pre = bound_terms(s, shape)
        top = t.max_batch_per_gpu * n  # what fits

        def at(c: int) -> RequestPrice:
            return bound_price(t, pre, shape, c, n)
    else:
        k, e = predicted_terms(s, shape), efficiency or FITTED.efficiency
        top = admission(s, shape.input_len, shape.output_len).max_concurrency  # what the engines admit
        acc = s.spec.acceptance if s.spec is not None else None

        def at(c: int) -> RequestPrice:
            return predicted_price(k, shape, c, e, s.price, acc)
    c = fastest_concurrency(lambda c: at(c).tokens_per_s_per_user, speed, top, concurrency_step(n, s.tp, top))
    return at(c) if c else None
