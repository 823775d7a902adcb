"""Providers' published prices for Kimi K3, dated and cited: what a buyer pays, beside what serving costs.

Each row is a price list as a source we could read states it: $ per M input (cache miss), cached input and output
tokens, and the speed where one is published (none is, in what is stored here). The seed article says 20+ providers
sell K3, "fast and pricey, some slow and cheap"; the rows we can cite all sell at Moonshot AI's list price, so that
spread is not shown here: `spread_sentence` says what the cited rows do show.
    Moonshot AI   its platform price list for kimi-k3 (k3lite.base.sources.K3_PRICE_SOURCE)
    OpenRouter    Helicone's model-cost registry (Helicone/helicone packages/cost/models/authors/moonshotai/kimi-k3/
    Novita        endpoints.ts at commit eefaa6ff): "openrouter.ai/api/v1/models, 2026-07-28" and
                  "api.novita.ai/v3/openai/models, 2026-07-28", $3.00 / $15.00, cached input 10% of input
`as_model_price(row)` makes a row a price basis for the cost page (k3lite.analytic.cost.ModelPrice).
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.analytic.cost import ModelPrice
from k3lite.base.evidence import Evidence, assumed, listed
from k3lite.base.sources import K3_PRICE_SOURCE
from k3lite.base.wording import compare, times

_HELICONE = ("Helicone's model-cost registry, Helicone/helicone packages/cost/models/authors/moonshotai/kimi-k3/"
             "endpoints.ts at commit eefaa6ff")


class Provider(NamedTuple):
    name: str
    input_per_m: float  # $ per M input tokens, cache miss
    cached_per_m: float  # $ per M input tokens served from the provider's prompt cache
    output_per_m: float  # $ per M output tokens
    tokens_per_s: float | None  # published output speed per request (None: not published in our sources)
    dated: str  # when the source read the price
    source: str

    @property
    def evidence(self) -> Evidence:
        """A cited row is listed (a price list, not a measurement); a row the reader typed (source YOURS) is
        assumed."""
        if self.source == YOURS:
            return assumed(YOURS)
        return listed(f"{self.source} ({self.dated})")


PROVIDERS: tuple[Provider, ...] = (
    Provider("Moonshot AI", 3.00, 0.30, 15.00, None, "2026-07-16", K3_PRICE_SOURCE),
    Provider("OpenRouter", 3.00, 0.30, 15.00, None, "2026-07-28",
             f"{_HELICONE}: 'openrouter.ai/api/v1/models, 2026-07-28', cached input 10% of input"),
    Provider("Novita", 3.00, 0.30, 15.00, None, "2026-07-28",
             f"{_HELICONE}: 'api.novita.ai/v3/openai/models, 2026-07-28', cached input 10% of input"),
)


YOURS = "yours: typed on the page"


def typed_provider(name: str, output_per_m: float, tokens_per_s: float, input_per_m: float = 0.0) -> Provider:
    """A provider the reader types (a name, $ per M output, the speed it sells at, $ per M input), checked."""
    if not (0 < output_per_m < 10_000):
        raise ValueError(f"{name or 'your provider'}: $ per M output must be in (0, 10000), got {output_per_m}")
    if not (0 <= input_per_m < 10_000):
        raise ValueError(f"{name or 'your provider'}: $ per M input must be in [0, 10000), got {input_per_m}")
    if not (0 < tokens_per_s < 100_000):
        raise ValueError(f"{name or 'your provider'}: speed must be in (0, 100000) tokens/s, got {tokens_per_s}")
    return Provider(name or "your provider", float(input_per_m), float(input_per_m), float(output_per_m),
                    float(tokens_per_s), "typed", YOURS)


def get_provider(name: str) -> Provider:
    for p in PROVIDERS:
        if p.name.lower() == name.lower():
            return p
    raise ValueError(f"provider must be one of {[p.name for p in PROVIDERS]}, got {name!r}")


def as_model_price(p: Provider) -> ModelPrice:
    """The row as the cost page's price basis: cache hits pay `cached_per_m`."""
    discount = 1 - p.cached_per_m / p.input_per_m if p.input_per_m else 0.0
    return ModelPrice(f"Kimi K3 at {p.name}", p.input_per_m, p.output_per_m, discount,
                      f"{p.name}'s listed price ({p.dated}): {p.source}", kind=p.evidence.kind)


def input_at(p: Provider, cached: float = 0.0) -> float:
    """A provider's $ per M input tokens at a cached share: cache misses at its input price, hits at its cached one
    (the basis price.RequestPrice.usd_per_m_input is on: every input token of the shape)."""
    return (1.0 - cached) * p.input_per_m + cached * p.cached_per_m


def blended_at(p: Provider, input_len: int, output_len: int, cached: float = 0.0) -> float:
    """A provider's $ per M tokens at a request shape, input and output: price.RequestPrice.usd_per_m's basis."""
    return (input_len * input_at(p, cached) + output_len * p.output_per_m) / (input_len + output_len)


def _blend(input_per_m: float, output_per_m: float, input_len: int, output_len: int) -> float:
    return (input_len * input_per_m + output_len * output_per_m) / (input_len + output_len)


def _shape(input_len: int, output_len: int, cached: float) -> str:
    return f"{input_len:,} in{f' ({100 * cached:.0f}% cached)' if cached else ''} / {output_len:,} out"


def typed_sentence(p: Provider, self_hosted: tuple[float, float] | None, input_len: int = 8192,
                   output_len: int = 1024, cached: float = 0.0) -> str:
    """A typed provider beside the frontier's cheapest setup at its speed ($ per M input, $ per M output there;
    None: no setup is that fast), compared at the request shape, input and output."""
    mine = blended_at(p, input_len, output_len, cached)
    shape = _shape(input_len, output_len, cached)
    if self_hosted is None:
        return (f"{p.name} sells at {p.tokens_per_s:.0f} tokens/s per user for ${mine:.3f} per M tokens at {shape} "
                f"(${p.input_per_m:.2f} in, ${p.output_per_m:.2f} out): no self-hosted setup searched here is that fast.")
    ours = _blend(*self_hosted, input_len, output_len)
    word = times(mine, ours, "above", "below", "at")
    return (f"{p.name} sells at {p.tokens_per_s:.0f} tokens/s per user for ${mine:.3f} per M tokens at {shape} "
            f"(${p.input_per_m:.2f} in, ${p.output_per_m:.2f} out), {word} the cheapest self-hosted setup that fast "
            f"(${ours:.3f}: ${self_hosted[0]:.3f} in, ${self_hosted[1]:.3f} out).")


def spread_sentence(input_per_m: float, output_per_m: float, speed: float, input_len: int = 8192,
                    output_len: int = 1024, cached: float = 0.0, providers=PROVIDERS) -> str:
    """What the cited rows show beside a self-hosted cost at `speed` tokens/s per user (its $ per M input and per M
    output at the request shape, price.RequestPrice): input against input, output against output, and both blended
    at the shape, as providers quote input and output apart."""
    blends = [blended_at(p, input_len, output_len, cached) for p in providers]
    lo_p = providers[blends.index(min(blends))]
    lo, hi = min(blends), max(blends)
    ours = _blend(input_per_m, output_per_m, input_len, output_len)
    listed = f"${lo:.3f}" if lo == hi else f"${lo:.3f}-${hi:.3f}"
    spread = ("all at one price" if lo == hi else f"{hi / lo:.1f}x apart")
    word = compare(lo, ours, "above", "below", "at")
    published = sum(p.tokens_per_s is not None for p in providers)
    gap = {"above": "the gap is what a provider's margin, idle hours and overheads this model leaves out must cover",
           "below": "a provider selling there would not cover the modelled cost",
           "at": "a provider selling there covers the modelled cost, no margin"}[word]
    return (f"At {_shape(input_len, output_len, cached)} the {len(providers)} providers we can cite sell K3 at "
            f"{listed} per M tokens, input and output ({spread}; the cheapest, {lo_p.name}: "
            f"${input_at(lo_p, cached):.2f} per M input, ${lo_p.output_per_m:.2f} per M output); "
            f"{'none publishes its speed' if not published else f'{published} publish a speed'}. The lowest is "
            f"{word} the self-hosted cost at {speed:.0f} tokens/s per user (${ours:.3f} per M tokens: "
            f"${input_per_m:.3f} per M input, ${output_per_m:.3f} per M output; "
            f"{max(lo, ours) / min(lo, ours):.1f}x): {gap}.")
