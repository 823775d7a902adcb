"""What one forward pass records, per layer: the contract between the model and the pictures.

`K3Model.forward(tokens, trace=True)` fills a `Trace`. Pages and k3lite/viz read only this, never the
model's internals. Tensors are detached, on CPU; shapes below use B = batch, T = new tokens,
S = tokens attended (cache + new), H = heads, K = KDA head dim, k = top-k, E = routed experts,
N = depth sources of that sublayer (embedding, earlier outputs / block sums).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import torch

# which optional fields a layer of each kind must fill
KDA_FIELDS = ("kda_decay", "kda_beta", "kda_state_norm")
MLA_FIELDS = ("mla_attention",)
MOE_FIELDS = ("router_topk_idx", "router_topk_weight", "router_scores", "expert_load")


@dataclass
class LayerTrace:
    index: int
    mixer_type: str  # "kda" | "mla"
    ffn_type: str  # "dense" | "moe"
    # depth mixing (Attention Residuals) before each sublayer; standard residual: all ones (plain sum)
    depth_weights_mixer: torch.Tensor  # (B, T, N)
    depth_weights_ffn: torch.Tensor  # (B, T, N')  the FFN sublayer sees one more output (or a bigger partial)
    depth_sources_mixer: tuple[int, ...]  # block index per source: 0 = embedding
    depth_sources_ffn: tuple[int, ...]
    mixer_out_norm: torch.Tensor  # (B, T) L2 norm of the mixer sublayer's output
    ffn_out_norm: torch.Tensor  # (B, T) L2 norm of the FFN sublayer's output
    # KDA layers
    kda_decay: torch.Tensor | None = None  # (B, T, H, K) log-space per-channel decay g = log a_t <= 0
    kda_beta: torch.Tensor | None = None  # (B, T, H) delta-rule write strength in (0, 1)
    kda_state_norm: torch.Tensor | None = None  # (B, T, H) Frobenius norm of the state S_t
    # MLA layers
    mla_attention: torch.Tensor | None = None  # (B, H, T, S) softmax attention probabilities
    # MoE layers
    router_topk_idx: torch.Tensor | None = None  # (B, T, k) chosen experts
    router_topk_weight: torch.Tensor | None = None  # (B, T, k) gate weights
    router_scores: torch.Tensor | None = None  # (B, T, E) raw router scores
    expert_load: torch.Tensor | None = None  # (E,) assignments per expert in this pass
    load_max_violation: float = 0.0  # max(load)/mean(load) - 1
    load_entropy: float = 0.0  # nats; log(E) = perfectly uniform
    dropped: int = 0  # (token, expert) assignments dropped by a capacity limit
    # interconnect: what one (token, expert) copy carries; the bytes depend on a deployment, not on this run
    dispatch_dim: int = 0  # elements per (token, expert) copy (latent_dim for LatentMoE)

    def required_fields(self) -> tuple[str, ...]:
        req = KDA_FIELDS if self.mixer_type == "kda" else MLA_FIELDS
        return req + (MOE_FIELDS if self.ffn_type == "moe" else ())

    def missing(self) -> list[str]:
        """Fields this kind of layer should have filled but did not (empty = complete)."""
        return [name for name in self.required_fields() if getattr(self, name) is None]


@dataclass
class Trace:
    tokens: list[int]  # the input token ids of batch row 0 (the pages show one prompt)
    attn_res: str  # "standard" | "full" | "block"
    attn_res_block_size: int
    embedding_norm: torch.Tensor  # (B, T)
    embedding: torch.Tensor | None = None  # (B, T, d) the token embeddings v_0
    layers: list[LayerTrace] = field(default_factory=list)
    final_depth_weights: torch.Tensor | None = None  # (B, T, N) the LM head's depth mix
    final_depth_sources: tuple[int, ...] = ()
    start_pos: int = 0  # position of the first traced token (> 0 when decoding against a cache)

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    def bytes_per_token(self, per_moe_layer: float) -> float:
        """Interconnect bytes one token moves through all MoE layers, given the bytes of one MoE layer.

        per_moe_layer comes from `k3lite.interconnect.wire_bytes_per_token(cfg, ...).total` (dispatch + combine on
        a stated deployment): the trace records routing, the bytes are a property of where the experts live.
        """
        return self.bytes_cumulative(per_moe_layer)[-1] if self.layers else 0.0

    def bytes_cumulative(self, per_moe_layer: float) -> list[float]:
        """Bytes per token after each layer (dense layers add nothing)."""
        out, total = [], 0.0
        for layer in self.layers:
            total += per_moe_layer if layer.ffn_type == "moe" else 0.0
            out.append(total)
        return out

    def missing(self) -> dict[int, list[str]]:
        return {layer.index: m for layer in self.layers if (m := layer.missing())}

    def depth_view(self) -> Trace:
        """A copy holding what the depth mixing (Attention Residuals) reads: the tokens, every depth weight and
        source, the norms. The mechanisms' tensors are dropped (KDA gates, MLA attention maps, which grow as T x S,
        routing, the embeddings): a 2,000-token lite trace is ~139 MB pickled, its depth view under 1% of that."""
        heavy = dict.fromkeys(KDA_FIELDS + MLA_FIELDS + MOE_FIELDS)
        return replace(self, embedding=None, layers=[replace(layer, **heavy) for layer in self.layers])


def detach(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t.detach().to("cpu")


@contextmanager
def own_inputs(modules: dict):
    """Read what each of `modules` ({key: nn.Module}) receives while the block runs: yields {key: [first input
    of each call, detached]}, through forward pre-hooks, so the model is not changed (safe on a cached model).
    A cached model is shared by every session, each in its own thread: the hooks keep only this thread's calls,
    or another visitor's input (another prompt, another length) lands in this one's result."""
    seen = {key: [] for key in modules}
    owner = threading.get_ident()

    def capture(key):
        def hook(_module, args):
            if threading.get_ident() == owner:
                seen[key].append(args[0].detach())
        return hook

    hooks = [module.register_forward_pre_hook(capture(key)) for key, module in modules.items()]
    try:
        yield seen
    finally:
        for h in hooks:
            h.remove()
