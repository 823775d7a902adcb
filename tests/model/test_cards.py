"""The model cards (k3lite.model.cards) and the comparisons' own facts (shows_on, why): one entry per model."""
import pytest

from k3lite.analytic.cost import PRICES
from k3lite.analytic.serving.deployment import MTP_LAYERS
from k3lite.model.cards import CARDS, card_of, colour_key, display_name
from k3lite.model.presets import PRESETS, get_preset
from k3lite.model.variants import COMPARISONS, K3_MINUS, comparison_config
from k3lite.panels.core import pair_of, where_else
from k3lite.viz.style import MODEL
from views.registry import PAGES


def test_every_preset_has_one_card_and_every_card_a_preset():
    assert set(CARDS) == set(PRESETS)
    assert all(key == card.key for key, card in CARDS.items())


def test_names_and_labels_are_unique():
    names = [c.name for c in CARDS.values()]
    labels = [c.label for c in COMPARISONS.values()]
    assert len(set(names)) == len(names) and len(set(labels)) == len(labels)


def test_a_card_points_only_at_things_that_exist():
    for card in CARDS.values():
        assert card.colour is None or card.colour in MODEL, card
        assert card.price is None or card.price in PRICES, card
        assert card.price is None or PRICES[card.price].name == card.name  # the price list names it as pages do
        layers, source = card.mtp
        assert layers >= 0 and source, card
        assert card.stated is None or (card.stated.total > card.stated.active > 0 and card.stated.source), card
    assert MTP_LAYERS["deepseek-v3"][0] == 1 and not any(n for k, (n, _) in MTP_LAYERS.items() if k != "deepseek-v3")


def test_released_comparisons_are_the_cards_with_a_label_in_order():
    released = [k for k, c in COMPARISONS.items() if c.idea is None]
    assert released == [k for k, c in CARDS.items() if c.label] == ["deepseek-v3", "kimi-k2", "kimi-linear-48b-a3b"]
    for key in released:
        assert comparison_config(key) == get_preset(key) and COMPARISONS[key].label == CARDS[key].label


def test_every_page_a_comparison_shows_on_is_a_page_of_the_registry():
    ids = {p.url_path for p in PAGES}
    for key, c in COMPARISONS.items():
        assert set(c.shows_on) <= ids, (key, c.shows_on)
        assert bool(c.shows_on) == bool(c.why), key  # a page named says what it draws, and only then
    assert all(COMPARISONS[k].shows_on for k in K3_MINUS)  # every variant says where its idea shows


def test_where_else_names_the_pages_by_their_titles_and_leaves_out_this_one():
    titles = {p.url_path: p.title for p in PAGES}
    assert where_else(pair_of("swiglu"), "kda") == (
        f"its difference shows on the {titles['moe']} page (what each expert computes: SiTU-GLU's bounded gate "
        "beside SwiGLU's, a training-stability choice)")
    two = where_else(pair_of("no-latent"), "home")
    assert two.startswith(f"its difference shows on the {titles['moe']} and {titles['interconnect']} pages (")
    one = where_else(pair_of("no-latent"), "interconnect")  # this page is left out
    assert one.startswith(f"its difference shows on the {titles['moe']} page (") and titles["interconnect"] not in one
    assert where_else(pair_of("swiglu"), "moe") == "" and where_else("deepseek-v3", "home") == ""


@pytest.mark.parametrize("name, shown, colour", [
    ("kimi-k3", "Kimi K3", "k3"), ("kimi-k3 with MLA everywhere", "Kimi K3 with MLA everywhere", "k3"),
    ("deepseek-v3", "DeepSeek-V3", "deepseek-v3"), ("kimi-k2 (your settings)", "Kimi K2 (your settings)", "kimi-k2"),
    ("kimi-linear-48b-a3b", "Kimi Linear 48B-A3B", None), ("kimi-k20", "kimi-k20", None),
    ("my own model", "my own model", None)])
def test_names_and_colours_come_from_the_card_and_other_names_have_none(name, shown, colour):
    assert display_name(name) == shown and colour_key(name) == colour
    assert (card_of(name) is None) == (shown == name)


def test_colours_follow_display_names_and_labels_not_words_inside_them():
    assert colour_key("Kimi K3") == colour_key("Kimi K3 plans + small worker (assumed) works") == "k3"
    assert colour_key("DeepSeek-V3") == "deepseek-v3" and colour_key("Kimi K2") == "kimi-k2"
    assert colour_key("K3 alone") is None and colour_key("a deepseek distill") is None  # no sniffing
