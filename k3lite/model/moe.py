"""Mixture of experts: router, balancing (aux-loss / bias / quantile), LatentMoE, shared experts, dispatch.

    x (B, T, d) --router(full d)--> scores (N, E) --select top-k--> topk_idx (N, k), topk_weight (N, k)
      |--down_proj d->l--> latent (N, l) --dispatch: sort by expert, one matmul per expert slice-->
      |                    combine: sum_k weight * expert(latent) --up_proj l->d--> routed (N, d)
      |--shared SwiGLU (full d, always on)--------------------------------------> + shared (N, d)

Sources
- Router, sigmoid scores, group-limited top-k, gate weights from the raw scores times `route_scale`: DeepSeek-V3
  (arXiv 2412.19437; `inference/model.py` `Gate`), matched in its two special cases: the chosen weights are
  renormalised over the k only for sigmoid scores (softmax scores are used as they are), and groups are ranked
  by their best score (amax) when selection has no bias, by the sum of their top-2 when it has one (bias, and
  quantile's beta, which plays the same role). tests/model/test_moe.py checks this against a port of `Gate`.
- Balancing, selected by `MoEConfig.balancing`:
    none      plain top-k of the raw scores.
    aux_loss  Switch / GShard auxiliary loss  L = alpha * E * sum_i f_i * P_i  (Fedus et al., arXiv 2101.03961),
              f_i = fraction of the N*k assignments that went to expert i, P_i = mean routing probability.
    bias      DeepSeek-V3 auxiliary-loss-free balancing (Wang et al., arXiv 2408.15664): a per-expert bias b is
              added to the scores for *selection only*; after each step b_i += gamma * sign(mean_load - load_i).
    quantile  Quantile Balancing as K3 trains with it (Kimi K3 Technical Report, arXiv 2607.24653, §2.3.3 Eq. 14;
              first described by J. Su, "MoE环游记 6", kexue.fm/archives/11619): the dual of the assignment LP
              "each token gets k experts, each expert gets N*k/E tokens". Route top-(k+1) on the biased score
              s + b (the previous b); the (k+1)-th is the token's cutoff alpha_i; then
              b^_j = -quantile_{1-k/E}(s_:,j - alpha), b = b^ - mean(b^), used from the next step on and frozen
              at inference (`quantile_bias`; `quantile_bias_histogram` is the pooled-histogram estimator the
              report uses at scale; `quantile_beta` is Su's order-statistic reading, the same up to the centring
              and the interpolation). No step size: b is *read off* the score distribution, like grading on a
              curve. At batch 1 / decode the running b is used unchanged.
  The `Router.bias` buffer holds b (bias method, selection = s + b) or beta = -b (quantile, selection = s - beta;
  the name and sign the shipped checkpoint stores; K3's checkpoint stores b as `e_score_correction_bias`).
- LatentMoE (NVIDIA, arXiv 2601.18089): experts run in a latent_dim < d_model space; only the latent crosses
  the expert-parallel interconnect. latent_dim = 0 is a classic MoE.
- Capacity factor with token dropping: Switch Transformer / GShard (first come, first served in token order).

Routed experts are stored as batched weights [E, in, out] so dispatch can run one matmul per expert slice.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from k3lite.model.config import MoEConfig
from k3lite.model.nn import GLUActivation, RMSNorm, SwiGLU


# ------------------------------------------------------------------------------------------ results
class RouterOutput(NamedTuple):
    topk_idx: torch.Tensor  # (N, k) long: chosen experts (selected on balanced scores)
    topk_weight: torch.Tensor  # (N, k): raw scores of the chosen experts (renormalised over k if sigmoid) x route_scale
    scores: torch.Tensor  # (N, E): raw router scores (sigmoid or softmax), no bias / beta
    aux_loss: torch.Tensor  # (): Switch aux loss when balancing == "aux_loss", else 0


class DispatchResult(NamedTuple):
    out: torch.Tensor  # (N, dim): sum over kept choices of weight * expert(x)
    kept: torch.Tensor  # (N, k) bool: False where the choice was dropped by the capacity limit
    load: torch.Tensor  # (E,) long: assignments requested per expert (before dropping)
    dropped: int  # number of (token, expert) assignments dropped
    capacity: int  # per-expert capacity in assignments (0 = unlimited)


class RoutingStats(NamedTuple):
    """What one MoE layer's routing looked like; the Trace stores this per layer."""

    topk_idx: torch.Tensor  # (B, T, k) long
    topk_weight: torch.Tensor  # (B, T, k)
    scores: torch.Tensor  # (B, T, E) raw router scores
    load: torch.Tensor  # (E,) long: tokens routed to each expert (requested, before capacity drops)
    max_violation: float  # max(load) / mean(load) - 1   (0 = perfectly balanced)
    cv: float  # std(load) / mean(load), population std
    dropped: int  # (token, expert) assignments dropped by the capacity limit
    entropy: float  # entropy of the load distribution load/sum(load), nats; log(E) = uniform
    dispatch_dim: int  # elements sent per (token, expert) copy: latent_dim, or d_model for a classic MoE
    #                    (bytes on the wire: k3lite.interconnect.wire_bytes_per_token, for a stated deployment)


class MoEOutput(NamedTuple):
    out: torch.Tensor  # (B, T, d)
    aux_loss: torch.Tensor  # ()
    stats: RoutingStats | None  # None when called with stats=False (the model asks only when tracing)


# ------------------------------------------------------------------------------------------ metrics
def routing_metrics(topk_idx: torch.Tensor, n_experts: int) -> tuple[torch.Tensor, float, float, float]:
    """(load (E,), max_violation, cv, entropy in nats) of a routing decision topk_idx (..., k)."""
    load = torch.bincount(topk_idx.reshape(-1), minlength=n_experts)  # (E,)
    if load.sum() == 0:
        return load, 0.0, 0.0, 0.0
    lf = load.double()
    mean = lf.mean()
    max_violation = float(lf.max() / mean - 1)
    cv = float(lf.std(unbiased=False) / mean)
    p = lf / lf.sum()
    entropy = float(-(p[p > 0] * p[p > 0].log()).sum())
    return load, max_violation, cv, entropy


def routing_stats(route: RouterOutput, shape: tuple[int, int], n_experts: int, dropped: int,
                  dispatch_dim: int) -> RoutingStats:
    """The RoutingStats of one layer's routing `route` (flat over N = B * T tokens; shape = (B, T)): what
    LatentMoE.forward reports, and all a page that shows only the routing needs (no expert has to run)."""
    load, max_violation, cv, entropy = routing_metrics(route.topk_idx, n_experts)
    return RoutingStats(topk_idx=route.topk_idx.view(*shape, -1), topk_weight=route.topk_weight.detach().view(*shape, -1),
                        scores=route.scores.detach().view(*shape, -1), load=load, max_violation=max_violation, cv=cv,
                        dropped=dropped, entropy=entropy, dispatch_dim=dispatch_dim)


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


# ------------------------------------------------------------------------------------------ router
class Router(nn.Module):
    """Scores for E routed experts from the *full* hidden state (sigmoid by default).

    forward(x (N, d) or (B, T, d), update_balance) -> RouterOutput with flat (N, ...) tensors.
    `update_balance=True` applies the bias / quantile update from this batch's routing (training steps);
    the update runs after selection, so this batch is routed with the previous bias / beta.
    """

    def __init__(self, d_model: int, cfg: MoEConfig):
        super().__init__()
        self.cfg = cfg
        self.weight = nn.Parameter(torch.empty(cfg.n_routed_experts, d_model))
        nn.init.normal_(self.weight, std=d_model**-0.5)
        # selection-only bias (DeepSeek-V3 bias method) / running beta (quantile balancing): not trained by SGD
        self.register_buffer("bias", torch.zeros(cfg.n_routed_experts), persistent=True)

    def score(self, x: torch.Tensor) -> torch.Tensor:
        """Raw scores (N, E) in fp32 from x (N, d)."""
        logits = F.linear(x.float(), self.weight.float())  # (N, E)
        return logits.sigmoid() if self.cfg.score_func == "sigmoid" else logits.softmax(dim=-1)

    def selection_scores(self, scores: torch.Tensor) -> torch.Tensor:
        """Scores used only to *choose* experts (N, E): raw, + bias, or - beta, then the group limit."""
        cfg = self.cfg
        if cfg.balancing == "bias":
            sel = scores + self.bias
        elif cfg.balancing == "quantile":
            sel = scores - self.bias
        else:
            sel = scores
        if cfg.n_groups > 1 and cfg.topk_groups < cfg.n_groups:
            n, e = sel.shape
            grouped = sel.view(n, cfg.n_groups, e // cfg.n_groups)  # (N, G, E/G)
            # DeepSeek-V3 Gate: with a selection bias rank groups by the sum of their top-2, without one by amax
            biased = cfg.balancing in ("bias", "quantile")
            group_score = (grouped.topk(min(2, grouped.shape[-1]), dim=-1).values.sum(-1) if biased
                           else grouped.amax(-1))  # (N, G)
            keep = group_score.topk(cfg.topk_groups, dim=-1).indices  # (N, topk_groups)
            mask = torch.ones(n, cfg.n_groups, dtype=torch.bool, device=sel.device).scatter_(1, keep, False)
            sel = grouped.masked_fill(mask[..., None], float("-inf")).view(n, e)
        return sel

    def select(self, scores: torch.Tensor) -> torch.Tensor:
        """topk_idx (N, k) from raw scores (N, E) with the current bias / beta and group limit."""
        return self.selection_scores(scores).topk(self.cfg.top_k, dim=-1).indices

    def forward(self, x: torch.Tensor, update_balance: bool = False) -> RouterOutput:
        cfg = self.cfg
        if x.shape[-1] != self.weight.shape[1]:
            raise ValueError(f"router input dim {x.shape[-1]} != d_model {self.weight.shape[1]}")
        x = x.reshape(-1, x.shape[-1])  # (N, d)
        scores = self.score(x)  # (N, E)
        topk_idx = self.select(scores.detach())  # (N, k)
        weight = scores.gather(1, topk_idx)  # (N, k) raw scores of the chosen experts
        if cfg.score_func == "sigmoid":  # as DeepSeek-V3's Gate: softmax scores already sum to 1 over all E
            weight = weight / weight.sum(-1, keepdim=True).clamp_min(1e-20)
        weight = weight * cfg.route_scale

        aux_loss = scores.new_zeros(())
        if cfg.balancing == "aux_loss" and x.shape[0] > 0:
            e = cfg.n_routed_experts
            f = torch.bincount(topk_idx.reshape(-1), minlength=e).float() / topk_idx.numel()  # (E,)
            probs = scores if cfg.score_func == "softmax" else scores / scores.sum(-1, keepdim=True)
            aux_loss = cfg.aux_loss_alpha * e * (f * probs.mean(0)).sum()

        if update_balance and x.shape[0] > 0:
            self.update_balance(scores, topk_idx)
        return RouterOutput(topk_idx, weight.to(x.dtype), scores, aux_loss)

    @torch.no_grad()
    def update_balance(self, scores: torch.Tensor, topk_idx: torch.Tensor | None = None) -> None:
        """One bias / quantile update from a batch's raw scores (N, E) (no-op for the other methods). The bias
        method needs the batch's choices `topk_idx` (N, k) (selected here when not given); quantile reads only the
        scores."""
        cfg = self.cfg
        if cfg.balancing == "bias":
            topk_idx = self.select(scores) if topk_idx is None else topk_idx
            load = torch.bincount(topk_idx.reshape(-1), minlength=cfg.n_routed_experts).float()
            self.bias += cfg.bias_gamma * torch.sign(load.mean() - load)
        elif cfg.balancing == "quantile":  # Eq. 14 on b = -beta
            self.bias.copy_(-quantile_bias(scores, cfg.top_k, -self.bias))


def selection_stability(router: Router, x: torch.Tensor, eps: float = 1e-3, seed: int = 0, *,
                        scores: torch.Tensor | None = None, chosen: torch.Tensor | None = None) -> float:
    """Fraction of top-k choices that flip when the raw scores get Gaussian noise of std `eps`.

    0 = perfectly stable; the "sensitive selection" problem: near-tied scores make top-k jumpy, so a tiny
    change of weights or input reroutes a token (and its bytes) to a different GPU. `scores` (N, E) =
    router.score(x) and `chosen` (N, k) = router.select(scores), if the caller has them already.
    """
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    with torch.no_grad():
        scores = router.score(x.reshape(-1, x.shape[-1])) if scores is None else scores  # (N, E)
        gen = torch.Generator(device="cpu").manual_seed(seed)
        noise = torch.randn(scores.shape, generator=gen).to(scores.device) * eps
        a = router.select(scores) if chosen is None else chosen  # (N, k)
        b = router.select(scores + noise)  # (N, k)
        ma = torch.zeros_like(scores, dtype=torch.bool).scatter_(1, a, True)
        mb = torch.zeros_like(scores, dtype=torch.bool).scatter_(1, b, True)
        if a.numel() == 0:
            return 0.0
        return float(1 - (ma & mb).sum() / a.numel())


# ------------------------------------------------------------------------------------------ experts
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


# ------------------------------------------------------------------------------------------ the layer
class LatentMoE(nn.Module):
    """Route on the full hidden state; dispatch a latent (d_model -> latent_dim) when latent_dim > 0.

    latent_norm_at "dispatch":  y = up_proj( sum_j w_j * expert_j( RMSNorm(down_proj x) ) ) + shared(x)
    latent_norm_at "combine" (K3, report Eq. 11; `routed_expert_norm` in the released modeling_kimi_linear.py):
                                y = up_proj( RMSNorm( sum_j w_j * expert_j(down_proj x) ) ) + shared(x)
    With latent_dim = 0 the experts work on x itself (classic DeepSeek-style MoE). Shared experts always see
    the full-d input. forward(x (B, T, d), update_balance, stats) -> MoEOutput(out (B, T, d), aux_loss, stats);
    `stats=False` skips the RoutingStats (~100 small ops a layer that only a Trace or a page reads).
    """

    def __init__(self, d_model: int, cfg: MoEConfig, norm_eps: float = 1e-6, activation: GLUActivation | None = None):
        super().__init__()
        self.cfg = cfg
        self.d_model = d_model
        if cfg.latent_dim > d_model:
            raise ValueError(f"moe.latent_dim ({cfg.latent_dim}) must be <= d_model ({d_model})")
        self.router = Router(d_model, cfg)
        expert_dim = cfg.latent_dim or d_model
        if cfg.latent_dim:
            self.down_proj = nn.Linear(d_model, cfg.latent_dim, bias=False)  # fc1_latent_proj
            self.latent_norm = RMSNorm(cfg.latent_dim, eps=norm_eps) if cfg.latent_norm else None
            self.up_proj = nn.Linear(cfg.latent_dim, d_model, bias=False)  # fc2_latent_proj
        self.experts = RoutedExperts(cfg.n_routed_experts, expert_dim, cfg.expert_ffn_dim, activation)
        if cfg.n_shared_experts:
            # always-on shared experts work on the full-d input; merged into one gated FFN of n x size (as K3's code)
            self.shared = SwiGLU(d_model, cfg.n_shared_experts * cfg.one_shared_ffn_dim, activation)

    @property
    def dispatch_dim(self) -> int:
        return self.cfg.latent_dim or self.d_model

    def forward(self, x: torch.Tensor, update_balance: bool = False, stats: bool = True) -> MoEOutput:
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"LatentMoE expects x (B, T, {self.d_model}), got {tuple(x.shape)}")
        cfg = self.cfg
        b, t, d = x.shape
        flat = x.reshape(b * t, d)  # (N, d)
        route = self.router(flat, update_balance)  # flat (N, k) / (N, E)
        h = flat
        if cfg.latent_dim:
            h = self.down_proj(flat)  # (N, l)
            if self.latent_norm is not None and cfg.latent_norm_at == "dispatch":
                h = self.latent_norm(h)
        capacity = capacity_for(b * t, cfg.top_k, cfg.n_routed_experts, cfg.capacity_factor)
        res = dispatch_combine(self.experts, h, route.topk_idx, route.topk_weight, capacity)  # (N, l)
        if cfg.latent_dim:
            routed = res.out  # (N, l) the aggregated expert output
            if self.latent_norm is not None and cfg.latent_norm_at == "combine":
                routed = self.latent_norm(routed)
            y = self.up_proj(routed)  # (N, d)
        else:
            y = res.out  # (N, d)
        if cfg.n_shared_experts:
            y = y + self.shared(flat)
        if not stats:
            return MoEOutput(y.view(b, t, d), route.aux_loss, None)
        return MoEOutput(y.view(b, t, d), route.aux_loss, routing_stats(route, (b, t), cfg.n_routed_experts,
                                                                        res.dropped, self.dispatch_dim))


def released_gate_reference(x: torch.Tensor, weight: torch.Tensor, correction_bias: torch.Tensor, top_k: int,
                            routed_scaling_factor: float = 1.0, renormalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """K3's router as its released code computes it (`KimiMoEGate.forward`, modeling_kimi_linear.py, one expert
    group): fp32 logits, sigmoid scores, top-k of scores + e_score_correction_bias, gate weights from the raw
    scores, renormalised over the k, times routed_scaling_factor. x (N, d) -> (topk_idx (N, k), weight (N, k)),
    one token at a time. (k3lite's Router stores beta = -e_score_correction_bias for quantile balancing.)"""
    idx, wts = [], []
    for row in x.float():
        scores = torch.sigmoid(weight.float() @ row)  # (E,)
        chosen = torch.topk(scores + correction_bias.float(), top_k).indices  # (k,)
        w = scores[chosen]
        if top_k > 1 and renormalize:
            w = w / (w.sum() + 1e-20)
        idx.append(chosen)
        wts.append(w * routed_scaling_factor)
    return torch.stack(idx), torch.stack(wts)


def latent_moe_reference(moe: "LatentMoE", x: torch.Tensor) -> torch.Tensor:
    """A LatentMoE layer token by token, with the bookkeeping of the released `KimiSparseMoeBlock.forward`
    (report Eq. 11 when latent_norm_at == "combine"): route on the full x, down-project, run each chosen expert,
    sum with the gate weights, RMSNorm the *sum*, up-project, add the shared experts of the full x.
    x (B, T, d) -> (B, T, d). No capacity limit (K3 drops no tokens)."""
    cfg = moe.cfg
    flat = x.reshape(-1, x.shape[-1])
    idx, wts = released_gate_reference(flat, moe.router.weight, -moe.router.bias if cfg.balancing == "quantile"
                                       else moe.router.bias if cfg.balancing == "bias" else torch.zeros_like(moe.router.bias),
                                       cfg.top_k, cfg.route_scale)
    rows = []
    for n, token in enumerate(flat):
        h = moe.down_proj(token[None]) if cfg.latent_dim else token[None]  # (1, l)
        if cfg.latent_dim and moe.latent_norm is not None and cfg.latent_norm_at == "dispatch":
            h = moe.latent_norm(h)
        y = sum(wts[n, j].to(h.dtype) * moe.experts.one(int(idx[n, j]), h) for j in range(cfg.top_k))  # (1, l)
        if cfg.latent_dim:
            if moe.latent_norm is not None and cfg.latent_norm_at == "combine":
                y = moe.latent_norm(y)
            y = moe.up_proj(y)
        if cfg.n_shared_experts:
            y = y + moe.shared(token[None])
        rows.append(y[0])
    return torch.stack(rows).view_as(x)


def active_expert_flops_per_token(dim: int, ffn_dim: int, top_k: int) -> int:
    """Multiply-adds x 2 of the routed experts for one token: top_k SwiGLUs of 3 matmuls dim x ffn."""
    return 2 * 3 * dim * ffn_dim * top_k
