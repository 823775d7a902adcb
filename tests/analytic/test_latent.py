"""LatentMoE's cost per token (k3lite/analytic/latent.py): the payload halves with the latent ratio, on the one
wire-bytes function."""
import pytest


def test_latent_cost_halves_with_the_ratio():
    from k3lite.analytic.latent import latent_cost_per_token

    from k3lite.model.presets import get_preset
    from k3lite.interconnect import wire_bytes_per_token

    full = latent_cost_per_token(7168, 3072, 16, 2, 3072, 1.0, n_experts=896)
    half = latent_cost_per_token(7168, 3072, 16, 2, 3072, 0.5, n_experts=896)
    k3 = get_preset("kimi-k3")  # 896 experts top-16, d 7168, latent 3584
    assert half.wire_bytes == wire_bytes_per_token(k3).total  # the one wire-bytes function, reference deployment
    assert full.wire_bytes == wire_bytes_per_token(k3.with_(moe={"latent_dim": 0})).total
    assert 0.5 < half.wire_bytes / full.wire_bytes < 0.51  # payload halves; routing metadata does not
    assert half.routed_flops == full.routed_flops / 2 and full.proj_flops == 0 and half.proj_flops > 0
    assert half.shared_flops == full.shared_flops == 2 * 3 * 7168 * 3072 * 2
    with pytest.raises(ValueError, match="latent ratio"):
        latent_cost_per_token(64, 32, 2, ratio=0.0, n_experts=8)


def test_wire_headline_is_the_page_metric_at_its_defaults_and_moves_with_the_format():
    """The MoE page's assumptions block: its headline function gives the page's bytes on the wire at the assumed
    FP8 dispatch / BF16 combine, and the payload scales with each format's bytes per element."""
    from k3lite.analytic.latent import record_overhead, wire_bytes_headline
    from k3lite.interconnect import REFERENCE, deployment_bytes
    from k3lite.model.presets import get_preset

    k3 = get_preset("kimi-k3")
    base = wire_bytes_headline(k3.moe, k3.d_model)
    wire = deployment_bytes(k3.moe, REFERENCE, k3.d_model)
    assert base == pytest.approx(wire.total)
    assert record_overhead(k3.moe, k3.d_model) == wire.dispatch_record + wire.combine_record - 3 * 3584
    both_bf16 = wire_bytes_headline(k3.moe, k3.d_model, dispatch_elem_bytes=2.0)
    assert both_bf16 - base == pytest.approx(wire.copies.total * 3584)
    with pytest.raises(ValueError, match="bytes per element"):
        wire_bytes_headline(k3.moe, k3.d_model, combine_elem_bytes=0)
