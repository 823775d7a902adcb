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


def test_the_sentence_says_what_the_rows_show():
    text = spread_sentence(0.69, 30.0)
    assert "sell K3's output at $15.00 per M tokens, all at one price" in text and "none publishes" in text
    assert "above the self-hosted cost" in text and "21.7x" in text
    assert "below the self-hosted cost" in spread_sentence(20.0, 30.0)
    grid = [dict(self_hosted_usd_per_m_output=c, speed=30.0) for c in (0.3, 15.0, 40.0)]
    assert wording_problems(spread_sentence, grid) == []


def test_unknown_provider_names_the_choices():
    with pytest.raises(ValueError, match="provider must be one of"):
        get_provider("Acme")
