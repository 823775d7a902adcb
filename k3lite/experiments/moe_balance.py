"""Balancing experiment: one small MoE trained on a skewed token stream under each balancing method.

The stream: tokens from C clusters with Zipf-distributed frequencies (a few "words" are very common),
all sharing a common offset so that a fresh router already prefers some experts. Target: a per-cluster
random linear map (a toy regression: the MoE must learn to send each cluster to experts that fit it).
Every method trains the same initial weights on the same batches (Adam); we record per step the
max-violation max(load)/mean(load) - 1 of the batch's routing and the MSE, then on held-out tokens: the
final MSE (quality proxy), max-violation and selection stability (fraction of top-k choices that flip
under score noise of std 0.01).

The routing page shows it (panel c; shipped precomputed at its settings by k3lite/experiments/precomputed.py, else
trained live); `python -m k3lite.bench balance` runs it longer from the CLI.
"""
from __future__ import annotations

import copy
import time
from dataclasses import replace
from typing import NamedTuple

import torch
import torch.nn.functional as F

from k3lite.model.config import BALANCING_METHODS, MoEConfig
from k3lite.model.moe import LatentMoE, selection_stability
from k3lite.base.rng import seeded

METHODS = tuple(BALANCING_METHODS)  # none, aux_loss, bias, quantile


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
    with seeded(seed):
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


def summary_rows(runs: dict[str, BalanceRun]) -> list[dict]:
    rows = []
    for m, r in runs.items():
        n = len(r.max_violation)
        tail = max(1, n // 10)
        rows.append(dict(method=m, first_viol=sum(r.max_violation[:tail]) / tail,
                         last_viol=sum(r.max_violation[-tail:]) / tail, eval_viol=r.eval_max_violation,
                         eval_loss=r.eval_loss, stability=r.stability, seconds=r.seconds))
    return rows


def training_claim(runs: dict[str, BalanceRun], names: dict[str, str] | None = None) -> str:
    """The page's sentence about the training run (panel c), built from `summary_rows(runs)`."""
    names = names or {}
    rows = {r["method"]: r for r in summary_rows(runs)}

    def ranked(key: str) -> str:
        return ", ".join(f"{names.get(m, m)} {rows[m][key]:.2f}" for m in sorted(rows, key=lambda m: rows[m][key]))

    text = (f"Max-violation over the first 10% of steps: {ranked('first_viol')}; over the last 10%: "
            f"{ranked('last_viol')}; on held-out tokens: {ranked('eval_viol')}.")
    if "none" in rows:
        r = rows["none"]
        trend = "grows" if r["last_viol"] > r["first_viol"] else "does not grow"
        text += (f" Without balancing the imbalance {trend} as the router learns ({r['first_viol']:.2f} -> "
                 f"{r['last_viol']:.2f}).")
    return text
