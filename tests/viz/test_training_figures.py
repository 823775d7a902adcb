"""The training-step figures: every trace tagged with its evidence, the bars the numbers they draw."""
import json

import pytest

from k3lite.analytic.training import idea_variants, k3_layout, step_traffic
from k3lite.interconnect.pipeline import residual_comparison
from k3lite.model.presets import get_preset
from k3lite.viz.evidence import untagged
from k3lite.viz.training import boundary_figure, bubble_figure, training_bytes_figure, training_time_figure


@pytest.fixture(scope="module")
def variants():
    return idea_variants(k3_layout())


def test_every_trace_names_its_evidence(variants):
    figs = [training_bytes_figure(variants), training_time_figure(variants["as configured"]),
            bubble_figure(16, chosen=120), bubble_figure(5), boundary_figure(residual_comparison(get_preset("kimi-k3"), 16))]
    for fig in figs:
        assert untagged(json.loads(fig.to_json())) == []


def test_bytes_figure_stacks_the_kinds(variants):
    fig = training_bytes_figure(variants)
    assert [t.name for t in fig.data] == ["EP forward", "EP backward", "PP", "DP"]
    unit = fig.layout.yaxis.title.text.rsplit("(", 1)[1][:-1]
    div = {"kB": 1e3, "MB": 1e6, "GB": 1e9}[unit]
    total = sum(t.y[0] for t in fig.data) * div
    assert total == pytest.approx(variants["as configured"].total_bytes, rel=1e-9)


def test_time_figure_shows_deepeps_measured_point(variants):
    step = step_traffic(k3_layout())
    fig = training_time_figure(step)
    marker = [t for t in fig.data if t.name == "DeepEP measured"][0]
    assert marker.x[0] == pytest.approx(step.deepep_ep_inter_s * 1e6)
    assert "measured elsewhere" in marker.hovertemplate
    assert len(bubble_figure(5).data) == 2  # DualPipe needs an even PP
