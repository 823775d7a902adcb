"""Every number a page shows says what kind of evidence it is (k3lite.base.evidence), and every page lists what it
assumes: rendered with every section open, a page fails on a metric, a numeric table column or a hoverable figure
trace without an evidence marker, and on a missing assumptions block."""
import json

import pytest
from pandas.api.types import is_bool_dtype, is_numeric_dtype
from streamlit.testing.v1 import AppTest

from conftest import PAGE_FILES, ROOT
from k3lite.base.evidence import kind_of, looks_numeric
from k3lite.viz.evidence import untagged

# pages that show no assumed input of their own: the glossary defines words; the article, the tour and the practice
# problems retell other pages' numbers (each with its page's evidence)
NO_ASSUMPTIONS = {"glossary.py", "article.py", "tour.py", "practice.py"}
ASSUMPTIONS_TITLE = "What this page assumes"


def unlabelled(at) -> list[str]:
    """What on a rendered page shows a number without an evidence class."""
    missing = [f"metric {m.label!r}" for m in at.metric if not kind_of(m.label) or not kind_of(m.help or "")]
    for df in at.dataframe:
        frame = df.value
        for col in frame.columns:
            numeric = (is_numeric_dtype(frame[col]) and not is_bool_dtype(frame[col])) or looks_numeric(frame[col])
            if numeric and not kind_of(str(col)):
                missing.append(f"table column {col!r}")
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        missing += [f"figure {spec.get('layout', {}).get('title', {}).get('text', '?')!r} trace {t!r}"
                    for t in untagged(spec)]
    return missing


@pytest.fixture(scope="module", params=PAGE_FILES)
def rendered(request):
    at = AppTest.from_file(str(ROOT / "views" / request.param), default_timeout=180).run()
    assert not at.exception, [e.message for e in at.exception]
    return request.param, at


def test_every_number_has_an_evidence_class(rendered):
    page, at = rendered
    missing = unlabelled(at)
    assert not missing, f"{page}: {len(missing)} numbers without an evidence class: {missing[:8]}"


def test_every_page_lists_its_assumptions(rendered):
    page, at = rendered
    if page in NO_ASSUMPTIONS:
        return
    labels = [e.label for e in at.expander]
    assert any(label.startswith(ASSUMPTIONS_TITLE) for label in labels), f"{page} has no assumptions block"
    block = next(e for e in at.expander if e.label.startswith(ASSUMPTIONS_TITLE))
    text = " ".join(m.value for m in block.markdown)
    assert "moves most with" in text, f"{page}: the assumptions block names no most-sensitive assumption"


def test_the_check_can_fail():
    """A metric without a marker is found (the check itself)."""
    at = AppTest.from_string("import streamlit as st\nst.metric('x', 1)\nst.dataframe({'y': [1.0]})").run()
    assert unlabelled(at) == ["metric 'x'", "table column 'y'"]


def test_a_text_column_that_looks_numeric_for_some_data_does_not_crash_a_page():
    """The forward pass's top-5 'next byte' labels are digits for some prompts ("1", "2"): a load run found the
    page raising there. Numbers without a class raise; text that only looks numeric is left unmarked."""
    at = AppTest.from_string(
        "import streamlit as st\nfrom views.common import evidence_columns\nfrom k3lite.base.evidence import derived\n"
        "frame, _ = evidence_columns({'next byte': ['1', '2', 'a'], 'p': [0.5, 0.3, 0.2]}, {'p': derived('x.f')})\n"
        "st.write(', '.join(frame.columns))\n"
        "try:\n    evidence_columns({'n': [1, 2]}, {})\nexcept ValueError as e:\n    st.write(str(e))\n").run()
    assert not at.exception, [e.message for e in at.exception]
    shown = " ".join(str(m.value) for m in at.markdown)
    assert "next byte" in shown and "p ᵈ" in shown  # the labels unmarked, the numbers marked
    assert "holds numbers but names no evidence class" in shown
