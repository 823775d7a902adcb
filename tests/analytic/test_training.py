"""One training step's traffic per token: layouts, bubble formulas, the kinds of traffic and what K3's ideas change."""
from dataclasses import replace

import pytest

from k3lite.base.evidence import MARKERS
from k3lite.analytic.training import (
    DSV3_GPU_HOURS_PER_TRILLION, SCHEDULES, achieved_flops_dsv3, bubble_share, bubble_units, deepseek_v3_layout,
    idea_variants, k3_layout, step_traffic, traffic_rows, training_headline, training_sentence,
)
from wording_check import wording_problems


def test_bubble_formulas_are_deepseek_v3_table_2():
    # 1F1B with B = 2F: share (p - 1) / (m + p - 1), i.e. Narayanan et al.'s bubble (p - 1) / m of the ideal time
    for p, m in ((4, 8), (16, 120), (8, 3)):
        assert bubble_share("1f1b", p, m) == pytest.approx((p - 1) / (m + p - 1))
        assert bubble_units("zb1p", p) == pytest.approx((p - 1) * (1 + 2 - 2))
    assert bubble_units("dualpipe", 16) == pytest.approx(7 * (3 + 2 - 3))
    assert bubble_share("dualpipe", 16, 120) < bubble_share("zb1p", 16, 120) < bubble_share("1f1b", 16, 120)
    with pytest.raises(ValueError, match="even"):
        bubble_units("dualpipe", 15)
    with pytest.raises(ValueError):
        bubble_units("gpipe", 4)


def test_deepseek_v3_layout_is_the_published_one_and_k3s_is_labelled_assumed():
    ds, k3 = deepseek_v3_layout(), k3_layout()
    assert (ds.pp, ds.ep, ds.gpus, ds.node_limit, ds.schedule) == (16, 64, 2048, 4, "dualpipe")
    assert ds.global_tokens == 15360 * 4096
    assert ds.evidence["pp"].kind == ds.evidence["ep"].kind == "released"
    assert ds.evidence["micro_batches"].kind == "assumed"  # the micro-batch is not published
    assert {e.kind for k, e in k3.evidence.items() if k != "node_limit"} == {"assumed"}
    assert k3.node_limit == 0 and k3.evidence["node_limit"].kind == "released"
    # the released config has the group keys, equal to 1 (not absent), and the source says so from the preset
    source = k3.evidence["node_limit"].source
    assert "num_expert_group 1, topk_group 1, use_grouped_topk true" in source and "absent" not in source
    assert "no group or node limit" in source
    with pytest.raises(ValueError, match="divide"):
        replace(ds, ep=48)


def test_compute_per_token_reproduces_deepseek_v3s_gpu_hours():
    step = step_traffic(deepseek_v3_layout())
    assert step.compute_s == pytest.approx(DSV3_GPU_HOURS_PER_TRILLION * 3600 / 1e12)  # 648 GPU-µs per token
    assert 2e14 < achieved_flops_dsv3() < 5e14  # about a third of an H800's dense BF16 peak
    assert step.evidence["compute_s"].kind == "derived"
    assert step_traffic(k3_layout()).evidence["compute_s"].kind == "assumed"


def test_k3_step_kinds_backward_mirrors_forward_and_ideas_change_what_they_should():
    var = idea_variants(k3_layout())
    base = var["as configured"].by_kind()
    assert base["EP backward"].total == pytest.approx(base["EP forward"].total, rel=0.03)  # same copies, no top-k
    assert 0 < base["DP"].total < base["PP"].total < base["EP forward"].total
    wide = var["no latent"].by_kind()
    for kind in ("EP forward", "EP backward"):
        assert 1.9 < wide[kind].total / base[kind].total < 2.05  # the latent halves EP, both directions
    assert wide["PP"] == base["PP"] and wide["DP"] == base["DP"]
    pp = {name: v.by_kind()["PP"].total for name, v in var.items()}
    assert pp["standard residual"] < pp["as configured"] < pp["full AttnRes"]
    assert all(v.by_kind()["EP forward"] == base["EP forward"] for n, v in var.items() if "stages" in n)
    step = var["as configured"]
    # DeepEP's measured EP 64 bandwidth is about the IB peak: the time our bytes take there is near the peak time
    ep_nic = base["EP forward"].inter + base["EP backward"].inter
    assert step.deepep_ep_inter_s == pytest.approx(ep_nic / 50e9, rel=0.05)
    assert step.evidence["deepep_ep_inter_s"].kind == "measured elsewhere"
    assert [r["kind"] for r in traffic_rows(step)][:4] == ["EP forward", "EP backward", "PP", "DP"]


def test_training_headline_and_sentence():
    assert 100 < training_headline() < 5000
    assert training_headline(micro_batches=240) < training_headline(micro_batches=60)  # a smaller bubble
    text = training_sentence("kimi-k3")
    assert "latent" in text and "dualpipe" in text
    assert "no latent" in training_sentence("deepseek-v3")


def test_training_sentence_wording():
    grid = [dict(layout=lay, schedule=s, micro_batches=m) for lay in ("kimi-k3", "deepseek-v3") for s in SCHEDULES
            for m in (16, 120)]
    assert wording_problems(training_sentence, grid) == []


def test_cli_prints_the_step_with_evidence(capsys):
    import json

    from k3lite.analytic.training import main

    assert main(["--layout", "deepseek-v3", "--schedule", "1f1b", "--micro-batches", "32", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["layout"]["schedule"] == "1f1b" and out["bubble_share"] == pytest.approx(15 / 47)
    assert [r["kind"] for r in out["per_token"]][:4] == ["EP forward", "EP backward", "PP", "DP"]
    assert out["evidence"]["pp"].startswith(f"{MARKERS['released']} released")
    assert main(["--layout", "kimi-k3", "--ep", "48"]) == 2  # EP must divide DP
