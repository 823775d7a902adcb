"""Benchmark: one training step of the lab's model (k3lite.experiments.lab) per sequence mixer and length.

    python -m k3lite.bench train [--T 256 1024 2048] [--mixers kda attention] [--batch 16] [--repeats 3]

A step is exactly what `k3lite.experiments.lab.iter_train` does (batch, forward, loss, backward, clip, AdamW step): the
bench drives one `iter_train` generator per mixer and times each `next()`. The mixers take turns step by
step (interleaved, so they see the same machine load); the first step (allocations) and the last (it runs
the held-out evaluation) are not timed; the best of the rest is reported. Lab defaults otherwise
(2 layers, 2 heads of 64, no FFN, chunk 32, MQAR). `--clock cpu` times with the thread's CPU time instead
of the wall clock (steadier on a loaded shared machine; 1 thread). `--profile` adds each mixer's top
operators at the longest T (torch.profiler, one extra step), to show where the time goes.
"""
from __future__ import annotations

import argparse
import os
import time

import torch

from k3lite.experiments.lab import MIXERS, LabConfig, build, iter_train


def step_times(T: int, mixers: list[str], batch: int, repeats: int, seed: int = 0,
               clock=time.perf_counter) -> dict[str, float]:
    """Best seconds per training step for each mixer at length T, measured interleaved."""
    gens, times = {}, {m: [] for m in mixers}
    for m in mixers:
        cfg = LabConfig(mixer=m, seq_len=T, batch_size=batch, steps=repeats + 2, eval_every=10**9,
                        eval_examples=batch, seed=seed)
        gens[m] = iter_train(cfg)
    for i in range(repeats + 1):
        for m in mixers:
            t0 = clock()
            next(gens[m])
            if i > 0:  # step 0 pays one-off allocations
                times[m].append(clock() - t0)
    for g in gens.values():
        g.close()  # the last step (with its evaluation) is never run
    return {m: min(ts) for m, ts in times.items()}


def profile_step(T: int, mixer: str, batch: int, rows: int = 12) -> str:
    """torch.profiler table (self CPU time) of one training step after a warm-up step."""
    cfg = LabConfig(mixer=mixer, seq_len=T, batch_size=batch, steps=3, eval_every=10**9, eval_examples=batch)
    model, opt = build(cfg)
    gen = iter_train(cfg, model, opt)
    next(gen)
    with torch.profiler.profile() as prof:
        next(gen)
    gen.close()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.bench train", description=__doc__.split("\n")[0])
    ap.add_argument("--T", type=int, nargs="+", default=[256, 1024, 2048], help="sequence lengths")
    ap.add_argument("--mixers", nargs="+", default=["kda", "attention"], help=f"any of {', '.join(MIXERS)}")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3, help="timed steps per mixer and length")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 = steadier on a shared machine)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall clock, or this thread's CPU time (steadier when the machine is loaded)")
    ap.add_argument("--profile", action="store_true", help="print each mixer's top operators at the longest T")
    args = ap.parse_args(argv)
    bad = [m for m in args.mixers if m not in MIXERS]
    if bad:
        ap.error(f"unknown mixer(s) {bad}; choose from {MIXERS}")
    if min(args.T) < 16 or max(args.T) > 4096 or args.batch < 1 or args.repeats < 1:
        ap.error("--T must be in [16, 4096] (the lab's limit), --batch and --repeats positive")
    if args.clock == "cpu" and args.threads != 1:
        ap.error("--clock cpu measures one thread; use it with --threads 1")
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"lab training step (forward + backward + AdamW), batch {args.batch}, 2 layers x 2 heads of 64, "
          f"chunk 32, fp32 CPU, {args.threads} thread(s), best of {args.repeats} interleaved steps, {args.clock} clock; "
          f"load average {load:.1f}")
    ref = "attention" if "attention" in args.mixers else None
    head = "".join(f"{m:>12}" for m in args.mixers)
    tail = "".join(f"{m + '/attn':>14}" for m in args.mixers if m != ref) if ref else ""
    print(f"{'T':>6}{head}{tail}")
    for T in args.T:
        t = step_times(T, args.mixers, args.batch, args.repeats, clock=clock)
        cells = "".join(f"{t[m] * 1e3:>10.0f}ms" for m in args.mixers)
        ratios = "".join(f"{t[m] / t[ref]:>13.2f}x" for m in args.mixers if m != ref) if ref else ""
        print(f"{T:>6}{cells}{ratios}", flush=True)
    if ref:
        print("ratio < 1: that mixer's step is faster than softmax attention's at that length.")
    if args.profile:
        for m in args.mixers:
            print(f"\n--- {m}, T={max(args.T)}: top operators by self CPU time, one step")
            print(profile_step(max(args.T), m, args.batch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
