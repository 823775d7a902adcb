"""The lab: where a fixed-size memory runs out. First the state-size sweep (assets/lab/state/, made by
`python -m k3lite.experiments.lab_state all`), then the length sweep (assets/lab/, `python -m k3lite.experiments.lab_sweep all`), then live
training of the same models, then the residual experiment."""
import math
from dataclasses import asdict, replace
from functools import partial

import pandas as pd
import streamlit as st

from k3lite.experiments import lab_state_jobs as state
from k3lite.experiments import lab_sweep_jobs as sweep
from k3lite.model.config import K3_DECAY_LOWER_BOUND
from k3lite.base.guards import bounded_threads, deadline, heavy_work
from k3lite.experiments.lm_train import attnres_results
from k3lite.experiments.lab import MIXER_LABELS, iter_train
from k3lite.experiments.lab_mixers import BETA_INIT_LOGIT, saturated_decay_share
from k3lite.analytic.sensitivity import Assumption
from k3lite.base.evidence import assumed, derived, measured_here
from k3lite.experiments.lab_state_aggregate import HEADLINE_HEAD_DIM, ablation_rows, ceiling_gap
from k3lite.experiments.lab_state_aggregate import aggregate as state_aggregate
from k3lite.experiments.lab_state_sentences import (ablation_sentence, ceiling_sentence, fmt_points, report_sentence,
                                                    rule_sentence)
from k3lite.experiments.lab_store import RESULTS_DIR, load_runs
from k3lite.experiments.lab_sweep_aggregate import aggregate as sweep_aggregate
from k3lite.experiments.lab_sweep_aggregate import stale_rows
from k3lite.experiments.lab_sweep_checks import long_check, lr_check
from k3lite.experiments.lab_sweep_sentences import (capacity_sentence, live_sentence, mechanism_sentence, order_sentences,
                                                    short_name, spread_sentence)
from k3lite.experiments.tasks import chance_accuracy
from k3lite.viz.lab import curves_figure, seed_explorer, state_figure, sweep_figure
from k3lite.viz.style import fmt_bytes
from k3lite.viz.evidence import with_evidence
from k3lite.viz.memo import shared_figure
from views.common import (assumptions_block, explain, lazy_expander, lazy_sections, push_url, reset_button, sentence,
                          set_state, show_code, table, url_state, user_errors)
from views.common import try_it  # the page's practice problems, at its foot

LIVE_TASKS = tuple(sweep.SEQ_LENS)
LIVE_MIXERS = sweep.MIXERS
# Live default: MQAR at 32 tokens (8 pairs), linear attention and KDA, 250 steps each. Measured with one torch thread
# on the shared 2-core box (time.process_time, i.e. the CPU one idle core would spend): KDA 13.4 s + linear 9.8 s =
# 23 s, both at 97% held-out accuracy at step 250 (seed 0, at chance until ~step 100). The earlier 64-token,
# 300-step default took 38 s idle and 72 s under load. The page states the time each run actually took, measured by
# the run (StepRecord.elapsed_s), not this comment.
LIVE_DEFAULT_LEN, LIVE_DEFAULT_STEPS = 32, 250
LIVE_DEFAULT_MIXERS = ("linear", "kda")
STATE_RUNS = measured_here("python -m k3lite.experiments.lab_state all (assets/lab/state/: each file stores its command)")
SWEEP_RUNS = measured_here("python -m k3lite.experiments.lab_sweep all, then python -m k3lite.experiments.lab_sweep long "
                           "(assets/lab/, assets/lab/long/: each file stores its command)")
LIVE_RUNS = measured_here("this page's Train button: k3lite.experiments.lab.iter_train at your settings, on this server")

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
    rows_shown = [r for r in state_rows if r["mixer"] in shown]
    st.plotly_chart(shared_figure(state_figure, [r for r in state_runs if r["job"]["mixer"] in shown], rows_shown,
                                  evidence=STATE_RUNS), key="lab_state_fig")
    for text in (ceiling_sentence(state_rows), rule_sentence(state_rows)):
        if text:
            sentence(text, STATE_RUNS)
    with lazy_expander("Each seed's training curve: click a point", key="lab_x_seed_curves") as is_open:
        if is_open:
            rising = max(state_rows, key=lambda r: (r["not_flat"], r["head_dim"]))  # the cell the cap cut short most
            pick = (rising["mixer"], rising["head_dim"])
            st.altair_chart(seed_explorer(state_runs, state_rows, pick), key="lab_seed_explorer")
            st.caption("Top: every seed's final held-out recall, per mixer and head dim (the headline figure's points). "
                       "Bottom: the held-out recall of the picked cell's seeds, every "
                       f"{state.EVAL_EVERY} steps: a line still climbing at its last step is a run its cap cut short "
                       f"(the table's 'not flat'; such a seed is rerun to {state.LONG_STEPS} steps, which replaces it). "
                       "Altair: the selection is linked in the browser.")
    with lazy_expander("The numbers, the protocol, the report's setting, the init ablation", key="lab_x_numbers_protocol_report_s") as is_open:
        if is_open:
            st.caption(f"MQAR, T = {state.SEQ_LEN} tokens, {state.NUM_PAIRS} pairs; {state.N_HEADS} heads of dim K = "
                       + ", ".join(map(str, sorted(state.HEAD_DIMS))) + ": a recurrent layer keeps H·K·K numbers whatever "
                       "the length, softmax attention 2·T·H·K.")
            table(st, pd.DataFrame([{"mixer": MIXER_LABELS[r["mixer"]], "K": r["head_dim"],
                                        "memory per layer": fmt_bytes(r["state_bytes"]), "learning rate": r["lr"],
                                        "held-out recall (%)": f"{100 * r['mean']:.1f} ± {100 * r['std']:.1f}",
                                        "seeds": r["n"], f"of them rerun to {state.LONG_STEPS} steps": r["extended"],
                                        "not flat at the end": r["not_flat"]} for r in state_rows]),
                  {"K": assumed("the sweep's head dims (lab_state_jobs.HEAD_DIMS)"),
                   "memory per layer": derived(state.state_bytes)}, default=STATE_RUNS, hide_index=True, width="stretch")
            report = report_sentence(state_rows)
            if report:
                st.markdown(report)
            ablation = ablation_sentence(ablation_rows(state_runs), state_rows)
            st.markdown(ablation or "Init ablation: not run yet (`python -m k3lite.experiments.lab_state all` runs it after the "
                                    "K = 8 and 16 cells).")
            st.markdown(
                f"**Why the lab changes the init.** At fla's defaults the delta-rule mixers start with a write strength "
                f"beta ≈ 0.5, which erases earlier pairs before training can say which to keep, and with decays that "
                f"forget a write within a few hundred tokens; the lab starts beta at {1 / (1 + math.exp(-BETA_INIT_LOGIT)):.2f} and "
                f"the decays near 1 (measurements next to `BETA_INIT_LOGIT` and `DECAY_A_INIT` in `k3lite/experiments/lab_mixers.py`). "
                f"KDA here is the library's layer in K3's released form: decay bounded below by e^{K3_DECAY_LOWER_BOUND:g} "
                f"per token, g = {K3_DECAY_LOWER_BOUND:g}·sigmoid(A·f). Under that form fla's default init saturates "
                f"the sigmoid: {100 * saturated_decay_share():.0f}% of KDA's channels start at a decay of ~1 with a "
                "slope below 1e-6 (mean over the ablation's seeds), so gradients barely move them.")
            n_runs = len(state_runs)
            cpu_h = sum(r["wall_s"] for r in state_runs) / 3600
            st.caption(
                f"Protocol: per mixer and K the learning rate is the best of {list(state.LRS)} on seed 0, then "
                f"{len(state.SEEDS)} seeds run at it; every run trains {state.STEPS} steps of {state.BATCH_SIZE} sequences "
                f"(a run that reaches {100 * state.SOLVED:.0f}% stops there), no plateau rule; a seed still rising at the cap "
            f"is run again from scratch with a {state.LONG_STEPS}-step cap, and that run replaces it; 'not flat' = the best "
                f"held-out recall still gained ≥ {100 * state.FLAT_GAIN:.0f} points over the last "
                f"{100 * state.FLAT_WINDOW:.0f}% of the steps. Recall: answer tokens of {state.EVAL_EXAMPLES} fresh "
                f"sequences; chance is {100 * chance_accuracy('mqar', state.VOCAB):.2g}% (1 in "
                f"{round(1 / chance_accuracy('mqar', state.VOCAB))}). {n_runs} runs so far, {cpu_h:.1f} CPU-hours; each file in "
                "assets/lab/state/ stores the command that reproduces it.")

# ------------------------------------------------------------------------------------- length sweep
runs, long_runs = shipped_runs(), shipped_runs(sweep.LONG_DIR)  # the length sweep: its tab and the live run's sentences
rows = sweep_aggregate(runs, long_runs)  # each seed's final number: the LONG_STEPS rerun where the cap stopped it
rows_cap = sweep_aggregate(runs)  # every run at the MAX_STEPS cap (what the longer cap is compared with)
checks = {t: long_check(runs, long_runs, t) for t in sweep.SEQ_LENS}  # what the longer cap changed
SECTIONS = ["Recall vs length", "Train it yourself", "Residual experiment (shipped)"]
tab_length, tab_train, tab_residual = lazy_sections(SECTIONS, key="lab_section")  # none drawn until picked
with tab_length as is_open:
    if is_open:
        st.header("Recall vs length, at a state that does not run out")
        if not rows:
            st.warning("No finished sweep runs under assets/lab/: `python -m k3lite.experiments.lab_sweep all` makes them (resumable).")
        else:
            cols = st.columns(len({r["task"] for r in rows}))
            for col, task in zip(cols, sorted({r["task"] for r in rows})):
                col.plotly_chart(shared_figure(sweep_figure, rows, task, evidence=SWEEP_RUNS), key=f"lab_sweep_{task}")
                spread = spread_sentence(rows, task)
                if spread:
                    col.markdown(spread)
            stale = stale_rows(rows)
            if stale:
                st.caption(f"{len(stale)} cells ({', '.join(sorted({short_name(r['mixer']) for r in stale}))}) still "
                           "show runs of the lab's earlier KDA copy (unbounded decay, low-rank output gate); "
                           "`python -m k3lite.experiments.lab_sweep all` reruns them on the library's layer.")
            with lazy_expander("Order per length, tables, the longer cap and the learning-rate check", key="lab_x_order_per_length_tables") as is_open:
                if is_open:
                    for task in sorted({r["task"] for r in rows}):
                        st.markdown(f"**{task}: the order per length** (report: KDA ≥ GDN > Mamba-2)")
                        st.markdown("\n".join(f"- {s}" for s in order_sentences(rows, task)))
                    for task in sorted({r["task"] for r in rows}):  # one table per task: its own lengths as columns
                        cells = []
                        for mixer in sweep.MIXERS:
                            sel = {r["seq_len"]: r for r in rows if r["task"] == task and r["mixer"] == mixer}
                            if sel:
                                cells.append({"mixer": MIXER_LABELS[mixer], "learning rate": next(iter(sel.values()))["lr"],
                                              **{f"T={T} (%)": (f"{100 * sel[T]['mean']:.1f} ± {100 * sel[T]['std']:.1f} (n={sel[T]['n']}"
                                                                + (f", {sel[T]['extended']} at {sweep.LONG_STEPS}" if sel[T]["extended"]
                                                                   else "") + ")"
                                                                if T in sel else "not run yet") for T in sweep.SEQ_LENS[task]}})
                        st.markdown(f"**{task}**: held-out accuracy (%), mean ± std over seeds (n; how many of them are the "
                                    f"{sweep.LONG_STEPS}-step reruns)")
                        table(st, pd.DataFrame(cells), default=SWEEP_RUNS, hide_index=True,
                              width="stretch")  # full width: key columns stay on screen
                    n_cap = sum(r["not_plateaued"] for r in rows)  # with the reruns in place
                    n_capped = sum(r["not_plateaued"] for r in rows_cap)
                    n_ext = sum(r["extended"] + r["rerun_shorter"] for r in rows)  # capped runs with a rerun
                    n_short = sum(r["rerun_shorter"] for r in rows)
                    so_far = f" so far (the others show their {sweep.MAX_STEPS}-step number)" if n_ext < n_capped else ""
                    st.caption(
                        f"Held-out accuracy on the answer tokens of {sweep.EVAL_EXAMPLES} fresh sequences, mean ± std over seeds (n). "
                        f"Model: {sweep.D_MODEL}-wide, 2 layers x {sweep.N_HEADS} heads, no FFN, vocabulary {sweep.VOCAB}, batch "
                        f"{sweep.BATCH_SIZE}. Protocol: per task and mixer the learning rate is the best of {list(sweep.LRS)} at "
                        f"T = " + " / ".join(f"{T} ({t})" for t, T in sweep.LR_SEQ_LEN.items()) + " (seed 0), then used at every length and seed; a run stops when held-out accuracy "
                        f"reaches {100 * sweep.SOLVED:.0f}%, or its best held-out accuracy gained less than "
                        f"{100 * sweep.MIN_GAIN:.0f} point{'s' if sweep.MIN_GAIN != 0.01 else ''} over {sweep.PATIENCE} steps (after {sweep.MIN_STEPS}), or at "
                        f"{sweep.MAX_STEPS} steps (a run still at chance, below {100 * sweep.ESCAPE_ACC:.0f}%, is never called a "
                        f"plateau). A run that cap stopped (still gaining, or still at chance) is run again from scratch with a "
                        f"{sweep.LONG_STEPS}-step cap and the same rule, and the table shows the rerun in its place unless the rerun "
                        f"stopped on a plateau after fewer steps than the capped run had trained (its learning rate anneals over "
                        f"{sweep.LONG_STEPS} steps, so a plateau can be called while it is still high; then the longer-trained "
                        f"capped run stands: {n_short} seeds): {n_ext} of the {n_capped} capped runs have a rerun{so_far}; {n_cap} "
                        f"of the {sum(r['n'] for r in rows)} runs shown ended at their step cap rather than a plateau "
                        f"({sum(r['rising'] for r in rows)} of them still gaining). {len(runs)} runs in all (LR sweep included) "
                        f"and {len(long_runs)} reruns; each file in "
                        "assets/lab/ and assets/lab/long/ stores the command that reproduces it; `python -m k3lite.experiments.lab_sweep all` "
                        "then `python -m k3lite.experiments.lab_sweep long` make (or complete) the set.")
                    for task, (long_rows, long_sentence) in checks.items():
                        if not long_rows:
                            continue
                        T_max = max(sweep.SEQ_LENS[task])
                        at_max = [r for r in rows_cap if r["task"] == task and r["seq_len"] == T_max]
                        st.markdown(f"**What the longer cap changed ({task}, T = {T_max}, {sum(r['n'] for r in at_max)} runs).** "
                                    + long_sentence)
                        table(st, pd.DataFrame([{"mixer": MIXER_LABELS[r["mixer"]], "seeds": ", ".join(map(str, r["seeds"])),
                                                    f"held-out % ({sweep.MAX_STEPS}-step cap)":
                                                        None if r["short_mean"] is None else round(100 * r["short_mean"], 1),
                                                    f"held-out % ({sweep.LONG_STEPS}-step cap)":
                                                        f"{100 * r['long_mean']:.1f} ± {100 * r['long_std']:.1f}",
                                                    "steps run": ", ".join(map(str, r["steps"])),
                                                    "still gaining at the cap": r["still_rising"]}
                                                   for r in long_rows]), default=SWEEP_RUNS, hide_index=True, width="stretch")
                    for task in sweep.SEQ_LENS:
                        lr_rows, lr_sentence = lr_check(runs, long_runs, task)
                        if lr_rows:
                            st.markdown(lr_sentence)
                            table(st, pd.DataFrame([{"mixer": MIXER_LABELS[r["mixer"]],
                                                        "chosen LR": r["lr"], "held-out % (chosen LR)": round(100 * r["mean"], 1),
                                                        "seeds at chance (chosen LR)": f"{r['at_chance']} of {r['n']}",
                                                        "lower LR": r["low_lr"],
                                                        "held-out % (lower LR)": f"{100 * r['low_mean']:.1f} ± {100 * r['low_std']:.1f}",
                                                        "seeds at chance (lower LR)": f"{r['low_at_chance']} of {r['low_n']}",
                                                        "still gaining (lower LR)": r["low_rising"]}
                                                       for r in lr_rows]), default=SWEEP_RUNS, hide_index=True,
                                  width="stretch")
                    mechanisms = [m for m in (mechanism_sentence(rows, t) for t in sorted({r["task"] for r in rows})) if m]
                    if mechanisms:
                        st.markdown("**One idea at a time** (DeltaNet is the control: the delta rule without decay). "
                                    + " ".join(f"{t}: {m}" for t, m in zip(sorted({r["task"] for r in rows}), mechanisms)))
                    n_chance = sum(r["at_chance"] for r in rows)
                    at_chance = sorted({(r["task"], r["seq_len"], r["mixer"]) for r in rows if r["at_chance"]})
                    explain(
                        (f"{n_chance} of the {sum(r['n'] for r in rows)} runs shown never left chance (best held-out accuracy "
                           f"below {100 * sweep.ESCAPE_ACC:.0f}%) within their step cap ("
                           + ", ".join(f"{t} T={T} {short_name(m)}" for t, T, m in at_chance) + "): these tasks are learned in a "
                           "sudden jump after a flat stretch at chance, so such a number says 'had not started within the step "
                           "cap', not where a learning model levels off. " if n_chance else "")
                        + "What would change a verdict that differs from the report: the report's models are larger and trained "
                        "far longer, with learning rates swept at every length. Here the learning rate is chosen at one length, "
                        f"training stops at {sweep.LONG_STEPS} steps at most, and the sequences may not be long enough for the "
                        "state to run out of room; a learning-rate grid per length (the runs that never left chance are the first "
                        "place it would change a number), more steps, and longer sequences are the evidence that would move these "
                        "numbers.")

# ------------------------------------------------------------------------------------------- live run
MAX_LIVE_RUNS = 256  # completed live runs kept for every session (each a few tens of kB of curves): a bound, not a leak


@st.cache_resource
def finished_runs() -> dict:
    """Completed runs, shared by every session: (config) -> {"curve", "evals", "seconds", ...}, the oldest dropped
    beyond MAX_LIVE_RUNS (dicts keep insertion order)."""
    return {}


def default_configs(lrs: dict) -> dict:
    """The live default's configs (task, length, mixers, steps, seed 0): its time is read from the runs store."""
    return {m: replace(sweep.lab_config("mqar", m, LIVE_DEFAULT_LEN, lrs[m], 0), steps=LIVE_DEFAULT_STEPS,
                       eval_every=max(10, LIVE_DEFAULT_STEPS // 10), eval_examples=128) for m in LIVE_DEFAULT_MIXERS}


def run_key(cfg) -> tuple:
    return tuple(sorted(asdict(cfg).items()))


@st.fragment
def train_panel() -> None:
    """The live run: controls beside the curves; training redraws the curves as it goes (a fragment: its controls
    rerun only this panel, not the sweeps above)."""
    st.header("Train it yourself")
    reset_button("lab_")
    url_state("lab_task", "mqar", choices=LIVE_TASKS)
    url_state("lab_seq_len", LIVE_DEFAULT_LEN, choices=sorted({T for Ts in sweep.SEQ_LENS.values() for T in Ts}))
    url_state("lab_mixers", list(LIVE_DEFAULT_MIXERS), choices=LIVE_MIXERS)
    url_state("lab_steps", LIVE_DEFAULT_STEPS, lo=10, hi=800)
    url_state("lab_seed", 0, lo=0, hi=9999)
    # full width: in the narrow control column the mixers' chips were cut with "…" at 1400 px
    mixers = st.multiselect("mixers to compare", LIVE_MIXERS, key="lab_mixers", format_func=MIXER_LABELS.get)
    ctl, fig_col = st.columns([1, 3])
    task = ctl.selectbox("task", LIVE_TASKS, key="lab_task")
    seq_len = ctl.select_slider("sequence length (tokens)",
                                sorted({T for Ts in sweep.SEQ_LENS.values() for T in Ts}), key="lab_seq_len")
    steps = ctl.slider(f"training steps (batches of {sweep.BATCH_SIZE} sequences)", 10, 800, step=10, key="lab_steps")
    seed = ctl.number_input("seed", 0, 9999, key="lab_seed")
    push_url("lab_task", "lab_seq_len", "lab_mixers", "lab_steps", "lab_seed")
    b1, b2 = ctl.columns(2)
    train_clicked = b1.button("Train", type="primary", key="lab_train")
    b2.button("Stop", key="lab_stop_button", on_click=set_state, args=("lab_stop", True))

    with user_errors():
        if not mixers:
            raise ValueError("choose at least one mixer to train")
        lrs = {m: sweep.chosen_lr(runs, task, m) or 1e-2 for m in mixers}  # the shipped sweep's LR per mixer
        configs = {m: replace(sweep.lab_config(task, m, int(seq_len), lrs[m], int(seed)), steps=int(steps),
                              eval_every=max(10, int(steps) // 10), eval_examples=128) for m in mixers}
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

    def train_live() -> None:
        """Train each mixer in turn, redrawing after steps 1, 2, 5 and every 10th (the curve appears in the first
        second); stops between steps when Stop was pressed."""
        limit = deadline(what="training")  # K3LITE_JOB_LIMIT_S (default 300 s): TimeLimit -> st.error
        for i, (mixer, cfg) in enumerate(configs.items()):
            key = run_key(cfg)
            if key in store:  # cached: same config, seed and steps -> same numbers
                live[mixer] = store[key]
                continue
            run = live[mixer] = {"curve": {"step": [], "loss": [], "acc": []},
                                 "evals": {"step": [], "loss": [], "acc": []}, "steps_done": 0, "seconds": 0.0}
            for rec in iter_train(cfg):
                for name, value in (("step", rec.step), ("loss", rec.loss), ("acc", rec.acc)):
                    run["curve"][name].append(value)
                if rec.eval_acc is not None:
                    for name, value in (("step", rec.step), ("loss", rec.eval_loss), ("acc", rec.eval_acc)):
                        run["evals"][name].append(value)
                run["steps_done"], run["seconds"] = rec.step, rec.elapsed_s
                if rec.step in (1, 2, 5) or rec.step % 10 == 0 or rec.step == cfg.steps:
                    progress.progress((i + rec.step / cfg.steps) / len(configs),
                                      text=f"{MIXER_LABELS[mixer]}: step {rec.step}/{cfg.steps}, {rec.elapsed_s:.1f} s")
                    draw(live)
                if st.session_state.get("lab_stop"):
                    return
                limit.check(rec.step)
            store[key] = run
            while len(store) > MAX_LIVE_RUNS:  # another session may drop the same oldest entry: then it is gone
                store.pop(next(iter(store), None), None)

    if train_clicked:
        st.session_state["lab_stop"] = False
        live.clear()
        bounded_threads()
        with user_errors(), heavy_work("lab training"):
            train_live()
        progress.progress(1.0, text="stopped" if st.session_state.get("lab_stop") else "done")

    if live:
        draw(live)
        done = {m: r for m, r in live.items() if r["evals"]["acc"]}
        if done:
            result.markdown(live_sentence({m: (r["evals"]["acc"][-1], r["steps_done"], r["seconds"])
                                           for m, r in done.items()}, task, MIXER_LABELS))
        with lazy_expander("the numbers of this run", key="lab_x_numbers_run") as is_open:
            if is_open:
                table(st, pd.DataFrame([{"mixer": MIXER_LABELS[m], "learning rate": lrs.get(m),
                                            "steps trained": r["steps_done"], "seconds": round(r.get("seconds", 0.0), 1),
                                            "held-out accuracy (%)": round(100 * r["evals"]["acc"][-1], 1)
                                            if r["evals"]["acc"] else None}
                                           for m, r in live.items()]), default=LIVE_RUNS, hide_index=True, width="stretch")
                st.caption("Held-out accuracy: answer tokens only (MQAR: the query positions) of 128 fresh sequences, every "
                           "tenth of the run. Lines: training batches, smoothed over 10 steps.")
    else:
        draw({})
        result.info("Press **Train**: each mixer trains in turn and the curves grow as it trains; the same "
                      "settings again come from the cache.")
    show_code(iter_train)

    default_lrs = {m: sweep.chosen_lr(runs, "mqar", m) or 1e-2 for m in LIVE_DEFAULT_MIXERS}
    timed = [store.get(run_key(c)) for c in default_configs(default_lrs).values()]
    took = (f"took {sum(r['seconds'] for r in timed):.0f} s when it last ran on this server ("
            + " + ".join(f"{r['seconds']:.1f} s" for r in timed) + ", measured by the run itself)"
            if all(r and r.get("seconds") for r in timed) else "has not run on this server since it started: its "
            "time appears here once it has (measured by the run itself)")
    default_ends = [r["mean"] for r in rows if r["task"] == "mqar" and r["seq_len"] == LIVE_DEFAULT_LEN]
    st.expander("What a live run can and cannot show").caption(
        f"The same models and learning rates as the shipped sweep, for fewer steps. The default ({LIVE_DEFAULT_LEN} "
        f"tokens, {' and '.join(MIXER_LABELS[m] for m in LIVE_DEFAULT_MIXERS)}, {LIVE_DEFAULT_STEPS} steps each) "
        f"{took}. What it can show: these tasks are learned in a jump (held-out accuracy sits at chance, then climbs "
        "within a few dozen steps), and which mixer jumps first. What it cannot show: the capacity effect, where a "
        "fixed state runs out of room"
        + ("" if not default_ends else f"; at {LIVE_DEFAULT_LEN} tokens the shipped runs of every mixer end at "
           + (f"{100 * min(default_ends):.0f}%" if round(100 * min(default_ends)) == round(100 * max(default_ends))
              else f"{100 * min(default_ends):.0f}–{100 * max(default_ends):.0f}%") + " (mean per mixer)")
        + ". " + (capacity_sentence(rows_cap, runs, rows) + " " if rows else "")
        + "A single short run is one noisy sample of the start of that curve, and a shorter run also decays its "
        "learning rate sooner than the shipped runs do.")


with tab_train as is_open:
    if is_open:
        train_panel()

# --------------------------------------------------------------------------------- residual experiment
with tab_residual as is_open:
    if is_open:
        res_files = attnres_results()
        if res_files:
            st.header("3. Residual experiment: the lite LM with standard vs Attention Residuals")
            table(st, pd.DataFrame([{"seed": res["seed"], "residual": r["mode"], "steps": r["steps"],
                                     "validation loss (nats/byte)": round(r["final_val"]["mean"], 4),
                                     "train time (s)": r["seconds"]} for res in res_files for r in res["runs"]]),
                  default=measured_here(" ; ".join(sorted({res["command"] for res in res_files}))), hide_index=True)
            for res in res_files:
                st.write(f"Seed {res['seed']}: " + "; ".join(
                    f"standard residuals needed **{m['ratio']:.2f}x** the steps to match {mode} AttnRes" if m["reached"]
                    else f"{mode} AttnRes: {m['note']}" for mode, m in res["standard_steps_to_match"].items()))
            st.caption(f"Shipped result (not live). `lite` preset, {res['steps']} steps of {res['batch']} x {res['seq_len']} "
                       f"bytes (k3lite.experiments.lm_train's data); made by `{res['command']}`. The AttnRes paper (arXiv 2603.15031) "
                       "reports ~1.25x compute-equivalent at scale; a few hundred CPU steps are noisy.")

# ------------------------------------------------------------------------------- what the page assumes
if state_rows:
    assumptions_block(
        "lab_x_assumptions", f"Recall gap, softmax attention minus the best recurrent mixer at K = {HEADLINE_HEAD_DIM}",
        partial(ceiling_gap, state_runs),
        [Assumption("steps_scale", "training steps (x each run's step cap)", 1.0,
                    f"{state.STEPS:,} steps of {state.BATCH_SIZE} sequences, {state.LONG_STEPS:,} for a seed still "
                    "rising; read off each run's stored evals (past its end a run keeps its final number)", unit="x")],
        fmt_points,
        also=[("seeds", f"{len(state.SEEDS)} per cell (the init ablation: the seeds both inits have)"),
              ("learning rate", f"per mixer and K the best of {list(state.LRS)} on seed 0, then used for every seed"),
              ("initialisation", "the lab's (write strength and decays started near keeping everything); the ablation "
                                 "shows fla's defaults"),
              ("model", f"2 layers x {state.N_HEADS} heads, no FFN, d = {state.N_HEADS} x K"),
              ("task", f"MQAR, T = {state.SEQ_LEN} tokens, {state.NUM_PAIRS} pairs, vocabulary {state.VOCAB}; recall on "
                       f"{state.EVAL_EXAMPLES} fresh sequences"),
              ("state precision", "fp32, as the lab trains and as KDACache keeps the state")])

try_it("lab")
