import plotly.graph_objects as go

from k3lite.base.evidence import assumed, derived, measured_elsewhere
from k3lite.viz.evidence import untagged, with_evidence
from k3lite.viz.memo import FigureMemo


def _fig():
    fig = go.Figure()
    fig.add_scatter(x=[1, 2], y=[3, 4], name="model")
    fig.add_scatter(x=[1], y=[3], name="measured", hovertemplate="%{x}<extra></extra>")
    fig.add_heatmap(z=[[1, 2]])
    fig.add_scatter(x=[1], y=[1], hoverinfo="skip", name="decoration")
    return fig


def test_untagged_finds_every_hoverable_trace_and_tagging_clears_it():
    fig = _fig()
    assert untagged(fig.to_plotly_json()) == ["model", "measured", "heatmap"]
    with_evidence(fig, derived("k3lite.x.f"), {"measured": measured_elsewhere("a blog")})
    assert untagged(fig.to_plotly_json()) == []
    model, measured, heat, deco = fig.data
    assert "ᵈ derived: k3lite.x.f" in model.hovertemplate and "%{x}: %{y}" in model.hovertemplate
    assert measured.hovertemplate.startswith("%{x}<br>") and "ᵉ measured elsewhere: a blog" in measured.hovertemplate
    assert measured.hovertemplate.endswith("<extra></extra>")  # the author's hidden side box stays hidden
    assert "%{z}" in heat.hovertemplate and deco.hovertemplate is None


def test_tagging_is_idempotent_and_per_point_templates_are_tagged():
    fig = go.Figure(go.Bar(x=[1, 2], y=[1, 2], hovertemplate=["a", "b"]))
    with_evidence(fig, assumed("ours"))
    with_evidence(fig, derived("k3lite.x.f"))
    assert [t.count("ᵃ") for t in fig.data[0].hovertemplate] == [1, 1] and "ᵈ" not in str(fig.data[0].hovertemplate)


def test_memo_tags_and_keys_on_evidence():
    memo = FigureMemo()
    a = memo(_fig_builder, 1, evidence=assumed("ours"))
    b = memo(_fig_builder, 1, evidence=derived("k3lite.x.f"))
    assert a is not b and "ᵃ" in a.data[0].hovertemplate and "ᵈ" in b.data[0].hovertemplate
    assert memo(_fig_builder, 1, evidence=assumed("ours")) is a
    assert memo(_fig_builder, 1).data[0].hovertemplate is None  # untagged when no evidence is given


def _fig_builder(n):
    return go.Figure(go.Scatter(x=[n], y=[n]))
