"""The K3 argument in N steps: one claim of the seed article per step, predicted first, then computed.

Each step asks for a number or a direction, then runs the computation with the function the page that goes
deeper calls (and that page's default settings), and explains the gap between the guess and the answer.
No Streamlit here: views/tour.py draws it, tests call `Step.compute()` directly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

from k3lite import kda
from k3lite.attnres import attnres_cost
from k3lite.config import get_preset
from k3lite.cost import PRICES, ModelPrice, TaskProfile, analyze, planner_worker, single_model
from k3lite.interconnect import REFERENCE
from k3lite.memory import RELEASED_K3_FORMATS
from k3lite.hybrid import REPORTED, decode_cost, kv_reduction
from k3lite.moe import latent_cost_per_token
from k3lite.precomputed import moe_default_cfg, moe_default_demo
from k3lite.params import count_params
from k3lite.serving import Serving, check_fits, decode_step
from k3lite.serving_compare import gpus_for_weights
from k3lite.viz.style import fmt_bytes

ONE_M = 1_048_576


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


def with_unit(value: float, unit: str) -> str:
    """A guess as the learner would write it: "$1.5", "20 %", "3 x"."""
    return f"${value:g}" if unit == "$" else f"{value:g} {unit}".strip()


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
    if 0.8 <= factor <= 1.25:
        return (f"Close: you guessed {with_unit(guess, step.unit)}, the computation gives {reveal.answer_text} "
                "(within 25%).")
    word = "high" if factor > 1 else "low"
    return (f"You guessed {with_unit(guess, step.unit)}; the computation gives {reveal.answer_text}: your guess was "
            f"{max(factor, 1 / factor):.1f}x too {word}.")


# ------------------------------------------------------------------------------------------ the steps
def sparsity() -> Reveal:
    """Home page: total vs active parameters of K3's released config (count_params on the meta device)."""
    cfg = get_preset("kimi-k3")
    rep = count_params(cfg)
    pct = 100 * rep.activation_ratio
    routed = rep.by_component["routed_experts"] / rep.total
    return Reveal(pct, f"{pct:.2f} %",
                  f"Of {rep.total / 1e12:.2f}T parameters a token multiplies with {rep.active / 1e9:.0f}B. The routed "
                  f"experts are {100 * routed:.1f}% of all parameters and a token visits {cfg.moe.top_k} of "
                  f"{cfg.moe.n_routed_experts} of them; the rest "
                  "of the active share is attention, shared experts, router and head, which every token uses.",
                  {"total parameters": f"{rep.total / 1e12:.2f} T", "active per token": f"{rep.active / 1e9:.1f} B"})


def latent() -> Reveal:
    """MoE page (d): wire bytes and expert FLOPs per token vs latent ratio at K3 width."""
    cfg = get_preset("kimi-k3")
    m = cfg.moe
    half, quarter = (latent_cost_per_token(cfg.d_model, m.expert_ffn_dim, m.top_k, m.n_shared_experts,
                                           m.one_shared_ffn_dim, r, n_experts=m.n_routed_experts)
                     for r in (0.5, 0.25))
    factor = quarter.wire_bytes / half.wire_bytes
    options = {"they halve": 0.5, "they fall to a quarter": 0.25, "unchanged": 1.0, "they double": 2.0}
    answer = min(range(len(options)), key=lambda i: abs(math.log(list(options.values())[i] / factor)))
    return Reveal(answer, f"x {factor:.2f}",
                  f"Only the latent crosses the wire, so the bytes follow l: {fmt_bytes(half.wire_bytes)} at "
                  f"l = {half.latent_dim} vs {fmt_bytes(quarter.wire_bytes)} at l = {quarter.latent_dim} per token per "
                  f"MoE layer (x {factor:.2f}; dispatch + combine of top-{m.top_k} copies on {REFERENCE.describe()}, "
                  f"record metadata included{', so not exactly half' if abs(factor - 0.5) > 0.005 else ''}). "
                  "The routed FLOPs fall by half too "
                  f"({half.routed_flops / 1e9:.2f} -> {quarter.routed_flops / 1e9:.2f} GFLOP); the saving is what "
                  "LatentMoE spends on more experts and a higher top-k. The shared experts never cross the wire.",
                  {f"wire bytes, l = {half.latent_dim}": fmt_bytes(half.wire_bytes),
                   f"wire bytes, l = {quarter.latent_dim}": fmt_bytes(quarter.wire_bytes)})


def balancing() -> Reveal:
    """MoE page (b) at its defaults: held-out load per expert with no balancing vs quantile balancing (the page's
    own demo, `precomputed.moe_default_demo`: the trained model's hidden states, shipped or computed)."""
    demo = moe_default_demo()
    cfg = moe_default_cfg(0)  # only E and top-k are read here (they do not depend on the width)
    none, quant = 1 + demo.eval_violation["none"], 1 + demo.eval_violation["quantile"]
    return Reveal(none, f"{none:.2f}x the average",
                  f"With plain top-k the busiest of {cfg.n_routed_experts} experts got {none:.2f}x the even "
                  f"share of {demo.eval_tokens:,} held-out tokens x top-{cfg.top_k}; with quantile balancing "
                  f"(each expert takes the tokens that rank in its top N·k/E, no step size) the busiest got "
                  f"{quant:.2f}x after {demo.updates} updates. The MoE page's numbers at its defaults: the same "
                  "seeded router fed the trained lite model's hidden states.",
                  {"busiest / average, no balancing": f"{none:.2f}", "busiest / average, quantile": f"{quant:.2f}"})


def decay() -> Reveal:
    """KDA page (d): the recall probe at its defaults with aligned keys."""
    probe = kda.recall_probe(64, fast_decay=0.9, keys="aligned")
    kda_r, gdn_r = float(probe.scores["KDA"][probe.fact_index]), float(probe.scores["Gated DeltaNet"][probe.fact_index])
    keeps = {"only KDA": kda_r > 0.5 >= gdn_r, "only Gated DeltaNet": gdn_r > 0.5 >= kda_r,
             "both": kda_r > 0.5 and gdn_r > 0.5, "neither": kda_r <= 0.5 and gdn_r <= 0.5}
    answer = list(keeps).index(next(k for k, v in keeps.items() if v))
    return Reveal(answer, f"KDA {kda_r:.2f}, Gated DeltaNet {gdn_r:.2f}",
                  f"Recall of the first fact after 64 writes (cosine with the stored value, 1 = perfect): "
                  f"KDA {kda_r:.2f}, "
                  f"Gated DeltaNet {gdn_r:.2f}. One scalar decay per head (a = {probe.gdn_decay:.3f}) must forget the "
                  "fact to make room; KDA keeps a quarter of its key channels at a = 1 and forgets fast in the others, "
                  "so a fact stored in the slow channels survives. Counted as kept above a cosine of 0.5.",
                  {"KDA recall of the first fact": f"{kda_r:.2f}", "Gated DeltaNet": f"{gdn_r:.2f}"})


def hybrid() -> Reveal:
    """3:1 hybrid page: KV cache reduction and decode speedup at 1M context, Kimi Linear 48B, batch 1, H100."""
    red = 100 * kv_reduction(3, ONE_M)
    speed = decode_cost(0, ONE_M).tpot_s / decode_cost(3, ONE_M).tpot_s
    reported = REPORTED["tpot_speedup_1m"][0]
    return Reveal(red, f"{red:.1f} % smaller",
                  f"Only the global layers keep a per-token cache, so the cache shrinks to the share of MLA layers: "
                  f"{red:.1f}% smaller (reported: up to 75%). Decoding is another matter: at batch 1 every step also "
                  f"reads all active weights, so the bytes model gives {speed:.2f}x faster against the reported "
                  f"{reported}x ({'far below' if speed < 0.8 * reported else 'close to'} it); the hybrid page shows "
                  "which assumptions move it.",
                  {"KV cache reduction at 1M (3:1)": f"{red:.1f} %",
                   "decode speedup at 1M, batch 1 (ours)": f"{speed:.2f}x",
                   "decode speedup reported": f"{reported}x"})


def residuals() -> Reveal:
    """Attention Residuals page: depth-mix reads per token, full vs block (93 layers, d 7168, blocks of 12 layers)."""
    cfg = get_preset("kimi-k3")
    full = attnres_cost(cfg.n_layers, cfg.d_model, "full")
    block = attnres_cost(cfg.n_layers, cfg.d_model, "block", cfg.attn_res_block_size)
    factor = full.read_bytes / block.read_bytes
    return Reveal(factor, f"{factor:.1f}x fewer reads",
                  f"Full AttnRes: sublayer l reads all l earlier outputs, {fmt_bytes(full.read_bytes)} per token over "
                  f"{full.n_sublayers} sublayers. Blocks of {block.block_size} sublayers: each reads the embedding, "
                  "the "
                  f"completed block sums and one partial sum, {fmt_bytes(block.read_bytes)}; a token keeps "
                  f"{block.live_sources} vectors instead of {full.live_sources}.",
                  {"full AttnRes reads per token": fmt_bytes(full.read_bytes),
                   f"block (S = {block.block_size}) reads per token": fmt_bytes(block.read_bytes)})


# The cost page's defaults (views/cost_per_task.py)
COST_PROFILE = TaskProfile(turns=20.0, input_tokens_per_turn=20_000.0, output_tokens_per_turn=1000.0,
                           success_rate=0.80, turn_retry_rate=0.05, cache_hit_rate=0.50, max_attempts=3)
COST_PLANNER_SHARE, COST_PLANNER_SUCCESS, COST_WORKER_SUCCESS = 0.075, 0.98, 0.80
COST_WORKER = ModelPrice("small worker", 0.10, 0.40, PRICES["small-worker"].cache_discount)


def cost() -> Reveal:
    """Cost page, planner/worker: K3 alone vs K3 planning + a small worker, $ per completed task."""
    alone = analyze(single_model(PRICES["kimi-k3"], COST_PROFILE))
    split = analyze(planner_worker(PRICES["kimi-k3"], COST_WORKER, COST_PROFILE, COST_PLANNER_SHARE,
                                   COST_PLANNER_SUCCESS, COST_WORKER_SUCCESS))
    factor = alone.per_completed_task / split.per_completed_task
    return Reveal(factor, f"{factor:.1f}x cheaper",
                  f"K3 alone: ${alone.per_completed_task:.3f} per completed task; K3 planning "
                  f"{100 * COST_PLANNER_SHARE:.1f}% of the turns with a $0.10 / $0.40 worker doing the rest: "
                  f"${split.per_completed_task:.3f}. The seed reports ~9-10x; the factor rests on the worker being as "
                  f"reliable as K3 (here {100 * COST_WORKER_SUCCESS:.0f}% vs "
                  f"{100 * COST_PROFILE.success_rate:.0f}%): the "
                  "cost page shows how fast it falls when it is not.",
                  {"K3 alone": f"${alone.per_completed_task:.3f} / task",
                   "K3 plans + worker": f"${split.per_completed_task:.3f} / task"})


# The serving page's defaults (views/serving.py): 64 GB300 NVL72 GPUs, EP 64, the weights as K3 ships them
# (MXFP4 routed experts, bf16 elsewhere), 32K context
SERVING = Serving("kimi-k3", "GB300 NVL72", 64, 64, 1, dict(RELEASED_K3_FORMATS), 32768, True)


def serving_price() -> Reveal:
    """Serving page, section 3: $ per million output tokens at the largest batch that fits (a roofline floor)."""
    batch = check_fits(SERVING).max_batch_per_gpu
    step = decode_step(SERVING, batch)
    usd = step.usd_per_m_output_tokens
    listed = PRICES["kimi-k3"].output_per_m
    six = {r.fmt: r for r in gpus_for_weights("kimi-k3", "B300")}
    return Reveal(usd, f"${usd:.3f} per M output tokens",
                  f"{SERVING.n_gpus} {SERVING.gpu} GPUs at ${SERVING.price:.2f} per GPU-hour, {batch} sequences of "
                  f"{SERVING.context:,} tokens per GPU (all that fit), one decode step {step.step_s * 1e3:.1f} ms "
                  f"({step.bound}-bound): {step.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, "
                  f"{step.tokens_per_s_per_user:.0f} per user. That is a roofline, a floor on cost; the listed price "
                  f"(${listed:.0f} per M output tokens) is {listed / usd:.0f}x it, which pays for real kernel "
                  "efficiency, idle capacity, prefill and margin. The weights alone need "
                  f"{six['mxfp4'].gpus:.1f} B300s at MXFP4 ({six['fp8'].gpus:.1f} at fp8): the seed's 'roughly six'.",
                  {"tokens/s per GPU": f"{step.tokens_per_s_per_gpu:,.0f}",
                   "tokens/s per user": f"{step.tokens_per_s_per_user:.1f}",
                   "listed output price": f"${listed:.2f} per M"})


STEPS: tuple[Step, ...] = (
    Step("sparsity", "Sparsity", "K3 has 2.8 trillion parameters but each token uses only a small slice of them.",
         "What percentage of K3's parameters does one token multiply with?", "number", "home", sparsity, "%",
         10.0, 0.01, 100.0),
    Step("latent", "Latent compression", "LatentMoE squeezes each token into a smaller latent before it is sent to "
         "experts on other GPUs.", "K3 sends a 3584-number latent (half of d = 7168). Halve the latent again: what "
         "happens to the bytes on the wire per token?", "choice", "moe", latent,
         choices=("they halve", "they fall to a quarter", "unchanged", "they double")),
    Step("balancing", "Quantile balancing", "Experts are assigned by rank within the batch (grading on a curve), so "
         "no expert is swamped.", "64 experts, top-8, no balancing at all: the busiest expert gets how many times "
         "the average load?", "number", "moe", balancing, "x the average", 2.0, 1.0, 64.0),
    Step("decay", "Per-channel decay", "KDA forgets per key channel, not per head, so it can keep an old fact while "
         "flushing recent noise.", "64 pairs are written after a fact. Which still recalls the fact: KDA (one decay "
         "per channel) or Gated DeltaNet (one per head)?", "choice", "kda", decay,
         choices=("only KDA", "only Gated DeltaNet", "both", "neither")),
    Step("hybrid", "The 3:1 hybrid", "Three KDA layers per global MLA layer keep full recall where it counts and cut "
         "the cache.", "Kimi Linear 48B at a 1M-token context: how much smaller is the KV cache with 3:1 than with "
         "every layer MLA (in %)?", "number", "hybrid_attention", hybrid, "%", 50.0, 0.0, 100.0),
    Step("residuals", "Block residuals", "Attention Residuals let each layer attend over earlier layers; blocks keep "
         "that cheap.", "K3's 93 layers, d = 7168: full AttnRes vs blocks of 12 layers (24 sublayers). How many times fewer "
         "bytes does the block version read per token?", "number", "attention_residuals", residuals, "x", 2.0, 1.0,
         1000.0),
    Step("cost", "Cost per task", "A big planner with a small worker is reported as ~9-10x cheaper for the same "
         "result.", "K3 plans 7.5% of the turns, a $0.10 / $0.40 worker does the rest, both succeed 80% of the time "
         "per attempt. How many times cheaper per completed task than K3 alone?", "number", "cost_per_task", cost,
         "x", 5.0, 0.1, 1000.0),
    Step("serving", "Serving price", "K3 is listed at $3 / $15 per million input / output tokens; what does serving "
         "physics say a token costs?", "64 GB300 GPUs serve K3 (4-bit experts, 32K-token contexts, as many users as "
         "fit). What do a million output tokens cost in GPU time, in dollars?", "number", "serving", serving_price,
         "$", 1.0, 0.001, 1000.0),
)
