"""A serving deployment (k3lite/analytic/serving/deployment.py): storage formats, refusals that name the constraint
before anything large is built, which models ship an MTP layer."""
import re
import tracemalloc

import pytest

from k3lite.analytic import memory
from k3lite.model.presets import get_preset
from k3lite.analytic.serving import (
    Serving, check_fits, decode_step,
)
from k3lite.analytic.serving.compare import (
    FP8,
)



def test_storage_formats_carry_their_scales():
    assert memory.PRECISIONS["bf16"].bytes_per_param == 2
    assert memory.PRECISIONS["fp8"].bytes_per_param == 1 + 4 / 16384  # fp32 scale per 128x128 block
    assert memory.PRECISIONS["nvfp4"].bytes_per_param == 0.5625  # 4 bits + one 8-bit scale per 16
    assert memory.PRECISIONS["mxfp4"].bytes_per_param == 0.53125  # 4 bits + one 8-bit scale per 32
    cfg = get_preset("deepseek-v3")
    params = memory.component_params(cfg)
    w = memory.weight_bytes(cfg, {"routed_experts": "nvfp4", "attention": "fp8"})
    assert w["routed_experts"] == params["routed_experts"] * 0.5625
    assert w["attention"] == params["attention"] * (1 + 4 / 16384)
    assert w["shared"] == 2 * params["shared"] and w["other"] == 2 * params["other"]  # not named: bf16
    with pytest.raises(ValueError, match="precision must be one of"):
        memory.weight_bytes(cfg, "fp3")


@pytest.mark.parametrize("kw, match", [
    (dict(preset="kimi-k3", gpu="H100 SXM", n_gpus=8, ep=8, weights="bf16"), "does not fit.*80.0 GiB.*at least 65 H100"),
    (dict(preset="deepseek-v3", gpu="H800", n_gpus=16, ep=16, context=10_000_000), "not one sequence"),
    (dict(preset="gpt-9"), "preset must be one of"), (dict(n_gpus=64, ep=48), "multiple of ep"),
    (dict(weights="fp3"), "weight format"), (dict(context=0), "context"),
    (dict(n_gpus=8, ep=8, tp=16), r"tp \(16\) must be <= the 8 GPUs"),
    (dict(n_gpus=8, ep=8, tp=8, dcp=3), r"dcp \(3\) must be a positive divisor of tp \(8\)"),
    (dict(n_gpus=8, ep=8, tp=1, dcp=2), "divisor of tp"),
])
def test_refusals_name_the_constraint(kw, match):
    with pytest.raises(ValueError, match=match):
        check_fits(Serving(**kw))


def test_refused_before_anything_large_is_built():
    """A batch whose cache would be ~70 TB per GPU is refused with a tiny memory footprint."""
    s = Serving("deepseek-v3", "H800", 16, 16, 1, FP8, 100_000)
    check_fits(s)  # warm the parameter count (meta device) outside the measurement
    tracemalloc.start()
    with pytest.raises(ValueError, match="does not fit at 100,000 tokens: at most"):
        decode_step(s, 10_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50e6, peak


def test_mtp_only_where_a_model_ships_one():
    from k3lite.model.presets import PRESETS
    from k3lite.analytic.serving import K3_PRESET, MTP_LAYERS, Speculation, has_mtp
    assert set(PRESETS) <= set(MTP_LAYERS)  # every preset says whether it ships an MTP layer
    assert has_mtp("deepseek-v3") and not has_mtp(K3_PRESET) and not has_mtp("kimi-k2")
    with pytest.raises(ValueError, match="ships no MTP layer"):
        Serving(K3_PRESET, spec=Speculation(drafter="mtp"))
    s = Serving("deepseek-v3", "H800", 16, 16, 1, FP8, 4096)
    mtp = decode_step(s.with_(spec=Speculation(1, 1.85, "mtp")), 32)
    assert mtp.draft_s == pytest.approx(decode_step(s, 32).step_s / 61)  # one more layer of the model per draft
    with pytest.raises(ValueError, match="acceptance"):
        Speculation(draft_tokens=2, acceptance=3.5)


def test_deepseek_v3_speculates_at_its_own_mtp_figures():
    """DeepSeek-V3's one MTP module drafts 1 token and keeps ~1.85 per step (85-90% second-token acceptance), cited
    from its report; K3-DSpark's 8 drafted / 3.3 kept stay the default of the models without MTP."""
    from k3lite.analytic.serving.deployment import default_speculation, speculation_source
    ds = default_speculation("deepseek-v3")
    assert (ds.draft_tokens, ds.acceptance, ds.drafter) == (1, 1.85, "mtp")
    assert "2412.19437" in speculation_source("deepseek-v3") and "85-90%" in speculation_source("deepseek-v3")
    k3 = default_speculation("kimi-k3")
    assert (k3.draft_tokens, k3.acceptance, k3.drafter) == (8, 3.3, "draft-model")
    assert "DSpark" in speculation_source("kimi-k3")


def test_the_price_table_labels_cited_assumed_and_yours():
    from k3lite.analytic.serving.deployment import YOURS, price_evidence, price_kind, price_table

    table = price_table({"B200": 6.0, "H200": 2.3})  # B200 typed; H200 at its cited default
    assert table["B200"] == (6.0, YOURS) and price_kind(table["B200"][1]) == "yours"
    assert price_kind(table["H200"][1]) == "cited" and price_evidence(table["H200"][1]).kind == "listed"
    assert price_kind(table["B300"][1]) == "assumed"
    assert price_evidence(YOURS).kind == "assumed" and "yours" in price_evidence(YOURS).source
    with pytest.raises(ValueError, match="GPU-hour"):
        price_table({"B200": 0.0})


def test_one_tp_rule_everywhere(capsys):
    """TP wider than the NVLink domain was accepted by the deployment panel and the solver and priced at NVLink
    speed, while the frontier refused it: one rule now (deployment.check_tp, in every Serving), one message."""
    from k3lite.analytic.serving.__main__ import main
    from k3lite.analytic.serving.frontier import RELEASED, frontier
    from k3lite.analytic.hardware import CUSTOM_DEFAULTS, custom_gpu_name
    from k3lite.panels import serving as P

    rule = r"TP 16 is wider than the 8-GPU NVLink domain of H200"
    with pytest.raises(ValueError, match=rule):
        Serving(gpu="H200", n_gpus=16, ep=16, tp=16)
    assert Serving(gpu="GB300 NVL72", n_gpus=16, ep=16, tp=16).tp == 16  # 72 GPUs share one NVLink domain there
    d = P.deployment("kimi-k3", "H200", 16, 16, 16, "mxfp4", "bf16", 32768, True, {}, None)
    assert d.step is None and re.search(rule, d.error)  # the deployment panel names it (and the solver never runs)
    for verb in ([], ["predict"]):
        assert main([*verb, "--gpu", "H200", "--gpus", "16", "--ep", "16", "--tp", "16"]) == 2
        assert re.search(rule, capsys.readouterr().err)
    four = custom_gpu_name(**{**CUSTOM_DEFAULTS, "nvlink_domain": 4.0})  # the frontier skips by the same words
    fr = frontier(gpus=[four], formats=[RELEASED], eps=(16, 32), tps=(4, 8))
    assert any("TP 8 is wider than the 4-GPU NVLink domain" in r for r in fr.skipped) and {u.tp for u in fr.setups} == {4}
