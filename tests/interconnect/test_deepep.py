"""DeepEP's published figures as the step model uses them (k3lite/interconnect/deepep.py): the fitted per-call
latency and achieved NIC bandwidth reproduce the low-latency rows they come from; the normal-kernel shares are our
bytes over their time."""
import pytest

from k3lite.interconnect.deepep import (
    LOW_LATENCY, NVLINK_PEAK, RDMA_PEAK, call_time, fit_call, ll_bytes, nic_share_normal, nic_terms, normal_rows,
    nvlink_share_normal,
)

TOLERANCE = 0.07  # the two-parameter fit reproduces every published low-latency time within 7% (worst: combine EP128)


@pytest.mark.parametrize("direction,col", [("dispatch", 1), ("combine", 3)])
def test_the_fit_reproduces_every_low_latency_row(direction, col):
    f = fit_call(direction)
    assert [r[0] for r in f.rows] == [r[0] for r in LOW_LATENCY]  # every published EP size, 8 .. 256
    for (ep, reported, modelled), row in zip(f.rows, LOW_LATENCY):
        assert reported == row[col]
        assert modelled == pytest.approx(1e6 * call_time(f.latency_s, f.nic_bw, *ll_bytes(ep, direction)), abs=0.05)
        assert abs(modelled / reported - 1) < TOLERANCE, (direction, ep, modelled, reported)
    # a physical fit: a positive latency of tens of µs, a NIC below its peak
    assert 10e-6 < f.latency_s < 60e-6
    assert 0.5 < f.nic_share < 1.0 and f.nic_bw == pytest.approx(f.nic_share * RDMA_PEAK)
    assert f.evidence.kind == "derived" and "fit_call" in f.evidence.source
    assert f.measured.kind == "measured elsewhere" and "dd758ca" in f.measured.source


def test_the_fit_is_the_least_squares_optimum():
    """No nearby (latency, bandwidth) pair fits the published times better, in relative squared error."""
    for direction, col in (("dispatch", 1), ("combine", 3)):
        f = fit_call(direction)
        split = [ll_bytes(r[0], direction) for r in LOW_LATENCY]

        def err(a, bw):
            return sum((call_time(a, bw, *s) / (r[col] * 1e-6) - 1) ** 2 for s, r in zip(split, LOW_LATENCY))

        best = err(f.latency_s, f.nic_bw)
        for da in (-2e-6, 2e-6):
            assert err(f.latency_s + da, f.nic_bw) >= best
        for dbw in (-1e9, 1e9):
            assert err(f.latency_s, min(RDMA_PEAK, f.nic_bw + dbw)) >= best - 1e-12


def test_ep8_is_inside_one_node_and_larger_ep_crosses_the_nic():
    intra, inter = ll_bytes(8, "dispatch")
    assert inter == 0 and intra > 0  # EP 8: one H800 node, NVLink only
    assert ll_bytes(16, "dispatch")[1] > 0 and ll_bytes(256, "dispatch")[1] > ll_bytes(16, "dispatch")[1]
    # EP 8 and 16 finish faster than our NIC bytes at the NIC's peak, were every other GPU reached over RDMA
    # (the module says why the fit splits copies by node)
    full = ll_bytes(16, "dispatch")
    assert (full[0] + full[1]) / RDMA_PEAK > LOW_LATENCY[1][1] * 1e-6


def test_nic_terms_are_the_two_fits():
    t, d, c = nic_terms(), fit_call("dispatch"), fit_call("combine")
    assert (t.dispatch_latency_s, t.combine_latency_s) == (d.latency_s, c.latency_s)
    assert (t.dispatch_nic_share, t.combine_nic_share) == (d.nic_share, c.nic_share)


def test_normal_kernel_shares_are_our_bytes_over_their_time():
    rows = {(r["EP"], r["direction"]): r for r in normal_rows()}
    for ep in (16, 32, 64):
        mean = (rows[ep, "dispatch"]["implied wire bandwidth (GB/s)"] + rows[ep, "combine"]["implied wire bandwidth (GB/s)"]) / 2
        assert nic_share_normal(ep) == pytest.approx(mean * 1e9 / RDMA_PEAK)
    assert nic_share_normal(144) == nic_share_normal(64) and nic_share_normal(20) == nic_share_normal(16)
    nvl = (rows[8, "dispatch"]["implied wire bandwidth (GB/s)"] + rows[8, "combine"]["implied wire bandwidth (GB/s)"]) / 2
    assert nvlink_share_normal() == pytest.approx(nvl * 1e9 / NVLINK_PEAK) and 0.5 < nvlink_share_normal() < 1
