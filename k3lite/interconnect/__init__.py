"""Interconnect bytes per token for expert-parallel MoE.

    deployment.py  schemes, wire formats, record layouts (from DeepEP's buffers), topologies, `REFERENCE`
    analytic.py  the model: three dispatch schemes (direct / DeepEP normal / low-latency), exact expectations
                 under uniform routing, exact counts for given routing, and THE wire-bytes function
                 `wire_bytes_per_token(cfg, topology, ep, scheme, node_limit) -> WireBytes` every page uses
    routing.py   the routing rule a token follows there (the model's own group limit, a deployment's node limit)
                 and how many GPUs / domains it reaches under it
    deepep.py    DeepEP's published benchmark settings next to our bytes for them, and what they give the serving
                 step across NVLink domains: a per-call latency and the NIC's achieved share (fit_call, nic_terms)
    measured.py  a real expert-parallel layer on torch.distributed processes (gloo here, nccl on GPUs), two
                 levels of process groups, byte counts compared with the analytic count for the same routing
    run.py       the workers: one rank (also under torchrun), results, the local gloo launcher
    backward.py  the backward pass of expert parallelism, analytic: the gradient of a dispatch travels as a
                 combine and vice versa, in training's wire formats
    measured_backward.py  one training step of the expert-parallel layer on torch.distributed, both directions
                 counted against backward.py
    pipeline.py  bytes per token across pipeline-stage boundaries with a standard residual, full or block AttnRes
    pipeline_measured.py  a small K3Model split into stages on gloo processes, the real stream tensors counted
    __main__.py  the CLI: python -m k3lite.interconnect analytic | measure [--backward] | pipeline | worker

The package namespace is the analytic model only (numpy, no torch.distributed), so layers and pages can import
it cheaply; import the measured run from `k3lite.interconnect.measured`.
"""
from k3lite.interconnect.analytic import (
    CopyCounts, TokenTraffic, WireBytes, analytic_traffic, cli_rows, compare_presets, count_copies, deployment_bytes,
    expected_copies, group_limited_hits, layer_bytes, link_copies, link_seconds, model_copies, node_limit_sweep,
    sample_uniform_routing, traffic_table, wire_bytes_per_token,
)
from k3lite.interconnect.deployment import (
    REFERENCE, SCHEME_LABELS, SCHEMES, TOPOLOGIES, WIRE_FORMATS, Deployment, Topology, WireFormat, check_scheme,
    even_expert_counts, expert_to_gpu, experts_per_gpu, get_topology, record_bytes, snap_experts, wire_format,
)
from k3lite.interconnect.routing import describe_rule, routed_hits, routing_rule

__all__ = [
    "REFERENCE", "SCHEME_LABELS", "SCHEMES", "TOPOLOGIES", "WIRE_FORMATS", "CopyCounts", "Deployment", "TokenTraffic",
    "Topology", "WireBytes", "WireFormat", "analytic_traffic", "check_scheme", "cli_rows", "compare_presets",
    "count_copies", "deployment_bytes", "describe_rule", "even_expert_counts", "expected_copies", "expert_to_gpu",
    "experts_per_gpu", "get_topology", "group_limited_hits", "layer_bytes", "link_copies", "link_seconds",
    "model_copies", "node_limit_sweep", "record_bytes", "routed_hits", "routing_rule", "sample_uniform_routing",
    "snap_experts", "traffic_table", "wire_bytes_per_token", "wire_format",
]
