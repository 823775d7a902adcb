"""The drawn mechanism diagrams (k3lite/viz/diagrams.py): built from a config, changed by the config, and the bytes
on their labels are the library's own."""
from dataclasses import replace

import pytest

from k3lite.model.attnres import _sources_at
from k3lite.model.presets import get_preset
from k3lite.interconnect import REFERENCE, TOPOLOGIES, Deployment, deployment_bytes, wire_format
from k3lite.viz.diagrams import depth_reads, depth_reads_figure, latent_path, latent_path_figure
from k3lite.viz.style import fmt_bytes

K3 = get_preset("kimi-k3")


def texts(fig) -> str:
    return " | ".join(a.text or "" for a in fig.layout.annotations) + " | " + (fig.layout.title.text or "")


def test_latent_path_bytes_are_the_wire_function_s():
    path = latent_path(K3.moe, K3.d_model)
    wire = deployment_bytes(K3.moe, REFERENCE, K3.d_model)
    assert path.hop("dispatch").bytes == wire.dispatch and path.hop("combine").bytes == wire.combine
    assert path.hop("token").bytes == wire_format("bf16").row_bytes(K3.d_model)
    assert path.hop("down").bytes == wire_format("bf16").row_bytes(K3.moe.latent_dim)
    fig = latent_path_figure(path)
    shown = texts(fig)
    assert f"dispatch {fmt_bytes(wire.dispatch)}" in shown and f"combine {fmt_bytes(wire.combine)}" in shown
    assert fmt_bytes(wire.total) in fig.layout.title.text
    assert fig.layout.meta["hops"]["dispatch"] == wire.dispatch
    assert f"top-{K3.moe.top_k} routed experts" in shown and f"{K3.d_model}→<br>{K3.moe.latent_dim}" in shown


def test_latent_path_changes_with_the_config():
    base = latent_path_figure(latent_path(K3.moe, K3.d_model))
    half = replace(K3.moe, latent_dim=K3.moe.latent_dim // 2)
    smaller = latent_path(half, K3.d_model)
    assert smaller.hop("dispatch").bytes < latent_path(K3.moe, K3.d_model).hop("dispatch").bytes
    assert texts(latent_path_figure(smaller)) != texts(base)
    classic = latent_path(replace(K3.moe, latent_dim=0), K3.d_model)
    assert [h.key for h in classic.hops if h.key in ("down", "up")] == []  # no projections to draw
    assert "classic MoE" in texts(latent_path_figure(classic))
    fewer = latent_path_figure(latent_path(replace(K3.moe, top_k=4), K3.d_model))
    assert "top-4 routed experts" in texts(fewer)
    nvl = Deployment(TOPOLOGIES["nvl72"], 64, "fp8", "bf16", 0, "normal")
    assert latent_path(K3.moe, K3.d_model, nvl).hop("dispatch").bytes == deployment_bytes(K3.moe, nvl, K3.d_model).dispatch


def test_latent_path_draws_the_norm_where_the_config_puts_it():
    at_dispatch = latent_path(replace(K3.moe, latent_norm_at="dispatch"), K3.d_model)
    at_combine = latent_path(replace(K3.moe, latent_norm_at="combine"), K3.d_model)
    assert (at_dispatch.norm_at, at_combine.norm_at) == ("dispatch", "combine")
    xs = lambda p: [a.x for a in latent_path_figure(p).layout.annotations if a.text == "RMS<br>Norm"]  # noqa: E731
    assert xs(at_dispatch)[0] < 5 < xs(at_combine)[0]  # before the wire, after the experts


@pytest.mark.parametrize("mode, block", [("full", 1), ("block", 4), ("block", 3), ("block", 16)])
def test_depth_reads_match_the_model_s_rule(mode, block):
    for reader in (0, 5, 16):
        reads = depth_reads(8, mode, block, reader)
        assert len(reads.sources) == _sources_at(mode, reader, block)  # the cost model's count
        fig = depth_reads_figure(reads)
        arcs = [t for t in fig.data if t.mode == "lines"]
        assert len(arcs) == len(reads.sources)


def test_depth_reads_block_size_changes_the_drawing():
    four, eight = (depth_reads_figure(depth_reads(8, "block", s, 16)) for s in (4, 8))
    assert len([t for t in four.data if t.mode == "lines"]) == 5  # embedding + 4 block sums
    assert len([t for t in eight.data if t.mode == "lines"]) == 3  # embedding + 2
    assert four.layout.meta["reads"] != eight.layout.meta["reads"]
    weighted = depth_reads_figure(depth_reads(8, "block", 8, 16), weights=[0.1, 0.3, 0.6])
    widths = [t.line.width for t in weighted.data if t.mode == "lines"]
    assert widths == sorted(widths) and widths[0] < widths[-1]  # thicker = more weight
    assert "reads 1 vector" in depth_reads_figure(depth_reads(8, "standard", 4, 16)).layout.title.text


def test_depth_reads_rejects_a_sublayer_outside_the_model():
    with pytest.raises(ValueError, match="reader must be a sublayer in 0..16"):
        depth_reads(8, "block", 4, 17)


def test_attention_residuals_page_draws_the_reads_of_its_block_size():
    import json

    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    at = AppTest.from_file(str(ROOT / "views" / "attention_residuals.py"), default_timeout=180).run()
    assert not at.exception, [e.message for e in at.exception]

    def reads(app):
        fig = json.loads(app.get("plotly_chart")[0].proto.spec)
        return fig["layout"]["meta"]["reads"]

    assert reads(at) == ["embedding", "block 0", "block 1", "block 2", "block 3"]  # the final mix, S = 4
    at.slider(key="ar_block").set_value(8).run()
    assert reads(at) == ["embedding", "block 0", "block 1"]
    at.slider(key="ar_reader").set_value(5).run()
    assert reads(at) == ["embedding", "partial 0"]
    text = " ".join(m.value for m in at.markdown)
    assert "reads **2** vectors" in text and "full AttnRes would read 6" in text


def test_residual_experiment_figure_draws_every_shipped_run():
    from k3lite.experiments.lm_train import attnres_results
    from k3lite.viz.attnres import residual_experiment_claim, residual_experiment_figure

    results = attnres_results()
    assert results, "assets/lab_attnres*.json are shipped"
    fig = residual_experiment_figure(results)
    assert len(fig.data) == sum(len(r["runs"]) for r in results)
    block = next(run for run in results[0]["runs"] if run["mode"] == "block")
    trace = next(t for t in fig.data if t.name == f"block AttnRes, seed {results[0]['seed']}")
    assert list(trace.y) == [e["mean"] for e in block["evals"]]
    claim = residual_experiment_claim(results)
    for res in results:
        for mode, m in res["standard_steps_to_match"].items():
            assert f"{m['ratio']:.2f}x ({mode})" in claim
