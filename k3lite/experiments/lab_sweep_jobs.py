"""The length sweep's protocol and its runs: the fixed settings (mixers, lengths, learning-rate grid, seeds, model
size, stopping rule), one run as a `Job` (its file name and the command that reproduces it), the stopping rule
(`Stopper`), `run_job` (train one run and store it), the learning rate the grid chose per (task, mixer)
(`chosen_lr`), and the runs the main sweep asks for (`lr_jobs`, `main_jobs`). The protocol in words is
`k3lite.experiments.lab_sweep`'s docstring; the longer cap's and the learning-rate check's runs are in
`k3lite.experiments.lab_sweep_checks`.
"""
from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from k3lite.experiments.lab import LabConfig, train
from k3lite.experiments.lab_store import RESULTS_DIR, ROOT, save_record

LONG_DIR = RESULTS_DIR / "long"  # the LONG_STEPS reruns of the runs MAX_STEPS stopped (`long_jobs`)


# ----------------------------------------------------------------------------------------------- protocol
# DeltaNet (the delta rule without decay) is the control that separates the two ideas KDA adds to linear attention
MIXERS: tuple[str, ...] = ("linear", "mamba2", "deltanet", "gdn", "kda", "attention")  # attention: the ceiling
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


# ----------------------------------------------------------------------------------------------- the runs
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
