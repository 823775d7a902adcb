"""Loop references for the special cases of the KDA kernels, each in its textbook form (tests and teaching only).

Each is a plain Python loop over time, written independently of `k3lite.model.kda.ops`, so tests/model/test_kda.py
compares two formulations of the same model. Never used on a hot path.
"""
from __future__ import annotations

import torch

def naive_linear_attn(q, k, v, scale=None):
    """o_t = scale * sum_{i<=t} (q_t . k_i) v_i -- the quadratic (attention) form, no state at all."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = torch.einsum("bthk,bshk->bhts", q.float(), k.float()) * scale  # (B, H, T, S)
    scores = scores.tril()
    return torch.einsum("bhts,bshv->bthv", scores, v.float())  # (B, T, H, V)


def naive_mamba2(q, k, v, g, beta=None, scale=None):
    """o_t = scale * sum_{i<=t} exp(G_t - G_i) (q_t . k_i) beta_i v_i, G = cumsum(g) (SSD's quadratic form)."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    G = g.float().cumsum(1)  # (B, T, H)
    decay = (G.transpose(1, 2)[..., :, None] - G.transpose(1, 2)[..., None, :])  # (B, H, T, S)
    decay = torch.where(torch.ones_like(decay, dtype=torch.bool).tril(), decay, float("-inf")).exp()
    scores = torch.einsum("bthk,bshk->bhts", q.float(), k.float()) * scale * decay
    vb = v.float() if beta is None else v.float() * beta.float()[..., None]
    return torch.einsum("bhts,bshv->bthv", scores, vb)


def naive_gla(q, k, v, g, scale=None):
    """Loop: S_t = Diag(exp g_t) S_{t-1} + k_t v_t^T; o_t = scale S_t^T q_t."""
    B, T, H, K = q.shape
    scale = K**-0.5 if scale is None else scale
    S = torch.zeros(B, H, K, v.shape[-1])
    o = []
    for t in range(T):
        S = g[:, t].float().exp()[..., None] * S + torch.einsum("bhk,bhv->bhkv", k[:, t].float(), v[:, t].float())
        o.append(scale * torch.einsum("bhkv,bhk->bhv", S, q[:, t].float()))
    return torch.stack(o, 1)


def naive_gated_delta(q, k, v, a, beta, scale=None):
    """Loop with the explicit K x K transition: S_t = a_t (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T.

    a: (B, T, H) scalar decay in (0, 1] (Gated DeltaNet; a = 1 is DeltaNet). Note a_t commutes with
    the Householder-like factor only because it is a scalar: for KDA's Diag(a_t) the order matters.
    """
    B, T, H, K = q.shape
    scale = K**-0.5 if scale is None else scale
    S = torch.zeros(B, H, K, v.shape[-1])
    eye = torch.eye(K)
    o = []
    for t in range(T):
        kt, bt = k[:, t].float(), beta[:, t].float()[..., None, None]
        P = eye - bt * torch.einsum("bhi,bhj->bhij", kt, kt)  # (B, H, K, K)
        S = a[:, t].float()[..., None, None] * (P @ S) + bt * torch.einsum("bhk,bhv->bhkv", kt, v[:, t].float())
        o.append(scale * torch.einsum("bhkv,bhk->bhv", S, q[:, t].float()))
    return torch.stack(o, 1)


def naive_kda_matrix(q, k, v, g, beta, scale=None):
    """Loop with the explicit transition of KDA: S_t = (I - b_t k_t k_t^T) Diag(a_t) S_{t-1} + b_t k_t v_t^T."""
    B, T, H, K = q.shape
    scale = K**-0.5 if scale is None else scale
    S = torch.zeros(B, H, K, v.shape[-1])
    eye = torch.eye(K)
    o = []
    for t in range(T):
        kt, bt = k[:, t].float(), beta[:, t].float()[..., None, None]
        P = eye - bt * torch.einsum("bhi,bhj->bhij", kt, kt)  # (B, H, K, K)
        Dg = torch.diag_embed(g[:, t].float().exp())  # (B, H, K, K)
        S = P @ Dg @ S + bt * torch.einsum("bhk,bhv->bhkv", kt, v[:, t].float())
        o.append(scale * torch.einsum("bhkv,bhk->bhv", S, q[:, t].float()))
    return torch.stack(o, 1)
