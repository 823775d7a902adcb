"""LatentMoE, the layer: route on the full hidden state, run the experts in a latent_dim < d_model space, add the
always-on shared experts of the full width (NVIDIA, arXiv 2601.18089; K3's form, report Eq. 11).
"""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from k3lite.model.config import MoEConfig
from k3lite.model.moe.experts import RoutedExperts, capacity_for, dispatch_combine
from k3lite.model.moe.router import Router
from k3lite.model.moe.stats import RoutingStats, routing_stats
from k3lite.model.nn import GLUActivation, RMSNorm, SwiGLU


class MoEOutput(NamedTuple):
    out: torch.Tensor  # (B, T, d)
    aux_loss: torch.Tensor  # ()
    stats: RoutingStats | None  # None when called with stats=False (the model asks only when tracing)



class LatentMoE(nn.Module):
    """Route on the full hidden state; dispatch a latent (d_model -> latent_dim) when latent_dim > 0.

    latent_norm_at "dispatch":  y = up_proj( sum_j w_j * expert_j( RMSNorm(down_proj x) ) ) + shared(x)
    latent_norm_at "combine" (K3, report Eq. 11; `routed_expert_norm` in the released modeling_kimi_linear.py):
                                y = up_proj( RMSNorm( sum_j w_j * expert_j(down_proj x) ) ) + shared(x)
    With latent_dim = 0 the experts work on x itself (classic DeepSeek-style MoE). Shared experts always see
    the full-d input. forward(x (B, T, d), update_balance, stats) -> MoEOutput(out (B, T, d), aux_loss, stats);
    `stats=False` skips the RoutingStats (~100 small ops a layer that only a Trace or a page reads).
    """

    def __init__(self, d_model: int, cfg: MoEConfig, norm_eps: float = 1e-6, activation: GLUActivation | None = None):
        super().__init__()
        self.cfg = cfg
        self.d_model = d_model
        if cfg.latent_dim > d_model:
            raise ValueError(f"moe.latent_dim ({cfg.latent_dim}) must be <= d_model ({d_model})")
        self.router = Router(d_model, cfg)
        expert_dim = cfg.latent_dim or d_model
        if cfg.latent_dim:
            self.down_proj = nn.Linear(d_model, cfg.latent_dim, bias=False)  # fc1_latent_proj
            self.latent_norm = RMSNorm(cfg.latent_dim, eps=norm_eps) if cfg.latent_norm else None
            self.up_proj = nn.Linear(cfg.latent_dim, d_model, bias=False)  # fc2_latent_proj
        self.experts = RoutedExperts(cfg.n_routed_experts, expert_dim, cfg.expert_ffn_dim, activation)
        if cfg.n_shared_experts:
            # always-on shared experts work on the full-d input; merged into one gated FFN of n x size (as K3's code)
            self.shared = SwiGLU(d_model, cfg.n_shared_experts * cfg.one_shared_ffn_dim, activation)

    @property
    def dispatch_dim(self) -> int:
        return self.cfg.latent_dim or self.d_model

    def forward(self, x: torch.Tensor, update_balance: bool = False, stats: bool = True) -> MoEOutput:
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"LatentMoE expects x (B, T, {self.d_model}), got {tuple(x.shape)}")
        cfg = self.cfg
        b, t, d = x.shape
        flat = x.reshape(b * t, d)  # (N, d)
        route = self.router(flat, update_balance)  # flat (N, k) / (N, E)
        h = flat
        if cfg.latent_dim:
            h = self.down_proj(flat)  # (N, l)
            if self.latent_norm is not None and cfg.latent_norm_at == "dispatch":
                h = self.latent_norm(h)
        capacity = capacity_for(b * t, cfg.top_k, cfg.n_routed_experts, cfg.capacity_factor)
        res = dispatch_combine(self.experts, h, route.topk_idx, route.topk_weight, capacity)  # (N, l)
        if cfg.latent_dim:
            routed = res.out  # (N, l) the aggregated expert output
            if self.latent_norm is not None and cfg.latent_norm_at == "combine":
                routed = self.latent_norm(routed)
            y = self.up_proj(routed)  # (N, d)
        else:
            y = res.out  # (N, d)
        if cfg.n_shared_experts:
            y = y + self.shared(flat)
        if not stats:
            return MoEOutput(y.view(b, t, d), route.aux_loss, None)
        return MoEOutput(y.view(b, t, d), route.aux_loss, routing_stats(route, (b, t), cfg.n_routed_experts,
                                                                        res.dropped, self.dispatch_dim))
