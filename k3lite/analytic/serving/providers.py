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


def typed_provider(name: str, output_per_m: float, tokens_per_s: float) -> Provider:
    """A provider the reader types (a name, $ per M output, the speed it sells at), checked: both in range."""
    if not (0 < output_per_m < 10_000):
        raise ValueError(f"{name or 'your provider'}: $ per M output must be in (0, 10000), got {output_per_m}")
    if not (0 < tokens_per_s < 100_000):
        raise ValueError(f"{name or 'your provider'}: speed must be in (0, 100000) tokens/s, got {tokens_per_s}")
    return Provider(name or "your provider", 0.0, 0.0, float(output_per_m), float(tokens_per_s), "typed", YOURS)


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


def typed_sentence(p: Provider, self_hosted_usd_per_m_output: float | None) -> str:
    """A typed provider beside the frontier's cheapest setup at its speed (None: no setup is that fast)."""
    if self_hosted_usd_per_m_output is None:
        return (f"{p.name} sells at {p.tokens_per_s:.0f} tokens/s per user for ${p.output_per_m:.2f} per M output: no "
                "self-hosted setup searched here is that fast.")
    word = times(p.output_per_m, self_hosted_usd_per_m_output, "above", "below", "at")
    return (f"{p.name} sells at {p.tokens_per_s:.0f} tokens/s per user for ${p.output_per_m:.2f} per M output, "
            f"{word} the cheapest self-hosted setup that fast (${self_hosted_usd_per_m_output:.3f}).")


def spread_sentence(self_hosted_usd_per_m_output: float, speed: float, providers=PROVIDERS) -> str:
    """What the cited rows show beside a self-hosted cost at `speed` tokens/s per user: their output prices' range
    (all one price, in what we can cite) against the frontier's cost there."""
    lo = min(p.output_per_m for p in providers)
    hi = max(p.output_per_m for p in providers)
    listed = f"${lo:.2f}" if lo == hi else f"${lo:.2f}-${hi:.2f}"
    spread = ("all at one price" if lo == hi else f"{hi / lo:.1f}x apart")
    word = compare(lo, self_hosted_usd_per_m_output, "above", "below", "at")
    published = sum(p.tokens_per_s is not None for p in providers)
    gap = {"above": "the gap is what a provider's margin, idle hours and overheads this model leaves out must cover",
           "below": "a provider selling there would not cover the modelled cost",
           "at": "a provider selling there covers the modelled cost, no margin"}[word]
    return (f"The {len(providers)} providers we can cite sell K3's output at {listed} per M tokens, {spread}; "
            f"{'none publishes its speed' if not published else f'{published} publish a speed'}. The lowest is "
            f"{word} the self-hosted cost at {speed:.0f} tokens/s per user (${self_hosted_usd_per_m_output:.3f}, "
            f"{max(lo, self_hosted_usd_per_m_output) / min(lo, self_hosted_usd_per_m_output):.1f}x): {gap}.")
