"""Kimi Delta Attention trained chunk-wise, written as the paper writes it (teaching and tests; never on a hot path).

The recurrence, one token at a time (`naive.naive_kda_matrix`):

    S_t = (I - b_t k_t k_t^T) Diag(a_t) S_{t-1} + b_t k_t v_t^T,        o_t = scale * S_t^T q_t

with a per-channel decay a_t = exp(g_t) in (0, 1]^K. Training runs it a chunk of C tokens at a time: inside a
chunk everything is a few C x C and C x K matrix products (parallel), and only the K x V state S crosses chunk
borders (sequential over T / C chunks). With G the running sum of g inside the chunk (G_r = g_1 + ... + g_r, per
channel), "decayed from s to r" is exp(G_r - G_s) channel by channel:

 1. Decayed key-key products, strictly below the diagonal:   M[r, s] = sum_d k_r[d] k_s[d] exp(G_r[d] - G_s[d])
 2. The UT transform (the WY representation of the product of the chunk's C Householder-like factors):
        T = (I + Diag(b) M)^{-1} Diag(b)        (I + Diag(b) M is unit lower triangular: a triangular solve)
 3. W = T (exp(G) * K)   how each token sees the state the chunk starts from;   U = T V   the chunk's own writes
 4. The values, corrected by what the incoming state S already predicts (the delta rule):   V' = U - W S
 5. Output: what the incoming state gives, decayed to r, plus the chunk's own corrected values read causally:
        O = scale * ( (Q * exp(G)) S + P V' ),   P[r, s] = sum_d q_r[d] k_s[d] exp(G_r[d] - G_s[d]) for s <= r
 6. State carried to the next chunk: decay the old state over the whole chunk, add the corrected writes decayed
    from their token to the chunk's end:   S <- Diag(exp(G_C)) S + (K * exp(G_C - G))^T V'

Every exponent above is a difference G_r - G_s with s <= r, so every exp is <= 1: nothing can overflow, at the
cost of building M and P channel by channel. The fast kernels (`ops.chunk_kda`, inside `chunk.py`) compute the same
quantities with factored exponents, a recursive triangular inverse and a hand-written backward; tests/model/
test_kda.py checks them against this file and this file against the token-by-token loop.
"""
from __future__ import annotations

import torch


def decayed_products(a, b, G_a, G_b):
    """X[r, s] = sum_d a_r[d] b_s[d] exp(G_a[r, d] - G_b[s, d]) for every r, s: (C, K) x (C, K) -> (C, C).
    Built as a (C, C, K) tensor: plain, and every exponent the callers keep (s <= r) is <= 0."""
    return (a[:, None, :] * b[None, :, :] * torch.exp(G_a[:, None, :] - G_b[None, :, :])).sum(-1)


def chunk_kda_reference(q, k, v, g, beta, scale=None, chunk_size: int = 16, initial_state=None):
    """Chunk-wise KDA in the six steps of the module docstring, one sequence and head at a time.

    q, k: (B, T, H, K); v: (B, T, H, V); g: (B, T, H, K) log decay (<= 0); beta: (B, T, H).
    Returns (o: (B, T, H, V), final state: (B, H, K, V)), in float32."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    scale = K ** -0.5 if scale is None else scale
    o = torch.zeros(B, T, H, V)
    S_all = torch.zeros(B, H, K, V) if initial_state is None else initial_state.float().clone()
    for b in range(B):
        for h in range(H):
            S = S_all[b, h]  # (K, V): the state, carried from chunk to chunk
            for start in range(0, T, chunk_size):
                end = min(start + chunk_size, T)
                Q, Kc, Vc = (x[b, start:end, h].float() for x in (q, k, v))
                beta_c = beta[b, start:end, h].float()
                G = g[b, start:end, h].float().cumsum(0)  # (C, K): decay from the chunk's start to each token
                C = end - start
                eye = torch.eye(C)
                # 1. decayed key-key products, strictly lower triangular
                M = decayed_products(Kc, Kc, G, G).tril(-1)
                # 2. the UT transform: T = (I + Diag(b) M)^{-1} Diag(b)
                Tm = torch.linalg.solve_triangular(eye + beta_c[:, None] * M, torch.diag(beta_c), upper=False,
                                                   unitriangular=True)
                # 3. how each token sees the incoming state, and the chunk's own writes
                W = Tm @ (torch.exp(G) * Kc)
                U = Tm @ Vc
                # 4. the delta rule's correction against the incoming state
                V_new = U - W @ S
                # 5. output: the incoming state decayed to each token + the chunk's writes read causally
                P = decayed_products(Q, Kc, G, G).tril()
                o[b, start:end, h] = scale * ((Q * torch.exp(G)) @ S + P @ V_new)
                # 6. the state at the chunk's end
                S = torch.exp(G[-1])[:, None] * S + (Kc * torch.exp(G[-1] - G)).T @ V_new
            S_all[b, h] = S
    return o, S_all
