"""Cost per completed task: closed form vs hand arithmetic, Monte-Carlo vs closed form, validation edge cases."""
import math

import numpy as np
import pytest

from k3lite.analytic.cost import (
    PRICES, ModelPrice, TaskProfile, analyze, break_even_success, planner_worker, savings, savings_curve, simulate, single_model,
    split_what_ifs,
)

K3 = PRICES["kimi-k3"]


def test_k3_prices_are_moonshots_list():
    """platform.kimi.ai/docs/pricing/chat-k3: $3.00 input, $0.30 cache hit, $15.00 output per M tokens."""
    assert (K3.input_per_m, K3.output_per_m) == (3.0, 15.0)
    assert K3.input_per_m * (1 - K3.cache_discount) == pytest.approx(0.30)
    assert "chat-k3" in K3.source and "$0.30" in K3.source


def test_cost_per_completed_task_by_hand():
    prof = TaskProfile(turns=10, input_tokens_per_turn=10_000, output_tokens_per_turn=500, success_rate=0.5,
                       turn_retry_rate=0.2, cache_hit_rate=0.4, max_attempts=2)
    a = analyze(single_model(K3, prof))
    call = (6_000 * 3 + 4_000 * 0.30 + 500 * 15) / 1e6  # uncached + cached ($0.30 listed) + output
    attempt = 10 / 0.8 * call
    assert a.per_attempt == pytest.approx(attempt, rel=1e-12)
    assert a.per_completed_task == pytest.approx(attempt / 0.5, rel=1e-12)
    assert a.completion_rate == pytest.approx(0.75)
    assert a.expected_attempts == pytest.approx(1.5)
    assert a.input_cost + a.cached_input_cost + a.output_cost == pytest.approx(a.per_completed_task)


def test_per_token_cheaper_can_be_per_task_dearer():
    cheap = ModelPrice("cheap", 1.0, 5.0)
    good = single_model(K3, TaskProfile(turns=10, success_rate=0.9))
    flaky = single_model(cheap, TaskProfile(turns=40, success_rate=0.2))
    assert analyze(flaky).per_m_tokens < analyze(good).per_m_tokens
    assert analyze(flaky).per_completed_task > analyze(good).per_completed_task


@pytest.mark.parametrize("strategy", [
    single_model(K3, TaskProfile()),
    single_model(K3, TaskProfile(success_rate=0.3, turn_retry_rate=0.3, max_attempts=5, turns=3.5)),
    planner_worker(K3, PRICES["small-worker"], TaskProfile(turns=10), planner_share=0.05),  # 0.5 planner turns
])
def test_monte_carlo_mean_matches_closed_form(strategy):
    a = analyze(strategy)
    mc = simulate(strategy, n_tasks=40_000, seed=7)
    assert mc.per_completed_task == pytest.approx(a.per_completed_task, rel=0.03)
    assert mc.completed.mean() == pytest.approx(a.completion_rate, abs=0.01)
    assert mc.attempts.mean() == pytest.approx(a.expected_attempts, rel=0.02)
    pct = mc.percentiles()
    assert pct[50] < pct[90] < pct[99]  # a real spread, not a point


def test_simulation_is_seeded():
    s = single_model(K3, TaskProfile())
    assert np.array_equal(simulate(s, 500, seed=3).cost, simulate(s, 500, seed=3).cost)
    assert not np.array_equal(simulate(s, 500, seed=3).cost, simulate(s, 500, seed=4).cost)


def test_planner_worker_nine_to_ten_x_and_when_not():
    prof = TaskProfile()
    single = single_model(K3, prof)
    split = planner_worker(K3, PRICES["small-worker"], prof)  # defaults: 7.5% planner turns, worker 80%
    assert 9.0 <= savings(single, split) <= 10.0
    assert savings(single, planner_worker(K3, PRICES["small-worker"], prof, worker_success=0.2)) < 3
    assert savings(single, planner_worker(K3, PRICES["small-worker"], prof, planner_share=0.5)) < 2
    curve = savings_curve(K3, PRICES["small-worker"], prof, [0.2, 0.5, 0.8])
    assert np.all(np.diff(curve) > 0)  # a more reliable worker always saves more


@pytest.mark.parametrize("kwargs,match", [
    (dict(success_rate=0.0), "success_rate must be > 0"),
    (dict(success_rate=1.2), "success_rate must be <= 1"),
    (dict(turn_retry_rate=1.0), "turn_retry_rate"),
    (dict(cache_hit_rate=-0.1), "cache_hit_rate"),
    (dict(turns=0.5), "turns must be >= 1"),
    (dict(max_attempts=0), "max_attempts"),
    (dict(input_tokens_per_turn=float("nan")), "finite"),
])
def test_profile_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TaskProfile(**kwargs)


def test_price_and_split_validation():
    with pytest.raises(ValueError, match="prices must be >= 0"):
        ModelPrice("x", -1.0, 1.0)
    with pytest.raises(ValueError, match="cache_discount"):
        ModelPrice("x", 1.0, 1.0, cache_discount=1.5)
    with pytest.raises(ValueError, match="worker_success must be in"):
        planner_worker(K3, PRICES["small-worker"], TaskProfile(), worker_success=0.0)
    with pytest.raises(ValueError, match="planner_share"):
        planner_worker(K3, PRICES["small-worker"], TaskProfile(), planner_share=0.0)
    with pytest.raises(ValueError, match="n_tasks"):
        simulate(single_model(K3, TaskProfile()), n_tasks=0)


def test_certain_success_and_free_model():
    a = analyze(single_model(ModelPrice("free", 0.0, 0.0), TaskProfile(success_rate=1.0)))
    assert a.per_completed_task == 0 and a.completion_rate == 1 and a.expected_attempts == 1
    mc = simulate(single_model(K3, TaskProfile(success_rate=1.0, turn_retry_rate=0.0)), 100, token_cv=0.0)
    assert mc.completed.all() and math.isfinite(mc.per_completed_task)


def test_break_even_success_makes_costs_equal():
    ref = single_model(K3, TaskProfile(success_rate=0.8))
    k2 = single_model(PRICES["kimi-k2"], TaskProfile(success_rate=0.8))
    p_star = break_even_success(ref, k2)
    assert 0 < p_star < 0.8
    even = single_model(PRICES["kimi-k2"], TaskProfile(success_rate=p_star))
    assert analyze(even).per_completed_task == pytest.approx(analyze(ref).per_completed_task, rel=1e-12)


def _page():
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    return AppTest.from_file(str(ROOT / "views" / "cost_per_task.py"), default_timeout=120)


def test_page_shows_the_split_and_reacts():
    at = _page().run()
    assert not at.exception and not at.error
    factor = _metric(at, "split is cheaper by")
    assert factor == "9.2x"  # at K3's listed prices ($3.00 / $0.30 cache hit / $15.00; it was 9.4x at a 75% discount)
    at.slider(key="cost_worker_success").set_value(40).run()
    assert _metric(at, "split is cheaper by") == "4.6x"
    at.number_input(key="cost_worker_in").set_value(3.0).run()  # the worker as dear as K3 per input token
    from k3lite.analytic.cost_words import split_saving
    factor = split_saving(worker_input_per_m=3.0, worker_success=0.4)
    assert factor < 1 and _metric(at, "split is dearer by") == f"{1 / factor:.1f}x"  # not "cheaper by 0.6x"


def _metric(at, label_start: str) -> str:
    found = [m.value for m in at.metric if m.label.startswith(label_start)]
    assert found, [m.label for m in at.metric]
    return found[0]


def test_page_bad_link_value_is_a_notice_not_a_traceback():
    at = _page()
    at.query_params["cost_success"] = "0"  # zero success: refused, default used
    at.run()
    assert not at.exception
    assert any("cost_success" in w.value for w in at.warning)


def test_split_what_ifs_are_computed_not_asserted():
    """The page once said halving the worker's success leaves 'most of the saving gone'; at the defaults the
    split stays 4.6x cheaper with 88% of the dollar saving left (at K3's listed $0.30 cache hit; 4.7x when a 75%
    discount was assumed). Check the arithmetic by hand."""
    profile = TaskProfile(turns=20.0, input_tokens_per_turn=20_000.0, output_tokens_per_turn=1000.0, success_rate=0.8,
                          turn_retry_rate=0.05, cache_hit_rate=0.5, max_attempts=3)
    worker = ModelPrice("w", 0.10, 0.40, PRICES["small-worker"].cache_discount)
    factor, (half, share) = split_what_ifs(PRICES["kimi-k3"], worker, profile, 0.075, 0.98, 0.8)
    alone = analyze(single_model(PRICES["kimi-k3"], profile)).per_completed_task
    split = analyze(planner_worker(PRICES["kimi-k3"], worker, profile, 0.075, 0.98, 0.8)).per_completed_task
    assert factor == pytest.approx(alone / split)
    # success enters only as 1 / p: halving the worker's success doubles the split's cost per task exactly
    assert half.factor == pytest.approx(factor / 2)
    assert half.kept == pytest.approx((alone - 2 * split) / (alone - split))
    assert round(half.factor, 1) == 4.6 and round(100 * half.kept) == 88
    assert share.factor < half.factor and 0 < share.kept < half.kept


def test_seed_claims_are_attributed_to_what_states_them():
    """Pages called the seed article "the K3 announcement" and said it reports the 9-10x and the
    $3 / $15; it is a third-party blog post that credits the 9-10x to "reported experiments" and calls such figures
    directional. One wording (k3lite.base.sources) for every page; no page calls it the announcement."""
    from conftest import ROOT
    from k3lite.base import sources
    for path in list((ROOT / "views").glob("*.py")) + list((ROOT / "k3lite").rglob("*.py")):
        if path.name in ("sources.py", "config.py"):  # sources says what it is not; config is another task's
            continue
        assert "K3 announcement" not in path.read_text(), path
    assert "reported experiments" in sources.SPLIT_CLAIM and "directional" in sources.SPLIT_CLAIM
    assert PRICES["kimi-k3"].source.startswith(sources.K3_PRICE)
    at = _page().run()
    assert not at.exception, [e.message for e in at.exception]
    text = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert sources.SPLIT_CLAIM in text and sources.K3_PRICE_SOURCE in text
def test_page_draws_the_two_strategies_in_distinct_colours():
    """The bars "K3 alone" and "K3 plans + worker" both mapped to K3's colour (model_color), one orange twice."""
    import json

    at = _page().run()
    figs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    dist = next(f for f in figs if f["layout"].get("yaxis", {}).get("title", {}).get("text") == "fraction of tasks")
    lines = [t for t in dist["data"] if t.get("fill") == "tozeroy"]
    assert len(lines) == 2
    colours = [t["line"]["color"] for t in lines]
    assert len(set(colours)) == 2, colours
    dashed = [s["line"]["color"] for s in dist["layout"].get("shapes", [])]
    assert sorted(dashed) == sorted(colours), "each dashed mean line takes its strategy's colour"


def test_comparison_sentence_is_price_times_turns_over_success():
    """The side-by-side says why K3 costs more or less per task; the ratio it states is the
    product of the token-price, turns and success ratios, and the break-even it names makes the costs equal."""
    from k3lite.analytic.cost import SCENARIOS
    from k3lite.analytic.cost_words import comparison_sentence
    base = TaskProfile(success_rate=0.8)
    k3 = single_model(PRICES["kimi-k3"], base)
    sc = SCENARIOS["article"]
    other = single_model(PRICES["deepseek-v3"], base.with_(success_rate=sc.success["deepseek-v3"],
                                                           turns=base.turns * sc.turns_factor["deepseek-v3"]))
    text = comparison_sentence(k3, other)
    price = analyze(k3).per_attempt / analyze(single_model(PRICES["deepseek-v3"], base)).per_attempt
    ratio = price / sc.turns_factor["deepseek-v3"] * sc.success["deepseek-v3"] / 0.8
    assert ratio == pytest.approx(analyze(k3).per_completed_task / analyze(other).per_completed_task)
    assert f"per completed task K3 is {ratio:.1f}x dearer" in text
    assert f"for the same turns K3's tokens are {price:.1f}x dearer" in text
    cheap = single_model(PRICES["deepseek-v3"], base.with_(success_rate=0.01))  # fails almost always: K3 wins
    a_k3, a_cheap = analyze(k3).per_completed_task, analyze(cheap).per_completed_task
    assert f"per completed task K3 is {a_cheap / a_k3:.1f}x cheaper" in comparison_sentence(k3, cheap)


def test_page_scenarios_set_the_table_and_the_sentence():
    at = _page().run()
    assert not at.exception and not at.error
    assert at.radio(key="cost_scenario").value == "article"  # opens on the article's scenario, labelled
    def sentence():
        return next(m.value for m in at.markdown if "cheapest per completed task" in m.value)
    article = sentence()
    assert article.startswith("**The article's scenario:**") and "50% of attempts" in article
    assert any("OUR illustration" in c.value for c in at.caption)  # the assumptions are labelled as ours
    at.radio(key="cost_scenario").set_value("equal").run()
    equal = sentence()
    assert equal.startswith("**Equal everything:**") and equal != article and "takes as many turns" in equal
