"""The speed-price frontier (k3lite/analytic/serving/frontier.py): the envelope per GPU, HBM fits, the published checks
reproduced from the frontier's own points, the verdict against a brute-force search."""
import json

import pytest

from k3lite.analytic.hardware import GPUS, gpu_name
from k3lite.analytic.serving import K3_PRESET, USD_PER_GPU_HOUR
from k3lite.analytic.serving.__main__ import main
from k3lite.analytic.serving.published import PUBLISHED, validate
from k3lite.analytic.serving.frontier import (
    FRONTIER_FORMATS, FRONTIER_GPUS, RELEASED, cheapest_at, frontier, lower_envelope, per_gpu_at, verdict,
)
from k3lite.analytic.serving.price import DEFAULT_SHAPE, Shape, concurrency_step



@pytest.fixture(scope="module")
def k3():
    return frontier(K3_PRESET)


def test_every_gpu_row_is_a_monotone_envelope_that_no_point_beats(k3):
    assert set(k3.by_gpu) == set(FRONTIER_GPUS)  # K3 fits somewhere on every default GPU (4-bit experts, wide EP)
    for gpu, env in k3.by_gpu.items():
        speeds = [p.tokens_per_s_per_user for p in env]
        prices = [p.usd_per_m for p in env]
        assert speeds == sorted(speeds) and len(set(speeds)) == len(speeds), gpu
        assert all(a < b for a, b in zip(prices, prices[1:])), gpu  # faster costs strictly more along the row
        for p in (q for q in k3.points if q.gpu == gpu):  # every point is on the row or beaten by a row point
            assert any(e.tokens_per_s_per_user >= p.tokens_per_s_per_user
                       and e.usd_per_m <= p.usd_per_m for e in env), p.label


def test_every_gpu_of_the_table_can_be_asked_for_by_name():
    others = [g for g in GPUS if g not in FRONTIER_GPUS]  # AMD's parts: not in the default comparison
    assert others, "the table has GPUs outside the default frontier"
    fr = frontier(K3_PRESET, DEFAULT_SHAPE, gpus=others, formats=[RELEASED], eps=(8, 16))
    assert set(fr.by_gpu) == set(others)
    assert set(fr.prices) == set(GPUS)  # every GPU's price and source, compared or not (the page lists them all)


def test_overall_envelope_is_the_envelope_of_the_rows(k3):
    rows = [p for env in k3.by_gpu.values() for p in env]
    assert lower_envelope(rows) == list(k3.envelope)


def test_every_point_fits_in_hbm(k3):
    assert k3.points
    for p in k3.points:
        assert p.hbm_used_bytes <= p.hbm_bytes, p.label
    for u in k3.setups:
        assert u.terms.weight_bytes_per_gpu + u.terms.max_batch_per_gpu * u.terms.cache_bytes_per_sequence <= u.hbm_bytes
    # what does not fit is named, not dropped silently: K3 at fp8 on 8 H100s is 2.8 TB on 640 GB
    assert any(s.startswith("H100 SXM, EP 8, TP 1, fp8") and "exceed" in s for s in k3.skipped)


def test_deepseek_and_k2_points_reproduce_the_published_checks():
    """The frontier's own setup at each publication's GPU, EP and batch gives the validation's number."""
    rows = {r["deployment"]: r for r in validate()}
    for p in PUBLISHED:
        s = p.serving
        assert s.weights == FRONTIER_FORMATS["fp8"]  # the publications' format is one the frontier tries
        out = 1024  # a request whose decode reads the publication's context on average (price.Shape.decode_context)
        fr = frontier(s.name, Shape(s.context - out // 2, out), [s.gpu], ["fp8"], eps=(s.ep,), tps=(s.tp,))
        (setup,) = fr.setups
        step = setup.step(p.batch_per_gpu)  # the decode step: what the publications measured
        assert step.tokens_per_s_per_gpu == pytest.approx(rows[p.label]["model tokens/s / GPU"], rel=1e-12)
        assert step.tokens_per_s_per_gpu >= p.measured_tokens_per_s_per_gpu  # a bound never below a measurement
        point = setup.point(p.batch_per_gpu)  # the request's price adds the prefill: output tokens per GPU-second fall
        assert point.tokens_per_s_per_gpu < step.tokens_per_s_per_gpu and point.price.prefill_gpu_s > 0


@pytest.mark.parametrize("speed", [20.0, 50.0, 90.0])
def test_cheapest_at_matches_a_brute_force_search(k3, speed):
    best = None
    for u in k3.setups:  # every concurrency on the grid the frontier and the solver walk (whole requests per TP group)
        top = u.terms.max_batch_per_gpu * u.ep
        step = concurrency_step(u.ep, u.tp, top)
        for b in (c / u.ep for c in range(step, top + 1, step)):
            st = u.price(b)  # the request's price (price.bound_price), prefill and decode
            if st.tokens_per_s_per_user >= speed and (best is None or st.usd_per_m < best[0]):
                best = (st.usd_per_m, u.gpu, b)
    w = cheapest_at(k3.setups, speed)
    # the price, not the batch: a wire-bound step makes $ flat over a range of batches (tokens/s per GPU = 1 / wire)
    assert w.usd_per_m == pytest.approx(best[0], rel=1e-9) and w.gpu == best[1]
    assert w.tokens_per_s_per_user >= speed


def test_verdict_sentence_is_built_from_the_points(k3):
    v = verdict(k3, 50.0)
    assert v.winner.tokens_per_s_per_user >= 50 and v.runner_up.gpu != v.winner.gpu
    assert v.ratio == pytest.approx(v.runner_up.usd_per_m / v.winner.usd_per_m)
    assert v.ratio >= 1
    for text in (v.winner.label, v.runner_up.label, f"${v.winner.usd_per_m:.3f} per M tokens at 8,192 in / 1,024 out",
                 f"${v.winner.usd_per_m_input:.3f} per M input", f"${v.winner.usd_per_m_output:.3f} per M output",
                 f"({v.ratio:.2f}x)"):
        assert text in v.sentence, text
    assumed = [g for g in (v.winner.gpu, v.runner_up.gpu) if USD_PER_GPU_HOUR[g][1].startswith("assumed")]
    assert ("assumed, not cited" in v.sentence) == bool(assumed)
    at = per_gpu_at(k3, 50.0)
    dear = max(at.values(), key=lambda p: p.usd_per_m)
    assert min(at.values(), key=lambda p: p.usd_per_m) == v.winner
    assert f"The dearest GPU at this speed is the {dear.gpu}" in v.sentence  # (the H100 and H800 tie at K3's size)
    slow = verdict(k3, 10_000.0)
    assert slow.winner is None and "No setup reaches" in slow.sentence


def test_prices_are_inputs(k3):
    gpu = "B200"
    dear = frontier(K3_PRESET, DEFAULT_SHAPE, [gpu], prices={gpu: 2 * USD_PER_GPU_HOUR[gpu][0]})
    base = {(p.ep, p.tp, p.formats, p.batch_per_gpu): p.usd_per_m for p in k3.points if p.gpu == gpu}
    for p in dear.points:
        assert p.usd_per_m == pytest.approx(2 * base[(p.ep, p.tp, p.formats, p.batch_per_gpu)])
    assert dear.prices[gpu][1] == "yours: typed on the page"
    with pytest.raises(ValueError, match="per GPU-hour"):
        frontier(K3_PRESET, DEFAULT_SHAPE, [gpu], prices={gpu: 0.0})


def test_bad_inputs_name_the_constraint():
    with pytest.raises(ValueError, match="preset must be one of"):
        frontier("gpt-9")
    with pytest.raises(ValueError, match="GPU must be one of"):
        frontier(K3_PRESET, DEFAULT_SHAPE, ["TPU"])
    with pytest.raises(ValueError, match="formats must be among"):
        frontier(K3_PRESET, DEFAULT_SHAPE, formats=["fp3"])
    with pytest.raises(ValueError, match="no setup fits"):
        frontier(K3_PRESET, DEFAULT_SHAPE, ["H100 SXM"], ["fp8"], eps=(8,))
    assert gpu_name("gb300") == "GB300 NVL72" and gpu_name("H100") == "H100 SXM"
    assert gpu_name("h100-sxm") == "H100 SXM" and gpu_name("b300") == "B300"
    with pytest.raises(ValueError, match="short name"):
        gpu_name("B")  # B200 or B300: not guessed


def test_serving_page_opens_on_the_predicted_frontier_and_its_prices_are_inputs():
    """The verdict on the first screen rests on the prediction (fitted efficiencies), the bound one toggle away;
    the GPU-hour prices are inputs of both."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    from k3lite.analytic.serving.frontier import INTERACTIVE_TOKENS_PER_USER
    at = AppTest.from_file(str(ROOT / "views" / "serving.py"), default_timeout=180)
    at.run()
    assert not at.exception and not at.error
    fr = frontier(K3_PRESET, DEFAULT_SHAPE, model="predicted", formats=[RELEASED])  # the page searches the release by default
    expected = "**Predicted.** " + verdict(fr, INTERACTIVE_TOKENS_PER_USER).sentence.replace("$", "\\$")
    assert any(m.value == expected for m in at.caption)  # a computed sentence: a caption with its evidence
    winner = verdict(fr, INTERACTIVE_TOKENS_PER_USER).winner.gpu
    at.number_input(key="sv_usd_" + winner.replace(" ", "_")).set_value(40.0).run()  # make the winner dear: another GPU must win
    assert not at.exception
    dear = verdict(frontier(K3_PRESET, DEFAULT_SHAPE, prices={winner: 40.0}, model="predicted", formats=[RELEASED]),
                   INTERACTIVE_TOKENS_PER_USER)
    assert dear.winner.gpu != winner
    assert any(m.value == "**Predicted.** " + dear.sentence.replace("$", "\\$") for m in at.caption)
    at.toggle(key="sv_bound").set_value(True).run()
    assert not at.exception
    bound = verdict(frontier(K3_PRESET, DEFAULT_SHAPE, prices={winner: 40.0}, formats=[RELEASED]), INTERACTIVE_TOKENS_PER_USER)
    assert any(m.value == "**Roofline bound** (a floor on price). " + bound.sentence.replace("$", "\\$")
               for m in at.caption)


def test_speculation_extends_the_frontier_it_never_shrinks_it(k3):
    from k3lite.analytic.serving import Speculation
    spec = frontier(K3_PRESET, DEFAULT_SHAPE, spec=Speculation())
    assert len(spec.setups) == 2 * len(k3.setups)  # each setup with and without the drafter
    assert any(p.speculative for p in spec.envelope) and any(not p.speculative for p in spec.envelope)
    for p in k3.envelope:  # every plain envelope point is matched or beaten
        assert any(q.tokens_per_s_per_user >= p.tokens_per_s_per_user
                   and q.usd_per_m <= p.usd_per_m for q in spec.envelope), p.label
    # the draft's tokens reach speeds no plain setup can: at K3's 3.3 kept per step, well past the plain maximum
    assert max(p.tokens_per_s_per_user for p in spec.points) > 2 * max(p.tokens_per_s_per_user for p in k3.points)


def test_frontier_figure_axis_spans_the_data_not_the_speed_marker(k3):
    """Regression: the speed line's label was placed at x=50 on a log axis, which plotly reads as 10^50 for an
    annotation; the axis then ran to 1e56 and squeezed every curve into one column."""
    from figure_checks import log_shape_problems  # shared with tests/viz/test_style.py

    from k3lite.viz.serving import frontier_figure

    fig = frontier_figure(k3.points, k3.envelope, k3.by_gpu, 50.0, verdict(k3, 50.0).winner)
    spec = json.loads(fig.to_json())
    assert [s["x0"] for s in spec["layout"]["shapes"]] == [50.0]
    assert log_shape_problems(spec) == []


def test_short_gpu_names_reach_every_model():
    """`--gpu H100` used to be refused (it wanted "H100 SXM"): the serving model, its CLI and the hybrid model
    take the short names and compute what the full name gives."""
    from k3lite.analytic import hybrid, serving

    assert serving.Serving(gpu="H100", n_gpus=128, ep=128).gpu == "H100 SXM"
    assert hybrid.decode_cost(3, 4096, hardware="H100") == hybrid.decode_cost(3, 4096, hardware="H100 SXM")
    assert main(["--gpu", "h200", "--json"]) == 0


def test_frontier_figure_draws_every_setup_as_one_line_through_its_batches(k3):
    """The faint cloud is one stretch of line per setup (GPU, EP, formats), ordered by batch: every point of the
    frontier is drawn exactly once, and no line joins two setups."""
    from k3lite.viz.serving import frontier_figure

    fig = frontier_figure(k3.points, k3.envelope, k3.by_gpu, 50.0, verdict(k3, 50.0).winner)
    cloud = [t for t in fig.data if t.name and t.name.endswith(": every setup")]
    drawn = sorted((c[0], round(x, 9)) for t in cloud for x, c in zip(t.x, t.customdata) if x is not None)
    assert drawn == sorted((p.label, round(p.tokens_per_s_per_user, 9)) for p in k3.points)
    for t in (t for t in cloud if t.mode == "lines"):
        stretch = []
        for x, c in [*zip(t.x, t.customdata), (None, None)]:
            if x is None:
                setups = {label.rsplit(", batch", 1)[0] for label, *_ in stretch}
                batches = [int(label.rsplit("batch ", 1)[1].split(",")[0]) for label, *_ in stretch]
                assert len(setups) == 1 and batches == sorted(batches) and len(batches) > 1, stretch[:3]
                stretch = []
            else:
                stretch.append(c)
    assert sum(len(t.x) for t in cloud) < 1.1 * len(k3.points) + 80, "one break per setup, no more"


# ------------------------------------------------------------------------------------------ the predicted frontier
@pytest.fixture(scope="module")
def k3_predicted():
    return frontier(K3_PRESET, DEFAULT_SHAPE, model="predicted")


def test_a_prediction_is_never_cheaper_than_the_bound_at_any_speed(k3, k3_predicted):
    top = max(p.tokens_per_s_per_user for p in k3.points)
    for speed in [1, 5, 10, 20, 30, 40, 50, 60, 80, 100, 150, top]:
        bound, predicted = cheapest_at(k3.setups, speed), cheapest_at(k3_predicted.setups, speed)
        if predicted is not None:  # whatever the predictor reaches, the bound reaches cheaper or as cheap
            assert bound is not None and predicted.usd_per_m >= bound.usd_per_m, speed
    assert max(p.tokens_per_s_per_user for p in k3_predicted.points) < top
    v = verdict(k3_predicted, 20)
    assert v.winner is not None and v.winner.tokens_per_s_per_user >= 20


def test_the_default_frontier_is_the_bound():
    again = frontier(K3_PRESET, DEFAULT_SHAPE, model="bound", gpus=["B300"], formats=[RELEASED], eps=(16,))
    plain = frontier(K3_PRESET, DEFAULT_SHAPE, gpus=["B300"], formats=[RELEASED], eps=(16,))
    assert again.points == plain.points
    with pytest.raises(ValueError, match="model must be one of"):
        frontier(K3_PRESET, DEFAULT_SHAPE, model="measured")


def test_the_pages_headline_is_the_predicted_verdicts_price():
    """cheapest_usd_per_m (the serving page's assumptions block) at the page's defaults is the predicted verdict's
    winner; a dearer GPU-hour never makes it cheaper nor more than proportionally dearer; an unreachable speed is
    infinite, not a price."""
    import math

    from k3lite.analytic.serving.frontier import cheapest_usd_per_m, verdict
    fr = frontier("kimi-k3", DEFAULT_SHAPE, model="predicted", points=2)
    w = verdict(fr, 50.0).winner
    base = cheapest_usd_per_m("kimi-k3", speed=50.0)
    assert base == pytest.approx(w.usd_per_m)
    dear = cheapest_usd_per_m("kimi-k3", speed=50.0, price_gpu=w.gpu,
                              usd_per_gpu_hour=1.2 * w.usd_per_gpu_hour)
    assert base < dear <= 1.2 * base + 1e-9
    assert math.isinf(cheapest_usd_per_m("kimi-k3", speed=1000.0))
    # a faster engine (more of the HBM bandwidth achieved) is never dearer
    assert cheapest_usd_per_m("kimi-k3", speed=50.0, hbm_fraction=0.95) <= base


def test_the_search_covers_tp_formats_and_cache_and_names_every_gpu():
    """TP 1 only had dropped H100 and H800 without a word and capped the speed at 119 tok/s: with TP 1-8 in the
    search the Hopper GPUs reach the page's 50 tok/s in the released format, and every GPU gets a row."""
    from k3lite.analytic.serving.frontier import FRONTIER_TP, per_gpu_rows

    fr = frontier(K3_PRESET, DEFAULT_SHAPE, formats=[RELEASED])
    assert {u.tp for u in fr.setups} == set(FRONTIER_TP)
    rows = per_gpu_rows(fr, FRONTIER_GPUS, 50.0)
    assert [g for g, _, _ in rows] == list(FRONTIER_GPUS)
    assert all(p is not None for g, p, _ in rows if g in ("H100 SXM", "H800"))
    assert max(p.tokens_per_s_per_user for p in fr.points) > 119
    only_tp1 = frontier(K3_PRESET, DEFAULT_SHAPE, formats=[RELEASED], tps=(1,), gpus=["H100 SXM"] + list(FRONTIER_GPUS[2:]))
    (h100,) = [r for r in per_gpu_rows(only_tp1, ["H100 SXM"], 50.0)]
    assert h100[1] is None and h100[2].startswith("no setup fits: H100 SXM, EP")  # said, not dropped
    fp8 = frontier(K3_PRESET, DEFAULT_SHAPE, gpus=["B200"], formats=[RELEASED], tps=(1,), caches=("fp8",))
    bf16 = frontier(K3_PRESET, DEFAULT_SHAPE, gpus=["B200"], formats=[RELEASED], tps=(1,))
    assert max(u.max_batch for u in fp8.setups) > max(u.max_batch for u in bf16.setups)  # fp8 latents: more fit
