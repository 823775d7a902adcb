"""Every comparison page, opened with each choice of the sidebar's "Compare K3 with" (`?vs=`), runs without an
exception, says what it compares with, labels every number's evidence class, and draws the compared model on a chart
beside K3 (more traces named with its label than the page draws alone). Opened with no choice it draws none."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.model.variants import COMPARISONS
from test_evidence import unlabelled  # what on a rendered page shows a number without an evidence class
from views.registry import COMPARE_PAGES, by_url_path


def _open(page: str, vs: str | None) -> AppTest:
    at = AppTest.from_file(str(ROOT / by_url_path(page).file), default_timeout=300)
    if vs is not None:
        at.query_params["vs"] = vs
    return at.run()


def _trace_names(at: AppTest) -> list[str]:
    names = []
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        names += [str(t.get("name") or "") for t in spec.get("data", [])]
    return names


def _shown(at: AppTest) -> str:
    return "\n".join(e.value for kind in ("markdown", "caption") for e in at.get(kind)
                     if isinstance(getattr(e, "value", None), str))


_ALONE: dict[str, list[str]] = {}


def _alone(page: str) -> list[str]:
    """The trace names the page draws with no comparison (some already name DeepSeek-V3: the home ledger)."""
    if page not in _ALONE:
        _ALONE[page] = _trace_names(_open(page, None))
    return _ALONE[page]


@pytest.mark.parametrize("vs", list(COMPARISONS))
@pytest.mark.parametrize("page", COMPARE_PAGES)
def test_page_draws_the_comparison(page, vs):
    at = _open(page, vs)
    assert not at.exception, [e.message for e in at.exception]
    label = COMPARISONS[vs].label
    assert f"Compared with **{label}**" in _shown(at), f"{page} does not say it compares with {label}"
    names = _trace_names(at)
    before = sum(label in n for n in _alone(page))
    assert sum(label in n for n in names) > before, \
        f"{page}: no chart draws {label!r} beyond what it draws alone; traces: {sorted(set(names))[:12]}"
    assert at.query_params["vs"] == vs
    missing = unlabelled(at)  # the comparison's figures and tables say what kind of evidence they are, too
    assert not missing, f"{page} vs {vs}: {len(missing)} numbers without an evidence class: {missing[:6]}"


@pytest.mark.parametrize("page", COMPARE_PAGES)
def test_no_choice_draws_no_comparison(page):
    at = _open(page, None)
    assert not at.exception, [e.message for e in at.exception]
    assert "Compared with" not in _shown(at)
    assert "vs" not in at.query_params


def test_an_unknown_choice_falls_back_with_a_notice():
    at = _open("moe", "gpt-5")
    assert not at.exception
    assert any("vs=gpt-5" in w.value for w in at.warning)
    assert "Compared with" not in _shown(at)


def test_the_sidebar_control_sets_the_choice_for_the_page():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    at.selectbox(key="vs").set_value("all-mla").run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.query_params["vs"] == "all-mla"
    assert "Compared with **K3 with MLA everywhere**" in _shown(at)


@pytest.mark.parametrize("page", ["moe", "forward_pass"])
def test_a_comparison_page_opened_inside_the_app(page):
    """Through app.py (its sidebar draws the control before the page runs), the page reads the choice without
    setting the widget's value again: that raised StreamlitWidgetAlreadyInstantiatedError on every page."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["vs"] = "deepseek-v3"
    at.run()
    at.switch_page(by_url_path(page).file).run()
    assert not at.exception, [e.message for e in at.exception]
    assert "Compared with **DeepSeek-V3**" in _shown(at)
    at.selectbox(key="vs").set_value("none").run()
    assert not at.exception and "Compared with" not in _shown(at)
