"""How far an answer sits from the runs (k3lite/analytic/serving/envelope.py): leave-a-group-out errors are what a
fit of the rest gives, a term the rest cannot place is named, every fitted run sits inside the envelope and an
answer outside it says on which axes, with a band no narrower than leave-one-out's."""
import math

import pytest

from k3lite.analytic.serving import envelope as ev
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.fit import FITTED, fit, leave_one_out, row_error, row_serving, summary
from k3lite.analytic.serving.measured import FITTED_ROWS, MEASURED


def test_each_group_error_is_a_fit_of_the_other_runs_predicting_the_group():
    groups = ev.leave_group_out()
    assert {g.grouping for g in groups} == set(ev.GROUPINGS)
    assert sum(g.rows for g in groups if g.grouping == "concurrency") == len(FITTED_ROWS)
    g = next(g for g in groups if g.value == "of the NVFP4 checkpoint")
    held = [m for m in FITTED_ROWS if m.checkpoint == "NVFP4"]
    f = fit([m for m in FITTED_ROWS if m.checkpoint != "NVFP4"])
    errs = [abs(row_error(m, f).errors["tpot"]) for m in held]
    assert g.rows == len(held) == 6
    assert g.tpot_mape == pytest.approx(sum(errs) / len(errs)) and g.tpot_worst == pytest.approx(max(errs))


def test_every_fit_stays_physical_and_a_term_the_rest_cannot_place_is_named():
    for g in ev.leave_group_out():
        e = g.fitted.efficiency
        assert 0 < e.hbm_fraction <= 1 and 0 < e.flops_fraction <= 1, (g.value, e)
    # without the runs that do not speculate, bandwidth and acceptance trade off: the bandwidth runs to its bound
    nospec = next(g for g in ev.leave_group_out() if g.value == "without speculation")
    assert nospec.at_bound == ("hbm_fraction",) and not nospec.identified
    # the vLLM runs alone fit vLLM's acceptance: holding them out keeps the shipped value, and says so
    vllm = next(g for g in ev.leave_group_out() if g.value == "on vLLM")
    assert vllm.borrowed == ("acceptance vllm-guidellm",)
    assert vllm.fitted.acceptance["vllm-guidellm"] == FITTED.acceptance["vllm-guidellm"]
    assert next(g for g in ev.leave_group_out() if g.value == "of the NVFP4 checkpoint").identified


def test_the_bounded_fit_still_gives_the_shipped_values_and_leave_one_out():
    f = fit()
    assert f.efficiency.hbm_fraction == pytest.approx(FITTED.efficiency.hbm_fraction, rel=1e-3)
    assert ev.inside_error() == pytest.approx(summary(leave_one_out()).mape["tpot"])
    assert 0.05 < ev.inside_error() < 0.15


def test_every_fitted_run_sits_inside_the_envelope():
    for m in FITTED_ROWS:
        d = ev.distance_of(row_serving(m), m.concurrency / m.n_gpus)
        assert d.inside and d.band == ev.inside_error() and not d.at_least, (m.key, d.axes)


def test_the_default_deployment_leaves_on_the_axes_no_run_varies_and_the_band_is_a_floor():
    d = ev.distance_of(Serving(), 8)  # B300, 64 GPUs, EP 64, TP 1, 32k context
    assert [a.name for a in d.axes] == ["expert dispatch", "NIC", "TP", "context"]
    errors = {a.name: a.error for a in d.axes}
    assert errors["TP"] is None and errors["context"] is None and d.at_least  # no run varies these: a floor
    # expert dispatch and the NIC: the shipped fit's error on the published multi-node deployments
    assert errors["expert dispatch"] == errors["NIC"] == ev.multinode_error()
    assert d.band == max(ev.inside_error(), ev.multinode_error())


def test_the_nic_band_is_the_fits_error_on_the_multi_node_deployments():
    from k3lite.analytic.serving.published import PUBLISHED, validate
    rows = {r["deployment"]: r for r in validate()}
    # TPOT error at the publication's batch = measured / predicted tokens/s - 1, from validate's own columns
    errs = [abs(rows[p.label]["measured tokens/s / GPU"] / rows[p.label]["predicted tokens/s / GPU"] - 1)
            for p in PUBLISHED]
    assert ev.multinode_error() == pytest.approx(sum(errs) / len(errs)) and ev.multinode_error() > 0
    two = ev.distance_of(Serving(gpu="B300", n_gpus=16, ep=16, tp=8, context=8704), 2)  # EP over 2 nodes
    assert [a.name for a in two.axes] == ["expert dispatch", "NIC"]
    assert all(a.error == pytest.approx(ev.multinode_error()) for a in two.axes) and not two.at_least


def test_another_gpu_carries_the_held_out_gpus_error():
    mi = [abs(row_error(m, FITTED).errors["tpot"]) for m in MEASURED if m.gpu == "MI350X"]
    d = ev.distance_of(Serving(gpu="H200", n_gpus=8, ep=8, tp=8, context=8704), 2)
    assert [a.name for a in d.axes] == ["GPU"] and not d.at_least
    assert d.band == pytest.approx(sum(mi) / len(mi)) and d.band > ev.inside_error()


def test_a_batch_outside_the_runs_widens_the_band_to_the_concurrency_groups_error():
    d = ev.distance_of(Serving(gpu="B300", n_gpus=8, ep=8, tp=8, context=8704), 32)
    assert [a.name for a in d.axes] == ["batch per GPU"]
    worst = max(g.tpot_mape for g in ev.leave_group_out() if g.grouping == "concurrency" and g.identified)
    assert d.band == pytest.approx(worst) and not math.isnan(d.band)


def test_unreleased_formats_leave_the_envelope():
    fp8 = {"routed_experts": "fp8", "attention": "fp8", "shared": "fp8", "embeddings": "fp8"}
    d = ev.distance_of(Serving(gpu="B300", n_gpus=8, ep=8, tp=8, context=8704, weights=fp8), 2)
    assert [a.name for a in d.axes] == ["formats"] and d.axes[0].error == pytest.approx(ev.axis_error("checkpoint"))
