"""The router: scores for E experts from the full hidden state, the top-k choice on balanced scores, the gate weights.

`Router` matches DeepSeek-V3's `Gate` (sigmoid or softmax scores, group-limited top-k, weights from the raw scores
renormalised over the k for sigmoid, times `route_scale`) and applies the balancing method of its `MoEConfig`:
none, the Switch aux loss, DeepSeek-V3's sign-updated bias, or quantile balancing (k3lite.model.moe.balancing).
`selection_stability` measures how often top-k flips under a little noise.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from k3lite.model.config import MoEConfig
from k3lite.model.moe.balancing import quantile_bias


class RouterOutput(NamedTuple):
    topk_idx: torch.Tensor  # (N, k) long: chosen experts (selected on balanced scores)
    topk_weight: torch.Tensor  # (N, k): raw scores of the chosen experts (renormalised over k if sigmoid) x route_scale
    scores: torch.Tensor  # (N, E): raw router scores (sigmoid or softmax), no bias / beta
    aux_loss: torch.Tensor  # (): Switch aux loss when balancing == "aux_loss", else 0



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
