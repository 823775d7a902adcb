"""Small building blocks shared by every mixer and training loop: RMSNorm, SwiGLU, the lr schedule, helpers."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def exists(x) -> bool:
    return x is not None


def default(x, d):
    return x if x is not None else d


class RMSNorm(nn.Module):
    """y = x / rms(x) * weight (Zhang & Sennrich 2019)."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # computed in fp32, as x * rsqrt(mean(x^2) + eps) * weight; the fused op gives the same bits as the
        # five-op formula on CPU (tests/test_model.py) with one aten call instead of ~20 (`bench model --profile`)
        if x.dtype == torch.float32 and self.weight.dtype == torch.float32:
            return F.rms_norm(x, self.weight.shape, self.weight, self.eps)
        return F.rms_norm(x.float(), self.weight.shape, self.weight.float(), self.eps).to(x.dtype)


class SwiGLU(nn.Module):
    """FFN(x) = W_down(silu(W_gate x) * W_up x) (Shazeer 2020), no biases."""

    def __init__(self, dim: int, hidden_dim: int):
        super().__init__()
        self.w_gate = nn.Linear(dim, hidden_dim, bias=False)
        self.w_up = nn.Linear(dim, hidden_dim, bias=False)
        self.w_down = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


def warmup_cosine_lr(step: int, steps: int, peak: float, warmup: int) -> float:
    """The learning rate of every training loop here (lab and LM): linear warmup over `warmup` steps, then
    cosine decay to 10% of `peak` at `steps`. `step` is 0-based."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
