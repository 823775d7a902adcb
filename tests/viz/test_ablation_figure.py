from k3lite.analytic.ablation import AXES, ablation
from k3lite.base.evidence import derived
from k3lite.viz.ablation import ablation_figure
from k3lite.viz.evidence import untagged, with_evidence


def test_one_panel_per_axis_k3_on_top_and_equal_bars_pale():
    rows = ablation(32_768)
    fig = ablation_figure(rows)
    assert len(fig.data) == len(AXES) and all(list(t.y)[-1] == "Kimi K3" for t in fig.data)
    swiglu = list(fig.data[0].y).index("K3 with SwiGLU")
    mla = list(fig.data[0].y).index("K3 with MLA everywhere")
    colours = fig.data[1].marker.color  # the cache panel: SwiGLU equals K3, MLA-everywhere does not
    assert colours[swiglu] != colours[mla]
    assert untagged(with_evidence(fig, derived("k3lite.analytic.ablation.ablation")).to_plotly_json()) == []
