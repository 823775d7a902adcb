"""Each preset's model card: what a page says about a model besides its config, in one place.

    ModelCard(key, name, colour, stated, mtp, price, label)   one per preset of k3lite.model.presets.PRESETS
    CARDS                  the cards by preset name; a released model with a `label` is offered as a comparison
    card_of(name)          the card of a preset name or of a config named after one ('kimi-k3 with SwiGLU',
                           'kimi-k3 (your settings)': a variant keeps its base's card); None for any other name
    display_name(name)     how a sentence names a model: 'kimi-k3' -> 'Kimi K3', tails kept, other names unchanged
    colour_key(name)       the card's colour key (a key of k3lite.viz.style.MODEL); None: the caller's own colour

A new model is its preset and its card (the comparison control, the pages' names, colours, stated totals, the
speculation default and the price list all read the card). Not in presets.py: the shipped page results'
fingerprint (k3lite.experiments.precomputed) covers that file's bytes, and a card changes no computed number.
A K3-minus variant's card is its `k3lite.model.variants.Comparison` (label, idea, what stands instead, the page
ids it shows on and why).
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.model.presets import KIMI_K3_STATED_ACTIVE, KIMI_K3_STATED_TOTAL


class Stated(NamedTuple):
    """Totals the model's own publication states (parameters), with where."""

    total: float
    active: float
    source: str
    # where a source says how it counted "active", compare like for like: (stated active, includes the input
    # embedding?, source); None: the convention is not stated, and pages compare our own (embedding left out)
    convention: tuple[float, bool, str] | None = None


class ModelCard(NamedTuple):
    key: str  # the preset's name (k3lite.model.presets.PRESETS)
    name: str  # how a sentence names it
    colour: str | None  # a key of k3lite.viz.style.MODEL; None: no colour of its own (a figure's series colour)
    stated: Stated | None  # None: nothing published to compare our count with
    mtp: tuple[int, str]  # multi-token-prediction layers its released checkpoint ships, and the source
    price: str | None = None  # its key in k3lite.analytic.cost.PRICES (a listed API price), None if not listed
    label: str | None = None  # the comparison control's text; None: not offered as a comparison


# in the comparison control's order (the released models first)
CARDS: dict[str, ModelCard] = {c.key: c for c in (
    ModelCard("deepseek-v3", "DeepSeek-V3", "deepseek-v3",
              Stated(671e9, 37e9, "DeepSeek-V3 technical report, arXiv 2412.19437 (MTP module excluded)",
                     (36.7e9, True, "DeepSeek-V3 README_WEIGHTS.md: 36.7B activated, including 0.9B embedding and "
                                    "0.9B output head")),
              (1, "DeepSeek-V3 report (arXiv 2412.19437 §2.2): one MTP module (the 14B of the 685B checkpoint not "
                  "counted in 671B); §5.4.3: the second token is accepted 85-90% of the time, 1.8x TPS"),
              price="deepseek-v3", label="DeepSeek-V3"),
    ModelCard("kimi-k2", "Kimi K2", "kimi-k2", Stated(1.04e12, 32e9, "Kimi K2 report, arXiv 2507.20534"),
              (0, "no MTP weights released with Kimi K2 (its config.json's num_nextn_predict_layers is 0 as we read "
                  "it; not verified against a stored copy here); servers draft with a separate model"),
              price="kimi-k2", label="Kimi K2"),
    ModelCard("kimi-linear-48b-a3b", "Kimi Linear 48B-A3B", None,
              Stated(48e9, 3e9, "Kimi Linear tech report, arXiv 2510.26692"),
              (0, "none released with the Kimi Linear checkpoint (not verified)"), label="Kimi Linear 48B"),
    ModelCard("kimi-k3", "Kimi K3", "k3",
              Stated(KIMI_K3_STATED_TOTAL, KIMI_K3_STATED_ACTIVE, "Kimi K3 model card / technical report (arXiv "
                     "2607.24653): 2.78T total, 104B active, text model + vision tower (ours: the text model)"),
              (0, "Kimi K3's released config.json (HF revision f831ab66): num_nextn_predict_layers 0, no MTP layer; "
                  "vLLM serves it with a separate DSpark draft model (vLLM blog, 2026-09-13)"), price="kimi-k3"),
    ModelCard("lite", "lite", None, None, (0, "k3lite's toy model: no MTP layer")),
)}


def card_of(name: str) -> ModelCard | None:
    """The card of preset `name`, or of a config named `<preset> <tail>` (how comparison_config and the pages name
    a changed preset: 'kimi-k3 with MLA everywhere', 'kimi-k3 (your settings)'); None for any other name."""
    if name in CARDS:
        return CARDS[name]
    head = name.split(" ", 1)[0]
    return CARDS.get(head) if head != name else None


def display_name(name: str) -> str:
    """'kimi-k3' -> 'Kimi K3'; a variant's name keeps its tail ('kimi-k3 with MLA everywhere' -> 'Kimi K3 with MLA
    everywhere'); any other name unchanged."""
    card = card_of(name)
    return name if card is None else card.name + name[len(card.key):]


def colour_key(name: str) -> str | None:
    """The colour key of the model `name` names: a preset's name or a card's display name or label, or either
    followed by a tail ('Kimi K3 plans + a worker', 'kimi-k3 (your settings)'); None for a name with no card, or a
    card with no colour (the figure's own series colour then)."""
    card = card_of(name) or next((c for c in CARDS.values() for shown in (c.name, c.label)
                                  if shown and (name == shown or name.startswith(shown + " "))), None)
    return None if card is None else card.colour
