"""Attention Residuals (Kimi Team, arXiv 2603.15031): softmax over depth instead of a plain sum.

SKELETON (issue 2): parameter layout for params.py; issue 5 adds full / block variants.
"""
from __future__ import annotations

import torch
from torch import nn

from k3lite.nn import RMSNorm


class DepthAttention(nn.Module):
    """One sublayer's input: h = sum_i softmax_i(w . RMSNorm(v_i)) v_i; w zero-initialised."""

    def __init__(self, d_model: int, norm_eps: float = 1e-6):
        super().__init__()
        self.query = nn.Parameter(torch.zeros(d_model))  # pseudo-query w_l: zero -> uniform weights
        self.key_norm = RMSNorm(d_model, eps=norm_eps)
