"""MoE dispatch speed: grouped (sort by expert) vs naive per-token reference vs a dense SwiGLU of equal ACTIVE FLOPs.

    python -m k3lite.bench moe [--tokens 4096] [--dim 256] [--ffn 128] [--repeats 3]

For each E in {64, 256, 896} and top-k in {8, 16} the MoE layer (router + grouped dispatch/combine of k
SwiGLU experts of hidden `ffn`) is timed against a dense SwiGLU with hidden k * ffn: the same multiply-adds
per token. The naive reference (one token-expert pair at a time) is timed on a slice of the tokens and
scaled per token. Ratios are measured in this one run (median over interleaved repeats), CPU, fp32, inference mode.
Target: MoE within 3x of the equal-active-FLOPs dense MLP. Timings use 1 thread by default:
on a shared 2-core machine two OpenMP threads spin against other processes and the numbers scatter 10x.
"""
from __future__ import annotations

import argparse
import time

import torch

from k3lite.model.config import MoEConfig
from k3lite.model.moe import Router, RoutedExperts, active_expert_flops_per_token, dispatch_combine, dispatch_combine_naive
from k3lite.model.nn import SwiGLU


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _paired(fn_a, fn_b, repeats: int) -> tuple[float, float, float]:
    """Interleave a and b so a busy machine slows both alike: (min a, min b, median of a/b per pair)."""
    fn_a(), fn_b()  # warm-up
    pairs = [(_time(fn_a), _time(fn_b)) for _ in range(repeats)]
    ratios = sorted(a / b for a, b in pairs)
    return min(a for a, _ in pairs), min(b for _, b in pairs), ratios[len(ratios) // 2]


def run(tokens: int, dim: int, ffn: int, repeats: int, naive_tokens: int,
        experts_list=(64, 256, 896), topk_list=(8, 16)) -> list[dict]:
    rows = []
    torch.manual_seed(0)
    x = torch.randn(tokens, dim)
    for e in experts_list:
        experts = RoutedExperts(e, dim, ffn)
        for k in topk_list:
            router = Router(dim, MoEConfig(n_routed_experts=e, top_k=k, expert_ffn_dim=ffn, balancing="none"))
            dense = SwiGLU(dim, k * ffn)
            with torch.inference_mode():
                def moe():
                    r = router(x)
                    return dispatch_combine(experts, x, r.topk_idx, r.topk_weight).out

                def naive():
                    r = router(x[:naive_tokens])
                    return dispatch_combine_naive(experts, x[:naive_tokens], r.topk_idx, r.topk_weight).out

                t_moe, t_dense, ratio = _paired(moe, lambda: dense(x), repeats)
                t_naive = _time(naive) * tokens / naive_tokens  # scaled to all tokens
            flops = active_expert_flops_per_token(dim, ffn, k) * tokens
            rows.append(dict(E=e, k=k, per_expert=tokens * k / e, moe_ms=1e3 * t_moe, dense_ms=1e3 * t_dense, naive_ms=1e3 * t_naive,
                             moe_over_dense=ratio, naive_over_moe=t_naive / t_moe,
                             moe_gflops=flops / t_moe / 1e9, dense_gflops=flops / t_dense / 1e9))
    return rows


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m k3lite.bench moe", description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=4096)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--ffn", type=int, default=128, help="hidden size of one routed expert")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="1 = stable timings on a shared machine")
    p.add_argument("--naive-tokens", type=int, default=32, help="tokens the per-token reference runs on")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    print(f"MoE dispatch bench: {a.tokens} tokens, dim {a.dim}, expert ffn {a.ffn}, fp32, "
          f"{torch.get_num_threads()} thread(s), {a.repeats} interleaved repeats; dense hidden = top_k x ffn (equal active FLOPs)")
    rows = run(a.tokens, a.dim, a.ffn, a.repeats, a.naive_tokens)
    head = f"{'E':>4} {'k':>3} {'tok/exp':>7} {'moe ms':>8} {'dense ms':>9} {'naive ms*':>10} {'moe/dense':>10} {'naive/moe':>10} {'moe GF/s':>9} {'dense GF/s':>10}"
    print(head)
    for r in rows:
        print(f"{r['E']:>4} {r['k']:>3} {r['per_expert']:>7.0f} {r['moe_ms']:>8.1f} {r['dense_ms']:>9.1f} {r['naive_ms']:>10.0f} "
              f"{r['moe_over_dense']:>10.2f} {r['naive_over_moe']:>10.1f} {r['moe_gflops']:>9.1f} {r['dense_gflops']:>10.1f}")
    worst = max(r["moe_over_dense"] for r in rows)
    print("tok/exp = tokens x k / E: few rows per expert -> each expert's weights are read for little work, "
          "so the MoE becomes weight-bandwidth bound (the gap grows with E at fixed tokens).")
    print(f"ms = best of the repeats; moe/dense = median of per-repeat ratios; "
          f"* naive timed on {a.naive_tokens} tokens and scaled per token.")
    print(f"active expert FLOPs per token = 2 x 3 x dim x ffn x k; "
          f"worst moe/dense = {worst:.2f}x (target <= 3x): {'OK' if worst <= 3 else 'MISSED'}")
    return 0
