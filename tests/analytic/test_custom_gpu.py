"""Your own GPU: a row typed by the reader travels as one name ('custom:...') wherever a GPU name goes."""
import pytest

from k3lite.analytic.hardware import (CUSTOM_FIELDS, GPUS, custom_gpu_name, custom_price, get_gpu, gpu_label,
                                      gpu_name, is_custom)
from k3lite.analytic.serving.deployment import Serving, price_kind, price_table
from k3lite.analytic.serving.frontier import frontier, per_gpu_at
from k3lite.analytic.serving.step import placement
from k3lite.model.variants import comparison_config

B200_LIKE = dict(hbm_gib=179, hbm_tb_s=8, bf16_tflops=2250, fp8_tflops=4500, fp4_tflops=9000, nvlink_gb_s=900,
                 nic_gb_s=50, nvlink_domain=8, usd_per_hour=3.5)


def test_a_custom_gpu_equals_the_table_row_it_copies():
    """Typed with the B200's numbers, the custom GPU serves as the B200 does (same step, same price)."""
    name = custom_gpu_name(**B200_LIKE)
    mine, b200 = get_gpu(name), GPUS["B200"]
    assert is_custom(name) and gpu_name(name) == name and mine.name == name
    assert mine.hbm_bytes == pytest.approx(179 * 2 ** 30) and mine.hbm_bw == b200.hbm_bw
    assert mine[2:9] == b200[2:9]
    a = Serving(gpu=name, n_gpus=64, ep=64, tp=1)
    b = Serving(gpu="B200", n_gpus=64, ep=64, tp=1)
    assert a.price == custom_price(name) == 3.5 == b.price
    # capacity differs only by the B200 row's 183,359 MiB vs 179 GiB
    assert placement(a).weight_bytes_per_gpu == placement(b).weight_bytes_per_gpu


def test_a_custom_gpu_goes_through_the_frontier_and_the_price_table():
    name = custom_gpu_name(**B200_LIKE)
    fr = frontier("kimi-k3", gpus=["B200", name], points=4)
    assert set(fr.by_gpu) == {"B200", name}
    best = per_gpu_at(fr, 30.0)
    assert best[name].usd_per_m == pytest.approx(best["B200"].usd_per_m, rel=0.05)
    price, source = price_table()[name]
    assert price == 3.5 and price_kind(source) == "yours"
    assert price_table({name: 2.0})[name][0] == 2.0


def test_a_faster_custom_gpu_is_cheaper_at_the_same_price():
    slow = custom_gpu_name(**B200_LIKE)
    fast = custom_gpu_name(**{**B200_LIKE, "hbm_tb_s": 16})
    fr = frontier("kimi-k3", gpus=[slow, fast], points=4)
    best = per_gpu_at(fr, 30.0)
    assert best[fast].usd_per_m < best[slow].usd_per_m


def test_the_frontier_takes_a_variant_config():
    fr = frontier(comparison_config("all-mla"), gpus=["B300"], points=3)
    assert fr.preset.endswith("with MLA everywhere") and fr.points


def test_labels_and_refusals_name_the_field():
    name = custom_gpu_name(**B200_LIKE)
    assert gpu_label(name) == "custom GPU (179 GiB, 8 TB/s)" and gpu_label("h100") == "H100 SXM"
    with pytest.raises(ValueError, match="HBM bandwidth"):
        custom_gpu_name(**{**B200_LIKE, "hbm_tb_s": 0})
    with pytest.raises(ValueError, match="whole number"):
        custom_gpu_name(**{**B200_LIKE, "nvlink_domain": 7.5})
    with pytest.raises(ValueError, match="missing"):
        custom_gpu_name(hbm_gib=80)
    with pytest.raises(ValueError, match=f"{len(CUSTOM_FIELDS)} numbers"):
        get_gpu("custom:80:3")
    with pytest.raises(ValueError, match="must be numbers"):
        get_gpu("custom:" + ":".join(["x"] * len(CUSTOM_FIELDS)))
    with pytest.raises(ValueError, match="or your own"):
        gpu_name("TPU v9")
    assert "," not in name  # lists travel comma-joined in a URL
