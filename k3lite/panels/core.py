"""The shared types of the panel layer: a computed sentence with its evidence, a panel, and the pair compared.

    Said(text, evidence)              one computed sentence and the evidence classes of the numbers in it
    Panel(figure, sentences, ...)     what a page draws: a plotly figure (or None) and its sentences; `values`
                                      holds the numbers the sentences were built from (a test reads them)
    Metric, Table, Note, Code         the other items a panel function may return for the page to draw in order
                                      (views.common.draw_items)
    Pair(k3, other, key)              K3 (or the page's config) and the config it is compared with, by key of
                                      k3lite.model.variants.COMPARISONS; `pair_of(base, key)` builds it
    where_else(pair, here)            "its difference shows on the ... page (why)": the comparison's own pages
                                      (its card's shows_on, by title) other than page `here`
    rebase(pair, cfg), changes_nothing(pair), other_name(pair, base)   a pair on a page's own config (its sliders)
A panel function takes `(cfg, other: Pair | None, ...knobs)` or a Pair; with no comparison it shows one model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from k3lite.base.evidence import Evidence
from k3lite.base.wording import join_words
from k3lite.model.config import K3Config
from k3lite.model.presets import get_preset
from k3lite.model.cards import card_of, display_name
from k3lite.model.variants import COMPARISONS, K3, Comparison, comparison_config
from k3lite.panels.pages import title

NONE = "none"  # the comparison control's "compare with nothing"
CHOICES = (NONE, *COMPARISONS)  # what the control offers, in order


def choice_label(key: str) -> str:
    """The control's text for a choice: 'nothing' or the comparison's label."""
    return "nothing (K3 alone)" if key == NONE else COMPARISONS[key].label


@dataclass(frozen=True)
class Said:
    """One computed sentence and the evidence classes of the numbers in it."""

    text: str
    evidence: tuple[Evidence, ...] = ()

    def __post_init__(self):
        if not self.text.strip():
            raise ValueError("a sentence needs text")


@dataclass(frozen=True)
class Panel:
    """A figure (None for a sentences-only panel) with its sentences. `evidence` tags every trace's hover
    (k3lite.viz.evidence.with_evidence, applied by the page's renderer); `evidence_by_name` the traces that
    differ. `values`: the numbers the sentences were built from, by name (what a test checks them against)."""

    figure: Any
    sentences: tuple[Said, ...] = ()
    evidence: Evidence | None = None
    evidence_by_name: dict[str, Evidence] | None = None
    title: str = ""
    values: dict[str, float] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """Every sentence joined (what tests/wording_check.py scans)."""
        return " ".join(s.text for s in self.sentences)


class Metric(NamedTuple):
    label: str
    value: str
    evidence: Evidence
    help: str = ""


class Table(NamedTuple):
    rows: list
    columns: dict  # column -> Evidence
    default: Evidence | None = None


class Note(NamedTuple):
    text: str  # plain text (Markdown), no computed claim
    markdown: bool = False  # a paragraph instead of a caption


class Code(NamedTuple):
    functions: tuple  # show the source of these (views.common.show_code)


@dataclass(frozen=True)
class Pair:
    """The page's config and the config it is compared with."""

    k3: K3Config
    other: K3Config
    key: str

    @property
    def comparison(self) -> Comparison:
        return COMPARISONS[self.key]

    @property
    def label(self) -> str:
        """The compared model's name as the control shows it ('DeepSeek-V3', 'K3 with MLA everywhere')."""
        return self.comparison.label

    @property
    def k3_label(self) -> str:
        return display_name(K3) if self.k3.name == K3 else self.k3.name

    @property
    def ablation(self) -> bool:
        """True for K3 without one idea (the same model otherwise), False for another released model."""
        return self.comparison.idea is not None


def pair_of(key: str | None, base: K3Config | str = K3) -> Pair | None:
    """The Pair for comparison `key` against `base` (K3's released preset by default); None for no comparison.
    An unknown key is a ValueError naming the choices."""
    if key in (None, NONE):
        return None
    k3 = get_preset(base) if isinstance(base, str) else base
    return Pair(k3, comparison_config(key, k3), key)


def where_else(pair: Pair | str, here: str) -> str:
    """Where the comparison's difference shows, for a page (`here`, a page id) whose numbers it leaves equal:
    'its difference shows on the Attention Residuals page (what each layer reads ...)', the pages by their
    navigation titles (k3lite.panels.pages), from the comparison's card (shows_on, why); "" when it names no page
    but `here`. A clause: the caller starts a sentence with it or puts it after a semicolon. `pair` may be a
    comparison key."""
    c = pair.comparison if isinstance(pair, Pair) else COMPARISONS[pair]
    pages = [title(p) for p in c.shows_on if p != here]
    if not pages:
        return ""
    return f"its difference shows on the {join_words(pages)} page{'s' if len(pages) > 1 else ''}" + (f" ({c.why})" if c.why else "")


def sentence(clause: str) -> str:
    """A clause as a sentence of its own: first letter up, a full stop ('' stays '')."""
    return f"{clause[0].upper()}{clause[1:]}." if clause else ""


def rebase(pair: Pair, cfg: K3Config) -> Pair:
    """The pair with the page's config on K3's side: a K3 variant is rebuilt from it (the sliders apply to both);
    another released model stays as released."""
    return Pair(cfg, comparison_config(pair.key, cfg) if pair.ablation else pair.other, pair.key)


def changes_nothing(pair: Pair) -> bool:
    """True when the compared config is the page's own (a K3 idea removed from a model that never had it)."""
    return pair.other.with_(name=pair.k3.name) == pair.k3


def other_name(pair: Pair, base: str) -> str:
    """The compared config's name in a sentence: its label, or, for a K3 variant built from another preset `base`
    (the page's preset is DeepSeek-V3, say), that preset with the change ('DeepSeek-V3 with SwiGLU in every
    feed-forward')."""
    card = card_of(pair.k3.name)
    if pair.ablation and (card is None or card.key != K3):
        if changes_nothing(pair):
            return f"{display_name(base)} without {pair.comparison.idea} (it has none: nothing changes)"
        return f"{display_name(base)} with {pair.comparison.instead}"
    return pair.label
