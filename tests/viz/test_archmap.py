"""The architecture map: every preset draws, one row per layer or per collapsed period, arcs per residual mode.

Arcs are checked against what a real forward pass reads (the Trace's depth sources), not against the map's
own rule; the per-part numbers against count_params.
"""
import pytest
import torch

from k3lite.analytic.anatomy import PARTS, anatomy
from k3lite.model.config import KDAConfig, K3Config, MLAConfig, MoEConfig
from k3lite.model.presets import PRESETS, get_preset
from k3lite.model.stack import K3Model
from k3lite.analytic.params import count_params, fmt
from k3lite.viz.archmap import architecture_map, collapse, layout, stage_index
from k3lite.viz.model import stages
from k3lite.viz.style import CONCEPT, LINK


def tiny(n_layers=6, **changes) -> K3Config:
    return K3Config(
        name="tiny", vocab_size=256, d_model=32, n_layers=n_layers,
        mla=MLAConfig(n_heads=2, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8,
                      use_rope=False),
        kda=KDAConfig(n_heads=2, head_dim=8), moe=MoEConfig(n_routed_experts=8, top_k=2, expert_ffn_dim=16,
                                                            n_shared_experts=1, latent_dim=16),
        kda_ratio=(1, 1), first_k_dense=1, dense_ffn_dim=48, tie_embeddings=True, max_seq_len=64,
    ).with_(**changes)


def trace_of(cfg: K3Config):
    torch.manual_seed(0)
    with torch.inference_mode():
        return K3Model(cfg).eval()(torch.tensor([[1, 2, 3, 4, 5]]), trace=True).trace


def layers_drawn(cfg, lay) -> list[int]:
    """Every layer index the rows stand for (a collapsed row stands for `repeat` layers)."""
    out = []
    for r in lay.layer_rows():
        out += [r.layer + k * r.period for k in range(r.repeat)]
    return sorted(out)


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_draws_each_layer_once_with_its_mixer_and_ffn(name):
    cfg = get_preset(name)
    lay = layout(cfg)
    assert layers_drawn(cfg, lay) == list(range(cfg.n_layers))  # every layer exactly once
    types, ffns = cfg.layer_types(), cfg.ffn_types()
    for row_index, row in enumerate(lay.rows):
        if row.kind != "layer":
            continue
        nodes = [n for n in lay.nodes if n.row == row_index]
        mixers = [n for n in nodes if n.part.startswith("attention_")]
        assert len(mixers) == 1 and mixers[0].part == f"attention_{types[row.layer]}", (name, row)
        for k in range(row.repeat):  # a collapsed row only stands for layers of the same kind
            other = row.layer + k * row.period
            assert (types[other], ffns[other]) == (types[row.layer], ffns[row.layer])
        parts = {n.part for n in nodes}
        if ffns[row.layer] == "dense":
            assert "dense_ffn" in parts and "router" not in parts
        else:
            assert {"router", "latent_proj", "routed_experts", "shared_experts"} <= parts
    fig = architecture_map(cfg)
    assert fig.layout.height > 0 and len(fig.data) >= 6


def test_big_configs_collapse_to_a_period_with_a_visible_count():
    k3 = get_preset("kimi-k3")
    runs = collapse(k3)
    assert sum(p * r for _, p, r in runs) == k3.n_layers
    groups = [g for g in runs if g[2] > 1]
    assert groups and all(p == sum(k3.kda_ratio) for _, p, _ in groups)
    lay = layout(k3)
    assert len(lay.layer_rows()) < 16  # drawn in a phone-sized map, not 93 rows
    fig = architecture_map(k3)
    texts = [a.text for a in fig.layout.annotations]
    for _, _, reps in groups:
        assert f"<b>× {reps}</b>" in texts
    assert layout(get_preset("lite")).groups == []  # small configs are drawn in full


@pytest.mark.parametrize("mode", ["full", "block", "standard"])
def test_arcs_are_the_sources_a_real_forward_pass_reads(mode):
    cfg = tiny(attn_res=mode, attn_res_block_size=3)
    tr = trace_of(cfg)
    lay = layout(cfg)
    out_row = len(lay.rows) - 1
    if mode == "standard":
        assert lay.arcs == []  # a plain running sum: nothing to attend over
        return
    for lt in tr.layers:
        row = lay.row_of_layer(lt.index)
        assert sum(a.target_row == row for a in lay.arcs) == len(lt.depth_sources_ffn), (mode, lt.index)
    assert sum(a.target_row == out_row for a in lay.arcs) == len(tr.final_depth_sources)


def test_collapsed_map_keeps_one_source_node_per_block():
    cfg = tiny(n_layers=10, attn_res="block", attn_res_block_size=4)
    lay = layout(cfg, max_layer_rows=4)
    assert lay.groups, "a 10-layer 1:1 config with max 4 rows must collapse"
    assert len(lay.block_nodes) == len(trace_of(cfg).final_depth_sources)  # embedding + 5 block sums


def test_map_with_a_trace_highlights_the_stage_and_maps_clicks_back_to_it():
    cfg = tiny()
    tr = trace_of(cfg)
    st_list = stages(tr)
    fig = architecture_map(cfg, trace=tr, highlight=("router", 2))
    nodes = [t for t in fig.data if t.customdata is not None]  # the arcs are one trace without customdata
    outlined = [cd for t in nodes for cd, w in zip(t.customdata, t.marker.line.width) if w == 3]
    assert outlined and all((cd[0], cd[1]) == ("router", 2) for cd in outlined)
    every = {(cd[0], None if cd[1] < 0 else cd[1]) for t in nodes for cd in t.customdata}
    for s in st_list:  # every stage of the stepper has an element to click, and it maps back to that stage
        assert (s.kind, s.layer) in every, s
        assert st_list[stage_index(st_list, s.kind, s.layer)] == s
    hovers = " ".join(h for t in nodes for h in t.hovertext)
    assert "max-violation" in hovers and "‖S‖" in hovers  # live numbers from the Trace
    with pytest.raises(ValueError, match="layers"):
        architecture_map(tiny(n_layers=4), trace=tr)


def test_colours_come_from_the_style_palette():
    palette = {*CONCEPT.values(), *LINK.values()}
    fig = architecture_map(get_preset("lite"))
    assert {t.marker.color if t.mode != "lines" else t.line.color for t in fig.data} <= palette


@pytest.mark.parametrize("name", ["lite", "deepseek-v3"])
def test_anatomy_parts_add_up_to_the_parameter_count(name):
    cfg = get_preset(name)
    an, rep = anatomy(cfg, context=4096), count_params(cfg)
    tot = an.totals()
    assert set(tot) == set(PARTS)
    assert sum(p.params for p in tot.values()) == rep.total
    assert abs(sum(p.active for p in tot.values()) - rep.active) <= cfg.n_layers + 2  # rounding per (layer, part)
    shares = an.shares()
    assert sum(s[0] for s in shares.values()) == pytest.approx(1.0)
    assert sum(s[1] for s in shares.values()) == pytest.approx(1.0)
    # cache bytes grow with the context only in the MLA layers
    longer = anatomy(cfg, context=8192).totals()
    assert longer["attention_mla"].bytes["cache"] == pytest.approx(2 * tot["attention_mla"].bytes["cache"])
    with pytest.raises(ValueError, match="context"):
        anatomy(cfg, context=0)


def test_latent_nodes_show_each_projection_on_its_own_side():
    """The down-projection's hover shows d_model x latent parameters (K3: 25.7M), not down + up (51.4M); the up
    node shows its own share; the two sides add up to the layer's latent projections."""
    cfg = get_preset("kimi-k3")
    an = anatomy(cfg, context=4096)
    fig = architecture_map(cfg, anatomy=an)
    hovers = [h for t in fig.data if t.hovertext is not None for h in t.hovertext]
    down = next(h for h in hovers if h.startswith("<b>latent down-projection"))
    up = next(h for h in hovers if h.startswith("<b>latent up-projection"))
    d, latent = cfg.d_model, cfg.moe.latent_dim
    assert f"{fmt(d * latent)} params" in down and fmt(2 * d * latent) not in down
    assert "params" in up and "per decoded token" in up
    layer = cfg.ffn_types().index("moe")
    sides = [an.latent_side(layer, s) for s in ("down", "up")]
    assert sum(p.params for p in sides) == an.layers[layer]["latent_proj"].params
    assert sum(p.bytes["weights"] for p in sides) == pytest.approx(an.layers[layer]["latent_proj"].bytes["weights"])
