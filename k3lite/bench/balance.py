"""Balancing experiment from the command line: one small MoE trained on a skewed token stream under each method.

    python -m k3lite.bench balance [--steps 300] [--batch 256] [--experts 16] [--top-k 2]

The experiment itself lives in `k3lite.moe_balance` (the routing page trains a shorter run of it live);
this module only parses arguments and prints the table.
"""
from __future__ import annotations

import argparse

import torch

from k3lite.moe_balance import run_balance, summary_rows


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m k3lite.bench balance", description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--experts", type=int, default=16)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--aux-alpha", type=float, default=0.01)
    p.add_argument("--bias-gamma", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    print(f"balance bench: d {a.dim}, E {a.experts}, top-{a.top_k}, expert ffn 32, {a.steps} steps x {a.batch} "
          f"tokens, Adam lr 3e-3; Zipf(1.2) stream of 32 clusters; aux alpha {a.aux_alpha}, bias gamma "
          f"{a.bias_gamma} (DeepSeek-V3 used 0.001 over far more steps); quantile: no step size")
    runs = run_balance(a.steps, a.batch, a.dim, a.experts, a.top_k, aux_alpha=a.aux_alpha,
                       bias_gamma=a.bias_gamma, seed=a.seed)
    print(f"{'method':>9} {'viol first10%':>13} {'viol last10%':>12} {'eval viol':>9} {'eval MSE':>9} "
          f"{'flip@0.01':>9} {'s':>5}")
    for r in summary_rows(runs):
        print(f"{r['method']:>9} {r['first_viol']:>13.2f} {r['last_viol']:>12.2f} {r['eval_viol']:>9.2f} "
              f"{r['eval_loss']:>9.4f} {r['stability']:>9.3f} {r['seconds']:>5.1f}")
    print("viol = max(load)/mean(load) - 1 (0 = perfect balance); eval on 2048 held-out tokens; "
          "flip@0.01 = fraction of top-k choices that change under score noise of std 0.01")
    return 0
