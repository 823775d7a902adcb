"""The serving page's panels (k3lite/panels/serving*.py): the frontier with every comparison on the same axes, the
sentences' comparison words, the numbers the sentences print against the figures and values they came from, and the
variant configs the "changes nothing here" sentences rely on."""
import re

import pytest

from k3lite.analytic import memory
from k3lite.analytic.serving import K3_PRESET
from k3lite.analytic.serving.frontier import FRONTIER_CACHES, FRONTIER_TP, RELEASED, cheapest_at, verdict
from k3lite.analytic.serving.price import DEFAULT_SHAPE, Shape
from k3lite.model.presets import get_preset
from k3lite.model.variants import COMPARISONS, comparison_config
from k3lite.panels import serving as P
from k3lite.panels import serving_sections as S
from k3lite.panels.core import pair_of, where_else
from k3lite.viz.style import fmt_bytes
from wording_check import wording_problems

SEARCH = ((RELEASED,), FRONTIER_TP, FRONTIER_CACHES, P.FRONTIER_GPUS)
NOTHING_HERE = ("aux-loss", "bias", "swiglu")  # the same bytes and FLOPs per token as K3


def _shape(context: int) -> Shape:
    """A request whose decode reads `context` tokens on average (1,024 out); the page's shape when None."""
    return DEFAULT_SHAPE if context is None else Shape(context - 512, 1024)


def _view(vs=None, preset=K3_PRESET, speed=50.0, context=None, bound=False, prices=None):
    pair = None if vs is None else pair_of(vs, preset)
    return P.frontier_view(preset, _shape(context), prices or {}, None, bound, SEARCH, speed, pair), pair


def _usd(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"\$(\d+\.\d+)", text)]


@pytest.mark.parametrize("vs", list(COMPARISONS))
def test_the_frontier_draws_k3_and_the_compared_model_on_one_figure(vs):
    view, pair = _view(vs)
    names = [t.name for t in view.panel.figure.data]
    assert f"{pair.label}: cheapest of all" in names and f"{pair.k3_label}: cheapest of all" in names
    other = next(t for t in view.panel.figure.data if t.name == f"{pair.label}: cheapest at that speed")
    first = view.panel.sentences[1].text  # the verdict, then the difference
    k3_usd, other_usd = _usd(first)[:2]
    assert k3_usd == round(view.panel.values["k3_usd"], 3) == round(view.verdict.winner.usd_per_m, 3)
    assert other_usd == round(view.panel.values["other_usd"], 3) == round(other.y[0], 3)  # the figure's point


@pytest.mark.parametrize("vs", ["deepseek-v3", "all-mla", "no-latent"])
def test_what_drives_the_difference_prints_the_values_it_came_from(vs):
    view, pair = _view(vs)
    v, drives = view.panel.values, view.panel.sentences[2].text
    assert drives.startswith("What drives it")
    for key in ("k3_bytes", "other_bytes", "k3_cache", "other_cache", "k3_weights", "other_weights"):
        assert fmt_bytes(v[key]) in drives
    assert f"{v['other_fit']:,} vs {v['k3_fit']:,} sequences fit per GPU" in drives
    assert f"{v['other_setups']} vs {v['k3_setups']} of the searched setups" in drives


@pytest.mark.parametrize("vs", NOTHING_HERE)
def test_a_comparison_that_changes_nothing_here_says_so_and_where_it_shows(vs):
    view, pair = _view(vs)
    v = view.panel.values
    assert v["k3_usd"] == v["other_usd"] and v["k3_bytes"] == v["other_bytes"] and v["k3_cache"] == v["other_cache"]
    text = view.panel.text
    assert "is the same price" in text and "It changes nothing here" in text and " page " in text


def test_the_compared_model_that_reaches_no_setup_at_the_speed_is_said_so():
    view, _ = _view("all-mla", speed=400.0)
    assert "reaches no 400 tokens/s per user" in view.panel.text


def _frontier_text(vs, preset, speed, context):
    return _view(vs, preset, speed, context)[0].panel.text


def test_frontier_sentences_choose_their_comparison_words_from_the_numbers():
    grid = [dict(vs=vs, preset=preset, speed=speed, context=32768) for vs in COMPARISONS
            for preset in (K3_PRESET, "deepseek-v3") for speed in (20.0, 50.0, 150.0)]
    grid += [dict(vs=vs, preset=K3_PRESET, speed=50.0, context=131072) for vs in ("deepseek-v3", "all-mla")]
    assert wording_problems(_frontier_text, grid, allowed=("(lower right is better)",)) == []


def test_with_no_comparison_the_frontier_is_the_page_as_before():
    """The verdict, then how far its answer sits from the published runs (serving_envelope.verdict_said)."""
    from k3lite.panels.serving_envelope import verdict_said
    view, _ = _view(None)
    first, *envelope = view.panel.sentences
    assert first.text.split(".")[0] == "**Predicted" and view.verdict.sentence in first.text
    assert [s.text for s in envelope] == [s.text for s in verdict_said(view.frontier, view.verdict.winner, 50.0)]
    assert envelope and "published runs" in envelope[0].text
    assert "cheapest of all" in [t.name for t in view.panel.figure.data]


def test_variant_configs_count_as_the_comparison_relies_on():
    k3 = get_preset(K3_PRESET)
    mla = comparison_config("all-mla")
    assert mla.layer_types().count("kda") == 0 and k3.layer_types().count("kda") > 0
    assert mla.moe == k3.moe  # the same experts: only attention differs
    classic = comparison_config("no-latent")
    assert classic.moe.latent_dim == 0 and classic.moe.n_routed_experts < k3.moe.n_routed_experts
    for vs in NOTHING_HERE:  # the same weight bytes, component by component
        assert memory.weight_bytes(comparison_config(vs), "bf16") == memory.weight_bytes(k3, "bf16"), vs


def test_the_deployment_sentence_prints_its_steps():
    d = P.deployment(K3_PRESET, "GB300 NVL72", 64, 64, 1, "mxfp4", "bf16", 32768, True, {}, None)
    panel = P.deployment_panel(d)
    p, b = d.price, d.bound_price  # one request of the page's shape at the deployment's batch (price.request_price)
    assert _usd(panel.text) == [round(x, 3) for x in (p.usd_per_m, p.usd_per_m_input, p.usd_per_m_output, b.usd_per_m)]
    assert p.concurrency == d.batch * 64 and p.prefill_gpu_s > 0  # the prefill is in it
    bad = P.deployment(K3_PRESET, "H100 SXM", 8, 8, 1, "bf16", "bf16", 32768, True, {}, None)
    assert bad.step is None and "does not fit" in bad.error


def test_the_assumptions_headline_is_the_verdicts_price():
    view, _ = _view(None)
    block = P.page_assumptions(view, K3_PRESET, DEFAULT_SHAPE, {}, None, SEARCH, 50.0)
    assert block.headline(**{a.key: a.value for a in block.assumptions}) == pytest.approx(
        verdict(view.predicted, 50.0).winner.usd_per_m)
    assert {a.key for a in block.assumptions} >= {"usd_per_gpu_hour", "input_len", "hbm_fraction", "layer_s"}


def test_the_sections_print_what_they_computed():
    d = P.deployment(K3_PRESET, "GB300 NVL72", 64, 64, 1, "mxfp4", "bf16", 32768, True, {}, None)
    place = S.placement(d)
    claim = next(i for i in place if isinstance(i, P.Panel) and i.sentences)
    assert f"as released (MXFP4 experts, bf16 rest) {claim.values['released_b300']:.2f}" in claim.text
    fall = S.choices(32768)[0]
    assert all(f"{label}: ${usd:.3f}" in fall.text for label, usd in fall.values.items())
    bars = list(fall.figure.data[0].y)  # the first bar, each step's change, K3's total: the sentence's numbers
    usd = list(fall.values.values())
    assert bars[0] == usd[0] and bars[-1] == usd[-1] and sum(bars[:-1]) == pytest.approx(usd[-1])
    ratio = S.prefill(d, 32, 16384)[0]
    assert ratio.figure.data[0].y[0] == ratio.values["ratio"]
    checks = next(i for i in S.published(32768, 3.3) if isinstance(i, P.Panel) and i.values)
    assert f"lands {checks.values['lo']:.2f}x to {checks.values['hi']:.2f}x" in checks.text
    step = S.decode(d)
    assert step[0][3].value == f"${d.step.usd_per_m_output_tokens:.3f}"
    t, error = S.target(d, 30.0, 5000, 8192, 1024)
    assert not error and S.target_section(d, t)[0][2].value == f"{t.replicas:,}"


def test_the_compared_frontier_is_the_same_search_of_the_other_config():
    view, pair = _view("deepseek-v3")
    other = P.page_frontier(K3_PRESET, DEFAULT_SHAPE, (), None, "predicted", SEARCH, "deepseek-v3")
    assert other.preset == "deepseek-v3"
    assert cheapest_at(other.setups, 50.0).usd_per_m == view.panel.values["other_usd"]


def test_the_compared_model_speculates_with_its_own_drafter():
    from k3lite.analytic.serving import Speculation  # here: only these checks build a speculation
    from k3lite.panels.serving_compare import compared_spec  # (the reason above)

    dspark = Speculation()
    assert compared_spec(pair_of("deepseek-v3"), dspark).drafter == "mtp"  # DeepSeek-V3 ships its MTP layer
    assert compared_spec(pair_of("all-mla"), dspark) == dspark  # K3 without one idea: the page's own drafter
    mtp = compared_spec(pair_of("all-mla", "deepseek-v3"), Speculation(1, 1.85, "mtp"))
    assert mtp.drafter == "draft-model"  # a variant ships no MTP layer of its own
    assert compared_spec(pair_of("kimi-k2"), None) is None


@pytest.mark.parametrize("query", [
    {"vs": "all-mla", "sv_preset": "deepseek-v3", "sv_spec": "true"},
    {"vs": "kimi-k2", "sv_bound": "true", "sv_context": "131072"},
    {"vs": "no-latent", "sv_speed": "400"},  # no setup reaches it: the page says so, for both
])
def test_the_page_opens_compared_with_speculation_the_bound_and_an_unreachable_speed(query):
    from streamlit.testing.v1 import AppTest  # here: the one page-level check in this file

    from conftest import ROOT

    at = AppTest.from_file(str(ROOT / "views" / "serving.py"), default_timeout=300)
    at.query_params.update(query)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    text = " ".join(c.value for c in at.caption).replace("\\$", "$")
    assert "the same search and prices" in text or "reaches no" in text


@pytest.mark.parametrize("preset, vs", [("deepseek-v3", "deepseek-v3"), ("deepseek-v3", "all-mla"),
                                        ("kimi-linear-48b-a3b", "no-latent")])
def test_a_comparison_with_the_page_model_itself_says_it_is_one_config(preset, vs):
    """DeepSeek-V3 beside DeepSeek-V3, or a model without an idea it never had (all MLA already, no latent): one
    config twice, said so (it had said 'changes nothing here' and sent the reader to another page)."""
    view, pair = _view(vs, preset)
    assert view.panel.values["k3_usd"] == view.panel.values["other_usd"]
    assert f"{pair.label} is the same config as {pair.k3_label}" in view.panel.text
    assert "changes nothing here" not in view.panel.text


def test_where_a_comparison_shows_names_pages_that_exist():
    """SwiGLU had been sent to the Forward pass page; SiTU-GLU beside SwiGLU is drawn on the routing page. (Every
    comparison's pages against the registry: tests/model/test_cards.py.)"""
    assert COMPARISONS["swiglu"].shows_on == ("moe",)
    assert where_else(pair_of("swiglu"), "serving").startswith("its difference shows on the Stable LatentMoE & routing page")


# ------------------------------------------------------------------------------------------ your own GPU, formats
def test_your_gpu_is_searched_beside_the_table_and_named_in_words():
    from k3lite.analytic.hardware import CUSTOM_DEFAULTS, custom_gpu_name, custom_or_none
    mine, err = custom_or_none({**CUSTOM_DEFAULTS, "hbm_tb_s": 16.0}, True)
    assert err == "" and mine == custom_gpu_name(**{**CUSTOM_DEFAULTS, "hbm_tb_s": 16.0})
    assert custom_or_none(CUSTOM_DEFAULTS, False) == (None, "")
    assert "HBM bandwidth" in custom_or_none({**CUSTOM_DEFAULTS, "hbm_tb_s": 0.0}, True)[1]
    search = P.search(["released"], ["1", "8"], ["bf16"], mine)
    assert search[3][-1] == mine and P.gpu_choices(mine)[-1] == mine
    view = P.frontier_view(K3_PRESET, DEFAULT_SHAPE, {}, None, False, search, 50.0)
    assert mine in view.frontier.by_gpu
    rows = next(i for i in P.per_gpu(view.frontier, search, 50.0, None, K3_PRESET) if isinstance(i, P.Table)).rows
    assert rows[-1]["GPU"] == "custom GPU (179 GiB, 16 TB/s)" and rows[-1]["price is"].startswith("yours")
    d = P.deployment(K3_PRESET, mine, 64, 64, 1, "mxfp4", "bf16", 32768, True, {}, None)
    assert d.error == "" and "custom GPU (179 GiB, 16 TB/s)" in P.deployment_panel(d).text


def test_the_format_line_prices_each_format_with_the_headline():
    from k3lite.analytic.serving.frontier import FRONTIER_FORMATS, cheapest_usd_per_m
    text = P.format_swing(K3_PRESET, (), None, "B200", SEARCH, 50.0)
    for f in FRONTIER_FORMATS:
        usd = cheapest_usd_per_m(K3_PRESET, {}, None, speed=50.0, formats=(f,), tps=SEARCH[1], caches=SEARCH[2])
        assert f"{f}: ${usd:.3f}" in text
    fp8 = cheapest_usd_per_m(K3_PRESET, {}, None, speed=50.0, formats=SEARCH[0], tps=SEARCH[1], caches=("fp8",))
    assert f"fp8: ${fp8:.3f}" in text


def test_your_providers_are_points_against_the_frontier_with_a_sentence_each():
    """A provider the reader types (name, $ per M output, speed) is drawn at its speed and compared with the
    cheapest self-hosted setup that fast; a row out of range is named and left out, the rest still drawn."""
    from k3lite.analytic.serving.frontier import cheapest_at
    from k3lite.panels import serving_sections as S

    rows = [{"provider": "FastCo", "$ / M input ᵃ": 4.0, "$ / M output ᵃ": 20.0, "speed (tok/s per user) ᵃ": 80.0},
            {"provider": "SlowCo", "$ / M output ᵃ": 2.0, "speed (tok/s per user) ᵃ": 15.0},
            {"provider": "Broken", "$ / M output ᵃ": -1.0, "speed (tok/s per user) ᵃ": 30.0},
            {"provider": "provider 3", "$ / M output ᵃ": None, "speed (tok/s per user) ᵃ": None}]
    yours, bad = S.your_providers(rows)
    assert [p.name for p in yours] == ["FastCo", "SlowCo"] and "Broken" in bad and "(0, 10000)" in bad
    assert all(p.evidence.kind == "assumed" for p in yours)
    fr = P.page_frontier(K3_PRESET, DEFAULT_SHAPE, (), None, "predicted", SEARCH)
    items = S.providers(fr, cheapest_at(fr.setups, 50.0), 50.0, yours, bad)
    fig = next(i.figure for i in items if isinstance(i, P.Panel) and i.figure is not None)
    points = {t.name: (t.x[0], t.y[0]) for t in fig.data if t.mode == "markers+text"}
    blend = {"FastCo": (8192 * 4.0 + 1024 * 20.0) / 9216, "SlowCo": 1024 * 2.0 / 9216}  # at the page's shape
    assert points == {"FastCo": (80.0, blend["FastCo"]), "SlowCo": (15.0, blend["SlowCo"])}
    text = " ".join(s.text for i in items if isinstance(i, P.Panel) for s in i.sentences)
    fast = cheapest_at(fr.setups, 80.0)
    if fast is None:
        assert (f"FastCo sells at 80 tokens/s per user for ${blend['FastCo']:.3f} per M tokens at 8,192 in / 1,024 out "
                "($4.00 in, $20.00 out): no self-hosted setup") in text
    else:
        assert f"the cheapest self-hosted setup that fast (${fast.usd_per_m:.3f}: " in text
    slow = cheapest_at(fr.setups, 15.0)
    word = "above" if blend["SlowCo"] > slow.usd_per_m else "below"
    assert (f"SlowCo sells at 15 tokens/s per user for ${blend['SlowCo']:.3f} per M tokens at 8,192 in / 1,024 out "
            "($0.00 in, $2.00 out), ") in text and word in text
    assert any(isinstance(i, P.Note) and "Broken" in i.text for i in items)
