"""Every comparison word in the MoE and lab pages' computed sentences comes from k3lite.base.wording (chosen from
the numbers it compares): each generator runs over the shipped results and a few other settings with recording
on (tests/wording_check.py)."""
import copy

import pytest

from k3lite.experiments import lab_state_jobs as state
from k3lite.experiments import lab_state_sentences as ss
from k3lite.experiments import lab_sweep_jobs as sweep
from k3lite.experiments import lab_sweep_sentences as ws
from k3lite.experiments.lab_state_aggregate import ablation_rows
from k3lite.experiments.lab_state_aggregate import aggregate as state_aggregate
from k3lite.experiments.lab_store import RESULTS_DIR, load_runs
from k3lite.experiments.lab_sweep_aggregate import aggregate as sweep_aggregate
from k3lite.experiments.moe_demo import ExpertChoice, PromptDemo, balance_claim, notice_lines
from k3lite.viz.moe import METHOD_LABELS
from wording_check import wording_problems

# fixed phrases that are not comparisons
ALLOWED = ("no more to go on", "more than one", "lower bound", "the larger seed spread", "larger of",
           "or smaller heads")


@pytest.fixture(scope="module")
def state_runs():
    return load_runs(state.STATE_DIR)


@pytest.fixture(scope="module")
def state_rows(state_runs):
    return state_aggregate(state_runs)


@pytest.fixture(scope="module")
def sweep_rows():
    runs, long_runs = load_runs(RESULTS_DIR), load_runs(sweep.LONG_DIR)
    return runs, sweep_aggregate(runs, long_runs), sweep_aggregate(runs)


def variants(rows: list[dict]) -> list[list[dict]]:
    """The shipped rows, each K alone, and the same with every recurrent seed levelled off or the spreads halved:
    settings where the verdicts take their other branches."""
    out = [rows] + [[r for r in rows if r["head_dim"] == K] for K in sorted({r["head_dim"] for r in rows})]
    flat = copy.deepcopy(rows)
    for r in flat:
        r["not_flat"] = 0
    tight = copy.deepcopy(flat)
    for r in tight:
        r["std"] /= 2
    return out + [flat, tight]


def test_state_sentences_choose_their_comparison_words(state_rows, state_runs):
    grid = [{"rows": rows} for rows in variants(state_rows)]
    for generator in (ss.ceiling_sentence, ss.rule_sentence, ss.report_sentence):
        assert wording_problems(generator, [g for g in grid if generator(**g)], ALLOWED) == []
    ablation = ablation_rows(state_runs)
    assert wording_problems(ss.ablation_sentence, [{"rows": ablation}, {"rows": ablation, "table_rows": state_rows}],
                            ALLOWED) == []


def test_sweep_sentences_choose_their_comparison_words(sweep_rows):
    runs, rows, rows_cap = sweep_rows
    tasks = sorted({r["task"] for r in rows})
    tight = copy.deepcopy(rows)
    for r in tight:
        r["std"] /= 4
    for generator in (ws.mechanism_sentence, ws.spread_sentence, ws.order_sentences):
        grid = [{"rows": rs, "task": t} for rs in (rows, tight, rows_cap) for t in tasks]
        assert wording_problems(generator, [g for g in grid if generator(**g)], ALLOWED) == []
    grid = [{"rows": rows_cap, "runs": runs, "final_rows": final} for final in (rows, None)]
    assert wording_problems(ws.capacity_sentence, grid, ALLOWED) == []


def test_live_sentence_chooses_its_comparison_words():
    grid = [{"finals": finals, "task": task, "labels": {"kda": "KDA"}}
            for task in ("mqar", "palindrome")
            for finals in ({"linear": (0.97, 250, 9.8), "kda": (0.95, 250, 13.4)},
                           {"linear": (0.5, 100, 3.0), "kda": (0.5, 100, 4.0)},
                           {"kda": (0.01, 10, 1.0)},
                           {"linear": (0.2, 100, 3.0), "kda": (0.9, 100, 4.0), "gdn": (0.9, 100, 4.0)})]
    assert wording_problems(ws.live_sentence, grid, ALLOWED) == []


def test_live_sentence_gives_the_tasks_real_chance_level():
    """The live result said 'Chance is about 0% per answer token': MQAR's answers are one of 256 values (0.39%),
    palindrome's one of 510 tokens (0.2%)."""
    text = ws.live_sentence({"kda": (0.97, 250, 13.4)}, "mqar", vocab_size=512)
    assert "Chance is 0.39% per answer token (a guess among 256 tokens)" in text and "about 0%" not in text
    assert "Chance is 0.2% per answer token (a guess among 510 tokens)" in ws.live_sentence(
        {"kda": (0.97, 250, 13.4)}, "palindrome", vocab_size=512)


def fake_demo(curves: dict, stability: dict) -> PromptDemo:
    counts = (1, 2, 4, 8, 16, 32, 64)
    viol = {m: c[counts.index(32)] for m, c in curves.items()}
    return PromptDemo([], {}, {}, viol, stability, curves, counts, 32, curves["none"][0],
                      ExpertChoice(1, 1, 0, 0, 0, 1), 100, 300, 64)


def test_moe_sentences_choose_their_comparison_words():
    from k3lite.experiments.precomputed import moe_default_demo, shipped

    shipped_demos = [d for d in (moe_default_demo(), shipped("moe_demo_page")) if d is not None]
    curves = {"none": [3.0] * 7, "aux_loss": [3, 3, 3, 2, 1, 0.6, 0.5], "bias": [3, 2, 1, 0.7, 0.6, 0.6, 0.6],
              "quantile": [0.6] * 7}
    never = {"none": [3.0] * 7, **{m: [3.0] * 7 for m in ("aux_loss", "bias", "quantile")}}
    stabilities = [{"none": 0.05, "aux_loss": 0.06, "bias": 0.07, "quantile": 0.08},
                   {"none": 0.05, "aux_loss": 0.02, "bias": 0.05, "quantile": 0.07}]
    demos = shipped_demos + [fake_demo(c, s) for c in (curves, never) for s in stabilities]
    grid = [{"demo": d, "names": names} for d in demos for names in (None, METHOD_LABELS)]
    assert wording_problems(notice_lines, grid, ALLOWED) == []
    assert wording_problems(balance_claim, grid, ALLOWED) == []
