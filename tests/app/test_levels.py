"""The sidebar's *Explain for* (views/levels.py) and the pages that honour it (k3lite/panels/words/).

Every such page at every level: no exception, the visible-words budget (counted as ../shared/tools/visible_words.py
counts: text outside expanders, popovers and later tabs, lazy bodies closed), each level's words differ, engineer is
the page as it was; once with a comparison on. The URL: ?level= round trip, kept across pages, a bad value refused
by name. The claims: every equation the paper level shows is evaluated as written and compared with the code."""
from __future__ import annotations

import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.panels.words import LEVELS

LEVEL_PAGES = ("moe.py", "kda.py", "hybrid_attention.py", "attention_residuals.py", "forward_pass.py")
BUDGET = {"first": 150, "engineer": 350, "paper": 600}  # visible words a page at each level
TEXT = {"markdown", "caption", "info", "warning", "success", "error", "text", "latex"}
TIMEOUT = 300


def visible_texts(node, hidden: bool = False, out: list | None = None) -> list[str]:
    """The texts a reader sees without opening anything (the same walk as visible_words.py)."""
    out = [] if out is None else out
    kind = getattr(node, "type", "")
    if kind in TEXT and hasattr(node, "value"):
        if not hidden:
            out.append(str(node.value))
        return out
    kids = getattr(node, "children", {}) or {}
    items = [kids[k] for k in sorted(kids)] if isinstance(kids, dict) else list(kids)
    for i, child in enumerate(items):
        inner = getattr(child, "type", "") in ("expandable", "expander", "popover") or (kind == "tab_container" and i > 0)
        visible_texts(child, hidden or inner, out)
    return out


def words(texts: list[str]) -> int:
    return sum(len(re.findall(r"[A-Za-z0-9][\w'.,%$×/-]*", t)) for t in texts)


def run_page(page: str, monkeypatch, **query) -> AppTest:
    monkeypatch.delenv("K3LITE_EXPANDERS", raising=False)  # what a reader gets: lazy bodies closed
    at = AppTest.from_file(str(ROOT / "views" / page), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


@pytest.fixture(scope="module", params=LEVEL_PAGES)
def rendered(request) -> dict:
    """A page's visible texts at no ?level=, and at each level."""
    mp = pytest.MonkeyPatch()
    try:
        shown = {"default": visible_texts(run_page(request.param, mp)._tree)}
        for lv in LEVELS:
            shown[lv] = visible_texts(run_page(request.param, mp, level=lv)._tree)
    finally:
        mp.undo()
    return {"page": request.param, **shown}


def test_engineer_is_the_page_as_it_was(rendered):
    assert rendered["engineer"] == rendered["default"]


@pytest.mark.parametrize("lv", LEVELS)
def test_words_budget(rendered, lv):
    n = words(rendered[lv])
    assert n <= BUDGET[lv], f"{rendered['page']} at {lv}: {n} visible words, budget {BUDGET[lv]}"


def test_each_level_says_it_differently(rendered):
    first, engineer, paper = (set(rendered[lv]) for lv in LEVELS)
    assert first != engineer and paper != engineer and first != paper
    assert first - engineer, f"{rendered['page']}: first look adds no words of its own"
    assert paper - engineer, f"{rendered['page']}: paper adds no words of its own"


def test_first_look_has_no_formulas(rendered):
    shown = "\n".join(rendered["first"])
    assert "$" not in shown and "\\" not in shown, shown


@pytest.mark.parametrize("page", LEVEL_PAGES)
@pytest.mark.parametrize("lv", LEVELS)
def test_level_with_a_comparison(page, lv, monkeypatch):
    """With a comparison on the page draws one more panel; at first look it says the one number for both models."""
    shown = visible_texts(run_page(page, monkeypatch, level=lv, vs="deepseek-v3")._tree)
    assert words(shown) <= BUDGET[lv], f"{page} at {lv} beside DeepSeek-V3: {words(shown)} visible words"
    if lv == "first":
        assert any("for DeepSeek-V3 (" in t for t in shown), shown


# ------------------------------------------------------------------------------------------ the URL
def test_bad_level_is_refused_by_name(monkeypatch):
    at = run_page("moe.py", monkeypatch, level="eli5")
    notices = [w.value for w in at.warning if w.value.startswith("Ignored `level=eli5`")]
    assert notices and "first, engineer, paper" in notices[0], [w.value for w in at.warning]
    assert at.session_state["level"] == "engineer"


def test_level_round_trip_and_kept_across_pages():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["level"] = "paper"
    at.run()
    assert not at.exception
    box = at.sidebar.selectbox(key="level")
    assert box.label == "Explain for" and box.value == "paper"
    box.set_value("first").run()
    assert at.query_params["level"] == "first"
    at.switch_page("views/moe.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.sidebar.selectbox(key="level").value == "first" and at.query_params["level"] == "first"
    at.sidebar.selectbox(key="level").set_value("engineer").run()
    assert "level" not in at.query_params  # the default leaves the link as it was


# ------------------------------------------------------------------------------------------ the claims
def paper_formulas(page: str, at: AppTest) -> list:
    """The Formulas the page drew at paper level, built from the page's own session state (its numbers)."""
    state = at.session_state
    if page == "moe.py":
        from k3lite.panels import moe as panels
        from k3lite.panels.words import moe

        shape = panels.k3_width_moe(state["moe_experts"], state["moe_top_k"], state["moe_shared"],
                                    panels.RATIOS[state["moe_latent"]])
        return moe.formulas(shape, 16 if "moe_batch" not in state else state["moe_batch"])
    if page == "kda.py":
        from k3lite.model.presets import get_preset
        from k3lite.panels.words import kda

        return kda.formulas(len(state["kda_prompt"].encode()), get_preset("lite").kda.head_dim)
    if page == "hybrid_attention.py":
        from k3lite.panels.words import hybrid

        return hybrid.formulas(state["hy_ratio"], state["hy_batch"], state["hy_hw"], state["hy_eff"])
    if page == "attention_residuals.py":
        from k3lite.model.presets import get_preset
        from k3lite.panels.words import attnres
        from k3lite.viz.archmap import sources_at

        mode, block, reader = state["ar_mode"], state["ar_block"], state["ar_reader"]
        n = len(sources_at(mode, reader, block if mode == "block" else 1))  # what the page's reads hold
        return attnres.formulas(n, get_preset("lite").d_model, reader, block)
    if page == "forward_pass.py":
        import torch

        from k3lite.base.tokenizer import encode
        from k3lite.model.checkpoint import load_lite_model
        from k3lite.panels.words import forward
        from k3lite.viz.model import stages

        model, _ = load_lite_model()
        with torch.inference_mode():
            trace = model(torch.tensor([encode(state["fp_prompt"], max_chars=200, max_bytes=400)]), trace=True).trace
        return forward.formulas(model.cfg, trace, stages(trace)[state["fp_stage"]])
    raise KeyError(page)


@pytest.mark.parametrize("page", LEVEL_PAGES)
def test_every_paper_equation_is_what_the_code_computes(page, monkeypatch):
    at = run_page(page, monkeypatch, level="paper")
    shown_latex = [e.value.strip("$\n") for e in at.latex]  # st.latex wraps its body in $$ lines
    captions = [c.value for c in at.caption]
    formulas = paper_formulas(page, at)
    assert formulas and len(shown_latex) == len(formulas), shown_latex
    for f in formulas:
        assert f.latex in shown_latex, f"{page}: {f.latex} is not on the page"
        assert f.text in captions, f"{page}: the sentence under {f.latex} is not on the page"
        written, computed = f.evaluate(**f.inputs), f.value
        assert np.allclose(np.asarray(written, dtype=float), np.asarray(computed, dtype=float), rtol=1e-6,
                           atol=1e-5), f"{page}: {f.latex} as written gives {written}, the code {computed}"


# ------------------------------------------------------------------------------------------ practice
@pytest.mark.parametrize("lv,difficulty", [("first", "1"), ("engineer", "any"), ("paper", "3")])
def test_practice_starts_at_the_level_s_difficulty(lv, difficulty, monkeypatch):
    at = run_page("practice.py", monkeypatch, level=lv)
    assert at.radio(key="pr_difficulty").value == difficulty


def test_practice_link_difficulty_and_homework_win_over_the_level(monkeypatch):
    at = run_page("practice.py", monkeypatch, level="first", pr_difficulty="2")
    assert at.radio(key="pr_difficulty").value == "2"
    at = run_page("practice.py", monkeypatch, level="paper", homework="1", **{"class": "room-1"})
    assert at.session_state["pr_difficulty"] == "any"


def test_practice_follows_the_sidebar_level():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.switch_page("views/practice.py").run()
    assert at.radio(key="pr_difficulty").value == "any"
    at.sidebar.selectbox(key="level").set_value("first").run()
    assert not at.exception and at.radio(key="pr_difficulty").value == "1"
    at.radio(key="pr_difficulty").set_value("2").run()  # the reader's own choice stays while the level does
    at.run()
    assert at.radio(key="pr_difficulty").value == "2"
    at.sidebar.selectbox(key="level").set_value("paper").run()
    assert at.radio(key="pr_difficulty").value == "3"


# ------------------------------------------------------------------------------------------ the tour
def test_tour_first_look_walks_its_path_in_plain_words(monkeypatch):
    from k3lite.tour.first_look import FIRST_PATH, path
    from k3lite.tour.steps import STEPS

    at = run_page("tour.py", monkeypatch, level="first")
    assert words(visible_texts(at._tree)) <= BUDGET["first"]
    seen = []
    for _ in range(len(FIRST_PATH)):
        seen.append(at.session_state["tour_step"])
        claim = next(m.value for m in at.markdown if m.value.startswith("*The claim:*"))
        assert STEPS[seen[-1] - 1].claim not in claim  # reworded
        if len(seen) < len(FIRST_PATH):
            at.button(key="tour_next").click().run()
            assert not at.exception
    assert seen == path("first") and at.button(key="tour_next").disabled  # the path ends at its last step


@pytest.mark.parametrize("lv", ["engineer", "paper"])
def test_tour_walks_every_step_at_the_other_levels(lv, monkeypatch):
    at = run_page("tour.py", monkeypatch, level=lv)
    at.button(key="tour_next").click().run()
    assert at.session_state["tour_step"] == 2
    has_source = any(c.value.startswith("Where the answer comes from") for c in at.caption)
    assert has_source == (lv == "paper")


def test_bad_level_in_the_app_is_refused_in_the_sidebar():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["level"] = "undergraduate"
    at.run()
    assert not at.exception
    notices = [w.value for w in at.sidebar.warning if w.value.startswith("Ignored `level=undergraduate`")]
    assert notices and "must be one of first, engineer, paper" in notices[0]
    assert at.sidebar.selectbox(key="level").value == "engineer" and "level" not in at.query_params
