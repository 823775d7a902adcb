"""H100 and H200 8-GPU-node topologies: NVLink 4 inside a node, one 400 Gb/s NIC per GPU between nodes, each figure
with its source; K3's dispatch over them costs the same bytes as on B300 nodes and about twice the time."""
from k3lite.interconnect import TOPOLOGIES
from k3lite.interconnect.deployment import CX7_PER_DIR, NVLINK4_PER_DIR


def test_hopper_nodes_carry_cited_nvlink4_and_400g_nic_figures():
    for key in ("h100-8x8", "h200-8x8"):
        t = TOPOLOGIES[key]
        assert (t.n_gpus, t.gpus_per_domain) == (64, 8)
        assert t.intra_bw == NVLINK4_PER_DIR == 450e9 and t.inter_bw == CX7_PER_DIR == 50e9
        assert "900 GB/s" in t.source and "400 Gb/s" in t.source and "ConnectX-7" in t.source
        assert len(t.label) <= 25  # fits a quarter of a 1400 px page


def test_hopper_nodes_move_the_same_bytes_slower_than_b300_nodes():
    from k3lite.interconnect import wire_bytes_per_token  # here: pulls the model config
    from k3lite.model.presets import get_preset  # (the reason above)

    cfg = get_preset("kimi-k3")
    b300 = wire_bytes_per_token(cfg, TOPOLOGIES["multi-node-8x8"], 64, "normal")
    h100 = wire_bytes_per_token(cfg, TOPOLOGIES["h100-8x8"], 64, "normal")
    assert (h100.intra, h100.inter) == (b300.intra, b300.inter)
    t_b300 = b300.intra / 900e9 + b300.inter / 100e9
    t_h100 = h100.intra / 450e9 + h100.inter / 50e9
    assert abs(t_h100 / t_b300 - 2.0) < 1e-9
