"""The fit and its published error (k3lite/analytic/serving/fit.py): leave-one-out on every fitted row meets the
targets, every fitted term is physical, the shipped values are what a refit gives, the bound stays below."""
import pytest

from k3lite.analytic.serving.fit import (
    FITTED, MEANING, NAMES, comparison, fit, leave_one_out, row_error, summary,
)
from k3lite.analytic.serving.measured import FITTED_ROWS, MEASURED, MI350X_K3, VLLM_K3_ROWS

# targets: TPOT MAPE <= 25%, TTFT MAPE <= 35%, no row off by more than 50%; inference-sim's roofline validates at
# 36% TPOT error over 13 runs, the anchor to beat
TPOT_MAPE, TTFT_MAPE, WORST, ANCHOR = 0.25, 0.35, 0.50, 0.36


@pytest.fixture(scope="module")
def loo():
    return leave_one_out()


def test_leave_one_out_meets_the_targets(loo):
    assert len(loo) == len(FITTED_ROWS) == 15
    s = summary(loo)
    assert s.mape["tpot"] <= TPOT_MAPE and s.mape["tpot"] < ANCHOR
    assert s.mape["ttft"] <= TTFT_MAPE
    assert s.mape["throughput"] <= TPOT_MAPE
    for r in loo:
        for metric, err in r.errors.items():
            if metric == "ttft" and not r.ttft_scored:
                continue
            assert abs(err) <= WORST, (r.key, metric, err)


def _physical(f, rows=FITTED_ROWS):
    e = f.efficiency
    assert 0 < e.hbm_fraction <= 1 and 0 < e.flops_fraction <= 1 and e.layer_s > 0
    for m in rows:  # each acceptance within [1, drafted + 1] for the runs that use it
        if m.draft_tokens and isinstance(m.acceptance, str):
            assert 1 <= f.acceptance[m.acceptance] <= m.draft_tokens + 1, (m.acceptance, f.acceptance)


def test_every_fit_is_physical_leave_one_out_fits_included():
    _physical(FITTED)
    rows = tuple(FITTED_ROWS)
    for i in range(len(rows)):
        _physical(fit(rows[:i] + rows[i + 1:]), rows)


def test_the_shipped_values_are_what_a_refit_gives():
    f = fit()
    for name, shipped in FITTED.values().items():
        assert f.values()[name] == pytest.approx(shipped, rel=0.01), name
    assert f.rms_log_error == pytest.approx(FITTED.rms_log_error, rel=0.05)
    assert set(MEANING) == set(NAMES) == set(FITTED.values())


def test_vllm_first_tokens_lie_between_the_two_arrival_patterns():
    # guidellm's streams drift apart (per-request acceptance): neither waves nor fully spread, so a bracket
    for m in VLLM_K3_ROWS:
        lo, hi = row_error(m, FITTED).ttft_bracket
        assert 0.9 * lo <= m.ttft_s <= 1.1 * hi, m.key
        if m.concurrency > 1:
            assert lo < m.ttft_s < hi


def test_bound_below_measured_and_predicted_for_every_b300_row():
    rows = comparison()
    assert [r["row"] for r in rows] == [m.key for m in MEASURED]
    for r in rows:
        if r["gpu"] != "B300":
            continue
        assert r["bound TPOT (ms)"] <= r["measured TPOT (ms)"] and r["bound TPOT (ms)"] <= r["predicted TPOT (ms)"]
        assert r["bound TTFT (s)"] <= r["measured TTFT (s)"] and r["bound TTFT (s)"] <= r["predicted TTFT (s)"]
        assert abs(r["tpot error"]) < WORST


def test_held_out_mi350x_rows_are_not_fitted_and_are_reported():
    rows = {r["row"]: r for r in comparison()}
    for m in MI350X_K3:
        assert not m.fitted and m.key in rows and m not in FITTED_ROWS


def test_the_page_shows_leave_one_out_predictions_and_a_sentence_built_from_them(loo):
    """What the serving page opens on: a fitted run's point is its leave-one-out prediction (not the shipped fit,
    which saw it), a held-out run's is the shipped fit's; the sentence's numbers are the summary's."""
    import re

    from k3lite.analytic.serving.fit import FITTED, checked, checked_sentence, row_error, summary
    from k3lite.analytic.serving.measured import MEASURED

    c = checked()
    by_key = {r.key: r for r in loo}
    for row, m in zip(c.rows, MEASURED):
        expect = by_key[m.key] if m.fitted else row_error(m, FITTED)
        assert row["predicted TPOT (ms)"] == pytest.approx(1e3 * expect.predicted_tpot_s)
        assert row["predicted TTFT (s)"] == pytest.approx(expect.predicted_ttft_s)
        assert row["bound TPOT (ms)"] < row["measured TPOT (ms)"]  # a bound is never slower than a measurement
    s = summary(loo)
    text = checked_sentence(c)
    assert f"off by {100 * s.mape['tpot']:.0f}% on average (worst {100 * s.worst['tpot'][1]:+.0f}%)" in text
    assert f"time to first token by {100 * s.mape['ttft']:.0f}%" in text
    lo, hi = (float(x) for x in re.search(r"bound alone is ([\d.]+)-([\d.]+)x too fast", text).groups())
    ratios = [r["measured TPOT (ms)"] / r["bound TPOT (ms)"] for r in c.rows if r["fitted"]]
    assert (lo, hi) == (round(min(ratios), 1), round(max(ratios), 1))
    held = [r["tpot error"] for r in c.rows if not r["fitted"]]
    assert held and ("too fast" in text) == (max(held) < 0)  # the direction word agrees with the errors' sign


def test_prediction_figure_draws_each_run_once_per_panel_with_its_bound():
    from k3lite.analytic.serving.fit import checked
    from k3lite.viz.serving import prediction_figure

    rows = checked().rows
    fig = prediction_figure(rows)
    predicted = [t for t in fig.data if t.name and t.name.startswith("predicted")]
    bounds = [t for t in fig.data if t.name == "roofline bound"]
    n_tpot, n_ttft = len(rows), sum(r["TTFT scored"] for r in rows)
    assert sum(len(t.x) for t in predicted) == n_tpot + n_ttft
    assert sum(len(t.x) for t in bounds) == n_tpot + n_ttft
    tpot_points = {(x, y) for t in predicted if t.xaxis == "x" for x, y in zip(t.x, t.y)}
    assert tpot_points == {(r["measured TPOT (ms)"], r["predicted TPOT (ms)"]) for r in rows}
