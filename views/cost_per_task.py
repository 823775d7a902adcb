"""Cost per completed task: turns, retries, success rates, cache hits, and the planner/worker split."""
from functools import partial

import numpy as np
import streamlit as st

from k3lite.base.evidence import derived
from k3lite.analytic.cost import (
    PRICES, SCENARIOS, ModelPrice, TaskProfile, analyze, break_even_success, planner_worker, savings_curve, simulate,
    single_model, split_what_ifs,
)
from k3lite.analytic.cost_words import (break_even_sentence, comparison_sentence, fmt_factor, split_factor_words,
                                        split_saving, split_sentence)
from k3lite.analytic.serving.deployment import PRICE_URL_KEYS
from k3lite.analytic.serving.compare import frontier_prices, physics_price, task_vs_token_ranking
from k3lite.analytic.serving.providers import PROVIDERS, as_model_price, get_provider
from k3lite.panels.cost import (
    DISTRIBUTION_NOTE, PER_MODEL, PLANNER_AT, PLANNER_SUCCESS, PLANNER_TITLE, SPLIT_ASSUMED,
    WHY_PER_TASK, own_prices, physics_caption,
    cheapest_sentence, dollars, distribution_rows, model_columns, model_rows, pair_panel, planner_note, planner_numbers,
    split_assumptions, strategies_from,
)
from k3lite.viz.cost import cost_bars_figure, distribution_figure, savings_figure
from k3lite.viz.memo import shared_figure
from views.common import (
    assumptions_block, compared, evidence_columns, explain, kept_editor, lazy_expander, lazy_sections, metric,
    push_url, reset_button, sentence, show_code, show_panel, table, url_state, user_errors,
)
from views.common import try_it  # the page's practice problems, at its foot


@st.cache_data(show_spinner="Pricing K3 from serving physics…", max_entries=8)
def physics_price_cached(prices: tuple):
    return physics_price(prices=dict(prices))


@st.cache_data(show_spinner="Pricing K3 at two points of the speed-price frontier…", max_entries=8)
def frontier_prices_cached(prices: tuple):
    return frontier_prices(prices=dict(prices))


# the serving page's one price table ($ per GPU-hour, its sv_usd_* keys) as this session or the link carries it: the
# reader's own prices there price K3's serving-physics rows here, and stay in this page's link
SHARED_PRICES = own_prices({g: st.session_state.get(k, st.query_params.get(k)) for g, k in PRICE_URL_KEYS.items()})
for g, v in SHARED_PRICES:
    st.query_params[PRICE_URL_KEYS[g]] = str(v)


st.title("Cost per task, not per token")
st.markdown("**Which model is cheapest per *finished* task, once turns, retries and failures are counted?**")
reset_button("cost_")
pair = compared()
st.expander("Why per task, not per token").markdown(WHY_PER_TASK)

url_state("cost_turns", 20, lo=1, hi=200)
url_state("cost_in_k", 20, lo=1, hi=500)
url_state("cost_out", 1000, lo=50, hi=20000)
url_state("cost_success", 80, lo=1, hi=100)
url_state("cost_retry", 5, lo=0, hi=90)
url_state("cost_cache", 50, lo=0, hi=100)
url_state("cost_attempts", 3, lo=1, hi=10)
url_state("cost_scenario", "article", choices=list(SCENARIOS))
url_state("cost_physics", False)
url_state("cost_k3_price", PROVIDERS[0].name, choices=[p.name for p in PROVIDERS])
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
            st.selectbox("K3's price from", [p.name for p in PROVIDERS], key="cost_k3_price",
                         help="providers' published K3 prices, dated and cited (k3lite/analytic/serving/providers.py)")
push_url("cost_scenario", "cost_turns", "cost_in_k", "cost_out", "cost_success", "cost_retry", "cost_cache",
         "cost_attempts", "cost_physics", "cost_k3_price")
ss = st.session_state
scenario = SCENARIOS[ss.cost_scenario]

with user_errors():
    profile = TaskProfile(turns=float(ss.cost_turns), input_tokens_per_turn=1000.0 * ss.cost_in_k,
                          output_tokens_per_turn=float(ss.cost_out), success_rate=ss.cost_success / 100,
                          turn_retry_rate=ss.cost_retry / 100, cache_hit_rate=ss.cost_cache / 100,
                          max_attempts=ss.cost_attempts)
if pair is not None:  # K3 and the compared config priced by the same physics, doing the same task
    with user_errors():
        show_panel(pair_panel(pair, profile, SHARED_PRICES), "cost_pair", fig_col)

listed = {key: p for key, p in PRICES.items() if key != "small-worker"}
if ss.cost_k3_price != PROVIDERS[0].name:  # a reseller's price list instead of Moonshot AI's own
    listed["kimi-k3"] = as_model_price(get_provider(ss.cost_k3_price))
if ss.cost_physics:
    physics = physics_price_cached(SHARED_PRICES)
    listed["physics"] = physics
with fig_col, lazy_expander(f"Per-model assumptions ({scenario.label}): edit success and turns",
                            key="cost_per_task_x_per_model") as is_open:
    frame, columns = evidence_columns(model_rows(listed, scenario, ss.cost_turns, ss.cost_success / 100),
                                      model_columns(listed))
    table_rows = kept_editor(
        frame.to_dict("records"),
        # one table per row set and scenario, not per slider value: the reader's edits survive a slider move (a
        # key that embedded the slider values silently dropped every edit on each move) and the expander closing;
        # the serving-physics toggle (a new row) and the scenario start a new table
        f"cost_models_{ss.cost_physics}_{ss.cost_scenario}", draw=is_open,
        hide_index=True, num_rows="fixed", disabled=["model", "price is"], column_config=columns)
with user_errors():
    strategies = strategies_from(table_rows, profile)
    rows = [analyze(s_) for s_ in strategies]
fig_col.plotly_chart(shared_figure(cost_bars_figure, rows, evidence=derived(analyze)), width="stretch")
k3 = strategies[0]
fig_col.markdown(dollars(cheapest_sentence(ss.cost_scenario, scenario, list(listed), strategies)))
show_code(analyze, comparison_sentence)
with lazy_expander("Where the numbers come from", key="cost_per_task_x_numbers") as is_open:
    if is_open:
        st.caption(dollars(f"Scenario: {scenario.note}."))
        st.caption("Prices: " + " · ".join(f"**{p.name}**: {p.source}" for key, p in listed.items() if key != "physics")
                   + ". Success and turns per model are *your* assumptions (edit the table).")
        if ss.cost_physics:
            st.caption(physics_caption(physics))
        table(st, [r.row() for r in rows], default=derived(analyze), hide_index=True, width="stretch")
        sentence(dollars(break_even_sentence(k3, strategies[1:])), derived(break_even_success), PER_MODEL)


@st.cache_data(max_entries=64)
def _distribution(alone_s, split_s, n: int = 20_000):
    return [simulate(alone_s, n, seed=0), simulate(split_s, n, seed=1)]


@st.fragment
def planner_panel() -> None:
    st.subheader(PLANNER_TITLE)
    url_state("cost_share", 7.5, lo=0.5, hi=100.0)
    url_state("cost_worker_success", 80, lo=1, hi=100)
    url_state("cost_worker_in", 0.10, lo=0.0, hi=20.0)
    url_state("cost_worker_out", 0.40, lo=0.0, hi=100.0)
    url_state("cost_planner_at", "list", choices=list(PLANNER_AT))
    st.selectbox("price K3 (the planner) at", list(PLANNER_AT), format_func=PLANNER_AT.get, key="cost_planner_at",
                 help="a point of the Serving page's speed-price frontier: the cheapest setup at that speed per user")
    p1, p2, p3, p4 = st.columns(4)
    p1.slider("planner share of turns (%)", 0.5, 100.0, step=0.5, key="cost_share")
    p2.slider("worker success per attempt (%)", 1, 100, key="cost_worker_success")
    p3.number_input("worker $ / M input", 0.0, 20.0, step=0.05, key="cost_worker_in")
    p4.number_input("worker $ / M output", 0.0, 100.0, step=0.1, key="cost_worker_out")
    push_url("cost_share", "cost_worker_success", "cost_worker_in", "cost_worker_out", "cost_planner_at")
    share, worker_success = ss.cost_share / 100, ss.cost_worker_success / 100
    with user_errors():
        worker = ModelPrice("small worker", float(ss.cost_worker_in), float(ss.cost_worker_out),
                            PRICES["small-worker"].cache_discount)
        n = planner_numbers(ss.cost_planner_at, frontier_prices_cached(SHARED_PRICES), worker, profile, share,
                            worker_success)
        a_alone, a_split = analyze(n.alone), analyze(n.split)
    q1, q2, q3 = st.columns(3)
    metric(q1, "K3 alone", f"${a_alone.per_completed_task:.3f} / task", derived(analyze, single_model))
    metric(q2, "K3 plans + worker", f"${a_split.per_completed_task:.3f} / task", derived(analyze, planner_worker))
    metric(q3, *split_factor_words(n.notice.factor), derived(split_what_ifs))
    ws = np.linspace(0.05, 1.0, 96)
    curve = savings_curve(n.planner, worker, profile, ws, share, PLANNER_SUCCESS)
    st.plotly_chart(shared_figure(savings_figure, ws, curve, (worker_success, n.notice.factor),
                                  evidence=derived(savings_curve)), width="stretch")
    st.markdown(dollars(n.notice.headline))
    show_code(planner_worker, savings_curve)
    with st.expander("Assumptions, what-ifs, and the ranking at two serving speeds"):
        sentence(planner_note(n), derived(split_sentence), n.evidence, SPLIT_ASSUMED)
        _, _, ranking = task_vs_token_ranking(n.slow, n.fast, worker, profile, share, PLANNER_SUCCESS, worker_success)
        sentence(dollars(ranking + f" Slow point: {n.slow.source}. Fast point: {n.fast.source}."),
                 derived(task_vs_token_ranking, frontier_prices))

    with lazy_expander("Not just the mean: the distribution of cost per task", key="cost_per_task_x_not_just_mean_distribution") as is_open:
        if is_open:
            samples = _distribution(n.alone, n.split)
            st.plotly_chart(shared_figure(distribution_figure, samples, evidence=derived(simulate)), width="stretch")
            table(st, distribution_rows(samples), default=derived(simulate), hide_index=True, width="stretch")
            explain(DISTRIBUTION_NOTE)
            show_code(simulate)

    assumptions, also = split_assumptions(n, worker, worker_success, share, profile, scenario)
    assumptions_block("cost_per_task_x_assumptions", "The split's saving (times cheaper per completed task than K3 "
                      "alone)", partial(split_saving, n.planner), assumptions, fmt_factor, also=also)


# below the first screen: drawn once picked (a chart sent with the first run delays the first picture)
SECTIONS = [PLANNER_TITLE]
(planner_section,) = lazy_sections(SECTIONS, key="cost_section")
with planner_section as is_open:
    if is_open:
        planner_panel()

try_it("cost_per_task")
