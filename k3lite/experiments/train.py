"""Training entry point: `python -m k3lite.experiments.train ...`, one command and one flag convention for every run.

Three kinds of run share it:
  --task {mqar,palindrome,stack} ...   the lab: tiny 2-layer models on recall tasks (k3lite.experiments.lab)
  --task attnres ...                   the lite LM with standard vs full vs block Attention Residuals
                                       (k3lite.experiments.lm_train.attnres_experiment)
  --preset lite --out assets/...       the shipped language-model checkpoint (k3lite.experiments.lm_train.train_lite)

The flags they share mean the same thing everywhere: --steps, --batch-size, --seq-len, --lr, --seed,
--eval-every, --threads, --json. (`--batch` and `--seq`, the checkpoint's old spellings, still work.)
"""
from __future__ import annotations

import argparse
import json
import sys

import torch

from k3lite.model.presets import PRESETS
from k3lite.experiments.lab import MIXERS, RESIDUALS, LabConfig, StepRecord, format_table, train
from k3lite.experiments.lm_train import LMTrainConfig, attnres_experiment, train_lite
from k3lite.experiments.tasks import TASKS


def _csv(kind):
    return lambda s: [kind(part) for part in s.split(",") if part]


def _shared(p: argparse.ArgumentParser, *, steps: int, batch_size: int, seq_len: int, lr: float, seed: int,
            eval_every: int, lists: bool = False) -> None:
    """The flags every run has, with one spelling. `lists`: --seq-len and --seed take a,b,c (the lab)."""
    many = _csv(int) if lists else int
    wrap = (lambda v: [v]) if lists else (lambda v: v)
    p.add_argument("--steps", type=int, default=steps, help="optimisation steps")
    p.add_argument("--batch-size", "--batch", dest="batch_size", type=int, default=batch_size,
                   help="sequences per step")
    p.add_argument("--seq-len", "--seq", dest="seq_len", type=many, default=wrap(seq_len),
                   help="tokens per sequence" + (" (a,b,c runs each)" if lists else ""))
    p.add_argument("--lr", type=float, default=lr, help="peak learning rate (warmup, then cosine to 10%%)")
    p.add_argument("--seed", type=many, default=wrap(seed), help="seed" + (" (a,b,c runs each)" if lists else ""))
    p.add_argument("--eval-every", type=int, default=eval_every, help="held-out evaluation every N steps")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: the machine is shared)")


def _command(argv: list[str]) -> str:
    return "python -m k3lite.experiments.train " + " ".join(argv)


def _write_json(path: str, payload: dict) -> None:
    with open(path, "w") as fh:
        json.dump(payload, fh, indent=1)
        fh.write("\n")


def _set_threads(n: int) -> None:
    if n < 1:
        raise ValueError(f"--threads must be positive, got {n}")
    torch.set_num_threads(n)


# --------------------------------------------------------------------------------------------- the lab
def lab_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m k3lite.experiments.train --task ...",
        description="Train tiny 2-layer models on recall tasks (the lab). Lists (a,b,c) run every combination.")
    d = LabConfig()
    p.add_argument("--task", type=_csv(str), default=[d.task], help=f"one or more of {TASKS}")
    p.add_argument("--mixer", type=_csv(str), default=[d.mixer], help=f"one or more of {MIXERS}")
    p.add_argument("--residual", type=_csv(str), default=[d.residual], help=f"one or more of {RESIDUALS}")
    _shared(p, steps=d.steps, batch_size=d.batch_size, seq_len=d.seq_len, lr=d.lr, seed=d.seed,
            eval_every=d.eval_every, lists=True)
    p.add_argument("--num-pairs", type=int, default=d.num_pairs)
    p.add_argument("--vocab", type=int, default=d.vocab_size)
    p.add_argument("--d-model", type=int, default=d.d_model)
    p.add_argument("--heads", type=int, default=d.n_heads)
    p.add_argument("--layers", type=int, default=d.n_layers)
    p.add_argument("--ffn-mult", type=int, default=d.ffn_mult, help="SwiGLU hidden / d_model; 0 = no FFN")
    p.add_argument("--eval-examples", type=int, default=d.eval_examples)
    p.add_argument("--json", default=None, help="write every run's config, curves and final accuracy here")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _progress_bar(label: str, rec: StepRecord, total: int, stream=sys.stderr) -> None:
    width = 24
    filled = int(width * rec.step / total)
    tail = f" eval acc {rec.eval_acc:.3f}" if rec.eval_acc is not None else ""
    stream.write(f"\r{label:<28} [{'#' * filled}{'.' * (width - filled)}] {rec.step}/{total} "
                 f"loss {rec.loss:.3f} acc {rec.acc:.3f}{tail} {rec.elapsed_s:.0f}s ")
    if rec.step == total:
        stream.write("\n")
    stream.flush()


def lab_main(argv: list[str]) -> int:
    args = lab_parser().parse_args(argv)
    try:
        _set_threads(args.threads)
        configs = [LabConfig(task=task, mixer=mixer, seq_len=T, residual=res, seed=seed, steps=args.steps,
                             num_pairs=args.num_pairs, vocab_size=args.vocab, d_model=args.d_model,
                             n_heads=args.heads, n_layers=args.layers, ffn_mult=args.ffn_mult,
                             batch_size=args.batch_size, lr=args.lr,
                             eval_every=args.eval_every, eval_examples=args.eval_examples)
                   for task in args.task for T in args.seq_len for mixer in args.mixer
                   for res in args.residual for seed in args.seed]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    runs = []
    for cfg in configs:
        label = f"{cfg.task} T={cfg.seq_len} {cfg.mixer}" + ("" if cfg.residual == "standard" else f" {cfg.residual}")
        show = None if args.quiet else (lambda rec, lab=label: _progress_bar(lab, rec, cfg.steps))
        result = train(cfg, on_step=show)
        runs.append(result.to_dict())
        print(f"{label}: eval acc {result.final_eval_acc:.3f} loss {result.final_eval_loss:.3f} "
              f"({result.n_params} params, {result.wall_s:.1f} s)", file=sys.stderr)
        if args.json:  # rewrite after every run so a long sweep leaves partial results
            _write_json(args.json, {"command": _command(argv), "torch": torch.__version__, "runs": runs})
    print(format_table(runs))
    return 0


# ------------------------------------------------------------------------------ the residual experiment
def attnres_main(argv: list[str]) -> int:
    """`python -m k3lite.experiments.train --task attnres --steps 150 --json assets/lab_attnres.json` (the lite LM)."""
    p = argparse.ArgumentParser(prog="python -m k3lite.experiments.train --task attnres",
                                description="lite LM: standard vs full vs block Attention Residuals")
    p.add_argument("--task", choices=["attnres"])
    _shared(p, steps=150, batch_size=4, seq_len=64, lr=3e-3, seed=0, eval_every=50)
    p.add_argument("--multiples", type=_csv(float), default=[1.25, 1.5, 2.0],
                   help="standard-residual budgets, as multiples of --steps")
    p.add_argument("--block-size", type=int, default=4, help="AttnRes block size in sublayers")
    p.add_argument("--val-batches", type=int, default=4)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    try:
        _set_threads(args.threads)
        LMTrainConfig(steps=args.steps, batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr,
                      seed=args.seed, eval_every=args.eval_every)  # validates the shared flags before any training
        if args.val_batches < 1 or args.block_size < 1:
            raise ValueError("--val-batches and --block-size must be positive")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    result = attnres_experiment(args.steps, args.batch_size, args.seq_len, args.seed, args.lr,
                                tuple(args.multiples), args.block_size, args.eval_every, args.val_batches)
    result["command"] = _command(argv)
    for r in result["runs"]:
        print(f"{r['mode']:>9} {r['steps']:>5} steps: val {r['final_val']['mean']:.4f} nats/byte "
              f"({r['seconds']:.0f} s)")
    for mode, m in result["standard_steps_to_match"].items():
        print(f"standard residuals to match {mode} AttnRes ({m['target_val']:.4f}): "
              + (f"{m['steps_needed']} steps = {m['ratio']:.2f}x" if m["reached"] else m["note"]))
    if args.json:
        _write_json(args.json, result)
    return 0


# ---------------------------------------------------------------------------------- the lite checkpoint
def lm_main(argv: list[str]) -> int:
    """`python -m k3lite.experiments.train --preset lite --out assets/lite.safetensors` (+ the dense baseline)."""
    d = LMTrainConfig()
    ap = argparse.ArgumentParser(
        prog="python -m k3lite.experiments.train",
        description="Train the lite language model checkpoint and its dense baseline (no --task). The same command "
                    "runs the lab with --task {mqar,palindrome,stack} and the Attention Residuals experiment with "
                    "--task attnres: `python -m k3lite.experiments.train --task mqar --help` lists their flags.",
        epilog="examples:\n  python -m k3lite.experiments.train --preset lite --out assets/lite.safetensors\n"
               "  python -m k3lite.experiments.train --task mqar --mixer kda --seq-len 256 --steps 300 --json out.json\n"
               "  python -m k3lite.experiments.train --task attnres --steps 150 --json assets/lab_attnres.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="lite", help=f"one of {sorted(PRESETS)} (only small ones fit a CPU)")
    ap.add_argument("--out", default="assets/lite.safetensors")
    ap.add_argument("--log", default=None, help="JSON log path (default: <out dir>/<preset>_train_log.json)")
    _shared(ap, steps=d.steps, batch_size=d.batch_size, seq_len=d.seq_len, lr=d.lr, seed=d.seed,
            eval_every=d.eval_every)
    ap.add_argument("--warmup", type=int, default=d.warmup, help="linear warmup steps")
    ap.add_argument("--val-batches", type=int, default=4)
    ap.add_argument("--max-minutes", type=float, default=d.max_minutes, help="safety stop per model (0 = none)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the dense baseline")
    args = ap.parse_args(argv)
    try:
        _set_threads(args.threads)
        cfg = LMTrainConfig(steps=args.steps, batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr,
                            warmup=args.warmup, seed=args.seed, eval_every=args.eval_every,
                            max_minutes=args.max_minutes)
        train_lite(args.preset, args.out, cfg, log=args.log, n_val_batches=args.val_batches,
                   baseline=not args.no_baseline, command=_command(argv))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    tasks = [b for a, b in zip(argv, argv[1:]) if a == "--task"] + [a[7:] for a in argv if a.startswith("--task=")]
    if "attnres" in tasks:
        return attnres_main(argv)  # the residual experiment on the lite LM, not a recall task
    if tasks:
        return lab_main(argv)
    return lm_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
