"""What each design choice buys and the published checks (k3lite/analytic/serving/compare.py): the waterfall, the
bound against every published serving figure, the sentences built from them, and the pages that show them."""

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.analytic import memory
from k3lite.model.presets import get_preset
from k3lite.analytic.serving import (
    K3_PRESET, Serving, check_fits, decode_step,
)
from k3lite.analytic.serving.compare import FP8, classic_variant, gpus_for_weights, physics_price, waterfall
from k3lite.analytic.serving.published import PUBLISHED, validate
from k3lite.analytic.serving.frontier import (
    cheapest_at, frontier,
)



def test_six_b300_needs_four_bit():
    rows = {r.fmt: r for r in gpus_for_weights("kimi-k3", "B300")}
    # 288 GiB each: NVFP4 (scales 1/16 byte) just over five B300s, MXFP4 (1/32) just under
    assert rows["nvfp4"].whole_gpus == 6 and rows["mxfp4"].whole_gpus == 5
    assert rows["fp8"].whole_gpus == 9 and rows["bf16"].whole_gpus == 18


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
    # the cost page's physics row is the one request price (price.price_at_speed) on the same node, not the decode
    # step alone: its output part is the decode's GPU-seconds, its input part the prefill's, at the page's shape
    from k3lite.analytic.serving.compare import SUPER_NODE
    from k3lite.analytic.serving.deployment import MIN_TOKENS_PER_USER
    from k3lite.analytic.serving.price import DEFAULT_SHAPE, price_at_speed
    one = price_at_speed(Serving(**SUPER_NODE), DEFAULT_SHAPE, MIN_TOKENS_PER_USER, "bound")
    phys = physics_price()
    assert (phys.input_per_m, phys.output_per_m) == (one.usd_per_m_input, one.usd_per_m_output)
    assert phys.input_per_m > 0 and one.prefill_gpu_s > 0


def test_waterfall_caption_names_the_largest_step_either_way():
    """The caption's "the biggest step is" picked the largest saving; at 4K that named '+ 4-bit experts'
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


@pytest.mark.parametrize("spec", ["default", None])
def test_bound_stands_above_vllms_k3_figures(spec):
    """vLLM's K3 post, one B300 node TP8: the bound is never below a measurement, with or without speculation."""
    from k3lite.analytic.serving import Speculation
    from k3lite.analytic.serving.published import VLLM_K3, validate_vllm_k3
    rows = validate_vllm_k3(Speculation() if spec == "default" else None)
    assert [r["concurrency"] for r in rows] == [m.concurrency for m in VLLM_K3] == [1, 4, 16]
    for r in rows:
        assert 1.0 <= r["model / measured"] < 10, r
        assert r["model tokens/s / user"] >= r["measured tokens/s / user (derived)"], r
    assert rows[0]["measured tokens/s / user (derived)"] == pytest.approx(1000 / (5.30 - 0.3763))


def test_speculation_sentence_is_the_two_steps():
    from k3lite.analytic.serving import Speculation
    from k3lite.analytic.serving.compare import speculation_sentence
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
    from k3lite.analytic.serving.published import validate_vllm_k3, vllm_k3_sentence
    rows = validate_vllm_k3(Speculation())
    text = vllm_k3_sentence(rows, Speculation().acceptance)
    lo, hi = min(r["model / measured"] for r in rows), max(r["model / measured"] for r in rows)
    assert f"{lo:.2f}x to {hi:.2f}x" in text and "never below" in text
    floor = rows[0]["measured tokens/s / user (derived)"] * rows[0]["model step (ms)"] / 1e3
    assert f"above {floor:.2f} tokens per step" in text
    low = validate_vllm_k3(Speculation(acceptance=1.0))  # nothing kept: 9 verified tokens per step for one
    assert min(r["model / measured"] for r in low) < 1 and "BELOW" in vllm_k3_sentence(low, 1.0)


@pytest.fixture(scope="module")
def k3():
    return frontier(K3_PRESET)


# ------------------------------------------------------------------------------------------ into the cost page
def test_frontier_prices_are_the_frontier_points_request_prices(k3):
    """The cost page's two serving points are frontier points, input and output as their request price splits it
    (price.request_price: the prefill on the same GPUs), not a decode point with a separate prefill pool."""
    from k3lite.analytic.serving import MIN_TOKENS_PER_USER
    from k3lite.analytic.serving.compare import FAST_TOKENS_PER_USER, frontier_prices
    prices = frontier_prices(K3_PRESET)
    tp1 = [u for u in k3.setups if u.tp == 1]  # the cost page's points: data-parallel attention
    for speed, price in prices.items():
        w = cheapest_at(tp1, speed)
        assert (price.input_per_m, price.output_per_m) == (w.usd_per_m_input, w.usd_per_m_output)
        assert w.label in price.source
    assert prices[FAST_TOKENS_PER_USER].output_per_m > prices[MIN_TOKENS_PER_USER].output_per_m  # fast is pricier


def test_task_vs_token_ranking_can_flip():
    from k3lite.analytic.cost import ModelPrice, TaskProfile, analyze, planner_worker
    from k3lite.analytic.serving.compare import task_vs_token_ranking
    profile, worker = TaskProfile(), ModelPrice("w", 0.1, 0.4)
    slow, fast = ModelPrice("slow", 1.0, 1.0), ModelPrice("fast", 0.1, 2.0)  # fast: dearer output, cheaper input
    per_token, per_task, text = task_vs_token_ranking(slow, fast, worker, profile, 0.5, 0.98, 0.8)
    tasks = [analyze(planner_worker(m, worker, profile, 0.5, 0.98, 0.8)).per_completed_task for m in (slow, fast)]
    assert per_token == 2.0 and per_task == pytest.approx(tasks[1] / tasks[0])
    assert per_task < 1 and "the ranking flips" in text  # input dominates: the dearer-per-token point is cheaper per task
    _, per_task_same, same = task_vs_token_ranking(slow, ModelPrice("fast", 1.0, 2.0), worker, profile, 0.5, 0.98, 0.8)
    assert per_task_same > 1 and "the same ranking" in same and "gap shrinks" in same


def test_task_vs_token_ranking_labels_every_pair_fast_then_slow():
    """Each pair of dollar figures is printed fast first and says so: the sentence printed the task costs fast vs
    slow and the input and output costs slow vs fast, unlabelled."""
    from k3lite.analytic.cost import ModelPrice, TaskProfile, analyze, planner_worker
    from k3lite.analytic.serving.compare import task_vs_token_ranking
    profile, worker = TaskProfile(), ModelPrice("w", 0.1, 0.4)
    slow, fast = ModelPrice("slow", 0.086, 1.0), ModelPrice("fast", 0.071, 3.86)
    _, _, text = task_vs_token_ranking(slow, fast, worker, profile, 0.075, 0.98, 0.8)
    tasks = [analyze(planner_worker(m, worker, profile, 0.075, 0.98, 0.8)) for m in (fast, slow)]
    assert f"fast ${fast.output_per_m:.3f} vs slow ${slow.output_per_m:.3f}" in text
    assert f"fast ${tasks[0].per_completed_task:.4f} vs slow ${tasks[1].per_completed_task:.4f}" in text
    assert f"fast ${fast.input_per_m:.3f} vs slow ${slow.input_per_m:.3f}" in text
    assert f"fast ${tasks[0].output_cost:.4f} vs slow ${tasks[1].output_cost:.4f}" in text


def test_cost_page_prices_the_split_at_a_frontier_point():
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    from k3lite.analytic.cost import TaskProfile, analyze, single_model
    from k3lite.analytic.serving.compare import FAST_TOKENS_PER_USER, frontier_prices
    at = AppTest.from_file(str(ROOT / "views" / "cost_per_task.py"), default_timeout=180)
    at.query_params["cost_planner_at"] = "fast"
    at.run()
    assert not at.exception and not at.error
    fast = frontier_prices()[FAST_TOKENS_PER_USER]
    alone = analyze(single_model(fast, TaskProfile())).per_completed_task  # the page's defaults are TaskProfile's
    # the label ends with its evidence marker (views.common.metric)
    assert next(m.value for m in at.metric if m.label.startswith("K3 alone")) == f"${alone:.3f} / task"
    assert any("Priced at the frontier" in c.value for c in at.caption)


def test_kimi_k2_row_uses_the_blogs_own_per_node_figure():
    """The K2 blog's comparison table: 24k decode tokens/s per node, 3,000 per GPU (not 384k / 96 = 4,000)."""
    k2 = next(p for p in PUBLISHED if p.serving.name == "kimi-k2")
    assert k2.measured_tokens_per_s_per_gpu == 24_000 / 8 == 3_000
    assert "24k" in k2.source and "4,000" in k2.source  # the other reading is named, not hidden
    row = next(r for r in validate() if r["deployment"] == k2.label)
    assert row["model / measured"] == pytest.approx(row["model tokens/s / GPU"] / 3_000)


@pytest.mark.parametrize("preset", ["kimi-k3", "kimi-k2", "deepseek-v3"])
def test_price_verdict_reads_the_served_models_own_sticker(preset):
    """The verdict compares serving physics with the SERVED model's list price, not always K3's."""
    from k3lite.analytic.cost import PRICES
    from k3lite.analytic.serving import prefill_step
    from k3lite.analytic.serving.compare import price_split_sentence
    s = Serving(preset, "GB300 NVL72", 64, 64, 1, FP8, 32768)
    dec, pre = decode_step(s, 8), prefill_step(s.with_(n_gpus=32, ep=32), 16384)
    ratio, listed, text = price_split_sentence(dec, pre, "32 x GB300 NVL72", preset)
    own = PRICES[preset]
    sticker = own.output_per_m / own.input_per_m
    assert f"against {sticker:.1f}x on {own.name}'s own sticker" in text
    assert f"{own.name}'s sticker charges output {'more' if sticker > ratio else 'less'} steeply" in text
    if preset != "kimi-k3":
        assert "K3's sticker" not in text and "Kimi K3's own sticker" not in text


def test_price_verdict_says_when_the_model_has_no_sticker():
    from k3lite.analytic.serving import prefill_step
    from k3lite.analytic.serving.compare import price_split_sentence
    s = Serving("kimi-linear-48b-a3b", "H200", 8, 8, 1, FP8, 32768)
    _, _, text = price_split_sentence(decode_step(s, 4), prefill_step(s, 16384), "8 x H200", "kimi-linear-48b-a3b")
    assert "kimi-linear-48b-a3b has no sticker price in this app" in text and "own sticker" not in text
