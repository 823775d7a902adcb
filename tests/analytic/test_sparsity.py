"""The article beside the app: each claim with the app's computed number, and the 1.8% vs 3.54%
reconciliation made explicit (tour step 1 told a student who answered the article's 1.8% they were 2x low)."""
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.analytic.sparsity import sparsity_shares
from k3lite.model.config import routed_fraction
from k3lite.model.presets import get_preset
from k3lite.analytic.params import count_params
from k3lite.tour.steps import STEPS


def test_the_two_shares_count_different_things_and_add_up():
    s = sparsity_shares()
    cfg = get_preset("kimi-k3")
    rep = count_params(cfg)
    assert s.expert_share == routed_fraction(cfg.moe.top_k, cfg.moe.n_routed_experts)
    assert round(100 * s.expert_share, 1) == 1.8  # the article's "about 1.8%": 16 of 896 experts
    assert s.param_share == rep.activation_ratio  # the tour's answer: parameters
    assert s.routed_active + s.always_on == s.active == rep.active
    assert s.routed_active == pytest.approx(s.routed_total * s.top_k / s.n_routed)
    # the gap is the always-on parameters: without them the parameter share would be the expert share (about)
    assert s.routed_active / s.total == pytest.approx(s.expert_share * s.routed_total / s.total)
    text = s.sentence()
    assert f"{100 * s.expert_share:.1f}% counts **experts**" in text and f"{100 * s.param_share:.2f}%" in text


def test_article_page_shows_each_claim_with_the_computed_answer():
    at = AppTest.from_file(str(ROOT / "views" / "article.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    s = sparsity_shares()
    metrics = {m.label.split(" :gray[")[0]: m.value for m in at.metric}  # the label without its evidence marker
    assert metrics["experts a token visits (the article)"] == f"{100 * s.expert_share:.2f} %"
    assert metrics["parameters a token uses (the app)"] == f"{100 * s.param_share:.2f} %"
    assert all(m.label.endswith(":gray[ᵈ]") for m in at.metric)
    text = " ".join(m.value for m in at.markdown)
    assert s.sentence() in text
    for i, step in enumerate(STEPS, start=1):
        answer = step.compute().answer_text.replace("$", "\\$")
        assert f"**{answer}**" in text, step.key
        assert f"(tour?tour_step={i})" in text and f"({step.page})" in text
    assert "Six B300s" in text


def test_shares_figure_draws_both_shares_from_the_counts():
    from k3lite.viz.article import shares_figure

    s = sparsity_shares()
    fig = shares_figure(s)
    experts, routed, always = fig.data
    assert experts.x[0] == pytest.approx(100 * s.expert_share)
    assert routed.x[0] + always.x[0] == pytest.approx(100 * s.param_share)  # the two parts add up to the app's share
    assert always.x[0] == pytest.approx(100 * s.always_on / s.total)
    assert f"{100 * s.param_share:.2f}%" in fig.layout.title.text


def test_the_sentence_takes_its_comparison_word_from_the_shares():
    """It said '2.1x the expert share', a factor without a direction; the word now comes from the two shares, for
    every preset."""
    from k3lite.model.presets import PRESETS
    from wording_check import wording_problems

    def sentence(preset: str) -> str:
        return sparsity_shares(preset).sentence()

    assert wording_problems(sentence, [dict(preset=p) for p in PRESETS]) == []
    s = sparsity_shares()
    assert f"{s.param_share / s.expert_share:.1f}x larger than the expert share" in s.sentence()
