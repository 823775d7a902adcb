"""The serving page's words on how far an answer sits from the runs (k3lite/panels/serving_envelope.py): every
number in them is the envelope's."""
import re

from k3lite.analytic.serving import envelope as ev
from k3lite.analytic.serving.deployment import Serving
from k3lite.panels.core import Panel, Table
from k3lite.panels.serving_envelope import distance_said, groups_items, groups_sentence


def _pcts(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"(\d+)%", text)]


def test_the_groups_sentence_quotes_the_identified_range_leave_one_out_and_the_bound_group():
    ok = [g.tpot_mape for g in ev.leave_group_out() if g.identified and g.rows > 1]
    nospec = next(g for g in ev.leave_group_out() if g.at_bound)
    text = groups_sentence()
    assert _pcts(text)[:3] == [round(100 * min(ok)), round(100 * max(ok)), round(100 * ev.inside_error())]
    assert "HBM efficiency runs to its bound of 1" in text and f"{round(100 * nospec.tpot_mape)}% off" in text


def test_the_table_has_a_row_per_group_and_names_what_the_rest_cannot_fit():
    said, table = groups_items()
    assert isinstance(said, Panel) and isinstance(table, Table) and groups_sentence() in said.text
    assert len(table.rows) == len(ev.leave_group_out())
    by = {r["held out"]: r for r in table.rows}
    assert by["the runs without speculation"]["HBM efficiency of the fit"] == "1.00"
    assert "optimistic" in by["the runs on vLLM"]["the other runs fit"]
    assert by["the runs of the NVFP4 checkpoint"]["the other runs fit"] == "every term"


def test_an_answer_inside_and_outside_says_its_band_and_price_range():
    inside = distance_said(ev.distance_of(Serving(gpu="B300", n_gpus=8, ep=8, tp=8, context=8704), 2), 3.0).text
    b = ev.inside_error()
    assert "inside the published runs" in inside and f"${3 * (1 - b):.2f}-{3 * (1 + b):.2f}" in inside
    out = distance_said(ev.distance_of(Serving(), 8), 2.72).text
    assert "leaves the published runs on 4 axes" in out and "at least ±" in out and "or wider" in out
    assert "no published run checks the TP and context parts" in out  # expert dispatch and NIC: the multi-node runs
    assert "multi-node decode deployments" in out
    d = ev.distance_of(Serving(gpu="H200", n_gpus=8, ep=8, tp=8, context=8704), 2)
    gpu = distance_said(d).text
    assert "one axis" in gpu and f"±{round(100 * d.band)}%" in gpu and "$" not in gpu


def test_the_verdict_says_its_band_and_the_cheapest_answer_inside_the_runs():
    from k3lite.analytic.serving.frontier import frontier, verdict
    from k3lite.analytic.serving.price import DEFAULT_SHAPE
    from k3lite.panels.serving_envelope import point_distance, verdict_said
    fr = frontier("kimi-k3", DEFAULT_SHAPE, model="predicted", gpus=("B300", "GB300 NVL72"))
    w = verdict(fr, 30.0).winner
    (said,) = verdict_said(fr, w, 30.0)
    d = point_distance(w, fr.shape)
    assert f"±{round(100 * d.band)}%" in said.text and all(a.name in said.text for a in d.axes)
    inside = [p for p in fr.points if p.tokens_per_s_per_user >= 30.0 and point_distance(p, fr.shape).inside]
    best = min(inside, key=lambda p: p.usd_per_m)
    assert best.gpu == "B300" and best.ep == best.tp == 8 and best.usd_per_m >= w.usd_per_m
    assert f"${best.usd_per_m:,.3f}" in said.text and f"EP {best.ep}, TP {best.tp}" in said.text
    assert f"{best.usd_per_m / w.usd_per_m:,.2f}x" in said.text
    assert verdict_said(fr, None, 30.0) == []
