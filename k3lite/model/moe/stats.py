"""What one MoE layer's routing looked like: per-expert load, max-violation, CV, entropy (`RoutingStats`).

Computed from a routing decision alone, so a page that shows only the routing needs no expert to run.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from k3lite.model.moe.router import RouterOutput


class RoutingStats(NamedTuple):
    """What one MoE layer's routing looked like; the Trace stores this per layer."""

    topk_idx: torch.Tensor  # (B, T, k) long
    topk_weight: torch.Tensor  # (B, T, k)
    scores: torch.Tensor  # (B, T, E) raw router scores
    load: torch.Tensor  # (E,) long: tokens routed to each expert (requested, before capacity drops)
    max_violation: float  # max(load) / mean(load) - 1   (0 = perfectly balanced)
    cv: float  # std(load) / mean(load), population std
    dropped: int  # (token, expert) assignments dropped by the capacity limit
    entropy: float  # entropy of the load distribution load/sum(load), nats; log(E) = uniform
    dispatch_dim: int  # elements sent per (token, expert) copy: latent_dim, or d_model for a classic MoE
    #                    (bytes on the wire: k3lite.interconnect.wire_bytes_per_token, for a stated deployment)



def routing_metrics(topk_idx: torch.Tensor, n_experts: int) -> tuple[torch.Tensor, float, float, float]:
    """(load (E,), max_violation, cv, entropy in nats) of a routing decision topk_idx (..., k)."""
    load = torch.bincount(topk_idx.reshape(-1), minlength=n_experts)  # (E,)
    if load.sum() == 0:
        return load, 0.0, 0.0, 0.0
    lf = load.double()
    mean = lf.mean()
    max_violation = float(lf.max() / mean - 1)
    cv = float(lf.std(unbiased=False) / mean)
    p = lf / lf.sum()
    entropy = float(-(p[p > 0] * p[p > 0].log()).sum())
    return load, max_violation, cv, entropy


def routing_stats(route: RouterOutput, shape: tuple[int, int], n_experts: int, dropped: int,
                  dispatch_dim: int) -> RoutingStats:
    """The RoutingStats of one layer's routing `route` (flat over N = B * T tokens; shape = (B, T)): what
    LatentMoE.forward reports, and all a page that shows only the routing needs (no expert has to run)."""
    load, max_violation, cv, entropy = routing_metrics(route.topk_idx, n_experts)
    return RoutingStats(topk_idx=route.topk_idx.view(*shape, -1), topk_weight=route.topk_weight.detach().view(*shape, -1),
                        scores=route.scores.detach().view(*shape, -1), load=load, max_violation=max_violation, cv=cv,
                        dropped=dropped, entropy=entropy, dispatch_dim=dispatch_dim)
