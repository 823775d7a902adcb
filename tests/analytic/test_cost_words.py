"""The cost page's sentences (k3lite.analytic.cost_words): every comparison word comes from the numbers it compares,
over a grid of planner prices, worker prices and successes, shares and scenarios; the planner/worker what-ifs never
say "0.5x cheaper" or a negative share of a saving; the assumptions block's headline is the page's metric."""
import re
from functools import partial

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.analytic.cost import PRICES, SCENARIOS, ModelPrice, TaskProfile, analyze, planner_worker, single_model
from k3lite.analytic.cost_words import (
    break_even_sentence, comparison_sentence, split_factor_words, split_saving, split_sentence,
)
from wording_check import wording_problems

WORKER = ModelPrice("small worker", 0.10, 0.40, PRICES["small-worker"].cache_discount)
# K3 priced at the serving page's fast frontier point (about its $0.071 / $1.07 per M): the split saves ~1.1x
FAST = ModelPrice("kimi-k3 at 100+ tok/s (serving cost)", 0.0713, 1.067, 0.9)
SLOW = ModelPrice("kimi-k3 at 20+ tok/s (serving cost)", 0.0859, 0.276, 0.9)
PLANNERS = (PRICES["kimi-k3"], FAST, SLOW)


def _split_grid():
    return [dict(planner=p, worker=ModelPrice("w", w_in, 4 * w_in, 0.75), profile=TaskProfile(success_rate=s),
                 planner_share=share, planner_success=0.98, worker_success=ws)
            for p in PLANNERS for w_in in (0.02, 0.10, 1.0) for s in (0.3, 0.8) for share in (0.075, 0.5, 1.0)
            for ws in (0.1, 0.4, 0.8, 1.0)]


def _args(settings):
    return (settings["planner"], settings["worker"], settings["profile"], settings["planner_share"],
            settings["planner_success"], settings["worker_success"])


def _sentence(**settings):
    return split_sentence(*_args(settings)).sentence


def test_split_sentence_words_come_from_the_numbers():
    assert wording_problems(_sentence, _split_grid()) == []


def test_split_metric_words_come_from_the_numbers():
    grid = [dict(factor=f) for f in (0.3, 0.5, 0.999, 1.0, 1.04, 2.0, 9.2)]
    assert wording_problems(split_factor_words, grid) == []
    assert split_factor_words(9.18) == ("split is cheaper by", "9.2x")
    assert split_factor_words(0.5) == ("split is dearer by", "2.0x")  # never "cheaper by 0.5x"


def test_comparison_and_break_even_words_come_from_the_numbers():
    grid = []
    for key, sc in SCENARIOS.items():
        for s in (0.05, 0.5, 0.8, 1.0):
            base = TaskProfile(success_rate=s)
            k3 = single_model(PRICES["kimi-k3"], base)
            others = [single_model(PRICES[m], base.with_(success_rate=sc.success.get(m, s) * f,
                                                         turns=base.turns * sc.turns_factor.get(m, 1.0)))
                      for m in ("kimi-k2", "deepseek-v3") for f in (0.02, 0.5, 1.0)]
            others += [single_model(FAST, base), single_model(PRICES["kimi-k3"], base)]
            grid += [dict(k3=k3, other=o) for o in others]
    assert wording_problems(comparison_sentence, grid) == []
    assert wording_problems(break_even_sentence, [dict(k3=g["k3"], others=[g["other"]]) for g in grid]) == []


def test_what_ifs_never_say_fractional_cheaper_or_a_negative_share():
    """With K3 priced at the fast frontier point the split saved ~1.1x and the page said 'with the worker success
    halved to 40% it is 0.5x cheaper (-1016% of the dollar saving per task remains)', and its sentence went on in
    lower case after 'by its own account).'."""
    notice = split_sentence(FAST, WORKER, TaskProfile(), 0.075, 0.98, 0.8)
    text = notice.sentence
    assert 1.0 < notice.factor < 1.2
    assert not re.search(r"\b0\.\d+x cheaper", text), text
    assert not re.search(r"-\d+% of the", text), text
    assert "it is 1.8x dearer than kimi-k3 at 100+ tok/s (serving cost) alone: none of the saving remains" in text
    assert "1.04x cheaper (43% of the dollar saving per task remains)" in text
    assert not re.search(r"\. [a-z]", text), text  # every sentence starts with a capital


def test_split_dearer_says_why_from_per_attempt_and_success():
    notice = split_sentence(SLOW, WORKER, TaskProfile(), 0.075, 0.98, 0.8)
    alone = analyze(single_model(SLOW, TaskProfile()))
    split = analyze(planner_worker(SLOW, WORKER, TaskProfile(), 0.075, 0.98, 0.8))
    assert notice.factor < 1 and "x dearer than" in notice.headline
    assert f"{split.per_attempt / alone.per_attempt:.1f}x more" in notice.headline
    assert "succeeds in 78.4% of attempts against 80%" in notice.headline
    assert "of the dollar saving" not in notice.sentence  # no saving to keep a share of


def test_split_saving_is_the_pages_metric_and_holds_probabilities_at_one():
    assert split_saving() == pytest.approx(analyze(single_model(PRICES["kimi-k3"], TaskProfile())).per_completed_task
                                           / analyze(planner_worker(PRICES["kimi-k3"], WORKER, TaskProfile()))
                                           .per_completed_task)
    assert split_factor_words(split_saving())[1] == "9.2x"
    # planner success moved +20% from 98% is held at 100%, not refused
    assert split_saving(planner_success=1.176) == pytest.approx(split_saving(planner_success=1.0))
    # the worker's success enters as 1 / p: +20% in it is +20% in the saving
    assert split_saving(worker_success=0.96) == pytest.approx(1.2 * split_saving())
    # turns per attempt cancel (both strategies take them)
    assert split_saving(turns=24.0) == pytest.approx(split_saving())
    assert split_saving(FAST) == pytest.approx(split_sentence(FAST, WORKER, TaskProfile(), 0.075, 0.98, 0.8).factor)
    assert partial(split_saving, FAST)(worker_success=0.8) == pytest.approx(split_saving(FAST))


def test_cost_page_at_the_fast_point_words_the_what_ifs_from_the_numbers():
    at = AppTest.from_file(str(ROOT / "views" / "cost_per_task.py"), default_timeout=180)
    at.query_params["cost_planner_at"] = "fast"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    text = " ".join(c.value for c in at.caption) + " ".join(m.value for m in at.markdown)
    # at the fast point's request price (input and output, price.request_price) the split may save or not: the
    # what-ifs say which from the numbers, never a saving that is not there
    dearer = "the split is" in text and "dearer than Kimi K3 at 100+ tok/s (serving cost) alone per completed" in text
    assert ("none of the saving remains" in text) != dearer
    assert not dearer or "of the dollar saving per task remains" not in text
    assert not re.search(r"\b0\.\d+x cheaper", text) and not re.search(r"-\d+% of the dollar", text)
    assert "account). with" not in text
