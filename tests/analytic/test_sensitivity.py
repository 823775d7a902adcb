import pytest

from k3lite.analytic.sensitivity import Assumption, most_sensitive_sentence, swings


def _price(gpu_hour, efficiency, overhead):
    return gpu_hour / efficiency + overhead


ASSUMED = [Assumption("gpu_hour", "GPU-hour price", 4.0, "list price"),
           Assumption("efficiency", "efficiency", 0.5, "fitted"),
           Assumption("overhead", "overhead", 0.1, "ours")]


def test_swings_rank_by_width_and_hold_the_moved_values():
    ranked = swings(_price, ASSUMED)
    assert [s.name for s in ranked] == ["efficiency", "GPU-hour price", "overhead"]
    eff = ranked[0]
    assert eff.base == pytest.approx(8.1)
    assert eff.low == pytest.approx(4 / 0.4 + 0.1) and eff.high == pytest.approx(4 / 0.6 + 0.1)
    assert ranked[1].width == pytest.approx((4.8 - 3.2) / 0.5 / 8.1)


def test_sentence_names_the_widest_and_its_range():
    text = most_sensitive_sentence("The price", swings(_price, ASSUMED), lambda v: f"${v:.2f}")
    assert text.startswith("The price ($8.10) moves most with **efficiency**: ±20% in it gives $6.77 to $10.10")
    assert "next comes GPU-hour price" in text


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least one"):
        swings(_price, [])
    with pytest.raises(ValueError, match="unique"):
        swings(_price, ASSUMED + [ASSUMED[0]])
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        swings(_price, ASSUMED, rel=1.5)


def test_an_input_that_puts_the_headline_out_of_reach_ranks_first_and_is_worded():
    def price(efficiency, overhead):
        return float("inf") if efficiency < 0.45 else 1 / efficiency + overhead

    ranked = swings(price, [Assumption("efficiency", "efficiency", 0.5, "fitted"),
                            Assumption("overhead", "overhead", 1.0, "ours")])
    assert ranked[0].name == "efficiency"
    text = most_sensitive_sentence("The price", ranked, lambda v: "out of reach" if v == float("inf") else f"${v:.2f}")
    assert "gives $2.67 to out of reach (one side out of reach)" in text and "inf%" not in text
    assert "next comes overhead (a 13% spread)" in text


def test_a_move_outside_the_inputs_valid_range_is_said_not_raised():
    def cost(retry, price):
        if not 0 <= retry < 1:
            raise ValueError("retry rate must be in [0, 1)")
        return price / (1 - retry)

    ranked = swings(cost, [Assumption("retry", "retry rate", 0.9, "ours"), Assumption("price", "price", 1.0, "list")])
    retry = next(s for s in ranked if s.name == "retry rate")
    assert retry.high != retry.high and retry.low == pytest.approx(1 / 0.28)  # nan above, a value below
    assert ranked[0].name == "retry rate"  # its one side mirrored still outweighs the price's ±20%
    text = most_sensitive_sentence("The cost", ranked, lambda v: f"${v:.2f}")
    assert "−20% in it gives $3.57 (+20% leaves its valid range)" in text
