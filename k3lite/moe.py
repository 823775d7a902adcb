"""Mixture of experts: router, balancing (aux-loss / bias / quantile), LatentMoE, shared experts.

SKELETON (issue 2): parameter layout for params.py; issue 4 adds routing, balancing and dispatch.
Routed experts are stored as batched weights [E, in, out] so dispatch can use grouped matmuls.
"""
from __future__ import annotations

import torch
from torch import nn

from k3lite.config import MoEConfig
from k3lite.nn import RMSNorm, SwiGLU


class Router(nn.Module):
    """Scores for E routed experts from the *full* hidden state (sigmoid by default)."""

    def __init__(self, d_model: int, cfg: MoEConfig):
        super().__init__()
        self.cfg = cfg
        self.weight = nn.Parameter(torch.empty(cfg.n_routed_experts, d_model))
        nn.init.normal_(self.weight, std=d_model**-0.5)
        # selection-only bias (DeepSeek-V3 bias method) / running beta (quantile balancing): not trained by SGD
        self.register_buffer("bias", torch.zeros(cfg.n_routed_experts), persistent=True)


class RoutedExperts(nn.Module):
    """E SwiGLU experts with stacked weights: w_gate, w_up [E, dim, ffn]; w_down [E, ffn, dim]."""

    def __init__(self, n_experts: int, dim: int, ffn_dim: int):
        super().__init__()
        self.w_gate = nn.Parameter(torch.empty(n_experts, dim, ffn_dim))
        self.w_up = nn.Parameter(torch.empty(n_experts, dim, ffn_dim))
        self.w_down = nn.Parameter(torch.empty(n_experts, ffn_dim, dim))
        for w, fan_in in ((self.w_gate, dim), (self.w_up, dim), (self.w_down, ffn_dim)):
            nn.init.normal_(w, std=fan_in**-0.5)


class LatentMoE(nn.Module):
    """Route on the full hidden state; dispatch a latent (d_model -> latent_dim) when latent_dim > 0."""

    def __init__(self, d_model: int, cfg: MoEConfig, norm_eps: float = 1e-6):
        super().__init__()
        self.cfg = cfg
        self.router = Router(d_model, cfg)
        expert_dim = cfg.latent_dim or d_model
        if cfg.latent_dim:
            self.down_proj = nn.Linear(d_model, cfg.latent_dim, bias=False)  # fc1_latent_proj
            self.latent_norm = RMSNorm(cfg.latent_dim, eps=norm_eps) if cfg.latent_norm else None
            self.up_proj = nn.Linear(cfg.latent_dim, d_model, bias=False)  # fc2_latent_proj
        self.experts = RoutedExperts(cfg.n_routed_experts, expert_dim, cfg.expert_ffn_dim)
        if cfg.n_shared_experts:
            # always-on shared experts work on the full-d input; merged into one SwiGLU of n x size
            self.shared = SwiGLU(d_model, cfg.n_shared_experts * cfg.one_shared_ffn_dim)

    def forward(self, x, *args, **kwargs):  # filled in by issue 4
        raise NotImplementedError("LatentMoE.forward arrives with issue 4")
