"""The K3-lite hybrid stack: embedding -> [depth mix -> KDA|MLA -> depth mix -> MoE|dense] x L -> head.

SKELETON (issue 2): module layout for params.py; issue 5 adds forward, Trace and caches.
"""
from __future__ import annotations

from torch import nn

from k3lite.attnres import DepthAttention
from k3lite.config import K3Config
from k3lite.kda import KimiDeltaAttention
from k3lite.mla import GatedMLA
from k3lite.moe import LatentMoE
from k3lite.nn import RMSNorm, SwiGLU


class Layer(nn.Module):
    def __init__(self, cfg: K3Config, index: int):
        super().__init__()
        self.index = index
        self.mixer_type = cfg.layer_types()[index]
        self.ffn_type = cfg.ffn_types()[index]
        d = cfg.d_model
        self.attn_norm = RMSNorm(d, cfg.norm_eps)
        if self.mixer_type == "kda":
            assert cfg.kda is not None
            self.mixer = KimiDeltaAttention(d, cfg.kda, cfg.norm_eps)
        else:
            self.mixer = GatedMLA(d, cfg.mla, cfg.norm_eps)
        self.ffn_norm = RMSNorm(d, cfg.norm_eps)
        if self.ffn_type == "dense":
            self.ffn = SwiGLU(d, cfg.dense_ffn_dim)
        else:
            self.ffn = LatentMoE(d, cfg.moe, cfg.norm_eps)
        if cfg.attn_res != "standard":
            self.res_mixer = DepthAttention(d, cfg.norm_eps)  # before the mixer sublayer
            self.res_ffn = DepthAttention(d, cfg.norm_eps)  # before the FFN sublayer


class K3Model(nn.Module):
    def __init__(self, cfg: K3Config):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(Layer(cfg, i) for i in range(cfg.n_layers))
        if cfg.attn_res != "standard":
            self.res_final = DepthAttention(cfg.d_model, cfg.norm_eps)  # final AttnRes before the head
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        if not cfg.tie_embeddings:
            self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
