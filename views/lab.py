"""The lab: where a fixed-size memory runs out. First the state-size sweep (assets/lab/state/, made by
`python -m k3lite.experiments.lab_state all`), then the length sweep (assets/lab/, `python -m k3lite.experiments.lab_sweep all`), then live
training of the same models, then the residual experiment. The panels compute (k3lite.panels.lab, lab_sweep)."""
from functools import partial

import pandas as pd
import streamlit as st

from k3lite.experiments import lab_state_jobs as state
from k3lite.experiments import lab_sweep_jobs as sweep
from k3lite.base.guards import bounded_threads, deadline, heavy_work
from k3lite.experiments.lm_train import attnres_results
from k3lite.experiments.lab import MIXER_LABELS, iter_train
from k3lite.experiments.lab_state_aggregate import aggregate as state_aggregate, ceiling_gap
from k3lite.experiments.lab_state_sentences import fmt_points
from k3lite.experiments.lab_store import RESULTS_DIR, load_runs
from k3lite.experiments.lab_sweep_sentences import spread_sentence
from k3lite.panels import lab_sweep as ls
from k3lite.panels.lab import (
    GAP_NAME, LIVE_DEFAULT_LEN, LIVE_DEFAULT_MIXERS, LIVE_DEFAULT_STEPS, LIVE_LENGTHS, LIVE_MIXERS, LIVE_NOTE,
    LIVE_RUNS, LIVE_TASKS, SEED_CAPTION, STATE_COLUMNS, STATE_RUNS, STATE_SETUP, lab_assumptions, live_configs,
    live_limits, live_result, live_table, residual_caption, residual_evidence, residual_lines, residual_rows,
    seed_pick, state_notes, state_panel, state_protocol, state_table, train_live,
)
from k3lite.viz.lab import curves_figure, seed_explorer, sweep_figure
from k3lite.viz.evidence import with_evidence
from k3lite.viz.memo import shared_figure
from views.common import (assumptions_block, explain, lazy_expander, lazy_sections, push_url, reset_button,
                          set_state, show_code, show_panel, table, url_state, user_errors)
from views.common import try_it  # the page's practice problems, at its foot

st.title("The lab: where a fixed-size memory runs out")
st.markdown("How much can a **fixed-size state** recall, and does the **update rule** matter once it runs short? "
            "Tiny 2-layer models trained on [MQAR](https://arxiv.org/abs/2312.04927) (key-value pairs, then the keys "
            "again); softmax attention, whose cache grows with the text, is the ceiling.")


@st.cache_data(ttl=300)  # the sweeps may still be adding files: reread every 5 minutes at most
def shipped_runs(results_dir=RESULTS_DIR) -> list[dict]:
    return load_runs(results_dir)


# ------------------------------------------------------------------------------------ state-size sweep
state_runs = shipped_runs(state.STATE_DIR)
state_rows = state_aggregate(state_runs)
if not state_rows:
    st.warning("No finished state-size runs under assets/lab/state/ yet: `python -m k3lite.experiments.lab_state all` makes "
               "them (resumable).")
else:
    url_state("lab_state_mixers", list(state.MIXERS), choices=state.MIXERS)
    shown = st.pills("mixers", state.MIXERS, selection_mode="multi", key="lab_state_mixers",
                     format_func={m: MIXER_LABELS[m].split(" (")[0] for m in MIXER_LABELS}.get) or []
    push_url("lab_state_mixers")
    show_panel(state_panel(state_runs, state_rows, shown), "lab_state_fig")
    with lazy_expander("Each seed's training curve: click a point", key="lab_x_seed_curves") as is_open:
        if is_open:
            st.altair_chart(seed_explorer(state_runs, state_rows, seed_pick(state_rows)), key="lab_seed_explorer")
            st.caption(SEED_CAPTION)
    with lazy_expander("The numbers, the protocol, the report's setting, the init ablation", key="lab_x_numbers_protocol_report_s") as is_open:
        if is_open:
            st.caption(STATE_SETUP)
            table(st, pd.DataFrame(state_table(state_rows)), STATE_COLUMNS, default=STATE_RUNS, hide_index=True,
                  width="stretch")
            for note in state_notes(state_runs, state_rows):
                st.markdown(note)
            st.caption(state_protocol(state_runs))

# ------------------------------------------------------------------------------------- length sweep
data = ls.SweepData.load(shipped_runs(), shipped_runs(sweep.LONG_DIR))  # its tab and the live run's sentences
rows = data.rows
SECTIONS = ["Recall vs length", "Train it yourself", "Residual experiment (shipped)"]
tab_length, tab_train, tab_residual = lazy_sections(SECTIONS, key="lab_section")  # none drawn until picked
with tab_length as is_open:
    if is_open:
        st.header("Recall vs length, at a state that does not run out")
        if not rows:
            st.warning("No finished sweep runs under assets/lab/: `python -m k3lite.experiments.lab_sweep all` makes them (resumable).")
        else:
            cols = st.columns(len(data.tasks))
            for col, task in zip(cols, data.tasks):
                col.plotly_chart(shared_figure(sweep_figure, rows, task, evidence=ls.SWEEP_RUNS), key=f"lab_sweep_{task}")
                spread = spread_sentence(rows, task)
                if spread:
                    col.markdown(spread)
            if ls.stale_caption(rows):
                st.caption(ls.stale_caption(rows))
            with lazy_expander("Order per length, tables, the longer cap and the learning-rate check", key="lab_x_order_per_length_tables") as is_open:
                if is_open:
                    for line in ls.order_lines(rows):
                        st.markdown(line)
                    for heading, cells in ls.task_tables(rows):
                        st.markdown(heading)
                        table(st, pd.DataFrame(cells), default=ls.SWEEP_RUNS, hide_index=True,
                              width="stretch")  # full width: key columns stay on screen
                    st.caption(ls.protocol_caption(data))
                    for text, cells in ls.long_tables(data) + ls.lr_tables(data):
                        st.markdown(text)
                        table(st, pd.DataFrame(cells), default=ls.SWEEP_RUNS, hide_index=True, width="stretch")
                    if ls.mechanisms_line(rows):
                        st.markdown(ls.mechanisms_line(rows))
                    explain(ls.chance_note(rows))


# ------------------------------------------------------------------------------------------- live run
@st.cache_resource
def finished_runs() -> dict:
    """Completed runs, shared by every session: (config) -> {"curve", "evals", "seconds", ...}, the oldest dropped
    beyond MAX_LIVE_RUNS (dicts keep insertion order)."""
    return {}


@st.fragment
def train_panel() -> None:
    """The live run: controls beside the curves; training redraws the curves as it goes (a fragment: its controls
    rerun only this panel, not the sweeps above)."""
    st.header("Train it yourself")
    reset_button("lab_")
    url_state("lab_task", "mqar", choices=LIVE_TASKS)
    url_state("lab_seq_len", LIVE_DEFAULT_LEN, choices=LIVE_LENGTHS)
    url_state("lab_mixers", list(LIVE_DEFAULT_MIXERS), choices=LIVE_MIXERS)
    url_state("lab_steps", LIVE_DEFAULT_STEPS, lo=10, hi=800)
    url_state("lab_seed", 0, lo=0, hi=9999)
    # full width: in the narrow control column the mixers' chips were cut with "…" at 1400 px
    mixers = st.multiselect("mixers to compare", LIVE_MIXERS, key="lab_mixers", format_func=MIXER_LABELS.get)
    ctl, fig_col = st.columns([1, 3])
    task = ctl.selectbox("task", LIVE_TASKS, key="lab_task")
    seq_len = ctl.select_slider("sequence length (tokens)", LIVE_LENGTHS, key="lab_seq_len")
    steps = ctl.slider(f"training steps (batches of {sweep.BATCH_SIZE} sequences)", 10, 800, step=10, key="lab_steps")
    seed = ctl.number_input("seed", 0, 9999, key="lab_seed")
    push_url("lab_task", "lab_seq_len", "lab_mixers", "lab_steps", "lab_seed")
    b1, b2 = ctl.columns(2)
    train_clicked = b1.button("Train", type="primary", key="lab_train")
    b2.button("Stop", key="lab_stop_button", on_click=set_state, args=("lab_stop", True))

    with user_errors():
        lrs, configs = live_configs(data.runs, task, mixers, seq_len, steps, seed)
    progress = fig_col.empty()
    chart_acc, chart_loss = fig_col.columns(2)
    slot_acc, slot_loss = chart_acc.empty(), chart_loss.empty()
    result = fig_col.empty()

    def draw(live_runs: dict) -> None:
        n = st.session_state["lab_draws"] = st.session_state.get("lab_draws", 0) + 1  # fresh keys per redraw
        slot_acc.plotly_chart(with_evidence(curves_figure(live_runs, "acc", int(steps)), LIVE_RUNS), key=f"lab_acc_{n}")
        slot_loss.plotly_chart(with_evidence(curves_figure(live_runs, "loss", int(steps)), LIVE_RUNS),
                               key=f"lab_loss_{n}")

    store = finished_runs()
    live = st.session_state.setdefault("lab_live", {})  # what the current view shows (partial runs too)

    def on_step(done: float, text: str) -> None:
        progress.progress(done, text=text)
        draw(live)

    if train_clicked:
        st.session_state["lab_stop"] = False
        live.clear()
        bounded_threads()
        with user_errors(), heavy_work("lab training"):  # K3LITE_JOB_LIMIT_S (default 300 s): TimeLimit -> st.error
            train_live(configs, store, live, on_step, lambda: st.session_state.get("lab_stop"),
                       deadline(what="training"))
        progress.progress(1.0, text="stopped" if st.session_state.get("lab_stop") else "done")

    if live:
        draw(live)
        if live_result(live, task):
            result.markdown(live_result(live, task))
        with lazy_expander("the numbers of this run", key="lab_x_numbers_run") as is_open:
            if is_open:
                table(st, pd.DataFrame(live_table(live, lrs)), default=LIVE_RUNS, hide_index=True, width="stretch")
                st.caption(LIVE_NOTE)
    else:
        draw({})
        result.info("Press **Train**: each mixer trains in turn and the curves grow as it trains; the same "
                      "settings again come from the cache.")
    show_code(iter_train)
    st.expander("What a live run can and cannot show").caption(live_limits(store, data))


with tab_train as is_open:
    if is_open:
        train_panel()

# --------------------------------------------------------------------------------- residual experiment
with tab_residual as is_open:
    if is_open:
        res_files = attnres_results()
        if res_files:
            st.header("3. Residual experiment: the lite LM with standard vs Attention Residuals")
            table(st, pd.DataFrame(residual_rows(res_files)), default=residual_evidence(res_files), hide_index=True)
            for line in residual_lines(res_files):
                st.write(line)
            st.caption(residual_caption(res_files))

# ------------------------------------------------------------------------------- what the page assumes
if state_rows:
    assumptions, also = lab_assumptions()
    assumptions_block("lab_x_assumptions", GAP_NAME, partial(ceiling_gap, state_runs), assumptions, fmt_points, also=also)

try_it("lab")
