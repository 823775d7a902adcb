"""`python -m k3lite.bench model`: forward tokens/s of lite vs a dense transformer with the same active params.

Both models are timed in the same run, interleaved (A B A B ...), under torch.inference_mode, on random
byte tokens; the median of the repeats is reported. Also: incremental decoding of lite with its caches
vs re-running the full prefix each step (what the caches save).
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from k3lite.config import get_preset
from k3lite.model import K3Model, n_params
from k3lite.params import count_params, dense_baseline_for


def _time(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.bench model", description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--decode-steps", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for name in ("batch", "seq", "repeats", "threads"):
        if getattr(args, name) <= 0:
            ap.error(f"--{name} must be positive")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    cfg = get_preset("lite")
    lite = K3Model(cfg).eval()
    dense = dense_baseline_for(cfg, match="active").eval()
    rep = count_params(cfg)
    tokens = torch.randint(0, cfg.vocab_size, (args.batch, args.seq))
    n_tok = tokens.numel()
    print(f"lite: {rep.total / 1e6:.2f}M total, {rep.active / 1e6:.2f}M active params; "
          f"dense baseline: {n_params(dense) / 1e6:.2f}M params (matched to lite's active); "
          f"batch {args.batch} x {args.seq} tokens, {args.threads} thread(s)")
    with torch.inference_mode():
        lite(tokens), dense(tokens)  # warm-up
        t_lite, t_dense = [], []
        for _ in range(args.repeats):
            t_lite += _time(lambda: lite(tokens), 1)
            t_dense += _time(lambda: dense(tokens), 1)
        ml, md = statistics.median(t_lite), statistics.median(t_dense)
        print(f"{'model':<34}{'median s':>10}{'tokens/s':>12}")
        print(f"{'lite (KDA/MLA + LatentMoE)':<34}{ml:>10.3f}{n_tok / ml:>12,.0f}")
        print(f"{'dense, same active params':<34}{md:>10.3f}{n_tok / md:>12,.0f}")
        print(f"ratio lite / dense tokens/s: {md / ml:.2f}x")

        # decoding: cached one-token steps vs recomputing the prefix each step (batch 1)
        steps = args.decode_steps
        if steps > 0:
            prompt = tokens[:1, :64]
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
