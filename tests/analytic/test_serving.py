"""The serving model (k3lite/analytic/serving.py, serving_compare.py) and its page: hand-computed cases per formula,
refusals before anything large is built, the CLI's JSON, and the bound against published measurements."""
import json
import math
import tracemalloc

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.analytic import memory
from k3lite.model.config import get_preset
from k3lite.analytic.hardware import get_gpu
from k3lite.analytic.serving import (
    Serving, best_batch, capacity, check_fits, decode_step, main, pareto, placement, prefill_usd_per_m_input,
    wire_bytes_per_token,
)
from k3lite.analytic.serving_compare import (
    FP8, PUBLISHED, classic_variant, gpus_for_weights, physics_price, validate, waterfall,
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


def test_placement_by_hand():
    s = Serving("kimi-linear-48b-a3b", "H200", 8, 4, 2, "fp8", 100_000)
    cfg = get_preset("kimi-linear-48b-a3b")
    w = memory.weight_bytes(cfg, "fp8")
    p = placement(s)
    rest = sum(v for c, v in w.items() if c != "routed_experts")
    assert p.weight_bytes_per_gpu == pytest.approx(w["routed_experts"] / 4 + rest / 2)
    # tp 2: each TP rank keeps its group's whole MLA latent cache, half of each KDA state
    seq = memory.sequence_cache_bytes(cfg, 100_000)
    assert p.cache_bytes_per_sequence == 2 * seq.mla + seq.kda / 2
    assert seq.mla == 7 * 100_000 * 576 * 2
    assert p.max_batch_per_gpu == int((141e9 - p.weight_bytes_per_gpu) // p.cache_bytes_per_sequence)
    assert p.min_gpus_for_weights == math.ceil(sum(w.values()) / 141e9)


def test_decode_step_by_hand():
    s = Serving("deepseek-v3", "H800", 16, 16, 1, FP8, 4096, overlap=False, usd_per_gpu_hour=3.6)
    cfg, gpu, b = s.cfg, get_gpu("H800"), 32
    st = decode_step(s, b)
    w_all, w_act = memory.weight_bytes(cfg, FP8), memory.weight_bytes(cfg, FP8, active=True)
    hit = 1 - (1 - 8 / 256) ** (b * 16)  # one copy of each expert serves the 16 GPUs' 32 tokens each
    hbm = (sum(v for c, v in w_act.items() if c != "routed_experts") + w_all["routed_experts"] / 16 * hit
           + b * 61 * 4096 * 576 * 2)
    assert st.hbm_bytes == pytest.approx(hbm)
    n = memory.component_params(cfg, active=True)
    attn = 61 * 2 * 128 * 4096 * (2 * 512 + 64)
    compute = b * (2 * sum(n.values()) / gpu.fp8_flops + attn / gpu.bf16_flops)
    assert st.compute_s == pytest.approx(compute)
    intra, inter = wire_bytes_per_token(cfg, s)
    assert intra > 0 and inter > 0  # 16 GPUs = two 8-GPU NVLink domains
    wire = b * 58 * (intra / gpu.nvlink_bw + inter / gpu.nic_bw)
    assert st.wire_s == pytest.approx(wire)
    assert st.step_s == pytest.approx(max(hbm / gpu.hbm_bw, compute) + wire)  # no overlap: the wire adds
    on = decode_step(s.with_(overlap=True), b)
    assert on.step_s == pytest.approx(max(hbm / gpu.hbm_bw, compute, wire)) and on.step_s <= st.step_s
    assert st.tokens_per_s_per_gpu == pytest.approx(b / st.step_s)
    assert st.usd_per_m_output_tokens == pytest.approx(1e3 / st.tokens_per_s_per_gpu)  # $3.6/h = $0.001/s


def test_batch_touches_more_experts_and_best_batch():
    s = Serving("kimi-k2", "H200", 16, 16, 1, FP8, 8192)
    one, many = decode_step(s, 1), decode_step(s, 64)
    assert many.hbm_bytes > one.hbm_bytes  # more tokens touch more of the hosted experts (and more cache)
    assert many.tokens_per_s_per_gpu > one.tokens_per_s_per_gpu > many.tokens_per_s_per_user / 64
    top = check_fits(s).max_batch_per_gpu
    assert best_batch(s) == top
    slow = best_batch(s, min_tokens_per_user=40)
    assert decode_step(s, slow).tokens_per_s_per_user >= 40 and (slow == top or decode_step(s, slow + 1).tokens_per_s_per_user < 40)
    curve = pareto(s, points=8)
    assert curve[0].batch_per_gpu == 1 and curve[-1].batch_per_gpu == top
    assert [p.tokens_per_s_per_gpu for p in curve] == sorted(p.tokens_per_s_per_gpu for p in curve)


def test_prefill_estimate_by_hand():
    s = Serving("deepseek-v3", "H800", 16, 16, 1, FP8, 4096, usd_per_gpu_hour=3.6)
    n = memory.component_params(s.cfg, active=True)
    t = 2 * sum(n.values()) / 1979e12 + 61 * 2 * 128 * 2048 * (2 * 512 + 64) / 989e12
    assert prefill_usd_per_m_input(s) == pytest.approx(0.001 * t * 1e6)


def test_capacity_by_hand():
    s = Serving("kimi-linear-48b-a3b", "H200", 8, 8, 1, "fp8", 65536)
    free = 141e9 - placement(s).weight_bytes_per_gpu
    hybrid = 7 * 65536 * 576 * 2 + 20 * (32 * 128 * 128 * 4 + 3 * 3 * 32 * 128 * 2)
    caps = capacity(s, [65536])
    assert list(caps.values()) == [[int(free // hybrid)], [int(free // (27 * 65536 * 576 * 2))],
                                   [int(free // (27 * 65536 * 2 * 8 * 128 * 2))]]


def test_peak_flops_follow_the_storage_format():
    h100, b300 = get_gpu("H100 SXM"), get_gpu("B300")
    assert h100.peak_flops("bf16") == h100.bf16_flops and h100.peak_flops("fp8") == h100.fp8_flops
    assert h100.peak_flops("nvfp4") == h100.fp8_flops  # Hopper has no FP4 tensor cores
    assert b300.peak_flops("nvfp4") == b300.fp4_flops and b300.peak_flops("int4") == b300.fp8_flops  # weight-only


def test_capacity_hybrid_beats_all_mla_beats_gqa():
    caps = capacity(Serving(), [4096, 131072])
    hybrid, mla, gqa = caps.values()
    assert hybrid[1] > mla[1] > gqa[1]  # at long context the fixed KDA states win
    assert mla[0] > hybrid[0]  # at 4K the fixed states cost more than the short cache they replace


@pytest.mark.parametrize("kw, match", [
    (dict(preset="kimi-k3", gpu="H100 SXM", n_gpus=8, ep=8, weights="bf16"), "does not fit.*at least 70 H100"),
    (dict(preset="deepseek-v3", gpu="H800", n_gpus=16, ep=16, context=10_000_000), "not one sequence"),
    (dict(preset="gpt-9"), "preset must be one of"), (dict(n_gpus=64, ep=48), "multiple of ep"),
    (dict(weights="fp3"), "weight format"), (dict(context=0), "context"),
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


def test_cli_json(capsys):
    rc = main(["--preset", "kimi-k2", "--gpu", "H200", "--gpus", "16", "--ep", "16", "--weights", "fp8",
               "--context", "8192", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    for key in ("weight_bytes_per_gpu", "free_hbm_bytes_per_gpu", "max_batch_per_gpu", "batch_per_gpu", "step_time_s",
                "tokens_per_s_per_gpu", "usd_per_m_output_tokens"):
        assert key in out, key
    assert out["batch_per_gpu"] == out["max_batch_per_gpu"]  # no --batch: the most that fit
    assert out["inputs"]["preset"] == "kimi-k2" and out["inputs"]["n_gpus"] == 16 and out["inputs"]["context"] == 8192
    assert main(["--preset", "kimi-k2", "--gpu", "H200", "--gpus", "16", "--context", "8192", "--batch", "7",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["batch_per_gpu"] == 7
    assert main(["--preset", "kimi-k3", "--gpu", "H100 SXM", "--gpus", "8", "--weights", "bf16"]) == 2
    assert "does not fit" in capsys.readouterr().err


def test_six_b300_needs_four_bit():
    rows = {r.fmt: r for r in gpus_for_weights("kimi-k3", "B300")}
    assert rows["nvfp4"].whole_gpus == 6 and rows["fp8"].whole_gpus == 10 and rows["bf16"].whole_gpus == 20


def test_model_is_an_upper_bound_on_every_published_figure():
    rows = validate(overlap=True)
    assert len(rows) == len(PUBLISHED) >= 3
    for r in rows:
        assert r["model / measured"] >= 1.0, r["deployment"]
        assert r["model / measured"] < 5, r["deployment"]  # and not a useless bound
    for p in PUBLISHED:  # every published batch fits our placement
        check_fits(p.serving, p.batch_per_gpu)


def test_waterfall_changes_one_thing_per_step():
    k3 = get_preset("kimi-k3")
    classic = classic_variant(k3)
    assert (classic.moe.n_routed_experts, classic.moe.top_k, classic.moe.latent_dim) == (448, 8, 0)
    # same expert parameters and the same active expert parameters per token as K3's LatentMoE
    assert memory.component_params(classic)["routed_experts"] == memory.component_params(k3)["routed_experts"]
    steps = waterfall(context=32768)
    assert [w.serving.cfg.layer_types().count("kda") for w in steps] == [0, 0, 69, 69]
    assert steps[-1].serving.weights == Serving().weights == memory.RELEASED_K3_FORMATS  # K3 as it ships
    k3_step = decode_step(steps[-1].serving, steps[-1].batch)
    assert steps[-1].usd_per_m == pytest.approx(k3_step.usd_per_m_output_tokens)
    assert steps[-1].usd_per_m < steps[0].usd_per_m
    assert physics_price().output_per_m == pytest.approx(steps[-1].usd_per_m)


def test_waterfall_caption_names_the_largest_step_either_way():
    """Issue 28 item 7: "the biggest step is" picked the largest saving; at 4K that named '+ 4-bit experts'
    (-0.013 $/M) while '+ 3:1 KDA:MLA' moved the cost +0.037 $/M."""
    at = AppTest.from_file(str(ROOT / "views" / "serving.py"), default_timeout=180)
    at.query_params["sv_context"] = "4096"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    text = next(c.value for c in at.caption if "The biggest step is" in c.value).replace("\\$", "$")
    steps = waterfall(context=4096)
    deltas = [(b.usd_per_m - a.usd_per_m, b.label) for a, b in zip(steps, steps[1:])]
    d, label = max(deltas, key=lambda x: abs(x[0]))
    assert f"The biggest step is '{label}' ({d:+.3f} $/M)" in text
    for d, label in deltas:
        if d > 0:
            assert f"'{label}' ({d:+.3f} $/M)" in text  # every step that raises the cost is named


def test_serving_page_refuses_with_an_error_not_a_traceback():
    at = AppTest.from_file(str(ROOT / "views" / "serving.py"), default_timeout=180)
    at.query_params.update({"sv_preset": "kimi-k3", "sv_gpu": "H100 SXM", "sv_gpus": "8", "sv_ep": "8",
                            "sv_experts": "bf16", "sv_rest": "bf16"})
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("does not fit" in e.value and "H100 SXM" in e.value for e in at.error)


def test_cost_page_can_use_the_physics_price():
    at = AppTest.from_file(str(ROOT / "views" / "cost_per_task.py"), default_timeout=180)
    at.query_params["cost_physics"] = "true"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    price = physics_price()
    assert any(price.name in str(c.value) and f"{price.output_per_m:.3f}" in str(c.value) for c in at.caption)


# ------------------------------------------------------------------------------------------ issue 29
def test_speculation_by_hand():
    """A verification step runs draft + 1 tokens of each sequence (compute, wire and expert hits scale with them,
    the cache is read once); the drafter adds its own time; each sequence emits `acceptance` tokens."""
    from k3lite.analytic.serving import Speculation
    base = Serving("kimi-k2", "H200", 16, 16, 1, FP8, 8192)
    sp = Speculation(draft_tokens=3, acceptance=2.5, drafter="draft-model", draft_params=1e9)
    b, gpu, cfg = 8, get_gpu("H200"), get_preset("kimi-k2")
    plain, spec = decode_step(base, b), decode_step(base.with_(spec=sp), b)
    w_all, w_act = memory.weight_bytes(cfg, FP8), memory.weight_bytes(cfg, FP8, active=True)
    hit = 1 - (1 - 8 / 384) ** (b * 4 * 16)  # 4 tokens per sequence now reach the experts
    hbm = (sum(v for c, v in w_act.items() if c != "routed_experts") + w_all["routed_experts"] / 16 * hit
           + b * placement(base).cache_bytes_per_sequence)
    assert spec.hbm_bytes == pytest.approx(hbm)
    assert spec.compute_s == pytest.approx(4 * plain.compute_s) and spec.wire_s == pytest.approx(4 * plain.wire_s)
    draft = max(2e9 / gpu.hbm_bw, b * 3 * 2e9 / gpu.bf16_flops)
    assert spec.draft_s == pytest.approx(draft)
    assert spec.step_s == pytest.approx(max(hbm / gpu.hbm_bw, spec.compute_s, spec.wire_s) + draft)
    assert spec.tokens_per_s_per_user == pytest.approx(2.5 / spec.step_s)
    assert spec.tokens_per_s_per_gpu == pytest.approx(b * 2.5 / spec.step_s)
    # nothing accepted and a free drafter: verifying more tokens can only cost time
    nothing = decode_step(base.with_(spec=Speculation(3, 1.0, "draft-model", 0.0)), b)
    assert nothing.tokens_per_s_per_user <= plain.tokens_per_s_per_user


def test_mtp_only_where_a_model_ships_one():
    from k3lite.model.config import PRESETS
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


def test_prefill_pool_by_hand():
    """Prefill: compute at peak, DeepEP normal-kernel wire, this GPU's weights once per chunk; the max of them."""
    from k3lite.analytic.serving import prefill_step
    s = Serving("kimi-k2", "B300", 32, 32, 1, FP8, 8192, usd_per_gpu_hour=3.6)
    cfg, gpu = s.cfg, get_gpu("B300")
    pre = prefill_step(s, 4096)
    intra, inter = wire_bytes_per_token(cfg, s.with_(scheme="normal"))
    assert pre.wire_s == pytest.approx(60 * (intra / gpu.nvlink_bw + inter / gpu.nic_bw))  # 60 MoE layers
    assert pre.hbm_s == pytest.approx(placement(s).weight_bytes_per_gpu / 4096 / gpu.hbm_bw)
    assert pre.s_per_token == max(pre.compute_s, pre.wire_s, pre.hbm_s)
    assert pre.usd_per_m_input_tokens == pytest.approx(0.001 * pre.s_per_token * 1e6)
    assert prefill_usd_per_m_input(s) == pre.usd_per_m_input_tokens  # one function behind both names
    # the low-latency kernels would send one message per (token, expert): normal ones send fewer bytes
    assert wire_bytes_per_token(cfg, s)[1] > inter
    with pytest.raises(ValueError, match="chunk_tokens"):
        prefill_step(s, 0)


@pytest.mark.parametrize("spec", ["default", None])
def test_bound_stands_above_vllms_k3_figures(spec):
    """vLLM's K3 post, one B300 node TP8: the bound is never below a measurement, with or without speculation."""
    from k3lite.analytic.serving import Speculation
    from k3lite.analytic.serving_compare import VLLM_K3, validate_vllm_k3
    rows = validate_vllm_k3(Speculation() if spec == "default" else None)
    assert [r["concurrency"] for r in rows] == [m.concurrency for m in VLLM_K3] == [1, 4, 16]
    for r in rows:
        assert 1.0 <= r["model / measured"] < 10, r
        assert r["model tokens/s / user"] >= r["measured tokens/s / user (derived)"], r
    assert rows[0]["measured tokens/s / user (derived)"] == pytest.approx(1000 / (5.30 - 0.3763))


def test_speculation_sentence_is_the_two_steps():
    from k3lite.analytic.serving import Speculation
    from k3lite.analytic.serving_compare import speculation_sentence
    s = Serving("deepseek-v3", "H800", 16, 16, 1, FP8, 4096, spec=Speculation(1, 1.85, "mtp"))
    plain, spec = decode_step(s.with_(spec=None), 32), decode_step(s, 32)
    text = speculation_sentence(s, 32)
    assert f"{plain.tokens_per_s_per_user:.0f} -> {spec.tokens_per_s_per_user:.0f}" in text
    assert f"{plain.usd_per_m_output_tokens:.3f} -> {spec.usd_per_m_output_tokens:.3f}" in text
    assert "the MTP layer" in text and spec.tokens_per_s_per_user > plain.tokens_per_s_per_user  # 1.85 kept pays
    with pytest.raises(ValueError, match="spec set"):
        speculation_sentence(s.with_(spec=None), 32)


def test_vllm_sentence_reports_the_computed_ratios_and_the_acceptance_floor():
    from k3lite.analytic.serving import Speculation
    from k3lite.analytic.serving_compare import validate_vllm_k3, vllm_k3_sentence
    rows = validate_vllm_k3(Speculation())
    text = vllm_k3_sentence(rows, Speculation().acceptance)
    lo, hi = min(r["model / measured"] for r in rows), max(r["model / measured"] for r in rows)
    assert f"{lo:.2f}x to {hi:.2f}x" in text and "never below" in text
    floor = rows[0]["measured tokens/s / user (derived)"] * rows[0]["model step (ms)"] / 1e3
    assert f"above {floor:.2f} tokens per step" in text
    low = validate_vllm_k3(Speculation(acceptance=1.0))  # nothing kept: 9 verified tokens per step for one
    assert min(r["model / measured"] for r in low) < 1 and "BELOW" in vllm_k3_sentence(low, 1.0)
