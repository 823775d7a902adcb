"""Inside the chunk-wise kernel: the parallel work within each chunk (decayed Grams, UT transform) and the
short sequential loop that carries the state from chunk to chunk. `k3lite.model.kda.ops.chunk_gated_delta` lays
the sequence out in chunks and calls these; `k3lite.model.kda.grad` differentiates them by hand.

Layout: chunk-major, (n, BH, C, D) for n chunks of C tokens, BH = batch x heads, fp32. The formulas are in
`chunk_gated_delta`'s docstring.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

_SUB = 32  # rows per block of the two-level Gram factorisation (used only for chunks whose decay is too steep)
_CAP = 80.0  # largest exponent we let a factor reach (e^80 * K is still far below fp32's max, 3.4e38)
_LOG2E = 1.0 / math.log(2.0)  # e^x = 2^(x log2 e): torch's exp2 is ~3x faster than exp on this CPU, error ~3 ulp


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
    """Both intra-chunk matrices of the chunk algorithm, for chunks longer than `sub` whose decay span is too
    large for the one-matmul form in `chunk_intra` (see `_steep_grams`):

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


def _steep_grams(q, k, G):
    """Both decayed Grams, (n, 2, C, C), for chunks whose decay span exceeds `_CAP` (where the one-block
    product e^(G_c) e^(-G_i) would overflow): exact elementwise up to `_SUB` rows, else the two-level
    factorisation (which itself falls back to exact blocks only on its too-steep diagonal blocks)."""
    if q.shape[-2] <= _SUB:
        return _exact_blocks(q, k, G)
    return torch.stack(_decayed_grams(q, k, G), 1)


def _unit_lower_inverse(N, leaf: int = 16):
    """(I + strict_tril(N))^-1 for a batch N (M, C, C); reads only N's strict lower triangle.

    Blocked: [[T1, 0], [T21, T2]]^-1 = [[X1, 0], [-X2 T21 X1, X2]], the two diagonal halves inverted together
    as one batch, down to `leaf` rows, where LAPACK's triangular solve takes over. The same forward
    substitution, regrouped: on this CPU MKL's solve runs ~6 GFLOP/s on 32 x 32 blocks (~5 us each) and
    two 16 x 16 ones plus two small matmuls take ~20% less; at C = 64 about half.
    """
    M, C, _ = N.shape
    if C <= leaf:
        eye = torch.eye(C, dtype=N.dtype, device=N.device)
        return torch.linalg.solve_triangular(N, eye.expand(M, C, C), upper=False, unitriangular=True)
    h = C // 2
    if C % 2 == 0:
        both = _unit_lower_inverse(torch.cat([N[:, :h, :h], N[:, h:, h:]]), leaf)  # (2M, h, h)
        X1, X2 = both[:M], both[M:]
    else:
        X1, X2 = _unit_lower_inverse(N[:, :h, :h], leaf), _unit_lower_inverse(N[:, h:, h:], leaf)
    X21 = torch.bmm(X2, torch.bmm(N[:, h:, :h], X1)).neg_()  # (M, C - h, h)
    return torch.cat([torch.cat([X1, X1.new_zeros(M, h, C - h)], 2), torch.cat([X21, X2], 2)], 1)


class Intra(NamedTuple):
    """What the chunks compute in parallel (M = n * BH chunks of C tokens); the carry needs the first six."""

    qG: torch.Tensor  # (M, C, K) q * exp(G), G the cumulative log-decay since the chunk start
    Aqk: torch.Tensor  # (M, C, C) tril(decayed q k^T), diagonal included
    U: torch.Tensor  # (M, C, V) M Diag(beta) V (delta) or Diag(beta) V
    W: torch.Tensor | None  # (M, C, K) M Diag(beta) (k * exp(G)) (delta only)
    k_dec: torch.Tensor  # (M, C, K) k decayed to the chunk end, k * exp(G_end - G)
    a_end: torch.Tensor  # (M, K, 1) decay over the whole chunk, exp(G_end)
    G: torch.Tensor  # (M, C, K) cumulative log-decay (zeros without decay)
    A: torch.Tensor | None  # (M, C, C) strictly lower decayed k k^T, before Diag(beta) (delta, keep=True only)
    Mut: torch.Tensor | None  # (M, C, C) (I + Diag(beta) A)^-1 (delta only)
    eG: torch.Tensor  # (M, C, K) exp(G)
    kG: torch.Tensor  # (M, C, K) k * exp(G)
    eG_end_minus: torch.Tensor | None  # (M, C, K) exp(G_end - G) (only with keep=True)


def chunk_intra(q, k, v, g, beta, delta: bool, keep: bool = True) -> Intra:
    """The parallel part of every chunk at once: q, k, g (..., C, K), v (..., C, V), beta (..., C, 1); g, beta
    may be None. The inputs may have any strides (the inference path passes chunk views of the (B, T, H, .)
    tensors): the first elementwise op on each reads it in place and writes chunk-major (M, C, .), M = the
    product of the leading dims, so there is no separate layout copy. `keep`: the backward will read the
    result, so also form e^(G_end - G) and mask A (the triangular solve itself reads only A's strict lower part).
    """
    *lead, C, K = q.shape
    V = v.shape[-1]
    M = math.prod(lead)

    def new(D):  # chunk-major output for an elementwise op whose inputs may be strided views
        return q.new_empty(*lead, C, D)

    def flat(x):  # (..., C, D) -> (M, C, D), a view for what `new` made
        return x.reshape(M, C, x.shape[-1])

    def lay(x):  # (M, C, D) -> (..., C, D), to broadcast against the strided inputs
        return x.view(*lead, C, x.shape[-1])

    # [v | k e^G] side by side: U and W come out of one matmul. Not when the backward reads them: its matmuls
    # and elementwise ops on those strided views cost more (measured +10% backward) than the merge saves.
    VK = new(V + K) if delta and not keep else None
    G = q.new_zeros(M, C, K) if g is None else flat(torch.cumsum(g, -2, out=new(K)))  # (M, C, K) log decay, <= 0
    eG = q.new_ones(M, C, K) if g is None else (G * _LOG2E).exp2_()  # (M, C, K) decay since the chunk start, <= 1
    a_end = eG[:, -1:, :]  # (M, 1, K) decay over the whole chunk, e^(G_end)
    qG = flat(torch.mul(q, lay(eG), out=new(K)))  # (M, C, K) q e^G
    kG = flat(torch.mul(k, lay(eG), out=new(K) if VK is None else VK[..., V:]))  # (M, C, K) k e^G
    # One block: exp(G_c - G_i) = e^(G_c) e^(-G_i). e^(-G) <= e^span is finite while the chunk's span -G_end is
    # at most _CAP (then e^G >= e^-_CAP is a normal float and dividing by it is exact to an ulp); the few chunks
    # beyond that are redone below by `_steep_grams`. So every chunk length takes the same two plain matmuls.
    right = flat(torch.div(k, lay(eG), out=new(K)))  # (M, C, K) k e^(-G)
    k_dec = right * a_end  # (M, C, K) k_i decayed to the chunk end, k e^(G_end - G)
    e_rest = a_end / eG if keep else None  # (M, C, K) e^(G_end - G)
    right_t = right.transpose(-1, -2)  # (M, K, C)
    Aqk, A = torch.bmm(qG, right_t), torch.bmm(kG, right_t)  # (M, C, C)
    if G[:, -1, :].amin() < -_CAP:  # one scalar test; then which chunks' decay span is too large
        idx = ((-G[:, -1, :]).amax(-1) > _CAP).nonzero()[:, 0]
        q_b, k_b, G_b = q.reshape(M, C, K)[idx], k.reshape(M, C, K)[idx], G[idx]
        exact = _steep_grams(q_b, k_b, G_b)  # (n_bad, 2, C, C)
        Aqk.index_copy_(0, idx, exact[:, 0])
        A.index_copy_(0, idx, exact[:, 1])
        e_bad = (G_b[:, -1:, :] - G_b).exp()  # (n_bad, C, K) <= 1
        k_dec.index_copy_(0, idx, k_b * e_bad)
        if keep:
            e_rest.index_copy_(0, idx, e_bad)
    Aqk.tril_()  # (M, C, C) i <= c
    beta = None if beta is None else beta.reshape(M, C, 1)
    Mut = W = None
    if delta:
        if keep:
            A.tril_(-1)  # strictly lower (M, C, C), for the backward
        bA = A if beta is None else (beta * A if keep else A.mul_(beta))  # Diag(beta) A
        Mut = _unit_lower_inverse(bA)  # UT transform (I + Diag(beta) A)^-1; bA's diagonal and upper part unread
        Mb = Mut if beta is None else Mut * beta.transpose(-1, -2)  # M Diag(beta)  (M, C, C)
        if VK is None:
            U, W = torch.bmm(Mb, v.reshape(M, C, V)), torch.bmm(Mb, kG)  # (M, C, V), (M, C, K)
        else:
            VK[..., :V].copy_(v)
            UW = torch.bmm(Mb, flat(VK))  # (M, C, V + K)
            U, W = UW[..., :V], UW[..., V:]  # (M, C, V), (M, C, K)
        A = A if keep else None
    else:
        U = v.reshape(M, C, V) if beta is None else flat(torch.mul(v, lay(beta), out=new(V)))  # (M, C, V)
        A = None
    return Intra(qG, Aqk, U, W, k_dec, a_end.transpose(-1, -2), G, A, Mut, eG, kG, e_rest)


def chunk_carry(it: Intra, n: int, S, scale: float, delta: bool, in_place: bool, states=None):
    """Carry the state S (BH, K, V) across n chunks of `it`: the only sequential part, n steps of small matmuls.

    Returns (o (n, BH, C, V), S after the last chunk). With `in_place` (no autograd) S and the outputs are
    updated in place, no allocations per step; `states` (n, BH, K, V), if given, receives the state each
    chunk starts from (what the backward needs).
    """
    M, C, K = it.qG.shape
    BH, V = M // n, it.U.shape[-1]
    qG, Aqk, U = it.qG.view(n, BH, C, K), it.Aqk.view(n, BH, C, C), it.U.view(n, BH, C, V)
    W = None if it.W is None else it.W.view(n, BH, C, K)
    a_end, k_dec_t = it.a_end.view(n, BH, K, 1), it.k_dec.view(n, BH, C, K).transpose(-1, -2)  # (n, BH, K, C)
    o, outs, D_buf = qG.new_empty(n, BH, C, V), [], qG.new_empty(BH, C, V)
    Ws = W.unbind(0) if W is not None else (None,) * n
    # per-chunk views made once (unbind) rather than 8 indexing ops per step
    for i, (qG_i, Aqk_i, U_i, W_i, a_i, kt_i, o_i) in enumerate(zip(qG.unbind(0), Aqk.unbind(0), U.unbind(0), Ws,
                                                                    a_end.unbind(0), k_dec_t.unbind(0), o.unbind(0))):
        if states is not None:
            states[i].copy_(S)
        if not delta:
            D = U_i
        elif in_place:
            D = torch.baddbmm(U_i, W_i, S, alpha=-1, out=D_buf)  # (BH, C, V) Delta = U - W S
        else:
            D = torch.baddbmm(U_i, W_i, S, alpha=-1)
        if in_place:
            torch.bmm(qG_i, S, out=o_i)
            o_i.baddbmm_(Aqk_i, D, beta=scale, alpha=scale)  # (BH, C, V) scale (Q Gamma S + Aqk Delta)
            S.mul_(a_i).baddbmm_(kt_i, D)  # (BH, K, V)
        else:
            outs.append(torch.baddbmm(qG_i @ S, Aqk_i, D, beta=scale, alpha=scale))
            S = torch.baddbmm(a_i * S, kt_i, D)
    return (o if in_place else torch.stack(outs)), S


def chunk_flops(B: int, T: int, H: int, K: int, V: int, C: int, delta: bool = True) -> int:
    """Matmul FLOPs (2 per multiply-add) the chunk algorithm needs for the forward; elementwise work is not counted.

    Per chunk and head: the decayed Grams, only their causal halves, C(C+1)K for Aqk (diagonal included) and
    C(C-1)K for A (strictly lower); the unit-triangular inverse (C^3 - C)/3; U and W from the triangular
    M Diag(beta), C(C+1)(V + K); then the carry: W S, Q S and the state update 3 x 2CKV, and the triangular
    Aqk Delta C(C+1)V. Without the delta rule: no A, no inverse, no U/W matmuls, no W S.
    Like the causal softmax count in `k3lite.bench.kda` (B H T^2 (K + V), the causal half) the triangles count
    half: the kernel multiplies those C x C blocks densely (4C^2K + C^3 + 2C^2(V + K) + 2C^2V), about 17% more
    FLOPs at C = 32, K = V = 128, and that waste is part of its distance from the matmul roofline.
    """
    C = max(1, min(C, T))
    n_chunks = -(-T // C)
    tri = C * (C + 1)  # 2 x the entries of a C x C lower triangle with its diagonal
    if delta:
        per = tri * K + C * (C - 1) * K + (C**3 - C) // 3 + tri * (V + K) + 6 * C * K * V + tri * V
    else:
        per = tri * K + 4 * C * K * V + tri * V
    return B * H * n_chunks * per
