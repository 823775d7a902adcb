"""The length sweep's numbers per cell: each (task, mixer, length) at its chosen learning rate, mean and spread
over seeds, with the longer cap's reruns and the learning-rate check's runs standing in where the protocol says
(`aggregate`), and the tests of one run behind a row's counts (`at_chance`, `still_rising`).
"""
from __future__ import annotations

import statistics

from k3lite.experiments.lab_sweep_jobs import (ESCAPE_ACC, LRS, MAX_STEPS, MIN_GAIN, MIXERS, PATIENCE, SEEDS, SEQ_LENS,
                                               Job, chosen_lr, stale)


def at_chance(run: dict) -> bool:
    """A run whose best held-out accuracy never left chance (below ESCAPE_ACC)."""
    return run.get("best_eval_acc", run["final_eval_acc"]) < ESCAPE_ACC


def mean_std(accs: list[float]) -> tuple[float, float]:
    """Mean and population std over seeds (std 0 for one seed)."""
    return statistics.fmean(accs), statistics.pstdev(accs) if len(accs) > 1 else 0.0


def still_rising(run: dict) -> bool:
    """A run the step cap stopped while it was still learning: its best held-out accuracy gained at least
    MIN_GAIN over the last PATIENCE steps (the plateau rule's own test, failed at the cap). Such a number is a
    lower bound, not where the run would level off."""
    if run.get("stop_reason") != "max_steps" or "evals" not in run:
        return False
    steps, accs = run["evals"]["step"], run["evals"]["acc"]
    last = steps[-1]
    earlier = [a for s, a in zip(steps, accs) if s <= last - PATIENCE]
    return bool(earlier) and max(accs) - max(earlier) >= MIN_GAIN


def aggregate(runs: list[dict], long_runs: list[dict] | None = None, lr_checked: bool = True) -> list[dict]:
    """Main-sweep runs (each mixer at its chosen LR) grouped by (task, mixer, seq_len): mean, spread, seeds.

    `long_runs` (the LONG_STEPS reruns, `long_jobs`): where a run has one, the rerun stands in for it -- the
    result of that seed is where it got with the longer cap -- unless the rerun trained fewer steps than the run.
    Without them every run is the MAX_STEPS one. With `lr_checked`, where the learning-rate check ran every seed of
    a cell one rate lower (`lr_check_jobs`) and their mean is higher, those seeds stand in (`lr_checked` in the row).
    Returns rows {task, mixer, seq_len, lr, n, mean, std, min, max, accs, not_plateaued, rising, at_chance,
    extended}; accuracies are held-out fractions; `not_plateaued` counts runs stopped by their step cap, `rising`
    those of them still gaining (`still_rising`), `at_chance` runs whose best held-out accuracy stayed below
    ESCAPE_ACC, `extended` the seeds whose number is the LONG_STEPS rerun, `rerun_shorter` the seeds whose rerun
    stopped on a plateau after fewer steps than the capped run had trained, so the capped run stands (the longer
    trained of the two). A (task, mixer) whose LR is not chosen yet contributes nothing.
    """
    longer = {}
    for r in long_runs or []:
        j = Job(**r["job"])
        longer[Job(j.task, j.mixer, j.seq_len, j.lr, j.seed)] = r
    rows = []
    tasks = sorted({r["job"]["task"] for r in runs})
    for task in tasks:
        for mixer in MIXERS:
            lr = chosen_lr(runs, task, mixer)
            if lr is None:
                continue
            for T in SEQ_LENS.get(task, ()):
                sel = [r for r in runs if r["job"]["task"] == task and r["job"]["mixer"] == mixer
                       and r["job"]["seq_len"] == T and r["job"]["lr"] == lr and r["job"]["seed"] in SEEDS
                       and Job(**r["job"]).steps is None]  # a stray run with another cap is not a seed
                if not sel:
                    continue
                reruns = [longer.get(Job(**r["job"])) for r in sel]
                # a rerun of the lab's earlier KDA copy never stands in for a run of the library's layer (the run
                # was redone with the new layer and the cap no longer stopped it, so no new rerun was made)
                reruns = [None if x is not None and stale(x) and not stale(r) else x for r, x in zip(sel, reruns)]
                # the rerun stands in unless it trained fewer steps: its own schedule anneals slower, and a plateau
                # called at a still-high learning rate can stop it below where the annealed capped run ended
                use = [lr is not None and lr.get("steps_done", 0) >= r.get("steps_done", MAX_STEPS)
                       for r, lr in zip(sel, reruns)]
                n_ext, n_kept = sum(use), sum(lr is not None for lr in reruns) - sum(use)
                sel = [lr if u else r for r, lr, u in zip(sel, reruns, use)]
                row_lr = lr
                lower = _lower_lr_seeds(long_runs or [], task, mixer, T, lr) if lr_checked else []
                if lower and statistics.fmean(r["final_eval_acc"] for r in lower) > \
                        statistics.fmean(r["final_eval_acc"] for r in sel):
                    # the learning-rate check ran every seed one LR lower at this length and did better: a rate
                    # chosen at another length is not this length's rate, so the better-trained seeds stand
                    sel, row_lr = lower, lower[0]["job"]["lr"]
                accs = [r["final_eval_acc"] for r in sorted(sel, key=lambda r: r["job"]["seed"])]
                rows.append({"task": task, "mixer": mixer, "seq_len": T, "lr": row_lr, "n": len(accs),
                             "lr_checked": row_lr != lr, "stale": sum(map(stale, sel)),
                             **dict(zip(("mean", "std"), mean_std(accs))),
                             "min": min(accs), "max": max(accs), "accs": accs,
                             "not_plateaued": sum(r["stop_reason"] == "max_steps" for r in sel),
                             "rising": sum(still_rising(r) for r in sel),
                             "at_chance": sum(map(at_chance, sel)),
                             "extended": n_ext, "rerun_shorter": n_kept})
    return rows


def _lower_lr_seeds(long_runs: list[dict], task: str, mixer: str, seq_len: int, lr: float) -> list[dict]:
    """The learning-rate check's runs (`lr_check_jobs`) of one cell at the next LR below `lr`, if every seed ran."""
    lower = [x for x in LRS if x < lr]
    if not lower:
        return []
    sel = [r for r in long_runs if r["job"]["task"] == task and r["job"]["mixer"] == mixer
           and r["job"]["seq_len"] == seq_len and r["job"]["lr"] == max(lower) and r["job"]["seed"] in SEEDS]
    return sel if {r["job"]["seed"] for r in sel} == set(SEEDS) else []


def stale_rows(rows: list[dict]) -> list[dict]:
    """Rows of `aggregate` with runs of the lab's earlier KDA copy (`stale`)."""
    return [r for r in rows if r.get("stale")]
