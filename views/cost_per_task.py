"""Cost per completed task: turns, retries, success rates, cache hits, and the planner/worker split."""
from functools import partial

import numpy as np
import streamlit as st

from k3lite.base import sources
from k3lite.base.evidence import assumed, derived, released
from k3lite.analytic.cost import (
    PRICES, SCENARIOS, ModelPrice, TaskProfile, analyze, break_even_success, planner_worker, savings_curve, simulate,
    single_model, split_what_ifs,
)
from k3lite.analytic.cost_words import (
    break_even_sentence, comparison_sentence, fmt_factor, split_factor_words, split_saving, split_sentence,
)
from k3lite.analytic.sensitivity import Assumption
from k3lite.analytic.serving import MIN_TOKENS_PER_USER, USD_PER_GPU_HOUR
from k3lite.analytic.serving.deployment import PRICE_URL_KEYS
from k3lite.analytic.serving.compare import FAST_TOKENS_PER_USER, frontier_prices, physics_price, task_vs_token_ranking
from k3lite.viz.cost import cost_bars_figure, distribution_figure, savings_figure
from k3lite.viz.memo import shared_figure
from views.common import (
    assumptions_block, evidence_columns, explain, kept_editor, lazy_expander, lazy_sections, metric, push_url,
    reset_button, sentence, show_code, table, url_state, user_errors,
)
from views.common import try_it  # the page's practice problems, at its foot

PRICE_LISTS = released("each model's own price list, quoted under 'Where the numbers come from' "
                       "(k3lite.analytic.cost.PRICES); the serving-physics row, when added, is derived by "
                       "k3lite.analytic.serving.compare.physics_price")
PER_MODEL = assumed("ours: the scenario's success and turns per model (the seed article gives none); edit them here")


def dollars(text: str) -> str:
    """Escape $ for Markdown (two dollar signs in one text would otherwise render as LaTeX)."""
    return text.replace("$", "\\$")


@st.cache_data(show_spinner="Pricing K3 from serving physics…", max_entries=8)
def physics_price_cached(prices: tuple):
    return physics_price(prices=dict(prices))


@st.cache_data(show_spinner="Pricing K3 at two points of the speed-price frontier…", max_entries=8)
def frontier_prices_cached(prices: tuple):
    return frontier_prices(prices=dict(prices))


def shared_prices() -> tuple:
    """The serving page's one price table ($ per GPU-hour, its sv_usd_* keys) as this session or the link carries
    it: the reader's own prices there price K3's serving-physics rows here, and stay in this page's link."""
    out = {}
    for g, key in PRICE_URL_KEYS.items():
        try:
            v = float(st.session_state.get(key, st.query_params.get(key)))
        except (TypeError, ValueError):
            continue
        if 0 < v < 1000 and v != USD_PER_GPU_HOUR[g][0]:
            out[g] = v
            st.query_params[key] = str(v)
    return tuple(sorted(out.items()))


SHARED_PRICES = shared_prices()


st.title("Cost per task, not per token")
st.markdown("**Which model is cheapest per *finished* task, once turns, retries and failures are counted?**")
reset_button("cost_")
with st.expander("Why per task, not per token"):
    st.markdown(
        "A price list says dollars per million tokens; a user pays per *finished task*. An agentic task is many "
        "turns, each re-sending its growing context; some calls fail and are re-sent; some attempts fail and are "
        "retried from scratch. So the bill per completed task is `$ per attempt / success rate`, and a model that "
        "is cheaper per token can be dearer per task. A big planner with a small worker is said to be "
        f"{sources.SPLIT_CLAIM}; below you can see which assumptions give that, and which do not.")

url_state("cost_scenario", "article", choices=list(SCENARIOS))
url_state("cost_turns", 20, lo=1, hi=200)
url_state("cost_in_k", 20, lo=1, hi=500)
url_state("cost_out", 1000, lo=50, hi=20000)
url_state("cost_success", 80, lo=1, hi=100)
url_state("cost_retry", 5, lo=0, hi=90)
url_state("cost_cache", 50, lo=0, hi=100)
url_state("cost_attempts", 3, lo=1, hi=10)
url_state("cost_physics", False)
ctl, fig_col = st.columns([1, 3])
with ctl:
    st.radio("scenario", list(SCENARIOS), key="cost_scenario",
             format_func={k: s.label for k, s in SCENARIOS.items()}.get,
             help="named per-model assumptions for success and turns; edit them in the table below the chart")
    st.slider("turns (calls) per attempt, K3", 1, 200, key="cost_turns")
    st.slider("success per attempt, K3 (%)", 1, 100, key="cost_success")
    st.slider("input tokens per turn (thousands, incl. re-sent context)", 1, 500, key="cost_in_k")
    # drawn only while open (url_state keeps their values while it is closed): five fewer controls on the first screen
    with lazy_expander("more task settings", key="cost_per_task_x_more") as is_open:
        if is_open:
            st.slider("output tokens per turn", 50, 20000, step=50, key="cost_out")
            st.slider("prompt-cache hit rate (% of input tokens)", 0, 100, key="cost_cache")
            st.slider("failed calls re-sent (% of calls)", 0, 90, key="cost_retry")
            st.slider("attempts before giving up", 1, 10, key="cost_attempts")
            st.toggle("add K3 priced from serving physics (the Serving page's default deployment)", key="cost_physics")
push_url("cost_scenario", "cost_turns", "cost_in_k", "cost_out", "cost_success", "cost_retry", "cost_cache",
         "cost_attempts", "cost_physics")
scenario = SCENARIOS[st.session_state.cost_scenario]

with user_errors():
    profile = TaskProfile(turns=float(st.session_state.cost_turns),
                          input_tokens_per_turn=1000.0 * st.session_state.cost_in_k,
                          output_tokens_per_turn=float(st.session_state.cost_out),
                          success_rate=st.session_state.cost_success / 100,
                          turn_retry_rate=st.session_state.cost_retry / 100,
                          cache_hit_rate=st.session_state.cost_cache / 100,
                          max_attempts=st.session_state.cost_attempts)

listed = {key: p for key, p in PRICES.items() if key != "small-worker"}
if st.session_state.cost_physics:
    physics = physics_price_cached(SHARED_PRICES)
    listed["physics"] = physics
with fig_col, lazy_expander(f"Per-model assumptions ({scenario.label}): edit success and turns",
                            key="cost_per_task_x_per_model") as is_open:
    frame, columns = evidence_columns(
        [{"model": p.name, "$ / M input": p.input_per_m, "$ / M output": p.output_per_m,
          "cache discount (%)": 100 * p.cache_discount,
          "success per attempt (%)": 100 * scenario.success.get(key, st.session_state.cost_success / 100),
          "turns per attempt": float(st.session_state.cost_turns) * scenario.turns_factor.get(key, 1.0)}
         for key, p in listed.items()],
        {"$ / M input": PRICE_LISTS, "$ / M output": PRICE_LISTS, "cache discount (%)": PRICE_LISTS,
         "success per attempt (%)": PER_MODEL, "turns per attempt": PER_MODEL})
    col = {name.rsplit(" ", 1)[0] if name != "model" else name: name for name in frame.columns}  # plain -> marked
    table_rows = kept_editor(
        frame.to_dict("records"),
        # one table per row set and scenario, not per slider value: the reader's edits survive a slider move (a
        # key that embedded the slider values silently dropped every edit on each move) and the expander closing;
        # the serving-physics toggle (a new row) and the scenario start a new table
        f"cost_models_{st.session_state.cost_physics}_{st.session_state.cost_scenario}", draw=is_open,
        hide_index=True, num_rows="fixed", disabled=["model"], column_config=columns)
with user_errors():
    strategies = [single_model(ModelPrice(r["model"], float(r[col["$ / M input"]]), float(r[col["$ / M output"]]),
                                          float(r[col["cache discount (%)"]]) / 100),
                               profile.with_(success_rate=float(r[col["success per attempt (%)"]]) / 100,
                                             turns=float(r[col["turns per attempt"]]))) for r in table_rows]
    rows = [analyze(s_) for s_ in strategies]
fig_col.plotly_chart(shared_figure(cost_bars_figure, rows, evidence=derived(analyze)), width="stretch")
k3 = strategies[0]
cheapest = min(rows, key=lambda r: r.per_completed_task)
fig_col.markdown(dollars(
    f"**{scenario.label.capitalize()}:** {cheapest.name} is cheapest per completed task "
    f"(${cheapest.per_completed_task:.2f}; K3 ${rows[0].per_completed_task:.2f}). "
    + " ".join(comparison_sentence(k3, s_) for key, s_ in zip(listed, strategies) if key not in ("kimi-k3", "physics"))
    + (" The article's ~9-10x per-task saving is for K3 *planning* with a small worker doing most turns (the planner / "
       "worker section below), not for K3 alone." if st.session_state.cost_scenario == "article" else "")))
show_code(analyze, comparison_sentence)
with lazy_expander("Where the numbers come from", key="cost_per_task_x_numbers") as is_open:
    if is_open:
        st.caption(dollars(f"Scenario: {scenario.note}."))
        st.caption("Prices: " + " · ".join(f"**{p.name}**: {p.source}" for key, p in PRICES.items() if key != "small-worker")
                   + ". Success and turns per model are *your* assumptions (edit the table).")
        if st.session_state.cost_physics:
            st.caption(f"**{physics.name}**: {physics.source}; \\${physics.input_per_m:.3f} / \\${physics.output_per_m:.3f} per "
                       "M input / output tokens: what producing the tokens costs at the bound, no margin, against the "
                       "list prices above.")
        table(st, [r.row() for r in rows], default=derived(analyze), hide_index=True, width="stretch")
        sentence(dollars(break_even_sentence(k3, strategies[1:])), derived(break_even_success), PER_MODEL)


@st.cache_data(max_entries=64)
def _distribution(alone_s, split_s, n: int = 20_000):
    return [simulate(alone_s, n, seed=0), simulate(split_s, n, seed=1)]


PLANNER_TITLE = "Planner / worker: K3 plans, a small model works"
PLANNER_SUCCESS = 0.98  # ours: the planner's part of an attempt (the split's attempt succeeds this x the worker's)


@st.fragment
def planner_panel() -> None:
    st.subheader(PLANNER_TITLE)
    url_state("cost_share", 7.5, lo=0.5, hi=100.0)
    url_state("cost_worker_success", 80, lo=1, hi=100)
    url_state("cost_worker_in", 0.10, lo=0.0, hi=20.0)
    url_state("cost_worker_out", 0.40, lo=0.0, hi=100.0)
    PLANNER_AT = {"list": "list price ($3 / $15)", "slow": f"serving cost, slow-and-cheap ({MIN_TOKENS_PER_USER:.0f}+ tok/s)",
                  "fast": f"serving cost, fast-and-pricey ({FAST_TOKENS_PER_USER:.0f}+ tok/s)"}
    url_state("cost_planner_at", "list", choices=list(PLANNER_AT))
    st.selectbox("price K3 (the planner) at", list(PLANNER_AT), format_func=PLANNER_AT.get, key="cost_planner_at",
                 help="a point of the Serving page's speed-price frontier: the cheapest setup at that speed per user")
    p1, p2, p3, p4 = st.columns(4)
    p1.slider("planner share of turns (%)", 0.5, 100.0, step=0.5, key="cost_share")
    p2.slider("worker success per attempt (%)", 1, 100, key="cost_worker_success")
    p3.number_input("worker $ / M input", 0.0, 20.0, step=0.05, key="cost_worker_in")
    p4.number_input("worker $ / M output", 0.0, 100.0, step=0.1, key="cost_worker_out")
    push_url("cost_share", "cost_worker_success", "cost_worker_in", "cost_worker_out", "cost_planner_at")
    with user_errors():
        worker = ModelPrice("small worker", float(st.session_state.cost_worker_in),
                            float(st.session_state.cost_worker_out), PRICES["small-worker"].cache_discount)
        at_frontier = frontier_prices_cached(SHARED_PRICES)  # {speed: ModelPrice}, slow first
        slow, fast = at_frontier[MIN_TOKENS_PER_USER], at_frontier[FAST_TOKENS_PER_USER]
        planner = {"list": PRICES["kimi-k3"], "slow": slow, "fast": fast}[st.session_state.cost_planner_at]
        alone = single_model(planner, profile)
        split = planner_worker(planner, worker, profile, st.session_state.cost_share / 100, PLANNER_SUCCESS,
                               st.session_state.cost_worker_success / 100)
        a_alone, a_split = analyze(alone), analyze(split)
    notice = split_sentence(planner, worker, profile, st.session_state.cost_share / 100, PLANNER_SUCCESS,
                            st.session_state.cost_worker_success / 100)
    planner_ev = PRICE_LISTS if planner is PRICES["kimi-k3"] else derived(frontier_prices)
    q1, q2, q3 = st.columns(3)
    metric(q1, "K3 alone", f"${a_alone.per_completed_task:.3f} / task", derived(analyze, single_model))
    metric(q2, "K3 plans + worker", f"${a_split.per_completed_task:.3f} / task", derived(analyze, planner_worker))
    metric(q3, *split_factor_words(notice.factor), derived(split_what_ifs))
    ws = np.linspace(0.05, 1.0, 96)
    curve = savings_curve(planner, worker, profile, ws, st.session_state.cost_share / 100, PLANNER_SUCCESS)
    st.plotly_chart(shared_figure(savings_figure, ws, curve, (st.session_state.cost_worker_success / 100, notice.factor),
                                  evidence=derived(savings_curve)), width="stretch")
    st.markdown(dollars(notice.headline))
    show_code(planner_worker, savings_curve)
    with st.expander("Assumptions, what-ifs, and the ranking at two serving speeds"):
        sentence(dollars(  # $ escaped: two in one caption would render as LaTeX
            f"Assumptions: the planner ({planner.name}, ${planner.input_per_m:.3g} / ${planner.output_per_m:.3g}"
            + (f", {sources.K3_PRICE_SOURCE}" if planner is PRICES["kimi-k3"] else "")
            + f") succeeds {100 * PLANNER_SUCCESS:.0f}% of the time on its part; an attempt succeeds only if planner "
            "and worker both do and is retried whole. The default worker price ($0.10 / $0.40 per M) is our "
            "assumption, not a listed price. What to notice: " + notice.sentence
            + " Computed from the same model as the metrics above."),
            derived(split_sentence), planner_ev, assumed("the worker's price and success, the planner's 98%"))
        _, _, ranking = task_vs_token_ranking(slow, fast, worker, profile, st.session_state.cost_share / 100,
                                              PLANNER_SUCCESS, st.session_state.cost_worker_success / 100)
        sentence(dollars(ranking + f" Slow point: {slow.source}. Fast point: {fast.source}."),
                 derived(task_vs_token_ranking, frontier_prices))

    with lazy_expander("Not just the mean: the distribution of cost per task", key="cost_per_task_x_not_just_mean_distribution") as is_open:
        if is_open:
            samples = _distribution(alone, split)
            st.plotly_chart(shared_figure(distribution_figure, samples, evidence=derived(simulate)), width="stretch")
            table(st, [{"strategy": s_.name, "$ / completed task (Monte-Carlo)": round(s_.per_completed_task, 4),
                           **{f"p{q} $ / task": round(v, 4) for q, v in s_.percentiles().items()},
                        "tasks abandoned (%)": round(100 * (1 - s_.completed.mean()), 2)} for s_ in samples],
                  default=derived(simulate), hide_index=True, width="stretch")
            explain(
                "Monte-Carlo over 20,000 tasks (seeded): turns per attempt ~ 1 + Poisson, re-sent calls ~ negative "
                "binomial, tokens per call ~ Gamma (coefficient of variation 0.3), success ~ Bernoulli per attempt. The "
                "dashed lines are $ per completed task; the right tail is tasks that needed a retry - the tail, not the "
                "mean, is what a budget per task has to cover.")
            show_code(simulate)

    assumptions_block(
        "cost_per_task_x_assumptions", "The split's saving (times cheaper per completed task than K3 alone)",
        partial(split_saving, planner), [
            Assumption("worker_input_per_m", "worker $ / M input", worker.input_per_m,
                       "a hypothetical small model's price: ours, not a listed one", "the 'worker $ / M input' box", "$"),
            Assumption("worker_output_per_m", "worker $ / M output", worker.output_per_m,
                       "the same hypothetical small model", "the 'worker $ / M output' box", "$"),
            Assumption("worker_success", "worker success per attempt", st.session_state.cost_worker_success / 100,
                       "ours: as reliable as K3 by default, the case the seed article's figure needs",
                       "the 'worker success per attempt' slider"),
            Assumption("planner_share", "planner share of turns", st.session_state.cost_share / 100,
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
        ], fmt_factor, also=[
            ("K3's price", f"{planner.name}: " + ("Moonshot AI's list price (released)" if planner is PRICES["kimi-k3"]
                                                  else "a point of the serving page's frontier (derived)")),
            ("retries", "an attempt succeeds only if planner and worker both do, and is retried whole"),
            ("other models' success and turns", f"the scenario's ({scenario.label}): {scenario.note}"),
        ])


# below the first screen: drawn once picked (a chart sent with the first run delays the first picture)
SECTIONS = [PLANNER_TITLE]
(planner_section,) = lazy_sections(SECTIONS, key="cost_section")
with planner_section as is_open:
    if is_open:
        planner_panel()

try_it("cost_per_task")
