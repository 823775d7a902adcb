"""The state-size sweep's numbers: the learning rate the grid chose per (mixer, head dim) (`chosen_lr`), one row
per cell with mean, spread and seeds, a seed's longer rerun standing in for it (`aggregate`), whether a run had
levelled off (`flat`), and the init ablation's lab-vs-reference rows (`ablation_rows`).
"""
from __future__ import annotations

import statistics

from k3lite.experiments.lab_state_jobs import (ABLATION_HEAD_DIM, ABLATION_MIXERS, FLAT_GAIN, FLAT_WINDOW, HEAD_DIMS,
                                               LONG_STEPS, LRS, MIXERS, SEEDS, STEPS, Job, state_bytes)
from k3lite.experiments.lab_sweep_aggregate import mean_std


def flat(run: dict) -> bool:
    """Solved, or its best held-out accuracy gained less than FLAT_GAIN over the last FLAT_WINDOW of its steps."""
    if run.get("solved"):
        return True
    steps, accs = run["evals"]["step"], run["evals"]["acc"]
    cut = steps[-1] * (1 - FLAT_WINDOW)
    earlier = [a for s, a in zip(steps, accs) if s <= cut]
    return bool(earlier) and max(accs) - max(earlier) < FLAT_GAIN


def _runs_of(runs: list[dict], mixer: str, head_dim: int, init: str = "lab", steps: int = STEPS) -> list[dict]:
    """The runs of one cell at one step cap (the grid and the seeds: STEPS; the longer reruns: LONG_STEPS)."""
    return [r for r in runs if r["job"]["mixer"] == mixer and r["job"]["head_dim"] == head_dim
            and r["job"].get("init", "lab") == init and r["job"].get("steps", STEPS) == steps]


def extended(runs: list[dict], mixer: str, head_dim: int, lr: float) -> dict[int, dict]:
    """seed -> its LONG_STEPS rerun, for the cell's seeds at `lr` that have one."""
    return {r["job"]["seed"]: r for r in _runs_of(runs, mixer, head_dim, steps=LONG_STEPS) if r["job"]["lr"] == lr}


def chosen_lr(runs: list[dict], mixer: str, head_dim: int) -> float | None:
    """The LR of `LRS` with the best final held-out accuracy at seed 0 (ties within 0.5 points: lower loss);
    None until all of them have finished."""
    found = {r["job"]["lr"]: r for r in _runs_of(runs, mixer, head_dim) if r["job"]["seed"] == 0}
    if any(lr not in found for lr in LRS):
        return None
    return min(LRS, key=lambda lr: (-round(found[lr]["final_eval_acc"] / 0.005), found[lr]["final_eval_loss"]))


def aggregate(runs: list[dict], init: str = "lab") -> list[dict]:
    """One row per (mixer, head_dim) whose LR is chosen: state bytes, mean, std, min, max, per-seed accuracies,
    n, how many seeds are their LONG_STEPS rerun (a seed still rising at STEPS is replaced by it), and how many
    runs shown were not flat at the end. Accuracies are held-out fractions."""
    rows = []
    for K in sorted(HEAD_DIMS):
        for mixer in MIXERS:
            lr = chosen_lr(runs, mixer, K)
            if lr is None:
                continue
            longer = extended(runs, mixer, K, lr) if init == "lab" else {}
            sel = sorted((longer.get(r["job"]["seed"], r) for r in _runs_of(runs, mixer, K, init)
                          if r["job"]["lr"] == lr and r["job"]["seed"] in SEEDS), key=lambda r: r["job"]["seed"])
            if not sel:
                continue
            accs = [r["final_eval_acc"] for r in sel]
            rows.append({"mixer": mixer, "head_dim": K, "init": init, "lr": lr, "state_bytes": state_bytes(mixer, K),
                         "n": len(accs), "extended": sum(r["job"].get("steps", STEPS) != STEPS for r in sel),
                         **dict(zip(("mean", "std"), mean_std(accs))), "min": min(accs),
                         "max": max(accs), "accs": accs, "seeds": [r["job"]["seed"] for r in sel],
                         "not_flat": sum(not flat(r) for r in sel),
                         "names": [Job(**r["job"]).name for r in sel],  # the runs behind the row (seed_runs)
                         "wall_s": statistics.median(r["wall_s"] for r in sel),
                         "step_s": statistics.median(r["wall_s"] / max(r["steps_done"], 1) for r in sel)})
    return rows


def ablation_rows(runs: list[dict]) -> list[dict]:
    """The init ablation: per mixer of ABLATION_MIXERS, the reference-init seeds against the lab-init runs of the
    same seeds and learning rate (means over the seeds both have)."""
    out = []
    for mixer in ABLATION_MIXERS:
        ref = {r["job"]["seed"]: r for r in _runs_of(runs, mixer, ABLATION_HEAD_DIM, "reference")}
        if not ref:
            continue
        lr = next(iter(ref.values()))["job"]["lr"]
        lab = {r["job"]["seed"]: r for r in _runs_of(runs, mixer, ABLATION_HEAD_DIM) if r["job"]["lr"] == lr}
        seeds = sorted(set(ref) & set(lab))
        if not seeds:
            continue
        ref_acc, lab_acc = [ref[s]["final_eval_acc"] for s in seeds], [lab[s]["final_eval_acc"] for s in seeds]
        out.append({"mixer": mixer, "lr": lr, "seeds": seeds,
                    **dict(zip(("lab_mean", "lab_std"), mean_std(lab_acc))),
                    **dict(zip(("ref_mean", "ref_std"), mean_std(ref_acc)))})
    return out


HEADLINE_HEAD_DIM = ABLATION_HEAD_DIM  # the head dim the page headlines: where the recurrent state binds (K = 16)


def recall_at(run: dict, step: float) -> float:
    """A run's held-out recall at training step `step`, read off its stored evals (the last eval at or before it;
    past the run's end, its final number: the run had solved the task or reached its cap; 0 before its first)."""
    before = [a for s, a in zip(run["evals"]["step"], run["evals"]["acc"]) if s <= step]
    return before[-1] if before else 0.0


def ceiling_gap(runs: list[dict], steps_scale: float = 1.0, head_dim: int = HEADLINE_HEAD_DIM) -> float:
    """The lab page's headline: points of held-out recall between softmax attention and the best recurrent mixer
    at `head_dim`, over the table's runs (`aggregate`: chosen learning rate, LONG_STEPS reruns in place), each read
    at `steps_scale` x its step cap (STEPS, or LONG_STEPS for a rerun; `recall_at`: a run that solved the task
    sooner keeps its final number). 1 = the table's numbers."""
    by_name = {Job(**r["job"]).name: r for r in runs}
    means = {}
    for row in aggregate(runs):
        if row["head_dim"] == head_dim:
            sel = [by_name[n] for n in row["names"]]
            means[row["mixer"]] = statistics.fmean(recall_at(r, steps_scale * r["job"].get("steps", STEPS)) for r in sel)
    recurrent = [m for m in means if m != "attention"]
    if "attention" not in means or not recurrent:
        raise ValueError(f"no attention and recurrent cells at K = {head_dim} yet")
    return 100 * (means["attention"] - max(means[m] for m in recurrent))
