"""The KDA kernels: the step-by-step recurrence (reference) and the chunk-wise parallel kernel (UT transform),
plus the special cases (Gated DeltaNet, DeltaNet, GLA, Mamba-2, linear attention) on the same two kernels and
`MIXER_KERNELS` for the lab. The formulas, shapes and lineage are in the package docstring (`k3lite.kda`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F


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


_SUB = 32  # rows per block inside a chunk for the two-level factorisation of the decayed Gram matrices
_CAP = 80.0  # largest exponent we let a factor reach (e^80 * K is still far below fp32's max, 3.4e38)


def _exact_blocks(q, k, G):
    """Exact decayed Grams of a few small blocks: (n, s, K) each -> (n, 2, s, s) for (q k^T, k k^T).

    Entry [c, i] = sum_d x_c[d] k_i[d] exp(G_c[d] - G_i[d]) for i <= c; the exponent is masked to -inf
    above the diagonal *before* exp, so nothing overflows however strong the decay.
    """
    s = q.shape[-2]
    diff = G[:, :, None, :] - G[:, None, :, :]  # (n, s, s, K)  G_c - G_i
    causal = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
    decay = torch.where(causal[:, :, None], diff, float("-inf")).exp()  # (n, s, s, K)
    qk = torch.stack([q, k], dim=1)  # (n, 2, s, K)
    return (qk[:, :, :, None, :] * k[:, None, None, :, :] * decay[:, None]).sum(-1)  # (n, 2, s, s)


def _decayed_grams(q, k, G, sub: int = _SUB, cap: float = _CAP):
    """Both intra-chunk matrices of the chunk algorithm for chunks longer than `sub`:

        Aqk[c, i] = sum_d q_c[d] k_i[d] exp(G_c[d] - G_i[d])   for c >= i   (causal, with diagonal)
        Akk[c, i] = sum_d k_c[d] k_i[d] exp(G_c[d] - G_i[d])   for c >  i   (strictly lower)

    q, k, G: (..., C, K), G the within-chunk cumulative log-decay (non-increasing in c).
    The one-matmul factorisation (q * e^G) @ (k * e^-G)^T overflows: e^-G can be e^+1000. Instead cut
    the chunk into blocks of `sub` rows; for row c in block p (first row r_p) and column i in block j
    (last row e_j), split the exponent at those two points:
        exp(G_c - G_i) = exp(G_c - G_{r_p}) * exp(G_{r_p} - G_{e_j}) * exp(G_{e_j} - G_i)
    The outer factors are always <= 1, and so is the middle one when j < p (r_p is after e_j). Only on a
    diagonal block (j = p) is the middle factor >= 1, exp(the block's own decay span); where that span
    exceeds `cap` the block is recomputed exactly (`_exact_blocks`). Blocks j > p are zero.
    """
    *lead, C, K = q.shape
    s = min(sub, C)
    nb = math.ceil(C / s)
    Cp = nb * s
    if Cp != C:  # pad rows: q = k = 0 contribute nothing; G repeats its last value (no extra decay)
        q, k = F.pad(q, (0, 0, 0, Cp - C)), F.pad(k, (0, 0, 0, Cp - C))
        G = torch.cat([G, G[..., -1:, :].expand(*lead, Cp - C, K)], dim=-2)
    G_blk = G.view(*lead, nb, s, K)  # (..., nb, s, K)
    G_first, G_last = G_blk[..., 0, :], G_blk[..., -1, :]  # (..., nb, K)
    e_left = (G_blk - G_first[..., None, :]).exp()  # (..., nb, s, K) <= 1
    left = torch.cat([q.view(*lead, nb, s, K) * e_left, k.view(*lead, nb, s, K) * e_left], dim=-2)  # (..., nb, 2s, K)
    base = k.view(*lead, nb, s, K) * (G_last[..., None, :] - G_blk).exp()  # (..., nb, s, K) <= 1
    mid = (G_first[..., :, None, :] - G_last[..., None, :, :]).clamp(max=cap)  # (..., nb_p, nb_j, K)
    below = torch.ones(nb, nb, dtype=torch.bool, device=q.device).tril()
    mid = torch.where(below[:, :, None], mid, float("-inf")).exp()  # blocks j > p -> 0
    right = (mid[..., :, :, None, :] * base[..., None, :, :, :]).reshape(*lead, nb, Cp, K)  # (..., nb_p, Cp, K)
    P = left @ right.transpose(-1, -2)  # (..., nb, 2s, Cp)
    bad = (G_first - G_last).amax(-1) > cap  # (..., nb) blocks whose own decay span is too large
    if bad.any():
        m, p = bad.reshape(-1, nb).nonzero(as_tuple=True)
        exact = _exact_blocks(q.reshape(-1, nb, s, K)[m, p], k.reshape(-1, nb, s, K)[m, p],
                              G_blk.reshape(-1, nb, s, K)[m, p])  # (n, 2, s, s)
        P.view(-1, nb, 2, s, nb, s)[m, p, :, :, p, :] = exact
    P = P.view(*lead, nb, 2, s, Cp).transpose(-4, -3).reshape(*lead, 2, Cp, Cp)  # (..., 2, Cp, Cp)
    return P[..., 0, :C, :C], P[..., 1, :C, :C]  # causal masks applied by the caller


_GROUP_FLOATS = 1 << 16  # chunks are processed in groups whose (chunks x B*H x C x K) tensors stay cache-sized


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
    Every exponent is a difference G_c - G_i with c >= i (<= 0), except the bounded, checked one
    inside the Gram factorisation (see `_decayed_grams`), so nothing overflows.
    Layout: chunk-major (N, B*H, C, .); everything but the state carry is vectorised over a group of
    chunks small enough to stay in cache (on a CPU the elementwise work is memory-bound).
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

    def chunks(x, n0, n1):  # (B, T, H, D) -> (n, B*H, C, D) fp32, chunk-major, for chunks n0..n1-1
        x = x[:, n0 * C : n1 * C].float()
        return x.reshape(B, n1 - n0, C, H, -1).permute(1, 0, 3, 2, 4).reshape(n1 - n0, BH, C, x.shape[-1])

    S = q.new_zeros(BH, K, V, dtype=torch.float32) if initial_state is None else \
        initial_state.float().reshape(BH, K, V).clone()
    in_place = not (torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (q, k, v, g, beta, S)))
    group = max(1, _GROUP_FLOATS // (BH * C * max(K, V)))  # the layout change happens per group, in cache
    outs = []
    for n0 in range(0, N, group):
        n1 = min(n0 + group, N)
        o, S = _chunk_group(chunks(q, n0, n1), chunks(k, n0, n1), chunks(v, n0, n1),
                            None if g is None else chunks(g, n0, n1), None if beta is None else chunks(beta, n0, n1),
                            S, scale, delta, in_place)
        outs.append(o.view(n1 - n0, B, H, C, V).permute(1, 0, 3, 2, 4).reshape(B, (n1 - n0) * C, H, V))
    o = (torch.cat(outs, dim=1) if len(outs) > 1 else outs[0])[:, :T]  # (B, T, H, V)
    return o.to(dtype), (S.reshape(B, H, K, V) if output_final_state else None)


def _chunk_group(q, k, v, g, beta, S, scale: float, delta: bool, in_place: bool):
    """`_chunk` on n consecutive chunks, (n, BH, C, .) each, from the incoming state S (BH, K, V)."""
    n, BH, C, K = q.shape
    V = v.shape[-1]
    q, k, v = q.reshape(n * BH, C, K), k.reshape(n * BH, C, K), v.reshape(n * BH, C, V)  # (M, C, .)
    if g is not None:
        G = g.reshape(n * BH, C, K).cumsum(1)  # (M, C, K) log decay since the chunk start
    else:
        G = torch.zeros_like(k)
    G_end = G[:, -1:, :]  # (M, 1, K)
    eG = G.exp()  # (M, C, K) decay since the chunk start, <= 1
    qG, kG = q * eG, k * eG  # (M, C, K)
    k_dec = k * (G_end - G).exp()  # (M, C, K) k_i decayed to the chunk end, <= 1

    if C <= _SUB:  # one block: exp(G_c - G_i) = exp(G_c - 0) * exp(G_end - G_i) * exp(0 - G_end)
        right_t = (k_dec * (-G_end).clamp(max=_CAP).exp()).transpose(-1, -2)  # (M, K, C)
        Aqk, A = torch.bmm(qG, right_t), torch.bmm(kG, right_t)  # (M, C, C)
        bad = (-G_end[:, 0, :]).amax(-1) > _CAP  # (M,) chunks whose decay span is too large
        if bad.any():
            idx = bad.nonzero()[:, 0]
            exact = _exact_blocks(q[idx], k[idx], G[idx])  # (n_bad, 2, C, C)
            Aqk, A = Aqk.index_copy(0, idx, exact[:, 0]), A.index_copy(0, idx, exact[:, 1])
    else:
        Aqk, A = _decayed_grams(q, k, G)
    lower = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    Aqk = Aqk.masked_fill(~lower, 0.0)  # (M, C, C) i <= c
    bt = beta.reshape(n * BH, C, 1) if beta is not None else None  # (M, C, 1)
    if delta:
        eye = torch.eye(C, device=q.device, dtype=q.dtype)
        bA = A.masked_fill(~lower.tril(-1), 0.0)  # strictly lower (M, C, C)
        bA = bA if bt is None else bt * bA  # Diag(beta) A
        Mut = torch.linalg.solve_triangular(bA + eye, eye.expand_as(bA), upper=False, unitriangular=True)  # UT
        Mb = Mut if bt is None else Mut * bt.transpose(-1, -2)  # M Diag(beta)  (M, C, C)
        U, W = torch.bmm(Mb, v), torch.bmm(Mb, kG).view(n, BH, C, K)  # (M, C, V), (n, BH, C, K)
    else:
        U, W = (v if bt is None else bt * v), None
    U, qG, Aqk = U.view(n, BH, C, V), qG.view(n, BH, C, K), Aqk.view(n, BH, C, C)
    a_end = G_end.exp().view(n, BH, K, 1)  # (n, BH, K, 1) decay over the whole chunk
    k_dec_t = k_dec.view(n, BH, C, K).transpose(-1, -2)  # (n, BH, K, C)

    # carry the state across the chunks: the only sequential part, n steps of small matmuls. Without
    # autograd the state and outputs are updated in place (no allocations per step).
    o, outs, D_buf = q.new_empty(n, BH, C, V), [], q.new_empty(BH, C, V)
    for i in range(n):
        if not delta:
            D = U[i]
        elif in_place:
            D = torch.baddbmm(U[i], W[i], S, alpha=-1, out=D_buf)  # (BH, C, V) Delta = U - W S
        else:
            D = torch.baddbmm(U[i], W[i], S, alpha=-1)
        if in_place:
            torch.bmm(qG[i], S, out=o[i])
            o[i].baddbmm_(Aqk[i], D, beta=scale, alpha=scale)  # (BH, C, V) scale (Q Gamma S + Aqk Delta)
            S.mul_(a_end[i]).baddbmm_(k_dec_t[i], D)  # (BH, K, V)
        else:
            outs.append(torch.baddbmm(qG[i] @ S, Aqk[i], D, beta=scale, alpha=scale))
            S = torch.baddbmm(a_end[i] * S, k_dec_t[i], D)
    return (o if in_place else torch.stack(outs)), S


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
