"""The lab: train tiny 2-layer models on recall tasks, live. Shipped assets/lab_*.json: made by the CLI with
the command stored in each file's "command" field (also in k3lite/lab.py's docstring)."""
import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import streamlit as st

from k3lite.guards import bounded_threads, deadline, heavy_work
from k3lite.lab import (MIXER_LABELS, MIXERS, RESIDUALS, LabConfig, compare_with_report, iter_train, ranking,
                        summary_rows)
from k3lite.tasks import TASKS
from k3lite.viz.lab import accuracy_vs_length_figure, curves_figure
from views.common import push_url, url_state, user_errors

ASSETS = Path(__file__).resolve().parent.parent / "assets"
RESULTS = ASSETS / "lab_results.json"
LENGTHS = [32, 64, 128, 256, 512]

st.title("The lab: recall tasks, trained live")
st.markdown(
    """
A linear-attention layer keeps a **fixed-size state** instead of a growing KV cache, so the question is what it
can still *recall*. The Kimi Linear tech report ([arXiv 2510.26692](https://arxiv.org/abs/2510.26692)) probes this
with tiny **2-layer, 2-head** models on synthetic tasks and reports that **KDA solves multi-query associative
recall (MQAR) and Palindrome at longer sequences than Gated DeltaNet, which beats a Mamba-2-style model**.
Here you train those models yourself, on this server's CPU. Every model is the same 2-layer stack; only the
mixer changes (same projections, short conv and output gate; the kernels are the ones on the KDA page). The
**hybrid** is the 2-layer reading of Kimi Linear's 3:1 pattern: KDA below, global softmax attention on top
(Kimi Linear always makes the last layer global).
**MQAR** ([Zoology](https://arxiv.org/abs/2312.04927)): key-value pairs, then the keys again — answer with the value.
**Palindrome**: a random block, then output it reversed. **Stack**: push/pop stream — at each pop, output the top.
"""
)

# ------------------------------------------------------------------------------------------- controls
url_state("lab_task", "mqar", choices=TASKS)
url_state("lab_seq_len", 64, choices=LENGTHS)
url_state("lab_mixers", ["linear", "mamba2", "gdn", "kda"], choices=MIXERS)
url_state("lab_steps", 150, lo=10, hi=1000)
url_state("lab_residual", "standard", choices=RESIDUALS)
url_state("lab_seed", 0, lo=0, hi=9999)

c1, c2, c3 = st.columns(3)
task = c1.selectbox("task", TASKS, key="lab_task")
seq_len = c2.select_slider("sequence length (tokens)", LENGTHS, key="lab_seq_len")
steps = c3.slider(f"training steps (batches of {LabConfig().batch_size} sequences)", 10, 1000, step=10,
                  key="lab_steps")
mixers = st.multiselect("mixers to compare", MIXERS, key="lab_mixers", format_func=lambda m: MIXER_LABELS[m])
c4, c5 = st.columns(2)
residual = c4.selectbox("residual", RESIDUALS, key="lab_residual",
                        help="standard x + f(x), or Attention Residuals (softmax over depth), full or in blocks")
seed = c5.number_input("seed", 0, 9999, key="lab_seed")
push_url("lab_task", "lab_seq_len", "lab_mixers", "lab_steps", "lab_residual", "lab_seed")

with user_errors():
    if not mixers:
        raise ValueError("choose at least one mixer to train")
    configs = {m: LabConfig(task=task, seq_len=int(seq_len), mixer=m, residual=residual, steps=int(steps),
                            seed=int(seed), eval_every=max(10, int(steps) // 10)) for m in mixers}


@st.cache_resource
def finished_runs() -> dict:
    """Completed runs, shared by every session: (config) -> {"curve", "evals", "final_eval_acc", ...}."""
    return {}


def run_key(cfg: LabConfig) -> tuple:
    return tuple(sorted(asdict(cfg).items()))


def stop() -> None:
    st.session_state["lab_stop"] = True


b1, b2, _ = st.columns([1, 1, 4])
train_clicked = b1.button("Train", type="primary", key="lab_train")
b2.button("Stop", key="lab_stop_button", on_click=stop)
progress = st.empty()
chart_acc, chart_loss = st.columns(2)
slot_acc, slot_loss = chart_acc.empty(), chart_loss.empty()


def draw(runs: dict) -> None:
    n = st.session_state["lab_draws"] = st.session_state.get("lab_draws", 0) + 1  # fresh keys per redraw
    slot_acc.plotly_chart(curves_figure(runs, "acc", int(steps)), key=f"lab_acc_{n}")
    slot_loss.plotly_chart(curves_figure(runs, "loss", int(steps)), key=f"lab_loss_{n}")


store = finished_runs()
live = st.session_state.setdefault("lab_live", {})  # what the current view shows (partial runs too)


def train_live(configs: dict) -> None:
    """Train each mixer in turn, redrawing every 10 steps; stops between steps when Stop was pressed."""
    limit = deadline(what="training")  # K3LITE_JOB_LIMIT_S (default 300 s): TimeLimit -> st.error
    for i, (mixer, cfg) in enumerate(configs.items()):
        key = run_key(cfg)
        if key in store:  # cached: same config, seed and steps -> same numbers
            live[mixer] = store[key]
            continue
        run = {"curve": {"step": [], "loss": [], "acc": []}, "evals": {"step": [], "loss": [], "acc": []},
               "steps_done": 0, "final_eval_acc": None}
        live[mixer] = run
        for rec in iter_train(cfg):
            for name, value in (("step", rec.step), ("loss", rec.loss), ("acc", rec.acc)):
                run["curve"][name].append(value)
            if rec.eval_acc is not None:
                for name, value in (("step", rec.step), ("loss", rec.eval_loss), ("acc", rec.eval_acc)):
                    run["evals"][name].append(value)
            run["steps_done"] = rec.step
            if rec.step % 10 == 0 or rec.step == cfg.steps:
                progress.progress((i + rec.step / cfg.steps) / len(configs),
                                  text=f"{MIXER_LABELS[mixer]}: step {rec.step}/{cfg.steps}, {rec.elapsed_s:.0f} s")
                draw(live)
            if st.session_state.get("lab_stop"):
                return
            limit.check(rec.step)
        run["final_eval_acc"] = run["evals"]["acc"][-1]
        store[key] = run


if train_clicked:
    st.session_state["lab_stop"] = False
    live.clear()
    bounded_threads()
    with user_errors(), heavy_work("lab training"):
        train_live(configs)
    progress.progress(1.0, text="stopped" if st.session_state.get("lab_stop") else "done")

if live:
    draw(live)
    rows = [{"mixer": MIXER_LABELS[m], "steps trained": r["steps_done"],
             "held-out accuracy (%)": None if not r["evals"]["acc"] else round(100 * r["evals"]["acc"][-1], 1)}
            for m, r in live.items()]
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    st.caption("Held-out accuracy: argmax on the answer tokens only (MQAR: the query positions) of 128 fresh "
               "sequences, measured every tenth of the run. Lines: training batches, smoothed over 10 steps.")
else:
    st.info("Press **Train**: each mixer trains in turn, the charts update every 10 steps, and the same settings "
            "again come from the cache. The default costs about 0.15 s of one idle core per step (measured as CPU "
            "time of the CLI), so about 1.5 min for 4 mixers x 150 steps; longer on a busy server.")

# --------------------------------------------------------------------------------------- shipped table
st.subheader("Precomputed: who wins as sequences get longer")


@st.cache_data
def shipped(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


data = shipped(RESULTS)
if not data:
    st.warning("assets/lab_results.json is missing: run the command in k3lite/lab.py's docstring to make it.")
else:
    rows = summary_rows(data["runs"])
    table = [{"task": r["task"], "length (tokens)": r["seq_len"],
              **{f"{MIXER_LABELS[m]} acc. (%)": round(100 * a, 1) for m, a in r["acc"].items()},
              "our ranking": " > ".join(ranking(r["acc"])),
              "vs report (KDA ≥ GDN ≥ Mamba-2)": compare_with_report(r["acc"])}
             for r in rows]
    st.dataframe(pd.DataFrame(table), hide_index=True)
    for t in sorted({r["task"] for r in rows}):
        st.plotly_chart(accuracy_vs_length_figure(rows, t), key=f"lab_shipped_{t}")
    cfg0 = data["runs"][0]["config"]
    st.caption(
        f"Held-out accuracy (%) on answer tokens after {cfg0['steps']} steps of batch {cfg0['batch_size']}, "
        f"d_model {cfg0['d_model']}, {cfg0['n_layers']} layers x {cfg0['n_heads']} heads, mean over seeds; made "
        f"by `{data['command']}` (torch {data['torch']}). Report's direction (who should win, not its numbers): "
        "KDA ≥ GDN ≥ Mamba-2-style on MQAR and Palindrome (Kimi Linear tech report, arXiv 2510.26692)."
    )

res_files = [shipped(p) for p in sorted(ASSETS.glob("lab_attnres*.json"))]
if res_files:
    st.subheader("Residual experiment: the lite LM with standard vs Attention Residuals")
    st.dataframe(pd.DataFrame([{"seed": res["seed"], "residual": r["mode"], "steps": r["steps"],
                                "validation loss (nats/byte)": round(r["final_val"]["mean"], 4),
                                "train time (s)": r["seconds"]} for res in res_files for r in res["runs"]]),
                 hide_index=True)
    for res in res_files:
        st.write(f"Seed {res['seed']}: " + "; ".join(
            f"standard residuals needed **{m['ratio']:.2f}x** the steps to match {mode} AttnRes" if m["reached"]
            else f"{mode} AttnRes: {m['note']}" for mode, m in res["standard_steps_to_match"].items()))
    st.caption(f"`lite` preset, {res['steps']} steps of {res['batch']} x {res['seq_len']} bytes (stdlib source + "
               f"synthetic lines, k3lite.lm_train's data); made by `{res['command']}`. The AttnRes paper "
               "(arXiv 2603.15031) reports ~1.25x compute-equivalent at scale; a few hundred CPU steps are noisy.")

st.markdown(
    """
**What to notice.** The report's claim is about what each mixer can *solve* with enough training as sequences
grow: Mamba-2-style decay can only add to and fade its state, the **delta rule** (GDN, KDA) *overwrites* the value
stored under a key, and KDA's **per-channel** decay can keep some channels for long-range facts while others
forget fast. Our shipped table is a *tiny-budget race* (150 steps, one seed), and there plain linear attention
wins and GDN comes last — not the report's order. Linear attention has no forgetting to learn; the gated
mixers start from the usual random decay init (fla's), where a head can lose most of its state within a few
tokens, and must first learn to keep it — KDA has 64 decay rates per head to draw from, GDN one. Train longer
(the steps slider) or change the seed to see which differences survive; softmax attention is the ceiling.
"""
)
