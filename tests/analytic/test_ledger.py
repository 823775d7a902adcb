"""The bytes-per-decoded-token ledger: each segment is the mechanism page's own number, each toggle moves only
the segments its idea touches, and the home page draws it for the three models with the toggles."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.analytic import ledger as L
from k3lite.model.variants import K3_MINUS, comparison_config
from k3lite.model.attnres import attnres_cost
from k3lite.model.presets import get_preset
from k3lite.analytic.memory import decode_weight_bytes, sequence_cache_bytes, weight_bytes
from k3lite.interconnect import Deployment, analytic_traffic, get_topology
from k3lite.viz.ledger import ledger_figure
from k3lite.viz.style import COUNTERFACTUAL_PATTERN, fmt_bytes

CTX = 131_072
DEP = L.Deploy()


def _wire(cfg):
    return analytic_traffic(cfg, Deployment(get_topology(DEP.topology), DEP.ep_size, DEP.dispatch, DEP.combine, 0,
                                            DEP.scheme))


@pytest.mark.parametrize("preset", list(L.MODELS))
def test_segments_are_the_mechanism_pages_numbers(preset):
    cfg = get_preset(preset)
    row = L.ledger(preset, CTX)
    wire = _wire(cfg)
    assert row.nvlink + row.nic == pytest.approx(wire.per_forward)  # the interconnect page's per forward pass
    assert row.hbm_cache == sequence_cache_bytes(cfg, CTX).total  # the hybrid / serving pages' cache
    assert row.hbm_weights == pytest.approx(decode_weight_bytes(cfg, DEP.batch, L.WEIGHT_PRECISION) / DEP.batch)
    assert row.attnres == attnres_cost(cfg.n_layers, cfg.d_model, cfg.attn_res, cfg.attn_res_block_size).read_bytes
    assert row.total == pytest.approx(sum(row.parts().values()))


def test_batch_of_one_reads_exactly_the_active_weights():
    """At batch 1 a step reads what one token multiplies with: the home page's active count x bytes/param."""
    row = L.ledger("deepseek-v3", CTX, deploy=L.Deploy(batch=1))
    active = weight_bytes(get_preset("deepseek-v3"), L.WEIGHT_PRECISION, active=True)
    assert row.hbm_weights == pytest.approx(sum(active.values()), rel=1e-6)
    bigger = L.ledger("deepseek-v3", CTX, deploy=L.Deploy(batch=256))
    assert bigger.hbm_weights < row.hbm_weights  # shared by more sequences
    assert (bigger.nvlink, bigger.hbm_cache) == (row.nvlink, row.hbm_cache)  # per token, not shared


def test_latent_off_is_the_same_sized_classic_moe():
    """The ledger's "latent off" kept 896 experts top-16 and doubled each one (5.49T parameters, 142B active),
    so 29.05 GB of its 29.1 GB "saving" was reading bigger weights. The counterfactual is the serving waterfall's
    classic design: same parameters and active compute, no latent."""
    from k3lite.analytic.params import count_params
    from k3lite.model.variants import classic_variant
    cfg = get_preset("kimi-k3")
    plain = L.variant(cfg, L.ONE_OFF["no-latent"])
    assert plain.moe == classic_variant(cfg).moe and not plain.moe.latent_dim
    ours, theirs = count_params(cfg), count_params(plain)
    assert theirs.total == pytest.approx(ours.total, rel=0.01)  # like for like: same size ...
    assert theirs.active == pytest.approx(ours.active, rel=0.06)  # ... and active compute (K3 adds the projections)
    k3, no_latent = L.ledger("kimi-k3", CTX), L.ledger("kimi-k3", CTX, L.ONE_OFF["no-latent"])
    assert no_latent.nvlink + no_latent.nic == pytest.approx(_wire(plain).per_forward)  # the interconnect function
    assert no_latent.nvlink + no_latent.nic > k3.nvlink + k3.nic  # the latent does save wire ...
    parts = L.saving_parts(CTX)["no-latent"]
    assert parts["hbm_weights"] < 0 and abs(parts["hbm_weights"]) < 1e9  # ... and the weight term is no longer GBs
    assert no_latent.hbm_cache == k3.hbm_cache


def test_saving_words_say_costs_when_k3_moves_more():
    """At batch 1 / 4K the hybrid card showed "saves -8.82 GB" with no word why."""
    parts = L.saving_parts(4096, L.Deploy(batch=1))["all-mla"]
    verb, amount, why = L.saving_words("KDA hybrid", parts, lambda b: f"{b / 1e9:.2f} GB")
    assert verb == "costs" and amount == f"{-sum(parts.values()) / 1e9:.2f} GB" and not amount.startswith("-")
    assert why.startswith("K3 with KDA hybrid vs without") and "HBM: weights (shared by the batch) +" in why
    verb, _, _ = L.saving_words("KDA hybrid", L.saving_parts(CTX)["all-mla"], str)
    assert verb == "saves"


def test_home_ledger_caption_computes_the_hbm_to_wire_factor_and_names_the_bars():
    """The factor is computed (not "about a thousand"), the counterfactual
    bar says what it is, and a card that costs bytes says so and why."""
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=300)
    at.query_params.update({"ledger_context": "4096", "ledger_batch": "1"})
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    text = " ".join(c.value for c in at.caption)
    assert "factor of a thousand" not in text
    rows = [L.ledger(p, 4096, deploy=L.Deploy(batch=1)) for p in L.MODELS] + \
        [L.ledger("kimi-k3", 4096, L.ONE_OFF["no-latent"], L.Deploy(batch=1))]
    f = [(r.hbm_weights + r.hbm_cache + r.attnres) / (r.nvlink + r.nic) for r in rows]
    assert f"{min(f):,.0f}–{max(f):,.0f}x the wire bytes" in text
    plain = L.variant(get_preset("kimi-k3"), L.ONE_OFF["no-latent"])
    assert f"{plain.moe.n_routed_experts} experts, top-{plain.moe.top_k}, working in d_model {plain.d_model}" in text
    labels = {m.label.split(" :gray[")[0]: m.value for m in at.metric}  # without the evidence marker
    hybrid = L.saving_parts(4096, L.Deploy(batch=1))["all-mla"]
    assert labels["KDA hybrid costs, per token"] == fmt_bytes(-sum(hybrid.values()))
    assert "KDA layers carry more weights than the MLA layers they replace" in text


def test_all_mla_grows_the_cache_and_only_the_cache_term():
    k3, all_mla = L.ledger("kimi-k3", CTX), L.ledger("kimi-k3", CTX, L.ONE_OFF["all-mla"])
    assert all_mla.hbm_cache == sequence_cache_bytes(get_preset("kimi-k3").with_(kda_ratio=(0, 1)), CTX).total
    assert all_mla.hbm_cache > k3.hbm_cache and all_mla.nvlink == k3.nvlink
    short = L.ledger("kimi-k3", 4096, L.ONE_OFF["all-mla"]).hbm_cache
    assert all_mla.hbm_cache / short == pytest.approx(CTX / 4096)  # all-MLA: linear in context


def test_block_attnres_off_is_the_standard_residual_and_balancing_scales_only_the_links():
    """The ledger's "block AttnRes" toggle had meant full AttnRes, while every comparison page (and the ablation view
    on the same home page) meant a standard residual: one vocabulary now, the K3_MINUS variant."""
    k3 = L.ledger("kimi-k3", CTX)
    off = L.ONE_OFF["standard-residual"]
    assert L.variant(get_preset("kimi-k3"), off) == comparison_config("standard-residual").with_(name="kimi-k3")
    standard = L.ledger("kimi-k3", CTX, off)
    assert standard.attnres < k3.attnres and standard.nvlink == k3.nvlink  # blocks read more than one running sum
    assert L.savings(CTX)["standard-residual"] < 0  # so the card says block AttnRes costs bytes
    dep = L.Deploy(gpu_overload=0.5)
    hot = L.ledger("kimi-k3", CTX, L.ONE_OFF["balancing"], dep)
    assert hot.nvlink == pytest.approx(1.5 * k3.nvlink) and hot.hbm_weights == k3.hbm_weights
    assert L.savings(CTX, dep)["balancing"] == pytest.approx(0.5 * (k3.nvlink + k3.nic))


def test_toggles_are_k3_minus_keys_and_name_their_variants():
    for key in L.TOGGLED:
        assert key in K3_MINUS and L.variant(get_preset("kimi-k3"), L.ONE_OFF[key]) == \
            comparison_config(key).with_(name="kimi-k3")
    with pytest.raises(ValueError, match="K3_MINUS"):
        L.Toggles(frozenset({"latent"}))
    assert L.ledger("kimi-k3", CTX, L.ONE_OFF["no-latent"]).name == "Kimi K3 without the latent"
    both = L.Toggles(frozenset({"all-mla", "no-latent"}), balanced=False)
    assert both.label() == "without the latent, with MLA everywhere, without balancing"


def test_toggles_that_do_not_apply_change_nothing():
    assert L.ledger("deepseek-v3", CTX, L.Toggles(frozenset(L.TOGGLED))).total == \
        pytest.approx(L.ledger("deepseek-v3", CTX).total)


@pytest.mark.parametrize("bad, match", [(dict(preset="gpt-9"), "model must be one of"),
                                        (dict(context=0), "context must be"),
                                        (dict(deploy=dict(batch=0)), "batch must be"),
                                        (dict(deploy=dict(gpu_overload=-1)), "gpu_overload must be")])
def test_bad_input_names_the_constraint(bad, match):
    with pytest.raises(ValueError, match=match):
        deploy = L.Deploy(**bad.get("deploy", {}))
        L.ledger(bad.get("preset", "kimi-k2"), bad.get("context", CTX), deploy=deploy)


def test_figure_hatches_the_counterfactuals_only():
    rows = [L.ledger("kimi-k2", CTX), L.ledger("kimi-k3", CTX), L.ledger("kimi-k3", CTX, L.ONE_OFF["no-latent"])]
    fig = json.loads(ledger_figure(rows, frozenset({rows[2].name})).to_json())
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    assert {t["name"] for t in bars} == {label for _, label in L.SEGMENTS}
    for t in bars:
        assert t["marker"]["pattern"]["shape"] == ["", "", COUNTERFACTUAL_PATTERN["shape"]]


def test_home_draws_the_ledger_for_three_models_with_each_toggle():
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]

    def rows_drawn():
        figs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
        ledger = next(f for f in figs if any(t.get("name", "").startswith("NVLink") for t in f["data"]))
        return next(t for t in ledger["data"] if t["type"] == "bar")["y"]

    drawn = rows_drawn()
    for name in ("DeepSeek-V3", "Kimi K2", "Kimi K3", "Kimi K3 without<br>the latent"):
        assert name in drawn, drawn
    for key, words in (("ledger_hybrid", "MLA everywhere"), ("ledger_block", "standard residual"),
                       ("ledger_balancing", "balancing")):
        at.checkbox(key=key).uncheck().run()
        assert not at.exception, [e.message for e in at.exception]
        assert any(words in r for r in rows_drawn()), (key, rows_drawn())
        assert at.query_params[key] == "False", "the toggle is not in the share URL"
        at.checkbox(key=key).check().run()


def test_home_ledger_latent_toggle_changes_the_figure_and_the_url():
    """Unticking "latent experts" changed nothing (K3 without latent was always drawn), the toggles were
    not in the share URL, and the overload input stayed active although only balancing-off counts it."""
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=300).run()

    def ledger_bars():
        figs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
        ledger = next(f for f in figs if any(t.get("name", "").startswith("NVLink") for t in f["data"]))
        return next(t for t in ledger["data"] if t["type"] == "bar")["y"]

    before = ledger_bars()
    assert "Kimi K3 without<br>the latent" in before  # the released preset's label
    at.checkbox(key="ledger_latent").check().run()  # every idea on: that is the K3 bar itself
    assert not at.exception, [e.message for e in at.exception]
    after = ledger_bars()
    assert after != before and len(after) == len(before) - 1 and not any("without" in r for r in after), after
    assert at.query_params["ledger_latent"] == "True"
    overload = at.number_input(key="ledger_overload")
    assert overload.disabled, "the overload input is live although balancing is on (it does not count)"
    at.checkbox(key="ledger_balancing").uncheck().run()
    assert not at.number_input(key="ledger_overload").disabled
    # a shared link reopens the same toggles
    link = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=300)
    link.query_params.update(ledger_latent="true", ledger_hybrid="false")
    link.run()
    assert not link.exception and link.checkbox(key="ledger_latent").value and not link.checkbox(key="ledger_hybrid").value


def test_interconnect_comparison_shows_k3_without_latent_beside_k3():
    """The comparison chart showed K3 moving the most bytes with no counterfactual."""
    at = AppTest.from_file(str(ROOT / "views" / "interconnect.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    figs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    compare = next(f for f in figs if "K3 without latent" in (f["data"][0].get("x") or []))  # the first of them
    names = compare["data"][0]["x"]
    totals = [sum(t["y"][i] for t in compare["data"] if t["type"] == "bar") for i in range(len(names))]
    k3 = totals[names.index("kimi-k3")]
    assert totals[names.index("K3 without latent")] > k3


# ------------------------------------------------------------------------------------------ per unit of work
def test_token_work_is_the_serving_models_flop_count_of_the_toggled_config():
    from k3lite.analytic.serving.step import token_flops

    for preset in L.MODELS:
        assert L.token_work(preset, CTX) == token_flops(get_preset(preset), CTX)
    off = L.Toggles(frozenset({"no-latent"}))  # a counterfactual bar is normalised by its own work
    assert L.token_work("kimi-k3", CTX, off) == token_flops(L.variant(get_preset("kimi-k3"), off), CTX)


def test_per_work_divides_every_segment_by_the_tokens_gflop():
    row = L.ledger("kimi-k3", CTX)
    work = L.token_work("kimi-k3", CTX)
    norm = L.per_work(row, work.total)
    for key, _ in L.SEGMENTS:
        assert getattr(norm, key) == pytest.approx(getattr(row, key) * 1e9 / work.total)
    with pytest.raises(ValueError, match="FLOPs per token must be positive"):
        L.per_work(row, 0)


@pytest.mark.parametrize("context", [4_096, CTX, 1_048_576])
def test_work_per_token_counts_attention_over_the_context(context):
    """The sentence said K3's 2.84x active parameters meant 2.84x the work per token; at long context the
    attention core dominates (DeepSeek-V3: 61 MLA layers of 128 heads over the context), so the work ratio is
    the FLOP count's, computed at the ledger's context, with the count's assumption in the sentence."""
    k3, ds = L.ledger("kimi-k3", context), L.ledger("deepseek-v3", context)
    w3, wds = L.token_work("kimi-k3", context), L.token_work("deepseek-v3", context)
    text = L.why_more_bytes(k3, ds, w3, wds, fmt_bytes)
    assert "that much more work" not in text
    ratio = lambda a, b: f"{max(a, b) / min(a, b):.2f}x {'more' if a > b else 'less'}"  # noqa: E731
    assert f"({ratio(w3.total, wds.total)} work)" in text and f"{context:,} tokens" in text
    assert "2 FLOPs per active parameter" in text and "attention" in text
    hbm = lambda r: r.hbm_weights + r.hbm_cache + r.attnres  # noqa: E731
    k3n, dsn = L.per_work(k3, w3.total), L.per_work(ds, wds.total)
    assert f"({ratio(hbm(k3n), hbm(dsn))})" in text


def test_at_128k_k3_does_less_work_and_reads_more_per_flop_than_deepseek():
    """Hand check of the direction: K3 has ~2.8x the active parameters of DeepSeek-V3, yet at 131,072 tokens
    DeepSeek-V3's attention core alone (61 layers x 2 x 128 heads x 131,072 x (2 x 512 + 64) FLOPs) is ~2.2 TFLOP,
    more than K3's whole token, so per unit of work K3 reads more HBM bytes, not fewer."""
    ds_attention = 61 * 2 * 128 * CTX * (2 * 512 + 64)
    assert L.token_work("deepseek-v3", CTX).attention == ds_attention
    w3, wds = L.token_work("kimi-k3", CTX), L.token_work("deepseek-v3", CTX)
    assert w3.total < wds.total
    k3, ds = L.ledger("kimi-k3", CTX), L.ledger("deepseek-v3", CTX)
    hbm = lambda r: r.hbm_weights + r.hbm_cache + r.attnres  # noqa: E731
    assert hbm(L.per_work(k3, w3.total)) > hbm(L.per_work(ds, wds.total))


def test_ledger_figure_says_what_its_bars_are_per():
    rows = [L.per_work(L.ledger(p, CTX), L.token_work(p, CTX).total) for p in L.MODELS]
    fig = ledger_figure(rows, per="GFLOP of a token's work")
    titles = [a.text for a in fig.layout.annotations]
    assert any(t.startswith("HBM read per GFLOP of a token's work") for t in titles)


def test_home_ledger_explains_and_normalises_k3_against_deepseek():
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    k3, ds = L.ledger("kimi-k3", CTX, deploy=DEP), L.ledger("deepseek-v3", CTX, deploy=DEP)
    w3, wds = L.token_work("kimi-k3", CTX), L.token_work("deepseek-v3", CTX)
    why = L.why_more_bytes(k3, ds, w3, wds, fmt_bytes)
    assert why in " ".join(m.value for m in [*at.markdown, *at.caption])

    def ledger_fig():
        figs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
        return next(f for f in figs if any(t.get("name", "").startswith("NVLink") for t in f["data"]))

    raw = ledger_fig()
    per_work = next(o for o in at.radio(key="ledger_per").options if "GFLOP" in o)
    assert "active parameters" not in " ".join(at.radio(key="ledger_per").options)
    at.radio(key="ledger_per").set_value(per_work).run()
    assert not at.exception, [e.message for e in at.exception]
    normed = ledger_fig()
    assert "per GFLOP of a token's work" in normed["layout"]["annotations"][0]["text"]
    nvlink = lambda f: next(t for t in f["data"] if t.get("name", "").startswith("NVLink"))["customdata"]  # noqa: E731
    k3_index = raw["data"][0]["y"].index("Kimi K3")
    assert nvlink(normed)[k3_index] == fmt_bytes(k3.nvlink * 1e9 / w3.total)
    assert at.query_params["ledger_per"] == per_work


# ------------------------------------------------------------------------------------------ what each idea buys and costs
def test_idea_bytes_say_costs_where_the_ledger_says_k3_moves_more():
    """Home's five-ideas list said the ideas make K3 cheap; at batch 1 the latent and the hybrid cost bytes (their
    weights), so each idea's clause is the ledger's saving at each batch, with its sign as a verb."""
    words = L.idea_bytes(CTX, fmt_bytes, batches=(1, 64))
    assert set(words) == {"setting", "no-latent", "balancing", "all-mla", "standard-residual"}
    for key in ("no-latent", "all-mla"):
        for batch in (1, 64):
            net = L.savings(CTX, L.Deploy(batch=batch))[key]
            verb = "saves" if net >= 0 else "costs"
            assert f"{verb} {fmt_bytes(abs(net))} at batch {batch}" in words[key]
    assert L.savings(CTX, L.Deploy(batch=1))["no-latent"] < 0 and "costs" in words["no-latent"]
    assert L.savings(CTX, L.Deploy(batch=1))["all-mla"] < 0 and "costs" in words["all-mla"].split("at batch 1")[0]


def test_block_attnres_clause_names_its_cost_against_a_standard_residual():
    """Blocks are cheap only against full AttnRes: against one running sum per sublayer they read more."""
    cfg = get_preset("kimi-k3")
    cost = lambda mode: attnres_cost(cfg.n_layers, cfg.d_model, mode, cfg.attn_res_block_size).read_bytes  # noqa: E731
    text = L.idea_bytes(CTX, fmt_bytes)["standard-residual"]
    assert cost("block") > cost("standard")
    assert fmt_bytes(cost("full") - cost("block")) in text and fmt_bytes(cost("block") - cost("standard")) in text
    assert "more than a standard residual" in text


def test_balancing_clause_states_the_overload_it_assumes():
    deploy = L.Deploy(gpu_overload=1.0)
    text = L.idea_bytes(CTX, fmt_bytes, deploy=deploy)["balancing"]
    assert fmt_bytes(L.savings(CTX, deploy)["balancing"]) in text and "2.0x the mean" in text
    assert "assum" in text


def test_home_five_ideas_say_what_each_costs_in_bytes():
    """The expander was titled "Five ideas make K3 cheap" and said the latent sends less over the wire and each
    expert does less work; at batch 1 the latent and the hybrid cost bytes. It now carries the ledger's clauses."""
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    assert not any("make K3 cheap" in e.label for e in at.expander)
    text = " ".join(m.value for m in at.markdown)
    words = L.idea_bytes(CTX, fmt_bytes)
    for key in ("no-latent", "all-mla", "balancing", "standard-residual", "setting"):
        assert words[key] in " ".join(text.split()), key
    assert "each expert does less work" not in text


def test_home_ledger_deployment_links_to_the_interconnect_page_showing_the_same_bytes():
    """The caption called its NVL72 deployment 'the interconnect page's defaults'; that page opens on 8 DGX B300
    nodes and shows 19.1 MB, not the ledger's 14.4 MB. The caption now links to the interconnect page with the
    ledger's settings, and that page, opened from the link, shows the ledger's wire bytes."""
    import re
    from urllib.parse import parse_qsl, urlparse

    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    text = " ".join(c.value for c in at.caption)
    assert "the interconnect page's defaults" not in text
    link = re.search(r"\]\((/interconnect\?[^)]+)\)", text).group(1)
    ic = AppTest.from_file(str(ROOT / "views" / "interconnect.py"), default_timeout=300)
    ic.query_params.update(dict(parse_qsl(urlparse(link).query)))
    ic.run()
    assert not ic.exception, [e.message for e in ic.exception]
    k3 = L.ledger("kimi-k3", CTX, deploy=DEP)
    shown = " ".join(m.value for m in ic.markdown)
    assert f"MoE layers that is **{fmt_bytes(k3.nvlink + k3.nic)}**" in shown


@pytest.mark.parametrize("context,batch", [(CTX, 64), (4_096, 1), (1_048_576, 256)])
def test_home_headline_is_the_ledgers_k3_bar_at_its_assumed_values(context, batch):
    """The assumptions block's headline function gives the ledger's own K3 total at the assumed values, and each
    assumed byte size moves only its own segment."""
    row = L.ledger("kimi-k3", context, deploy=L.Deploy(batch=batch))
    assert L.k3_bytes_at(context, batch) == pytest.approx(row.total, rel=1e-12)
    doubled = L.k3_bytes_at(context, batch, weight_bytes=2 * L.WEIGHT_BYTES)
    assert doubled - row.total == pytest.approx(row.hbm_weights, rel=1e-9)
    cache = sequence_cache_bytes(get_preset("kimi-k3"), context)
    assert L.k3_bytes_at(context, batch, latent_bytes=4.0) - row.total == pytest.approx(cache.mla, rel=1e-9)
    assert 0 < L.k3_bytes_at(context, batch, state_bytes=8.0) - row.total <= cache.kda  # the state, not the conv tail
    assert L.k3_bytes_at(context, 0.8) == L.k3_bytes_at(context, 1)  # a step serves at least one sequence
