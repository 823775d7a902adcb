"""Balancing experiment from the command line: one small MoE trained on a skewed token stream under each method.

    python -m k3lite.bench balance [--steps 300] [--batch 256] [--experts 16] [--top-k 2]
    python -m k3lite.bench balance --prompt-demo [--experts 64] [--top-k 8] [--latent 0.25] [--layer 4]

The second form prints the routing page's panel (b) from the command line: held-out max-violation after
1, 2, 4, ... balancing updates per method on the trained lite model's hidden states, and the page's sentence.

The experiment itself lives in `k3lite.experiments.moe_balance` (the routing page trains a shorter run of it live);
this module only parses arguments and prints the table.
"""
from __future__ import annotations

import argparse

import torch

from k3lite.model.checkpoint import load_lite_model
from k3lite.model.config import MoEConfig
from k3lite.experiments.moe_balance import run_balance, summary_rows
from k3lite.experiments.moe_demo import balance_claim, calibration_stream, model_moe_inputs, prompt_demo

PAGE_PROMPT = "The cat sat on the mat, and 42 dogs barked at 3.14 birds."  # the routing page's default prompt


def prompt_demo_table(experts: int, top_k: int, latent: float, layer: int, shared: int = 2) -> int:
    """Panel (b) of the routing page at these settings (expert FFN 32, shared FFN 64, bias gamma 0.01 as there)."""
    model, warning = load_lite_model()
    if warning:
        print(warning)
    d = model.cfg.d_model
    cfg = MoEConfig(n_routed_experts=experts, top_k=top_k, expert_ffn_dim=32, n_shared_experts=shared,
                    shared_ffn_dim=64, latent_dim=0 if latent == 1 else round(d * latent), latent_norm=latent < 1,
                    balancing="quantile", bias_gamma=0.01)
    states = model_moe_inputs(model, calibration_stream())
    if layer not in states:
        print(f"error: layer must be one of the MoE layers {sorted(states)}, got {layer}")
        return 2
    demo = prompt_demo(cfg, d, PAGE_PROMPT, stream_x=states[layer],
                       prompt_x=model_moe_inputs(model, PAGE_PROMPT.encode())[layer])
    print(f"E {experts}, top-{top_k}, {shared} shared, latent {latent}, layer {layer}: held-out max-violation "
          f"({demo.eval_tokens} bytes) after n updates of {demo.batch} bytes")
    print(f"{'method':>9} " + " ".join(f"{n:>6}" for n in demo.update_counts))
    for m, curve in demo.curves.items():
        print(f"{m:>9} " + " ".join(f"{v:>6.2f}" for v in curve))
    print(balance_claim(demo))
    return 0


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
    p.add_argument("--prompt-demo", action="store_true", help="print the routing page's panel (b) instead")
    p.add_argument("--latent", type=float, default=0.25, help="--prompt-demo: latent ratio l / d")
    p.add_argument("--layer", type=int, default=4, help="--prompt-demo: MoE layer of the lite model")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    if a.prompt_demo:
        experts = a.experts if "--experts" in argv else 64  # the page's defaults, not the training run's
        top_k = a.top_k if "--top-k" in argv else 8
        return prompt_demo_table(experts, top_k, a.latent, a.layer)
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
