"""The cost page's panels (k3lite.panels.cost): K3 and every compared config priced by the same serving physics, per
completed task; the sentences' words come from their numbers and their numbers are the figure's; a variant that
changes nothing on the bill says so; the moved page code (table rows, strategies, prices from the link) behaves as
the page's did."""
import re

import pytest

from k3lite.base.wording import agreeing

from k3lite.analytic.cost import PRICES, SCENARIOS, TaskProfile, analyze, single_model
from k3lite.analytic.serving.compare import physics_price
from k3lite.analytic.serving.deployment import USD_PER_GPU_HOUR
from k3lite.model.variants import COMPARISONS
from k3lite.panels.core import pair_of, where_else
from k3lite.panels.cost import (
    MODEL_COLUMNS, PARTS, cheapest_sentence, model_rows, own_prices, pair_panel, physics_cost, strategies_from,
)
from wording_check import wording_problems

UNCHANGED = ("aux-loss", "bias", "swiglu")  # same weights, same bytes: the same $ per token


def _money(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"\$(\d+\.\d+)", text)]


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_pair_panel_draws_both_on_one_axis(key):
    pair = pair_of(key)
    panel = pair_panel(pair, TaskProfile())
    data = {t.name: t for t in panel.figure.data}
    assert set(data) == {pair.k3_label, pair.label}
    for name, who in ((pair.k3_label, "k3"), (pair.label, "other")):
        assert list(data[name].x) == list(PARTS)
        total = data[name].y[-1]
        assert total == pytest.approx(panel.values[f"{who}_task"])
        assert sum(data[name].y[:-1]) == pytest.approx(total)  # the parts add up to the task
    # the first sentence prints each config's $ per task: the figure's last bar, to the decimals that make the printed
    # values imply the printed ratio (wording.agreeing, 3 at least)
    printed = _money(panel.sentences[0].text)[:2]
    shown = [float(v) for v in agreeing(panel.values["k3_task"], panel.values["other_task"], 1 if max(
        panel.values["k3_task"], panel.values["other_task"]) >= 1.1 * min(panel.values["k3_task"],
                                                                         panel.values["other_task"]) else 2)]
    assert printed == shown
    assert all(abs(p - v) <= 0.0005 for p, v in zip(printed, (panel.values["k3_task"], panel.values["other_task"])))
    assert "assumed the same for both" in panel.sentences[0].text


@pytest.mark.parametrize("key", [k for k in COMPARISONS if k not in UNCHANGED and k != "standard-residual"])
def test_pair_panel_says_what_drives_it(key):
    panel = pair_panel(pair_of(key), TaskProfile())
    why = panel.sentences[1].text
    assert why.startswith("What drives it: the ")
    v = panel.values
    out = re.search(r"output token costs \$(\d+\.\d+) vs \$(\d+\.\d+) per M", why)
    assert (float(out[1]), float(out[2])) == (round(v["k3_out_per_m"], 3), round(v["other_out_per_m"], 3))
    parts = {t.name: list(t.y) for t in panel.figure.data}  # the per-task parts it quotes are the bars'
    inputs = [round(y[0] + y[1], 3) for y in parts.values()]
    assert f"input tokens (${inputs[0]:.3f} vs ${inputs[1]:.3f} per task)" in why or f"(${inputs[0]:.3f} vs ${inputs[1]:.3f})." in why
    gb = re.search(r"reads (\d+\.\d+) vs (\d+\.\d+) GB", why)
    assert (float(gb[1]), float(gb[2])) == (round(v["k3_gb_per_token"], 2), round(v["other_gb_per_token"], 2))
    assert f"{v['k3_batch']} vs {v['other_batch']} sequences per GPU" in why


@pytest.mark.parametrize("key", UNCHANGED)
def test_a_variant_that_changes_nothing_says_so(key):
    pair = pair_of(key)
    panel = pair_panel(pair, TaskProfile())
    assert panel.values["k3_task"] == panel.values["other_task"]
    assert "changes nothing here" in panel.text and "either way" in panel.text
    assert pair.comparison.instead in panel.text and where_else(pair, "cost_per_task") in panel.text
    assert "Stable LatentMoE & routing page" in panel.text


def test_the_standard_residual_moves_the_bill_by_a_computed_sliver():
    panel = pair_panel(pair_of("standard-residual"), TaskProfile())
    v = panel.values
    pct = float(re.search(r"by (\d+\.\d+)%", panel.text)[1])
    assert pct == round(100 * abs(v["k3_task"] - v["other_task"]) / v["k3_task"], 3)
    assert "the Attention Residuals and Interconnect bytes per token pages" in panel.text


def test_pair_panel_words_come_from_the_numbers():
    grid = [dict(pair=pair_of(k), profile=TaskProfile(success_rate=s, cache_hit_rate=h, output_tokens_per_turn=o))
            for k in COMPARISONS for s in (0.3, 0.8) for h in (0.0, 0.9) for o in (100.0, 5000.0)]
    # a fixed phrase, not a comparison: what would move the assumed-equal task
    assert wording_problems(pair_panel, grid, allowed=("needs more turns or fails more often",)) == []


def test_a_reader_price_moves_both_configs_alike():
    """The shared price table's $ per GPU-hour prices both configs: doubling it doubles both, the ratio stays."""
    pair = pair_of("deepseek-v3")
    base = pair_panel(pair, TaskProfile()).values
    gpu = "GB300 NVL72"
    dear = pair_panel(pair, TaskProfile(), ((gpu, 2 * USD_PER_GPU_HOUR[gpu][0]),)).values
    assert dear["k3_task"] == pytest.approx(2 * base["k3_task"])
    assert dear["other_task"] / dear["k3_task"] == pytest.approx(base["other_task"] / base["k3_task"])


def test_k3_priced_here_is_the_pages_serving_physics_row():
    """The pair's K3 is priced as the page's own serving-physics row (compare.physics_price)."""
    mine, row = physics_cost(pair_of("kimi-k2").k3).price, physics_price()
    assert (mine.input_per_m, mine.output_per_m) == pytest.approx((row.input_per_m, row.output_per_m))


def test_variant_configs_count_as_the_page_relies_on():
    """MLA everywhere has no KDA layer and K3's experts; the classic MoE has half the experts; the balancing and
    activation variants keep K3's shapes (so the same bytes)."""
    k3 = pair_of("all-mla").k3
    assert "kda" not in [str(t).lower() for t in pair_of("all-mla").other.layer_types()]
    assert pair_of("all-mla").other.moe == k3.moe
    assert pair_of("no-latent").other.moe.n_routed_experts == k3.moe.n_routed_experts // (k3.d_model // k3.moe.latent_dim)
    for key in UNCHANGED:
        other = pair_of(key).other
        assert (other.n_layers, other.d_model, other.moe.n_routed_experts, other.moe.top_k) == \
               (k3.n_layers, k3.d_model, k3.moe.n_routed_experts, k3.moe.top_k)


def test_table_rows_round_trip_to_the_strategies():
    """The per-model table (marked column names, as the editor returns them) prices the same strategies the page
    priced before the move: each model's list price, success and turns from the scenario."""
    listed = {k: p for k, p in PRICES.items() if k != "small-worker"}
    scenario = SCENARIOS["article"]
    rows = model_rows(listed, scenario, 20, 0.8)
    marked = [{(k if k == "model" else f"{k} ᵃ"): v for k, v in r.items()} for r in rows]
    profile = TaskProfile()
    for table in (rows, marked):
        got = strategies_from(table, profile)
        assert [s.segments[0].model.output_per_m for s in got] == [p.output_per_m for p in listed.values()]
        assert got[2].profile.success_rate == pytest.approx(scenario.success["deepseek-v3"])
        assert got[2].profile.turns == pytest.approx(20 * scenario.turns_factor["deepseek-v3"])
    assert set(MODEL_COLUMNS) <= set(rows[0])
    text = cheapest_sentence("article", scenario, list(listed), strategies_from(rows, profile))
    costs = {s.name: analyze(s).per_completed_task for s in strategies_from(rows, profile)}
    assert f"K3 ${costs['Kimi K3']:.2f}" in text and "planning" in text


def test_own_prices_keeps_only_the_readers_valid_prices():
    default = USD_PER_GPU_HOUR["B300"][0]
    assert own_prices({"B300": str(default), "H200": "abc", "H800": None, "B200": "-1"}) == ()
    assert own_prices({"H200": "3.5", "B300": 9}) == (("B300", 9.0), ("H200", 3.5))


def test_the_equal_scenario_prices_k3_like_the_library():
    rows = model_rows({"kimi-k3": PRICES["kimi-k3"]}, SCENARIOS["equal"], 20, 0.8)
    (s,) = strategies_from(rows, TaskProfile())
    assert analyze(s).per_completed_task == pytest.approx(
        analyze(single_model(PRICES["kimi-k3"], TaskProfile())).per_completed_task)
