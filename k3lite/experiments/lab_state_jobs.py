"""The state-size sweep's protocol and its runs: the fixed settings (mixers, head dims, learning-rate grid, seeds,
step caps), the memory each mixer keeps per layer (`state_bytes`), one run as a `Job` (its file name, the command
that reproduces it, its `LabConfig`) and `run_job` (train one run and store it). The protocol in words is
`k3lite.experiments.lab_state`'s docstring.
"""
from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from k3lite.analytic.memory import kda_state_bytes, kv_cache_bytes
from k3lite.experiments.lab import LabConfig, train
from k3lite.experiments.lab_store import RESULTS_DIR, save_record

STATE_DIR = RESULTS_DIR / "state"


# ----------------------------------------------------------------------------------------------- protocol
MIXERS: tuple[str, ...] = ("attention", "linear", "mamba2", "deltanet", "gdn", "kda")
RECURRENT: tuple[str, ...] = MIXERS[1:]
ABLATION_MIXERS: tuple[str, ...] = ("mamba2", "deltanet", "gdn", "kda")  # the ones whose init the lab changed
HEAD_DIMS: tuple[int, ...] = (16, 8, 32)  # run in this order: 16 first (where a pilot run saw the state bind)
ABLATION_HEAD_DIM = 16
N_HEADS = 2
SEQ_LEN, NUM_PAIRS, VOCAB = 128, 32, 512
LRS: tuple[float, ...] = (3e-3, 1e-2, 3e-2)
SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
STEPS, BATCH_SIZE, EVAL_EVERY, EVAL_EXAMPLES = 2000, 32, 100, 256
LONG_STEPS = 6000  # a seed still rising at STEPS is run again from scratch with this cap; its number replaces the first
SOLVED = 0.99
FLAT_WINDOW, FLAT_GAIN = 0.25, 0.02  # flat: best held-out accuracy gained < 2 points over the last 25% of steps
BYTES_PER_ELEM = 4  # fp32, as the lab trains and as KDACache keeps the state


def state_bytes(mixer: str, head_dim: int, n_heads: int = N_HEADS, seq_len: int = SEQ_LEN) -> int:
    """Memory one mixer layer keeps to read the next token, fp32: the H x K x K state of a recurrent mixer
    (`k3lite.analytic.memory.kda_state_bytes` without the conv tail), or softmax attention's KV cache at `seq_len`."""
    if mixer == "attention":
        return kv_cache_bytes(seq_len, n_heads, head_dim, bytes_per_elem=BYTES_PER_ELEM)
    if mixer not in RECURRENT:
        raise ValueError(f"mixer must be one of {MIXERS}, got {mixer!r}")
    return kda_state_bytes(n_heads, head_dim, conv_size=0, state_bytes_per_elem=BYTES_PER_ELEM)


@dataclass(frozen=True)
class Job:
    mixer: str
    head_dim: int
    lr: float
    seed: int
    init: str = "lab"
    steps: int = STEPS

    @property
    def name(self) -> str:
        tail = ("" if self.init == "lab" else f"_{self.init}") + ("" if self.steps == STEPS else f"_steps{self.steps}")
        return f"mqar_T{SEQ_LEN}_K{self.head_dim}_{self.mixer}_lr{self.lr:g}_s{self.seed}{tail}"

    def path(self, results_dir: Path = STATE_DIR) -> Path:
        return Path(results_dir) / f"{self.name}.json"

    @property
    def command(self) -> str:
        tail = ("" if self.init == "lab" else f" --init {self.init}") + ("" if self.steps == STEPS else f" --steps {self.steps}")
        return (f"python -m k3lite.experiments.lab_state run --mixer {self.mixer} --head-dim {self.head_dim} --lr {self.lr:g} "
                f"--seed {self.seed}{tail}")

    def config(self) -> LabConfig:
        return LabConfig(task="mqar", mixer=self.mixer, seq_len=SEQ_LEN, vocab_size=VOCAB, num_pairs=NUM_PAIRS,
                         d_model=N_HEADS * self.head_dim, n_heads=N_HEADS, ffn_mult=0, steps=self.steps,
                         batch_size=BATCH_SIZE, lr=self.lr, eval_every=EVAL_EVERY, eval_examples=EVAL_EXAMPLES,
                         seed=self.seed, init=self.init)


def run_job(job: Job, results_dir: Path = STATE_DIR, quiet: bool = True) -> dict:
    """Train one run (job.steps steps, or until solved) and write its JSON atomically. Returns the record."""
    cfg = job.config()

    def on_step(rec):
        if rec.eval_acc is None:
            return True
        if not quiet:
            print(f"  {job.name} step {rec.step} eval acc {rec.eval_acc:.3f} ({rec.elapsed_s:.0f} s)", file=sys.stderr)
        return rec.eval_acc < SOLVED

    result = train(cfg, on_step=on_step)
    record = {
        "job": asdict(job), "command": job.command, "config": result.config,
        "steps_done": result.steps_done, "solved": result.final_eval_acc >= SOLVED,
        "final_eval_acc": result.final_eval_acc, "final_eval_loss": result.final_eval_loss,
        "evals": result.evals, "state_bytes": state_bytes(job.mixer, job.head_dim),
        "n_params": result.n_params, "wall_s": result.wall_s, "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
    save_record(record, job.path(results_dir))
    return record
