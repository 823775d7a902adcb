"""Cost per completed task: turns, retries, success rates, cache hits, and the planner/worker split."""
import numpy as np
import streamlit as st

from k3lite.base import sources
from k3lite.analytic.cost import (
    PRICES, SCENARIOS, ModelPrice, TaskProfile, analyze, break_even_success, comparison_sentence, planner_worker,
    savings_curve, simulate, single_model, split_what_ifs,
)
from k3lite.analytic.serving import MIN_TOKENS_PER_USER
from k3lite.analytic.serving.compare import FAST_TOKENS_PER_USER, frontier_prices, physics_price, task_vs_token_ranking
from k3lite.viz.cost import cost_bars_figure, distribution_figure, savings_figure
from k3lite.viz.memo import shared_figure
from views.common import explain, kept_editor, lazy_expander, lazy_sections, push_url, reset_button, show_code, url_state, user_errors


def dollars(text: str) -> str:
    """Escape $ for Markdown (two dollar signs in one text would otherwise render as LaTeX)."""
    return text.replace("$", "\\$")


@st.cache_data(show_spinner="Pricing K3 from serving physics…", max_entries=1)
def physics_price_cached():
    return physics_price()


@st.cache_data(show_spinner="Pricing K3 at two points of the speed-price frontier…", max_entries=1)
def frontier_prices_cached():
    return frontier_prices()


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
    physics = physics_price_cached()
    listed["physics"] = physics
with fig_col, lazy_expander(f"Per-model assumptions ({scenario.label}): edit success and turns",
                            key="cost_per_task_x_per_model") as is_open:
    table = kept_editor(
        [{"model": p.name, "$ / M input": p.input_per_m, "$ / M output": p.output_per_m,
          "cache discount (%)": 100 * p.cache_discount,
          "success per attempt (%)": 100 * scenario.success.get(key, st.session_state.cost_success / 100),
          "turns per attempt": float(st.session_state.cost_turns) * scenario.turns_factor.get(key, 1.0)}
         for key, p in listed.items()],
        # one table per row set and scenario, not per slider value: the reader's edits survive a slider move (a
        # key that embedded the slider values silently dropped every edit on each move) and the expander closing;
        # the serving-physics toggle (a new row) and the scenario start a new table
        f"cost_models_{st.session_state.cost_physics}_{st.session_state.cost_scenario}", draw=is_open,
        hide_index=True, num_rows="fixed", disabled=["model"])
with user_errors():
    strategies = [single_model(ModelPrice(r["model"], float(r["$ / M input"]), float(r["$ / M output"]),
                                          float(r["cache discount (%)"]) / 100),
                               profile.with_(success_rate=float(r["success per attempt (%)"]) / 100,
                                             turns=float(r["turns per attempt"]))) for r in table]
    rows = [analyze(s_) for s_ in strategies]
fig_col.plotly_chart(shared_figure(cost_bars_figure, rows), width="stretch")
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
        st.dataframe([r.row() for r in rows], hide_index=True, width="stretch")
        explain("What to notice: " + "; ".join(
            f"{s_.name} breaks even with K3 at {100 * break_even_success(k3, s_):.0f}% success per attempt "
            f"(K3: {100 * k3.profile.success_rate:.0f}%)" for s_ in strategies[1:])
            + ". Below that success rate the cheaper-per-token model costs more per finished task. "
              "Computed: $ per attempt = turns / (1 - re-sent share) x $ per call; $ per completed task = that / success.")


@st.cache_data(max_entries=64)
def _distribution(alone_s, split_s, n: int = 20_000):
    return [simulate(alone_s, n, seed=0), simulate(split_s, n, seed=1)]


PLANNER_TITLE = "Planner / worker: K3 plans, a small model works"


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
        at_frontier = frontier_prices_cached()  # {speed: ModelPrice}, slow first
        slow, fast = at_frontier[MIN_TOKENS_PER_USER], at_frontier[FAST_TOKENS_PER_USER]
        planner = {"list": PRICES["kimi-k3"], "slow": slow, "fast": fast}[st.session_state.cost_planner_at]
        alone = single_model(planner, profile)
        split = planner_worker(planner, worker, profile, st.session_state.cost_share / 100, 0.98,
                               st.session_state.cost_worker_success / 100)
        a_alone, a_split = analyze(alone), analyze(split)
    factor = a_alone.per_completed_task / a_split.per_completed_task
    q1, q2, q3 = st.columns(3)
    q1.metric("K3 alone", f"${a_alone.per_completed_task:.3f} / task")
    q2.metric("K3 plans + worker", f"${a_split.per_completed_task:.3f} / task")
    q3.metric("split is cheaper by", f"{factor:.1f}x")
    ws = np.linspace(0.05, 1.0, 96)
    curve = savings_curve(planner, worker, profile, ws, st.session_state.cost_share / 100, 0.98)
    st.plotly_chart(shared_figure(savings_figure, ws, curve, (st.session_state.cost_worker_success / 100, factor)), width="stretch")
    _, what_ifs = split_what_ifs(planner, worker, profile, st.session_state.cost_share / 100, 0.98,
                                 st.session_state.cost_worker_success / 100)
    band = "inside" if sources.SPLIT_BAND[0] <= factor <= sources.SPLIT_BAND[1] else "outside"
    if factor >= 1:
        notice = (f"at these settings the split is {factor:.1f}x cheaper, {band} the seed article's "
                  f"~{sources.SPLIT_BAND[0]:g}-{sources.SPLIT_BAND[1]:g}x band (directional, by its own account). " + "; ".join(
            f"with the {w.change} it is {w.factor:.1f}x cheaper ({100 * w.kept:.0f}% of the dollar saving per task "
            "remains)" for w in what_ifs))
    else:  # K3 at serving cost can undercut the worker's list price: then there is no saving to erode
        notice = (f"at these settings the split costs {1 / factor:.1f}x MORE than {planner.name} alone: the planner's "
                  f"${planner.input_per_m:.3g} / ${planner.output_per_m:.3g} per M undercuts the worker's "
                  f"${worker.input_per_m:.3g} / ${worker.output_per_m:.3g} where most tokens are (input)")
    st.markdown(dollars(notice.split(". ")[0][0].upper() + notice.split(". ")[0][1:] + "."))
    show_code(planner_worker, savings_curve)
    with st.expander("Assumptions, what-ifs, and the ranking at two serving speeds"):
        explain((  # $ escaped: two in one caption would render as LaTeX
            f"Assumptions: the planner ({planner.name}, ${planner.input_per_m:.3g} / ${planner.output_per_m:.3g}"
            + (f", {sources.K3_PRICE_SOURCE}" if planner is PRICES["kimi-k3"] else "") + ") succeeds 98% "
            "of the time on its part; an attempt succeeds only if planner and worker both do and is retried whole. "
            "The default worker price ($0.10 / $0.40 per M) is our assumption, not a listed price. What to notice: "
            + notice + ". Computed from the same model as the metrics above.").replace("$", "\\$"))
        _, _, ranking = task_vs_token_ranking(slow, fast, worker, profile, st.session_state.cost_share / 100, 0.98,
                                              st.session_state.cost_worker_success / 100)
        explain((ranking + f" Slow point: {slow.source}. Fast point: {fast.source}.").replace("$", "\\$"))

    with lazy_expander("Not just the mean: the distribution of cost per task", key="cost_per_task_x_not_just_mean_distribution") as is_open:
        if is_open:
            samples = _distribution(alone, split)
            st.plotly_chart(shared_figure(distribution_figure, samples), width="stretch")
            st.dataframe([{"strategy": s_.name, "$ / completed task (Monte-Carlo)": round(s_.per_completed_task, 4),
                           **{f"p{q} $ / task": round(v, 4) for q, v in s_.percentiles().items()},
                           "tasks abandoned (%)": round(100 * (1 - s_.completed.mean()), 2)} for s_ in samples],
                         hide_index=True, width="stretch")
            explain(
                "Monte-Carlo over 20,000 tasks (seeded): turns per attempt ~ 1 + Poisson, re-sent calls ~ negative "
                "binomial, tokens per call ~ Gamma (coefficient of variation 0.3), success ~ Bernoulli per attempt. The "
                "dashed lines are $ per completed task; the right tail is tasks that needed a retry - the tail, not the "
                "mean, is what a budget per task has to cover.")
            show_code(simulate)


# below the first screen: drawn once picked (a chart sent with the first run delays the first picture)
SECTIONS = [PLANNER_TITLE]
(planner_section,) = lazy_sections(SECTIONS, key="cost_section")
with planner_section as is_open:
    if is_open:
        planner_panel()
