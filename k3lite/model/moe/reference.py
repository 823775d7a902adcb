"""K3's released code as slow references: its gate (`KimiMoEGate.forward`) and its MoE block
(`KimiSparseMoeBlock.forward`), token by token, to check the Router and LatentMoE against.
"""
from __future__ import annotations

import torch

from k3lite.model.moe.latent import LatentMoE


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
