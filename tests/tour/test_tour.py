"""The guided tour: its revealed numbers are the ones the deeper pages show at their defaults; the gap is
stated honestly; step, guesses and reveals survive a copied link; it runs end to end (AppTest)."""
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.tour.steps import STEPS, Reveal, gap_text
from views.registry import PAGES

TIMEOUT = 180
pytestmark = pytest.mark.usefixtures("full_error_details")
BY_KEY = {s.key: s for s in STEPS}


def page(path: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / path), default_timeout=TIMEOUT)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run()


def metric(at: AppTest, label_start: str) -> str:
    found = [m.value for m in at.metric if m.label.startswith(label_start)]
    assert found, f"no metric starting {label_start!r}: {[m.label for m in at.metric]}"
    return found[0]


def test_every_step_links_to_a_registered_page_and_asks_something_answerable():
    urls = {p.url_path for p in PAGES}
    assert len(STEPS) >= 7
    for s in STEPS:
        assert s.page in urls, s.key
        assert s.kind in ("number", "choice")
        if s.kind == "number":
            assert s.lo <= s.default <= s.hi
        else:
            assert len(s.choices) >= 2


def test_gap_says_how_far_and_which_way():
    num = BY_KEY["residuals"]
    r = Reveal(20.0, "20.0x fewer reads", "", {})
    assert "4.0x too low" in gap_text(num, 5.0, r)
    assert "2.0x too high" in gap_text(num, 40.0, r)
    assert gap_text(num, 22.0, r).startswith("Close")
    ch = BY_KEY["latent"]
    assert gap_text(BY_KEY["serving"], 2.0, Reveal(0.5, "$0.500 per M", "", {})).startswith("You guessed $2;")
    assert gap_text(ch, ch.choices[0], Reveal(0, "", "", {})).startswith("Right")
    assert "the computation says 'they halve'" in gap_text(ch, "they double", Reveal(0, "", "", {}))


def test_revealed_numbers_are_what_the_deeper_pages_show_at_their_defaults():
    hybrid = BY_KEY["hybrid"].compute()
    assert metric(page("views/hybrid_attention.py"), "KV reduction at 1M").startswith(f"{hybrid.answer:.1f}%")
    cost = BY_KEY["cost"].compute()
    assert metric(page("views/cost_per_task.py"), "split is cheaper by") == f"{cost.answer:.1f}x"
    res = BY_KEY["residuals"].compute()
    text = " ".join(m.value for m in page("views/attention_residuals.py").markdown)
    assert f"{res.answer:.1f}x fewer reads" in text
    serving = BY_KEY["serving"].compute()
    assert metric(page("views/serving.py"), "$ per M output tokens") == f"${serving.answer:.3f}"
    sparsity = BY_KEY["sparsity"].compute()
    assert metric(page("views/home.py"), "activation ratio") == f"{sparsity.answer:.2f} %"
    balance = BY_KEY["balancing"].compute()  # the MoE page's headline is quantile's held-out max-violation
    quantile = float(balance.details["busiest / average, quantile"]) - 1
    small = {"moe_experts": "64", "moe_top_k": "8", "moe_latent": "1/4"}  # the step's setting (the page opens at K3's)
    assert metric(page("views/moe.py", small), "max-violation") == f"{quantile:.2f}"
    assert balance.answer - 1 == pytest.approx(float(metric(page("views/moe.py", {**small, "moe_balancing": "none"}),
                                                           "max-violation")), abs=0.006)


def test_hybrid_step_sets_each_speedup_against_its_own_reported_figure():
    """Step 5 compared our batch-1 speedup with the report's theoretical 6.3x ("far below")."""
    from k3lite.analytic.hybrid import batch_limited_speedup, reference_gpu, speedup_vs_full_mla
    gpu = reference_gpu()
    r = BY_KEY["hybrid"].compute()
    one, filled = speedup_vs_full_mla(3, 1 << 20, hardware=gpu), batch_limited_speedup(3, 1 << 20, hardware=gpu)
    assert r.details["decode speedup at 1M, batch 1: ours vs reported"] == f"{one:.2f}x vs 2.3x"
    assert r.details["throughput at the batch HBM allows: ours vs reported (theoretical)"] == f"{filled:.2f}x vs 6.3x"
    assert f"{one:.2f}x, above the reported 2.3x at batch 1" in r.explanation
    assert "theoretical" in r.explanation


def test_hybrid_step_quotes_the_hybrid_pages_gpu_and_number():
    """The tour modelled 2 x H100 SXM (3.30x) while the hybrid page opens on one H200 (3.22x) and the tour sent the
    reader there for the batches: one quantity, two values. Both now come from reference_gpu()."""
    from k3lite.analytic.hybrid import reference_gpu
    r = BY_KEY["hybrid"].compute()
    shown = metric(page("views/hybrid_attention.py"), "throughput gain at 1M")
    ours = r.details["throughput at the batch HBM allows: ours vs reported (theoretical)"].split(" vs ")[0]
    assert shown.split(" vs ")[0] == ours
    assert reference_gpu() in r.explanation and "throughput" in r.explanation


def test_latent_and_decay_answers_follow_their_numbers():
    lat = BY_KEY["latent"].compute()
    assert BY_KEY["latent"].choices[int(lat.answer)] == "they halve"  # wire bytes are linear in the latent
    dec = BY_KEY["decay"].compute()
    kda_r, gdn_r = (float(v) for v in dec.details.values())
    right = BY_KEY["decay"].choices[int(dec.answer)]
    assert right == {(True, False): "only KDA", (False, True): "only Gated DeltaNet", (True, True): "both",
                     (False, False): "neither"}[(kda_r > 0.5, gdn_r > 0.5)]


def test_a_shared_link_reopens_the_step_with_its_guess_and_reveal():
    at = page("views/tour.py", {"tour_step": "4", "tour_g4": "both", "tour_revealed": "4"})
    assert not at.exception, [e.message for e in at.exception]
    assert at.subheader[0].value.startswith("4. ")
    assert at.radio(key="tour_g4").value == "both"
    assert metric(at, "your guess") == "both"
    assert at.info and "both" in at.info[0].value
    assert at.query_params["tour_g4"] == ["both"] or at.query_params["tour_g4"] == "both"
    bad = page("views/tour.py", {"tour_step": "99", "tour_g1": "lots"})
    assert not bad.exception
    notices = " ".join(w.value for w in bad.warning)
    assert "Ignored `tour_step=99`" in notices and "Ignored `tour_g1=lots`" in notices
    assert bad.subheader[0].value.startswith("1. ")


def test_the_tour_runs_end_to_end():
    at = page("views/tour.py")
    for i, s in enumerate(STEPS, start=1):
        assert at.subheader[0].value == f"{i}. {s.title}"
        if s.kind == "number":
            at.number_input(key=f"tour_g{i}").set_value(float(s.hi)).run()  # a deliberately wild guess
        else:
            at.radio(key=f"tour_g{i}").set_value(s.choices[-1]).run()
        at.button(key="tour_reveal").click().run()
        assert not at.exception and not at.error, (s.key, [e.message for e in at.exception], at.error)
        shown = metric(at, "computed")
        assert shown == s.compute().answer_text
        assert at.info, s.key  # the gap, in words
        if i < len(STEPS):
            at.button(key="tour_next").click().run()
    assert at.success and "All steps revealed" in at.success[0].value
    assert at.query_params["tour_revealed"] in (",".join(map(str, range(1, len(STEPS) + 1))),
                                                [",".join(map(str, range(1, len(STEPS) + 1)))])


def test_balancing_step_describes_token_choice_not_expert_choice():
    """Step 3 described quantile balancing as "each expert takes the tokens that rank in its top
    N·k/E", which is expert choice, the scheme the MoE page contrasts with it."""
    text = BY_KEY["balancing"].compute().explanation
    assert "each expert takes" not in text
    assert "each token takes its top-k" in text and "per-expert cut" in text


def test_decay_step_says_how_the_probe_is_built():
    """Step 4 said only KDA recalls the fact without saying the probe puts the fact in channels
    KDA never decays; with random keys neither does."""
    from k3lite.model import kda
    r = BY_KEY["decay"].compute()
    assert "never-decaying channels" in r.explanation and "'aligned' keys" in r.explanation
    rand = kda.recall_probe(64, fast_decay=0.9, keys="random")
    k, g = (float(rand.scores[m][0]) for m in ("KDA", "Gated DeltaNet"))
    verdict = {(True, False): "only KDA", (False, True): "only Gated DeltaNet", (True, True): "both",
               (False, False): "neither"}[(k > 0.5, g > 0.5)]
    assert f"with random keys (the page's other option) KDA {k:.2f} and Gated DeltaNet {g:.2f}: {verdict} keeps it" \
        in r.explanation
    assert "63 pairs are written after a fact" in BY_KEY["decay"].question


def test_sparsity_step_reconciles_the_seeds_expert_fraction():
    """Step 1 answers 3.54% of parameters and told a student who answered the seed's 1.8%
    (16 of 896 experts) only that they were 2.0x too low."""
    from k3lite.model.presets import get_preset
    from k3lite.analytic.params import count_params
    cfg = get_preset("kimi-k3")
    r = BY_KEY["sparsity"].compute()
    experts = 100 * cfg.moe.top_k / cfg.moe.n_routed_experts
    assert f"{cfg.moe.top_k} of {cfg.moe.n_routed_experts} routed experts ({experts:.2f}%)" in r.explanation
    rep = count_params(cfg)
    routed_active = 100 * rep.active_by_component["routed_experts"] / rep.total
    assert f"{routed_active:.2f}% of the whole" in r.explanation
    assert f"adds {r.answer - routed_active:.2f}%" in r.explanation


def test_serving_step_says_the_gpu_hour_price_is_assumed():
    """The answer "$0.318 per M ... the listed price is 47x it" rests on an assumed $/GPU-hour; say so."""
    from k3lite.analytic.serving import USD_PER_GPU_HOUR
    from k3lite.tour.steps import SERVING
    r = BY_KEY["serving"].compute()
    rate, source = USD_PER_GPU_HOUR[SERVING.gpu]
    assert source.startswith("assumed") and f"${rate:.2f} per GPU-hour ({source})" in r.explanation
    assert "at that assumed rate" in r.explanation
def test_sparsity_step_reconciles_the_articles_share():
    """A student who answered the article's 1.8% was told they were 2.0x too low with no word why; the
    reveal now says 1.8% counts experts and this counts parameters, with the always-on parameters between them."""
    from k3lite.analytic.sparsity import sparsity_shares

    s = sparsity_shares()
    text = BY_KEY["sparsity"].compute().explanation
    assert f"article's {100 * s.expert_share:.1f}%: that counts experts" in text
    assert f"{s.always_on / 1e9:.0f}B" in text


def test_closing_summary_counts_close_guesses_from_the_computed_answers():
    from k3lite.tour.steps import is_close, summary

    fake = {i: Reveal(10.0, "10 x", "", {}) if s.kind == "number" else Reveal(0.0, s.choices[0], "", {})
            for i, s in enumerate(STEPS)}
    guesses = {i + 1: (11.0 if s.kind == "number" else s.choices[0]) if i % 2 == 0 else
               (40.0 if s.kind == "number" else s.choices[-1]) for i, s in enumerate(STEPS)}
    revealed = set(range(1, len(STEPS) + 1)) - {len(STEPS)}  # the last one still hidden
    rows, sentence = summary(guesses, revealed, fake.__getitem__)
    want = sum(is_close(STEPS[k - 1], guesses[k], fake[k - 1]) for k in revealed)
    assert want == len([k for k in revealed if (k - 1) % 2 == 0])  # 11 vs 10 is close, 40 vs 10 is not
    assert f"You revealed {len(revealed)} of {len(STEPS)} steps; {want} of your" in sentence
    assert [r["close?"] for r in rows].count("yes") == want and rows[-1]["computed"] == "not revealed yet"
    for k in revealed:  # is_close and the words under each reveal agree
        words = gap_text(STEPS[k - 1], guesses[k], fake[k - 1])
        assert is_close(STEPS[k - 1], guesses[k], fake[k - 1]) == words.startswith(("Close", "Right"))


def test_tour_shows_the_summary_on_its_last_step():
    n = len(STEPS)
    at = page("views/tour.py", {"tour_step": str(n), "tour_revealed": "1,2"})
    assert not at.exception, [e.message for e in at.exception]
    assert any(h.value.startswith("Summary") for h in at.subheader)
    assert any(m.value.startswith(f"You revealed 2 of {n} steps") for m in at.markdown)
    early = page("views/tour.py", {"tour_step": "1"})
    assert not any(h.value.startswith("Summary") for h in early.subheader)


def test_serving_step_counts_k3s_weights_as_released():
    """The step said the weights need 5.1 B300s at MXFP4, a hypothetical all-MXFP4 model; K3 as released (MXFP4
    routed experts, bf16 rest) is 1.56 TB, 5.42 B300s. The sentence gives the released figure and labels the
    all-one-format ones."""
    from k3lite.analytic.hardware import get_gpu
    from k3lite.analytic.memory import RELEASED_K3_FORMATS, weight_bytes
    from k3lite.model.presets import get_preset
    from k3lite.tour.steps import weights_in_gpus

    released = sum(weight_bytes(get_preset("kimi-k3"), RELEASED_K3_FORMATS).values()) / get_gpu("B300").hbm_bytes
    assert weights_in_gpus()["as released"] == pytest.approx(released)
    text = BY_KEY["serving"].compute().explanation
    assert f"{released:.2f} B300s as released" in text
    assert f"{weights_in_gpus()['all mxfp4']:.1f} if every weight were MXFP4" in text


def test_article_six_b300s_counts_the_released_weights():
    from k3lite.tour.steps import weights_in_gpus

    at = AppTest.from_file(str(ROOT / "views" / "article.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    text = " ".join(m.value for m in at.markdown)
    assert f"{weights_in_gpus()['as released']:.2f} (as released" in text


def test_cost_step_says_the_split_succeeds_planner_times_worker():
    """The question said both succeed 80% per attempt; the planner is modelled at 98%, so the split's attempt
    succeeds 0.98 x 0.80 = 78.4%. Question and reveal say so, from the step's own constants."""
    from k3lite.tour import steps

    p, w = steps.COST_PLANNER_SUCCESS, steps.COST_WORKER_SUCCESS
    both = f"{100 * p * w:.1f}%"
    assert both == "78.4%"  # hand arithmetic: 0.98 x 0.80
    assert both in BY_KEY["cost"].question and "both succeed 80%" not in BY_KEY["cost"].question
    assert both in BY_KEY["cost"].compute().explanation


def test_latent_step_counts_the_copies_deepep_normal_sends():
    """It said 'top-16 copies' on one DGX B300 node under DeepEP normal; one copy goes to each GPU hosting a chosen
    expert (the MoE page says about 6.19 each way), so the count is the wire model's."""
    from k3lite.interconnect import REFERENCE, deployment_bytes
    from k3lite.model.presets import get_preset

    copies = deployment_bytes(get_preset("kimi-k3"), REFERENCE).copies.total
    text = BY_KEY["latent"].compute().explanation
    assert f"{copies:.2f} copies each way" in text and "top-16 copies" not in text


def test_one_m_is_the_apps_one_number():
    """The tour defined its own ONE_M = 1_048_576 beside units.ONE_M_CONTEXT: "1M" was two constants."""
    import k3lite.tour.steps as steps
    from k3lite.base import units
    assert not hasattr(steps, "ONE_M") and steps.ONE_M_CONTEXT is units.ONE_M_CONTEXT
    assert "1_048_576" not in (ROOT / "k3lite" / "tour" / "steps.py").read_text()


def test_every_step_names_its_evidence_class():
    from k3lite.base.evidence import KINDS
    for s in STEPS:
        assert s.evidence is not None and s.evidence.kind in KINDS, s.key
    assert BY_KEY["balancing"].evidence.kind == BY_KEY["decay"].evidence.kind == "measured here"  # runs, not formulas
    assert BY_KEY["cost"].evidence.kind == "derived"


def test_reveals_take_their_comparison_words_from_the_numbers():
    """'17.5x fewer reads', '9.2x cheaper', '73.9 % smaller' and 'the larger batch the smaller cache ... more
    tokens' were written by hand; each word now comes from k3lite.base.wording, over the hybrid page's GPUs, the
    presets and the cost page's sliders."""
    from k3lite.analytic.hybrid import HYBRID_GPUS
    from k3lite.base import sources
    from k3lite.model.presets import PRESETS
    from k3lite.tour.steps import cost, hybrid, residuals
    from wording_check import wording_problems

    def reveal(key: str, **kw):
        return {"hybrid": hybrid, "residuals": residuals, "cost": cost}.get(key, BY_KEY[key].compute)(**kw)

    grid = [dict(key=s.key) for s in STEPS]
    grid += [dict(key="hybrid", gpu=g) for g in HYBRID_GPUS]
    grid += [dict(key="residuals", preset=p) for p in PRESETS]
    grid += [dict(key="cost", worker_success=w, planner_share=sh) for w in (0.05, 0.4, 0.8, 1.0) for sh in (0.075, 1.0)]
    assert wording_problems(reveal, grid, allowed=(sources.SPLIT_CLAIM,)) == []
    assert cost(worker_success=0.05).answer_text.endswith("dearer")  # a worker that nearly always fails
