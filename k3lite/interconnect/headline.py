"""The wire-byte headlines of the interconnect and forward-pass pages as functions of what they assume, so the
pages' assumptions blocks can move each input ±20% (k3lite.analytic.sensitivity).

    bytes = copies per token x copies_scale x (dispatch record + combine record)
    record = dim x bytes per element (+ the FP8 scales) + routing metadata x metadata_scale

At the inputs' own values (the wire formats' bytes per element, scale 1) this is exactly `deployment_bytes(cfg,
dep).total`: the copies are uniform routing's expectation, the records DeepEP's layouts (deployment.py). Moving
an element size keeps the record's other bytes (scales, metadata, padding) as they are.
"""
from __future__ import annotations

from k3lite.interconnect.analytic import deployment_bytes
from k3lite.interconnect.deployment import Deployment, wire_format
from k3lite.model.config import K3Config


def layer_bytes_at(cfg: K3Config, dep: Deployment, dispatch_elem_bytes: float | None = None,
                   combine_elem_bytes: float | None = None, copies_scale: float = 1.0,
                   metadata_scale: float = 1.0) -> float:
    """Bytes one token moves per MoE layer on `dep` (dispatch + combine), with the wire formats' bytes per element
    (None: the deployment's own), the expected copies and the routing metadata scaled."""
    if min(copies_scale, metadata_scale) < 0:
        raise ValueError(f"scales must be >= 0, got copies {copies_scale}, metadata {metadata_scale}")
    b = deployment_bytes(cfg, dep)
    dim = cfg.moe.latent_dim or cfg.d_model

    def record(fmt: str, whole: int, elem_bytes: float | None) -> float:
        f = wire_format(fmt)
        row = f.row_bytes(dim)
        elem = f.elem_bytes if elem_bytes is None else elem_bytes
        if elem <= 0:
            raise ValueError(f"bytes per element must be > 0, got {elem}")
        return row + dim * (elem - f.elem_bytes) + (whole - row) * metadata_scale

    per_copy = (record(dep.dispatch, b.dispatch_record, dispatch_elem_bytes)
                + record(dep.combine, b.combine_record, combine_elem_bytes))
    return b.copies.total * copies_scale * per_copy


def forward_bytes_at(cfg: K3Config, dep: Deployment, **assumed) -> float:
    """`layer_bytes_at` over every MoE layer of `cfg`: the interconnect bytes of one token's forward pass."""
    return cfg.ffn_types().count("moe") * layer_bytes_at(cfg, dep, **assumed)
