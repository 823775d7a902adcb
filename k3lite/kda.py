"""Kimi Delta Attention (KDA): gated delta rule with a per-channel (diagonal) decay.

Kimi Linear tech report, arXiv 2510.26692. Reference conventions follow flash-linear-attention
(fla/ops/kda/naive.py): q, k [B,T,H,K]; v [B,T,H,V]; g [B,T,H,K] log-space decay; beta [B,T,H];
state [B,H,K,V].

    S_t = (I - b_t k_t k_t^T) Diag(a_t) S_{t-1} + b_t k_t v_t^T,   o_t = S_t^T q_t

SKELETON (issue 2): the parameter layout below is what params.py counts; issue 3 adds the kernels
and the forward pass. Keep parameter names and shapes, or update tests/test_params.py.
"""
from __future__ import annotations

import torch
from torch import nn

from k3lite.config import KDAConfig
from k3lite.nn import RMSNorm


class ShortConv(nn.Module):
    """Causal depthwise conv over time (kernel `size`), followed by SiLU in the layer."""

    def __init__(self, channels: int, size: int):
        super().__init__()
        self.size = size
        self.weight = nn.Parameter(torch.empty(channels, 1, size))  # depthwise, no bias
        nn.init.normal_(self.weight, std=size**-0.5)


class KimiDeltaAttention(nn.Module):
    """KDA layer: projections, short conv, low-rank per-channel decay gate, beta, gated RMSNorm output."""

    def __init__(self, d_model: int, cfg: KDAConfig, norm_eps: float = 1e-6):
        super().__init__()
        self.cfg = cfg
        H, K, r = cfg.n_heads, cfg.head_dim, cfg.rank
        V = K
        self.n_heads, self.head_dim = H, K
        self.q_proj = nn.Linear(d_model, H * K, bias=False)
        self.k_proj = nn.Linear(d_model, H * K, bias=False)
        self.v_proj = nn.Linear(d_model, H * V, bias=False)
        self.q_conv = ShortConv(H * K, cfg.conv_size)
        self.k_conv = ShortConv(H * K, cfg.conv_size)
        self.v_conv = ShortConv(H * V, cfg.conv_size)
        # decay gate, low rank: g = -exp(A_log)[h] * softplus(f_up(f_down(x)) + dt_bias)
        self.f_down = nn.Linear(d_model, r, bias=False)
        self.f_up = nn.Linear(r, H * K, bias=False)
        self.A_log = nn.Parameter(torch.log(torch.empty(H).uniform_(1, 16)))
        self.dt_bias = nn.Parameter(torch.zeros(H * K))
        self.b_proj = nn.Linear(d_model, H, bias=False)  # beta = sigmoid(b_proj x)
        # output gate, low rank: o = o_proj(sigmoid(g_up(g_down(x))) * RMSNorm(o))
        self.g_down = nn.Linear(d_model, r, bias=False)
        self.g_up = nn.Linear(r, H * V, bias=True)
        self.o_norm = RMSNorm(V, eps=norm_eps)
        self.o_proj = nn.Linear(H * V, d_model, bias=False)

    def forward(self, x, *args, **kwargs):  # filled in by issue 3
        raise NotImplementedError("KimiDeltaAttention.forward arrives with issue 3")
