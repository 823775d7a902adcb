"""Quantile Balancing's bias, computed from a batch's router scores (how the Router keeps experts evenly loaded).

    quantile_bias            the Kimi K3 report's Eq. 14 (§2.3.3): b^_j = -quantile_{1-k/E}(s_:,j - alpha),
                             b = b^ - mean(b^); the dual of "each token gets k experts, each expert N*k/E tokens"
    quantile_bias_reference  Eq. 14 in Python floats, token by token (the slow reference)
    quantile_beta            J. Su's order-statistic reading of the same update: beta = -b up to the centring and
                             the interpolation
    cut_histogram, merge_histograms, quantile_bias_histogram
                             the pooled-histogram estimator the report uses at scale: per-rank counts that add
                             under one all-reduce, the quantile read off the cumulative counts

The other two methods are a few lines of the Router (k3lite.model.moe.router): the Switch aux loss in its forward,
the DeepSeek-V3 sign update of the bias in `Router.update_balance`.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch


def quantile_beta(scores: torch.Tensor, k: int, beta: torch.Tensor, n_iters: int = 1) -> torch.Tensor:
    """One (or more) Quantile Balancing dual updates; returns the new beta (E,).

    scores (N, E), beta (E,) the previous beta. Per iteration:
        alpha_i = (k+1)-th largest of s_i,: - beta          (the token's "cut": exactly k experts above it)
        beta_j  = (c+1)-th largest of s_:,j - alpha, c = N*k/E  (the expert's "curve": c tokens above it)
    A fractional c interpolates linearly between the neighbouring order statistics. Needs c >= 1 and
    k < E; otherwise (batch 1 / decode, or k == E) beta is returned unchanged. The group limit of
    group-limited routing is not part of this LP: beta is fitted over all experts, the limit applies at selection.
    """
    n_tokens, n_experts = scores.shape
    capacity = n_tokens * k / n_experts
    if capacity < 1 or k >= n_experts or capacity >= n_tokens:
        return beta
    s = scores.detach().float()
    beta = beta.detach().float()
    lo, frac = int(math.floor(capacity)), capacity - math.floor(capacity)
    hi = min(lo + 1, n_tokens - 1)
    for _ in range(n_iters):
        alpha = torch.topk(s - beta, k + 1, dim=-1).values[:, k]  # (N,) (k+1)-th largest per row
        col = torch.topk(s - alpha[:, None], hi + 1, dim=0).values  # (hi+1, E) sorted descending
        beta = (1 - frac) * col[lo] + frac * col[hi]  # (E,) (c+1)-th largest per column
    return beta


def _balance_guard(n_tokens: int, k: int, n_experts: int) -> bool:
    """True when a batch can set the cuts: at least one token's share per expert (N k / E >= 1), k < E."""
    capacity = n_tokens * k / n_experts
    return capacity >= 1 and k < n_experts and capacity < n_tokens


def quantile_bias(scores: torch.Tensor, k: int, bias: torch.Tensor) -> torch.Tensor:
    """Kimi K3 report §2.3.3 Eq. 14, one update; returns the new selection bias b (E,) (selection = s + b).

        alpha_i = (k+1)-th largest of s_i,: + b          route top-(k+1) on the biased score: the cutoff
        b^_j    = -quantile_{1-k/E}( s_:,j - alpha )      the bias that gives expert j a k/E share of the batch
        b       = b^ - mean_j(b^)                          centred (a shift common to all experts changes no top-k)

    scores (N, E) raw (sigmoid) scores, bias (E,) the previous b. The quantile is torch.quantile's (linear
    interpolation between order statistics: the report does not say which definition). Returns `bias`
    unchanged when the batch cannot set a cut (N k / E < 1, e.g. batch 1, or k >= E)."""
    n_tokens, n_experts = scores.shape
    if not _balance_guard(n_tokens, k, n_experts):
        return bias
    s = scores.detach().float()
    alpha = torch.topk(s + bias.detach().float(), k + 1, dim=-1).values[:, k]  # (N,) the (k+1)-th biased score
    b_hat = -torch.quantile(s - alpha[:, None], 1 - k / n_experts, dim=0)  # (E,)
    return b_hat - b_hat.mean()


def quantile_bias_reference(scores: torch.Tensor, k: int, bias: torch.Tensor) -> torch.Tensor:
    """Eq. 14 written out token by token and expert by expert in Python floats (the slow reference)."""
    n, e = scores.shape
    s, b = scores.double().tolist(), bias.double().tolist()
    alpha = [sorted((s[i][j] + b[j] for j in range(e)), reverse=True)[k] for i in range(n)]
    level = 1 - k / e
    b_hat = []
    for j in range(e):
        col = sorted(s[i][j] - alpha[i] for i in range(n))
        pos = level * (n - 1)  # linear interpolation between order statistics (torch.quantile's default)
        lo = int(math.floor(pos))
        hi = min(lo + 1, n - 1)
        b_hat.append(-(col[lo] + (pos - lo) * (col[hi] - col[lo])))
    mean = sum(b_hat) / e
    return torch.tensor([v - mean for v in b_hat], dtype=torch.float64)


class BiasHistogram(NamedTuple):
    counts: torch.Tensor  # (E, n_bins) float: how many s_ij - alpha_i fell in each bin (adds across ranks)
    n_tokens: int
    lo: float
    hi: float


def cut_histogram(scores: torch.Tensor, k: int, bias: torch.Tensor, n_bins: int = 512, lo: float = -1.0,
                  hi: float = 1.0) -> BiasHistogram:
    """One rank's share of the pooled-histogram estimator: its tokens' s_ij - alpha_i (alpha from its own rows,
    as in `quantile_bias`) counted per expert into `n_bins` equal bins on [lo, hi]; values outside go to the
    edge bins. Histograms of different ranks (same bins) add: `merge_histograms` is the all-reduce."""
    if n_bins < 1 or not hi > lo:
        raise ValueError(f"need n_bins >= 1 and hi > lo, got n_bins={n_bins}, lo={lo}, hi={hi}")
    s = scores.detach().float()
    alpha = torch.topk(s + bias.detach().float(), k + 1, dim=-1).values[:, k]  # (N,)
    v = s - alpha[:, None]  # (N, E)
    idx = ((v - lo) / (hi - lo) * n_bins).floor().clamp_(0, n_bins - 1).long()  # (N, E)
    counts = torch.zeros(s.shape[1], n_bins).scatter_add_(1, idx.T.contiguous(), torch.ones(idx.T.shape))
    return BiasHistogram(counts, s.shape[0], lo, hi)


def merge_histograms(parts: list[BiasHistogram]) -> BiasHistogram:
    """The all-reduce: counts add (same bins required)."""
    if not parts or any((p.lo, p.hi, p.counts.shape) != (parts[0].lo, parts[0].hi, parts[0].counts.shape) for p in parts):
        raise ValueError("histograms must be non-empty and share their bins")
    return BiasHistogram(sum(p.counts for p in parts), sum(p.n_tokens for p in parts), parts[0].lo, parts[0].hi)


def quantile_bias_histogram(hist: BiasHistogram, k: int, bias: torch.Tensor) -> torch.Tensor:
    """Eq. 14 from a pooled histogram: the (1 - k/E) quantile of each expert's s - alpha read off the cumulative
    counts, linear inside the bin it falls in; then b = b^ - mean(b^). Exact to about one bin width.

    The report says the statistic is gathered as histograms whose counts add under one all-reduce; it does not
    state the number of bins, their range or spacing, what happens to values outside the range, or how the
    quantile is read inside a bin. Ours: `n_bins` equal bins on [lo, hi] = [-1, 1] (sigmoid scores minus a
    cutoff lie in (-1, 1)), clamped edges, linear interpolation inside the bin."""
    counts, n = hist.counts.double(), hist.n_tokens
    n_experts, n_bins = counts.shape
    if not _balance_guard(n, k, n_experts):
        return bias
    rank = (1 - k / n_experts) * n  # values below the quantile
    cum = counts.cumsum(1)  # (E, n_bins)
    b = (cum < rank).sum(1).clamp(max=n_bins - 1)  # (E,) first bin whose cumulative count reaches `rank`
    below = torch.where(b > 0, cum.gather(1, (b - 1).clamp(min=0)[:, None])[:, 0], torch.zeros_like(b, dtype=cum.dtype))
    inside = counts.gather(1, b[:, None])[:, 0].clamp(min=1)
    frac = ((rank - below) / inside).clamp(0, 1)
    width = (hist.hi - hist.lo) / n_bins
    b_hat = -(hist.lo + (b + frac) * width)  # (E,)
    return (b_hat - b_hat.mean()).float()

