"""The routed experts and their dispatch: E gated FFNs in stacked weights, run grouped by expert.

    RoutedExperts           w_gate, w_up [E, dim, ffn], w_down [E, ffn, dim]
    expert_forward          sort rows by expert, one matmul triple per expert slice (or a padded batch of bmm
                            when autograd is off, `padded_rows_cap` picks the split), unsort
    dispatch_combine        out_n = sum_j w_nj * expert_{idx_nj}(x_n), with a capacity limit (Switch / GShard:
                            first come, first served in token order; `capacity_for`, `capacity_mask`)
    *_naive                 the same, one token at a time (the references the tests compare with)
    active_expert_flops_per_token   the FLOPs of the k experts one token visits
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from k3lite.model.nn import GLUActivation


class DispatchResult(NamedTuple):
    out: torch.Tensor  # (N, dim): sum over kept choices of weight * expert(x)
    kept: torch.Tensor  # (N, k) bool: False where the choice was dropped by the capacity limit
    load: torch.Tensor  # (E,) long: assignments requested per expert (before dropping)
    dropped: int  # number of (token, expert) assignments dropped
    capacity: int  # per-expert capacity in assignments (0 = unlimited)



class RoutedExperts(nn.Module):
    """E gated-FFN experts with stacked weights: w_gate, w_up [E, dim, ffn]; w_down [E, ffn, dim].
    `activation`: SwiGLU by default, K3's SiTU-GLU with GLUActivation("situ") (k3lite.model.nn)."""

    def __init__(self, n_experts: int, dim: int, ffn_dim: int, activation: GLUActivation | None = None):
        super().__init__()
        self.act = activation or GLUActivation("swiglu")
        self.w_gate = nn.Parameter(torch.empty(n_experts, dim, ffn_dim))
        self.w_up = nn.Parameter(torch.empty(n_experts, dim, ffn_dim))
        self.w_down = nn.Parameter(torch.empty(n_experts, ffn_dim, dim))
        for w, fan_in in ((self.w_gate, dim), (self.w_up, dim), (self.w_down, ffn_dim)):
            nn.init.normal_(w, std=fan_in**-0.5)

    @property
    def n_experts(self) -> int:
        return self.w_gate.shape[0]

    def one(self, e: int, x: torch.Tensor) -> torch.Tensor:
        """Expert e on rows x (M, dim) -> (M, dim)."""
        return self.act(x @ self.w_gate[e], x @ self.w_up[e]) @ self.w_down[e]


def _check_ids(experts: RoutedExperts, x: torch.Tensor, expert_ids: torch.Tensor) -> None:
    if x.dim() != 2 or expert_ids.shape != x.shape[:1]:
        raise ValueError(f"expected x (M, dim) and expert_ids (M,), got {tuple(x.shape)} and {tuple(expert_ids.shape)}")
    if expert_ids.numel() and (int(expert_ids.min()) < 0 or int(expert_ids.max()) >= experts.n_experts):
        raise ValueError(f"expert_ids must be in [0, {experts.n_experts}), got range "
                         f"[{int(expert_ids.min())}, {int(expert_ids.max())}]")


def expert_forward_naive(experts: RoutedExperts, x: torch.Tensor, expert_ids: torch.Tensor) -> torch.Tensor:
    """Reference: row m goes through expert expert_ids[m], one row at a time. x (M, dim) -> (M, dim)."""
    _check_ids(experts, x, expert_ids)
    rows = [experts.one(int(e), x[m : m + 1]) for m, e in enumerate(expert_ids.tolist())]
    return torch.cat(rows) if rows else torch.zeros_like(x)


# Cost model of the two no-autograd expert paths on one CPU thread, in microseconds:
#   padded batch  PADDED_CALL_US + E x PADDED_EXPERT_US + rows x PADDED_ROW_US   (rows = E x cap, zeros included)
#   per expert    LOOP_CALL_US per expert                                       + rows x LOOP_ROW_US
# The call and row constants are a least-squares fit to timings of lite's MoE layers (E 32, 64 -> 128; trained
# and random weights, 20-400 tokens) on the 2-core dev machine, within ~25%. PADDED_EXPERT_US is the batch
# reading every expert's weights, used or not: 3 x 64 x 128 fp32 = 98 KB at the ~20 GB/s of a cold read here
# (~5 us); it is what makes a decode step (4 rows on 4 experts) 1.5x slower padded than looped. A padded row
# costs ~1.5x a looped one, a looped expert ~22 us of calls: a few rows on each of many experts favour the
# batch, a few overfull experts the loop for their excess rows. Only the speed depends on these numbers,
# never what is computed. Expert and row costs scale with the expert's size: given per 6 * dim * ffn / 1e4.
PADDED_CALL_US, PADDED_EXPERT_US, PADDED_ROW_US = 24.0, 1.0, 0.25
LOOP_CALL_US, LOOP_ROW_US = 22.0, 0.166


def padded_rows_cap(counts: list[int], n_experts: int, dim: int, ffn: int) -> int:
    """How many rows of each expert run in the padded batch (the rest run one expert at a time): the cap
    0..max(counts) with the lowest modelled cost. 0 = only the loop, max(counts) = only the batch.

    Balanced routing (counts near their mean) pads little and takes the batch; a few overfull experts get
    the batch for their first `cap` rows and the loop for the remainder, so zero rows never dominate.
    """
    scale = 6 * dim * ffn / 1e4  # FLOPs of one row through one expert, in units of the constants' row
    pad_row, loop_row = PADDED_ROW_US * scale, LOOP_ROW_US * scale
    pad_fixed = PADDED_CALL_US + n_experts * PADDED_EXPERT_US * scale
    desc = sorted((c for c in counts if c), reverse=True)
    total = sum(desc)
    best_cap, best = 0, len(desc) * LOOP_CALL_US + total * loop_row  # cap 0: the loop alone
    above = 0  # rows of the i experts with the most rows
    for i, c in enumerate(desc):
        if i == 0 or desc[i - 1] != c:  # cap = c: the i experts above it loop over their rows beyond c
            cost = pad_fixed + n_experts * c * pad_row + i * LOOP_CALL_US + (above - i * c) * loop_row
            if cost < best:
                best_cap, best = c, cost
        above += c
    return best_cap


def _grouped_padded(experts: RoutedExperts, xs: torch.Tensor, counts: list[int], cap: int, ys: torch.Tensor) -> None:
    """The first `cap` rows of every expert as three batched matmuls over all E experts, each padded to `cap`
    rows with zeros; written into ys (M + 1, dim) (row M takes the padding). xs (M, dim) sorted by expert."""
    E, M, dim = experts.n_experts, xs.shape[0], xs.shape[1]
    n = torch.tensor(counts, device=xs.device)  # (E,)
    rank = torch.arange(cap, device=xs.device)  # (cap,)
    src = torch.where(rank < n[:, None], (n.cumsum(0) - n)[:, None] + rank, M).view(-1)  # (E*cap,) row or M (zero)
    X = torch.cat([xs, xs.new_zeros(1, dim)]).index_select(0, src).view(E, cap, dim)  # (E, cap, dim)
    H = experts.act.inplace(torch.bmm(X, experts.w_gate), torch.bmm(X, experts.w_up))  # (E, cap, ffn)
    ys.index_copy_(0, src, torch.bmm(H, experts.w_down).view(E * cap, dim))  # padding rows all land on row M


def _grouped_sorted(experts: RoutedExperts, xs: torch.Tensor, counts: list[int]) -> torch.Tensor:
    """Rows xs (M, dim) already sorted by expert, counts[e] rows for expert e -> (M, dim), same order.

    With autograd: one matmul triple per expert that got rows, concatenated. Without: each expert's first
    `cap` rows (`padded_rows_cap`) in one padded batch of three bmm, the rows beyond `cap` one expert at a
    time, written straight into one preallocated buffer (no concatenation: on CPU the copies cost as much
    as the matmuls).
    """
    if torch.is_grad_enabled() and (xs.requires_grad or experts.w_gate.requires_grad):
        slices = torch.split(xs, counts)
        return torch.cat([experts.one(e, part) for e, part in enumerate(slices) if part.shape[0]])
    M = xs.shape[0]
    ys = torch.empty(M + 1, xs.shape[1], dtype=xs.dtype, device=xs.device)  # (M + 1, dim): row M is scratch
    cap = padded_rows_cap(counts, experts.n_experts, xs.shape[1], experts.w_gate.shape[2]) if M else 0
    if cap:
        _grouped_padded(experts, xs, counts, cap, ys)
    if any(count > cap for count in counts):
        w_gate, w_up, w_down, act = experts.w_gate, experts.w_up, experts.w_down, experts.act  # one lookup each
        start = 0
        for e, count in enumerate(counts):
            if count > cap:
                part = xs[start + cap : start + count]  # (m_e - cap, dim) contiguous
                h = act.inplace(torch.mm(part, w_gate[e]), torch.mm(part, w_up[e]))  # (m_e - cap, ffn)
                torch.mm(h, w_down[e], out=ys[start + cap : start + count])  # (m_e - cap, dim)
            start += count
    return ys[:M]


def expert_forward(experts: RoutedExperts, x: torch.Tensor, expert_ids: torch.Tensor) -> torch.Tensor:
    """Grouped dispatch: sort rows by expert, run each expert once on its contiguous slice, unsort.

    x (M, dim), expert_ids (M,) long -> (M, dim). Python loops over experts that got rows (<= E matmul
    triples), never over tokens; works on any subset of experts (an expert-parallel rank calls it with the
    rows it received).
    """
    _check_ids(experts, x, expert_ids)
    if x.shape[0] == 0:
        return torch.zeros_like(x)
    order = torch.argsort(expert_ids, stable=True)  # (M,)
    counts = torch.bincount(expert_ids, minlength=experts.n_experts).tolist()  # (E,)
    sorted_out = _grouped_sorted(experts, x[order], counts)  # (M, dim) in sorted order
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.numel(), device=order.device)
    return sorted_out[inverse]  # (M, dim) back in input order


def capacity_for(n_tokens: int, top_k: int, n_experts: int, capacity_factor: float) -> int:
    """Per-expert capacity in assignments: ceil(factor * N * k / E); 0 = unlimited (factor 0)."""
    if capacity_factor < 0:
        raise ValueError(f"capacity_factor must be >= 0, got {capacity_factor}")
    if capacity_factor == 0:
        return 0
    return max(1, math.ceil(capacity_factor * n_tokens * top_k / n_experts))


def capacity_mask(topk_idx: torch.Tensor, n_experts: int, capacity: int) -> torch.Tensor:
    """kept (N, k) bool: an expert keeps its first `capacity` assignments in token order (row-major)."""
    flat = topk_idx.reshape(-1)  # (N*k,)
    if capacity <= 0:
        return torch.ones_like(topk_idx, dtype=torch.bool)
    order = torch.argsort(flat, stable=True)  # assignments grouped by expert, token order inside
    counts = torch.bincount(flat, minlength=n_experts)  # (E,)
    starts = torch.cumsum(counts, 0) - counts  # (E,)
    rank_sorted = torch.arange(flat.numel(), device=flat.device) - starts[flat[order]]
    rank = torch.empty_like(rank_sorted)
    rank[order] = rank_sorted  # position of each assignment inside its expert's queue
    return (rank < capacity).view_as(topk_idx)


def dispatch_combine(experts: RoutedExperts, x: torch.Tensor, topk_idx: torch.Tensor,
                     topk_weight: torch.Tensor, capacity: int = 0) -> DispatchResult:
    """out_n = sum over kept j of topk_weight[n, j] * expert_{topk_idx[n, j]}(x_n), grouped dispatch.

    x (N, dim), topk_idx / topk_weight (N, k); capacity 0 = unlimited. Dropped choices contribute nothing
    (the residual stream carries the token on), and `dropped` counts them exactly.
    """
    n, k = topk_idx.shape
    ids = topk_idx.reshape(-1)  # (N*k,)
    load = torch.bincount(ids, minlength=experts.n_experts)  # (E,)
    kept = capacity_mask(topk_idx, experts.n_experts, capacity)  # (N, k)
    if capacity:
        ids = ids.masked_fill(~kept.reshape(-1), experts.n_experts)  # dropped copies sort last, then cut
        order = torch.argsort(ids, stable=True)[: int(kept.sum())]  # (M,) kept copies grouped by expert
        counts = torch.bincount(ids[order], minlength=experts.n_experts).tolist()  # (E,)
    else:  # nothing dropped: the kept copies per expert are the load
        order, counts = torch.argsort(ids, stable=True), load.tolist()
    token = order // k  # (M,) source token of each copy
    y = _grouped_sorted(experts, x[token], counts)  # (M, dim): one gather = the "dispatch"
    y = y * topk_weight.reshape(-1)[order, None].to(x.dtype)  # (M, dim)
    out = torch.zeros_like(x).index_add_(0, token, y)  # (N, dim): the "combine"
    return DispatchResult(out, kept, load, int((~kept).sum()) if capacity else 0, capacity)


def dispatch_combine_naive(experts: RoutedExperts, x: torch.Tensor, topk_idx: torch.Tensor,
                           topk_weight: torch.Tensor, capacity: int = 0) -> DispatchResult:
    """Reference for dispatch_combine: loop over tokens and their k choices, count capacity by hand."""
    n, k = topk_idx.shape
    used = [0] * experts.n_experts
    out = torch.zeros_like(x)
    kept = torch.zeros(n, k, dtype=torch.bool)
    for i in range(n):
        for j in range(k):
            e = int(topk_idx[i, j])
            if capacity and used[e] >= capacity:
                continue
            used[e] += 1
            kept[i, j] = True
            out[i] += topk_weight[i, j].to(x.dtype) * experts.one(e, x[i : i + 1])[0]
    load = torch.bincount(topk_idx.reshape(-1), minlength=experts.n_experts)
    return DispatchResult(out, kept.to(x.device), load, int((~kept).sum()), capacity)


def active_expert_flops_per_token(dim: int, ffn_dim: int, top_k: int) -> int:
    """Multiply-adds x 2 of the routed experts for one token: top_k SwiGLUs of 3 matmuls dim x ffn."""
    return 2 * 3 * dim * ffn_dim * top_k
