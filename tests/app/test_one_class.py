"""One number, one class: a sourced quantity shows the same evidence class on every page that prints it, the class its
source carries as data (k3lite.base.evidence). The pages are rendered (AppTest, every section open) and each
sourced number is found by what produced it, not by string equality: a price-table entry (cost.PRICES, the
providers' rows) by its row's name and value, a GPU-hour price by its GPU's row, a report quote by its metric.

It once failed on: Moonshot's list price ᵉ on the serving page and ʳ on the cost page; the serving-physics row under
ʳ columns; a "$ / GPU-hour ᵃ" column over four cited rows; two figures of one report under ᵉ and ʳ."""
from collections import defaultdict

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.analytic.cost import PRICES
from k3lite.analytic.hardware import gpu_label
from k3lite.analytic.hybrid import REPORTED, REPORTED_KIND
from k3lite.analytic.serving.deployment import price_evidence, price_table
from k3lite.analytic.serving.providers import PROVIDERS
from k3lite.base.evidence import KINDS, MARKERS, kind_of

PRICE_COLUMNS = ("$ / M input", "$ / M output")


def kinds_in(text: str) -> set[str]:
    return {k for k in KINDS if MARKERS[k] in str(text)}


def row_kind(row, column: str, price_is: str | None) -> str:
    """The class a row's number in `column` carries: the column's one class, or the row's own 'price is' cell where
    the column shows several."""
    shown = kinds_in(column)
    if len(shown) == 1:
        return shown.pop()
    assert price_is is not None, f"column {column!r} shows {shown} but its rows do not say which is theirs"
    return kind_of(str(row[price_is]))


def collect(at, page: str, seen: dict) -> None:
    """(source key) -> {(class, page)} for every sourced number the rendered page shows."""
    list_price = {p.name: key for key, p in PRICES.items()} | {p.name: f"provider {p.name}" for p in PROVIDERS}
    by_label = {gpu_label(g): g for g in price_table()}
    for df in at.dataframe:
        frame = df.value
        price_is = next((c for c in frame.columns if str(c).startswith("price is")), None)
        name_col = next((c for c in ("model", "provider", "GPU") if c in frame.columns), None)
        if name_col is None:
            continue
        for _, row in frame.iterrows():
            name = str(row[name_col])
            for col in frame.columns:
                plain = str(col).rsplit(" ", len(kinds_in(col)))[0] if kinds_in(col) else str(col)
                if plain in PRICE_COLUMNS and name in list_price:
                    key = list_price[name]
                    if key.startswith("provider Moonshot"):
                        key = "kimi-k3"  # Moonshot's own row is the cost page's K3 list price: one quantity
                    seen[(key, plain)].add((row_kind(row, col, price_is), page))
                elif plain in PRICE_COLUMNS and "(serving physics)" in name:
                    seen[("serving physics", plain)].add((row_kind(row, col, price_is), page))
                elif plain == "$ / GPU-hour" and name in by_label:
                    seen[(f"GPU-hour {by_label[name]}", plain)].add((row_kind(row, col, price_is), page))
    for m in at.metric:
        for key, (_, quote) in REPORTED.items():
            if m.label.startswith("reported") and quote in (m.help or ""):
                seen[(f"report {key}", "metric")].add((kind_of(m.label), page))


def expected(key: str) -> str:
    """The class the source carries as data."""
    if key in PRICES:
        return PRICES[key].evidence.kind
    if key.startswith("provider "):
        return next(p for p in PROVIDERS if p.name == key[len("provider "):]).evidence.kind
    if key == "serving physics":
        return "derived"
    if key.startswith("GPU-hour "):
        return price_evidence(price_table()[key[len("GPU-hour "):]][1]).kind
    return REPORTED_KIND[key[len("report "):]]


def render(page: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "views" / page), default_timeout=300)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


@pytest.fixture(scope="module")
def seen():
    out: dict = defaultdict(set)
    for page, params in (("cost_per_task.py", {"cost_physics": "true"}), ("serving.py", {}),
                         ("hybrid_attention.py", {})):
        collect(render(page, **params), page, out)
    return out


def test_a_sourced_number_shows_one_class_on_every_page(seen):
    two = {k: v for k, v in seen.items() if len({kind for kind, _ in v}) > 1}
    assert not two, f"one quantity, two classes: {two}"


def test_each_class_is_the_one_its_source_carries(seen):
    wrong = {k: v for k, v in seen.items() if {kind for kind, _ in v} != {expected(k[0])}}
    assert not wrong, wrong


def test_the_sweep_reaches_the_numbers_that_were_wrong(seen):
    """K3's list price on both pages (listed), the serving-physics row (derived), a cited and an assumed GPU-hour
    price (listed, assumed) and both reported speedups (measured elsewhere): the check can fail on each."""
    pages = {k: {p for _, p in v} for k, v in seen.items()}
    assert pages[("kimi-k3", "$ / M output")] == {"cost_per_task.py", "serving.py"}
    assert {kind for kind, _ in seen[("kimi-k3", "$ / M output")]} == {"listed"}
    assert {kind for kind, _ in seen[("serving physics", "$ / M output")]} == {"derived"}
    gpu_kinds = {next(iter(v))[0] for k, v in seen.items() if k[0].startswith("GPU-hour ")}
    assert gpu_kinds == {"listed", "assumed"}
    assert {kind for k in ("tpot_speedup_1m_batch1", "tpot_speedup_1m")
            for kind, _ in seen[(f"report {k}", "metric")]} == {"measured elsewhere"}
