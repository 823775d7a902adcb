"""The serving page's log axes read at 32K and at 1M context: at least three labelled ticks inside the data on each
axis of the frontier and of the throughput-vs-interactivity curve (at 1M the frontier had one y label and no x
label; once-per-decade labels fall outside a span under a decade)."""
import math

import pytest

from k3lite.analytic.serving.price import Shape

from k3lite.analytic.serving import Serving, pareto
from k3lite.analytic.serving.frontier import RELEASED, frontier, verdict
from k3lite.viz.serving import frontier_figure, log_axis_125, pareto_figure


def _labels_inside(axis, values) -> list[str]:
    vs = [v for v in values if v is not None and v > 0]
    lo, hi = min(vs), max(vs)
    return [t for v, t in zip(axis.tickvals, axis.ticktext) if lo * 0.89 <= v <= hi * 1.12]


@pytest.mark.parametrize("context", [32768, 1048576])
def test_frontier_and_pareto_axes_have_three_labels_inside_the_data(context):
    fr = frontier("kimi-k3", Shape(context - 512, 1024), model="predicted", formats=[RELEASED])
    fig = frontier_figure(fr.points, fr.envelope, fr.by_gpu, 50.0, verdict(fr, 50.0).winner)
    xs = [p.tokens_per_s_per_user for p in fr.points] + [50.0]
    ys = [p.usd_per_m for p in fr.points]
    assert len(_labels_inside(fig.layout.xaxis, xs)) >= 3 and len(_labels_inside(fig.layout.yaxis, ys)) >= 3
    curve = pareto(Serving(gpu="GB300 NVL72", context=context))
    per_user, per_gpu = [p.tokens_per_s_per_user for p in curve], [p.tokens_per_s_per_gpu for p in curve]
    fig = pareto_figure(per_user, per_gpu, [p.batch_per_gpu for p in curve])
    assert len(_labels_inside(fig.layout.xaxis, per_user)) >= 3
    assert len(_labels_inside(fig.layout.yaxis, per_gpu)) >= 3


def test_ticks_are_1_2_5_where_they_fit_and_few_enough_for_a_phone():
    assert log_axis_125("x", [1, 100])["ticktext"] == ["1", "2", "5", "10", "20", "50", "100"]
    wide = log_axis_125("x", [1, 1e6])
    assert wide["ticktext"] == ["1", "10", "100", "1k", "10k", "100k", "1M"] and wide["type"] == "log"
    assert log_axis_125("x", [50, 50])["tickvals"] == [50.0]  # one value: one label
    for span in ([12, 60], [0.3, 0.9], [1, 1e9], [31, 33]):
        ticks = log_axis_125("x", span)["tickvals"]
        assert 2 <= len(ticks) <= 7 and all(math.isfinite(t) for t in ticks)
