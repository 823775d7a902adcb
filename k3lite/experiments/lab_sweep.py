"""The lab's shipped experiment: recall accuracy vs sequence length, per mixer, several seeds (Zoology-style).

Protocol (Zoology, arXiv 2312.04927; Kimi Linear report, arXiv 2510.26692, synthetic tasks):
  * tasks at the difficulty where the mechanisms differ: MQAR with keys and values disjoint and the number of
    pairs growing with the length (num_pairs = T / 4, up to 64 pairs against a 32-dim head state), and
    Palindrome (the whole first half, T / 2 tokens, must sit in the state);
  * per (task, mixer) the learning rate is picked from `LRS` at one length (`LR_SEQ_LEN`, seed 0) by final
    held-out accuracy, then used at every length and seed;
  * every run trains to a plateau with one stopping rule (`stop_reason`): held-out accuracy >= `SOLVED`
    ("solved"), or no gain of `MIN_GAIN` in the best held-out accuracy over the last `PATIENCE` steps once
    `MIN_STEPS` are done and the run has left chance (best >= `ESCAPE_ACC`) ("plateau"), or `MAX_STEPS`
    ("max_steps": said on the page as not plateaued);
  * `SEEDS` seeds per (task, mixer, length);
  * the longer cap: every run that MAX_STEPS stopped (still gaining, or still at chance) is run again from scratch
    with a `LONG_STEPS` cap, in `assets/lab/long/` (`python -m k3lite.experiments.lab_sweep long --workers 2`); the table
    shows that rerun in its place (unless it trained fewer steps than the capped run), and the page shows what
    the longer cap changed at each task's longest length;
  * the learning-rate check: at each task's longest length, a mixer with a seed still at chance after its rerun
    gets every seed again one LR lower (`lr_check_jobs`, run by the same `long` command, stored with the reruns).

Each finished run is one JSON file under `assets/lab/` (config, held-out curve, final accuracy, wall time, the
command that reproduces it). The sweep is resumable: a run whose file exists is skipped, so it can run for
hours in the background and the page shows whatever has finished. Several workers can share one sweep (each
claims a run by creating a lock file first).

    python -m k3lite.experiments.lab_sweep all --workers 2          # the whole shipped set (hours on 2 CPU cores)
    python -m k3lite.experiments.lab_sweep long --workers 2         # then the LONG_STEPS reruns of the runs the cap stopped
    python -m k3lite.experiments.lab_sweep run --task mqar --mixer kda --seq-len 128 --lr 0.01 --seed 1   # one run
    python -m k3lite.experiments.lab_sweep table                    # the accuracy-vs-length table of what has finished

This module is the command line and the worker loop. The protocol and one run: `lab_sweep_jobs`; the numbers per
cell: `lab_sweep_aggregate`; the longer cap and the learning-rate check: `lab_sweep_checks`; the sentences and the
table: `lab_sweep_sentences`; the files and claims: `lab_store` (all in `k3lite.experiments`).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from k3lite.experiments.lab_store import RESULTS_DIR, _claim, claims_dir_for, load_runs, run_workers
from k3lite.experiments.lab_sweep_aggregate import aggregate
from k3lite.experiments.lab_sweep_checks import long_jobs, lr_check_jobs
from k3lite.experiments.lab_sweep_jobs import (LONG_DIR, LONG_STEPS, MAX_STEPS, MIXERS, SEQ_LENS, Job, lr_jobs,
                                               main_jobs, run_job, stale)
from k3lite.experiments.lab_sweep_sentences import format_table, order_sentences


# ----------------------------------------------------------------------------------------------- driver
def pending(results_dir: Path, tasks: tuple[str, ...]) -> tuple[list[Job], bool]:
    """Runs still to do, in order (per task: its LR sweep, then its main sweep). The flag says whether some
    main-sweep runs are not listed yet because their task's LR sweep is unfinished."""
    runs = load_runs(results_dir)
    done = {Job(**r["job"]).name for r in runs if not stale(r)}
    todo, waiting = [], False
    for task in tasks:
        todo += [j for j in lr_jobs(task) if j.name not in done]
        main = main_jobs(task, runs)
        if main is None:
            waiting = True
        else:
            todo += [j for j in main if j.name not in done]
    return todo, waiting


def long_pending(results_dir: Path, tasks: tuple[str, ...]) -> tuple[list[Job], bool]:
    """The longer-cap runs still to do: `results_dir` holds them (`LONG_DIR`), its parent the main sweep's runs,
    which say which runs need it. The learning-rate check (`lr_check_jobs`) comes first: it is what a verdict at
    the longest length waits on; then the reruns, longest length first."""
    runs, long_runs = load_runs(Path(results_dir).parent), load_runs(results_dir)
    jobs = lr_check_jobs(runs, long_runs) + long_jobs(runs)
    done = {Job(**r["job"]).name for r in long_runs if not stale(r)}
    return [j for j in jobs if j.task in tasks and j.name not in done], False


def work(results_dir: Path, tasks: tuple[str, ...], claims_dir: Path, quiet: bool = True,
         poll_s: float = 10.0, todo_fn=None) -> int:
    """One worker: claim the next pending run, train it, repeat; wait while only blocked runs remain.
    `todo_fn(results_dir, tasks)` lists what is pending (default: the main sweep's `pending`)."""
    todo_fn = pending if todo_fn is None else todo_fn
    n = 0
    while True:
        todo, waiting = todo_fn(results_dir, tasks)
        job = next((j for j in todo if _claim(j, claims_dir)), None)
        if job is None:
            if not waiting:
                return n
            time.sleep(poll_s)  # another worker is finishing an LR-sweep run this worker needs
            continue
        start = time.perf_counter()
        rec = run_job(job, results_dir, quiet=quiet)
        n += 1
        print(f"{job.name}: acc {rec['final_eval_acc']:.3f} after {rec['steps_done']} steps ({rec['stop_reason']}, "
              f"{time.perf_counter() - start:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m k3lite.experiments.lab_sweep", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("all", help="run every pending run of the shipped set (resumable)")
    a.add_argument("--workers", type=int, default=1)
    a.add_argument("--tasks", default=",".join(SEQ_LENS))
    a.add_argument("--results", default=str(RESULTS_DIR))
    r = sub.add_parser("run", help="one run (its stored command)")
    r.add_argument("--task", required=True, choices=sorted(SEQ_LENS))
    r.add_argument("--mixer", required=True, choices=MIXERS)
    r.add_argument("--seq-len", type=int, required=True)
    r.add_argument("--lr", type=float, required=True)
    r.add_argument("--seed", type=int, required=True)
    r.add_argument("--steps", type=int, default=None, help=f"the step cap (default: the sweep's {MAX_STEPS})")
    r.add_argument("--results", default=str(RESULTS_DIR))
    lg = sub.add_parser("long", help=f"rerun with a {LONG_STEPS}-step cap every run the {MAX_STEPS}-step cap stopped "
                                     "(resumable)")
    lg.add_argument("--workers", type=int, default=1)
    lg.add_argument("--tasks", default=",".join(SEQ_LENS))
    lg.add_argument("--results", default=str(LONG_DIR))
    t = sub.add_parser("table", help="print the accuracy-vs-length table of the finished runs")
    t.add_argument("--results", default=str(RESULTS_DIR))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    results = Path(args.results)
    if args.cmd == "run":
        rec = run_job(Job(args.task, args.mixer, args.seq_len, args.lr, args.seed, args.steps), results, quiet=False)
        print(f"acc {rec['final_eval_acc']:.3f} after {rec['steps_done']} steps ({rec['stop_reason']})")
        return 0
    if args.cmd == "table":
        rows = aggregate(load_runs(results), load_runs(results / "long"))
        print(format_table(rows))
        for task in sorted({r["task"] for r in rows}):
            print(task + ":\n  " + "\n  ".join(order_sentences(rows, task)))
        return 0
    tasks = tuple(x for x in args.tasks.split(",") if x)
    bad = [x for x in tasks if x not in SEQ_LENS]
    if bad or args.workers < 1:
        print(f"error: tasks must be among {sorted(SEQ_LENS)} and --workers >= 1", file=sys.stderr)
        return 2
    claims = claims_dir_for(results)  # `long` writes its own folder (LONG_DIR), so it has its own claims
    todo_fn = long_pending if args.cmd == "long" else pending
    return run_workers(args.workers, work, (results, tasks, claims), {"todo_fn": todo_fn})


if __name__ == "__main__":
    raise SystemExit(main())
