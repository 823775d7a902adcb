"""Gated multi-head latent attention (MLA; DeepSeek-V2 arXiv 2405.04434, DeepSeek-V3 arXiv 2412.19437).

K and V are compressed jointly to a `kv_lora_rank` latent c (plus one shared decoupled-RoPE key k_r
of `qk_rope_head_dim` dims, shared by all heads); only (c, k_r) is cached for decoding:

    [c_t ; k_r,t] = W_kv_a x_t                     c_t: (kv_lora_rank,)   k_r,t: (qk_rope_head_dim,)
    c_t = RMSNorm(c_t)
    [k_nope,t,h ; v_t,h] = W_kv_b[h] c_t            per head h
    q_t,h = [q_nope ; q_rope]  (W_q x_t, or W_q_b RMSNorm(W_q_a x_t) when q_lora_rank > 0)
    score(t, s, h) = (q_nope,t,h . k_nope,s,h + q_rope,t,h . k_r,s) / sqrt(qk_head_dim)
    o_t,h = sum_s softmax_s(score) v_s,h            causal: s <= t
    out_t = W_o( sigmoid(W_gate x_t) * o_t )        the sigmoid output gate (gated attention,
                                                    Qiu et al. arXiv 2505.06708), when output_gate

NoPE (Kimi Linear, arXiv 2510.26692): `use_rope=False` skips the rotation; the `qk_rope_head_dim`
dims stay as a plain shared key part, position information comes from the KDA layers.

Two computations of the same attention:
  * `naive` (the reference, used for prefill/training): expand k_nope and v for every cached token.
  * `absorbed` (decode): fold W_kv_b's key half into the query and its value half into the output,
    so attention runs directly against the cached latent (DeepSeek-V3 inference `attn_impl="absorb"`).
    The cache is never expanded. `tests/model/test_mla.py` checks the two agree to 1e-5 (fp32).
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from k3lite.model.config import MLAConfig
from k3lite.model.nn import RMSNorm


class MLACache(NamedTuple):
    """What MLA keeps per past token: the normalised KV latent and the shared rope key (no per-head K/V)."""

    latent: torch.Tensor  # (B, S, kv_lora_rank)
    k_rope: torch.Tensor  # (B, S, qk_rope_head_dim)

    @property
    def length(self) -> int:
        return self.latent.shape[1]

    def nbytes(self) -> int:
        return self.latent.numel() * self.latent.element_size() + self.k_rope.numel() * self.k_rope.element_size()


class MLAStats(NamedTuple):
    attn: torch.Tensor | None  # (B, H, T, S) attention probabilities (trace=True), else None


class MLAOutput(NamedTuple):
    out: torch.Tensor  # (B, T, d_model)
    cache: MLACache | None
    stats: MLAStats


def rope_cos_sin(positions: torch.Tensor, dim: int, theta: float = 10000.0):
    """cos, sin tables (T, dim/2) for rotary embeddings (Su et al. arXiv 2104.09864)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32, device=positions.device) / dim))
    angles = positions.float()[:, None] * inv_freq[None, :]  # (T, dim/2)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x[..., 2i], x[..., 2i+1]) of x (..., T, dim) by the position angle."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2).to(x.dtype)


class GatedMLA(nn.Module):
    """Multi-head latent attention with an optional low-rank q, NoPE option and sigmoid output gate."""

    def __init__(self, d_model: int, cfg: MLAConfig, norm_eps: float = 1e-6, rope_theta: float = 10000.0):
        super().__init__()
        self.cfg = cfg
        self.rope_theta = rope_theta
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
        self.softmax_scale = cfg.qk_head_dim**-0.5

    # ------------------------------------------------------------------------------------ pieces
    def _queries(self, x: torch.Tensor):
        c = self.cfg
        B, T, _ = x.shape
        q = self.wq_b(self.q_norm(self.wq_a(x))) if c.q_lora_rank > 0 else self.wq(x)  # (B, T, H*Dqk)
        q = q.view(B, T, c.n_heads, c.qk_head_dim).transpose(1, 2)  # (B, H, T, Dqk)
        return q[..., : c.qk_nope_head_dim], q[..., c.qk_nope_head_dim :]  # (B,H,T,Dn), (B,H,T,Dr)

    def _latent(self, x: torch.Tensor):
        c = self.cfg
        kv = self.wkv_a(x)  # (B, T, R + Dr)
        latent = self.kv_norm(kv[..., : c.kv_lora_rank])  # (B, T, R)
        k_rope = kv[..., c.kv_lora_rank :]  # (B, T, Dr)
        return latent, k_rope

    def _rope(self, q_rope, k_rope, start: int):
        """Rotate q_rope (B,H,T,Dr) at positions start.. and k_rope (B,S,Dr) at positions 0..S-1."""
        c = self.cfg
        if not c.use_rope or c.qk_rope_head_dim == 0:
            return q_rope, k_rope
        T, S = q_rope.shape[2], k_rope.shape[1]
        cos, sin = rope_cos_sin(torch.arange(S, device=k_rope.device), c.qk_rope_head_dim, self.rope_theta)
        k_rope = apply_rope(k_rope, cos, sin)  # (B, S, Dr)
        q_rope = apply_rope(q_rope, cos[start : start + T], sin[start : start + T])  # (B, H, T, Dr)
        return q_rope, k_rope

    @staticmethod
    def _causal_mask(T: int, S: int, device) -> torch.Tensor:
        """True where query i (absolute position S-T+i) may see key j: j <= S - T + i."""
        i = torch.arange(T, device=device)[:, None]
        j = torch.arange(S, device=device)[None, :]
        return j <= (S - T) + i  # (T, S)

    # ------------------------------------------------------------------------------------ forward
    def forward(self, x: torch.Tensor, cache: MLACache | None = None, use_cache: bool = False,
                trace: bool = False, impl: str | None = None) -> MLAOutput:
        """x (B, T, d_model) -> MLAOutput. `cache` holds earlier tokens; the new tokens follow them.

        impl: "naive" (expand K/V from the latent) or "absorbed" (attend in latent space). Default:
        naive when there is no cache (prefill), absorbed when decoding against a cache.
        """
        if x.dim() != 3:
            raise ValueError(f"GatedMLA expects x of shape (B, T, d_model), got {tuple(x.shape)}")
        c = self.cfg
        B, T, _ = x.shape
        impl = impl or ("absorbed" if cache is not None else "naive")
        if impl not in ("naive", "absorbed"):
            raise ValueError(f"impl must be 'naive' or 'absorbed', got {impl!r}")
        q_nope, q_rope = self._queries(x)  # (B, H, T, Dn), (B, H, T, Dr)
        latent, k_rope = self._latent(x)  # (B, T, R), (B, T, Dr)
        start = 0
        if cache is not None:
            if cache.latent.shape[0] != B:
                raise ValueError(f"cache batch {cache.latent.shape[0]} != input batch {B}")
            start = cache.length
            latent = torch.cat([cache.latent, latent], dim=1)  # (B, S, R)
            k_rope = torch.cat([cache.k_rope, k_rope], dim=1)  # (B, S, Dr)
        new_cache = MLACache(latent, k_rope) if use_cache else None  # cache stores the un-rotated key
        S = latent.shape[1]
        q_rope_r, k_rope_r = self._rope(q_rope, k_rope, start)  # (B,H,T,Dr), (B,S,Dr)

        if impl == "naive" and not trace:  # no probabilities to show: one fused attention call
            o = self._attend_fused(q_nope, q_rope_r, latent, k_rope_r)  # (B, H, T, Dv)
            return self._output(x, o, new_cache, None)
        w_kv_b = self.wkv_b.weight.view(c.n_heads, c.qk_nope_head_dim + c.v_head_dim, c.kv_lora_rank)
        w_uk = w_kv_b[:, : c.qk_nope_head_dim]  # (H, Dn, R)
        w_uv = w_kv_b[:, c.qk_nope_head_dim :]  # (H, Dv, R)
        rope_scores = torch.einsum("bhtr,bsr->bhts", q_rope_r, k_rope_r)  # (B, H, T, S)
        if impl == "naive":
            k_nope = torch.einsum("bsr,hdr->bhsd", latent, w_uk)  # (B, H, S, Dn)
            v = torch.einsum("bsr,hdr->bhsd", latent, w_uv)  # (B, H, S, Dv)
            scores = q_nope @ k_nope.transpose(-1, -2) + rope_scores  # (B, H, T, S)
        else:
            q_latent = torch.einsum("bhtd,hdr->bhtr", q_nope, w_uk)  # (B, H, T, R): W_uk absorbed into q
            scores = torch.einsum("bhtr,bsr->bhts", q_latent, latent) + rope_scores  # (B, H, T, S)
        scores = scores * self.softmax_scale
        scores = scores.masked_fill(~self._causal_mask(T, S, x.device), float("-inf"))
        attn = scores.float().softmax(dim=-1).to(x.dtype)  # (B, H, T, S)
        if impl == "naive":
            o = attn @ v  # (B, H, T, Dv)
        else:
            o_latent = attn @ latent.unsqueeze(1)  # (B, H, T, R): mix cached latents first ...
            o = torch.einsum("bhtr,hdr->bhtd", o_latent, w_uv)  # (B, H, T, Dv) ... then W_uv absorbed
        return self._output(x, o, new_cache, attn.detach() if trace else None)

    def _attend_fused(self, q_nope, q_rope, latent, k_rope) -> torch.Tensor:
        """The naive computation through F.scaled_dot_product_attention: K and V expanded from the latent by
        one matmul, the shared rope key broadcast over heads. Same numbers up to fp32 rounding; on CPU 3-5x
        faster than the einsums at the pages' prompt sizes (`python -m k3lite.bench model --profile`)."""
        c = self.cfg
        (B, H, T, _), S = q_nope.shape, latent.shape[1]
        kv = F.linear(latent, self.wkv_b.weight).view(B, S, H, -1).transpose(1, 2)  # (B, H, S, Dn + Dv)
        k_nope, v = kv.split([c.qk_nope_head_dim, c.v_head_dim], dim=-1)  # (B, H, S, Dn), (B, H, S, Dv)
        q = torch.cat([q_nope, q_rope], dim=-1)  # (B, H, T, Dqk)
        k = torch.cat([k_nope, k_rope[:, None].expand(B, H, S, k_rope.shape[-1])], dim=-1)  # (B, H, S, Dqk)
        mask = None if T == S else self._causal_mask(T, S, q.device)  # (T, S) when continuing a cache
        # v zero-padded to q's head size: with unequal sizes the CPU falls back to a 4x slower kernel
        v = F.pad(v, (0, max(0, q.shape[-1] - v.shape[-1])))  # (B, H, S, max(Dqk, Dv))
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None, scale=self.softmax_scale)
        return o[..., : c.v_head_dim]  # (B, H, T, Dv)

    def _output(self, x, o, new_cache, attn) -> MLAOutput:
        """o (B, H, T, Dv) -> the gated output projection."""
        c = self.cfg
        B, T, _ = x.shape
        o = o.transpose(1, 2).reshape(B, T, c.n_heads * c.v_head_dim)  # (B, T, H*Dv)
        if c.output_gate:
            o = torch.sigmoid(self.w_gate(x)) * o  # (B, T, H*Dv) elementwise sigmoid gate
        out = self.wo(o)  # (B, T, d_model)
        return MLAOutput(out, new_cache, MLAStats(attn))


def mla_reference(layer: GatedMLA, x: torch.Tensor) -> torch.Tensor:
    """Slow, obviously-correct MLA: a python loop over heads and query positions, softmax per row."""
    c = layer.cfg
    B, T, _ = x.shape
    q = layer.wq_b(layer.q_norm(layer.wq_a(x))) if c.q_lora_rank > 0 else layer.wq(x)
    q = q.view(B, T, c.n_heads, c.qk_head_dim)
    kv = layer.wkv_a(x)
    latent, k_r = layer.kv_norm(kv[..., : c.kv_lora_rank]), kv[..., c.kv_lora_rank :]
    kvb = layer.wkv_b(latent).view(B, T, c.n_heads, c.qk_nope_head_dim + c.v_head_dim)
    k_nope, v = kvb[..., : c.qk_nope_head_dim], kvb[..., c.qk_nope_head_dim :]
    if c.use_rope and c.qk_rope_head_dim:
        cos, sin = rope_cos_sin(torch.arange(T), c.qk_rope_head_dim, layer.rope_theta)
        k_r = apply_rope(k_r, cos, sin)
        q = torch.cat([q[..., : c.qk_nope_head_dim],
                       apply_rope(q[..., c.qk_nope_head_dim :].transpose(1, 2), cos, sin).transpose(1, 2)], -1)
    out = torch.zeros(B, T, c.n_heads, c.v_head_dim, dtype=x.dtype)
    for h in range(c.n_heads):
        k = torch.cat([k_nope[:, :, h], k_r], dim=-1)  # (B, T, Dqk)
        for t in range(T):
            s = (k[:, : t + 1] @ q[:, t, h].unsqueeze(-1)).squeeze(-1) * layer.softmax_scale  # (B, t+1)
            out[:, t, h] = (F.softmax(s, dim=-1).unsqueeze(-1) * v[:, : t + 1, h]).sum(1)
    o = out.reshape(B, T, -1)
    if c.output_gate:
        o = torch.sigmoid(layer.w_gate(x)) * o
    return layer.wo(o)
