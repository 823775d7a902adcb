"""Attention Residuals (Kimi Team, arXiv 2603.15031): softmax over depth instead of a plain sum.

A standard pre-norm residual gives sublayer l the input h_l = v_0 + v_1 + ... + v_(l-1): every earlier
output (v_0 = the token embedding) with weight 1. Attention Residuals keep the outputs apart and let
each sublayer (two per layer: before the mixer, before the FFN) choose how much of each it reads:

    a_(i->l) = softmax_i( w_l . RMSNorm(v_i) )        w_l: a learned pseudo-query, zero-initialised
    h_l      = sum_i a_(i->l) v_i                      (B, T, d)

so at initialisation every source gets the same weight 1/N. A final AttnRes builds the LM head's input.

Block variant (the one K3 uses): sublayers are grouped into blocks of S. Inside a block the outputs are
summed into a partial sum; a sublayer attends over [embedding, completed block sums ..., current partial
sum (if not empty)]. Memory per token drops from O(L d) to O((L/S) d). Two limits fall out:
  * S = 1: every block is one sublayer -> exactly Full AttnRes (tested).
  * one block (S >= 2L): sources are [embedding, sum of all outputs so far] -> a standard residual with
    the embedding kept apart; at zero init the mix is (v_0 + sum)/2, and the pre-norm RMSNorm of every
    sublayer is scale-invariant, so the model computes the same function as a standard residual (tested).

Neighbours: DenseFormer (static learned depth weights, arXiv 2402.02622), Hyper-Connections / mHC
(arXiv 2409.19606), MUDDFormer (arXiv 2502.12170).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from k3lite.model.config import ATTN_RES_MODES
from k3lite.model.nn import RMSNorm


class DepthMix(NamedTuple):
    h: torch.Tensor  # (B, T, d) the sublayer's input
    weights: torch.Tensor  # (B, T, N) weight on each source (softmax for full/block; all ones for standard)
    sources: tuple[int, ...]  # block index of each source: 0 = embedding, j = block j (full: sublayer j-1)


class DepthAttention(nn.Module):
    """One sublayer's input: h = sum_i softmax_i(w . RMSNorm(v_i)) v_i; w zero-initialised."""

    def __init__(self, d_model: int, norm_eps: float = 1e-6):
        super().__init__()
        self.query = nn.Parameter(torch.zeros(d_model))  # pseudo-query w_l: zero -> uniform weights
        self.key_norm = RMSNorm(d_model, eps=norm_eps)

    def forward(self, sources: torch.Tensor, inv_rms: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """sources (N, B, T, d) -> h (B, T, d), weights (B, T, N) summing to 1 over N.

        `inv_rms` (N, B, T), each source's 1 / rms (what key_norm divides by), if the caller has it: then
        RMSNorm(v) . w = (v . (weight * w)) / rms(v), so a source that several sublayers read is normalised
        once, not by each (the same numbers up to fp32 rounding; ResidualStream's inference path).
        """
        if sources.dim() != 4 or sources.shape[-1] != self.query.shape[0]:
            raise ValueError(f"DepthAttention expects sources (N, B, T, {self.query.shape[0]}), got {tuple(sources.shape)}")
        # a matrix-vector product and a weighted sum over N, not einsum: einsum turns both into a bmm with one
        # tiny batch entry per (b, t), which the CPU runs as a loop (9,600 aten calls at T=400; bench model)
        if inv_rms is None:
            logits = self.key_norm(sources) @ self.query.to(sources.dtype)  # (N, B, T)
        else:
            wq = (self.key_norm.weight.float() * self.query.float()).to(sources.dtype)  # (d,)
            logits = (sources @ wq) * inv_rms  # (N, B, T)
        weights = logits.float().softmax(dim=0).to(sources.dtype)  # (N, B, T)
        h = (weights[..., None] * sources).sum(0)  # (B, T, d)
        return h, weights.permute(1, 2, 0)  # (B, T, d), (B, T, N)


def depth_attention_reference(attn: DepthAttention, sources: list[torch.Tensor]) -> torch.Tensor:
    """Slow, obviously-correct mix: explicit exp / normaliser, one source at a time."""
    scores = [torch.exp((attn.key_norm(v) * attn.query).sum(-1, keepdim=True)) for v in sources]  # (B,T,1) each
    total = sum(scores)
    return sum(s / total * v for s, v in zip(scores, sources))


# ------------------------------------------------------------------------------------------ the stream
class ResidualStream:
    """Bookkeeping of what earlier sublayers produced, for one forward pass.

    Usage per sublayer:  mix = stream.mix(depth_attn); out = f(norm(mix.h)); stream.add(out).
    The last read is `stream.mix(final_attn)` before the LM head. Depth mixing is per token (no time
    mixing), so incremental decoding needs no cache for it.
    """

    def __init__(self, embedding: torch.Tensor, mode: str = "full", block_size: int = 1, max_sources: int = 0):
        """`max_sources` > 0 (the most sources any mix will read) turns on the inference path when autograd is
        off: sources are written once into one preallocated buffer (no torch.stack per mix) and each source's
        1 / rms is computed once for all the mixes that read it (DepthAttention's `inv_rms`)."""
        if mode not in ATTN_RES_MODES:
            raise ValueError(f"attn_res mode must be one of {ATTN_RES_MODES}, got {mode!r}")
        if not isinstance(block_size, int) or block_size <= 0:
            raise ValueError(f"attn_res_block_size must be a positive integer, got {block_size!r}")
        self.mode = mode
        self.block_size = block_size if mode == "block" else 1
        self.blocks: list[torch.Tensor] = [embedding]  # completed sources: embedding, then block sums
        self.partial: torch.Tensor | None = None  # sum of the current block's outputs so far
        self.in_partial = 0  # how many outputs the partial sum holds
        self.total = embedding if mode == "standard" else None  # standard: the running sum
        self.n_outputs = 0
        self._buf = self._inv_rms = None
        if max_sources > 0 and mode != "standard" and not torch.is_grad_enabled():  # in-place writes: no autograd
            self._buf = embedding.new_empty(max_sources, *embedding.shape)  # (S, B, T, d) source j in slot j
            self._inv_rms = embedding.new_empty(max_sources, *embedding.shape[:-1], dtype=torch.float32)  # (S, B, T)
            self._normed = 0  # slots [0, _normed) hold their current 1 / rms
            self._eps: float | None = None
            self.blocks = [self._buf[0].copy_(embedding)]

    def sources(self) -> list[torch.Tensor]:
        return self.blocks + ([self.partial] if self.partial is not None else [])

    def mix(self, attn: DepthAttention | None) -> DepthMix:
        if self.mode == "standard":
            B, T, _ = self.total.shape
            n = 1 + self.n_outputs
            ones = torch.ones(B, T, n, dtype=self.total.dtype, device=self.total.device)  # plain sum: weight 1 each
            return DepthMix(self.total, ones, tuple(range(n)))
        if attn is None:
            raise ValueError(f"attn_res mode {self.mode!r} needs a DepthAttention for every sublayer")
        srcs = self.sources()
        n = len(srcs)
        if self._buf is None:
            h, w = attn(torch.stack(srcs))  # (B, T, d), (B, T, N)
        else:
            h, w = attn(self._buf[:n], self._source_inv_rms(n, attn.key_norm.eps))  # (B, T, d), (B, T, N)
        return DepthMix(h, w, tuple(range(n)))

    def _source_inv_rms(self, n: int, eps: float) -> torch.Tensor:
        """1 / rms of sources [0, n) (N, B, T), computing only the ones written since the last call."""
        if eps != self._eps:
            self._eps, self._normed = eps, 0
        if self._normed < n:
            v = self._buf[self._normed : n].float()  # (n - normed, B, T, d)
            torch.rsqrt(v.square().mean(-1).add_(eps), out=self._inv_rms[self._normed : n])
            self._normed = n
        return self._inv_rms[:n]

    def add(self, out: torch.Tensor) -> None:
        self.n_outputs += 1
        if self.mode == "standard":
            self.total = self.total + out
            return
        if self._buf is not None:  # the partial sum lives in the buffer slot after the completed blocks
            slot = len(self.blocks)
            self.partial = self._buf[slot].copy_(out) if self.partial is None else self.partial.add_(out)
            self._normed = min(self._normed, slot)
        else:
            self.partial = out if self.partial is None else self.partial + out
        self.in_partial += 1
        if self.in_partial == self.block_size:  # block complete: its sum becomes a source of its own
            self.blocks.append(self.partial)
            self.partial, self.in_partial = None, 0


# ----------------------------------------------------------------------- analytic memory / read model
@dataclass(frozen=True)
class AttnResCost:
    """Per-token cost of the depth mixing of one forward pass (analytic; see `attnres_cost`)."""

    mode: str
    n_sublayers: int
    block_size: int
    live_sources: int  # vectors of size d one token must keep until the last sublayer (peak)
    live_bytes: int  # live_sources * d * bytes
    source_reads: int  # vectors of size d read by all depth mixes together (incl. the final one)
    read_bytes: int
    flops: int  # ~ 4 d per source per mix (norm, dot, scale-add); standard: one add of d per sublayer


def block_size_words(block_size: int) -> str:
    """A block size (in sublayers, as the model counts it) in the unit K3's released config uses, layers:
    24 -> "12 layers (24 sublayers)"; an odd size has no whole-layer form: 5 -> "5 sublayers"."""
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1 sublayer, got {block_size}")
    if block_size % 2:
        return f"{block_size} sublayers"
    layers = block_size // 2
    return f"{layers} layer{'s' if layers > 1 else ''} ({block_size} sublayers)"


def _sources_at(mode: str, sublayer: int, block_size: int) -> int:
    """How many sources sublayer `sublayer` (0-based; n_sublayers = the final mix) reads."""
    if mode == "standard":
        return 1  # the running sum
    if mode == "full":
        return 1 + sublayer
    done, rem = divmod(sublayer, block_size)
    return 1 + done + (1 if rem else 0)


def attnres_cost(n_layers: int, d_model: int, mode: str, block_size: int = 1, bytes_per_elem: int = 2) -> AttnResCost:
    """Memory and reads of depth mixing per token for `n_layers` layers (2 sublayers each) + the final mix.

    Counted: every source vector a mix reads (d elements each) and the peak number of vectors kept per
    token. Not counted: the sublayers themselves (identical in all modes). `block_size` is in sublayers.
    """
    if n_layers <= 0 or d_model <= 0 or bytes_per_elem <= 0:
        raise ValueError("n_layers, d_model and bytes_per_elem must be positive")
    if mode not in ATTN_RES_MODES:
        raise ValueError(f"mode must be one of {ATTN_RES_MODES}, got {mode!r}")
    if block_size <= 0:
        raise ValueError(f"block_size must be positive, got {block_size}")
    n_sub = 2 * n_layers
    reads = sum(_sources_at(mode, s, block_size) for s in range(n_sub + 1))
    live = max(_sources_at(mode, s, block_size) for s in range(n_sub + 1))
    flops = (2 * d_model * n_sub) if mode == "standard" else 4 * d_model * reads
    return AttnResCost(mode, n_sub, block_size if mode == "block" else 1, live, live * d_model * bytes_per_elem,
                       reads, reads * d_model * bytes_per_elem, flops)
