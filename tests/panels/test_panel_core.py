"""The panel layer's shared types: pairs are the real variant configs, a panel's text is its sentences."""
import pytest

from k3lite.base.evidence import derived
from k3lite.model.presets import get_preset
from k3lite.model.variants import COMPARISONS, comparison_config
from k3lite.panels.core import CHOICES, NONE, Panel, Pair, Said, choice_label, pair_of


def test_no_choice_is_no_pair():
    assert pair_of(None) is None and pair_of(NONE) is None


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_each_pair_holds_the_variant_config(key):
    pair = pair_of(key)
    assert isinstance(pair, Pair) and pair.k3 == get_preset("kimi-k3")
    assert pair.other == comparison_config(key)
    assert pair.ablation == (COMPARISONS[key].idea is not None)
    assert choice_label(key) == pair.label == COMPARISONS[key].label


def test_mla_everywhere_keeps_the_experts_and_drops_kda():
    pair = pair_of("all-mla")
    assert pair.other.moe == pair.k3.moe
    kinds = [str(t) for t in pair.other.layer_types()]
    assert len(kinds) == pair.k3.n_layers and not any("kda" in k.lower() for k in kinds)
    assert any("kda" in str(t).lower() for t in pair.k3.layer_types())


def test_a_pair_against_another_base():
    base = get_preset("kimi-k2")
    assert pair_of("all-mla", base).k3 is base


def test_unknown_choice_names_the_choices():
    with pytest.raises(ValueError, match="comparison must be one of"):
        pair_of("gpt-5")
    assert CHOICES[0] == NONE and len(CHOICES) == len(COMPARISONS) + 1


def test_a_panel_joins_its_sentences_and_refuses_empty_ones():
    p = Panel(None, (Said("One.", (derived(pair_of),)), Said("Two.")))
    assert p.text == "One. Two."
    with pytest.raises(ValueError):
        Said("  ")
