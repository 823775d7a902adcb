"""The lab's sequence mixers, one per update rule, and the initialisation that lets them learn in a CPU budget.

The recurrent mixers share one skeleton (q, k, v projections; kernel-4 causal conv + SiLU; L2-normalised q, k;
per-head RMSNorm; sigmoid output gate) and differ only in the state update, all run by the kernels of
`k3lite.model.kda` (no copies here):

    linear    S_t = S_{t-1} + k_t v_t^T                            (Katharopoulos et al. 2020)
    mamba2    S_t = a_t S_{t-1} + dt_t k_t v_t^T, a_t = exp(-A dt_t) scalar/head (Mamba-2 SSD: no delta)
    deltanet  S_t = (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T     (Schlag et al. 2021; Yang et al. 2024)
    gdn       S_t = (I - b_t k_t k_t^T) a_t S_{t-1} + b_t k_t v_t^T (Gated DeltaNet, arXiv 2412.06464)
    kda       S_t = (I - b_t k_t k_t^T) Diag(a_t) S_{t-1} + b_t k_t v_t^T, a_t per channel (Kimi Linear)
    o_t = S_t^T q_t * K^-0.5

`attention` is causal softmax attention (F.scaled_dot_product_attention) with the same projections, conv and
output gate and no positional encoding (Kimi Linear's MLA layers are NoPE too; the conv gives local order).

`make_mixer` in `k3lite.experiments.lab` picks one per layer; `LabModel` there stacks them.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from k3lite.base.rng import seeded
from k3lite.model.config import K3_DECAY_LOWER_BOUND, KDAConfig
from k3lite.model.kda.layer import KimiDeltaAttention, short_conv
from k3lite.model.kda.ops import MIXER_KERNELS
from k3lite.model.nn import RMSNorm


RECURRENT_MIXERS: tuple[str, ...] = ("linear", "mamba2", "deltanet", "gdn", "kda")
# Initialisations (`LabConfig.init`): "lab" = the small write strength and slow decays below (why: their
# comments); "reference" = fla's layer defaults (beta ~ 0.5, A ~ U(1, 16)), for the init ablation.
INITS: tuple[str, ...] = ("lab", "reference")
REFERENCE_A_INIT = (1.0, 16.0)  # fla's KimiDeltaAttention / GatedDeltaNet: A = exp(A_log) ~ U(1, 16)
# Initial write strength of the delta rule, as a logit: beta = sigmoid(-3) ~ 0.05 at init (was 0.5).
# Measured: with beta ~ 0.5 at init, DeltaNet, GDN and KDA sat at chance on MQAR (DeltaNet T=128/32 pairs:
# 1.1% after 400 steps at lr 1e-2; the same with the recurrent reference kernel, so not a gradient bug; T=256/64
# pairs: 0.4% after 600 steps) while linear attention learned. With 0.05 DeltaNet reaches 96% by step 300 on
# the same task. Why, as far as we checked: every delta-rule write also erases what earlier writes stored along
# its key, a share beta(2 - beta)/K per write for random unit keys in K dims, so a pair keeps about
# (1 - beta(2 - beta)/K)^n of itself after n later writes (filler and queries included): 22% after 64 writes
# at beta 0.5, K 32, but 82% at 0.05. At init nothing has learned which positions deserve a write, so the
# large beta wipes the pairs before a gradient can say which to keep; a small beta starts the delta rule close
# to a scaled linear attention, which learns. (The initial keys are not unusually aligned: mean cosine of
# neighbouring keys 0.09, of random pairs 0.07, at T=128.) Test: tests/experiments/test_lab_mixers.py.
BETA_INIT_LOGIT = -3.0
# Initial decay rate of Mamba-2 / GDN / KDA: A = exp(A_log) ~ U(DECAY_A_INIT), log-decay g = -A * softplus(...).
# fla initialises A ~ U(1, 16) (KimiDeltaAttention, GatedDeltaNet); with dt ~ logU(1e-3, 0.1) the median channel
# then keeps exp(-8.5 * 0.01 * 256) ~ 3e-10 of a write after 256 tokens. Measured on MQAR T=256 / 64 pairs
# (d 64, 2 heads, lr 1e-2, seed 0): with fla's init GDN and KDA sat at chance (0.4-0.5%) in every seed, while
# DeltaNet (the same delta rule, no decay) reached 95.3% at step 600 and KDA with A ~ U(0.01, 0.1) left chance
# at step ~250 and reached 58% (still rising). So, as with beta, every decaying mixer starts close to its
# non-decaying parent (median channel keeps ~87% of a write over 256 tokens) and learns where to forget. The same init for
# all three keeps the comparison fair. Test: tests/experiments/test_lab_mixers.py.
DECAY_A_INIT = (0.01, 0.1)


def causal_conv(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Depthwise causal conv over time, x (B, T, C), weight (C, 1, W): the library's `short_conv` (no cache)."""
    return short_conv(x, weight)[0]


def _inv_softplus_dt(n: int) -> torch.Tensor:
    """dt_bias init of Mamba-2 / GDN / KDA (fla): softplus(dt_bias) = dt ~ logU(1e-3, 1e-1)."""
    dt = torch.exp(torch.rand(n) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
    return dt + torch.log(-torch.expm1(-dt))


def _decay_init(kind_init: str) -> tuple[float, float]:
    return DECAY_A_INIT if kind_init == "lab" else REFERENCE_A_INIT


class RecurrentMixer(nn.Module):
    """Linear attention / Mamba-2 / DeltaNet / GDN: one skeleton, the state update picked by `kind`.

    (KDA is the library's own layer, `LabKDA`.) Shapes: x (B, T, d) -> q, k (B, T, H, K), v (B, T, H, V);
    gate g (B, T, H) log-decay <= 0; beta (B, T, H) in (0, 1). The kernel returns o (B, T, H, V).
    Built from the library's pieces: `short_conv`, `RMSNorm`, the kernels of `k3lite.model.kda.ops`.
    """

    def __init__(self, d_model: int, n_heads: int, kind: str, conv_size: int = 4, chunk_size: int = 32,
                 init: str = "lab"):
        super().__init__()
        if kind not in RECURRENT_MIXERS or kind == "kda":
            raise ValueError(f"kind must be one of {tuple(m for m in RECURRENT_MIXERS if m != 'kda')} "
                             f"(kda is LabKDA), got {kind!r}")
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.kind, self.chunk_size = kind, chunk_size
        H, K = n_heads, d_model // n_heads
        self.n_heads, self.head_dim = H, K
        self.qkv_proj = nn.Linear(d_model, 3 * H * K, bias=False)
        self.conv_weight = nn.Parameter(torch.randn(3 * H * K, 1, conv_size) * conv_size**-0.5)
        self.has_delta = kind in ("deltanet", "gdn")
        if self.has_delta:
            # beta = sigmoid(b_proj x + b): the bias starts at BETA_INIT_LOGIT (beta ~ 0.05), see its comment
            self.b_proj = nn.Linear(d_model, H, bias=True)
            nn.init.constant_(self.b_proj.bias, BETA_INIT_LOGIT if init == "lab" else 0.0)
        if kind in ("mamba2", "gdn"):  # scalar decay per head: a_t = exp(-exp(A_log) softplus(W_a x + dt_bias))
            self.a_proj = nn.Linear(d_model, H, bias=False)
            self.dt_bias = nn.Parameter(_inv_softplus_dt(H))
            self.A_log = nn.Parameter(torch.log(torch.empty(H).uniform_(*_decay_init(init))))
        self.o_norm = RMSNorm(K)
        self.gate_proj = nn.Linear(d_model, H * K, bias=False)  # sigmoid output gate
        self.o_proj = nn.Linear(H * K, d_model, bias=False)

    def gates(self, x: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Log-decay g and beta in the shapes `k3lite.model.kda.MIXER_INPUTS` names for this kind.

        mamba2 / gdn: g (B, T, H) one per head; linear / deltanet: None.
        beta (B, T, H): the delta rule's write strength sigmoid(W_b x) for deltanet / gdn; for mamba2
        the SSD input step dt (S = exp(-A dt) S + dt k v^T); None for linear attention.
        """
        g = beta = None
        if self.kind in ("mamba2", "gdn"):
            dt = F.softplus(self.a_proj(x) + self.dt_bias)  # (B, T, H)
            g = -self.A_log.exp() * dt  # (B, T, H)
            if self.kind == "mamba2":
                beta = dt
        if self.has_delta:
            beta = self.b_proj(x).sigmoid()  # (B, T, H)
        return g, beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        H, K = self.n_heads, self.head_dim
        qkv = F.silu(causal_conv(self.qkv_proj(x), self.conv_weight))  # (B, T, 3HK)
        q, k, v = qkv.view(B, T, 3, H, K).unbind(2)  # each (B, T, H, K)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        g, beta = self.gates(x)
        o = run_kernel(self.kind, q, k, v, g, beta, chunk_size=self.chunk_size)  # (B, T, H, K)
        o = self.o_norm(o).reshape(B, T, H * K) * self.gate_proj(x).sigmoid()  # (B, T, HK)
        return self.o_proj(o)


def lab_kda_config(n_heads: int, head_dim: int, conv_size: int = 4) -> KDAConfig:
    """The lab's KDA: K3's released layer form (decay bounded below by e^-5 per token, full-rank output gate
    without bias; `k3lite.model.config.K3_DECAY_LOWER_BOUND`) plus a learned bias on beta for the lab's init."""
    return KDAConfig(n_heads=n_heads, head_dim=head_dim, conv_size=conv_size, decay_lower_bound=K3_DECAY_LOWER_BOUND,
                     output_gate_full_rank=True, output_gate_bias=False, beta_bias=True)


class LabKDA(nn.Module):
    """The lab's KDA mixer: the library's `KimiDeltaAttention` (the layer every other page runs), K3's form.

    init "lab": beta starts at sigmoid(BETA_INIT_LOGIT) ~ 0.05 and each channel's initial log decay is drawn
    exactly as Mamba-2's and GDN's (g0 = -A dt, A ~ U(DECAY_A_INIT), dt ~ logU(1e-3, 0.1)), written into K3's
    bounded form as A_log = 0, dt_bias = logit(-g0 / |L|): so g = L sigmoid(f + dt_bias) = g0 at f = 0.
    init "reference": the library layer's own (fla's) initialisation, untouched.
    """

    def __init__(self, d_model: int, n_heads: int, conv_size: int = 4, chunk_size: int = 32, init: str = "lab"):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        H, K = n_heads, d_model // n_heads
        self.chunk_size = chunk_size
        self.layer = KimiDeltaAttention(d_model, lab_kda_config(H, K, conv_size),
                                        beta_init_logit=BETA_INIT_LOGIT if init == "lab" else 0.0)
        if init == "lab":
            with torch.no_grad():
                g0 = torch.empty(H).uniform_(*DECAY_A_INIT)[:, None] * F.softplus(_inv_softplus_dt(H * K).view(H, K))
                self.layer.A_log.zero_()
                self.layer.dt_bias.copy_(torch.logit(g0 / abs(K3_DECAY_LOWER_BOUND)).flatten())

    def gates(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-decay g (B, T, H, K) and beta (B, T, H), as the layer computes them."""
        inp = self.layer.kernel_inputs(x)
        return inp.g, inp.beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x, chunk_size=self.chunk_size).out  # (B, T, d)


def saturated_decay_share(head_dim: int = 16, n_heads: int = 2, seeds: tuple[int, ...] = (0, 1, 2),
                          grad_floor: float = 1e-6) -> float:
    """Share of KDA channels whose decay gate starts saturated when K3's bounded form g = L sigmoid(A (f + dt_bias))
    starts from fla's default init (A ~ U(1, 16), dt ~ logU(1e-3, 0.1)): at f = 0 the slope dg/df = L A s (1 - s)
    (s the sigmoid) is below `grad_floor` in magnitude, so the decay sits at ~1 and gradients barely move it. With
    the lab's init (`LabKDA`, A = 1 and the same initial decays as Mamba-2 / GDN) the slopes are |g0| (1 - |g0|/5).
    Mean over the layers built with `seeds` (A is drawn per head, so one layer of 2 heads is a noisy sample)."""
    shares = []
    for seed in seeds:
        with seeded(seed):
            layer = LabKDA(n_heads * head_dim, n_heads, init="reference").layer
        with torch.no_grad():
            A = layer.A_log.exp()[:, None]  # (H, 1)
            sig = torch.sigmoid(A * layer.dt_bias.view(n_heads, head_dim))  # (H, K)
            slope = abs(layer.cfg.decay_lower_bound) * A * sig * (1 - sig)
        shares.append(float((slope < grad_floor).float().mean()))
    return sum(shares) / len(shares)


def run_kernel(kind: str, q, k, v, g, beta, chunk_size: int = 32) -> torch.Tensor:
    """Call the shared kernel for `kind` from `k3lite.model.kda.MIXER_KERNELS` and return o (B, T, H, V)."""
    o, _ = MIXER_KERNELS[kind](q, k, v, g, beta, chunk_size=chunk_size)  # (B, T, H, V), final state unused
    return o


class SoftmaxAttention(nn.Module):
    """Causal softmax attention with the recurrent mixers' projections, conv and output gate; NoPE."""

    def __init__(self, d_model: int, n_heads: int, conv_size: int = 4):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        H, K = n_heads, d_model // n_heads
        self.n_heads, self.head_dim = H, K
        self.qkv_proj = nn.Linear(d_model, 3 * H * K, bias=False)
        self.conv_weight = nn.Parameter(torch.randn(3 * H * K, 1, conv_size) * conv_size**-0.5)
        self.gate_proj = nn.Linear(d_model, H * K, bias=False)
        self.o_proj = nn.Linear(H * K, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        H, K = self.n_heads, self.head_dim
        qkv = F.silu(causal_conv(self.qkv_proj(x), self.conv_weight))  # (B, T, 3HK)
        q, k, v = qkv.view(B, T, 3, H, K).permute(2, 0, 3, 1, 4)  # each (B, H, T, K)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, K)
        o = o.transpose(1, 2).reshape(B, T, H * K) * self.gate_proj(x).sigmoid()  # (B, T, HK)
        return self.o_proj(o)
