"""What a latent MoE layer costs per token: bytes on the wire and FLOPs at a latent ratio (the MoE page's trade-off).

An estimate on top of the model (`k3lite.model.moe`: the layer) and the interconnect (`k3lite.interconnect`: the
bytes): it lives here, above both, so the model never imports the interconnect.
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.interconnect import REFERENCE, Deployment, deployment_bytes
from k3lite.interconnect.deployment import WIRE_FORMATS
from k3lite.model.config import MoEConfig
from k3lite.model.moe import active_expert_flops_per_token


class LatentCost(NamedTuple):
    """Per-token cost of one MoE layer at one latent ratio (all FLOPs = 2 x multiply-adds)."""

    ratio: float  # latent_dim / d_model (1 = classic MoE)
    latent_dim: int
    wire_bytes: float  # dispatch + combine per token: k3lite.interconnect.wire_bytes_per_token on `deployment`
    routed_flops: float  # top_k SwiGLU experts in the latent space: 2 x 3 x latent_dim x ffn x top_k
    proj_flops: float  # down_proj + up_proj: 2 x 2 x d_model x latent_dim (0 when ratio = 1: no projections)
    shared_flops: float  # shared experts on the full d: 2 x 3 x d_model x shared_ffn x n_shared


def latent_cost_per_token(d_model: int, expert_ffn_dim: int, top_k: int, n_shared: int = 0,
                          shared_ffn_dim: int = 0, ratio: float = 1.0, *, n_experts: int,
                          deployment: Deployment = REFERENCE) -> LatentCost:
    """Analytic wire bytes (expected, uniform routing, on `deployment`) and FLOPs per token for a LatentMoE layer."""
    if not 0 < ratio <= 1:
        raise ValueError(f"latent ratio must be in (0, 1], got {ratio}")
    latent = max(1, round(d_model * ratio))
    proj = 0.0 if latent == d_model else 2.0 * 2 * d_model * latent
    moe = MoEConfig(n_routed_experts=n_experts, top_k=top_k, expert_ffn_dim=expert_ffn_dim,
                    latent_dim=0 if latent == d_model else latent)
    return LatentCost(ratio, latent, deployment_bytes(moe, deployment, d_model).total,
                      float(active_expert_flops_per_token(latent, expert_ffn_dim, top_k)), proj,
                      2.0 * 3 * d_model * (shared_ffn_dim or expert_ffn_dim) * n_shared)



def record_overhead(moe: MoEConfig, d_model: int, deployment: Deployment = REFERENCE) -> float:
    """Bytes a dispatch + combine record pair carries beyond its payload on `deployment` (FP8 scales, routing
    metadata, padding): `wire_bytes_headline`'s default `record_overhead_bytes`."""
    wire = deployment_bytes(moe, deployment, d_model)
    dim = moe.latent_dim or d_model
    payload = dim * (WIRE_FORMATS[deployment.dispatch].elem_bytes + WIRE_FORMATS[deployment.combine].elem_bytes)
    return float(wire.dispatch_record + wire.combine_record - payload)


def wire_bytes_headline(moe: MoEConfig, d_model: int, dispatch_elem_bytes: float = 1.0,
                        combine_elem_bytes: float = 2.0, record_overhead_bytes: float | None = None,
                        deployment: Deployment = REFERENCE) -> float:
    """The MoE page's headline, bytes on the wire per token per MoE layer, with its assumed wire format as numbers:
    bytes per element of a dispatched (FP8: 1) and a combined (BF16: 2) latent, and the bytes a record pair adds
    beyond its payload (None: the deployment's, `record_overhead`). The expected copies per token (uniform routing)
    are the deployment's. At the defaults it is `deployment_bytes(moe, deployment, d_model).total`."""
    if dispatch_elem_bytes <= 0 or combine_elem_bytes <= 0:
        raise ValueError("bytes per element must be > 0")
    overhead = record_overhead(moe, d_model, deployment) if record_overhead_bytes is None else record_overhead_bytes
    copies = deployment_bytes(moe, deployment, d_model).copies.total  # each way: dispatch out, combine back
    return copies * ((moe.latent_dim or d_model) * (dispatch_elem_bytes + combine_elem_bytes) + overhead)
