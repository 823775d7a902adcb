"""One number per (model, topology, EP): DeepSeek-V3, Kimi K2 and Kimi K3 put through every page's byte figure (the
MoE and forward-pass comparisons, the interconnect page's own bars, its comparison, its three-model table, its
training comparison, the home ledger, the anatomy, the serving adapter), each path's bytes per token per MoE layer
collected, and every path of a setting must give the same number: wire_bytes_per_token's, with each model routed by
its own config (DeepSeek-V3's 8 groups, best 4, which a path that dropped it would not match)."""
from collections import defaultdict

import pytest

from k3lite.analytic.anatomy import anatomy
from k3lite.analytic.ledger import Deploy, ledger_of
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.step import wire_bytes_per_token as serving_wire
from k3lite.interconnect import REFERENCE, TOPOLOGIES, Deployment, expected_copies, wire_bytes_per_token
from k3lite.model.presets import get_preset
from k3lite.panels.core import pair_of
from k3lite.panels.forward import bytes_by_part_panel
from k3lite.panels.interconnect import bytes_panel, preset_knobs, settings, three_models, wire_pair
from k3lite.panels.interconnect_training import training_pair, training_steps
from k3lite.panels.moe import compare_panel

MODELS = ("deepseek-v3", "kimi-k2", "kimi-k3")
OTHERS = ("deepseek-v3", "kimi-k2")  # the comparisons K3 is put beside
REF = (next(k for k, t in TOPOLOGIES.items() if t == REFERENCE.topology), REFERENCE.ep_size)  # one 8-GPU node, EP 8
BIG = ("multi-node-8x8", 64)
RACK = ("nvl72", 64)


def _moe_layers(name: str) -> int:
    return get_preset(name).ffn_types().count("moe")


def _page_traffic(name: str, topology: str, ep: int):
    """The interconnect page at a preset's own knobs: its config (page_config), deployment and traffic."""
    k = preset_knobs(name)
    cfg, dep, t, _, why = settings(name, k["ic_experts"], k["ic_top_k"], k["ic_latent"], topology, ep, "fp8", "bf16",
                                   0, "normal")
    assert why == "", why
    return cfg, dep, t


@pytest.fixture(scope="module")
def numbers() -> dict[tuple[str, str, int], dict[str, float]]:
    """{(model, topology, EP): {path: bytes per token per MoE layer}}."""
    got: dict = defaultdict(dict)
    for other in OTHERS:
        p = compare_panel(pair_of(other))  # the MoE page's comparison
        got["kimi-k3", *REF][f"moe vs {other}"] = p.values["k3_wire"]
        got[other, *REF]["moe compare"] = p.values["other_wire"]
        f = bytes_by_part_panel(pair_of(other))  # the forward pass's comparison: all MoE layers
        got["kimi-k3", *REF][f"forward vs {other}"] = f.values["k3_wire"] / _moe_layers("kimi-k3")
        got[other, *REF]["forward compare"] = f.values["other_wire"] / _moe_layers(other)
        for topology, ep in (REF, BIG, RACK):  # the interconnect page's comparison
            cfg, dep, _ = _page_traffic("kimi-k3", topology, ep)
            w = wire_pair(cfg, pair_of(other), dep)
            got["kimi-k3", topology, ep][f"interconnect vs {other}"] = w.values["k3_layer"]
            got[other, topology, ep]["interconnect compare"] = w.values["other_layer"]
            bars = [t for t in w.figure.data if t.name != "Kimi K3"][0]  # the compared model's bars, in the axis unit
            got[other, topology, ep]["interconnect compare bars"] = sum(bars.y) * w.values["axis_unit"]  # 4 links
        lay, _ = training_steps("kimi-k3", "dualpipe", 120)  # the training comparison: H800 nodes of 8, EP 64
        t = training_pair(lay, pair_of(other))
        got["kimi-k3", *BIG][f"training vs {other}"] = t.values["k3 EP forward"] / _moe_layers("kimi-k3")
        got[other, *BIG]["training compare"] = t.values["other EP forward"] / _moe_layers(other)
    for name in MODELS:
        for topology, ep in (REF, BIG, RACK):  # the interconnect page with the model as its own preset
            _, dep, t = _page_traffic(name, topology, ep)
            got[name, topology, ep]["interconnect page"] = t.per_layer.total
            fig = bytes_panel(t, dep).figure  # the per-layer stack (kB), left subplot
            got[name, topology, ep]["interconnect bars"] = 1e3 * sum(b.y[0] for b in fig.data if b.xaxis in (None, "x"))
        cfg = get_preset(name)
        led = ledger_of(cfg, 131072, Deploy())  # the home ledger: NVL72, EP 64
        got[name, *RACK]["home ledger"] = (led.nvlink + led.nic) / _moe_layers(name)
        wire = anatomy(cfg).totals()["routed_experts"].bytes["wire"]  # the anatomy: the reference deployment
        got[name, *REF]["anatomy"] = wire / _moe_layers(name)
        for gpu_topology, gpu in ((BIG, "H800"), (REF, "H800")):  # the serving adapter, DeepEP normal kernels
            ep = gpu_topology[1]
            intra, inter = serving_wire(cfg, Serving(name, gpu, ep, ep, 1, scheme="normal"))
            got[name, *gpu_topology]["serving adapter"] = intra + inter
    panels, table, _ = three_models("fp8", "bf16", 0, "normal")  # the three-model table (kB, 2 decimals)
    for row in table:
        where = BIG if row["topology"] == TOPOLOGIES["multi-node-8x8"].label else RACK
        if row["model"] in MODELS:
            got[row["model"], *where]["three-model table (kB, rounded)"] = row["kB / token / layer"] * 1e3
    return dict(got)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("setting", [REF, BIG, RACK])
def test_every_page_gives_one_number_per_setting(numbers, model, setting):
    paths = numbers[(model, *setting)]
    assert len(paths) >= 3, paths  # several pages show this setting
    want = wire_bytes_per_token(get_preset(model), *setting, "normal").total  # THE function, the model's own rule
    for path, value in paths.items():
        tol = 5.0 if "rounded" in path else 1e-6 * want  # the table rounds to 0.01 kB
        assert value == pytest.approx(want, abs=tol), (model, setting, path, value, want)


def test_deepseek_v3s_number_is_its_released_routing_not_uniform(numbers):
    """The one number is the group-limited one: on one 8-GPU node a DeepSeek-V3 token reaches at most 4 GPUs (3.47
    copies, not the 4.63 of uniform top-8 over 256), on 8 x 8 at most 4 nodes (3.47 NIC copies, not 4.63)."""
    ds = get_preset("deepseek-v3")
    m = ds.moe
    for (topology, ep), uniform_nic in ((REF, False), (BIG, True)):
        dep = Deployment(TOPOLOGIES[topology], ep)
        free = expected_copies(m.n_routed_experts, m.top_k, ep, dep.gpus_per_domain, 0, "normal")
        own = wire_bytes_per_token(ds, topology, ep, "normal").copies
        assert own.total < free.total - 0.5
        assert (own.inter < free.inter - 1.0) if uniform_nic else (own.intra == pytest.approx(3.47, abs=0.01))
        assert all(v < wire_bytes_per_token(ds.with_(moe={"n_groups": 1, "topk_groups": 1}), topology, ep).total
                   for v in numbers[("deepseek-v3", topology, ep)].values())
