"""The KDA kernels: the step-by-step recurrence (reference) and the chunk-wise parallel kernel (UT transform),
plus the special cases (Gated DeltaNet, DeltaNet, GLA, Mamba-2, linear attention) on the same two kernels and
`MIXER_KERNELS` for the lab. The formulas, shapes and lineage are in the package docstring (`k3lite.model.kda`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

from k3lite.model.kda.chunk import chunk_carry, chunk_intra
from k3lite.model.kda.grad import ChunkGatedDelta


# ============================================================================ argument checks


def _check(q, k, v, g, beta, initial_state, *, g_shape: str = "channel", need_beta: bool = True):
    """Validate shapes against the fla conventions; raise ValueError naming the constraint."""
    if q.dim() != 4 or k.shape != q.shape:
        raise ValueError(f"q and k must both be (B, T, H, K); got q {tuple(q.shape)}, k {tuple(k.shape)}")
    B, T, H, K = q.shape
    if v.dim() != 4 or v.shape[:3] != (B, T, H):
        raise ValueError(f"v must be (B, T, H, V) = ({B}, {T}, {H}, V); got {tuple(v.shape)}")
    V = v.shape[-1]
    if g is not None:
        want = (B, T, H, K) if g_shape == "channel" else (B, T, H)
        if tuple(g.shape) != want:
            what = "per-channel (B, T, H, K)" if g_shape == "channel" else "per-head scalar (B, T, H)"
            raise ValueError(f"g must be the {what} log-decay {want}; got {tuple(g.shape)}")
    if need_beta and beta is None:
        raise ValueError("beta (B, T, H) is required by the delta rule")
    if beta is not None and tuple(beta.shape) != (B, T, H):
        raise ValueError(f"beta must be (B, T, H) = {(B, T, H)}; got {tuple(beta.shape)}")
    if initial_state is not None and tuple(initial_state.shape) != (B, H, K, V):
        raise ValueError(f"initial_state must be (B, H, K, V) = {(B, H, K, V)}; got {tuple(initial_state.shape)}")
    return B, T, H, K, V


# ============================================================================ recurrent (reference)


def gated_delta_step(q_t, k_t, v_t, g_t, beta_t, S, scale: float, delta: bool):
    """One token of the gated (delta) recurrence. Returns (o_t, S_t, correction_t).

    q_t, k_t: (B, H, K)  v_t: (B, H, V)  g_t: (B, H, K) or None  beta_t: (B, H) or None  S: (B, H, K, V)
    correction_t = v_t - S'^T k_t (delta rule) or v_t (no delta): what gets written along k_t.
    """
    if g_t is not None:
        S = S * g_t.exp()[..., None]  # decay each key channel: Diag(a_t) S    (B, H, K, V)
    correction = v_t - torch.einsum("bhk,bhkv->bhv", k_t, S) if delta else v_t  # (B, H, V)
    write = correction if beta_t is None else beta_t[..., None] * correction  # (B, H, V)
    S = S + k_t[..., :, None] * write[..., None, :]  # rank-1 write  (B, H, K, V)
    o_t = scale * torch.einsum("bhk,bhkv->bhv", q_t, S)  # (B, H, V)
    return o_t, S, correction


def _recurrent(q, k, v, g, beta, scale, initial_state, output_final_state, delta: bool):
    B, T, H, K = q.shape
    V = v.shape[-1]
    dtype = v.dtype
    q, k, v = q.float(), k.float(), v.float()
    g = None if g is None else g.float()
    beta = None if beta is None else beta.float()
    S = q.new_zeros(B, H, K, V) if initial_state is None else initial_state.float()
    outs = []
    for t in range(T):
        o_t, S, _ = gated_delta_step(q[:, t], k[:, t], v[:, t], None if g is None else g[:, t],
                          None if beta is None else beta[:, t], S, scale, delta)
        outs.append(o_t)
    o = torch.stack(outs, dim=1) if outs else v.new_zeros(B, 0, H, V)  # (B, T, H, V)
    return o.to(dtype), (S if output_final_state else None)


def recurrent_kda(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
    """Step-by-step KDA, the obviously-correct reference. Returns (o (B,T,H,V), S (B,H,K,V) or None).

    Per token: S = S * exp(g_t)[..., None]; S = S + beta_t k_t (v_t - S^T k_t)^T; o_t = scale S^T q_t.
    Computed in fp32; o is returned in v's dtype, the state in fp32.
    """
    _check(q, k, v, g, beta, initial_state)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return _recurrent(q, k, v, g, beta, scale, initial_state, output_final_state, delta=True)


def kda_step(q_t, k_t, v_t, g_t, beta_t, state=None, scale=None):
    """One decoding step of KDA: q_t, k_t, g_t (B, H, K); v_t (B, H, V); beta_t (B, H); state (B, H, K, V).

    Returns (o_t (B, H, V), new state). `state=None` starts from zeros.
    """
    if q_t.dim() != 3 or k_t.shape != q_t.shape or g_t.shape != q_t.shape:
        raise ValueError(f"q_t, k_t, g_t must be (B, H, K); got {tuple(q_t.shape)}, {tuple(k_t.shape)}, "
                         f"{tuple(g_t.shape)}")
    B, H, K = q_t.shape
    if v_t.dim() != 3 or v_t.shape[:2] != (B, H) or tuple(beta_t.shape) != (B, H):
        raise ValueError(f"v_t must be (B, H, V) and beta_t (B, H) with B, H = {B}, {H}")
    if state is None:
        state = q_t.new_zeros(B, H, K, v_t.shape[-1], dtype=torch.float32)
    if tuple(state.shape) != (B, H, K, v_t.shape[-1]):
        raise ValueError(f"state must be (B, H, K, V) = {(B, H, K, v_t.shape[-1])}; got {tuple(state.shape)}")
    scale = K**-0.5 if scale is None else scale
    o_t, S, _ = gated_delta_step(q_t.float(), k_t.float(), v_t.float(), g_t.float(), beta_t.float(), state.float(),
                      scale, delta=True)
    return o_t.to(v_t.dtype), S


class KDATrajectory(NamedTuple):
    """Everything a page needs to *show* the recurrence (small T only: states are T x K x V)."""

    o: torch.Tensor  # (B, T, H, V)
    state_norm: torch.Tensor  # (B, T, H) Frobenius norm of S_t after step t
    correction: torch.Tensor  # (B, T, H, V) v_t - S'^T k_t, the delta-rule correction at step t
    states: torch.Tensor | None  # (B, T, H, K, V) S_t after step t, when keep_states=True


def kda_trajectory(q, k, v, g, beta, scale=None, initial_state=None, keep_states=False) -> KDATrajectory:
    """Run the recurrence with the same `_step` as `recurrent_kda`, recording per-step quantities."""
    B, T, H, K, V = _check(q, k, v, g, beta, initial_state)
    if T == 0:
        raise ValueError("kda_trajectory needs T >= 1 tokens")
    scale = K**-0.5 if scale is None else scale
    q, k, v, g, beta = (x.float() for x in (q, k, v, g, beta))
    S = q.new_zeros(B, H, K, V) if initial_state is None else initial_state.float()
    outs, norms, corrections, states = [], [], [], []
    for t in range(T):
        o_t, S, c_t = gated_delta_step(q[:, t], k[:, t], v[:, t], g[:, t], beta[:, t], S, scale, delta=True)
        outs.append(o_t)
        corrections.append(c_t)
        norms.append(torch.linalg.vector_norm(S, dim=(-2, -1)))  # (B, H)
        if keep_states:
            states.append(S)
    return KDATrajectory(torch.stack(outs, 1), torch.stack(norms, 1), torch.stack(corrections, 1),
                         torch.stack(states, 1) if keep_states else None)


# ============================================================================ chunk-wise parallel


_GROUP_FLOATS = 1 << 17  # chunks go in groups whose (chunks x B*H x C x K) tensors stay cache-sized (512 KiB)


def chunk_gated_delta(q, k, v, g, beta, scale, initial_state, output_final_state, chunk_size: int, delta: bool):
    """Chunk-wise gated (delta) rule; g (B,T,H,K) or None (no decay), beta (B,T,H) or None (= 1).

    Inside a chunk of C tokens starting from state S0, with Gamma_t = exp(G_t), G = cumsum(g) in the chunk:
        S_t = Diag(Gamma_t) S0 + sum_{i<=t} Diag(Gamma_t / Gamma_i) k_i delta_i^T
    and the written vectors delta_i = beta_i (v_i - S'_i^T k_i) satisfy a unit-lower-triangular system
        (I + Diag(beta) A) Delta = Diag(beta) (V - (Gamma * K) S0),   A[t,i] = k_t^T Diag(Gamma_t/Gamma_i) k_i, i < t
    so with M = (I + Diag(beta) A)^-1 (the UT transform, by forward substitution):
        U = M Diag(beta) V,   W = M Diag(beta) (Gamma * K),   Delta = U - W S0          (WY representation)
        O = scale ((Q * Gamma) S0 + tril(Q Diag-decay K^T) Delta)
        S_C = Diag(Gamma_C) S0 + (K * Gamma_C / Gamma)^T Delta
    Without the delta rule (GLA, Mamba-2, linear attention) A is dropped: Delta = Diag(beta) V.
    Every exponent is a difference G_c - G_i with c >= i (<= 0), except the bounded, checked e^(-G) of the
    one-matmul Grams (chunks whose decay span exceeds the cap take `k3lite.model.kda.chunk._steep_grams`), so nothing
    overflows.
    Layout: chunk-major (N, B*H, C, .): the parallel part of every chunk (`k3lite.model.kda.chunk.chunk_intra`) is one
    batch of small matmuls; only the state carry (`chunk_carry`) loops over the chunks. Without gradients the
    chunks go in groups small enough to stay in cache (on a CPU the elementwise work is memory-bound), and
    `chunk_intra` reads each group as a strided view of the (B, T, H, .) inputs, so the layout change costs no
    pass of its own; with gradients `k3lite.model.kda.grad.ChunkGatedDelta` runs the same forward on a chunk-major
    copy (the backward reuses it) and a hand-written backward.
    """
    B, T, H, K = q.shape
    V = v.shape[-1]
    dtype = v.dtype
    C = max(1, min(chunk_size, T))  # a sequence shorter than one chunk is one chunk of its own length
    N = max(1, math.ceil(T / C))
    BH = B * H
    pad = N * C - T  # padded tokens: k = v = 0, g = 0 -> they write nothing and decay nothing

    if pad:  # k = v = 0 and g = 0 on padded tokens
        q, k, v = (F.pad(x, (0, 0, 0, 0, 0, pad)) for x in (q, k, v))
        g = None if g is None else F.pad(g, (0, 0, 0, 0, 0, pad))
        beta = None if beta is None else F.pad(beta, (0, 0, 0, pad))
    beta = None if beta is None else beta[..., None]  # (B, T, H, 1)

    def chunks(x, n0, n1):  # (B, T, H, D) -> (n, B*H, C, D) fp32, chunk-major, for chunks n0..n1-1 (a copy)
        if x is None:
            return None
        x = x[:, n0 * C : n1 * C].float()
        return x.reshape(B, n1 - n0, C, H, -1).permute(1, 0, 3, 2, 4).reshape(n1 - n0, BH, C, x.shape[-1])

    def chunk_view(x):  # the same as a (N, B, H, C, D) view, no copy: chunk_intra reads it in place
        return None if x is None else x.unflatten(1, (N, C)).permute(1, 0, 3, 2, 4)

    S = q.new_zeros(BH, K, V, dtype=torch.float32) if initial_state is None else \
        initial_state.float().reshape(BH, K, V).clone()
    group = max(1, _GROUP_FLOATS // (BH * C * max(K, V)))  # the layout change happens per group, in cache
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (q, k, v, g, beta, S)):
        o, S = ChunkGatedDelta.apply(*(chunks(x, 0, N) for x in (q, k, v, g, beta)), S, scale, delta, group)
        o = o.view(N, B, H, C, V).permute(1, 0, 3, 2, 4).reshape(B, N * C, H, V)[:, :T]
    else:
        o = v.new_empty(B, N * C, H, V, dtype=torch.float32)  # (B, T', H, V)
        views = [chunk_view(x) for x in (q, k, v, g, beta)]  # (N, B, H, C, .) each, made once
        o_view = chunk_view(o)  # (N, B, H, C, V)
        for n0 in range(0, N, group):
            n1 = min(n0 + group, N)
            it = chunk_intra(*(None if x is None else x[n0:n1].float() for x in views), delta, keep=False)
            o_grp, S = chunk_carry(it, n1 - n0, S, scale, delta, in_place=True)  # (n, BH, C, V)
            o_view[n0:n1].copy_(o_grp.view(n1 - n0, B, H, C, V))
            del it, o_grp  # free this group's buffers before the next group allocates: it reuses them, still in cache
        o = o[:, :T]  # (B, T, H, V)
    return o.to(dtype), (S.reshape(B, H, K, V) if output_final_state else None)


def chunk_kda(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False, chunk_size=64):
    """Chunk-wise parallel KDA (UT transform / WY representation), equal to `recurrent_kda` up to fp32 error.

    Any T (the tail chunk is padded), any chunk_size >= 1; vectorised over B, H and the chunks except
    for the short loop that carries the state from chunk to chunk. Returns (o (B,T,H,V), S or None).
    """
    _check(q, k, v, g, beta, initial_state)
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return chunk_gated_delta(q, k, v, g, beta, scale, initial_state, output_final_state, chunk_size, delta=True)


# ============================================================================ special cases
# Same two kernels, different gates. Each has its own tiny loop reference below (naive_*), written in
# the textbook form of that model, so the tests compare two independent formulations.


def _per_channel(g, K):
    return g[..., None].expand(*g.shape, K)  # scalar per head -> broadcast over the K channels


def recurrent_gdn(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
    """Gated DeltaNet (Yang et al. 2025, arXiv 2412.06464): KDA with one log-decay per head, g (B, T, H)."""
    _check(q, k, v, g, beta, initial_state, g_shape="head")
    return recurrent_kda(q, k, v, _per_channel(g, q.shape[-1]), beta, scale, initial_state, output_final_state)


def chunk_gdn(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False, chunk_size=64):
    """Gated DeltaNet, chunk-wise: `chunk_kda` with g (B, T, H) broadcast over K."""
    _check(q, k, v, g, beta, initial_state, g_shape="head")
    return chunk_kda(q, k, v, _per_channel(g, q.shape[-1]), beta, scale, initial_state, output_final_state,
                     chunk_size)


def recurrent_deltanet(q, k, v, beta, scale=None, initial_state=None, output_final_state=False):
    """DeltaNet (Schlag et al. 2021; Yang et al. 2024, arXiv 2406.06484): the delta rule with no decay."""
    _check(q, k, v, None, beta, initial_state)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return _recurrent(q, k, v, None, beta, scale, initial_state, output_final_state, delta=True)


def chunk_deltanet(q, k, v, beta, scale=None, initial_state=None, output_final_state=False, chunk_size=64):
    """DeltaNet, chunk-wise (the KDA chunk kernel with g = 0)."""
    _check(q, k, v, None, beta, initial_state)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return chunk_gated_delta(q, k, v, None, beta, scale, initial_state, output_final_state, chunk_size, delta=True)


def recurrent_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False):
    """Gated linear attention (Yang et al. 2024, arXiv 2312.06635): S = Diag(exp g_t) S + k v^T, no delta."""
    _check(q, k, v, g, None, initial_state, need_beta=False)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return _recurrent(q, k, v, g, None, scale, initial_state, output_final_state, delta=False)


def chunk_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False, chunk_size=64):
    """Gated linear attention, chunk-wise (the KDA chunk kernel without the UT transform)."""
    _check(q, k, v, g, None, initial_state, need_beta=False)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return chunk_gated_delta(q, k, v, g, None, scale, initial_state, output_final_state, chunk_size, delta=False)


def recurrent_mamba2(q, k, v, g, beta=None, scale=None, initial_state=None, output_final_state=False):
    """Mamba-2 / SSD-style mixer (Dao & Gu 2024, arXiv 2405.21060): scalar decay per head, no delta rule.

    S = exp(g_t) S + beta_t k_t v_t^T with g (B, T, H); q, k, v play C, B, x; beta the input step dt
    (None = 1).
    """
    _check(q, k, v, g, beta, initial_state, g_shape="head", need_beta=False)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return _recurrent(q, k, v, _per_channel(g, q.shape[-1]), beta, scale, initial_state, output_final_state,
                      delta=False)


def chunk_mamba2(q, k, v, g, beta=None, scale=None, initial_state=None, output_final_state=False, chunk_size=64):
    """Mamba-2-style mixer, chunk-wise (scalar decay broadcast over K, no UT transform)."""
    _check(q, k, v, g, beta, initial_state, g_shape="head", need_beta=False)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return chunk_gated_delta(q, k, v, _per_channel(g, q.shape[-1]), beta, scale, initial_state, output_final_state,
                  chunk_size, delta=False)


def recurrent_linear_attn(q, k, v, scale=None, initial_state=None, output_final_state=False):
    """Plain (causal, unnormalised) linear attention: S = S + k v^T, o = scale S^T q."""
    _check(q, k, v, None, None, initial_state, need_beta=False)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return _recurrent(q, k, v, None, None, scale, initial_state, output_final_state, delta=False)


def chunk_linear_attn(q, k, v, scale=None, initial_state=None, output_final_state=False, chunk_size=64):
    """Plain linear attention, chunk-wise."""
    _check(q, k, v, None, None, initial_state, need_beta=False)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return chunk_gated_delta(q, k, v, None, None, scale, initial_state, output_final_state, chunk_size, delta=False)


# ---------------------------------------------------------------------------- mixer kernels for the lab
# Uniform signature: kernel(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
# chunk_size=64) -> (o, S). `MIXER_INPUTS[name]` says what each one reads: g is "channel" (B,T,H,K),
# "head" (B,T,H) or None (ignored), beta is used or ignored. Ignored arguments may be passed as None.


def _mixer_linear(q, k, v, g=None, beta=None, **kw):
    return chunk_linear_attn(q, k, v, **kw)


def _mixer_mamba2(q, k, v, g, beta=None, **kw):
    return chunk_mamba2(q, k, v, g, beta, **kw)


def _mixer_deltanet(q, k, v, g=None, beta=None, **kw):
    return chunk_deltanet(q, k, v, beta, **kw)


def _mixer_gdn(q, k, v, g, beta, **kw):
    return chunk_gdn(q, k, v, g, beta, **kw)


def _mixer_kda(q, k, v, g, beta, **kw):
    return chunk_kda(q, k, v, g, beta, **kw)


MIXER_KERNELS = {
    "linear": _mixer_linear,
    "mamba2": _mixer_mamba2,
    "deltanet": _mixer_deltanet,
    "gdn": _mixer_gdn,
    "kda": _mixer_kda,
}
MIXER_INPUTS = {  # name -> (g kind, uses beta)
    "linear": (None, False),
    "mamba2": ("head", True),  # beta optional: input step size, None = 1
    "deltanet": (None, True),
    "gdn": ("head", True),
    "kda": ("channel", True),
}
