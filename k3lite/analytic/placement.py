"""Routing seen at K3 scale: where a token's k experts live when E experts are spread over G GPUs.

At 896 experts a tokens x experts heatmap is hairline static (16 of 896 cells per row) and the gate weights
of the chosen experts are all close to 1/k, so colour carries nothing. What matters at that scale is how many
GPUs each token has to reach (each one is a dispatch copy and a combine copy on the interconnect) and how even
the load is over many tokens. Placement is expert parallelism's: contiguous blocks of experts per GPU
(`k3lite.interconnect.expert_to_gpu`), and the uniform-routing expectation is the interconnect page's
(`k3lite.interconnect.expected_copies`), so the numbers here and there come from the same functions.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from k3lite.interconnect import expected_copies, expert_to_gpu

# Above this many routed experts the MoE page shows the GPU view instead of the tokens x experts heatmap.
K3_SCALE_EXPERTS = 128


class GpuView(NamedTuple):
    counts: np.ndarray  # (T, G) int: how many of token t's k experts live on GPU g
    touched: np.ndarray  # (T,) int: distinct GPUs token t reaches (own GPU included)
    expected_touched: float  # the same under uniform routing (exact expectation)
    n_gpus: int
    experts_per_gpu: float  # E / G (blocks differ by at most one when G does not divide E)


def gpu_view(topk_idx: np.ndarray, n_experts: int, n_gpus: int) -> GpuView:
    """Per-token GPU counts for routing decisions `topk_idx` (T, k) with E experts in blocks over G GPUs."""
    topk_idx = np.asarray(topk_idx)
    if topk_idx.ndim != 2:
        raise ValueError(f"topk_idx must be (tokens, k), got shape {topk_idx.shape}")
    if topk_idx.size and (topk_idx.min() < 0 or topk_idx.max() >= n_experts):
        raise ValueError(f"expert ids must be in [0, {n_experts}), got {topk_idx.min()}..{topk_idx.max()}")
    gpu_of = expert_to_gpu(n_experts, n_gpus)  # (E,); ValueError if G > E
    counts = np.zeros((topk_idx.shape[0], n_gpus), dtype=np.int64)  # (T, G)
    np.add.at(counts, (np.arange(topk_idx.shape[0])[:, None], gpu_of[topk_idx]), 1)
    k = topk_idx.shape[1]
    expected = expected_copies(n_experts, k, n_gpus, n_gpus).gpus_hit if k else 0.0
    return GpuView(counts, (counts > 0).sum(1), float(expected), n_gpus, n_experts / n_gpus)


def mean_load_per_expert(n_tokens: int, top_k: int, n_experts: int) -> float:
    """Assignments per expert if the load were perfectly even: N k / E. Near or below 1 max-violation says
    little about the router: with about one assignment per expert, chance alone gives some expert 2 or 3 and
    max(load)/mean(load) - 1 reads 1 or more even for a perfectly fair router; judge balance on many tokens."""
    if n_experts < 1:
        raise ValueError(f"n_experts must be >= 1, got {n_experts}")
    return n_tokens * top_k / n_experts


def chance_violation(n_tokens: int, top_k: int, n_experts: int, seeds: int = 16, seed: int = 0) -> float:
    """Max-violation a perfectly fair router would show on `n_tokens` tokens: each token takes `top_k` distinct
    experts uniformly at random; the mean over `seeds` draws of max(load) / mean(load) - 1. The floor any
    balancer is judged against at this many tokens (with few assignments per expert, chance alone is uneven)."""
    if not 0 < top_k <= n_experts:
        raise ValueError(f"top_k must be in 1..n_experts ({n_experts}), got {top_k}")
    if n_tokens < 1 or seeds < 1:
        raise ValueError("n_tokens and seeds must be >= 1")
    rng = np.random.default_rng(seed)
    mean = mean_load_per_expert(n_tokens, top_k, n_experts)
    worst = []
    for _ in range(seeds):
        picks = np.argpartition(rng.random((n_tokens, n_experts)), top_k - 1, axis=1)[:, :top_k]  # (N, k) distinct
        worst.append(np.bincount(picks.ravel(), minlength=n_experts).max() / mean - 1)
    return float(np.mean(worst))
