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


def test_nvidia_capacities_are_binary_as_nvidia_smi_shows_them():
    # an "80 GB" H100 holds 80 GiB (nvidia-smi 81,559 MiB), a "141 GB" H200 141 GiB (143,771 MiB); the "179 GB" an
    # HGX B200 shows is nvidia-smi's 183,359 MiB; the B300 and GB300's 288 GB are read as GiB, as every HBM part
    mib = 2 ** 20
    assert GPUS["H100 SXM"].hbm_bytes == GPUS["H800"].hbm_bytes == 80 * GiB
    assert GPUS["H200"].hbm_bytes == 141 * GiB
    assert GPUS["B200"].hbm_bytes == 183_359 * mib
    assert GPUS["B300"].hbm_bytes == GPUS["GB300 NVL72"].hbm_bytes == 288 * GiB
    for name, smi in (("H100 SXM", 81_559), ("H200", 143_771), ("B200", 183_359)):
        # what the driver shows is within 0.5% of what we store, not 6-7% above it as decimal GB were
        assert GPUS[name].hbm_bytes == pytest.approx(smi * mib, rel=0.005)
    for name in ("B300", "GB300 NVL72"):
        assert "288 GiB" in GPUS[name].source + GPUS[name].unverified, "the reading taken is said in the source"


def test_capacity_words_follow_the_table_and_the_cited_nvidia_smi_figure():
    """The glossary said an H100 "holds 80 GiB" and an H200 "has 141 GiB" where the app's own cited nvidia-smi
    figures are 81,559 MiB = 79.6 GiB and 143,771 MiB = 140.4 GiB: the words now come from the table's row."""
    from k3lite.tour.glossary import UNITS_RULE, lookup

    for name, gib in (("H100 SXM", "79.6"), ("H200", "140.4")):
        g = GPUS[name]
        assert g.smi_mib and f"{g.smi_mib:,} MiB = {gib} GiB" in g.capacity_words
        assert f"{g.hbm_bytes / GiB:.0f} GiB" in g.capacity_words
        assert f"{g.smi_mib:,} MiB = {gib} GiB usable" in g.source
    assert GPUS["B200"].capacity_words == "179 GiB"  # stored as nvidia-smi shows it: nothing to add
    assert GPUS["H100 SXM"].capacity_words in lookup()["H100"].meaning
    assert GPUS["H200"].capacity_words in lookup()["H100"].meaning
    assert "holds 80 GiB" not in UNITS_RULE and "79.6 GiB usable" in UNITS_RULE
