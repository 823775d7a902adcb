"""The GPU table (k3lite/analytic/hardware.py): every row's peaks in order, capacities in the unit the datasheet
means, AMD's parts with no FP4 multiplied in FP8, a price for every GPU."""
import pytest

from k3lite.analytic.hardware import GPUS, GiB, get_gpu, gpu_name
from k3lite.analytic.serving.deployment import USD_PER_GPU_HOUR

AMD = ("MI300X", "MI325X", "MI350X", "MI355X")


@pytest.mark.parametrize("name", list(GPUS))
def test_peaks_rise_as_precision_falls_and_every_row_names_its_source(name):
    g = GPUS[name]
    assert 0 < g.bf16_flops < g.fp8_flops
    assert g.fp4_flops == 0 or g.fp4_flops > g.fp8_flops
    assert g.hbm_bytes > 0 and g.hbm_bw > 0 and g.nvlink_bw > g.nic_bw > 0
    assert g.nvlink_domain in (8, 72)
    assert len(g.source) > 40
    assert name in USD_PER_GPU_HOUR, "the frontier prices every GPU of the table"


def test_amd_capacities_are_the_gib_their_specification_table_states():
    # ROCm's table heads its column "VRAM (GiB)": 192, 256, 288, 288
    for name, gib in zip(AMD, (192, 256, 288, 288)):
        assert GPUS[name].hbm_bytes == gib * 2 ** 30 == gib * GiB
    assert GPUS["MI300X"].hbm_bytes == pytest.approx(206.16e9, rel=1e-4)  # 7.4% more than "192e9"


def test_a_4bit_format_on_a_gpu_without_fp4_is_multiplied_in_fp8():
    for name in ("MI300X", "MI325X", "H100 SXM"):
        g = GPUS[name]
        assert g.fp4_flops == 0
        assert g.peak_flops("mxfp4") == g.peak_flops("nvfp4") == g.fp8_flops
    assert GPUS["MI355X"].peak_flops("mxfp4") == GPUS["MI355X"].fp4_flops


def test_cdna4_peaks_follow_per_cu_rate_clock_and_units():
    # 8,192 dense FP8 FLOPs per CU per clock, 256 CUs; 2.4 GHz (MI355X) and 2.2 GHz (MI350X)
    assert GPUS["MI355X"].fp8_flops == pytest.approx(8192 * 256 * 2.4e9, rel=1e-3)
    assert GPUS["MI350X"].fp8_flops == pytest.approx(8192 * 256 * 2.2e9, rel=1e-3)
    for name in ("MI350X", "MI355X"):
        g = GPUS[name]
        assert g.bf16_flops == pytest.approx(g.fp8_flops / 2, rel=1e-3)
        assert g.fp4_flops == pytest.approx(2 * g.fp8_flops, rel=1e-3)
    # CDNA3: 4,096 FP8 FLOPs per CU per clock, 304 CUs, 2.1 GHz
    assert GPUS["MI300X"].fp8_flops == pytest.approx(4096 * 304 * 2.1e9, rel=1e-3)


def test_short_names_reach_the_amd_rows():
    assert gpu_name("mi300x") == "MI300X" and get_gpu("MI-355X").name == "MI355X"
