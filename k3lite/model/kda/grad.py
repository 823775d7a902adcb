"""The hand-written backward of the chunk-wise kernel (`ChunkGatedDelta`), so training never runs autograd
through the chunk loop (which saves every step's small tensors and zero-fills a full-size gradient per slice).

Forward keeps the state each chunk starts from, S_i (n, BH, K, V), and the parallel intra-chunk part
(`chunk_intra`) of each group of chunks; backward walks the groups in reverse, the chunks inside a group in
reverse for the state gradient, and does everything else batched over the group. Per chunk, with scale folded into dO:

    forward                          backward (dS' = gradient of the state after the chunk)
    D  = U - W S                     dD = Aqk^T dO + k_dec dS'            (the only sequential part, with dS)
    O  = qG S + Aqk D                dS = a_end * dS' + qG^T dO - W^T dD
    S' = a_end * S + k_dec^T D       dqG = dO S^T,  dAqk = tril(dO D^T),  dW = -dD S^T,  dU = dD
                                     dk_dec = D dS'^T,  da_end = rowsum(S * dS')
    U = M Diag(b) V,  W = M Diag(b) kG,  M = (I + Diag(b) A)^-1:
                                     dMb = dU V^T + dW kG^T,  dV = Mb^T dU,  dkG = Mb^T dW
                                     dA = Diag(b) strict_tril(-M^T (dMb Diag(b)) M^T)
    Aqk[c,i] = sum_d q_c k_i e^(G_c - G_i) (and A with k_c): dq_c = sum_i dAqk[c,i] k_i e^(G_c - G_i), the
    same for k from both sides, and dG_c = q_c * dq_c (row side) - k_i * dk_i (column side); finally
    g = cumsum(G) within the chunk, so dg is the reverse cumsum of dG.
Checked against autograd of the step-by-step recurrence in tests/model/test_kda.py.
"""
from __future__ import annotations

import torch

from k3lite.model.kda.chunk import _CAP, _steep_grams, chunk_carry, chunk_intra

def _gram_backward(q, k, it, dAqk, dA):
    """Gradients of Aqk (and A, if not None) w.r.t. q, k and G: (dq, dk, dG), each (M, C, K)."""
    M, C, K = q.shape
    G = it.G
    # one block: exp(G_c - G_i) = e^(G_c) e^(-G_i); the product is <= 1, the second factor <= e^span
    G_end = G[:, -1:, :]
    eG = it.eG  # (M, C, K)
    eNG = it.eG_end_minus * (-G_end).clamp(max=_CAP).exp()  # (M, C, K) e^(-G_i), exact where span <= cap
    right = k * eNG  # (M, C, K)
    row_q = torch.bmm(dAqk, right)  # (M, C, K) sum_i dAqk[c, i] k_i e^(-G_i)
    col = torch.bmm(dAqk.transpose(-1, -2), it.qG)  # (M, C, K) sum_c dAqk[c, i] q_c e^(G_c)
    dq = eG * row_q
    dG = it.qG * row_q
    if dA is not None:
        row_k = torch.bmm(dA, right)
        col = col.baddbmm_(dA.transpose(-1, -2), k * eG)
        dk_row = eG * row_k
        dG += k * dk_row
    else:
        dk_row = 0.0
    dk = dk_row + eNG * col
    dG -= right * col
    bad = (-G_end[:, 0, :]).amax(-1) > _CAP  # chunks whose Grams were computed exactly (`_steep_grams`)
    if bad.any():
        idx = bad.nonzero()[:, 0]
        with torch.enable_grad():
            qd, kd, Gd = (x[idx].detach().requires_grad_() for x in (q, k, G))
            exact = _steep_grams(qd, kd, Gd)  # (n_bad, 2, C, C)
            dP = torch.stack([dAqk[idx], dA[idx] if dA is not None else torch.zeros_like(dAqk[idx])], 1)
            gq, gk, gG = torch.autograd.grad(exact, (qd, kd, Gd), dP)
        dq, dk, dG = dq.index_copy(0, idx, gq), dk.index_copy(0, idx, gk), dG.index_copy(0, idx, gG)
    return dq, dk, dG


def _group_backward(q, k, v, g, beta, it, states, dO, dS, scale: float, delta: bool):
    """Backward through n consecutive chunks, (n, BH, C, .) each, given their forward `Intra`, dO and dS, the
    gradient of the state after the last chunk. Returns (dq, dk, dv, dg, dbeta) in that layout and dS at the
    first chunk."""
    n, BH, C, K = q.shape
    V = v.shape[-1]
    M = n * BH
    q, k, v, g, beta = (None if x is None else x.reshape(M, C, x.shape[-1]) for x in (q, k, v, g, beta))
    dO = dO.reshape(M, C, V) * scale  # scale folded in
    S = states.reshape(M, K, V)
    dD = torch.bmm(it.Aqk.transpose(-1, -2), dO).view(n, BH, C, V)  # the parallel half of dD
    dS_o = torch.bmm(it.qG.transpose(-1, -2), dO).view(n, BH, K, V)  # qG^T dO
    k_dec, a_end = it.k_dec.view(n, BH, C, K), it.a_end.view(n, BH, K, 1)
    W = None if it.W is None else it.W.view(n, BH, C, K)
    dS_after = dO.new_empty(n, BH, K, V)
    for i in reversed(range(n)):  # the sequential part: the state gradient walks back chunk by chunk
        dS_after[i] = dS
        dD[i].baddbmm_(k_dec[i], dS)  # (BH, C, V)
        dS_new = torch.addcmul(dS_o[i], a_end[i], dS)
        if delta:
            dS_new.baddbmm_(W[i].transpose(-1, -2), dD[i], alpha=-1)
        dS = dS_new
    dD, dS_after = dD.view(M, C, V), dS_after.view(M, K, V)
    D = it.U if not delta else torch.baddbmm(it.U, it.W, S, alpha=-1)  # (M, C, V) recomputed Delta
    St = S.transpose(-1, -2)  # (M, V, K)
    dqG = torch.bmm(dO, St)  # (M, C, K)
    lower = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    dAqk = torch.bmm(dO, D.transpose(-1, -2)).masked_fill_(~lower, 0.0)  # (M, C, C)
    dk_dec = torch.bmm(D, dS_after.transpose(-1, -2))  # (M, C, K)
    da_end = (S * dS_after).sum(-1)  # (M, K)
    eG, kG = it.eG, it.kG
    dbeta = dA = None
    if delta:
        Mb = it.Mut if beta is None else it.Mut * beta.transpose(-1, -2)  # (M, C, C)
        dW = -torch.bmm(dD, St)  # (M, C, K)
        dMb = torch.bmm(dD, v.transpose(-1, -2)).baddbmm_(dW, kG.transpose(-1, -2))  # (M, C, C)
        Mbt = Mb.transpose(-1, -2)
        dv, dkG = torch.bmm(Mbt, dD), torch.bmm(Mbt, dW)
        dMut = dMb if beta is None else dMb * beta.transpose(-1, -2)
        Mt = it.Mut.transpose(-1, -2)
        dbA = -torch.bmm(torch.bmm(Mt, dMut), Mt).masked_fill_(~lower.tril(-1), 0.0)  # strictly lower
        dA = dbA if beta is None else beta * dbA
        if beta is not None:
            dbeta = (dMb * it.Mut).sum(-2)[..., None] + (dbA * it.A).sum(-1, keepdim=True)  # (M, C, 1)
    else:
        dv = dD if beta is None else beta * dD
        dkG = None
        if beta is not None:
            dbeta = (dD * v).sum(-1, keepdim=True)
    dq_g, dk_g, dG = _gram_backward(q, k, it, dAqk, dA)
    dq = dq_g + dqG * eG
    R = it.eG_end_minus  # (M, C, K) e^(G_end - G)
    dk = dk_g + dk_dec * R
    dG = dG + dqG * it.qG - dk_dec * it.k_dec
    if dkG is not None:
        dk += dkG * eG
        dG += dkG * kG
    dG[:, -1] += (dk_dec * it.k_dec).sum(1) + da_end * it.a_end[..., 0]  # G_end = G[:, -1]
    dg = None if g is None else dG.flip(1).cumsum(1).flip(1)  # G = cumsum(g): reverse cumsum
    shape = lambda x: None if x is None else x.view(n, BH, C, x.shape[-1])  # noqa: E731
    return (shape(dq), shape(dk), shape(dv), shape(dg), shape(dbeta)), dS


class ChunkGatedDelta(torch.autograd.Function):
    """The chunk kernel on chunk-major inputs: q, k, g (N, BH, C, K), v (N, BH, C, V), beta (N, BH, C, 1),
    S0 (BH, K, V), all fp32; g, beta may be None. Returns (o (N, BH, C, V), final state (BH, K, V))."""

    @staticmethod
    def forward(ctx, q, k, v, g, beta, S0, scale: float, delta: bool, group: int):
        N, BH, C, K = q.shape
        S = S0.clone()
        states = q.new_empty(N, BH, K, v.shape[-1])  # the state each chunk starts from
        o = q.new_empty(N, BH, C, v.shape[-1])
        ctx.intras = []  # the parallel part of each group, kept for backward (recomputing it costs more)
        for n0 in range(0, N, group):
            n1 = min(n0 + group, N)
            sl = [None if x is None else x[n0:n1].reshape(-1, C, x.shape[-1]) for x in (q, k, v, g, beta)]
            it = chunk_intra(*sl, delta)
            o[n0:n1], S = chunk_carry(it, n1 - n0, S, scale, delta, in_place=True, states=states[n0:n1])
            ctx.intras.append((n0, n1, it))
        ctx.save_for_backward(q, k, v, g, beta, states)
        ctx.scale, ctx.delta = scale, delta
        return o, S

    @staticmethod
    def backward(ctx, dO, dS_final):
        q, k, v, g, beta, states = ctx.saved_tensors
        N, BH, C, K = q.shape
        V = v.shape[-1]
        dS = torch.zeros(BH, K, V, dtype=q.dtype, device=q.device) if dS_final is None else dS_final.clone()
        dO = torch.zeros_like(states[:, :, :1, :].expand(N, BH, C, V)) if dO is None else dO
        grads = [torch.empty_like(x) if x is not None else None for x in (q, k, v, g, beta)]
        for n0, n1, it in reversed(ctx.intras):
            sl = [None if x is None else x[n0:n1] for x in (q, k, v, g, beta)]
            part, dS = _group_backward(*sl, it, states[n0:n1], dO[n0:n1], dS, ctx.scale, ctx.delta)
            for out, p in zip(grads, part):
                if out is not None:
                    out[n0:n1] = p
        ctx.intras = None
        return (*grads, dS, None, None, None)
