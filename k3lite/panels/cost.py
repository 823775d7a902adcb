"""The cost-per-task page's panels: what the page computes and says, without Streamlit (views/cost_per_task.py lays
them out and draws the widgets).

    model_rows / strategies_from      the per-model table (prices, success, turns) and the strategies it prices
    cheapest_sentence                 the side-by-side's verdict, built from the rows
    pair_panel(pair, profile, prices) K3 and the compared config priced by the same serving physics, per task
    planner_numbers, planner_note     the planner / worker split at the page's settings, and its assumptions line
    split_assumptions                 the assumptions block's rows for the split's saving
"""
from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from k3lite.analytic.cost import (
    PRICES, ModelPrice, Scenario, Strategy, TaskProfile, analyze, planner_worker, single_model,
)
from k3lite.analytic.cost_words import SplitNotice, comparison_sentence, split_sentence
from k3lite.analytic.sensitivity import Assumption
from k3lite.analytic.serving.compare import FAST_TOKENS_PER_USER, SUPER_NODE, frontier_prices
from k3lite.analytic.serving.deployment import MIN_TOKENS_PER_USER, USD_PER_GPU_HOUR, Serving, price_table
from k3lite.analytic.serving.price import DEFAULT_SHAPE, price_at_speed
from k3lite.analytic.serving.step import placement, decode_step, prefill_step, token_flops
from k3lite.base import sources
from k3lite.base.units import fmt_bytes
from k3lite.base.evidence import assumed, derived, kind_of
from k3lite.base.wording import agreeing, compare, direction, times
from k3lite.model.cards import display_name
from k3lite.panels.core import Pair, Panel, Said, where_else
from k3lite.viz.compare import paired_bars
from k3lite.viz.memo import shared_figure

PRICE_LISTS = PRICES["kimi-k3"].evidence  # K3's list price: the class every listed price carries
PER_MODEL = assumed("ours: the scenario's success and turns per model (the seed article gives none); edit them here")
SAME_TASK = assumed("ours: the task (turns, tokens per turn, cache hits, success) is K3's for both models")
SPLIT_ASSUMED = assumed("the worker's price and success, the planner's 98%")
PLANNER_TITLE = "Planner / worker: K3 plans, a small model works"
PLANNER_SUCCESS = 0.98  # ours: the planner's part of an attempt (the split's attempt succeeds this x the worker's)


def dollars(text: str) -> str:
    """Escape $ for Markdown (two dollar signs in one text would otherwise render as LaTeX)."""
    return text.replace("$", "\\$")


WHY_PER_TASK = (
    "A price list says dollars per million tokens; a user pays per *finished task*. An agentic task is many "
    "turns, each re-sending its growing context; some calls fail and are re-sent; some attempts fail and are "
    "retried from scratch. So the bill per completed task is `$ per attempt / success rate`, and a model that "
    "is cheaper per token can be dearer per task. A big planner with a small worker is said to be "
    f"{sources.SPLIT_CLAIM}; below you can see which assumptions give that, and which do not.")


def own_prices(values: dict) -> tuple:
    """((GPU, $ per GPU-hour), ...) for each price in `values` ({GPU: a raw value from the session or the link})
    that is a number in (0, 1000) and differs from the GPU's default: the reader's own prices, sorted."""
    out = {}
    for g, raw in values.items():
        try:
            v = float(raw)
        except (TypeError, ValueError):
            continue
        if 0 < v < 1000 and v != USD_PER_GPU_HOUR[g][0]:
            out[g] = v
    return tuple(sorted(out.items()))


def physics_caption(physics: ModelPrice) -> str:
    """The serving-physics row's source line ($ escaped for Markdown)."""
    return (f"**{physics.name}**: {physics.source}; \\${physics.input_per_m:.3f} / \\${physics.output_per_m:.3f} per "
            "M input / output tokens: what producing the tokens costs at the bound, no margin, against the "
            "list prices above.")


# ------------------------------------------------------------------------------------------ side by side
MODEL_COLUMNS = {"$ / M input": PRICE_LISTS, "$ / M output": PRICE_LISTS, "cache discount (%)": PRICE_LISTS,
                 "success per attempt (%)": PER_MODEL, "turns per attempt": PER_MODEL}
PRICE_COLUMNS = ("$ / M input", "$ / M output")


def model_columns(listed: dict[str, ModelPrice]) -> dict:
    """MODEL_COLUMNS for these rows: each price column carries the classes of its rows' prices (a list price is
    listed, a serving-physics price derived: `ModelPrice.evidence`); the cache discount is always a list's (the
    physics row borrows K3's)."""
    classes = tuple(dict.fromkeys(p.evidence.kind for p in listed.values()))
    evs = tuple(next(p.evidence for p in listed.values() if p.evidence.kind == k) for k in classes)
    return {**MODEL_COLUMNS, **{c: evs if len(evs) > 1 else evs[0] for c in PRICE_COLUMNS}}


def model_rows(listed: dict[str, ModelPrice], scenario: Scenario, turns: float, success: float) -> list[dict]:
    """The per-model table: each listed model's prices (and, when the rows' classes differ, which each row's is),
    and its success and turns under `scenario` (K3's `success` (0-1) and `turns` for a model the scenario does not
    name)."""
    mixed = len({p.evidence.kind for p in listed.values()}) > 1
    return [{"model": p.name, **({"price is": f"{p.evidence.kind} {p.evidence.marker}"} if mixed else {}),
             "$ / M input": p.input_per_m, "$ / M output": p.output_per_m,
             "cache discount (%)": 100 * p.cache_discount,
             "success per attempt (%)": 100 * scenario.success.get(key, success),
             "turns per attempt": float(turns) * scenario.turns_factor.get(key, 1.0)} for key, p in listed.items()]


def _plain(column: str) -> str:
    """A column's name without its evidence marker(s): '$ / M input ˡ ᵈ' -> '$ / M input'."""
    words = column.split(" ")
    while len(words) > 1 and kind_of(words[-1]) and len(words[-1]) == 1:
        words.pop()
    return " ".join(words)


def strategies_from(rows: list[dict], profile: TaskProfile) -> list[Strategy]:
    """Single-model strategies from the table's rows as the reader left them (column names may carry their
    evidence marker after a space: 'turns per attempt ᵃ')."""
    out = []
    for r in rows:
        col = {(_plain(k) if k not in MODEL_COLUMNS else k): k for k in r}  # plain name -> marked
        for k in MODEL_COLUMNS:
            col.setdefault(k, k)
        price = ModelPrice(r["model"], float(r[col["$ / M input"]]), float(r[col["$ / M output"]]),
                           float(r[col["cache discount (%)"]]) / 100)
        out.append(single_model(price, profile.with_(success_rate=float(r[col["success per attempt (%)"]]) / 100,
                                                     turns=float(r[col["turns per attempt"]]))))
    return out


def cheapest_sentence(scenario_key: str, scenario: Scenario, keys: list[str], strategies: list[Strategy]) -> str:
    """The side-by-side's verdict: the cheapest per completed task, K3's figure, and why K3 differs from each
    other listed model (K3's strategy first; `keys` the PRICES keys of the strategies, 'physics' for the
    serving-physics row)."""
    rows = [analyze(s) for s in strategies]
    cheapest = min(rows, key=lambda r: r.per_completed_task)
    k3 = strategies[0]
    return (f"**{scenario.label.capitalize()}:** {cheapest.name} is cheapest per completed task "
            f"(${cheapest.per_completed_task:.2f}; K3 ${rows[0].per_completed_task:.2f}). "
            + " ".join(comparison_sentence(k3, s) for key, s in zip(keys, strategies)
                       if key not in ("kimi-k3", "physics"))
            + (" The article's ~9-10x per-task saving is for K3 *planning* with a small worker doing most turns (the "
               "planner / worker section below), not for K3 alone." if scenario_key == "article" else ""))


# ------------------------------------------------------------------------------------------ K3 beside another config
class PhysicsCost(NamedTuple):
    """One config priced by serving physics on the page's deployment."""

    price: ModelPrice
    batch: int  # sequences per GPU at the best batch (>= MIN_TOKENS_PER_USER tokens/s each)
    bytes_per_token: float  # HBM bytes one GPU reads per decoded token at that batch
    prefill_flops: float  # per input token (prefill over half the context on average)
    prefill_bound: str
    cache: float  # HBM bytes of one sequence's cache on one GPU (part of bytes_per_token)


def _digits(a: float, b: float) -> int:
    """One decimal for a ratio, two where one would print "1.0x" for a real difference."""
    return 1 if max(a, b) >= 1.1 * min(a, b) else 2


def _times(a: float, b: float, more: str, less: str, same: str) -> str:
    """wording.times with _digits decimals."""
    return times(a, b, more, less, same, digits=_digits(a, b))


def physics_serving(cfg, prices: tuple = ()) -> Serving:
    """The cost page's deployment (compare.SUPER_NODE, K3's released weight formats, the shared price table's $
    for its GPU) serving `cfg`."""
    s = Serving(cfg, **SUPER_NODE)
    return s.with_(usd_per_gpu_hour=price_table(dict(prices))[s.gpu][0])


@lru_cache(maxsize=32)
def physics_cost(cfg, prices: tuple = ()) -> PhysicsCost:
    """`cfg` priced on `physics_serving`: decode at the best batch, prefill on the same GPUs (as
    compare.physics_price prices K3); the prompt-cache discount is K3's listed one for every config."""
    s, shape = physics_serving(cfg, prices), DEFAULT_SHAPE
    p = price_at_speed(s, shape, MIN_TOKENS_PER_USER, "bound")  # the one request price (serving/price.py)
    if p is None:
        raise ValueError(f"{s.n_gpus} x {s.gpu} serve {display_name(s.name)} at no batch that keeps "
                         f"{MIN_TOKENS_PER_USER:.0f} tokens/s per user")
    dec = s.with_(context=shape.decode_context)
    b = int(p.concurrency) // s.n_gpus
    st, pre = decode_step(dec, b), prefill_step(s.with_(context=shape.input_len))
    price = ModelPrice(f"{display_name(s.name)} (serving physics)", p.usd_per_m_input, p.usd_per_m_output,
                       PRICES["kimi-k3"].cache_discount,
                       f"k3lite.analytic.serving on {s.n_gpus} x {s.gpu}, one request of {shape.label}", kind="derived")
    return PhysicsCost(price, b, st.hbm_bytes / (b * st.tokens_per_step),
                       token_flops(s.cfg, max(1, shape.input_len // 2), prefill=True).total, pre.bound,
                       placement(dec).cache_bytes_per_sequence)


PARTS = ("input", "cached input", "output", "whole task")


def _parts(row) -> list[float]:
    return [row.input_cost, row.cached_input_cost, row.output_cost, row.per_completed_task]


def pair_figure(k3: list[float], other: list[float], names: tuple[str, str], ablation: bool):
    """$ per completed task by what it pays for, the two configs side by side on one axis."""
    return paired_bars(PARTS, k3, other, names, ablation, dict(title="$ per completed task", rangemode="tozero"),
                       text=([f"${v:.3f}" for v in k3], [f"${v:.3f}" for v in other]), hover="$%{y:.4f}",
                       title="Priced by the same serving physics")


def pair_panel(pair: Pair, profile: TaskProfile, prices: tuple = ()) -> Panel:
    """K3 and the compared config, each priced by serving physics on the same deployment, doing the same task
    (`profile`: the same turns, tokens and success, an assumption): $ per completed task by part, and two
    sentences: which is cheaper per task, and what drives it (bytes per decoded token, prefill FLOPs)."""
    a, b = physics_cost(pair.k3, prices), physics_cost(pair.other, prices)
    ra, rb = analyze(single_model(a.price, profile)), analyze(single_model(b.price, profile))
    k3n, on = pair.k3_label, pair.label
    s = physics_serving(pair.k3, prices)
    word = _times(ra.per_completed_task, rb.per_completed_task, "dearer", "cheaper", "about as dear")
    task = agreeing(ra.per_completed_task, rb.per_completed_task, _digits(ra.per_completed_task, rb.per_completed_task))
    head = (f"Priced by the same serving physics ({s.n_gpus} x {s.gpu}, K3's released weight formats, "
            f"requests of {DEFAULT_SHAPE.label}, {MIN_TOKENS_PER_USER:.0f}+ tokens/s per user), a completed task costs "
            f"${task[0]} on {k3n} and ${task[1]} on {on}: {k3n} is {word}"
            + (" per task." if word != "about as dear" else f" as {on} per task.")
            + " The task is assumed the same for both (K3's turns, tokens per turn, cache hits and success): "
            "a model that needs more turns or fails more often would move it. One fixed deployment at this slow "
            "speed prices both; the Serving page searches every GPU and layout at your speed, where the ranking "
            "can differ.")
    gb = (a.bytes_per_token / 1e9, b.bytes_per_token / 1e9)
    if direction(ra.per_completed_task, rb.per_completed_task) == 0:
        rel = abs(ra.per_completed_task - rb.per_completed_task) / ra.per_completed_task
        change = "changes nothing here" if rel == 0 else f"moves the $ per task by {100 * rel:.3f}%"
        shown = [(f"{gb[0]:.2f} GB", f"{gb[1]:.2f} GB"), (f"{a.batch}", f"{b.batch}"),
                 (f"{a.prefill_flops / 1e9:.0f}", f"{b.prefill_flops / 1e9:.0f}")]
        same = all(x == y for x, y in shown)
        (g0, g1), (b0, b1), (f0, f1) = shown
        why = (f"{on} {change}: " + (f"{g0} of HBM per decoded token, {b0} sequences per GPU and {f0} GFLOPs per input "
                                      "token either way" if same else
                                      f"{g0} vs {g1} of HBM per decoded token, {b0} vs {b1} sequences per GPU, {f0} vs "
                                      f"{f1} GFLOPs per input token") + ".")
        if pair.ablation:
            idea = pair.comparison.idea
            where = where_else(pair, "cost_per_task") or "its difference shows on its own page"
            why += (f" {idea[0].upper() + idea[1:]} against {pair.comparison.instead} would show in quality (success per "
                    f"attempt and turns, taken as K3's here); {where}.")
    else:
        ins = (ra.input_cost + ra.cached_input_cost, rb.input_cost + rb.cached_input_cost)
        outs = (ra.output_cost, rb.output_cost)
        out = (f"an output token costs ${a.price.output_per_m:.3f} vs ${b.price.output_per_m:.3f} per M because a "
               f"decoded token reads {gb[0]:.2f} vs {gb[1]:.2f} GB of HBM per GPU ({k3n} reads "
               f"{_times(gb[0], gb[1], 'more', 'less', 'the same')}): its own cache, {fmt_bytes(a.cache)} vs "
               f"{fmt_bytes(b.cache)} at this context, and its share of the weights read each step, "
               f"{fmt_bytes(a.bytes_per_token - a.cache)} vs {fmt_bytes(b.bytes_per_token - b.cache)} "
               f"({a.batch} vs {b.batch} sequences per GPU share them)")
        inp = (f"an input token costs ${a.price.input_per_m:.3f} vs ${b.price.input_per_m:.3f} per M (prefill is "
               f"{a.prefill_bound}-bound: {a.prefill_flops / 1e9:.0f} vs {b.prefill_flops / 1e9:.0f} GFLOPs per token)")
        lead = abs(ins[0] - ins[1]) >= abs(outs[0] - outs[1])
        (n1, p1, c1), (n2, p2, c2) = ((("input", ins, inp), ("output", outs, out)) if lead
                                      else (("output", outs, out), ("input", ins, inp)))
        why = (f"What drives it: the {n1} tokens (${p1[0]:.3f} vs ${p1[1]:.3f} per task) "
               f"{compare(abs(p1[0] - p1[1]), abs(p2[0] - p2[1]), 'more than', 'less than', 'as much as')} the "
               f"{n2} (${p2[0]:.3f} vs ${p2[1]:.3f}). {c1[0].upper() + c1[1:]}; {c2}.")
    ev = derived(physics_cost, analyze)
    fig = shared_figure(pair_figure, _parts(ra), _parts(rb), (k3n, on), pair.ablation, evidence=ev)
    return Panel(fig, (Said(head, (ev, SAME_TASK)), Said(why, (ev,))), ev, title="",
                 values={"k3_task": ra.per_completed_task, "other_task": rb.per_completed_task,
                         "k3_gb_per_token": gb[0], "other_gb_per_token": gb[1],
                         "k3_out_per_m": a.price.output_per_m, "other_out_per_m": b.price.output_per_m,
                         "k3_in_per_m": a.price.input_per_m, "other_in_per_m": b.price.input_per_m,
                         "k3_batch": a.batch, "other_batch": b.batch})


# ------------------------------------------------------------------------------------------ planner / worker
PLANNER_AT = {"list": "list price ($3 / $15)", "slow": f"serving cost, slow-and-cheap ({MIN_TOKENS_PER_USER:.0f}+ tok/s)",
              "fast": f"serving cost, fast-and-pricey ({FAST_TOKENS_PER_USER:.0f}+ tok/s)"}


class PlannerNumbers(NamedTuple):
    planner: ModelPrice
    slow: ModelPrice
    fast: ModelPrice
    alone: Strategy
    split: Strategy
    notice: SplitNotice
    listed: bool  # the planner at K3's list price (else a frontier point)

    @property
    def evidence(self):
        return PRICE_LISTS if self.listed else derived(frontier_prices)


def planner_numbers(at: str, at_frontier: dict, worker: ModelPrice, profile: TaskProfile, share: float,
                    worker_success: float) -> PlannerNumbers:
    """The split at the page's settings: K3 priced at `at` ('list', 'slow', 'fast': `at_frontier` is
    frontier_prices' {speed: ModelPrice}, slow first), alone and planning for `worker`."""
    slow, fast = list(at_frontier.values())[:2]
    planner = {"list": PRICES["kimi-k3"], "slow": slow, "fast": fast}[at]
    alone = single_model(planner, profile)
    split = planner_worker(planner, worker, profile, share, PLANNER_SUCCESS, worker_success)
    notice = split_sentence(planner, worker, profile, share, PLANNER_SUCCESS, worker_success)
    return PlannerNumbers(planner, slow, fast, alone, split, notice, planner is PRICES["kimi-k3"])


def planner_note(n: PlannerNumbers) -> str:
    """The split's assumptions, then what to notice ($ escaped: two in one caption would render as LaTeX)."""
    p = n.planner
    return dollars(
        f"Assumptions: the planner ({p.name}, ${p.input_per_m:.3g} / ${p.output_per_m:.3g}"
        + (f", {sources.K3_PRICE_SOURCE}" if n.listed else "")
        + f") succeeds {100 * PLANNER_SUCCESS:.0f}% of the time on its part; an attempt succeeds only if planner "
        "and worker both do and is retried whole. The default worker price ($0.10 / $0.40 per M) is our "
        "assumption, not a listed price. What to notice: " + n.notice.sentence
        + " Computed from the same model as the metrics above.")


def distribution_rows(samples) -> list[dict]:
    """The Monte-Carlo table: mean per completed task, percentiles, abandoned share, per strategy."""
    return [{"strategy": s.name, "$ / completed task (Monte-Carlo)": round(s.per_completed_task, 4),
             **{f"p{q} $ / task": round(v, 4) for q, v in s.percentiles().items()},
             "tasks abandoned (%)": round(100 * (1 - s.completed.mean()), 2)} for s in samples]


DISTRIBUTION_NOTE = (
    "Monte-Carlo over 20,000 tasks (seeded): turns per attempt ~ 1 + Poisson, re-sent calls ~ negative "
    "binomial, tokens per call ~ Gamma (coefficient of variation 0.3), success ~ Bernoulli per attempt. The "
    "dashed lines are $ per completed task; the right tail is tasks that needed a retry - the tail, not the "
    "mean, is what a budget per task has to cover.")


def split_assumptions(n: PlannerNumbers, worker: ModelPrice, worker_success: float, share: float,
                      profile: TaskProfile, scenario: Scenario) -> tuple[list[Assumption], list[tuple[str, str]]]:
    """(assumptions, also) for the page's assumptions block, whose headline is cost_words.split_saving."""
    return [
        Assumption("worker_input_per_m", "worker $ / M input", worker.input_per_m,
                   "a hypothetical small model's price: ours, not a listed one", "the 'worker $ / M input' box", "$"),
        Assumption("worker_output_per_m", "worker $ / M output", worker.output_per_m,
                   "the same hypothetical small model", "the 'worker $ / M output' box", "$"),
        Assumption("worker_success", "worker success per attempt", worker_success,
                   "ours: as reliable as K3 by default, the case the seed article's figure needs",
                   "the 'worker success per attempt' slider"),
        Assumption("planner_share", "planner share of turns", share,
                   "ours: a plan and a few checks in a 20-turn task", "the 'planner share of turns' slider"),
        Assumption("planner_success", "planner success on its part", PLANNER_SUCCESS,
                   "ours: the big model rarely fails at planning (held at 100% when moved past it)"),
        Assumption("k3_success", "K3's success per attempt alone", profile.success_rate,
                   "ours: no published per-task success rate", "the 'success per attempt, K3' slider"),
        Assumption("input_tokens_per_turn", "input tokens per turn", profile.input_tokens_per_turn,
                   "ours: an agentic turn re-sends its growing context", "the 'input tokens per turn' slider",
                   "tokens"),
        Assumption("output_tokens_per_turn", "output tokens per turn", profile.output_tokens_per_turn,
                   "ours: a tool call or a short answer", "the 'output tokens per turn' slider", "tokens"),
        Assumption("cache_hit_rate", "prompt-cache hit rate", profile.cache_hit_rate,
                   "ours: half the re-sent context served from the provider's cache",
                   "the 'prompt-cache hit rate' slider"),
        Assumption("turns", "turns per attempt", profile.turns,
                   "ours; both strategies take them, so they cancel in the saving", "the 'turns' slider"),
        Assumption("turn_retry_rate", "failed calls re-sent", profile.turn_retry_rate,
                   "ours; they cancel in the saving too", "the 'failed calls re-sent' slider"),
    ], [
        ("K3's price", f"{n.planner.name}: " + ("Moonshot AI's list price (listed)" if n.listed
                                                else "a point of the serving page's frontier (derived)")),
        ("retries", "an attempt succeeds only if planner and worker both do, and is retried whole"),
        ("other models' success and turns", f"the scenario's ({scenario.label}): {scenario.note}"),
    ]

