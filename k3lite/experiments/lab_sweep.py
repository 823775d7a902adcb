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
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from k3lite.experiments.lab import LabConfig, train

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "assets" / "lab"
LONG_DIR = RESULTS_DIR / "long"  # the LONG_STEPS reruns of the runs MAX_STEPS stopped (`long_jobs`)

# ----------------------------------------------------------------------------------------------- protocol
# DeltaNet (the delta rule without decay) is the control that separates the two ideas KDA adds to linear attention
MIXERS: tuple[str, ...] = ("linear", "mamba2", "deltanet", "gdn", "kda", "attention")  # attention: the ceiling
REPORT_ORDER: tuple[str, ...] = ("kda", "gdn", "mamba2")  # Kimi Linear report: KDA >= GDN > Mamba-2
SEQ_LENS: dict[str, tuple[int, ...]] = {"mqar": (32, 64, 128, 256), "palindrome": (16, 32, 64, 128)}
LR_SEQ_LEN: dict[str, int] = {"mqar": 128, "palindrome": 64}
LRS: tuple[float, ...] = (3e-3, 1e-2, 3e-2)
SEEDS: tuple[int, ...] = (0, 1, 2)
VOCAB = 512
# Two heads of dim 32. 64 pairs are more than the 32 orthogonal keys one 32 x 32 head state can hold exactly, yet
# every recurrent mixer recalls 90-96% of them at T = 256 (the shipped runs): at these sizes the state is not what
# limits recall. The state-size sweep (`k3lite.experiments.lab_state`, head dims 8-32 at T = 128) is where it does.
D_MODEL, N_HEADS = 64, 2
BATCH_SIZE = 32
MAX_STEPS, MIN_STEPS, PATIENCE, EVAL_EVERY = 600, 300, 200, 50
SOLVED, MIN_GAIN = 0.99, 0.01
# MQAR and Palindrome learn in a phase transition: held-out accuracy sits at chance for a few hundred steps, then
# jumps (DeltaNet at T=256: 0.4% at step 150, 1.8% at 200, 32% at 250, 85% at 300). A run whose best held-out
# accuracy is still below ESCAPE_ACC is therefore never stopped as a plateau, only by MAX_STEPS.
ESCAPE_ACC = 0.05
# The longer cap: at the longest lengths most runs are still gaining at MAX_STEPS, so every run the cap stopped is
# run again with LONG_STEPS as the cap (same LR, same stopping rule, its own cosine schedule; `long_jobs`).
LONG_STEPS = 1500
EVAL_EXAMPLES = 256


def stale(run: dict) -> bool:
    """A KDA (or hybrid) run trained on the lab's earlier private KDA copy (unbounded decay, low-rank output gate),
    before the lab trained the library's layer in K3's form: its config has no `init`. Rerun by `all` / `long`."""
    return run["job"]["mixer"] in ("kda", "hybrid") and "init" not in run.get("config", {})


def num_pairs(task: str, seq_len: int) -> int:
    """MQAR pairs grow with the length (Zoology's hardest ratio, 4 tokens of sequence per pair)."""
    return seq_len // 4 if task == "mqar" else 8


def lab_config(task: str, mixer: str, seq_len: int, lr: float, seed: int, steps: int | None = None) -> LabConfig:
    """The exact `LabConfig` of one sweep run (`steps` is the cap, default MAX_STEPS; the stopping rule may end it
    earlier)."""
    steps = MAX_STEPS if steps is None else steps
    return LabConfig(task=task, mixer=mixer, seq_len=seq_len, vocab_size=VOCAB, num_pairs=num_pairs(task, seq_len),
                     d_model=D_MODEL, n_heads=N_HEADS, ffn_mult=0, steps=steps, batch_size=BATCH_SIZE, lr=lr,
                     eval_every=EVAL_EVERY, eval_examples=EVAL_EXAMPLES, seed=seed)


@dataclass(frozen=True)
class Job:
    task: str
    mixer: str
    seq_len: int
    lr: float
    seed: int
    steps: int | None = None  # the step cap; None = MAX_STEPS (the reruns in LONG_DIR have LONG_STEPS)

    def __post_init__(self):
        if self.steps == MAX_STEPS:  # one spelling of the main sweep's cap, so a file saying 600 is a main run
            object.__setattr__(self, "steps", None)

    @property
    def name(self) -> str:
        cap = "" if self.steps is None else f"_steps{self.steps}"
        return f"{self.task}_T{self.seq_len}_{self.mixer}_lr{self.lr:g}_s{self.seed}{cap}"

    def path(self, results_dir: Path = RESULTS_DIR) -> Path:
        return Path(results_dir) / f"{self.name}.json"

    @property
    def command(self) -> str:
        cap = "" if self.steps is None else f" --steps {self.steps} --results {LONG_DIR.relative_to(ROOT)}"
        return (f"python -m k3lite.experiments.lab_sweep run --task {self.task} --mixer {self.mixer} --seq-len {self.seq_len} "
                f"--lr {self.lr:g} --seed {self.seed}{cap}")


class Stopper:
    """The stopping rule: solved, or a plateau of the best held-out accuracy, or the step cap."""

    def __init__(self, solved: float = SOLVED, min_gain: float = MIN_GAIN, patience: int = PATIENCE,
                 min_steps: int = MIN_STEPS, escape: float = ESCAPE_ACC):
        self.solved, self.min_gain, self.patience, self.min_steps = solved, min_gain, patience, min_steps
        self.escape = escape
        self.history: list[tuple[int, float]] = []  # (step, held-out accuracy)
        self.reason = "max_steps"

    def should_stop(self, step: int, eval_acc: float | None) -> bool:
        if eval_acc is None:
            return False
        self.history.append((step, eval_acc))
        if eval_acc >= self.solved:
            self.reason = "solved"
            return True
        if step < self.min_steps:
            return False
        best_now = max(a for _, a in self.history)
        if best_now < self.escape:  # still at chance: the phase transition may be ahead
            return False
        earlier = [a for s, a in self.history if s <= step - self.patience]
        if earlier and best_now - max(earlier) < self.min_gain:
            self.reason = "plateau"
            return True
        return False


def run_job(job: Job, results_dir: Path = RESULTS_DIR, quiet: bool = True) -> dict:
    """Train one run with the stopping rule and write its JSON (atomically). Returns the record."""
    cfg = lab_config(job.task, job.mixer, job.seq_len, job.lr, job.seed, job.steps)
    stopper = Stopper()

    def on_step(rec):
        if not quiet and rec.eval_acc is not None:
            print(f"  {job.name} step {rec.step} eval acc {rec.eval_acc:.3f} ({rec.elapsed_s:.0f} s)", file=sys.stderr)
        return not stopper.should_stop(rec.step, rec.eval_acc)

    result = train(cfg, on_step=on_step)
    record = {
        "job": asdict(job),
        "command": job.command,
        "config": result.config,
        "steps_done": result.steps_done,
        "stop_reason": stopper.reason,
        "final_eval_acc": result.final_eval_acc,
        "final_eval_loss": result.final_eval_loss,
        "best_eval_acc": max(result.evals["acc"]),
        "evals": result.evals,
        "n_params": result.n_params,
        "wall_s": result.wall_s,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
    save_record(record, job.path(results_dir))
    return record


def save_record(record: dict, path: Path) -> None:
    """Write one run's JSON atomically (a temp file renamed into place): a reader or a killed worker never sees
    half a file, so a resumed sweep trusts every file it finds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(record, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------- results
def load_runs(results_dir: Path = RESULTS_DIR) -> list[dict]:
    """Every finished run under `results_dir` (unreadable files are skipped, never fatal)."""
    runs = []
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            runs.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return runs


def chosen_lr(runs: list[dict], task: str, mixer: str) -> float | None:
    """The learning rate of the LR sweep (seed 0, LR_SEQ_LEN) with the best final accuracy; None until all of
    `LRS` have finished. Ties (within 0.005) go to the lower final loss."""
    T = LR_SEQ_LEN[task]
    found = {}
    for r in runs:
        j = r["job"]
        if j["task"] == task and j["mixer"] == mixer and j["seq_len"] == T and j["seed"] == 0 and j["lr"] in LRS:
            found[j["lr"]] = r
    if len(found) < len(LRS):
        return None
    return min(found, key=lambda lr: (-round(found[lr]["final_eval_acc"] / 0.005), found[lr]["final_eval_loss"]))


def lr_jobs(task: str) -> list[Job]:
    return [Job(task, m, LR_SEQ_LEN[task], lr, 0) for m in MIXERS for lr in LRS]


def main_jobs(task: str, runs: list[dict]) -> list[Job] | None:
    """Every (mixer, length, seed) run of `task` at its chosen LR; None while some LR is not chosen yet."""
    lrs = {m: chosen_lr(runs, task, m) for m in MIXERS}
    if any(lr is None for lr in lrs.values()):
        return None
    return [Job(task, m, T, lrs[m], s) for s in SEEDS for T in SEQ_LENS[task] for m in MIXERS]


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

def long_jobs(runs: list[dict], task: str | None = None) -> list[Job]:
    """The longer cap: every main-sweep run (`runs`, each mixer at its chosen LR) that MAX_STEPS stopped -- still
    gaining, or never having left chance -- run again from scratch with LONG_STEPS as the cap (same LR, same
    stopping rule, its own cosine schedule). Longest lengths first (where the mixers separate), runs that learned
    before runs that never left chance, then by task, mixer and seed. `task` limits it to one task."""
    jobs = []
    for r in runs:
        j = Job(**r["job"])
        if (task is not None and j.task != task) or j.steps is not None or j.seed not in SEEDS \
                or r.get("stop_reason") != "max_steps" or j.lr != chosen_lr(runs, j.task, j.mixer):
            continue
        lens = sorted(SEQ_LENS.get(j.task, (j.seq_len,)), reverse=True)
        rank = lens.index(j.seq_len) if j.seq_len in lens else len(lens)
        chance = at_chance(r)
        key = (rank, chance, list(SEQ_LENS).index(j.task) if j.task in SEQ_LENS else 99,
               MIXERS[::-1].index(j.mixer) if j.mixer in MIXERS else 99, j.seed)
        jobs.append((key, Job(j.task, j.mixer, j.seq_len, j.lr, j.seed, LONG_STEPS)))
    return [j for _, j in sorted(jobs, key=lambda kj: kj[0])]


def long_check(runs: list[dict], long_runs: list[dict], task: str = "mqar") -> tuple[list[dict], str]:
    """What the longer cap changed at the task's longest length: per mixer, the seeds the MAX_STEPS cap stopped
    that have a LONG_STEPS rerun, with their mean at each cap. Returns (rows, sentence); the sentence says how many
    of the capped runs have a rerun so far and, per mixer, the change in its mean over those seeds -- not a ranking
    (each mixer's rerun seeds are the ones its cap stopped, a different subset per mixer: the order at this
    length is `order_sentences` on the aggregate with the reruns in place). "" until a rerun has finished."""
    T = max(SEQ_LENS[task])
    capped = [j for j in long_jobs(runs, task) if j.seq_len == T]
    found: dict[str, list[tuple[dict, dict | None]]] = {}
    for job in capped:
        long_run = next((r for r in long_runs if Job(**r["job"]) == job), None)
        if long_run is not None:
            short = next((r for r in runs if Job(**r["job"]) == Job(task, job.mixer, T, job.lr, job.seed)), None)
            found.setdefault(job.mixer, []).append((long_run, short))
    rows = []
    for mixer in MIXERS:
        if mixer not in found:
            continue
        longs = [lr["final_eval_acc"] for lr, _ in found[mixer]]
        shorts = [sr["final_eval_acc"] for _, sr in found[mixer] if sr is not None]
        rows.append({"mixer": mixer, "lr": found[mixer][0][0]["job"]["lr"], "n": len(longs),
                     "seeds": [lr["job"]["seed"] for lr, _ in found[mixer]],
                     **dict(zip(("long_mean", "long_std"), mean_std(longs))),
                     "short_mean": statistics.fmean(shorts) if len(shorts) == len(longs) else None,
                     "steps": [lr["steps_done"] for lr, _ in found[mixer]],
                     "still_rising": sum(still_rising(lr) for lr, _ in found[mixer]),
                     "at_cap": sum(lr.get("stop_reason") == "max_steps" for lr, _ in found[mixer])})
    if not rows:
        return rows, ""
    done = sum(r["n"] for r in rows)
    changes = "; ".join(f"{short_name(r['mixer'])} {100 * r['short_mean']:.0f}% → {100 * r['long_mean']:.0f}% "
                        f"({seeds_phrase([r['n']])})" for r in rows if r["short_mean"] is not None)
    rising = [f"{short_name(r['mixer'])} ({r['still_rising']} of {r['n']})" for r in rows if r["still_rising"]]
    # a rerun the longer cap stopped that was not still gaining levelled off *at* its cap, not before it
    flat_at_cap = [f"{short_name(r['mixer'])} ({r['at_cap'] - r['still_rising']} of {r['n']})" for r in rows
                   if r["at_cap"] > r["still_rising"]]
    return rows, (f"{done} of the {len(capped)} runs the {MAX_STEPS}-step cap stopped at T = {T} have a "
                  f"{LONG_STEPS}-step rerun{' so far' if done < len(capped) else ''}. Mean over the rerun seeds, "
                  f"{MAX_STEPS} → {LONG_STEPS} steps: {changes}"
                  + (f"; still gaining at the longer cap: {', '.join(rising)}" if rising else "")
                  + (f"; ran all {LONG_STEPS} steps, gaining less than {MIN_GAIN:.0%} accuracy in its last "
                     f"{PATIENCE}: {', '.join(flat_at_cap)}" if flat_at_cap else "")
                  + ("; every rerun levelled off or was solved before its cap." if not rising and not flat_at_cap
                     else "."))


def lr_check_jobs(runs: list[dict], long_runs: list[dict]) -> list[Job]:
    """The learning-rate check: at each task's longest length, a mixer with a seed that never left chance at its
    chosen LR (with its rerun in place) gets every seed again at the next lower LR of `LRS`, with the LONG_STEPS
    cap. A failed start says more about the LR than about the state; this shows whether the mixer learns there
    at a gentler LR. Stored with the reruns (their LR differs from the chosen one, so nothing substitutes them)."""
    rows = aggregate(runs, long_runs, lr_checked=False)
    jobs = []
    for task in SEQ_LENS:
        T = max(SEQ_LENS[task])
        for r in rows:
            lower = [lr for lr in LRS if lr < r["lr"]]
            if r["task"] == task and r["seq_len"] == T and r["at_chance"] and lower:
                jobs += [Job(task, r["mixer"], T, max(lower), s, LONG_STEPS) for s in SEEDS]
    return jobs


def lr_check(runs: list[dict], long_runs: list[dict], task: str) -> tuple[list[dict], str]:
    """The learning-rate check's result at the task's longest length (`lr_check_jobs`): per mixer, its mean at the
    chosen LR (reruns in place) and at the lower LR, with the seeds at chance in each, and the order at that
    length with the lower LR for those mixers. Returns (rows, sentence); "" until a check run has finished."""
    T = max(SEQ_LENS[task])
    final = {r["mixer"]: r for r in aggregate(runs, long_runs, lr_checked=False)
             if r["task"] == task and r["seq_len"] == T}
    by_mixer: dict[str, list[dict]] = {}
    for job in lr_check_jobs(runs, long_runs):
        if job.task != task:
            continue
        rec = next((r for r in long_runs if Job(**r["job"]) == job), None)
        if rec is not None:
            by_mixer.setdefault(job.mixer, []).append(rec)
    rows = []
    for mixer in MIXERS:
        recs = by_mixer.get(mixer)
        if not recs:
            continue
        accs = [r["final_eval_acc"] for r in sorted(recs, key=lambda r: r["job"]["seed"])]
        rows.append({"mixer": mixer, "lr": final[mixer]["lr"], "mean": final[mixer]["mean"],
                     "at_chance": final[mixer]["at_chance"], "n": final[mixer]["n"],
                     "low_lr": recs[0]["job"]["lr"], "low_n": len(accs),
                     **dict(zip(("low_mean", "low_std"), mean_std(accs))),
                     "low_at_chance": sum(map(at_chance, recs)),
                     "low_rising": sum(still_rising(r) for r in recs)})
    if not rows:
        return rows, ""
    parts = "; ".join(f"{short_name(r['mixer'])} {100 * r['mean']:.0f}% at {r['lr']:g} ({r['at_chance']} of {r['n']} "
                      f"seeds at chance) → {100 * r['low_mean']:.0f}% at {r['low_lr']:g} ({r['low_at_chance']} of "
                      f"{r['low_n']} at chance)" for r in rows)
    text = (f"Learning-rate check at T = {T}: the mixers with a seed that never left chance at their chosen rate, "
            f"every seed again one step lower ({LONG_STEPS}-step cap): {parts}.")
    if all(r["low_n"] == len(SEEDS) for r in rows):
        low = {r["mixer"]: (r["low_mean"], r["low_std"]) for r in rows}
        order = sorted(((m, *low.get(m, (f["mean"], f["std"]))) for m, f in final.items()),
                       key=lambda x: (-x[1], MIXERS.index(x[0])))
        text += (" With the lower rate for those mixers the order at this length is "
                 + " > ".join(f"{short_name(m)} {100 * a:.0f}%" for m, a, _ in order)
                 + f" — {report_verdict(order)}.")
    return rows, text


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


def order_at(rows: list[dict], task: str, seq_len: int, min_seeds: int = 1) -> list[tuple[str, float, float]]:
    """(mixer, mean, std) at one (task, length), best first, over mixers with at least `min_seeds` seeds."""
    sel = [r for r in rows if r["task"] == task and r["seq_len"] == seq_len and r["n"] >= min_seeds]
    return [(r["mixer"], r["mean"], r["std"]) for r in sorted(sel, key=lambda r: (-r["mean"], MIXERS.index(r["mixer"])))]


def within_spread(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Two (mean, std) cells tie: their means differ by at most the larger seed spread, or by 0.02."""
    return abs(a[0] - b[0]) <= max(0.02, a[1], b[1])


def ranked_chain(order: list[tuple[str, float, float]]) -> str:
    """(mixer, mean, std) best first as 'KDA 97% ≈ GDN 96% > linear 94%': '>' only beyond seed spread."""
    out = f"{short_name(order[0][0])} {100 * order[0][1]:.0f}%"
    for (_, m0, s0), (mixer, m, sd) in zip(order, order[1:]):
        out += f" {'≈' if within_spread((m0, s0), (m, sd)) else '>'} {short_name(mixer)} {100 * m:.0f}%"
    return out


def report_verdict(order: list[tuple[str, float, float]]) -> str:
    """Does KDA >= GDN > Mamba-2 (the report's direction) hold at this length? Differences within the larger
    of the two seed spreads (std), or within 0.02, count as ties."""
    means = {m: (mean, std) for m, mean, std in order}
    present = [m for m in REPORT_ORDER if m in means]
    if len(present) < 2:
        return "not comparable yet"
    reversed_pairs, ties = [], []
    for i, a in enumerate(present):
        for b in present[i + 1:]:
            if within_spread(means[a], means[b]):
                ties.append(f"{short_name(a)} ≈ {short_name(b)}")
            elif means[b][0] > means[a][0]:
                reversed_pairs.append(f"{short_name(b)} > {short_name(a)}")
    if reversed_pairs:
        return "differs from the report (" + ", ".join(reversed_pairs) + ")"
    if ties:
        return "matches up to ties within seed spread (" + ", ".join(ties) + ")"
    return "matches the report"


def seeds_phrase(counts: list[int]) -> str:
    """'1 seed', '3 seeds' or '1–3 seeds' for the seed counts behind a set of means."""
    ns = sorted(set(counts))
    return f"{ns[0]} seed{'s' if ns[0] > 1 else ''}" if len(ns) == 1 else f"{ns[0]}–{ns[-1]} seeds"

def short_name(mixer: str) -> str:
    return {"linear": "linear", "mamba2": "Mamba-2", "deltanet": "DeltaNet", "gdn": "GDN", "kda": "KDA",
            "attention": "attention"}.get(mixer, mixer)


def order_sentences(rows: list[dict], task: str) -> list[str]:
    """One sentence per length, computed from the runs: the order, with means, and the verdict vs the report."""
    out = []
    for T in SEQ_LENS.get(task, ()):
        order = order_at(rows, task, T)
        if not order:
            continue
        ranked = ranked_chain(order)
        seeds = seeds_phrase([r["n"] for r in rows if r["task"] == task and r["seq_len"] == T])
        rising = [r for r in rows if r["task"] == task and r["seq_len"] == T and r.get("rising")]
        caveat = ""
        if rising:
            n = sum(r["rising"] for r in rising)
            caveat = (f" Not final: {n} of these runs ({', '.join(short_name(r['mixer']) for r in rising)}) "
                      f"{'was' if n == 1 else 'were'} still gaining when "
                      f"{'its' if n == 1 else 'their'} step cap stopped {'it' if n == 1 else 'them'} (at least "
                      f"{100 * MIN_GAIN:.0f} point over the last {PATIENCE} steps), so "
                      f"{'its mixer' if n == 1 else 'their'} means are lower bounds.")
        out.append(f"T = {T}: {ranked} (mean over {seeds} per mixer) — {report_verdict(order)}.{caveat}")
    return out


# What each idea KDA adds to linear attention buys, one step at a time: (with, without, what changes)
MECHANISM_STEPS: tuple[tuple[str, str, str], ...] = (
    ("deltanet", "linear", "the delta rule"),
    ("gdn", "deltanet", "a scalar decay on top of it"),
    ("kda", "gdn", "per-channel instead of scalar decay"),
)


def mechanism_sentence(rows: list[dict], task: str) -> str:
    """At the longest length where all five mixers have results: what the delta rule, the decay and the
    per-channel decay each change, from the means (differences within max(2 points, seed std) are called ties)."""
    lens = [T for T in SEQ_LENS.get(task, ())
            if {m for m, _, _ in order_at(rows, task, T)} >= {m for pair in MECHANISM_STEPS for m in pair[:2]}]
    if not lens:
        return ""
    T = lens[-1]
    stats = {m: (mean, std) for m, mean, std in order_at(rows, task, T)}
    parts = []
    for a, b, what in MECHANISM_STEPS:
        (ma, sa), (mb, sb) = stats[a], stats[b]
        d = 100 * (ma - mb)
        tie = abs(ma - mb) <= max(0.02, sa, sb)
        parts.append(f"{what} ({short_name(a)} vs {short_name(b)}): {d:+.0f} points ({100 * ma:.0f}% vs {100 * mb:.0f}%"
                     + ("; within seed spread" if tie else "") + ")")
    at_T = [r for r in rows if r["task"] == task and r["seq_len"] == T
            and r["mixer"] in {m for pair in MECHANISM_STEPS for m in pair[:2]}]
    rising, chance = sum(r.get("rising", 0) for r in at_T), sum(r.get("at_chance", 0) for r in at_T)
    notes = []
    if rising:
        notes.append(f"{rising} of these runs {'was' if rising == 1 else 'were'} still gaining at "
                     f"{'its' if rising == 1 else 'their'} step cap, so read these differences as learning speed as "
                     "much as capacity")
    if chance:
        notes.append(f"{chance} never left chance, which pulls {'its' if chance == 1 else 'their'} mixer's mean "
                     "down by a whole run (a failed start at this learning rate, not a full state)")
    caveat = f" ({'; '.join(notes)}.)" if notes else ""
    return f"At T = {T}, " + "; ".join(parts) + "." + caveat

DELTA_MIXERS: tuple[str, ...] = ("deltanet", "gdn", "kda")


def capacity_sentence(rows: list[dict], runs: list[dict], final_rows: list[dict] | None = None,
                      task: str = "mqar") -> str:
    """Whether the shipped runs show a capacity effect (linear attention below the best delta-rule mixer): at the
    longest length with linear and a delta-rule mixer, their means with the MAX_STEPS cap (`rows`: `aggregate`
    without reruns), the median wall time of such a run here, and, once every capped run of the two has its
    LONG_STEPS rerun (`final_rows`: `aggregate` with them), whether the gap survives the longer cap (a gap that
    closes with training was learning speed, not room in the state)."""
    for T in reversed(SEQ_LENS.get(task, ())):
        order = {m: mean for m, mean, _ in order_at(rows, task, T)}
        delta = [m for m in DELTA_MIXERS if m in order]
        if "linear" not in order or not delta:
            continue
        best = max(delta, key=order.get)
        walls = [r["wall_s"] for r in runs if r["job"]["task"] == task and r["job"]["seq_len"] == T
                 and r["job"]["mixer"] in ("linear", best) and "wall_s" in r]
        minutes = statistics.median(walls) / 60 if walls else float("nan")
        n = min(r["n"] for r in rows if r["task"] == task and r["seq_len"] == T and r["mixer"] in ("linear", best))
        text = (f"At T = {T}, with the {MAX_STEPS}-step cap, linear attention reached {100 * order['linear']:.0f}% "
                f"against {short_name(best)} {100 * order[best]:.0f}% (mean over {seeds_phrase([n])}); one "
                f"such run took {minutes:.1f} minutes here (median wall time of those runs).")
        capped = {r["mixer"]: r["not_plateaued"] for r in rows if r["task"] == task and r["seq_len"] == T}
        final = {r["mixer"]: r for r in (final_rows or []) if r["task"] == task and r["seq_len"] == T}
        if all(m in final and capped[m] and final[m].get("extended", 0) + final[m].get("rerun_shorter", 0) == capped[m]
               for m in ("linear", best)):  # every capped run of the two has its rerun (used, or shorter and not)
            lin, bst = final["linear"], final[best]
            closes = bst["mean"] - lin["mean"] <= max(0.02, lin["std"], bst["std"])
            text += (f" With every capped run of the two rerun with a {LONG_STEPS}-step cap they reach "
                     f"{100 * lin['mean']:.0f}% and {100 * bst['mean']:.0f}%: "
                     + ("the gap closes, so at this length it was learning speed, not room in the state; a state "
                        "that runs out of room needs longer sequences (or smaller heads) than this CPU sweep covers."
                        if closes else "the gap stays, so at this length it is room in the state, not only speed."))
        return text
    return ""


def spread_sentence(rows: list[dict], task: str) -> str:
    """How the mixers spread from the shortest to the longest length, from the numbers (one sentence)."""
    lens = [T for T in SEQ_LENS.get(task, ()) if order_at(rows, task, T)]
    if len(lens) < 2:
        return ""
    lo, hi = order_at(rows, task, lens[0]), order_at(rows, task, lens[-1])
    mean_lo, mean_hi = {m: a for m, a, _ in lo}, {m: a for m, a, _ in hi}
    both = [m for m in MIXERS if m in mean_lo and m in mean_hi]
    if not both:
        return ""
    drop = max(both, key=lambda m: mean_lo[m] - mean_hi[m])
    best = hi[0][0]
    return (f"From T = {lens[0]} to T = {lens[-1]} the largest drop is {short_name(drop)}'s "
            f"({100 * mean_lo[drop]:.0f}% → {100 * mean_hi[drop]:.0f}%); at T = {lens[-1]} {short_name(best)} is best "
            f"with {100 * hi[0][1]:.0f}%.")


def format_table(rows: list[dict]) -> str:
    lines = []
    for task in sorted({r["task"] for r in rows}):
        lens = SEQ_LENS[task]
        lines.append(f"{task}: held-out accuracy, mean ± std over seeds (n), LR per mixer")
        lines.append(f"{'mixer':<9}{'lr':>7}  " + "".join(f"{'T=' + str(T):>16}" for T in lens))
        for mixer in MIXERS:
            cells, lr = [], None
            for T in lens:
                r = next((r for r in rows if r["task"] == task and r["mixer"] == mixer and r["seq_len"] == T), None)
                if r is None:
                    cells.append(f"{'-':>16}")
                else:
                    lr = r["lr"]
                    cells.append(f"{100 * r['mean']:>8.1f} ±{100 * r['std']:4.1f} ({r['n']})")
            if lr is not None:
                lines.append(f"{mixer:<9}{lr:>7g}  " + "".join(cells))
        lines.append("")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------- driver
def claims_dir_for(results_dir: Path, kind: str = "lab") -> Path:
    """The claims folder of one results folder, the same for every invocation on this machine: two `... all` or
    `... long` commands started apart share the sweep instead of training the same run twice (a folder per process
    did exactly that: two `long` commands each ran the same hour-long run)."""
    key = hashlib.sha1(str(Path(results_dir).resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"k3lite_{kind}_claims_{key}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _claim(job: Job, claims_dir: Path) -> bool:
    """Claim `job` by creating its lock file (holding this process's pid); False if a live worker holds it. A claim
    whose worker is gone (killed, crashed: its run never finished) is taken over."""
    claims_dir.mkdir(parents=True, exist_ok=True)
    path = claims_dir / f"{job.name}.claim"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        try:
            holder = int(path.read_text() or 0)
        except (OSError, ValueError):
            return False  # being written or removed right now: leave it to its owner
        if holder and _alive(holder):
            return False
        try:  # the owner is gone: move its claim aside (only one taker's rename succeeds), then claim afresh
            os.rename(path, path.with_name(f"{path.name}.stale-{os.getpid()}"))
        except OSError:
            return False
        return _claim(job, claims_dir)
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


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


def run_workers(n: int, target, args: tuple, kwargs: dict | None = None) -> int:
    """Run `target(*args, **kwargs)` in this process (n = 1) or in n worker processes that share one sweep through
    its claim files; the worst exit code."""
    if n == 1:
        target(*args, **(kwargs or {}))
        return 0
    import multiprocessing as mp  # only the multi-worker driver needs it

    procs = [mp.Process(target=target, args=args, kwargs=kwargs or {}) for _ in range(n)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    return max((proc.exitcode or 0) for proc in procs)


if __name__ == "__main__":
    raise SystemExit(main())
