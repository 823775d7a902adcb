"""Train the shipped lite checkpoint: `python -m k3lite.train --preset lite --out assets/lite.safetensors`.

Corpus (offline on every machine, deterministic):
  * Python standard-library source (docstrings included): every top-level `*.py` of the running
    interpreter's stdlib directory, sorted by name; every 10th file is held out for validation.
  * generated arithmetic lines ("37+58=95") and key-value recall lines ("a=3 q=7 c=1 ? q=7"),
    from a seeded generator (training and validation use different seeds).
Each training sequence is a random window of the stdlib text (70%) or a run of synthetic lines (30%).

The same loop, data and steps then train a dense baseline (k3lite.model.DenseTransformer) with the same
number of *active* parameters as lite (7.2M total, 2.4M active). Both validation losses (nats/byte),
the random-init losses and the loss curves go to assets/lite_train_log.json.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import sysconfig
import time
from pathlib import Path

import torch

from k3lite.config import PRESETS, get_preset
from k3lite.model import K3Model, loss_fn, n_params
from k3lite.params import count_params, dense_baseline_for

SYNTH_FRACTION = 0.3
VAL_EVERY_NTH_FILE = 10


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


def lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    if step < warmup:
        return lr * (step + 1) / warmup
    frac = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def train_one(model, label: str, args, sets, is_k3: bool) -> dict:
    torch.manual_seed(args.seed)
    data = Corpus("train", args.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    init = evaluate(model, sets)
    print(f"{label}: random-init validation loss {init['mean']:.3f} nats/byte", flush=True)
    curve, evals = [], []
    t0 = time.time()
    model.train()
    step = 0
    for step in range(1, args.steps + 1):
        for group in opt.param_groups:
            group["lr"] = lr_at(step - 1, args.steps, args.lr, args.warmup)
        batch = data.batch(args.batch, args.seq)
        out = model(batch[:, :-1], update_balance=True) if is_k3 else model(batch[:, :-1])
        loss = loss_fn(out.logits, batch[:, 1:])
        (loss + out.aux_loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        curve.append(round(loss.item(), 4))
        progress(step, args.steps, sum(curve[-10:]) / len(curve[-10:]), t0, label)
        if step % args.eval_every == 0 and step < args.steps:
            evals.append({"step": step, **evaluate(model, sets)})
        if args.max_minutes and time.time() - t0 > 60 * args.max_minutes:
            sys.stderr.write(f"\n{label}: stopped at step {step} (--max-minutes {args.max_minutes})\n")
            break
    final = evaluate(model, sets)
    evals.append({"step": step, **final})
    seconds = time.time() - t0
    print(f"{label}: final validation loss {final['mean']:.3f} nats/byte after {step} steps ({seconds / 60:.1f} min)",
          flush=True)
    return {"init_val": init, "final_val": final, "evals": evals, "train_loss": curve, "steps_done": step,
            "seconds": round(seconds, 1), "tokens_seen": step * args.batch * args.seq}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.train", description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="lite", help=f"one of {sorted(PRESETS)} (only small ones fit a CPU)")
    ap.add_argument("--out", default="assets/lite.safetensors")
    ap.add_argument("--log", default=None, help="JSON log path (default: <out dir>/<preset>_train_log.json)")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--val-batches", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1, help="1 is fastest on a shared 2-core machine")
    ap.add_argument("--max-minutes", type=float, default=25.0, help="safety stop per model (0 = none)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the dense baseline")
    args = ap.parse_args(argv)
    try:
        cfg = get_preset(args.preset)
        rep = count_params(cfg)
        if rep.total > 50e6:
            raise ValueError(f"preset {args.preset} has {rep.total / 1e6:.0f}M parameters; CPU training allows <= 50M")
        for name in ("steps", "batch", "seq", "threads", "eval_every", "val_batches"):
            if getattr(args, name) <= 0:
                raise ValueError(f"--{name.replace('_', '-')} must be positive")
        if args.seq > cfg.max_seq_len - 1:
            raise ValueError(f"--seq must be < max_seq_len ({cfg.max_seq_len})")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    log_path = Path(args.log) if args.log else out.parent / f"{args.preset}_train_log.json"
    sets = val_batches(args.seed, args.val_batches, args.batch, args.seq)
    val_tokens = sum(b[:, 1:].numel() for bs in sets.values() for b in bs)

    torch.manual_seed(args.seed)
    model = K3Model(cfg)
    k3 = train_one(model, args.preset, args, sets, is_k3=True)
    from k3lite.checkpoint import load_checkpoint, save_checkpoint

    meta = {"preset": args.preset, "seed": args.seed, "steps": k3["steps_done"], "val_loss": k3["final_val"]["mean"]}
    size = save_checkpoint(model, out, meta)
    reloaded, _ = load_checkpoint(out)
    k3["final_val_after_bf16_save"] = evaluate(reloaded, sets)
    print(f"saved {out} ({size / 1e6:.1f} MB); validation after the bf16 round trip "
          f"{k3['final_val_after_bf16_save']['mean']:.3f} nats/byte", flush=True)

    log = {
        "command": "python -m k3lite.train " + " ".join(argv if argv is not None else sys.argv[1:]),
        "args": vars(args), "python": sys.version.split()[0], "torch": torch.__version__,
        "corpus": {"stdlib_dir": sysconfig.get_paths()["stdlib"], "n_stdlib_files": len(stdlib_files()),
                   "train_sha256_16": Corpus("train", args.seed).sha256, "synthetic_fraction": SYNTH_FRACTION,
                   "val_tokens": val_tokens},
        "units": "validation loss = mean next-byte cross-entropy, nats per byte (ln 256 = 5.545 is uniform)",
        "model": {"preset": args.preset, "total_params": rep.total, "active_params": rep.active, **k3},
        "checkpoint": {"path": str(out), "bytes": size},
    }
    if not args.no_baseline:
        torch.manual_seed(args.seed)
        dense = dense_baseline_for(cfg, match="active")
        base = train_one(dense, "dense baseline", args, sets, is_k3=False)
        log["dense_baseline"] = {"matched": "active parameters (k3lite.params convention)",
                                 "params": n_params(dense), "spec": dense.spec, **base}
        print(f"validation loss: {args.preset} {k3['final_val']['mean']:.3f} vs dense (same active params) "
              f"{base['final_val']['mean']:.3f} nats/byte", flush=True)
    log_path.write_text(json.dumps(log, indent=1))
    print(f"log written to {log_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
