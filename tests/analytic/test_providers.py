"""Providers' K3 prices: cited rows, a price basis for the cost page, a sentence whose words follow the numbers."""
import pytest

from k3lite.analytic.cost import PRICES
from k3lite.analytic.serving.providers import PROVIDERS, as_model_price, get_provider, spread_sentence
from wording_check import wording_problems


def test_every_row_is_cited_and_dated():
    for p in PROVIDERS:
        assert p.source and len(p.dated) == 10 and p.evidence.kind == "listed"  # a price list: its own class
        assert 0 < p.cached_per_m <= p.input_per_m < p.output_per_m


def test_moonshot_row_is_the_cost_pages_listed_price():
    """One list price: the cost page's K3 row and the providers table's Moonshot row agree."""
    mine, listed = as_model_price(get_provider("moonshot ai")), PRICES["kimi-k3"]
    assert (mine.input_per_m, mine.output_per_m) == (listed.input_per_m, listed.output_per_m)
    assert mine.cache_discount == pytest.approx(listed.cache_discount)


def test_the_sentence_compares_input_with_input_output_with_output_at_the_shape():
    """Providers quote input and output apart: the sentence blends both sides at the same request shape."""
    text = spread_sentence(0.5, 4.0, 30.0)  # self-hosted: $0.50 per M input, $4.00 per M output
    listed = (8192 * 3.00 + 1024 * 15.00) / 9216  # Moonshot's list at 8,192 in / 1,024 out
    ours = (8192 * 0.5 + 1024 * 4.0) / 9216
    assert f"sell K3 at ${listed:.3f} per M tokens, input and output (all at one price" in text
    assert "$3.00 per M input, $15.00 per M output" in text and "none publishes" in text
    assert f"above the self-hosted cost at 30 tokens/s per user (${ours:.3f} per M tokens" in text
    assert f"{listed / ours:.1f}x" in text
    assert "below the self-hosted cost" in spread_sentence(20.0, 40.0, 30.0)
    cached = spread_sentence(0.5, 4.0, 30.0, cached=0.5)  # half the input from the cache: $0.30 per M for those
    assert f"${0.5 * 3.00 + 0.5 * 0.30:.2f} per M input" in cached
    grid = [dict(input_per_m=i, output_per_m=o, speed=30.0) for i, o in ((0.1, 0.3), (3.0, 15.0), (10.0, 40.0))]
    assert wording_problems(spread_sentence, grid) == []


def test_unknown_provider_names_the_choices():
    with pytest.raises(ValueError, match="provider must be one of"):
        get_provider("Acme")
