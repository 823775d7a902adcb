"""Stage-boundary bytes with Attention Residuals: the analytic count, and K3's numbers from it."""
import pytest

from k3lite.interconnect.pipeline import boundary_bytes, boundary_vectors, pipeline_bytes, residual_comparison, stage_layers
from k3lite.model.attnres import ResidualStream, attnres_cost
from k3lite.model.presets import get_preset


def test_stage_layers_split_evenly():
    assert stage_layers(93, 16) == [6] * 13 + [5] * 3
    assert sum(stage_layers(61, 16)) == 61
    with pytest.raises(ValueError):
        stage_layers(4, 5)


@pytest.mark.parametrize("mode,block", [("standard", 1), ("full", 1), ("block", 4), ("block", 3), ("block", 24)])
def test_boundary_vectors_are_what_the_stream_holds(mode, block):
    import torch  # the stream holds tensors; the analytic module does not need torch

    emb = torch.zeros(1, 1, 2)
    stream = ResidualStream(emb, mode, block)
    for s in range(60):
        held = 1 if mode == "standard" else len(stream.sources())
        assert boundary_vectors(mode, s, block) == held, (mode, block, s)
        stream.add(torch.ones(1, 1, 2))


def test_the_widest_boundary_is_the_peak_attnres_keeps():
    k3 = get_preset("kimi-k3")
    # with one stage per layer the boundaries see every layer's state: the widest is attnres_cost's peak minus the
    # sublayers of the last layer (the last boundary precedes it)
    pb = boundary_bytes(k3.n_layers, k3.d_model, "block", k3.n_layers, k3.attn_res_block_size)
    assert pb.widest <= attnres_cost(k3.n_layers, k3.d_model, "block", k3.attn_res_block_size).live_sources
    assert pb.boundaries[0].vectors == 2 and pb.evidence.kind == "derived"


def test_k3_pp16_blocks_carry_a_few_vectors_full_attnres_carries_every_output():
    k3 = get_preset("kimi-k3")
    cmp = residual_comparison(k3, 16)
    assert [b.vectors for b in cmp["standard"].boundaries] == [1] * 15
    assert cmp["block"].widest == 9  # embedding + 7 blocks of 24 sublayers + a partial, before the last stage
    assert cmp["full"].widest == 1 + 2 * 88
    assert cmp["standard"].forward == 15 * 7168 * 2
    assert cmp["block"].forward == cmp["block"].backward
    assert cmp["standard"].forward < cmp["block"].forward < cmp["full"].forward
    assert pipeline_bytes(k3, 16).forward == cmp["block"].forward  # K3's own residual is the block one
