"""The memory estimate before a live build (k3lite/analytic/budget.py): the parameter count is the meta count, the
activation estimate grows as it should, and a refusal names the nearest setting that fits (checked to fit)."""
import re

import pytest

from k3lite.analytic import budget
from k3lite.model.presets import get_preset
from k3lite.analytic.params import count_params

MB = budget.MB


def big_lite():
    """A lite-shaped config that is too big for 1 GB in its weights (~2.5B params), but small layers exist."""
    return get_preset("lite").with_(d_model=1024, n_layers=48, dense_ffn_dim=4096,
                                    moe={"n_routed_experts": 256, "expert_ffn_dim": 1024})


def test_param_estimate_is_the_meta_count():
    cfg = get_preset("lite")
    est = budget.estimate(cfg, 1, 64, budget_bytes=1024 * MB)
    assert est.params == count_params(cfg).total
    assert est.param_bytes == 4 * est.params  # fp32 weights
    train = budget.estimate(cfg, 1, 64, budget_bytes=1024 * MB, training=True)
    assert train.param_bytes == 16 * est.params  # weights + grads + two Adam moments
    assert train.activation_bytes > est.activation_bytes


def test_activation_estimate_grows_with_tokens_and_attention_is_quadratic():
    cfg = get_preset("lite")
    a = [budget.activation_bytes(cfg, 1, t) for t in (64, 128, 256, 4096)]
    assert a == sorted(a) and len(set(a)) == 4
    assert budget.activation_bytes(cfg, 2, 256) > budget.activation_bytes(cfg, 1, 256)
    # the MLA score matrix (2 B H T^2 floats) dominates at long T: doubling T roughly quadruples memory
    assert budget.activation_bytes(cfg, 1, 8192) / budget.activation_bytes(cfg, 1, 4096) > 3.0
    with pytest.raises(ValueError, match="seq_len must be >= 1"):
        budget.activation_bytes(cfg, 1, 0)


def test_lite_at_page_sizes_fits_the_default_budget(monkeypatch):
    monkeypatch.delenv("K3LITE_MEMORY_BUDGET_MB", raising=False)
    est = budget.check_budget(get_preset("lite"), 4, 512)
    assert est.fits and est.budget_bytes == budget.DEFAULT_BUDGET_MB * MB


def test_too_long_a_run_is_refused_with_the_largest_seq_len_that_fits():
    cfg = get_preset("lite")
    limit = 256 * MB
    with pytest.raises(ValueError, match="memory budget of 256 MB") as info:
        budget.check_budget(cfg, 8, 2048, budget_bytes=limit)
    msg = str(info.value)
    best_t = int(re.search(r"seq_len <= (\d+) at batch 8", msg).group(1))
    best_b = int(re.search(r"batch <= (\d+) at seq_len 2048", msg).group(1))
    assert budget.estimate(cfg, 8, best_t, limit).fits and not budget.estimate(cfg, 8, best_t + 1, limit).fits
    assert budget.estimate(cfg, best_b, 2048, limit).fits and not budget.estimate(cfg, best_b + 1, 2048, limit).fits


def test_too_many_weights_is_refused_with_the_nearest_layer_and_expert_counts():
    cfg = big_lite()
    limit = 1024 * MB
    with pytest.raises(ValueError, match="parameters alone") as info:
        budget.check_budget(cfg, 1, 64, budget_bytes=limit)
    msg = str(info.value)
    layers = int(re.search(r"n_layers <= (\d+)", msg).group(1))
    experts = int(re.search(r"n_routed_experts <= (\d+)", msg).group(1))
    assert budget.estimate(cfg.with_(n_layers=layers), 1, 64, limit).fits
    assert not budget.estimate(cfg.with_(n_layers=layers + 1), 1, 64, limit).fits
    assert budget.estimate(cfg.with_(moe={"n_routed_experts": experts}), 1, 64, limit).fits
    assert not budget.estimate(cfg.with_(moe={"n_routed_experts": experts + 1}), 1, 64, limit).fits


def test_published_giants_are_refused_before_allocating():
    with pytest.raises(ValueError, match=r"'kimi-linear-48b-a3b'.*parameters alone.*smaller preset"):
        budget.check_budget(get_preset("kimi-linear-48b-a3b"), 1, 16)


def test_budget_comes_from_the_environment(monkeypatch):
    cfg = get_preset("lite")
    monkeypatch.setenv("K3LITE_MEMORY_BUDGET_MB", "8")
    with pytest.raises(ValueError, match="memory budget of 8 MB"):
        budget.check_budget(cfg, 1, 64)
    monkeypatch.setenv("K3LITE_MEMORY_BUDGET_MB", "4096")
    assert budget.check_budget(cfg, 8, 2048).budget_bytes == 4096 * MB
    for bad in ("lots", "-1", "0", "inf"):
        monkeypatch.setenv("K3LITE_MEMORY_BUDGET_MB", bad)
        with pytest.raises(ValueError, match="K3LITE_MEMORY_BUDGET_MB"):
            budget.check_budget(cfg, 1, 64)
