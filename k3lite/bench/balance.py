"""Balancing experiment: one small MoE trained on a skewed token stream under each balancing method.

    python -m k3lite.bench balance [--steps 300] [--batch 256] [--experts 16] [--top-k 2]

The stream: tokens from C clusters with Zipf-distributed frequencies (a few "words" are very common),
all sharing a common offset so that a fresh router already prefers some experts. Target: a per-cluster
random linear map (a toy regression: the MoE must learn to send each cluster to experts that fit it).
Every method trains the same initial weights on the same batches (Adam); we record per step the
max-violation max(load)/mean(load) - 1 of the batch's routing and the MSE, then on held-out tokens: the
final MSE (quality proxy), max-violation and selection stability (fraction of top-k choices that flip
under score noise of std 0.01).

Also here: the router "calibration" the routing page uses to show each method on a real prompt.
"""
from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path
from dataclasses import replace
from typing import NamedTuple

import torch
import torch.nn.functional as F

from k3lite.config import BALANCING_METHODS, MoEConfig
from k3lite.moe import LatentMoE, Router, routing_metrics, selection_stability
from k3lite.tokenizer import token_label, validate_prompt

METHODS = tuple(m for m in BALANCING_METHODS)  # none, aux_loss, bias, quantile


class BalanceRun(NamedTuple):
    method: str
    max_violation: list[float]  # per training step (the batch's own routing)
    loss: list[float]  # per training step, MSE
    eval_loss: float  # held-out MSE: the quality proxy
    eval_max_violation: float
    eval_load: list[int]  # (E,) held-out assignments per expert
    stability: float  # fraction of top-k choices flipped by score noise (std 0.01) on held-out tokens
    seconds: float


class SkewedStream:
    """Clustered tokens with Zipf(s) cluster frequencies and a per-cluster linear target."""

    def __init__(self, dim: int, n_clusters: int = 32, zipf: float = 1.2, offset: float = 1.5, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.dim = dim
        self.centres = torch.randn(n_clusters, dim, generator=g) + offset * torch.randn(dim, generator=g)
        self.maps = torch.randn(n_clusters, dim, dim, generator=g) / dim**0.5  # (C, d, d)
        freq = 1.0 / torch.arange(1, n_clusters + 1, dtype=torch.float) ** zipf
        self.freq = freq / freq.sum()  # (C,)

    def batch(self, n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        c = torch.multinomial(self.freq, n, replacement=True, generator=g)  # (n,)
        x = self.centres[c] + 0.5 * torch.randn(n, self.dim, generator=g)  # (n, d)
        y = torch.einsum("nd,nde->ne", x, self.maps[c])  # (n, d)
        return x, y


def run_balance(steps: int = 300, batch: int = 256, dim: int = 32, n_experts: int = 16, top_k: int = 2,
                ffn: int = 32, lr: float = 3e-3, aux_alpha: float = 0.01, bias_gamma: float = 0.01,
                methods=METHODS, seed: int = 0) -> dict[str, BalanceRun]:
    """Train the same MoE under each balancing method; see the module docstring."""
    if steps < 1 or batch < 1:
        raise ValueError(f"steps and batch must be >= 1, got {steps}, {batch}")
    stream = SkewedStream(dim, seed=seed)
    base_cfg = MoEConfig(n_routed_experts=n_experts, top_k=top_k, expert_ffn_dim=ffn, balancing="none",
                         aux_loss_alpha=aux_alpha, bias_gamma=bias_gamma)
    torch.manual_seed(seed)
    base = LatentMoE(dim, base_cfg)
    x_eval, y_eval = stream.batch(2048, torch.Generator().manual_seed(seed + 10_000))
    runs = {}
    for method in methods:
        t0 = time.perf_counter()
        layer = copy.deepcopy(base)
        cfg = replace(base_cfg, balancing=method)
        layer.cfg = layer.router.cfg = cfg
        opt = torch.optim.Adam(layer.parameters(), lr=lr)
        g = torch.Generator().manual_seed(seed + 1)  # same batches for every method
        viol, losses = [], []
        for _ in range(steps):
            x, y = stream.batch(batch, g)
            out = layer(x[None], update_balance=True)
            mse = F.mse_loss(out.out[0], y)
            opt.zero_grad(set_to_none=True)
            (mse + out.aux_loss).backward()
            opt.step()
            viol.append(out.stats.max_violation)
            losses.append(float(mse.detach()))
        with torch.no_grad():
            out = layer(x_eval[None])
            eval_loss = float(F.mse_loss(out.out[0], y_eval))
            stab = selection_stability(layer.router, x_eval, eps=0.01, seed=seed)
        runs[method] = BalanceRun(method, viol, losses, eval_loss, out.stats.max_violation,
                                  out.stats.load.tolist(), stab, time.perf_counter() - t0)
    return runs


# ------------------------------------------------------------------------------------ prompt demo
def byte_features(data: bytes, dim: int, seed: int = 0, context: int = 4) -> torch.Tensor:
    """(T, dim) toy hidden states for a byte string: x_t = sum_{j<context} 0.5^j E[b_{t-j}] with a fixed
    random byte embedding E, a decaying bag of the last few bytes (so a common letter in different words
    gets different hidden states, as in a real model). A stand-in until a trained model exists."""
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(256, dim, generator=g)  # (256, d)
    ids = torch.tensor(list(data), dtype=torch.long)
    x = table[ids].clone()  # (T, d)
    for j in range(1, context):
        x[j:] += 0.5**j * table[ids[:-j]]
    return x


def model_moe_inputs(model, data: bytes, chunk: int = 512) -> dict[int, torch.Tensor]:
    """{layer index: (T, d)} the normalised hidden state entering each MoE layer of a trained K3Model, for
    the bytes `data` (run in chunks of `chunk` tokens, each from a fresh context). Read with forward
    pre-hooks, so the model itself is not changed (safe on a cached model)."""
    if not data:
        raise ValueError("data must not be empty")
    captured: dict[int, list[torch.Tensor]] = {}
    hooks = []
    for layer in model.layers:
        if isinstance(layer.ffn, LatentMoE):
            captured[layer.index] = []
            hooks.append(layer.ffn.register_forward_pre_hook(
                lambda mod, args, i=layer.index: captured[i].append(args[0].detach().reshape(-1, args[0].shape[-1]))))
    if not hooks:
        raise ValueError("this model has no MoE layer")
    try:
        with torch.inference_mode():
            ids = list(data)
            for start in range(0, len(ids), chunk):
                model(torch.tensor([ids[start : start + chunk]]))
    finally:
        for h in hooks:
            h.remove()
    return {i: torch.cat(parts).clone() for i, parts in captured.items()}  # clone: leave inference mode


def calibrate(router: Router, stream: torch.Tensor, method: str, steps: int = 60, batch: int = 512,
              lr: float = 1e-3, seed: int = 0) -> Router:
    """A copy of `router` whose balancing state was fitted on `stream` (M, d) for `steps` batches.

    none: unchanged. bias: `steps` DeepSeek-V3 bias updates. quantile: `steps` Quantile Balancing updates.
    aux_loss: `steps` Adam steps (lr) on the router weights minimising the Switch aux loss *alone*: no task
    loss pulls back, so this shows the penalty's balancing force at its best (run_balance shows it against
    a task loss). Adam is scale-free, so alpha does not matter here.
    """
    if method not in METHODS:
        raise ValueError(f"balancing method must be one of {METHODS}, got {method!r}")
    r = copy.deepcopy(router)
    r.cfg = replace(r.cfg, balancing=method)
    r.bias.zero_()
    r.weight.requires_grad_(method == "aux_loss")
    if method == "none":
        return r
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam([r.weight], lr=lr) if method == "aux_loss" else None
    for _ in range(steps):
        xb = stream[torch.randint(0, stream.shape[0], (batch,), generator=g)]  # (batch, d)
        if opt is None:
            with torch.no_grad():
                r(xb, update_balance=True)
            continue
        with torch.enable_grad():
            loss = r(xb.detach()).aux_loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    r.weight.requires_grad_(False)
    return r


def summary_rows(runs: dict[str, BalanceRun]) -> list[dict]:
    rows = []
    for m, r in runs.items():
        n = len(r.max_violation)
        tail = max(1, n // 10)
        rows.append(dict(method=m, first_viol=sum(r.max_violation[:tail]) / tail,
                         last_viol=sum(r.max_violation[-tail:]) / tail, eval_viol=r.eval_max_violation,
                         eval_loss=r.eval_loss, stability=r.stability, seconds=r.seconds))
    return rows


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


# Held-in text for the prompt demo's calibration stream (our own words; ships with the code, no download).
CALIBRATION_TEXT = (
    "A mixture of experts replaces one large feed-forward block with many small ones and a router that "
    "sends each token to a few of them. The router is a single matrix: it scores every expert for every "
    "token, and the token goes to the experts with the highest scores. Left alone, the router quickly "
    "learns favourites. Common words such as the, of, and and a pull the same experts again and again, "
    "while rare words and numbers like 42, 1917 or 3.14 end up with experts nobody else uses. An expert "
    "that receives too many tokens becomes the slowest worker in the step, and an expert that receives "
    "none learns nothing. Balancing methods fight this in different ways. An auxiliary loss adds a "
    "penalty when the load is uneven and lets gradient descent sort it out. A bias term nudges the scores "
    "of busy experts down and idle experts up, a little every step. Quantile balancing grades on a curve: "
    "each expert takes the tokens that rank highest for it within the batch, so the load comes out even "
    "by construction. When the experts live on different GPUs every routed token is a message on the "
    "wire, and the size of that message is the width of the vector we send. LatentMoE sends a smaller, "
    "compressed vector, so the same network can carry more experts per token. "
)


STREAM_BYTES = 8_000  # 2,000 held out: ~18 assignments per expert at E = 896, top-k 8


def calibration_stream() -> bytes:
    """CALIBRATION_TEXT followed by the start of k3lite/moe.py's source (STREAM_BYTES of text and code,
    shipped with the package: no download)."""
    source = (Path(__file__).resolve().parent.parent / "moe.py").read_bytes()
    return (CALIBRATION_TEXT.encode("utf-8") + source)[:STREAM_BYTES]


class PromptDemo(NamedTuple):
    labels: list[str]  # one per prompt byte
    stats: dict  # method -> RoutingStats of the prompt through the layer with that method's router
    eval_load: dict  # method -> (E,) assignments on held-out stream tokens
    eval_violation: dict  # method -> max-violation on the held-out stream tokens
    stability: dict  # method -> selection_stability on the held-out tokens (score noise std 0.01)
    eval_tokens: int
    fit_tokens: int


MAX_PROMPT_BYTES = 256


def check_prompt(prompt: str) -> bytes:
    """The prompt's UTF-8 bytes (one token per byte): the app's one prompt policy (`validate_prompt`) with this
    demo's length limit; ValueError naming the constraint."""
    return validate_prompt(prompt, max_bytes=MAX_PROMPT_BYTES)


def prompt_demo(cfg: MoEConfig, d_model: int, prompt: str, seed: int = 0, stream_x: torch.Tensor | None = None,
                prompt_x: torch.Tensor | None = None) -> PromptDemo:
    """Route a prompt through a seeded LatentMoE under each balancing method.

    Hidden states: `stream_x` (L, d) for `calibration_stream()` and `prompt_x` (T, d) for the prompt, e.g.
    the trained model's (`model_moe_inputs`); by default `byte_features` (a fixed random embedding).
    Each method's balancing state is fitted by `calibrate` on the first 3/4 of the stream; loads are
    measured on the remaining quarter (tokens the balancer did not see).
    """
    data = check_prompt(prompt)
    feats = byte_features(calibration_stream(), d_model, seed) if stream_x is None else stream_x  # (L, d)
    if prompt_x is None:
        prompt_x = byte_features(data, d_model, seed)  # (T, d): the prompt on its own (no leading context)
    if feats.shape[-1] != d_model or prompt_x.shape != (len(data), d_model):
        raise ValueError(f"hidden states must be (L, {d_model}) and ({len(data)}, {d_model}), "
                         f"got {tuple(feats.shape)} and {tuple(prompt_x.shape)}")
    split = 3 * feats.shape[0] // 4
    fit, held = feats[:split], feats[split:]
    torch.manual_seed(seed)
    layer = LatentMoE(d_model, replace(cfg, balancing="none"))
    layer.requires_grad_(False)
    # quantile needs >= 1 token per expert per batch (N k / E >= 1); aim for ~4
    batch = min(2048, max(512, -(-4 * cfg.n_routed_experts // cfg.top_k)))
    stats, loads, viol, stab = {}, {}, {}, {}
    base_router = layer.router
    for method in METHODS:
        router = calibrate(base_router, fit, method, steps=30 if method != "quantile" else 6, batch=batch,
                           seed=seed)
        layer.router = router
        layer.cfg = router.cfg
        with torch.inference_mode():
            stats[method] = layer(prompt_x[None]).stats
            load, v, _, _ = routing_metrics(router(held).topk_idx, cfg.n_routed_experts)
        loads[method], viol[method] = load.tolist(), v
        stab[method] = selection_stability(router, held, eps=0.01, seed=seed)
    return PromptDemo([token_label(b) for b in data], stats, loads, viol, stab, held.shape[0], fit.shape[0])
