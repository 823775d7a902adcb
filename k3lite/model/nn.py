"""Small building blocks shared by every mixer and training loop: RMSNorm, the gated FFNs (SwiGLU, K3's SiTU-GLU),
the lr schedule, helpers."""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from k3lite.model.config import FFN_ACTIVATIONS


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
        # five-op formula on CPU (tests/model/test_stack.py) with one aten call instead of ~20 (`bench model --profile`)
        if x.dtype == torch.float32 and self.weight.dtype == torch.float32:
            return F.rms_norm(x, self.weight.shape, self.weight, self.eps)
        return F.rms_norm(x.float(), self.weight.shape, self.weight.float(), self.eps).to(x.dtype)


# ------------------------------------------------------------------------------------------ gated FFNs


def swiglu_act(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """silu(gate) * up (Shazeer 2020): unbounded in both branches."""
    return F.silu(gate) * up


def situ_glu(gate: torch.Tensor, up: torch.Tensor, beta: float = 4.0, linear_beta: float = 25.0) -> torch.Tensor:
    """K3's SiTU-GLU (Kimi K3 report Eq. 12; `SituAndMul` in the released modeling_kimi_linear.py):

        b1 tanh(gate / b1) sigmoid(gate)  *  b2 tanh(up / b2)        b1 = 4, b2 = 25 (config.json)

    computed in fp32 and cast back, as the released code does. The gate branch lies in (-b1, b1) and the up
    branch in (-b2, b2), so every hidden unit is bounded by b1 b2 = 100 whatever the input; for small inputs
    it is silu(gate) * up (tanh(z / b) b -> z). gate, up (..., F) -> (..., F)."""
    g, u = gate.float(), up.float()
    return (beta * torch.tanh(g / beta) * torch.sigmoid(g) * (linear_beta * torch.tanh(u / linear_beta))).to(gate.dtype)


def situ_glu_reference(gate: torch.Tensor, up: torch.Tensor, beta: float = 4.0, linear_beta: float = 25.0) -> torch.Tensor:
    """Slow reference, element by element in Python floats, from the released `SituAndMul.forward` (sigmoid(g)
    written as (1 + tanh(g / 2)) / 2, which does not overflow)."""
    out = [beta * math.tanh(g / beta) * 0.5 * (1 + math.tanh(g / 2)) * (linear_beta * math.tanh(u / linear_beta))
           for g, u in zip(gate.double().reshape(-1).tolist(), up.double().reshape(-1).tolist())]
    return torch.tensor(out, dtype=torch.float64).view(gate.shape)


class GLUCurves(NamedTuple):
    z: torch.Tensor  # (n,) pre-activation values (gate = up = z)
    swiglu: torch.Tensor  # (n,) silu(z) * z
    situ: torch.Tensor  # (n,) situ_glu(z, z)
    bound: float  # b1 * b2: no SiTU hidden unit can exceed it


def glu_curves(lo: float = -60.0, hi: float = 60.0, n: int = 241, beta: float = 4.0,
               linear_beta: float = 25.0) -> GLUCurves:
    """SwiGLU vs SiTU-GLU along gate = up = z (the diagonal, where both grow fastest): what the bound changes."""
    if not (n >= 2 and hi > lo):
        raise ValueError(f"need n >= 2 points and hi > lo, got n={n}, lo={lo}, hi={hi}")
    z = torch.linspace(lo, hi, n, dtype=torch.float64)
    return GLUCurves(z, swiglu_act(z, z), situ_glu(z, z, beta, linear_beta), beta * linear_beta)


class GLUActivation:
    """The gated activation of an FFN, chosen by name (K3Config.hidden_act): act(gate, up) -> hidden."""

    def __init__(self, name: str = "swiglu", beta: float = 4.0, linear_beta: float = 25.0):
        if name not in FFN_ACTIVATIONS:
            raise ValueError(f"FFN activation must be one of {FFN_ACTIVATIONS}, got {name!r}")
        self.name, self.beta, self.linear_beta = name, beta, linear_beta

    def __call__(self, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        if self.name == "situ":
            return situ_glu(gate, up, self.beta, self.linear_beta)
        return swiglu_act(gate, up)

    def inplace(self, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        """The same numbers, reusing `gate`'s buffer where the activation allows (no-autograd expert paths)."""
        if self.name == "situ":
            return situ_glu(gate, up, self.beta, self.linear_beta)
        return F.silu(gate).mul_(up)

    def __repr__(self) -> str:
        return f"GLUActivation({self.name!r})" if self.name == "swiglu" else \
            f"GLUActivation('situ', beta={self.beta}, linear_beta={self.linear_beta})"


class SwiGLU(nn.Module):
    """FFN(x) = W_down(act(W_gate x, W_up x)), no biases; act = silu(g) * u (Shazeer 2020) by default, or K3's
    SiTU-GLU with `activation=GLUActivation("situ")` (same weights, same names)."""

    def __init__(self, dim: int, hidden_dim: int, activation: GLUActivation | None = None):
        super().__init__()
        self.w_gate = nn.Linear(dim, hidden_dim, bias=False)
        self.w_up = nn.Linear(dim, hidden_dim, bias=False)
        self.w_down = nn.Linear(hidden_dim, dim, bias=False)
        self.act = activation or GLUActivation("swiglu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(self.act(self.w_gate(x), self.w_up(x)))


def warmup_cosine_lr(step: int, steps: int, peak: float, warmup: int) -> float:
    """The learning rate of every training loop here (lab and LM): linear warmup over `warmup` steps, then
    cosine decay to 10% of `peak` at `steps`. `step` is 0-based."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
