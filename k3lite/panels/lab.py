"""The lab page's panels (views/lab.py lays them out): the state-size headline and its notes, the live training run
(its configs, its loop with callbacks for the page to redraw, its table and limits), the residual experiment and the
assumptions block's rows. No Streamlit here; the length sweep's tables and notes are in lab_sweep.py.

    state_panel(runs, rows, shown)     recall vs memory per mixer (shipped runs) with its computed sentences
    state_table, state_notes, state_protocol, SEED_CAPTION
    live_configs, default_configs, run_key, train_live, live_table, LIVE_NOTE, live_limits
    residual_rows, residual_lines, residual_caption, lab_assumptions
"""
from __future__ import annotations

import math
from dataclasses import asdict, replace
from typing import Callable

from k3lite.analytic.sensitivity import Assumption
from k3lite.base.evidence import assumed, derived, measured_here
from k3lite.experiments import lab_state_jobs as state
from k3lite.experiments import lab_sweep_jobs as sweep
from k3lite.experiments.lab import MIXER_LABELS, iter_train
from k3lite.experiments.lab_mixers import BETA_INIT_LOGIT, saturated_decay_share
from k3lite.experiments.lab_state_aggregate import HEADLINE_HEAD_DIM, ablation_rows
from k3lite.experiments.lab_state_sentences import ablation_sentence, ceiling_sentence, report_sentence, rule_sentence
from k3lite.experiments.lab_sweep_sentences import capacity_sentence, live_sentence
from k3lite.experiments.tasks import chance_accuracy
from k3lite.model.config import K3_DECAY_LOWER_BOUND
from k3lite.panels.core import Panel, Said
from k3lite.viz.lab import state_figure
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import fmt_bytes

STATE_RUNS = measured_here("python -m k3lite.experiments.lab_state all (assets/lab/state/: each file stores its command)")
LIVE_RUNS = measured_here("this page's Train button: k3lite.experiments.lab.iter_train at your settings, on this server")
LIVE_TASKS = tuple(sweep.SEQ_LENS)
LIVE_MIXERS = sweep.MIXERS
LIVE_LENGTHS = sorted({T for Ts in sweep.SEQ_LENS.values() for T in Ts})
# Live default: MQAR at 32 tokens (8 pairs), linear attention and KDA, 250 steps each. Measured with one torch thread
# on the shared 2-core box (time.process_time, i.e. the CPU one idle core would spend): KDA 13.4 s + linear 9.8 s =
# 23 s, both at 97% held-out accuracy at step 250 (seed 0, at chance until ~step 100). The earlier 64-token,
# 300-step default took 38 s idle and 72 s under load. The page states the time each run actually took, measured by
# the run (StepRecord.elapsed_s), not this comment.
LIVE_DEFAULT_LEN, LIVE_DEFAULT_STEPS = 32, 250
LIVE_DEFAULT_MIXERS = ("linear", "kda")
MAX_LIVE_RUNS = 256  # completed live runs kept for every session (each a few tens of kB of curves): a bound, not a leak


# ------------------------------------------------------------------------------------------ state-size sweep
def state_panel(runs: list[dict], rows: list[dict], shown: list[str]) -> Panel:
    """Held-out recall against the memory one layer keeps, for the mixers `shown`; the sentences on the ceiling
    and the update rule are computed over every mixer's rows."""
    fig = shared_figure(state_figure, [r for r in runs if r["job"]["mixer"] in shown],
                        [r for r in rows if r["mixer"] in shown], evidence=STATE_RUNS)
    said = tuple(Said(t, (STATE_RUNS,)) for t in (ceiling_sentence(rows), rule_sentence(rows)) if t)
    return Panel(fig, said, STATE_RUNS)


def seed_pick(rows: list[dict]) -> tuple[str, int]:
    """The cell the seed explorer opens on: the one its step cap cut short most."""
    rising = max(rows, key=lambda r: (r["not_flat"], r["head_dim"]))
    return rising["mixer"], rising["head_dim"]


SEED_CAPTION = (
    "Top: every seed's final held-out recall, per mixer and head dim (the headline figure's points). "
    "Bottom: the held-out recall of the picked cell's seeds, every "
    f"{state.EVAL_EVERY} steps: a line still climbing at its last step is a run its cap cut short "
    f"(the table's 'not flat'; such a seed is rerun to {state.LONG_STEPS} steps, which replaces it). "
    "Altair: the selection is linked in the browser.")
STATE_SETUP = (f"MQAR, T = {state.SEQ_LEN} tokens, {state.NUM_PAIRS} pairs; {state.N_HEADS} heads of dim K = "
               + ", ".join(map(str, sorted(state.HEAD_DIMS))) + ": a recurrent layer keeps H·K·K numbers whatever "
               "the length, softmax attention 2·T·H·K.")
STATE_COLUMNS = {"K": assumed("the sweep's head dims (lab_state_jobs.HEAD_DIMS)"),
                 "memory per layer": derived(state.state_bytes)}


def state_table(rows: list[dict]) -> list[dict]:
    """One row per mixer and head dim: memory, learning rate, recall, seeds, reruns."""
    return [{"mixer": MIXER_LABELS[r["mixer"]], "K": r["head_dim"], "memory per layer": fmt_bytes(r["state_bytes"]),
             "learning rate": r["lr"], "held-out recall (%)": f"{100 * r['mean']:.1f} ± {100 * r['std']:.1f}",
             "seeds": r["n"], f"of them rerun to {state.LONG_STEPS} steps": r["extended"],
             "not flat at the end": r["not_flat"]} for r in rows]


def state_notes(runs: list[dict], rows: list[dict]) -> list[str]:
    """Markdown below the table: the report's setting (when computed), the init ablation, why the lab's init."""
    report = report_sentence(rows)
    ablation = ablation_sentence(ablation_rows(runs), rows)
    return ([report] if report else []) + [
        ablation or "Init ablation: not run yet (`python -m k3lite.experiments.lab_state all` runs it after the "
                    "K = 8 and 16 cells).",
        f"**Why the lab changes the init.** At fla's defaults the delta-rule mixers start with a write strength "
        f"beta ≈ 0.5, which erases earlier pairs before training can say which to keep, and with decays that "
        f"forget a write within a few hundred tokens; the lab starts beta at {1 / (1 + math.exp(-BETA_INIT_LOGIT)):.2f} and "
        f"the decays near 1 (measurements next to `BETA_INIT_LOGIT` and `DECAY_A_INIT` in `k3lite/experiments/lab_mixers.py`). "
        f"KDA here is the library's layer in K3's released form: decay bounded below by e^{K3_DECAY_LOWER_BOUND:g} "
        f"per token, g = {K3_DECAY_LOWER_BOUND:g}·sigmoid(A·f). Under that form fla's default init saturates "
        f"the sigmoid: {100 * saturated_decay_share():.0f}% of KDA's channels start at a decay of ~1 with a "
        "slope below 1e-6 (mean over the ablation's seeds), so gradients barely move them."]


def state_protocol(runs: list[dict]) -> str:
    """How the state-size sweep chose its learning rates, stopped, reran and scored, and what it cost."""
    cpu_h = sum(r["wall_s"] for r in runs) / 3600
    return (
        f"Protocol: per mixer and K the learning rate is the best of {list(state.LRS)} on seed 0, then "
        f"{len(state.SEEDS)} seeds run at it; every run trains {state.STEPS} steps of {state.BATCH_SIZE} sequences "
        f"(a run that reaches {100 * state.SOLVED:.0f}% stops there), no plateau rule; a seed still rising at the cap "
        f"is run again from scratch with a {state.LONG_STEPS}-step cap, and that run replaces it; 'not flat' = the best "
        f"held-out recall still gained ≥ {100 * state.FLAT_GAIN:.0f} points over the last "
        f"{100 * state.FLAT_WINDOW:.0f}% of the steps. Recall: answer tokens of {state.EVAL_EXAMPLES} fresh "
        f"sequences; chance is {100 * chance_accuracy('mqar', state.VOCAB):.2g}% (1 in "
        f"{round(1 / chance_accuracy('mqar', state.VOCAB))}). {len(runs)} runs so far, {cpu_h:.1f} CPU-hours; each file in "
        "assets/lab/state/ stores the command that reproduces it.")


# ------------------------------------------------------------------------------------------ live run
def live_configs(runs: list, task: str, mixers: list[str], seq_len: int, steps: int, seed: int) -> tuple[dict, dict]:
    """({mixer: learning rate}, {mixer: config}) for a live run: the shipped sweep's LR per mixer (1e-2 where it
    chose none), evaluated every tenth of the run on 128 fresh sequences."""
    if not mixers:
        raise ValueError("choose at least one mixer to train")
    lrs = {m: sweep.chosen_lr(runs, task, m) or 1e-2 for m in mixers}
    return lrs, {m: replace(sweep.lab_config(task, m, int(seq_len), lrs[m], int(seed)), steps=int(steps),
                            eval_every=max(10, int(steps) // 10), eval_examples=128) for m in mixers}


def default_configs(lrs: dict) -> dict:
    """The live default's configs (task, length, mixers, steps, seed 0): its time is read from the runs store."""
    return {m: replace(sweep.lab_config("mqar", m, LIVE_DEFAULT_LEN, lrs[m], 0), steps=LIVE_DEFAULT_STEPS,
                       eval_every=max(10, LIVE_DEFAULT_STEPS // 10), eval_examples=128) for m in LIVE_DEFAULT_MIXERS}


def run_key(cfg) -> tuple:
    return tuple(sorted(asdict(cfg).items()))


def train_live(configs: dict, store: dict, live: dict, on_step: Callable[[float, str], None],
               stopped: Callable[[], bool], limit) -> None:
    """Train each mixer in turn into `live` ({mixer: run}), calling `on_step(fraction done, text)` after steps 1, 2,
    5 and every 10th (the page redraws: the curve appears in the first second); returns between steps once
    `stopped()`. A finished run goes into `store` (shared, at most MAX_LIVE_RUNS, the oldest dropped) and the same
    config later comes from there. `limit.check(step)` raises past the job's time bound."""
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
                on_step((i + rec.step / cfg.steps) / len(configs),
                        f"{MIXER_LABELS[mixer]}: step {rec.step}/{cfg.steps}, {rec.elapsed_s:.1f} s")
            if stopped():
                return
            limit.check(rec.step)
        store[key] = run
        while len(store) > MAX_LIVE_RUNS:  # another session may drop the same oldest entry: then it is gone
            store.pop(next(iter(store), None), None)


def live_result(live: dict, task: str) -> str:
    """'' until a run has a held-out number, then the live run's sentence."""
    done = {m: r for m, r in live.items() if r["evals"]["acc"]}
    return live_sentence({m: (r["evals"]["acc"][-1], r["steps_done"], r["seconds"]) for m, r in done.items()},
                         task, MIXER_LABELS) if done else ""


def live_table(live: dict, lrs: dict) -> list[dict]:
    return [{"mixer": MIXER_LABELS[m], "learning rate": lrs.get(m), "steps trained": r["steps_done"],
             "seconds": round(r.get("seconds", 0.0), 1),
             "held-out accuracy (%)": round(100 * r["evals"]["acc"][-1], 1) if r["evals"]["acc"] else None}
            for m, r in live.items()]


LIVE_NOTE = ("Held-out accuracy: answer tokens only (MQAR: the query positions) of 128 fresh sequences, every "
             "tenth of the run. Lines: training batches, smoothed over 10 steps.")


def live_limits(store: dict, sweep_data) -> str:
    """What a live run can and cannot show: the default's time when it last ran here (measured by the run),
    the shipped runs' numbers at its length, and the capacity sentence (`sweep_data`: lab_sweep.SweepData)."""
    runs, rows, rows_cap = sweep_data.runs, sweep_data.rows, sweep_data.rows_cap
    default_lrs = {m: sweep.chosen_lr(runs, "mqar", m) or 1e-2 for m in LIVE_DEFAULT_MIXERS}
    timed = [store.get(run_key(c)) for c in default_configs(default_lrs).values()]
    took = (f"took {sum(r['seconds'] for r in timed):.0f} s when it last ran on this server ("
            + " + ".join(f"{r['seconds']:.1f} s" for r in timed) + ", measured by the run itself)"
            if all(r and r.get("seconds") for r in timed) else "has not run on this server since it started: its "
            "time appears here once it has (measured by the run itself)")
    ends = [r["mean"] for r in rows if r["task"] == "mqar" and r["seq_len"] == LIVE_DEFAULT_LEN]
    return (
        f"The same models and learning rates as the shipped sweep, for fewer steps. The default ({LIVE_DEFAULT_LEN} "
        f"tokens, {' and '.join(MIXER_LABELS[m] for m in LIVE_DEFAULT_MIXERS)}, {LIVE_DEFAULT_STEPS} steps each) "
        f"{took}. What it can show: these tasks are learned in a jump (held-out accuracy sits at chance, then climbs "
        "within a few dozen steps), and which mixer jumps first. What it cannot show: the capacity effect, where a "
        "fixed state runs out of room"
        + ("" if not ends else f"; at {LIVE_DEFAULT_LEN} tokens the shipped runs of every mixer end at "
           + (f"{100 * min(ends):.0f}%" if round(100 * min(ends)) == round(100 * max(ends))
              else f"{100 * min(ends):.0f}–{100 * max(ends):.0f}%") + " (mean per mixer)")
        + ". " + (capacity_sentence(rows_cap, runs, rows) + " " if rows else "")
        + "A single short run is one noisy sample of the start of that curve, and a shorter run also decays its "
        "learning rate sooner than the shipped runs do.")


# ------------------------------------------------------------------------------------------ residual experiment
def residual_rows(res_files: list[dict]) -> list[dict]:
    return [{"seed": res["seed"], "residual": r["mode"], "steps": r["steps"],
             "validation loss (nats/byte)": round(r["final_val"]["mean"], 4), "train time (s)": r["seconds"]}
            for res in res_files for r in res["runs"]]


def residual_evidence(res_files: list[dict]):
    return measured_here(" ; ".join(sorted({res["command"] for res in res_files})))


def residual_lines(res_files: list[dict]) -> list[str]:
    return [f"Seed {res['seed']}: " + "; ".join(
        f"standard residuals needed **{m['ratio']:.2f}x** the steps to match {mode} AttnRes" if m["reached"]
        else f"{mode} AttnRes: {m['note']}" for mode, m in res["standard_steps_to_match"].items())
        for res in res_files]


def residual_caption(res_files: list[dict]) -> str:
    res = res_files[-1]
    return (f"Shipped result (not live). `lite` preset, {res['steps']} steps of {res['batch']} x {res['seq_len']} "
            f"bytes (k3lite.experiments.lm_train's data); made by `{res['command']}`. The AttnRes paper (arXiv 2603.15031) "
            "reports ~1.25x compute-equivalent at scale; a few hundred CPU steps are noisy.")


# ------------------------------------------------------------------------------------------ what the page assumes
GAP_NAME = f"Recall gap, softmax attention minus the best recurrent mixer at K = {HEADLINE_HEAD_DIM}"


def lab_assumptions() -> tuple[list[Assumption], list[tuple[str, str]]]:
    """(assumptions, also) for the assumptions block, whose headline is lab_state_aggregate.ceiling_gap."""
    return [Assumption("steps_scale", "training steps (x each run's step cap)", 1.0,
                       f"{state.STEPS:,} steps of {state.BATCH_SIZE} sequences, {state.LONG_STEPS:,} for a seed still "
                       "rising; read off each run's stored evals (past its end a run keeps its final number)",
                       unit="x")], [
        ("seeds", f"{len(state.SEEDS)} per cell (the init ablation: the seeds both inits have)"),
        ("learning rate", f"per mixer and K the best of {list(state.LRS)} on seed 0, then used for every seed"),
        ("initialisation", "the lab's (write strength and decays started near keeping everything); the ablation "
                           "shows fla's defaults"),
        ("model", f"2 layers x {state.N_HEADS} heads, no FFN, d = {state.N_HEADS} x K"),
        ("task", f"MQAR, T = {state.SEQ_LEN} tokens, {state.NUM_PAIRS} pairs, vocabulary {state.VOCAB}; recall on "
                 f"{state.EVAL_EXAMPLES} fresh sequences"),
        ("state precision", "fp32, as the lab trains and as KDACache keeps the state")]
