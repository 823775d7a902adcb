"""Benchmark: KDA recurrent reference vs chunk-wise kernel vs full causal softmax attention.

    python -m k3lite.bench kda [--T 512 2048 8192] [--heads 4] [--head-dim 128] [--threads 1]

Same heads and head dims for all three (K = V = head_dim; softmax attention gets q, k, v of the same
shape via F.scaled_dot_product_attention(is_causal=True)). Everything fp32 on CPU, inference mode,
times are the best of `--repeats` interleaved rounds measured in this process (the three kernels take
turns, so they see the same machine load; the best run is the one least disturbed by other processes). The recurrent reference is timed on
at most `--rec-tokens` tokens and extrapolated linearly (it is O(T) sequential steps of equal cost);
the printout marks extrapolated numbers with '*'. Memory is what decoding must keep per layer: KDA's
fixed (H, K, V) state vs the K and V cache of softmax attention at that context length.

Roofline: each kernel's achieved GFLOP/s (its matmul FLOPs: `k3lite.model.kda.chunk.chunk_flops` for the chunk
kernel and B H T^2 (K + V) for causal softmax attention, both counting only the causal halves of their
triangles; 7 B T H K V for the recurrence) next to a plain
batched matmul of 128 x 128 blocks doing the chunk kernel's FLOPs, timed in the same interleaved rounds:
the distance to what this machine's matmul reaches, measured, not guessed. `--clock cpu` times with the
thread's CPU time instead of the wall clock (steadier on a loaded shared machine; needs --threads 1).
"""
from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn.functional as F

from k3lite.model.kda import chunk_kda, recurrent_kda
from k3lite.model.kda.chunk import chunk_flops
from k3lite.analytic.memory import kda_state_bytes, kv_cache_bytes


_CLOCK = time.perf_counter  # or time.thread_time with --clock cpu
MM = 128  # block size of the reference batched matmul


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = _CLOCK()
        fn()
        best = min(best, _CLOCK() - t0)
    return best


def same_flop_matmul(flops: int, gen: torch.Generator) -> tuple[int, callable]:
    """A batched matmul of (n, 128, 128) blocks doing about `flops` FLOPs: (its exact FLOPs, a callable)."""
    n = max(1, round(flops / (2 * MM**3)))
    x, y = torch.randn(n, MM, MM, generator=gen), torch.randn(n, MM, MM, generator=gen)
    out = torch.empty(n, MM, MM)
    return 2 * n * MM**3, lambda: torch.bmm(x, y, out=out)


def _inputs(B, T, H, D, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(B, T, H, D, generator=gen), dim=-1)
    k = F.normalize(torch.randn(B, T, H, D, generator=gen), dim=-1)
    v = torch.randn(B, T, H, D, generator=gen)
    g = F.logsigmoid(torch.randn(B, T, H, D, generator=gen) + 3)  # decays mostly in (0.6, 1)
    beta = torch.rand(B, T, H, generator=gen)
    return q, k, v, g, beta


def _kib(n: int) -> str:
    return f"{n / 1024:,.0f} KiB" if n < 1024**2 else f"{n / 1024**2:,.1f} MiB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.bench kda", description=__doc__.split("\n")[0])
    ap.add_argument("--T", type=int, nargs="+", default=[512, 2048, 8192], help="sequence lengths")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=128, help="K = V (Kimi Linear uses 128)")
    ap.add_argument("--chunk-size", type=int, default=32, help="32 was fastest on CPU here; see the sweep line")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rec-tokens", type=int, default=2048, help="time the recurrent loop on at most this many tokens")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 = steadier on a shared machine)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall clock, or this thread's CPU time (steadier when the machine is loaded)")
    args = ap.parse_args(argv)
    if min(args.T) < 1 or args.heads < 1 or args.head_dim < 1 or args.batch < 1 or args.rec_tokens < 1:
        print("error: --T, --batch, --heads, --head-dim and --rec-tokens must be positive")
        return 2
    if args.clock == "cpu" and args.threads != 1:
        print("error: --clock cpu measures one thread; use it with --threads 1")
        return 2
    global _CLOCK
    _CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(args.threads)
    B, H, D, C = args.batch, args.heads, args.head_dim, args.chunk_size
    print(f"KDA kernels vs softmax attention: B={B}, H={H}, K=V={D}, chunk={C}, fp32, CPU, "
          f"{args.threads} thread(s), best of {args.repeats} interleaved rounds, {args.clock} clock, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'T':>6} {'recurrent':>11} {'chunk':>9} {'softmax':>9} {'rec/chunk':>10} {'softmax/chunk':>14} "
          f"{'max|chunk-rec|':>15} {'KDA state':>10} {'KV cache':>10}")
    rows, roof = [], []
    with torch.inference_mode():
        for T in args.T:
            q, k, v, g, beta = _inputs(B, T, H, D)
            qh, kh, vh = (x.transpose(1, 2) for x in (q, k, v))  # (B, H, T, D)
            n = min(T, args.rec_tokens)
            sl = slice(0, n)
            t_chunk = t_soft = t_rec = t_mm = float("inf")
            f_mm, matmul = same_flop_matmul(chunk_flops(B, T, H, D, D, C), torch.Generator().manual_seed(T))
            for _ in range(args.repeats):  # interleaved rounds: all four see the same machine load
                t_mm = min(t_mm, _best(matmul, 2))
                t_chunk = min(t_chunk, _best(lambda: chunk_kda(q, k, v, g, beta, chunk_size=C), 2))
                t_soft = min(t_soft, _best(lambda: F.scaled_dot_product_attention(qh, kh, vh, is_causal=True), 2))
                t_rec = min(t_rec, _best(lambda: recurrent_kda(q[:, sl], k[:, sl], v[:, sl], g[:, sl], beta[:, sl]), 1))
            t_rec *= T / n
            e = slice(0, min(n, 512))  # correctness check on a prefix (the tests cover it properly)
            o_rec, _ = recurrent_kda(q[:, e], k[:, e], v[:, e], g[:, e], beta[:, e])
            o_chunk, _ = chunk_kda(q[:, e], k[:, e], v[:, e], g[:, e], beta[:, e], chunk_size=C)
            err = (o_chunk - o_rec).abs().max().item()
            state, kv = kda_state_bytes(H, D, conv_size=0, batch=B), kv_cache_bytes(T, H, D, 4, B)  # kernel state only, fp32
            mark = "*" if n < T else " "
            print(f"{T:>6} {t_rec * 1e3:>9.0f}ms{mark} {t_chunk * 1e3:>7.1f}ms {t_soft * 1e3:>7.1f}ms "
                  f"{t_rec / t_chunk:>9.1f}x {t_soft / t_chunk:>13.2f}x {err:>15.1e} {_kib(state):>10} {_kib(kv):>10}")
            rows.append((T, t_rec, t_chunk, t_soft))
            flops = {"chunk": chunk_flops(B, T, H, D, D, C), "softmax": B * H * T * T * 2 * D,
                     "recurrent": 7 * B * T * H * D * D}
            roof.append((T, {name: flops[name] / t / 1e9 for name, t in
                             (("chunk", t_chunk), ("softmax", t_soft), ("recurrent", t_rec))}, f_mm / t_mm / 1e9))
        print(f"roofline: achieved GFLOP/s (matmul FLOPs / time) vs a same-FLOP batched matmul of {MM}x{MM} "
              "blocks in the same rounds")
        print(f"{'T':>6} {'chunk':>8} {'softmax':>8} {'recurrent':>10} {'matmul':>8} {'matmul/chunk':>13}")
        for T, gf, gf_mm in roof:
            print(f"{T:>6} {gf['chunk']:>8.1f} {gf['softmax']:>8.1f} {gf['recurrent']:>10.2f} {gf_mm:>8.1f} "
                  f"{gf_mm / gf['chunk']:>12.2f}x")
        T_sweep = 2048 if 2048 in args.T else args.T[0]
        q, k, v, g, beta = _inputs(B, T_sweep, H, D)
        sweep = {c: _best(lambda: chunk_kda(q, k, v, g, beta, chunk_size=c), args.repeats) for c in (16, 32, 64)}
        print(f"chunk-size sweep at T={T_sweep}: " + ", ".join(f"C={c}: {t * 1e3:.1f}ms" for c, t in sweep.items()))
    if any(n < T for T in args.T for n in [min(T, args.rec_tokens)]):
        print(f"* recurrent timed on the first {args.rec_tokens} tokens and extrapolated linearly (T/{args.rec_tokens}x)")
    faster = [T for T, _, tc, ts in rows if tc < ts]
    if faster:
        first = min(faster)
        below = [T for T, _, tc, ts in rows if T < first]
        where = f"between T={max(below)} and T={first}" if below else f"already at T={first} (the shortest tried)"
        print(f"chunk overtakes softmax attention {where}; beyond, softmax grows ~T^2 and chunk ~T.")
        if below:  # refine inside the bracket (chunk and softmax only: both are cheap there)
            lo, hi = max(below), first
            scan = sorted({int(lo * (hi / lo) ** (i / 4)) for i in range(1, 4)})
            parts = []
            with torch.inference_mode():
                for T in scan:
                    q, k, v, g, beta = _inputs(B, T, H, D)
                    tc = _best(lambda: chunk_kda(q, k, v, g, beta, chunk_size=C), args.repeats)
                    qh, kh, vh = (x.transpose(1, 2) for x in (q, k, v))
                    ts = _best(lambda: F.scaled_dot_product_attention(qh, kh, vh, is_causal=True), args.repeats)
                    parts.append(f"T={T}: softmax/chunk {ts / tc:.2f}x")
            print("  refined: " + ", ".join(parts))
    else:
        print("chunk did not overtake softmax attention at these lengths (try longer --T).")
    print("memory per layer for decoding: the KDA state is fixed; the KV cache grows by "
          f"{_kib(kv_cache_bytes(1, H, D, 4, B))} per token (fp32, these heads).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
