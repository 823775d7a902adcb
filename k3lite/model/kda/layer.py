"""The KDA layer (`KimiDeltaAttention`) with its short convolution and decode cache, on the kernels of `k3lite.model.kda.ops`."""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from k3lite.model.config import KDAConfig
from k3lite.model.kda.ops import chunk_kda, kda_trajectory, recurrent_kda
from k3lite.model.nn import RMSNorm


def short_conv(x: torch.Tensor, weight: torch.Tensor, tail: torch.Tensor | None = None):
    """Causal depthwise conv: x (B, T, C), weight (C, 1, size), tail (B, size-1, C) or None (zeros).

    Returns (y (B, T, C), new tail). Computed as `size` shifted multiply-adds, not F.conv1d: on CPU the
    grouped conv1d is 2-3x slower for these sizes, and the multiply-adds give the same numbers.
    """
    B, T, C = x.shape
    size = weight.shape[-1]
    xx = torch.cat([x.new_zeros(B, size - 1, C) if tail is None else tail.to(x.dtype), x], dim=1)  # (B, size-1+T, C)
    w = weight.to(x.dtype)[:, 0, :].t()  # (size, C)
    y = xx[:, :T] * w[0]  # (B, T, C)
    for j in range(1, size):
        y = y.addcmul_(xx[:, j : j + T], w[j])
    return y, xx[:, xx.shape[1] - (size - 1) :]


class ShortConv(nn.Module):
    """Causal depthwise conv over time (kernel `size`), followed by SiLU in the layer.

    y_t = sum_j w[j] x_{t - size + 1 + j}; the last `size - 1` inputs are the decode cache (conv tail).
    """

    def __init__(self, channels: int, size: int):
        super().__init__()
        self.size = size
        self.weight = nn.Parameter(torch.empty(channels, 1, size))  # depthwise, no bias
        nn.init.normal_(self.weight, std=size**-0.5)

    def forward(self, x: torch.Tensor, tail: torch.Tensor | None = None):
        """x: (B, T, C); tail: (B, size-1, C) previous inputs or None (zeros). Returns (y, new tail)."""
        return short_conv(x, self.weight, tail)


def decay_log(f: torch.Tensor, A_log: torch.Tensor, lower_bound: float | None) -> torch.Tensor:
    """Per-channel log decay g (B, T, H, K) from the gate's pre-activation f (B, T, H, K) (dt_bias included).

    lower_bound None: g = -exp(A_log)[h] * softplus(f), anywhere in (-inf, 0] (Kimi Linear; fla's default).
    lower_bound L:    g = L * sigmoid(exp(A_log)[h] * f), in (L, 0): a channel keeps at least e^L of its
    state per token (K3's `gate_lower_bound` -5.0, e^-5 = 0.0067; fla's `fused_kda_gate(lower_bound=)`).
    """
    A = A_log.float().exp()[:, None]  # (H, 1)
    if lower_bound is None:
        return -A * F.softplus(f)
    return lower_bound * torch.sigmoid(A * f)


class KDACache(NamedTuple):
    """What a KDA layer keeps between decoding calls: a fixed-size state, whatever the context length."""

    state: torch.Tensor  # (B, H, K, V) fp32
    conv_tail: tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # q, k, v pre-conv inputs, each (B, size-1, H*K)

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.state, *self.conv_tail))


class KDAInputs(NamedTuple):
    """The kernel inputs the layer computes from x (after conv, SiLU, L2-norm and the gates)."""

    q: torch.Tensor  # (B, T, H, K) L2-normalised
    k: torch.Tensor  # (B, T, H, K) L2-normalised
    v: torch.Tensor  # (B, T, H, V)
    g: torch.Tensor  # (B, T, H, K) log decay, <= 0
    beta: torch.Tensor  # (B, T, H)
    conv_tail: tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class KDAOutput(NamedTuple):
    out: torch.Tensor  # (B, T, d_model)
    cache: KDACache | None  # when use_cache=True
    stats: dict  # g (B,T,H,K), beta (B,T,H); with trace=True also state_norm (B,T,H)


class KimiDeltaAttention(nn.Module):
    """KDA layer (Kimi Linear, arXiv 2510.26692; layout of fla/layers/kda.py).

        q, k, v = SiLU(ShortConv(W_q x)), SiLU(ShortConv(W_k x)), SiLU(ShortConv(W_v x))   (B, T, H, K|V)
        q, k    = L2Norm(q), L2Norm(k)  per head
        f       = W_f_up W_f_down x + dt_bias                              (B, T, H, K)
        g       = -exp(A_log)[h] * softplus(f)       (Kimi Linear: unbounded)  per-channel log decay
                = L * sigmoid(exp(A_log)[h] * f)     (K3: cfg.decay_lower_bound L = -5, decay in [e^L, 1))
        beta    = sigmoid(W_b x (+ b))                                     (B, T, H)
        o       = KDA(q, k, v, g, beta)                                    (B, T, H, V)
        out     = W_o( sigmoid(W_g x) * RMSNorm(o) )                       (B, T, d_model)
    W_g is low rank (W_g_up W_g_down, Kimi Linear) or one full matrix d -> H*V (K3, `output_gate_full_rank`).

    `A_init` (range of A = exp(A_log)) and `beta_init_logit` (the bias of W_b, with `cfg.beta_bias`) are
    initialisation only; the defaults are fla's. The lab starts from other values (`k3lite.experiments.lab`).
    """

    def __init__(self, d_model: int, cfg: KDAConfig, norm_eps: float = 1e-6,
                 A_init: tuple[float, float] = (1.0, 16.0), beta_init_logit: float = 0.0):
        super().__init__()
        self.cfg = cfg
        H, K, r = cfg.n_heads, cfg.head_dim, cfg.rank
        V = K
        self.d_model = d_model
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
        self.A_log = nn.Parameter(torch.log(torch.empty(H).uniform_(*A_init)))
        # dt_bias = softplus^-1(dt), dt log-uniform in [1e-3, 1e-1] per channel (the Mamba-2 / Gated DeltaNet
        # initialisation): decays start between ~0.2 and ~1 per token, spread across channels
        dt = torch.exp(torch.rand(H * K) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))
        self.b_proj = nn.Linear(d_model, H, bias=cfg.beta_bias)  # beta = sigmoid(b_proj x)
        if cfg.beta_bias:
            nn.init.constant_(self.b_proj.bias, beta_init_logit)
        # output gate: o = o_proj(sigmoid(W_g x) * RMSNorm(o)), W_g = g_up g_down (low rank) or g_proj (full)
        if cfg.output_gate_full_rank:
            self.g_proj = nn.Linear(d_model, H * V, bias=cfg.output_gate_bias)
        else:
            self.g_down = nn.Linear(d_model, r, bias=False)
            self.g_up = nn.Linear(r, H * V, bias=cfg.output_gate_bias)
        self.o_norm = RMSNorm(V, eps=norm_eps)
        self.o_proj = nn.Linear(H * V, d_model, bias=False)

    def output_gate_logits(self, gd: torch.Tensor) -> torch.Tensor:
        """The output gate's pre-sigmoid values (B, T, H*V) from `_inputs`' gate part `gd`."""
        if self.cfg.output_gate_full_rank:
            return gd if self.g_proj.bias is None else gd + self.g_proj.bias
        return self.g_up(gd)

    def kernel_inputs(self, x: torch.Tensor, cache: KDACache | None = None) -> KDAInputs:
        """Everything before the recurrence: x (B, T, d_model) -> q, k, v, g, beta (+ new conv tails)."""
        return self._inputs(x, cache)[0]

    def kernel_inputs_reference(self, x: torch.Tensor) -> KDAInputs:
        """`kernel_inputs` written module by module, as the paper describes the layer (teaching and tests; the
        layer runs the fused `_inputs`, tested equal to this):

            q_t = L2norm(SiLU(ShortConv(W_q x)))     k_t likewise     v_t = SiLU(ShortConv(W_v x))
            g_t = -exp(A_log) * softplus(W_f_up W_f_down x_t + dt_bias)   (log decay; K3 bounds it below)
            beta_t = sigmoid(W_b x_t)
        """
        B, T, _ = x.shape
        H, K = self.n_heads, self.head_dim
        q, q_tail = self.q_conv(self.q_proj(x))
        k, k_tail = self.k_conv(self.k_proj(x))
        v, v_tail = self.v_conv(self.v_proj(x))
        q = F.normalize(F.silu(q).view(B, T, H, K), dim=-1, eps=1e-6)
        k = F.normalize(F.silu(k).view(B, T, H, K), dim=-1, eps=1e-6)
        v = F.silu(v).view(B, T, H, K)
        f = (self.f_up(self.f_down(x)).float() + self.dt_bias.float()).view(B, T, H, K)
        g = decay_log(f, self.A_log, self.cfg.decay_lower_bound)
        beta = torch.sigmoid(self.b_proj(x).float())
        return KDAInputs(q, k, v, g, beta, (q_tail, k_tail, v_tail))

    def _inputs(self, x: torch.Tensor, cache: KDACache | None) -> tuple[KDAInputs, torch.Tensor]:
        """kernel_inputs and the output gate's first projection: g_down(x) (B, T, r), or g_proj(x) without its
        bias (B, T, H*V) when the gate is full rank.

        The six projections that read x (q, k, v, f_down, g_down | g_proj, b) run as one matmul over their
        stacked weights, and the three short convs as one over the stacked q|k|v channels: the same numbers as
        module by module, 3 aten calls instead of ~60 (`python -m k3lite.bench model --profile`).
        """
        B, T, _ = x.shape
        H, K, r = self.n_heads, self.head_dim, self.f_down.out_features
        g_in = self.g_proj if self.cfg.output_gate_full_rank else self.g_down
        w = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight, self.f_down.weight,
                       g_in.weight, self.b_proj.weight])  # (3HK + r + r|HV + H, d_model)
        qkv, f, gd, b = F.linear(x, w).split([3 * H * K, r, g_in.out_features, H], dim=-1)  # (B,T,.) each
        tail = None if cache is None else torch.cat(cache.conv_tail, dim=-1)  # (B, size-1, 3HK)
        conv_w = torch.cat([self.q_conv.weight, self.k_conv.weight, self.v_conv.weight])  # (3HK, 1, size)
        qkv, tail = short_conv(qkv, conv_w, tail)  # (B, T, 3HK)
        qkv = F.silu(qkv).view(B, T, 3 * H, K)
        qk = F.normalize(qkv[:, :, : 2 * H], dim=-1, eps=1e-6)  # (B, T, 2H, K) q and k heads, L2-normalised
        q, k, v = qk[:, :, :H], qk[:, :, H:], qkv[:, :, 2 * H :]  # (B, T, H, K|K|V)
        f = (self.f_up(f).float() + self.dt_bias.float()).view(B, T, H, K)  # (B, T, H, K)
        g = decay_log(f, self.A_log, self.cfg.decay_lower_bound)  # (B, T, H, K) log decay
        if self.b_proj.bias is not None:
            b = b + self.b_proj.bias
        beta = torch.sigmoid(b.float())  # (B, T, H)
        return KDAInputs(q, k, v, g, beta, tuple(tail.split(H * K, dim=-1))), gd

    def forward(self, x: torch.Tensor, cache: KDACache | None = None, use_cache: bool = False,
                mode: str = "chunk", trace: bool = False, chunk_size: int = 32) -> KDAOutput:
        """x: (B, T, d_model). With `cache` (from a previous call with use_cache=True) continue decoding.

        mode "chunk" (chunk_kda) or "recurrent" (recurrent_kda): the same numbers, different speed.
        chunk_size 32: the fastest on CPU in `python -m k3lite.bench kda` (any size gives the same numbers).
        trace=True also records state_norm (B, T, H), the Frobenius norm of S_t per step (an extra
        recurrent pass: meant for the small inputs the app shows).
        """
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must be (B, T, d_model={self.d_model}); got {tuple(x.shape)}")
        if mode not in ("chunk", "recurrent"):
            raise ValueError(f"mode must be 'chunk' or 'recurrent', got {mode!r}")
        B, T, _ = x.shape
        H, K = self.n_heads, self.head_dim
        if cache is not None and cache.state.shape != (B, H, K, K):
            raise ValueError(f"cache.state must be (B, H, K, V) = {(B, H, K, K)}; got {tuple(cache.state.shape)}")
        inp, gd = self._inputs(x, cache)
        S0 = cache.state if cache is not None else None
        # one token (decoding): the recurrent step is the cheaper way to the same numbers
        kernel = chunk_kda if mode == "chunk" and T > 1 else recurrent_kda
        kwargs = {"chunk_size": chunk_size} if kernel is chunk_kda else {}
        o, S = kernel(inp.q, inp.k, inp.v, inp.g, inp.beta, initial_state=S0, output_final_state=use_cache, **kwargs)
        stats = {"g": inp.g.detach(), "beta": inp.beta.detach()}
        if trace:
            with torch.no_grad():
                traj = kda_trajectory(inp.q, inp.k, inp.v, inp.g, inp.beta, initial_state=S0)
            stats["state_norm"] = traj.state_norm  # (B, T, H)
        gate = torch.sigmoid(self.output_gate_logits(gd)).view(B, T, H, K)  # (B, T, H, V)
        o = self.o_norm(o.to(x.dtype)) * gate  # (B, T, H, V)
        out = self.o_proj(o.reshape(B, T, H * K))  # (B, T, d_model)
        new_cache = KDACache(S, inp.conv_tail) if use_cache else None
        return KDAOutput(out, new_cache, stats)
