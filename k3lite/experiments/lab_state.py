"""The lab's headline experiment: recall vs the size of the mixer's memory, at one length (Zoology-style).

Zoology (arXiv 2312.04927) shows the axis the length sweep cannot: at a fixed task, a recurrent mixer's recall
falls below softmax attention's once its fixed-size state is too small for the pairs it must hold, and the
update rule decides how much of that state is usable. Here:

  * one task: MQAR, T = `SEQ_LEN` tokens with `NUM_PAIRS` key-value pairs (keys and values disjoint);
  * the state is set by the head dim K (`HEAD_DIMS`, 2 heads): a recurrent mixer keeps H x K x K numbers per layer
    (`state_bytes`), whatever T; softmax attention keeps its KV cache, 2 x T x H x K numbers (the ceiling);
  * mixers: softmax attention, linear attention, Mamba-2, DeltaNet, Gated DeltaNet, KDA (the library's layer in
    K3's released form, `k3lite.experiments.lab_mixers.LabKDA`);
  * per (mixer, K) the learning rate is picked from `LRS` by seed 0's final held-out accuracy (ties within 0.5
    points go to the lower loss), then `SEEDS` seeds run at it;
  * every run trains exactly `STEPS` steps (no plateau stop; a run that solves the task, held-out accuracy >=
    `SOLVED`, stops there): the stored held-out curve shows whether it was flat (`flat`);
  * the init ablation: at `ABLATION_HEAD_DIM`, the mixers whose initialisation the lab changed run again with the
    reference implementation's defaults (`LabConfig.init = "reference"`), at the same learning rate.

Each finished run is one JSON file under `assets/lab/state/` with the command that reproduces it; the sweep is
resumable and several workers share it (a run is claimed by creating a lock file first).

    python -m k3lite.experiments.lab_state all --workers 2        # everything pending, in the order above (hours on 2 cores)
    python -m k3lite.experiments.lab_state run --mixer kda --head-dim 16 --lr 0.01 --seed 0
    python -m k3lite.experiments.lab_state table                  # mean, spread and n per cell of what has finished

This module is the command line and the worker loop. The protocol and one run: `lab_state_jobs`; the numbers per
cell: `lab_state_aggregate`; the sentences and the table: `lab_state_sentences`; the files and claims: `lab_store`
(all in `k3lite.experiments`).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from k3lite.experiments.lab_mixers import INITS
from k3lite.experiments.lab_state_aggregate import _runs_of, ablation_rows, aggregate, chosen_lr, flat
from k3lite.experiments.lab_state_jobs import (ABLATION_HEAD_DIM, ABLATION_MIXERS, HEAD_DIMS, LONG_STEPS, LRS, MIXERS,
                                               SEEDS, STATE_DIR, STEPS, Job, run_job)
from k3lite.experiments.lab_state_sentences import (ablation_sentence, ceiling_sentence, format_table, report_sentence,
                                                    rule_sentence)
from k3lite.experiments.lab_store import _claim, claims_dir_for, load_runs, run_workers


def pending(results_dir: Path) -> tuple[list[Job], bool]:
    """Runs still to do, in order: per head dim (HEAD_DIMS order) every mixer's LR grid at seed 0, then the
    seeds round-robin across the mixers whose LR is chosen; the init ablation after the first two head dims. The flag: some runs wait on a grid."""
    runs = load_runs(results_dir)
    done = {Job(**r["job"]).name for r in runs}
    todo, waiting = [], False

    def cell(K: int) -> None:
        nonlocal waiting
        for mixer in MIXERS:
            todo.extend(j for j in (Job(mixer, K, lr, 0) for lr in LRS) if j.name not in done)
        chosen = {mixer: chosen_lr(runs, mixer, K) for mixer in MIXERS}
        waiting = waiting or None in chosen.values()
        for s in SEEDS:  # seed by seed across mixers: a sweep cut short still has every mixer at equal n
            todo.extend(j for j in (Job(m, K, lr, s) for m, lr in chosen.items() if lr is not None)
                        if j.name not in done)

    for i, K in enumerate(HEAD_DIMS):
        cell(K)
        if i == 1:  # the ablation, once the two cheaper head dims are under way
            for mixer in ABLATION_MIXERS:
                lr = chosen_lr(runs, mixer, ABLATION_HEAD_DIM)
                if lr is not None:
                    todo.extend(j for j in (Job(mixer, ABLATION_HEAD_DIM, lr, s, "reference") for s in SEEDS[:3])
                                if j.name not in done)
    for K in HEAD_DIMS:  # last: every seed the STEPS cap cut short, again with LONG_STEPS (HEAD_DIMS order)
        for mixer in MIXERS:
            lr = chosen_lr(runs, mixer, K)
            rising = [r for r in _runs_of(runs, mixer, K) if lr is not None and r["job"]["lr"] == lr
                      and r["job"]["seed"] in SEEDS and not flat(r)]
            todo.extend(j for j in (Job(mixer, K, lr, r["job"]["seed"], steps=LONG_STEPS) for r in rising)
                        if j.name not in done)
    return todo, waiting


def work(results_dir: Path, claims_dir: Path, poll_s: float = 10.0) -> int:
    """One worker: claim the next pending run, train it, repeat; wait while only blocked runs remain."""
    n = 0
    while True:
        todo, waiting = pending(results_dir)
        job = next((j for j in todo if _claim(j, claims_dir)), None)
        if job is None:
            if not waiting:
                return n
            time.sleep(poll_s)
            continue
        rec = run_job(job, results_dir)
        n += 1
        print(f"{job.name}: acc {rec['final_eval_acc']:.3f} after {rec['steps_done']} steps ({rec['wall_s']:.0f} s)",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m k3lite.experiments.lab_state", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("all", help="run every pending run (resumable; several workers share one sweep)")
    a.add_argument("--workers", type=int, default=1)
    a.add_argument("--results", default=str(STATE_DIR))
    r = sub.add_parser("run", help="one run (its stored command)")
    r.add_argument("--mixer", required=True, choices=MIXERS)
    r.add_argument("--head-dim", type=int, required=True)
    r.add_argument("--lr", type=float, required=True)
    r.add_argument("--seed", type=int, required=True)
    r.add_argument("--init", default="lab", choices=INITS)
    r.add_argument("--steps", type=int, default=STEPS, help=f"step cap (the longer reruns: {LONG_STEPS})")
    r.add_argument("--results", default=str(STATE_DIR))
    t = sub.add_parser("table", help="print mean, spread and n per (mixer, head dim) of the finished runs")
    t.add_argument("--results", default=str(STATE_DIR))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    results = Path(args.results)
    if args.cmd == "run":
        if args.steps < 1:
            print("error: --steps must be >= 1", file=sys.stderr)
            return 2
        rec = run_job(Job(args.mixer, args.head_dim, args.lr, args.seed, args.init, args.steps), results, quiet=False)
        print(f"acc {rec['final_eval_acc']:.3f} after {rec['steps_done']} steps")
        return 0
    if args.cmd == "table":
        runs = load_runs(results)
        rows = aggregate(runs)
        print(format_table(rows))
        for text in (ceiling_sentence(rows), rule_sentence(rows), report_sentence(rows),
                     ablation_sentence(ablation_rows(runs))):
            if text:
                print(text)
        return 0
    if args.workers < 1:
        print("error: --workers must be >= 1", file=sys.stderr)
        return 2
    claims = claims_dir_for(results, "state")
    return run_workers(args.workers, work, (results, claims))


if __name__ == "__main__":
    raise SystemExit(main())
