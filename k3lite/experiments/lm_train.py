"""Language-model training on the lite corpus: the shipped checkpoint and the Attention Residuals experiment.

Both run through `python -m k3lite.experiments.train` (k3lite/experiments/train.py: one CLI, one flag convention):
    python -m k3lite.experiments.train --preset lite --out assets/lite.safetensors          -> `train_lite`
    python -m k3lite.experiments.train --task attnres --steps 150 --json out.json          -> `attnres_experiment`

Reproduce the shipped residual-experiment files (about 12 min each on the shared 2-core machine):
    python -m k3lite.experiments.train --task attnres --steps 150 --batch-size 4 --seq-len 64 --multiples 1.5,2.0 \
        --json assets/lab_attnres.json
    python -m k3lite.experiments.train --task attnres --steps 150 --batch-size 4 --seq-len 64 --seed 1 --multiples 1.5 \
        --json assets/lab_attnres_seed1.json

Corpus (offline on every machine, deterministic):
  * Python standard-library source (docstrings included): every top-level `*.py` of the running
    interpreter's stdlib directory, sorted by name; every 10th file is held out for validation.
  * generated arithmetic lines ("37+58=95") and key-value recall lines ("a=3 q=7 c=1 ? q=7"),
    from a seeded generator (training and validation use different seeds).
Each training sequence is a random window of the stdlib text (70%) or a run of synthetic lines (30%).

The same loop, data and steps then train a dense baseline (k3lite.model.stack.DenseTransformer) with the same
number of *active* parameters as lite (7.2M total, 2.4M active). Both validation losses (nats/byte),
the random-init losses and the loss curves go to assets/lite_train_log.json.
"""
from __future__ import annotations

import hashlib
import json
import random
import sys
import sysconfig
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from k3lite.model.checkpoint import ASSETS, load_checkpoint, save_checkpoint
from k3lite.model.presets import get_preset
from k3lite.model.stack import K3Model, loss_fn, n_params
from k3lite.model.nn import warmup_cosine_lr
from k3lite.analytic.params import count_params, dense_baseline_for

SYNTH_FRACTION = 0.3
VAL_EVERY_NTH_FILE = 10
MAX_CPU_PARAMS = 50e6  # larger presets do not train on a CPU in reasonable time


@dataclass(frozen=True)
class LMTrainConfig:
    """One language-model training run (same fields for the checkpoint, its dense baseline, the AttnRes runs)."""

    steps: int = 200
    batch_size: int = 8
    seq_len: int = 128
    lr: float = 3e-3
    warmup: int = 20  # linear warmup steps, then cosine decay to 10% of lr
    seed: int = 0
    eval_every: int = 50
    max_minutes: float = 25.0  # safety stop per model (0 = none)

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "seq_len", "eval_every"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be a positive integer, got {value!r}")
        if self.warmup < 0 or not self.lr > 0 or self.max_minutes < 0:
            raise ValueError(f"--warmup and --max-minutes must be >= 0 and --lr > 0, got {self.warmup}, "
                             f"{self.max_minutes}, {self.lr}")


# ------------------------------------------------------------------------------------------- corpus
def stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.glob("*.py") if p.is_file())


def stdlib_text(split: str, max_bytes: int = 4_000_000) -> bytes:
    """Concatenated stdlib source for `split` ('train' or 'val'), files separated by a form of header."""
    parts, total = [], 0
    for i, p in enumerate(stdlib_files()):
        held_out = i % VAL_EVERY_NTH_FILE == VAL_EVERY_NTH_FILE - 1
        if held_out != (split == "val"):
            continue
        data = f"# file: {p.name}\n".encode() + p.read_bytes() + b"\n"
        parts.append(data)
        total += len(data)
        if total >= max_bytes:
            break
    return b"".join(parts)


def arithmetic_line(rng: random.Random) -> str:
    a, b = rng.randint(0, 99), rng.randint(0, 99)
    op = rng.choice("+-*")
    val = a + b if op == "+" else a - b if op == "-" else a * b
    return f"{a}{op}{b}={val}\n"


def recall_line(rng: random.Random, n_pairs: int | None = None) -> str:
    n = n_pairs or rng.randint(2, 6)
    keys = rng.sample("abcdefghijklmnopqrstuvwxyz", n)
    vals = [rng.randint(0, 9) for _ in keys]
    q = rng.randrange(n)
    return " ".join(f"{k}={v}" for k, v in zip(keys, vals)) + f" ? {keys[q]}={vals[q]}\n"


def synthetic_text(rng: random.Random, n_bytes: int) -> bytes:
    out = []
    total = 0
    while total < n_bytes:
        line = arithmetic_line(rng) if rng.random() < 0.5 else recall_line(rng)
        out.append(line)
        total += len(line)
    return "".join(out).encode()


class Corpus:
    """Sampler of (B, T+1) byte windows; `seed` fixes every draw."""

    def __init__(self, split: str, seed: int):
        self.text = torch.tensor(list(stdlib_text(split)), dtype=torch.long)  # (N,)
        self.rng = random.Random(seed + (0 if split == "train" else 10_000))
        self.sha256 = hashlib.sha256(bytes(self.text.tolist()[:1_000_000])).hexdigest()[:16]

    def batch(self, batch_size: int, seq_len: int) -> torch.Tensor:
        rows = []
        for _ in range(batch_size):
            if self.rng.random() < SYNTH_FRACTION:
                data = synthetic_text(self.rng, seq_len + 1)[: seq_len + 1]
                rows.append(torch.tensor(list(data), dtype=torch.long))
            else:
                start = self.rng.randrange(0, len(self.text) - seq_len - 1)
                rows.append(self.text[start : start + seq_len + 1])
        return torch.stack(rows)  # (B, T+1)


def synthetic_batch(seed: int, batch_size: int, seq_len: int) -> torch.Tensor:
    rng = random.Random(seed)
    return torch.stack([torch.tensor(list(synthetic_text(rng, seq_len + 1)[: seq_len + 1])) for _ in range(batch_size)])


def val_batches(seed: int, n_batches: int, batch_size: int, seq_len: int) -> dict[str, list[torch.Tensor]]:
    """Fixed validation sets: held-out stdlib files, and synthetic lines from a separate seed."""
    val = Corpus("val", seed)
    stdlib = []
    for _ in range(n_batches):
        starts = [val.rng.randrange(0, len(val.text) - seq_len - 1) for _ in range(batch_size)]
        stdlib.append(torch.stack([val.text[s : s + seq_len + 1] for s in starts]))
    synth = [synthetic_batch(seed + 777 + i, batch_size, seq_len) for i in range(max(1, n_batches // 2))]
    return {"stdlib": stdlib, "synthetic": synth}


@torch.no_grad()
def evaluate(model, sets: dict[str, list[torch.Tensor]]) -> dict[str, float]:
    was = model.training
    model.eval()
    out = {}
    for name, batches in sets.items():
        losses = [loss_fn(model(b[:, :-1]).logits, b[:, 1:]).item() for b in batches]
        out[name] = sum(losses) / len(losses)
    out["mean"] = sum(out[n] for n in sets) / len(sets)
    model.train(was)
    return out


# ------------------------------------------------------------------------------------------ training
def progress(step: int, total: int, loss: float, t0: float, label: str) -> None:
    width = 30
    filled = int(width * step / total)
    rate = step / max(time.time() - t0, 1e-9)
    eta = (total - step) / max(rate, 1e-9)
    sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {step}/{total} "
                     f"loss {loss:.3f} nats/byte  {rate:.2f} steps/s  eta {eta / 60:.1f} min ")
    sys.stderr.flush()
    if step == total:
        sys.stderr.write("\n")


def train_one(model, label: str, cfg: LMTrainConfig, sets, is_k3: bool) -> dict:
    """Train `model` in place on the corpus for `cfg.steps` steps; validation losses, curve and timing."""
    torch.manual_seed(cfg.seed)
    data = Corpus("train", cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.1)
    init = evaluate(model, sets)
    print(f"{label}: random-init validation loss {init['mean']:.3f} nats/byte", flush=True)
    curve, evals = [], []
    t0 = time.time()
    model.train()
    step = 0
    for step in range(1, cfg.steps + 1):
        for group in opt.param_groups:
            group["lr"] = warmup_cosine_lr(step - 1, cfg.steps, cfg.lr, cfg.warmup)
        batch = data.batch(cfg.batch_size, cfg.seq_len)
        out = model(batch[:, :-1], update_balance=True) if is_k3 else model(batch[:, :-1])
        loss = loss_fn(out.logits, batch[:, 1:])
        (loss + out.aux_loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        curve.append(round(loss.item(), 4))
        progress(step, cfg.steps, sum(curve[-10:]) / len(curve[-10:]), t0, label)
        if step % cfg.eval_every == 0 and step < cfg.steps:
            evals.append({"step": step, **evaluate(model, sets)})
        if cfg.max_minutes and time.time() - t0 > 60 * cfg.max_minutes:
            sys.stderr.write(f"\n{label}: stopped at step {step} (--max-minutes {cfg.max_minutes})\n")
            break
    final = evaluate(model, sets)
    evals.append({"step": step, **final})
    seconds = time.time() - t0
    print(f"{label}: final validation loss {final['mean']:.3f} nats/byte after {step} steps ({seconds / 60:.1f} min)",
          flush=True)
    return {"init_val": init, "final_val": final, "evals": evals, "train_loss": curve, "steps_done": step,
            "seconds": round(seconds, 1), "tokens_seen": step * cfg.batch_size * cfg.seq_len}


def train_lite(preset: str, out: str | Path, cfg: LMTrainConfig, log: str | Path | None = None,
               n_val_batches: int = 4, baseline: bool = True, command: str = "") -> dict:
    """Train `preset` (and, unless `baseline` is False, a dense model with its active parameter count) with
    `cfg`; save the checkpoint to `out` and the log (losses, curves, corpus facts) next to it. -> the log."""
    model_cfg = get_preset(preset)
    rep = count_params(model_cfg)
    if rep.total > MAX_CPU_PARAMS:
        raise ValueError(f"preset {preset} has {rep.total / 1e6:.0f}M parameters; CPU training allows "
                         f"<= {MAX_CPU_PARAMS / 1e6:.0f}M")
    if cfg.seq_len > model_cfg.max_seq_len - 1:
        raise ValueError(f"--seq-len must be < max_seq_len ({model_cfg.max_seq_len})")
    if n_val_batches < 1:
        raise ValueError(f"--val-batches must be positive, got {n_val_batches}")
    out = Path(out)
    log_path = Path(log) if log else out.parent / f"{preset}_train_log.json"
    sets = val_batches(cfg.seed, n_val_batches, cfg.batch_size, cfg.seq_len)
    val_tokens = sum(b[:, 1:].numel() for bs in sets.values() for b in bs)

    torch.manual_seed(cfg.seed)
    model = K3Model(model_cfg)
    k3 = train_one(model, preset, cfg, sets, is_k3=True)
    meta = {"preset": preset, "seed": cfg.seed, "steps": k3["steps_done"], "val_loss": k3["final_val"]["mean"]}
    size = save_checkpoint(model, out, meta)
    reloaded, _ = load_checkpoint(out)
    k3["final_val_after_bf16_save"] = evaluate(reloaded, sets)
    print(f"saved {out} ({size / 1e6:.1f} MB); validation after the bf16 round trip "
          f"{k3['final_val_after_bf16_save']['mean']:.3f} nats/byte", flush=True)

    result = {
        "command": command,
        "args": {"preset": preset, "out": str(out), "log": None if log is None else str(log), **asdict(cfg),
                 "val_batches": n_val_batches, "no_baseline": not baseline},
        "python": sys.version.split()[0], "torch": torch.__version__,
        "corpus": {"stdlib_dir": sysconfig.get_paths()["stdlib"], "n_stdlib_files": len(stdlib_files()),
                   "train_sha256_16": Corpus("train", cfg.seed).sha256, "synthetic_fraction": SYNTH_FRACTION,
                   "val_tokens": val_tokens},
        "units": "validation loss = mean next-byte cross-entropy, nats per byte (ln 256 = 5.545 is uniform)",
        "model": {"preset": preset, "total_params": rep.total, "active_params": rep.active, **k3},
        "checkpoint": {"path": str(out), "bytes": size},
    }
    if baseline:
        torch.manual_seed(cfg.seed)
        dense = dense_baseline_for(model_cfg, match="active")
        base = train_one(dense, "dense baseline", cfg, sets, is_k3=False)
        result["dense_baseline"] = {"matched": "active parameters (k3lite.analytic.params convention)",
                                    "params": n_params(dense), "spec": dense.spec, **base}
        print(f"validation loss: {preset} {k3['final_val']['mean']:.3f} vs dense (same active params) "
              f"{base['final_val']['mean']:.3f} nats/byte", flush=True)
    log_path.write_text(json.dumps(result, indent=1))
    print(f"log written to {log_path}")
    return result


# ------------------------------------------------------------------------------- residual experiment
def attnres_experiment(steps: int = 150, batch_size: int = 4, seq_len: int = 64, seed: int = 0, lr: float = 3e-3,
                       multiples: tuple[float, ...] = (1.25, 1.5, 2.0), block_size: int = 4,
                       eval_every: int = 50, n_val_batches: int = 4) -> dict:
    """The `lite` LM trained `steps` steps with standard vs full vs block Attention Residuals.

    Same data, seed, optimiser and schedule as the checkpoint (`train_one`, the corpus and validation sets).
    Then the standard-residual model is retrained with `multiples` x `steps` (each its own full warmup +
    cosine schedule, so no run is judged mid-schedule) to find how many steps standard residuals need to
    reach the AttnRes validation loss: the "compute-equivalent" ratio the AttnRes paper reports as ~1.25x
    (arXiv 2603.15031). The ratio is interpolated linearly between measured budgets and reported as
    "> max multiple" when standard never catches up.
    """
    if n_val_batches < 1 or block_size < 1:
        raise ValueError(f"val-batches and block-size must be positive, got {n_val_batches} and {block_size}")
    base = get_preset("lite")
    sets = val_batches(seed, n_val_batches, batch_size, seq_len)

    def run(mode: str, n_steps: int) -> dict:
        model_cfg = base.with_(attn_res=mode, attn_res_block_size=block_size)
        cfg = LMTrainConfig(steps=n_steps, batch_size=batch_size, seq_len=seq_len, lr=lr,
                            warmup=max(1, n_steps // 10), seed=seed, eval_every=eval_every, max_minutes=0)
        torch.manual_seed(seed)
        model = K3Model(model_cfg)
        out = train_one(model, f"{mode} x{n_steps}", cfg, sets, is_k3=True)
        return {"mode": mode, "steps": n_steps, "params": n_params(model),
                "final_val": out["final_val"], "init_val": out["init_val"], "evals": out["evals"],
                "seconds": out["seconds"]}

    runs = [run(mode, steps) for mode in ("standard", "full", "block")]
    runs += [run("standard", int(round(m * steps))) for m in multiples]
    standard = sorted((r for r in runs if r["mode"] == "standard"), key=lambda r: r["steps"])
    match = {}
    for mode in ("full", "block"):
        target = next(r for r in runs if r["mode"] == mode and r["steps"] == steps)["final_val"]["mean"]
        match[mode] = {"target_val": target, **steps_to_reach(standard, target, steps)}
    return {"preset": "lite", "steps": steps, "batch": batch_size, "seq_len": seq_len, "seed": seed, "lr": lr,
            "block_size_sublayers": block_size, "units": "validation loss: next-byte cross-entropy, nats/byte",
            "runs": runs, "standard_steps_to_match": match, "torch": torch.__version__}


def steps_to_reach(standard: list[dict], target: float, steps: int) -> dict:
    """Smallest standard-residual budget whose final loss <= target, interpolated between budgets."""
    prev = None
    for r in standard:
        loss = r["final_val"]["mean"]
        if loss <= target:
            if prev is None or r["steps"] == steps:
                return {"steps_needed": r["steps"], "ratio": r["steps"] / steps, "reached": True}
            (s0, l0), (s1, l1) = prev, (r["steps"], loss)
            est = s0 + (l0 - target) / max(l0 - l1, 1e-9) * (s1 - s0)
            return {"steps_needed": round(est), "ratio": round(est / steps, 3), "reached": True}
        prev = (r["steps"], loss)
    return {"steps_needed": None, "ratio": None, "reached": False,
            "note": f"standard residuals did not reach it within {standard[-1]['steps']} steps"}


def attnres_results() -> list[dict]:
    """The shipped Attention Residuals experiments (assets/lab_attnres*.json, one per seed, each made by the command
    it stores), oldest seed first; [] when none is shipped."""
    return [json.loads(p.read_text()) for p in sorted(ASSETS.glob("lab_attnres*.json"))]
