"""The MoE page's figures (k3lite/viz/moe.py) build from routing data."""
import torch


def test_figures_build_from_routing_data():
    from k3lite.analytic.latent import latent_cost_per_token
    from k3lite.viz.moe import activation_rows, latent_tradeoff, load_bars, routing_heatmap, violation_curves

    idx = torch.tensor([[0, 3], [1, 3], [2, 0]])
    fig = routing_heatmap(["a", "b", "a"], idx.numpy(), torch.ones(3, 2).numpy() * 0.5, 4)
    z = fig.data[0].z
    assert z.shape == (3, 4) and z[0, 3] == 0.5 and z[0, 1] != z[0, 1]  # NaN = not chosen
    assert list(fig.layout.yaxis.ticktext) == ["0:a", "1:b", "2:a"]  # repeated tokens keep their own row
    fig = load_bars({"none": [6, 0, 0, 2], "quantile": [2, 2, 2, 2]})
    assert len(fig.data) == 2 and "max-violation 2.00" in fig.layout.annotations[0].text
    assert "max-violation 0.00" in fig.layout.annotations[1].text
    assert len(violation_curves({"bias": [1.0, 0.5, 0.2]}, smooth=2).data) == 2
    costs = [latent_cost_per_token(64, 32, 4, 1, 64, r, n_experts=16) for r in (1, 0.5)]
    assert len(latent_tradeoff(costs, 0.5).data) == 4
    rows = activation_rows(16, 896)
    assert rows[0]["activation"] == "1.79%" and any("seed article" in r["how"] for r in rows)
    by_model = {r["model"]: r["activation"] for r in rows}
    assert by_model["Kimi K2"] == "2.08%"  # 8 / 384 from the preset, not the seed's rounded "~2.0%"
    assert by_model["Inkling"] == "~3.1%" and by_model["MiniMax M3"] == "~3.1%"  # the seed article's quoted rows
