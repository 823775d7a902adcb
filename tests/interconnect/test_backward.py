"""The backward pass's analytic bytes: records, copies mirrored, the latent's saving both ways, DeepSeek-V3's numbers."""
import numpy as np
import pytest

from k3lite.interconnect.analytic import expected_copies, link_copies, sample_uniform_routing
from k3lite.interconnect.backward import (
    BWD_KINDS, TRAINING_FORMATS, backward_link_bytes, backward_records, deepep_training_bandwidths, deepseek_v3_checks,
    h800_topology, training_ep_bytes,
)
from k3lite.interconnect.deployment import REFERENCE, Deployment, expert_to_gpu, get_topology, wire_format
from k3lite.model.presets import get_preset


@pytest.mark.parametrize("scheme,gc,gd", [
    ("direct", lambda r, k: r + 4, lambda r, k: r + 4 + 4 * k),  # cached dispatch: source index; combine + k grads
    ("normal", lambda r, k: -(-(r + 8) // 16) * 16, lambda r, k: -(-(r + 8 + 4 * k) // 16) * 16),
    ("low-latency", lambda r, k: 16 + r, lambda r, k: r),
])
def test_backward_records_follow_deepeps_cached_dispatch_and_weighted_combine(scheme, gc, gd):
    for dim, k in ((3584, 16), (7168, 8), (33, 3)):
        got = backward_records(scheme, dim, k, "fp8", "bf16")
        assert got == (gc(wire_format("fp8").row_bytes(dim), k), gd(wire_format("bf16").row_bytes(dim), k))


def test_backward_moves_the_forwards_copies_the_other_way():
    ids = sample_uniform_routing(512, 64, 6, 16, 4, seed=3)
    src = np.repeat(np.arange(16), 32)
    placement = expert_to_gpu(64, 16)
    for scheme in ("direct", "normal", "low-latency"):
        mats = link_copies(ids, src, placement, 4, scheme)
        per_gpu = backward_link_bytes(ids, src, placement, 4, scheme, 32, 6, "fp32", "fp32")
        gc, gd = backward_records(scheme, 32, 6, "fp32", "fp32")
        for side in ("intra", "inter"):
            assert sum(r[f"grad_combine_{side}"] for r in per_gpu) == mats[f"dispatch_{side}"].sum() * gc
            assert sum(r[f"grad_dispatch_{side}"] for r in per_gpu) == mats[f"combine_{side}"].sum() * gd
        assert set(per_gpu[0]) == set(BWD_KINDS)


def test_the_latent_halves_the_backward_too_and_training_formats_are_deepseeks():
    k3 = get_preset("kimi-k3")
    dep = Deployment(get_topology("multi-node-8x8"), 64, "fp8", "bf16", 0, "normal")
    lat, full = training_ep_bytes(k3, dep), training_ep_bytes(k3, dep, latent=False)
    assert lat.formats == TRAINING_FORMATS
    for part in ("forward", "backward"):
        ratio = getattr(lat, part).total / getattr(full, part).total
        assert 0.49 < ratio < 0.52, (part, ratio)  # 3584 of 7168 elements; metadata and padding barely move it
    assert lat.backward.copies == lat.forward.copies
    # the backward's grad of the combine carries no top-k: fewer bytes than the forward dispatch in the same format
    assert lat.backward.dispatch < lat.forward.dispatch
    assert lat.evidence.kind == "derived"
    c = expected_copies(896, 16, 64, 8, 0, "normal")
    assert lat.backward.inter == pytest.approx(c.inter * sum(backward_records("normal", 3584, 16)))


def test_deepseek_v3s_interconnect_statements_hold():
    checks = deepseek_v3_checks()
    assert all(c.holds for c in checks), [(c.claim, c.theirs, c.ours) for c in checks if not c.holds]
    by = {c.claim.split(" (")[0]: c for c in checks}
    assert by["NVLink bandwidth / InfiniBand bandwidth"].ours == pytest.approx(3.2)
    assert by["nodes any token's experts sit on"].ours == 4  # the group rule reaches 4 nodes, never 5
    assert 3.9 < by["nodes a token's experts sit on"].ours <= 4
    assert {c.evidence_theirs.kind for c in checks} == {"released"}
    assert h800_topology().gpus_per_domain == 8


def test_deepep_training_rows_carry_their_evidence():
    rows = deepep_training_bandwidths()
    assert {r["EP"] for r in rows} == {8, 16, 32, 64}
    assert all(r["evidence"].kind == "measured elsewhere" for r in rows)


def test_training_ep_bytes_rejects_a_moe_config_without_width():
    with pytest.raises(ValueError, match="d_model"):
        training_ep_bytes(get_preset("lite").moe, REFERENCE)
