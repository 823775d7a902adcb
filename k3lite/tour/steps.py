"""The K3 argument in N steps: one claim per step (most as the seed article, a third-party blog post, quotes
them), predicted first, then computed.

Each step asks for a number or a direction, then runs the computation with the function the page that goes
deeper calls (and that page's default settings), and explains the gap between the guess and the answer.
No Streamlit here: views/tour.py draws it, tests call `Step.compute()` directly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

from k3lite.model import kda

from k3lite.base import sources
from k3lite.base.evidence import Evidence, derived, measured_here
from k3lite.base.units import ONE_M_CONTEXT
from k3lite.base.wording import compare, times
from k3lite.analytic.sparsity import sparsity_shares
from k3lite.model.attnres import attnres_cost, block_size_words
from k3lite.model.presets import get_preset
from k3lite.analytic.cost import PRICES, ModelPrice, TaskProfile, analyze, planner_worker, single_model
from k3lite.interconnect import REFERENCE, deployment_bytes
from k3lite.analytic import memory
from k3lite.analytic.hardware import get_gpu
from k3lite.analytic.memory import RELEASED_K3_FORMATS
from k3lite.analytic.hybrid import (
    REPORTED, batch_limited, batch_limited_speedup, decode_cost, gpus_for_one_sequence, kv_reduction, reference_gpu,
)
from k3lite.analytic.latent import latent_cost_per_token
from k3lite.experiments.precomputed import moe_default_cfg, moe_default_demo
from k3lite.analytic.params import count_params
from k3lite.analytic.serving import USD_PER_GPU_HOUR, Serving, check_fits, decode_step
from k3lite.analytic.serving.compare import gpus_for_weights
from k3lite.viz.style import fmt_bytes


class Reveal(NamedTuple):
    answer: float  # what the guess is compared with (for a choice step: the index of the right choice)
    answer_text: str
    explanation: str  # why, built from the computed numbers
    details: dict[str, str]  # more computed numbers worth showing (label -> value with unit)


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    claim: str  # what the seed article says
    question: str
    kind: str  # "number" | "choice"
    page: str  # url_path of the page that goes deeper (views/registry.py)
    compute: Callable[[], Reveal]
    unit: str = ""
    default: float = 0.0  # the input's starting value (number steps)
    lo: float = 0.0
    hi: float = 100.0
    choices: tuple[str, ...] = ()
    evidence: Evidence | None = None  # what kind of number the reveal is (the pages show its marker)


def with_unit(value: float, unit: str) -> str:
    """A guess as the learner would write it: "$1.5", "20 %", "3 x"."""
    return f"${value:g}" if unit == "$" else f"{value:g} {unit}".strip()


def is_close(step: Step, guess, reveal: Reveal) -> bool:
    """A choice: the right one. A number: within 25% of the computed answer (factor 0.8 to 1.25)."""
    if step.kind == "choice":
        return guess == step.choices[int(reveal.answer)]
    guess, answer = float(guess), float(reveal.answer)
    return answer != 0 and guess != 0 and 0.8 <= guess / answer <= 1.25


def gap_text(step: Step, guess, reveal: Reveal) -> str:
    """How far the guess was, in words: a factor for numbers, right/wrong for a choice."""
    if step.kind == "choice":
        right = step.choices[int(reveal.answer)]
        if guess == right:
            return f"Right: {right}."
        return f"You said {guess!r}; the computation says {right!r}."
    guess, answer = float(guess), float(reveal.answer)
    if answer == 0 or guess == 0:
        return f"You guessed {with_unit(guess, step.unit)}; the computation gives {reveal.answer_text}."
    factor = guess / answer
    if is_close(step, guess, reveal):
        return (f"Close: you guessed {with_unit(guess, step.unit)}, the computation gives {reveal.answer_text} "
                "(within 25%).")
    word = "high" if factor > 1 else "low"
    return (f"You guessed {with_unit(guess, step.unit)}; the computation gives {reveal.answer_text}: your guess was "
            f"{max(factor, 1 / factor):.1f}x too {word}.")


# ------------------------------------------------------------------------------------------ the steps
def sparsity() -> Reveal:
    """Home page: total vs active parameters of K3's released config (count_params on the meta device), reconciled
    with the seed's expert fraction (top-k / E, a different ratio)."""
    cfg = get_preset("kimi-k3")
    rep = count_params(cfg)
    shares = sparsity_shares("kimi-k3")  # the article's 1.8% (experts) beside this answer (parameters)
    pct = 100 * rep.activation_ratio
    routed = rep.by_component["routed_experts"] / rep.total
    routed_active = 100 * rep.active_by_component["routed_experts"] / rep.total
    attention = 100 * sum(v for c, v in rep.active_by_component.items() if c.startswith("attention")) / rep.total
    experts = 100 * cfg.moe.top_k / cfg.moe.n_routed_experts
    return Reveal(pct, f"{pct:.2f} %",
                  f"Of {rep.total / 1e12:.2f}T parameters a token multiplies with {rep.active / 1e9:.0f}B. The routed "
                  f"experts are {100 * routed:.1f}% of all parameters and a token visits {cfg.moe.top_k} of "
                  f"{cfg.moe.n_routed_experts} of them; the rest "
                  "of the active share is attention, shared experts, router and head, which every token uses. "
                  f"The seed's ~{experts:.1f}% is a different ratio: {cfg.moe.top_k} of {cfg.moe.n_routed_experts} "
                  f"routed experts ({experts:.2f}%). Counted in parameters, the experts a token visits are "
                  f"{routed_active:.2f}% of the whole and everything every token uses adds {pct - routed_active:.2f}%, "
                  f"{attention:.2f}% of it attention, all from the released config. "
                  f"If you answered the article's {100 * shares.expert_share:.1f}%: that counts experts, this counts "
                  f"parameters; the always-on {shares.always_on / 1e9:.0f}B make the difference (the article page "
                  "sets the two side by side).",
                  {"total parameters": f"{rep.total / 1e12:.2f} T", "active per token": f"{rep.active / 1e9:.1f} B",
                   "experts per token (top-k / E)": f"{experts:.2f} %"})


def latent() -> Reveal:
    """MoE page (d): wire bytes and expert FLOPs per token vs latent ratio at K3 width."""
    cfg = get_preset("kimi-k3")
    m = cfg.moe
    half, quarter = (latent_cost_per_token(cfg.d_model, m.expert_ffn_dim, m.top_k, m.n_shared_experts,
                                           m.one_shared_ffn_dim, r, n_experts=m.n_routed_experts)
                     for r in (0.5, 0.25))
    factor = quarter.wire_bytes / half.wire_bytes
    copies = deployment_bytes(cfg, REFERENCE).copies.total  # the MoE page's "copies each way"
    options = {"they halve": 0.5, "they fall to a quarter": 0.25, "unchanged": 1.0, "they double": 2.0}
    answer = min(range(len(options)), key=lambda i: abs(math.log(list(options.values())[i] / factor)))
    return Reveal(answer, f"x {factor:.2f}",
                  f"Only the latent crosses the wire, so the bytes follow l: {fmt_bytes(half.wire_bytes)} at "
                  f"l = {half.latent_dim} vs {fmt_bytes(quarter.wire_bytes)} at l = {quarter.latent_dim} per token per "
                  f"MoE layer (x {factor:.2f}; dispatch + combine of {copies:.2f} copies each way, one per GPU that "
                  f"hosts one of the top-{m.top_k} experts, on {REFERENCE.describe()}, "
                  f"record metadata included{', so not exactly half' if abs(factor - 0.5) > 0.005 else ''}). "
                  "The routed FLOPs follow l too "
                  f"({half.routed_flops / 1e9:.2f} -> {quarter.routed_flops / 1e9:.2f} GFLOP, x "
                  f"{quarter.routed_flops / half.routed_flops:.2f}); that saving is what LatentMoE spends on its "
                  f"top-{m.top_k} of {m.n_routed_experts} experts: at l = {m.latent_dim} of d = {cfg.d_model} they cost "
                  f"the expert FLOPs of top-{m.top_k * m.latent_dim / cfg.d_model:g} at full width. The shared experts "
                  "never cross the wire.",
                  {f"wire bytes, l = {half.latent_dim}": fmt_bytes(half.wire_bytes),
                   f"wire bytes, l = {quarter.latent_dim}": fmt_bytes(quarter.wire_bytes)})


def balancing() -> Reveal:
    """MoE page (b) at 64 experts, top-8, latent 1/4 (its sliders; it opens at K3's shape): held-out load per expert
    with no balancing vs quantile balancing (the page's own demo, `precomputed.moe_default_demo`: the trained model's
    hidden states, shipped or computed)."""
    demo = moe_default_demo()
    cfg = moe_default_cfg(0)  # only E and top-k are read here (they do not depend on the width)
    none, quant = 1 + demo.eval_violation["none"], 1 + demo.eval_violation["quantile"]
    return Reveal(none, f"{none:.2f}x the average",
                  f"With plain top-k the busiest of {cfg.n_routed_experts} experts got {none:.2f}x the even "
                  f"share of {demo.eval_tokens:,} held-out tokens x top-{cfg.top_k}; with quantile balancing "
                  "(routing stays token choice: each token takes its top-k of its scores minus a per-expert cut, "
                  "the cut read off earlier batches as the score that would have given the expert its N·k/E share; "
                  f"no step size) the busiest got "
                  f"{quant:.2f}x after {demo.updates} updates. The MoE page's numbers with its sliders at "
                  f"{cfg.n_routed_experts} experts, top-{cfg.top_k} (it opens at K3's {_K3.moe.n_routed_experts}, "
                  f"top-{_K3.moe.top_k}): the same seeded router fed the trained lite model's hidden states.",
                  {"busiest / average, no balancing": f"{none:.2f}", "busiest / average, quantile": f"{quant:.2f}"})


DECAY_WRITES = 64  # pairs the probe writes, the fact first


def decay() -> Reveal:
    """KDA page (d): the recall probe at its defaults (aligned keys), and with random keys for contrast."""
    probe = kda.recall_probe(DECAY_WRITES, fast_decay=0.9, keys="aligned")
    kda_r, gdn_r = float(probe.scores["KDA"][probe.fact_index]), float(probe.scores["Gated DeltaNet"][probe.fact_index])
    rand = kda.recall_probe(DECAY_WRITES, fast_decay=0.9, keys="random")
    kda_x, gdn_x = float(rand.scores["KDA"][rand.fact_index]), float(rand.scores["Gated DeltaNet"][rand.fact_index])
    n_slow = int((probe.kda_decays == 1).sum())
    n_chan = len(probe.kda_decays)

    def kept(kda_s: float, gdn_s: float) -> str:
        return {(True, False): "only KDA", (False, True): "only Gated DeltaNet", (True, True): "both",
                (False, False): "neither"}[(kda_s > 0.5, gdn_s > 0.5)]

    keeps = {"only KDA": kda_r > 0.5 >= gdn_r, "only Gated DeltaNet": gdn_r > 0.5 >= kda_r,
             "both": kda_r > 0.5 and gdn_r > 0.5, "neither": kda_r <= 0.5 and gdn_r <= 0.5}
    answer = list(keeps).index(next(k for k, v in keeps.items() if v))
    return Reveal(answer, f"KDA {kda_r:.2f}, Gated DeltaNet {gdn_r:.2f}",
                  f"Recall of the first fact after {DECAY_WRITES - 1} later writes (cosine with the stored value, "
                  f"1 = perfect): KDA {kda_r:.2f}, Gated DeltaNet {gdn_r:.2f}, so {kept(kda_r, gdn_r)} keeps it "
                  "(counted as kept above a cosine of 0.5). How the probe is built (`kda.recall_probe`, the KDA "
                  f"page's default 'aligned' keys): KDA's decay is set to a = 1 (never forget) in {n_slow} of its "
                  f"{n_chan} key channels and a = {float(probe.kda_decays.min()):.2f} in the rest; the fact's key is "
                  "placed in the never-decaying channels, the later keys mostly in the fast ones; Gated DeltaNet "
                  f"gets one decay per head with the same mean (a = {probe.gdn_decay:.3f}), which must forget the "
                  "fact to make room. So the probe shows what per-channel decay *can* do when a fact sits where "
                  f"nothing decays; with random keys (the page's other option) KDA {kda_x:.2f} and Gated DeltaNet "
                  f"{gdn_x:.2f}: {kept(kda_x, gdn_x)} keeps it.",
                  {"KDA recall of the first fact": f"{kda_r:.2f}", "Gated DeltaNet": f"{gdn_r:.2f}"})


def hybrid(gpu: str | None = None) -> Reveal:
    """3:1 hybrid page: KV cache reduction and decode speedup at 1M context, Kimi Linear 48B, on the GPU the hybrid
    page opens on (or `gpu`), at batch 1 and at the batch the HBM allows (the report's two figures)."""
    gpu = gpu or reference_gpu()
    red = 100 * kv_reduction(3, ONE_M_CONTEXT)
    speed = decode_cost(0, ONE_M_CONTEXT, hardware=gpu).tpot_s / decode_cost(3, ONE_M_CONTEXT, hardware=gpu).tpot_s
    filled = batch_limited_speedup(3, ONE_M_CONTEXT, hardware=gpu)
    n = gpus_for_one_sequence(3, ONE_M_CONTEXT, gpu)
    b0, b3 = (batch_limited(r, ONE_M_CONTEXT, gpu, n_gpus=n).batch for r in (0, 3))
    rep1, rep_full = REPORTED["tpot_speedup_1m_batch1"][0], REPORTED["tpot_speedup_1m"][0]

    def versus(ours: float, theirs: float) -> str:
        return compare(ours, theirs, "above", "below", "close to", rel_tol=0.05)

    def smaller() -> str:  # the 3:1 cache against all-MLA's, each time the sentence says it
        return compare(100 - red, 100, "larger", "smaller", "the same size")

    return Reveal(red, f"{abs(red):.1f} % {smaller()}",
                  f"Only the global layers keep a per-token cache, so the cache shrinks to the share of MLA layers: "
                  f"{abs(red):.1f}% {smaller()} (reported: up to 75%). Decoding is another matter, and the report gives "
                  f"two figures. At batch 1 every step also reads all active weights: the bytes model on the {gpu} the "
                  f"hybrid page opens on gives {speed:.2f}x, {versus(speed, rep1)} the reported {rep1}x at batch 1. Its "
                  f"{rep_full}x is a theoretical figure for the batch the {smaller()} cache lets a GPU hold: a throughput "
                  f"gain, not a shorter wait per user. Modelled that way on {n} × {gpu} ({b3} sequences at 3:1 against "
                  f"all-MLA's {b0}) ours is {filled:.2f}x the throughput, {versus(filled, rep_full)} it. The hybrid "
                  "page shows the batches and what limits them.",
                  {"KV cache reduction at 1M (3:1)": f"{red:.1f} %",
                   "decode speedup at 1M, batch 1: ours vs reported": f"{speed:.2f}x vs {rep1}x",
                   "throughput at the batch HBM allows: ours vs reported (theoretical)": f"{filled:.2f}x vs {rep_full}x"})


def residuals(preset: str = "kimi-k3") -> Reveal:
    """Attention Residuals page: depth-mix reads per token, full vs block (the preset's layers, width and block)."""
    cfg = get_preset(preset)
    full = attnres_cost(cfg.n_layers, cfg.d_model, "full")
    block = attnres_cost(cfg.n_layers, cfg.d_model, "block", cfg.attn_res_block_size)
    factor = full.read_bytes / block.read_bytes
    return Reveal(factor, f"{times(block.read_bytes, full.read_bytes, 'more', 'fewer', digits=1)} reads",
                  f"Full AttnRes: sublayer l reads all l earlier outputs, {fmt_bytes(full.read_bytes)} per token over "
                  f"{full.n_sublayers} sublayers. Blocks of {block_size_words(block.block_size)}, the unit K3's "
                  "released config states them in: each reads the embedding, the "
                  f"completed block sums and one partial sum, {fmt_bytes(block.read_bytes)}; a token keeps "
                  f"{block.live_sources} vectors instead of {full.live_sources}.",
                  {"full AttnRes reads per token": fmt_bytes(full.read_bytes),
                   f"block (S = {block.block_size}) reads per token": fmt_bytes(block.read_bytes)})


# The cost page's defaults (views/cost_per_task.py)
COST_PROFILE = TaskProfile(turns=20.0, input_tokens_per_turn=20_000.0, output_tokens_per_turn=1000.0,
                           success_rate=0.80, turn_retry_rate=0.05, cache_hit_rate=0.50, max_attempts=3)
COST_PLANNER_SHARE, COST_PLANNER_SUCCESS, COST_WORKER_SUCCESS = 0.075, 0.98, 0.80
COST_WORKER = ModelPrice("small worker", 0.10, 0.40, PRICES["small-worker"].cache_discount)


def cost(worker_success: float = COST_WORKER_SUCCESS, planner_share: float = COST_PLANNER_SHARE) -> Reveal:
    """Cost page, planner/worker: K3 alone vs K3 planning + a small worker, $ per completed task (the page's
    defaults; the arguments move its worker-success and planner-share sliders)."""
    alone = analyze(single_model(PRICES["kimi-k3"], COST_PROFILE))
    split = analyze(planner_worker(PRICES["kimi-k3"], COST_WORKER, COST_PROFILE, planner_share,
                                   COST_PLANNER_SUCCESS, worker_success))
    factor = alone.per_completed_task / split.per_completed_task
    return Reveal(factor, times(split.per_completed_task, alone.per_completed_task, "dearer", "cheaper", digits=1),
                  f"K3 alone: ${alone.per_completed_task:.3f} per completed task; K3 planning "
                  f"{100 * planner_share:.1f}% of the turns with a $0.10 / $0.40 worker doing the rest: "
                  f"${split.per_completed_task:.3f}. Such a split is said to be {sources.SPLIT_CLAIM}; the factor "
                  "rests on the worker being as "
                  f"reliable as K3 (here {100 * worker_success:.0f}% vs "
                  f"{100 * COST_PROFILE.success_rate:.0f}%; with the planner's {100 * COST_PLANNER_SUCCESS:.0f}% a split "
                  f"attempt succeeds {100 * COST_PLANNER_SUCCESS * worker_success:.1f}%): the "
                  "cost page shows how fast it falls when it is not.",
                  {"K3 alone": f"${alone.per_completed_task:.3f} / task",
                   "K3 plans + worker": f"${split.per_completed_task:.3f} / task"})


# The serving page's defaults (views/serving.py): 64 GB300 NVL72 GPUs, EP 64, the weights as K3 ships them
# (MXFP4 routed experts, bf16 elsewhere), 32K context
SERVING = Serving("kimi-k3", "GB300 NVL72", 64, 64, 1, dict(RELEASED_K3_FORMATS), 32768, True)


def weights_in_gpus(gpu: str = "B300") -> dict[str, float]:
    """K3's weights alone in GPUs' worth of HBM: "as released" (memory.RELEASED_K3_FORMATS: MXFP4 routed experts,
    bf16 rest), then "all <format>" with every weight in one format (serving.compare.gpus_for_weights)."""
    released = sum(memory.weight_bytes(get_preset("kimi-k3"), RELEASED_K3_FORMATS).values()) / get_gpu(gpu).hbm_bytes
    return {"as released": released, **{f"all {r.fmt}": r.gpus for r in gpus_for_weights("kimi-k3", gpu)}}


def serving_price() -> Reveal:
    """Serving page, section 3: $ per million output tokens at the largest batch that fits (a roofline floor)."""
    batch = check_fits(SERVING).max_batch_per_gpu
    step = decode_step(SERVING, batch)
    usd = step.usd_per_m_output_tokens
    listed = PRICES["kimi-k3"].output_per_m
    price_source = USD_PER_GPU_HOUR[SERVING.gpu][1] if SERVING.usd_per_gpu_hour is None else "set by the page"
    six = weights_in_gpus("B300")
    return Reveal(usd, f"${usd:.3f} per M output tokens",
                  f"{SERVING.n_gpus} {SERVING.gpu} GPUs at ${SERVING.price:.2f} per GPU-hour ({price_source}), "
                  f"{batch} sequences of "
                  f"{SERVING.context:,} tokens per GPU (all that fit), one decode step {step.step_s * 1e3:.1f} ms "
                  f"({step.bound}-bound): {step.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, "
                  f"{step.tokens_per_s_per_user:.0f} per user. That is a roofline, a floor on cost; the listed price "
                  f"(Moonshot AI's, ${listed:.0f} per M output tokens) is {listed / usd:.0f}x it at that assumed rate (at "
                  f"${2 * SERVING.price:.0f} per GPU-hour, {listed / (2 * usd):.0f}x), which pays for real kernel "
                  "efficiency, idle capacity, prefill and margin. The weights alone need "
                  f"{six['as released']:.2f} B300s as released (MXFP4 routed experts, bf16 rest; "
                  f"{six['all mxfp4']:.1f} if every weight were MXFP4, {six['all fp8']:.1f} at fp8): the seed's "
                  "'roughly six'.",
                  {"tokens/s per GPU": f"{step.tokens_per_s_per_gpu:,.0f}",
                   "tokens/s per user": f"{step.tokens_per_s_per_user:.1f}",
                   "listed output price (Moonshot AI)": f"${listed:.2f} per M"})


_K3 = get_preset("kimi-k3")  # the questions quote its numbers, so they follow the preset

STEPS: tuple[Step, ...] = (
    Step("sparsity", "Sparsity", "K3 has 2.8 trillion parameters but each token uses only a small slice of them.",
         "What percentage of K3's parameters does one token multiply with?", "number", "home", sparsity, "%",
         10.0, 0.01, 100.0, evidence=derived(count_params, sparsity_shares)),
    Step("latent", "Latent compression", "LatentMoE squeezes each token into a smaller latent before it is sent to "
         "experts on other GPUs.", "K3 sends a 3584-number latent (half of d = 7168). Halve the latent again: what "
         "happens to the bytes on the wire per token?", "choice", "moe", latent,
         choices=("they halve", "they fall to a quarter", "unchanged", "they double"),
         evidence=derived(latent_cost_per_token, deployment_bytes)),
    Step("balancing", "Quantile balancing", "Experts are assigned by rank within the batch (grading on a curve), so "
         "no expert is swamped.", "64 experts, top-8, no balancing at all: the busiest expert gets how many times "
         "the average load?", "number", "moe", balancing, "x the average", 2.0, 1.0, 64.0,
         evidence=measured_here("the MoE page's default demo, k3lite.experiments.precomputed.moe_default_demo: "
                                "shipped by `python -m k3lite.experiments.precomputed`, or run on this server")),
    Step("decay", "Per-channel decay", "KDA forgets per key channel, not per head, so it can keep an old fact while "
         "flushing recent noise.", f"In the KDA page's recall probe, {DECAY_WRITES - 1} pairs are written after a "
         "fact. Which still recalls the fact: KDA (one decay per channel) or Gated DeltaNet (one per head)?", "choice", "kda", decay,
         choices=("only KDA", "only Gated DeltaNet", "both", "neither"),
         evidence=measured_here(f"kda.recall_probe({DECAY_WRITES}, fast_decay=0.9, keys='aligned'), run on this "
                                "server (the KDA page's probe)")),
    Step("hybrid", "The 3:1 hybrid", "Three KDA layers per global MLA (Multi-head Latent Attention) layer keep full "
         "recall where it counts and cut the cache.", "Kimi Linear 48B at a 1M-token context: how much smaller is the KV cache with 3:1 than with "
         "every layer MLA (in %)?", "number", "hybrid_attention", hybrid, "%", 50.0, 0.0, 100.0,
         evidence=derived(kv_reduction, decode_cost, batch_limited_speedup)),
    Step("residuals", "Block residuals", "Attention Residuals let each layer attend over earlier layers; blocks keep "
         "that cheap.", f"K3's {_K3.n_layers} layers, d = {_K3.d_model}: full AttnRes vs blocks of "
         f"{block_size_words(_K3.attn_res_block_size)}. How many times fewer bytes does the block version read per "
         "token?", "number", "attention_residuals", residuals, "x", 2.0, 1.0,
         1000.0, evidence=derived(attnres_cost)),
    Step("cost", "Cost per task", "A big planner with a small worker is said (seed article, directional) to be "
         "~9-10x cheaper for the same result.", f"K3 plans {100 * COST_PLANNER_SHARE:.1f}% of the turns, a $0.10 / $0.40 worker does the rest; an attempt "
         f"succeeds {100 * COST_PROFILE.success_rate:.0f}% of the time with K3 alone, "
         f"{100 * COST_PLANNER_SUCCESS * COST_WORKER_SUCCESS:.1f}% with the split (planner "
         f"{100 * COST_PLANNER_SUCCESS:.0f}% x worker {100 * COST_WORKER_SUCCESS:.0f}%). How many times cheaper per "
         "completed task than K3 alone?", "number", "cost_per_task", cost,
         "x", 5.0, 0.1, 1000.0, evidence=derived(analyze, planner_worker)),
    Step("serving", "Serving price", "K3 is listed at $3 / $15 per million input / output tokens (Moonshot AI's "
         "price list); what does serving physics say a token costs?", "64 GB300 GPUs serve K3 (4-bit experts, 32K-token contexts, as many users as "
         "fit). What do a million output tokens cost in GPU time, in dollars?", "number", "serving", serving_price,
         "$", 1.0, 0.001, 1000.0, evidence=derived(decode_step, check_fits)),
)


# ------------------------------------------------------------------------------------------ the closing summary
def summary(guesses: dict[int, object], revealed: set[int], compute: Callable[[int], Reveal] | None = None
            ) -> tuple[list[dict], str]:
    """The tour's closing summary: one row per step (your guess, the computed answer, close or not, the page) and a
    sentence counting how many revealed guesses were close. `guesses`/`revealed` use 1-based step numbers;
    `compute(index)` (0-based) defaults to the step's own compute (the page passes its cached one)."""
    compute = compute or (lambda index: STEPS[index].compute())
    rows, close = [], 0
    for i, step in enumerate(STEPS, start=1):
        guess = guesses.get(i)
        shown = "—" if guess is None else (with_unit(float(guess), step.unit) if step.kind == "number" else str(guess))
        if i in revealed:
            reveal = compute(i - 1)
            hit = guess is not None and is_close(step, guess, reveal)
            close += hit
            rows.append({"step": f"step {i}: {step.title}", "your guess": shown, "computed": reveal.answer_text,
                         "close?": "yes" if hit else "no", "page": step.page})
        else:
            rows.append({"step": f"step {i}: {step.title}", "your guess": shown, "computed": "not revealed yet",
                         "close?": "—", "page": step.page})
    n = len(revealed & set(range(1, len(STEPS) + 1)))
    sentence = (f"You revealed {n} of {len(STEPS)} steps; {close} of your {n} revealed guesses were close (a number "
                "within 25%, or the right choice)." if n else f"No step revealed yet: all {len(STEPS)} are waiting.")
    return rows, sentence
