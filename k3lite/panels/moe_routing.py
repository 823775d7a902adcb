"""The MoE page's live routing panels (a)-(c) (views/moe.py): what each draws and says, no Streamlit.

    live_cfg(E, k, shared, ratio, method, d)   the live layer your sliders build (small experts, K3's routing shape)
    live_evidence(cfg, prompt, layer)          (a)-(b)'s evidence: the shipped run at the defaults, else this page's
    routing_metrics(result, method, cfg)       (a)'s four numbers, each with its evidence and help
    where_panel(...), heatmap_panel(...)       (a): the GPUs each token reaches (past K3_SCALE_EXPERTS), or its experts
    load_panel(result, k, ran), measured_note  (b): tokens per expert per method, and how it was measured
    updates_panel(result, method, ran)         how fast each method evens the load, and what to notice
    training_panel()                           (c): max-violation over training steps, its table and its note
The live computations and their server-wide caches are k3lite.viz.moe_live's.
"""
from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from k3lite.analytic.placement import K3_SCALE_EXPERTS, gpu_view, mean_load_per_expert
from k3lite.base.evidence import Evidence, derived, measured_here
from k3lite.experiments.moe_balance import summary_rows, training_claim
from k3lite.experiments.moe_demo import balance_claim, notice_lines
from k3lite.experiments.precomputed import MOE_LAYER, MOE_PROMPT, moe_page_cfg
from k3lite.interconnect import REFERENCE, deployment_bytes
from k3lite.model.checkpoint import checkpoint_meta
from k3lite.model.config import MoEConfig
from k3lite.model.presets import get_preset
from k3lite.panels.core import Panel, Said
from k3lite.viz import moe_live as live
from k3lite.viz.memo import shared_figure
from k3lite.viz.moe import (METHOD_LABELS, gpu_heatmap, load_bars, load_histogram, routing_heatmap, violation_curves,
                            violation_vs_updates)
from k3lite.viz.style import fmt_bytes

EXPERT_FFN, SHARED_FFN = 32, 64  # the live layer (small: it runs on every change; K3's routing shape)
GPU_CHOICES = [8, 16, 32, 64, 128]  # (a)'s expert-parallel sizes past K3_SCALE_EXPERTS


def live_cfg(n_experts: int, top_k: int, n_shared: int, ratio: float, method: str, d_model: int) -> MoEConfig:
    """The live layer of (a)-(b): your routing shape and method, experts of FFN EXPERT_FFN, on the lite model's d."""
    return MoEConfig(n_routed_experts=n_experts, top_k=top_k, expert_ffn_dim=EXPERT_FFN, n_shared_experts=n_shared,
                     shared_ffn_dim=SHARED_FFN, latent_dim=0 if ratio == 1 else round(d_model * ratio),
                     latent_norm=ratio < 1, balancing=method, bias_gamma=0.01)


def demo_cfg(cfg: MoEConfig, d_model: int) -> MoEConfig:
    """Every method is in the demo: one key whatever the method selector says (the default's method)."""
    return replace(cfg, balancing=moe_page_cfg(d_model).balancing)


def live_evidence(cfg: MoEConfig, prompt: str, layer: int) -> Evidence:
    """(a)-(b)'s evidence: the shipped run at the page's defaults, else this page's own run at your settings."""
    if live.demo_is_shipped(cfg, prompt, layer):
        return measured_here("python -m k3lite.experiments.precomputed (the page's defaults, shipped and hash-checked)")
    return measured_here(f"this page, at your settings: k3lite.viz.moe_live.demo ({cfg.n_routed_experts} experts, "
                         f"top-{cfg.top_k}, layer {layer} of the trained lite model)")


class Metric(NamedTuple):
    label: str
    value: str
    evidence: Evidence
    help: str


def routing_metrics(result, method: str, cfg: MoEConfig, d_model: int, ran: Evidence) -> list[Metric]:
    """(a)'s four numbers: held-out max-violation, load CV on the prompt, wire bytes per token, flips under noise."""
    stats, k, e = result.stats[method], cfg.top_k, cfg.n_routed_experts
    per_expert = mean_load_per_expert(len(result.labels), k, e)
    wire = deployment_bytes(cfg, REFERENCE, d_model=d_model)  # the one wire-bytes function (k3lite.interconnect)
    return [
        Metric(f"max-violation, {result.eval_tokens:,} held-out bytes", f"{result.eval_violation[method]:.2f}", ran,
               f"max(load)/mean(load) - 1; 0 = even. On the prompt alone it reads {stats.max_violation:.2f}, but "
               f"{len(result.labels)} bytes x top-{k} spread over {e} experts is {per_expert:.2f} assignments per "
               "expert: too few to measure balance (chance alone overloads some expert), so it is measured on "
               "held-out text the balancer did not see."),
        Metric("load CV on the prompt", f"{stats.cv:.2f}", ran, "std/mean of tokens per expert"),
        Metric("bytes on the wire per token", fmt_bytes(wire.total), derived(deployment_bytes),
               f"dispatch {wire.dispatch:,.0f} B + combine {wire.combine:,.0f} B per MoE layer, expected under uniform "
               f"routing on {REFERENCE.describe()}: {wire.copies.total:.2f} copies x ({wire.dispatch_record} + "
               f"{wire.combine_record}) B records of the {stats.dispatch_dim}-dim latent. The Interconnect page "
               "shows every other deployment."),
        Metric("selection flips under noise", f"{100 * result.stability[method]:.1f}%", ran,
               "share of top-k choices that change when scores get noise of std 0.01 (held-out tokens)")]


def where_panel(result, method: str, n_experts: int, top_k: int, n_gpus: int, ran: Evidence) -> Panel:
    """(a) past K3_SCALE_EXPERTS: which GPUs each token's experts sit on (a tokens x experts map is hairline)."""
    view = gpu_view(result.stats[method].topk_idx[0].numpy(), n_experts, n_gpus)
    fig = shared_figure(gpu_heatmap, result.labels, view.counts, view.touched, view.expected_touched,
                        title=f"{METHOD_LABELS[method]}: {n_experts} experts in blocks of {view.experts_per_gpu:.0f} "
                              f"over {view.n_gpus} GPUs", evidence=ran)
    text = (f"Each token's {top_k} experts sit on {view.touched.mean():.1f} of {view.n_gpus} GPUs on average here "
            f"(uniform routing: {view.expected_touched:.1f}); every GPU touched other than the token's own costs one "
            "dispatch and one combine copy.")
    return Panel(fig, (Said(text, (ran,)),), ran, values={"touched": float(view.touched.mean())})


def heatmap_panel(result, method: str, n_experts: int, ran: Evidence) -> Panel:
    """(a) up to K3_SCALE_EXPERTS: the gate weight of each expert each byte of the prompt chose."""
    stats = result.stats[method]
    return Panel(shared_figure(routing_heatmap, result.labels, stats.topk_idx[0].numpy(), stats.topk_weight[0].numpy(),
                               n_experts, title=f"{METHOD_LABELS[method]}: gate weight of each chosen expert",
                               evidence=ran), evidence=ran)


def origin_note(result, method: str, layer: int, d_model: int) -> str:
    """Where (a)'s hidden states and routers come from."""
    return (f"The prompt runs through the trained lite model (assets/lite.safetensors, "
            f"{checkpoint_meta().get('steps', '?')} training steps); the hidden states entering its MoE at layer "
            f"{layer} (d = {d_model}) then go into a fresh seeded LatentMoE built from your settings (l = "
            f"{result.stats[method].dispatch_dim}, expert FFN {EXPERT_FFN}). Its router is untrained, so which expert "
            f"gets which byte is arbitrary; how *evenly* they spread is the point. Each method's balancing state was "
            f"fitted first with {result.updates} updates (batches of {result.batch} bytes drawn from "
            f"{result.fit_tokens:,} bytes of text and code).")


def own_router_panel(prompt: str, layer: int, labels) -> Panel:
    """The trained lite model's own router on the prompt at `layer`."""
    lite = get_preset("lite")
    idx, weight, own_violation = live.own_routing(prompt, layer)
    ev = measured_here("this page: the trained lite model's router on your prompt (k3lite.viz.moe_live.own_routing)")
    return Panel(shared_figure(routing_heatmap, labels, idx, weight, lite.moe.n_routed_experts,
                               title=f"trained router, max-violation {own_violation:.2f} on this prompt",
                               evidence=ev), evidence=ev, values={"violation": float(own_violation)})


def load_panel(result, n_experts: int, top_k: int, ran: Evidence) -> Panel:
    """(b): every method's tokens per expert on the held-out bytes (a histogram of loads past K3_SCALE_EXPERTS)."""
    if n_experts > K3_SCALE_EXPERTS:  # 896 bars per panel are unreadable: how many experts got how many tokens
        fig = shared_figure(load_histogram, result.eval_load, result.eval_tokens * top_k / n_experts, evidence=ran)
    else:
        fig = shared_figure(load_bars, result.eval_load, result.eval_violation, result.stability, evidence=ran)
    return Panel(fig, evidence=ran)


def measured_note(result, n_experts: int, top_k: int, shipped: bool) -> str:
    """How (b) was measured, and expert choice on the same bytes for comparison."""
    ec = result.expert_choice
    return (f"{result.eval_tokens:,} held-out bytes x top-{top_k} = {result.eval_tokens * top_k:,} assignments; dashed "
            f"line = the ideal even load ({result.eval_tokens * top_k / n_experts:.1f} tokens per expert). Every method "
            f"got {result.updates} updates of {result.batch} bytes: bias ±γ = 0.01 each (10x DeepSeek-V3's 0.001, "
            "which is meant for thousands of steps); quantile: β re-read from each batch; aux loss: an Adam step (lr "
            "1e-3) on the router minimising the Switch aux loss alone, with no task loss pulling back (its best case; "
            "in (c) it trains against a task loss). flips = share of top-k choices that change when the scores get "
            f"noise of std 0.01. Expert choice on the same held-out bytes and raw scores would give every expert "
            f"exactly {ec.per_expert}, but {ec.over_k:,} of the {ec.tokens:,} bytes would get more than {top_k} "
            f"experts (up to {ec.most}), {ec.under_k:,} fewer and {ec.no_expert:,} none. "
            + ("At the page's default settings (a)–(b) are shipped, computed by this same code with "
               "`python -m k3lite.experiments.precomputed` and checked by hash; changing any control but the "
               "balancing method (all four methods are in them) computes them here, live."
               if shipped else "Computed on this page."))


def updates_panel(result, method: str, ran: Evidence) -> tuple[Panel, str]:
    """Held-out max-violation after 1 to 64 updates per method, its computed claim, and what to notice."""
    fig = shared_figure(violation_vs_updates, result.curves, result.update_counts, result.updates, evidence=ran)
    claim = (balance_claim(result, METHOD_LABELS) + " Each line is one calibration run per method on the same "
             "batches, measured on the held-out bytes after each number of updates.")
    notice_b, notice_flips = notice_lines(result, METHOD_LABELS)
    notice = f"""
**What to notice**
- {notice_b} How the methods compare once each has had enough updates is in the sentences under (b) and (c),
  computed from those runs.
- Balancing is not free either way: overruling the router can cost quality, while an even load trains every
  expert; the held-out MSE column in (c) shows which won in this run. {notice_flips}
- Halving l halves the bytes on the wire and the routed-expert FLOPs (d); LatentMoE spends the saving on more
  experts and a higher top-k, which is how K3 affords 16 of 896.
"""
    return Panel(fig, (Said(claim, (ran,)),), ran), notice


TRAIN_COLUMNS = {"first_viol": "max-violation, first 10% of steps", "last_viol": "max-violation, last 10%",
                 "eval_viol": "held-out max-violation", "eval_loss": "held-out MSE (quality proxy)",
                 "stability": "choices flipped by noise 0.01 (fraction)", "seconds": "train time (s)"}


def training_panel() -> tuple[Panel, list[dict], str]:
    """(c): max-violation over training steps per method (shipped, else trained here once), the runs' table rows
    (TRAIN_COLUMNS' names) and the note under them. Raises ServerBusy while another heavy job runs."""
    runs, shipped = live.balance_runs()
    ran = measured_here("python -m k3lite.experiments.precomputed (shipped; run_balance(steps=150, batch=128))"
                        if shipped else "this server: k3lite.experiments.moe_balance.run_balance(steps=150, "
                        "batch=128)")
    fig = shared_figure(violation_curves, {m: r.max_violation for m, r in runs.items()}, evidence=ran)
    rows = [{TRAIN_COLUMNS.get(k, k): v for k, v in row.items()} for row in summary_rows(runs)]
    note = (training_claim(runs, METHOD_LABELS)
            + (" Shipped (made by `python -m k3lite.experiments.precomputed`, checked by hash; computed here if stale) by "
               if shipped else " Trained here (once, then cached) by ")
            + "`k3lite.experiments.moe_balance.run_balance(steps=150, batch=128)`: d 32, 16 experts top-2, tokens "
            "from 32 clusters with Zipf(1.2) frequencies, target a per-cluster linear map; same initial weights and "
            "batches for every method. `python -m k3lite.bench balance` runs the longer version.")
    return Panel(fig, evidence=ran), rows, note


def shipped_balance():
    """The page's shipped (a)-(b) run at its defaults as compare_panel's `balance`, or None when it is not shipped
    (then nothing is computed for the first screen)."""
    model, warning = live.lite_model()
    cfg = moe_page_cfg(model.cfg.d_model)
    if warning or not live.demo_is_shipped(cfg, MOE_PROMPT, MOE_LAYER):
        return None
    demo = live.demo(cfg, MOE_PROMPT, MOE_LAYER)
    return {"violation": dict(demo.eval_violation), "updates": demo.updates, "tokens": demo.eval_tokens,
            "evidence": live_evidence(cfg, MOE_PROMPT, MOE_LAYER)}
