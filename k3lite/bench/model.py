"""`python -m k3lite.bench model`: forward tokens/s of lite vs a dense transformer with the same active params.

Both models are timed in the same run, interleaved (A B A B ...), under torch.inference_mode; the median of
the repeats is reported, one row per prompt length (`--seq`; the defaults are the pages' sizes: the
forward-pass page's default prompt is ~40 bytes and its limit 400). lite is the app's model: the shipped
checkpoint (`--weights trained`, the default) on text (`--tokens text`: the first `seq` bytes of the MoE
demo's calibration stream, English prose). Its speed depends on the data: routing skew sets the experts'
batch shapes, and the trained KDA decays pick the chunk kernel's path; `--weights random --tokens random`
is the random-init model on random bytes. The dense baseline has no data-dependent path (random init).
`--clock cpu` times with the thread's CPU time (steadier on a loaded machine; 1 thread). Also: incremental
decoding of lite with its caches vs re-running the full prefix each step (what the caches save).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from k3lite.model.checkpoint import load_lite_model
from k3lite.model.presets import get_preset
from k3lite.model.stack import K3Model, n_params
from k3lite.experiments.moe_demo import calibration_stream
from k3lite.analytic.params import count_params, dense_baseline_for


_CLOCK = time.perf_counter  # or time.thread_time with --clock cpu


def _time(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = _CLOCK()
        fn()
        out.append(_CLOCK() - t)
    return out


def where_time_goes(model: torch.nn.Module, tokens: torch.Tensor, repeats: int = 3) -> tuple[float, dict, int]:
    """CPU seconds of one forward, per kind of sublayer module (layers.<i>.<part>, summed over layers, keyed by
    part and class), and the number of aten calls: (total, {kind: seconds}, calls). Min over `repeats`; the
    hooks themselves add a little time, so read the shares, not the absolute sum."""
    start, spent = {}, {}
    hooks = []
    for name, mod in model.named_modules():
        if name.count(".") == 2:  # layers.<i>.<part>
            key = f"{name.split('.')[-1]} ({type(mod).__name__})"  # e.g. "mixer (KimiDeltaAttention)"
            hooks.append(mod.register_forward_pre_hook(lambda m, a, n=name: start.__setitem__(n, time.thread_time())))
            hooks.append(mod.register_forward_hook(
                lambda m, a, o, n=name, k=key: spent.__setitem__(k, spent.get(k, 0.0) + time.thread_time() - start[n])))
    best_total, best = float("inf"), {}
    for _ in range(repeats):
        spent.clear()
        t0 = time.thread_time()
        model(tokens)
        total = time.thread_time() - t0
        if total < best_total:
            best_total, best = total, dict(spent)
    for h in hooks:
        h.remove()
    with torch.profiler.profile() as prof:
        model(tokens)
    calls = sum(1 for e in prof.events() if e.name.startswith("aten::"))
    return best_total, best, calls


def _tokens(kind: str, batch: int, seq: int, vocab_size: int) -> torch.Tensor:
    """(batch, seq) byte tokens: the first `seq` bytes of the calibration stream in every row, or random bytes."""
    if kind == "random":
        return torch.randint(0, vocab_size, (batch, seq))
    return torch.tensor(list(calibration_stream()[:seq])).expand(batch, seq).contiguous()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.bench model", description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=1, help="1: the pages run one prompt at a time")
    ap.add_argument("--seq", type=int, nargs="+", default=[40, 128, 400], help="prompt lengths in tokens (bytes)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--decode-steps", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall clock, or this thread's CPU time (steadier when the machine is loaded)")
    ap.add_argument("--weights", choices=("trained", "random"), default="trained",
                    help="lite's weights: the shipped checkpoint (what the app runs) or a random init")
    ap.add_argument("--tokens", choices=("text", "random"), default="text",
                    help="lite's and dense's input: text bytes (what the pages run) or uniform random bytes")
    ap.add_argument("--profile", action="store_true",
                    help="where the time goes: CPU ms per submodule kind and aten calls, at the first --seq")
    args = ap.parse_args(argv)
    for name in ("batch", "repeats", "threads"):
        if getattr(args, name) <= 0:
            ap.error(f"--{name} must be positive")
    if min(args.seq) <= 0:
        ap.error("--seq must be positive")
    if args.clock == "cpu" and args.threads != 1:
        ap.error("--clock cpu measures one thread; use it with --threads 1")
    global _CLOCK
    _CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    cfg = get_preset("lite")
    lite, warning = load_lite_model() if args.weights == "trained" else (K3Model(cfg), None)
    if warning:
        print(f"note: {warning}")
    lite = lite.eval()
    if args.tokens == "text" and max(args.seq) > len(calibration_stream()):
        ap.error(f"--tokens text has {len(calibration_stream())} bytes; use a shorter --seq or --tokens random")
    dense = dense_baseline_for(cfg, match="active").eval()
    rep = count_params(cfg)
    print(f"lite ({args.weights} weights, {args.tokens} tokens): {rep.total / 1e6:.2f}M total, {rep.active / 1e6:.2f}M active params; "
          f"dense baseline: {n_params(dense) / 1e6:.2f}M params (matched to lite's active); "
          f"batch {args.batch}, {args.threads} thread(s), {args.clock} clock, median of {args.repeats}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'tokens':>7}{'lite ms':>10}{'dense ms':>10}{'lite tok/s':>12}{'dense tok/s':>13}{'lite/dense':>12}")
    with torch.inference_mode():
        for seq in args.seq:
            tokens = _tokens(args.tokens, args.batch, seq, cfg.vocab_size)
            n_tok = tokens.numel()
            lite(tokens), dense(tokens)  # warm-up
            t_lite, t_dense = [], []
            for _ in range(args.repeats):
                t_lite += _time(lambda: lite(tokens), 1)
                t_dense += _time(lambda: dense(tokens), 1)
            ml, md = statistics.median(t_lite), statistics.median(t_dense)
            print(f"{seq:>7}{ml * 1e3:>10.1f}{md * 1e3:>10.1f}{n_tok / ml:>12,.0f}{n_tok / md:>13,.0f}{md / ml:>11.2f}x",
                  flush=True)
        print("lite/dense: lite's tokens/s as a fraction of the dense baseline's (1 = as fast).")
        if args.profile:
            tokens = _tokens(args.tokens, args.batch, args.seq[0], cfg.vocab_size)
            for name, m in (("lite", lite), ("dense", dense)):
                total, parts, calls = where_time_goes(m, tokens)
                print(f"\n{name}, {args.seq[0]} tokens: {total * 1e3:.1f} ms CPU, {calls:,} aten calls; per submodule kind "
                      f"(the rest is glue between modules):")
                for key, sec in sorted(parts.items(), key=lambda kv: -kv[1]):
                    print(f"  {key:<36}{sec * 1e3:>8.1f} ms  {sec / total:>5.0%}")

        # decoding: cached one-token steps vs recomputing the prefix each step (batch 1)
        steps = args.decode_steps
        if steps > 0:
            prompt = _tokens(args.tokens, 1, 64, cfg.vocab_size)
            res = lite(prompt, use_cache=True)

            def cached():
                r = res
                for _ in range(steps):
                    r = lite(torch.tensor([[65]]), cache=r.cache, use_cache=True)

            def recompute():
                seq = prompt
                for _ in range(steps):
                    seq = torch.cat([seq, torch.tensor([[65]])], 1)
                    lite(seq)

            tc = statistics.median(_time(cached, max(1, args.repeats // 2)))
            tr = statistics.median(_time(recompute, max(1, args.repeats // 2)))
            print(f"lite decode {steps} tokens after a 64-token prompt: cached {steps / tc:,.1f} tokens/s, "
                  f"recompute prefix {steps / tr:,.1f} tokens/s, ratio {tr / tc:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
