import pytest

from k3lite.base.wording import compare, recording, times, unexplained


def test_times_never_says_a_factor_below_one():
    assert times(0.5, 1.0, "cheaper", "dearer") == "2.00x dearer"
    assert times(3.0, 1.0, "more", "less", digits=1) == "3.0x more"
    assert times(1.0, 1.001, "more", "less") == "about the same"
    with pytest.raises(ValueError, match="non-negative"):
        times(-1, 1, "more", "less")


def test_compare_picks_the_word_from_the_numbers():
    assert compare(2, 1, "faster", "slower") == "faster"
    assert compare(1, 2, "faster", "slower") == "slower"
    assert compare(1, 1.001, "faster", "slower", same="as fast as") == "as fast as"


def test_unexplained_catches_a_hand_written_word_and_passes_a_computed_one():
    with recording() as made:
        word = compare(2.0, 1.0, "cheaper", "dearer")
    assert unexplained(f"The split is {word} than the monolith.", made) == []
    hard = unexplained("The split is cheaper and uses fewer GPUs.", [])
    assert any("'cheaper'" in p for p in hard) and any("'fewer'" in p for p in hard)
    assert unexplained("more than one expert", [], allowed=("more than one",)) == []


def test_a_recorded_word_that_disagrees_with_its_numbers_is_caught():
    from k3lite.base.wording import Comparison

    wrong = Comparison(a=1.0, b=2.0, word="cheaper", more="cheaper", less="dearer", same="same")
    assert any("for 1 vs 2" in p for p in unexplained("cheaper", [wrong]))


def test_agreeing_prints_values_that_imply_the_printed_ratio():
    """The cost page once said "$0.035 on Kimi K3 and $0.002 on Kimi Linear 48B: 14.7x dearer" (the printed prices
    imply 17.5x): agreeing adds decimals until the printed values give the printed ratio, over a sweep of pairs."""
    from k3lite.base.wording import agreeing

    assert agreeing(0.03505, 0.002384) == ("0.03505", "0.00238")
    assert agreeing(0.035, 0.031) == ("0.035", "0.031")  # enough already: no extra digits
    for a in (0.0001234, 0.0024, 0.0351, 0.5, 1.7, 12.0, 123.4):
        for b in (0.00031, 0.0042, 0.0353, 0.77, 3.3, 99.0):
            for digits in (1, 2):
                sa, sb = agreeing(a, b, digits)
                shown = max(float(sa), float(sb)) / min(float(sa), float(sb))
                assert f"{shown:.{digits}f}" == f"{max(a, b) / min(a, b):.{digits}f}", (a, b, sa, sb)
    with pytest.raises(ValueError, match="non-negative"):
        agreeing(-1.0, 1.0)
