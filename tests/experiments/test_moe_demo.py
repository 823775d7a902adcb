"""The routing page's demo: every balancing method gets the same update budget, the claims come from the curves,
expert choice is counted honestly, and nothing passed in (a cached router or model) is mutated."""
import re

import pytest
import torch

from conftest import ROOT
from k3lite.bench.balance import main as bench_balance
from k3lite.model.config import MoEConfig
from k3lite.model.moe import Router
from k3lite.experiments.moe_demo import (ExpertChoice, PromptDemo, balance_claim, calibrate, expert_choice, notice_lines,
                             prompt_demo, updates_to_even)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def small_cfg(**kw) -> MoEConfig:
    base = dict(n_routed_experts=16, top_k=2, expert_ffn_dim=8, latent_dim=8, latent_norm=True, bias_gamma=0.01)
    return MoEConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def demo() -> PromptDemo:
    return prompt_demo(small_cfg(), 32, "the cat sat", updates=4, update_counts=(1, 2, 4, 8))


# ------------------------------------------------------------------------------------------ the update budget
def test_bias_calibration_takes_exactly_the_budgeted_steps():
    """n bias updates move each bias by n steps of ±gamma: |b| <= n gamma, b a multiple of gamma, and with a
    skewed router some expert moved every time (so exactly n updates ran, not 6 or 30)."""
    torch.manual_seed(0)
    r = Router(32, small_cfg(balancing="none"))
    r.weight.data[0] += 1.0  # expert 0 is everyone's favourite
    stream = torch.randn(400, 32)
    for n in (1, 3, 7):
        fitted = calibrate(r, stream, "bias", steps=n, batch=64).router
        steps = fitted.bias / 0.01
        assert torch.allclose(steps, steps.round(), atol=1e-4)
        assert steps.abs().max().round() == n  # the overloaded expert went down on every one of the n updates


def test_every_method_gets_the_same_budget_and_the_bars_are_a_point_on_the_curve(demo):
    i = demo.update_counts.index(demo.updates)
    for m in demo.curves:
        assert len(demo.curves[m]) == len(demo.update_counts)
        assert demo.eval_violation[m] == pytest.approx(demo.curves[m][i])  # bars = curve at the shared budget
    assert demo.curves["none"] == [pytest.approx(demo.untrained_violation)] * len(demo.update_counts)
    with pytest.raises(ValueError, match="must be one of the recorded counts"):
        prompt_demo(small_cfg(), 32, "x", updates=3, update_counts=(1, 2, 4))


def test_calibrate_never_mutates_the_router_it_is_given():
    torch.manual_seed(0)
    r = Router(32, small_cfg(balancing="none"))
    before = (r.weight.detach().clone(), r.bias.clone(), r.cfg)
    stream, held = torch.randn(300, 32), torch.randn(100, 32)
    for method in ("none", "aux_loss", "bias", "quantile"):
        out = calibrate(r, stream, method, steps=4, batch=64, held=held, record_at=(2, 4), keep_at=(2,))
        assert out.router is not r and out.kept[2] is not r and set(out.curve) == {2, 4}
    assert torch.equal(r.weight, before[0]) and torch.equal(r.bias, before[1]) and r.cfg == before[2]
    with pytest.raises(ValueError, match="record_at needs held-out"):
        calibrate(r, stream, "bias", steps=2, record_at=(1,))
    with pytest.raises(ValueError, match="in \\[1, steps\\]"):
        calibrate(r, stream, "bias", steps=2, held=held, record_at=(3,))


# ------------------------------------------------------------------------------------------ expert choice
def expert_choice_naive(scores: torch.Tensor, k: int) -> ExpertChoice:
    """Reference: loop over experts, sort each column, hand out the top c tokens, count per token."""
    n, e = scores.shape
    c = n * k // e
    got = [0] * n
    for j in range(e):
        for t in sorted(range(n), key=lambda t: -float(scores[t, j]))[:c]:
            got[t] += 1
    return ExpertChoice(c, n, sum(g == 0 for g in got), sum(g < k for g in got), sum(g > k for g in got), max(got))


def test_expert_choice_matches_the_reference_and_is_exactly_even_but_uneven_per_token():
    g = torch.Generator().manual_seed(0)
    scores = torch.rand(64, 8, generator=g) + torch.rand(64, 1, generator=g)  # some tokens score high everywhere
    ec = expert_choice(scores, 2)
    assert ec == expert_choice_naive(scores, 2)
    assert ec.per_expert == 64 * 2 // 8 and ec.over_k > 0 and ec.under_k > 0  # even per expert, not per token
    with pytest.raises(ValueError, match="N k / E >= 1"):
        expert_choice(torch.rand(3, 8), 2)


# ------------------------------------------------------------------------------------------ claims
def fake_demo(curves: dict, untrained: float = 3.0, stability=None) -> PromptDemo:
    counts = (1, 2, 4, 8, 16, 32, 64)
    stability = stability or {"none": 0.01, "aux_loss": 0.02, "bias": 0.05, "quantile": 0.04}
    viol = {m: c[counts.index(32)] for m, c in curves.items()}
    return PromptDemo([], {}, {}, viol, stability, curves, counts, 32, untrained,
                      ExpertChoice(1, 1, 0, 0, 0, 1), 100, 300, 64)


def test_balance_claim_names_the_method_the_curves_show():
    flat = [3.0] * 7
    d = fake_demo({"none": flat, "aux_loss": [3, 3, 3, 2, 1, 0.9, 0.9], "bias": [3, 2.5, 2, 1, 0.7, 0.6, 0.55],
                   "quantile": [0.6, 0.55, 0.5, 0.5, 0.5, 0.5, 0.5]})
    claim = balance_claim(d)
    threshold, reach = updates_to_even(d)
    assert threshold == pytest.approx(1.5 * 0.55) and reach == {"aux_loss": None, "bias": 16, "quantile": 1}
    assert "quantile: 1 update; bias: 16 updates; aux_loss: not within 64 updates" in claim
    assert "quantile is lowest at every one of these budgets" in claim
    assert "between 0.50 and 0.90" in claim
    # the same code, different curves: the winner changes with the budget, and the text says so
    d2 = fake_demo({"none": flat, "aux_loss": [3, 3, 2, 1, 0.6, 0.5, 0.7], "bias": [3, 2, 1, 0.7, 0.6, 0.6, 0.6],
                    "quantile": [0.6, 0.6, 0.6, 0.6, 0.6, 0.7, 0.65]})
    claim2 = balance_claim(d2)
    assert "changes with the budget (32: aux_loss, 64: bias)" in claim2 and "none of them is reliably ahead" in claim2


def test_notice_lines_follow_the_numbers():
    curves = {"none": [3.0] * 7, "aux_loss": [3, 3, 3, 2, 1, 0.6, 0.5], "bias": [3, 2, 1, 0.7, 0.6, 0.6, 0.6],
              "quantile": [0.6] * 7}
    first, second = notice_lines(fake_demo(curves))
    assert "4.0x the ideal load" in first and "Quantile needs the fewest updates, 1, to bring the busiest" in first
    assert "aux_loss and bias and quantile flipped more often than raw top-k" in second
    _, calm = notice_lines(fake_demo(curves, stability={"none": 0.05, "aux_loss": 0.02, "bias": 0.06,
                                                        "quantile": 0.07}))
    assert "aux_loss flipped less often than raw top-k" in calm and "bias and quantile flipped more often" in calm


def test_notice_lines_say_what_load_the_threshold_is_not_close_to_even():
    """The threshold is 1.5x the methods' own median: a max-violation of 0.99 is the busiest expert at 2x its share
    (5.14 at 896 experts: 6.1x). The sentence says that load, never "close to even"."""
    curves = {"none": [3.0] * 7, "aux_loss": [3, 3, 3, 2, 1, 0.7, 0.65], "bias": [3, 2.6, 2.0, 1.2, 0.8, 0.7, 0.68],
              "quantile": [0.65, 0.58, 0.56, 0.66, 0.67, 0.58, 0.66]}
    first, _ = notice_lines(fake_demo(curves))
    threshold, _ = updates_to_even(fake_demo(curves))
    assert threshold == pytest.approx(0.99)
    assert "close to even" not in first
    assert "under 2.0x the ideal load (max-violation 0.99" in first


def test_no_page_imports_a_benchmark():
    """Pages import library modules; k3lite.bench is for the command line (the routing page used to import its
    demo from k3lite.bench.balance)."""
    imports = re.compile(r"^\s*(from|import)\s+k3lite\.bench", re.M)
    offenders = [p.name for p in (ROOT / "views").glob("*.py") if imports.search(p.read_text())]
    assert offenders == []


def test_bench_prints_the_pages_panel_b(capsys):
    assert bench_balance(["--prompt-demo", "--experts", "16", "--top-k", "2", "--layer", "4"]) == 0
    out = capsys.readouterr().out
    assert "E 16, top-2" in out and "Updates needed to get below" in out
    assert bench_balance(["--prompt-demo", "--layer", "0"]) == 2  # layer 0 is dense in the lite model


# ------------------------------------------------------------------------------------------ the shared fit
def test_one_fit_serves_every_latent_shared_and_method_setting_and_is_never_mutated():
    """The page caches `fit_balancers` under `routing_cfg` (experts, top-k): the latent, the shared experts and
    the method must not change the fit, and a demo made from a reused fit equals one made from scratch."""
    from dataclasses import replace

    from k3lite.experiments.moe_demo import fit_balancers, routing_cfg
    base = small_cfg()
    fit = fit_balancers(base, 32, updates=4, update_counts=(1, 2, 4, 8))
    before = {m: r.state_dict() for m, r in fit.routers.items()}
    before = {m: {k: v.clone() for k, v in sd.items()} for m, sd in before.items()}
    for cfg in (base, replace(base, latent_dim=0, latent_norm=False), replace(base, n_shared_experts=2),
                replace(base, balancing="bias", latent_dim=16)):
        assert routing_cfg(cfg) == routing_cfg(base)
        fresh = prompt_demo(cfg, 32, "the cat sat", updates=4, update_counts=(1, 2, 4, 8))
        reused = prompt_demo(cfg, 32, "the cat sat", updates=4, update_counts=(1, 2, 4, 8), fit=fit)
        assert reused.curves == fresh.curves and reused.eval_load == fresh.eval_load
        for m in fresh.stats:
            assert torch.equal(reused.stats[m].topk_idx, fresh.stats[m].topk_idx)
            assert torch.equal(reused.stats[m].topk_weight, fresh.stats[m].topk_weight)
            assert reused.stats[m].dispatch_dim == fresh.stats[m].dispatch_dim == (cfg.latent_dim or 32)
    for m, r in fit.routers.items():
        assert all(torch.equal(v, before[m][k]) for k, v in r.state_dict().items()), f"{m}'s fitted router changed"
    side_by_side = fit_balancers(base, 32, updates=4, update_counts=(1, 2, 4, 8), threads=3)
    assert side_by_side.curves == fit.curves and side_by_side.stability == fit.stability
    assert all(torch.equal(side_by_side.routers[m].bias, r.bias) and torch.equal(side_by_side.routers[m].weight, r.weight)
               for m, r in fit.routers.items()), "threads change when the methods run, not what they compute"
    assert routing_cfg(replace(base, top_k=3)) != routing_cfg(base)
    for other in (replace(base, n_routed_experts=32), replace(base, top_k=3), replace(base, route_scale=2.0)):
        with pytest.raises(ValueError, match="another routing config, seed or update budget"):
            prompt_demo(other, 32, "x", updates=4, update_counts=(1, 2, 4, 8), fit=fit)
    with pytest.raises(ValueError, match="another routing config, seed or update budget"):
        prompt_demo(base, 32, "x", seed=1, updates=4, update_counts=(1, 2, 4, 8), fit=fit)


def test_seeded_router_is_the_seeded_layers_router_and_ignores_the_global_generator():
    from k3lite.experiments.moe_demo import seeded_layer, seeded_router
    cfg = small_cfg(n_routed_experts=24)
    torch.manual_seed(123)
    state = torch.get_rng_state()
    r = seeded_router(cfg, 32, 7)
    assert torch.equal(torch.get_rng_state(), state), "the global generator is neither reseeded nor drawn from"
    assert torch.equal(r.weight, seeded_layer(cfg, 32, 7).router.weight) and not r.bias.any()
    assert not torch.equal(r.weight, seeded_router(cfg, 32, 8).weight)


def test_the_prompt_panel_reports_what_the_layer_itself_reports():
    """prompt_demo routes with the fitted routers alone (no expert runs): its stats must be what a LatentMoE with
    that router reports, the capacity drops included."""
    import copy
    from dataclasses import replace

    from k3lite.experiments.moe_demo import METHODS, byte_features, fit_balancers, seeded_layer
    cfg = small_cfg(capacity_factor=1.0)
    fit = fit_balancers(cfg, 32, updates=4, update_counts=(1, 2, 4, 8))
    prompt = "the cat sat on the mat"
    got = prompt_demo(cfg, 32, prompt, updates=4, update_counts=(1, 2, 4, 8), fit=fit).stats
    layer, x = seeded_layer(cfg, 32, 0), byte_features(prompt.encode(), 32, 0)
    for m in METHODS:
        layer.router, layer.cfg = copy.deepcopy(fit.routers[m]), replace(cfg, balancing=m)
        with torch.inference_mode():
            ref = layer(x[None]).stats
        for field in ("topk_idx", "topk_weight", "scores", "load"):
            assert torch.equal(getattr(got[m], field), getattr(ref, field)), (m, field)
        assert got[m][4:] == ref[4:], m  # violation, cv, dropped, entropy, dispatch_dim
    assert any(s.dropped for s in got.values()), "no drop at capacity factor 1: the drop count went unchecked"


def test_a_fit_shares_the_weights_only_the_aux_loss_moves():
    from k3lite.experiments.moe_demo import fit_balancers
    fit = fit_balancers(small_cfg(), 32, updates=4, update_counts=(1, 2, 4, 8))
    base = fit.routers["none"].weight
    assert fit.routers["bias"].weight is base and fit.routers["quantile"].weight is base
    assert not torch.equal(fit.routers["aux_loss"].weight, base)


def test_updates_figure_is_a_real_log_axis_with_its_label_off_the_legend():
    """The budget line's annotation took x = 32 in data units, which a log axis reads as 10^32,
    so 1-64 updates sat in 5% of the width with overprinted ticks; the label also sat on the legend."""
    import math

    from k3lite.viz.moe import violation_vs_updates

    counts = (1, 2, 4, 8, 16, 32, 64)
    curves = {"none": [2.9] * 7, "quantile": [0.6, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]}
    fig = violation_vs_updates(curves, counts, budget=32)
    assert fig.layout.xaxis.type == "log"
    lo, hi = math.log10(min(counts)), math.log10(max(counts))
    for a in fig.layout.annotations:  # every label on the log axis lies inside the data's decades
        if a.xref == "x":
            assert lo - 0.1 <= a.x <= hi + 0.1, f"annotation {a.text!r} at log10 x = {a.x}: stretches the axis"
    assert fig.layout.xaxis.range[0] <= lo and fig.layout.xaxis.range[1] >= hi
    assert fig.layout.legend.y < 0, "the legend must sit under the plot, away from the budget label above it"


# ------------------------------------------------------------------------------------------ the prompt demo on the model
def test_prompt_demo_shapes_labels_and_errors():
    from k3lite.experiments.moe_demo import MAX_PROMPT_BYTES, prompt_demo

    c = MoEConfig(n_routed_experts=16, top_k=2, expert_ffn_dim=24, balancing="none", latent_dim=16,
                  latent_norm=True, n_shared_experts=1)
    d = prompt_demo(c, 32, "a b\n日")
    assert d.labels == ["a", "␣", "b", "\\n", "xe6", "x97", "xa5"]  # tokenizer.token_label, as on every page
    for m, s in d.stats.items():
        assert s.topk_idx.shape == (1, 7, 2)
        assert sum(d.eval_load[m]) == d.eval_tokens * 2
    assert d.eval_violation["quantile"] < d.eval_violation["none"]
    with pytest.raises(ValueError, match="prompt is empty"):
        prompt_demo(c, 32, "")
    with pytest.raises(ValueError, match=f"the limit is {MAX_PROMPT_BYTES}"):
        prompt_demo(c, 32, "é" * MAX_PROMPT_BYTES)
    with pytest.raises(ValueError, match="control character U\\+0007"):  # the app's one prompt policy
        prompt_demo(c, 32, "ab\x07")


def test_model_moe_inputs_are_what_the_trained_router_sees():
    """Hooked hidden states, fed to the model's own router, reproduce the routing its Trace recorded."""
    from k3lite.experiments.moe_demo import model_moe_inputs
    from k3lite.model.checkpoint import load_lite_model

    model, _ = load_lite_model()
    data = b"routing check: the cat sat."
    before = {k: v.clone() for k, v in model.state_dict().items()}
    states = model_moe_inputs(model, data)
    assert sorted(states) == [i for i, t in enumerate(model.cfg.ffn_types()) if t == "moe"]
    with torch.inference_mode():
        trace = model(torch.tensor([list(data)]), trace=True).trace
    for i, x in states.items():
        assert x.shape == (len(data), model.cfg.d_model)
        assert torch.equal(model.layers[i].ffn.router(x).topk_idx, trace.layers[i].router_topk_idx[0])
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # hooks changed nothing
    assert not model.layers[1].ffn._forward_pre_hooks  # and were removed
