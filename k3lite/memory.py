"""Decode memory in one place: a KDA layer's fixed state and an attention layer's KV cache, in bytes.

Every page, benchmark and CLI that shows these numbers calls these functions.
"""
from __future__ import annotations

def kda_state_bytes(n_heads: int, head_dim: int, bytes_per_elem: int = 2, batch: int = 1) -> int:
    """One KDA layer's decode memory: the (H, K, V) state, independent of context length."""
    return batch * n_heads * head_dim * head_dim * bytes_per_elem


def kv_cache_bytes(n_tokens: int, n_heads: int, head_dim: int, bytes_per_elem: int = 2, batch: int = 1) -> int:
    """One softmax-attention layer's KV cache: K and V for every past token, every head."""
    return batch * n_tokens * 2 * n_heads * head_dim * bytes_per_elem


def memory_vs_context(cfg, contexts, bytes_per_elem: int = 2) -> dict[str, list[int]]:
    """Decode memory (bytes) against context length for one K3Config, per layer and for the whole stack.

    KDA layer: its (H, K, K) state, constant. MLA layer: the latent + shared rope key per token
    ((kv_lora_rank + qk_rope_head_dim) elements). Plain multi-head attention with MLA's heads: K and V for
    every head per token. Whole model: every layer global (MLA) vs the config's KDA:MLA pattern.
    """
    if cfg.kda is None:
        raise ValueError(f"config {cfg.name!r} has no KDA layers to compare")
    H, K = cfg.kda.n_heads, cfg.kda.head_dim
    m = cfg.mla
    state = kda_state_bytes(H, K, bytes_per_elem)
    per_tok_mla = (m.kv_lora_rank + m.qk_rope_head_dim) * bytes_per_elem
    per_tok_mha = m.n_heads * (m.qk_head_dim + m.v_head_dim) * bytes_per_elem
    types = cfg.layer_types()
    n_kda, n_mla = types.count("kda"), types.count("mla")
    return {
        "KDA layer: state": [state for _ in contexts],
        "MLA layer: latent KV cache": [per_tok_mla * t for t in contexts],
        "MHA layer (same heads): K+V cache": [per_tok_mha * t for t in contexts],
        f"whole model, all {len(types)} layers MLA": [len(types) * per_tok_mla * t for t in contexts],
        f"whole model, hybrid ({n_kda} KDA + {n_mla} MLA)": [n_kda * state + n_mla * per_tok_mla * t for t in contexts],
    }
