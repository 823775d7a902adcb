"""Gated multi-head latent attention (MLA; DeepSeek-V2 arXiv 2405.04434, DeepSeek-V3 arXiv 2412.19437).

K and V are compressed jointly to a `kv_lora_rank` latent (plus a shared decoupled-RoPE key);
only that latent is cached for decoding. Optional NoPE (Kimi Linear) and a sigmoid output gate.

SKELETON (issue 2): parameter layout for params.py; issue 5 adds the forward pass and the cache.
"""
from __future__ import annotations

from torch import nn

from k3lite.config import MLAConfig
from k3lite.nn import RMSNorm


class GatedMLA(nn.Module):
    def __init__(self, d_model: int, cfg: MLAConfig, norm_eps: float = 1e-6):
        super().__init__()
        self.cfg = cfg
        H = cfg.n_heads
        if cfg.q_lora_rank > 0:
            self.wq_a = nn.Linear(d_model, cfg.q_lora_rank, bias=False)
            self.q_norm = RMSNorm(cfg.q_lora_rank, eps=norm_eps)
            self.wq_b = nn.Linear(cfg.q_lora_rank, H * cfg.qk_head_dim, bias=False)
        else:
            self.wq = nn.Linear(d_model, H * cfg.qk_head_dim, bias=False)
        self.wkv_a = nn.Linear(d_model, cfg.kv_lora_rank + cfg.qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(cfg.kv_lora_rank, eps=norm_eps)
        self.wkv_b = nn.Linear(cfg.kv_lora_rank, H * (cfg.qk_nope_head_dim + cfg.v_head_dim), bias=False)
        self.wo = nn.Linear(H * cfg.v_head_dim, d_model, bias=False)
        if cfg.output_gate:
            self.w_gate = nn.Linear(d_model, H * cfg.v_head_dim, bias=False)

    def forward(self, x, *args, **kwargs):  # filled in by issue 5
        raise NotImplementedError("GatedMLA.forward arrives with issue 5")
