"""The length sweep's computed sentences: one idea at a time, the capacity verdict, the report's order; and the
page shows them, computed from the shipped runs."""
import pytest

from conftest import ROOT
from k3lite.experiments import lab_sweep_jobs as protocol
from k3lite.experiments.lab_store import load_runs
from k3lite.experiments.lab_sweep_aggregate import aggregate
from k3lite.experiments.lab_sweep_sentences import (capacity_sentence, mechanism_sentence, order_sentences,
                                                    report_verdict)
from test_lab_sweep_jobs import _record, set_protocol, small_protocol  # noqa: F401  (small_protocol: a fixture)


def test_mechanism_sentence_one_idea_at_a_time_and_chance_count():
    def row(m, T, mean, std=0.01, at_chance=0):
        return {"task": "mqar", "mixer": m, "seq_len": T, "lr": 0.01, "n": 3, "mean": mean, "std": std,
                "at_chance": at_chance}
    rows = [row(m, T, a) for T in (128, 256) for m, a in
            [("linear", 0.69), ("mamba2", 0.30), ("deltanet", 0.95), ("gdn", 0.90), ("kda", 0.91, )]]
    rows[-1]["std"] = 0.05  # KDA at T=256: KDA vs GDN (+1 point) is inside its seed spread
    text = mechanism_sentence(rows, "mqar")
    assert text.startswith("At T = 256, the delta rule (DeltaNet vs linear): +26.0 points (95.0% vs 69.0%)")
    assert "a scalar decay on top of it (GDN vs DeltaNet): -5.0 points (90.0% vs 95.0%)" in text
    assert "(KDA vs GDN): +1.0 points (91.0% vs 90.0%; within seed spread of ± 5.0 points)" in text
    assert mechanism_sentence([r for r in rows if r["mixer"] != "deltanet"], "mqar") == "", "needs the control"
    assert "still gaining" not in text
    rows[-1]["rising"] = 2  # two KDA runs at T=256 hit the cap while still learning
    assert mechanism_sentence(rows, "mqar").endswith(
        "(2 of these runs were still gaining at their step cap, so read these differences as learning speed as "
        "much as capacity.)")
    rows[-1]["at_chance"] = 1
    assert "; 1 never left chance, which pulls its mixer's mean down" in mechanism_sentence(rows, "mqar")
    recs = [{**_record("mqar", "kda", 256, 1e-2, s, 0.004, reason="max_steps"), "best_eval_acc": 0.006} for s in (0, 1)]
    recs += [_record("mqar", "kda", 128, 1e-2, 0, 0.6)] + [_record("mqar", "kda", 128, lr, 0, 0.1) for lr in (3e-3, 3e-2)]
    agg = {r["seq_len"]: r for r in aggregate(recs) if r["mixer"] == "kda"}
    assert agg[256]["at_chance"] == 2 and agg[128]["at_chance"] == 0


def test_mechanism_points_are_the_difference_of_the_percentages_shown():
    """The shipped palindrome cell read '+1 points (96% vs 94%)': 95.7 - 94.4 = 1.3 rounds to 1 while the rounded
    means differ by 2. The points printed are the difference of the percentages printed."""
    import re

    def row(m, mean):
        return {"task": "palindrome", "mixer": m, "seq_len": 128, "lr": 0.01, "n": 3, "mean": mean, "std": 0.02,
                "at_chance": 0}
    rows = [row("linear", 0.944), row("mamba2", 0.95), row("deltanet", 0.957), row("gdn", 0.9565), row("kda", 0.9561)]
    text = mechanism_sentence(rows, "palindrome")
    found = re.findall(r"([+-]\d+(?:\.\d+)?) points \((\d+(?:\.\d+)?)% vs (\d+(?:\.\d+)?)%", text)
    assert len(found) == 3, text
    for d, a, b in found:
        assert float(d) == pytest.approx(float(a) - float(b), abs=1e-9), (d, a, b)
    assert "+1.3 points (95.7% vs 94.4%" in text


def test_capacity_sentence_names_the_longest_length_and_the_best_delta_rule(small_protocol):
    def row(m, T, mean, capped=0, extended=0):
        return {"task": "mqar", "mixer": m, "seq_len": T, "lr": 0.01, "n": 2, "mean": mean, "std": 0.0,
                "not_plateaued": capped, "extended": extended}
    rows = [row("linear", 16, 0.99), row("kda", 16, 0.99), row("linear", 32, 0.6, 2), row("kda", 32, 0.9, 1)]
    runs = [{**_record("mqar", m, 32, 0.01, s, 0.5), "wall_s": w} for m, s, w in
            [("linear", 0, 60.0), ("linear", 1, 120.0), ("kda", 0, 240.0), ("kda", 1, 300.0)]]
    text = capacity_sentence(rows, runs)
    assert text.startswith("At T = 32, with the 600-step cap, linear attention reached 60% against KDA 90% (mean "
                           "over 2 seeds)")
    assert "took 3.0 minutes" in text, "median of 60, 120, 240, 300 s"
    assert "cap they reach" not in text, "no reruns given"
    assert capacity_sentence([r for r in rows if r["mixer"] == "linear"], runs) == ""
    closes = capacity_sentence(rows, runs, [row("linear", 32, 0.96, extended=2), row("kda", 32, 0.97, extended=1)])
    assert "rerun with a 1500-step cap they reach 96% and 97%: the gap closes, so at this length it was learning speed" \
        in closes
    stays = capacity_sentence(rows, runs, [row("linear", 32, 0.70, extended=2), row("kda", 32, 0.97, extended=1)])
    assert "the gap stays, so at this length it is room in the state" in stays
    partial = capacity_sentence(rows, runs, [row("linear", 32, 0.96, extended=1), row("kda", 32, 0.97, extended=1)])
    assert "1500" not in partial, "one of linear's two capped runs has no rerun yet: no verdict on the gap"
    kept = capacity_sentence(rows, runs, [{**row("linear", 32, 0.96, extended=1), "rerun_shorter": 1},
                                               row("kda", 32, 0.97, extended=1)])
    assert "they reach 96% and 97%" in kept, "a rerun that stopped earlier still counts as the run's rerun"


@pytest.mark.parametrize("means, verdict", [
    ({"kda": (0.9, 0.01), "gdn": (0.7, 0.01), "mamba2": (0.3, 0.01)}, "matches the report"),
    ({"kda": (0.5, 0.01), "gdn": (0.7, 0.01), "mamba2": (0.3, 0.01)}, "differs from the report (GDN > KDA)"),
    ({"kda": (0.71, 0.05), "gdn": (0.7, 0.05), "mamba2": (0.3, 0.01)}, "matches up to ties within seed spread (KDA ≈ GDN)"),
    ({"kda": (0.9, 0.0)}, "not comparable yet"),
])
def test_report_verdict(means, verdict):
    order = sorted(((m, a, s) for m, (a, s) in means.items()), key=lambda x: -x[1])
    assert report_verdict(order) == verdict


# ------------------------------------------------------------------------------------------------ page
def test_lab_page_shows_the_shipped_sweep_with_computed_sentences():
    from streamlit.testing.v1 import AppTest

    import streamlit as st

    st.cache_data.clear()  # the page rereads the folders every 5 minutes; an earlier test may hold an older read
    rows = aggregate(load_runs(), load_runs(protocol.LONG_DIR))
    if not rows:
        pytest.skip("no finished sweep runs under assets/lab/ yet")
    at = AppTest.from_file(str(ROOT / "views" / "lab.py"), default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    text = "\n".join(m.value for m in at.markdown)
    for task in {r["task"] for r in rows}:
        for sentence in order_sentences(rows, task):
            assert sentence in text, f"page does not show the computed sentence {sentence!r}"
    assert len(at.get("plotly_chart")) >= len({r["task"] for r in rows})
    shown = text + "\n".join(c.value for c in at.caption)
    import re
    assert not re.search(r"\{[a-z_]+[\[(.]", shown), "an f-string placeholder reached the page unformatted"


def test_a_tie_says_which_half_of_the_rule_makes_it():
    from k3lite.experiments.lab_sweep_sentences import tie_phrase
    assert tie_phrase((0.91, 0.05), (0.90, 0.01)) == "within seed spread of ± 5.0 points"
    assert tie_phrase((0.999, 0.001), (0.992, 0.001)) == ("a 0.7-point gap, under the 2-point floor below which two "
                                                          "cells count as tied; seed spread ± 0.1")
    with pytest.raises(ValueError, match="do not tie"):
        tie_phrase((0.9, 0.01), (0.5, 0.01))
