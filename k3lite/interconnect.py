"""Interconnect bytes per token for expert-parallel MoE: an analytic model and a measured gloo run.

Expert parallelism (EP) spreads the E routed experts of a MoE layer over G GPUs. Every token is
*dispatched* to the GPUs that hold its top-k experts and the (weighted, summed per GPU) expert outputs
are *combined* back. We count what one token moves per MoE layer, DeepEP style (deepseek-ai/DeepEP):

    dispatch  one copy of the token's vector per distinct *remote* GPU among its top-k experts
              (a GPU that hosts 3 of the token's experts receives the token once and fans it out locally),
              plus routing metadata: the k expert ids (int32) and k gate weights (fp32) per copy
    combine   one vector back per such GPU: that GPU's partial sum  sum_{j on GPU} w_j * expert_j(x)

    bytes/token/layer = n_remote_copies * (row_bytes(dim, dispatch fmt) + 8 k) + n_remote_copies * row_bytes(dim, combine fmt)

with dim = latent_dim for LatentMoE (the latent travels, not d_model; arXiv 2601.18089) else d_model.
A copy to a GPU in the token's own NVLink domain is "intra"; to another domain (scale-out NIC) "inter".
The token's own GPU costs nothing. Wire formats: FP8 e4m3 with one fp32 scale per 128 elements
(1 byte/elem + 4 bytes per 128 elems, DeepSeek-V3's fine-grained tile quantisation), BF16 (2 bytes/elem),
FP32 (4 bytes/elem; the measured run uses it for an exact output check).

Expected copies under uniform routing (top-k without replacement among E experts, e = E/G per GPU):
    P(a given GPU is hit) p = 1 - C(E - e, k) / C(E, k)
    E[distinct GPUs hit]  = G p,       E[remote copies] = (G - 1) p  (= intra (g-1) p + inter (G-g) p)
With node-limited routing (at most M of the D = G/g domains per token; DeepSeek-V3 uses M = 4) the uniform
model picks M domains uniformly, then k experts uniformly among their P = M g e experts:
    q = 1 - C(P - e, k) / C(P, k),   intra = (g - 1) (M / D) q,   inter = (G - g) (M / D) q.

Not modelled: DeepEP's normal (high-throughput) kernels send one copy per remote *node* over RDMA and fan it out
over NVLink there, which caps inter-domain copies at the node limit M; we model the direct path (one copy per
remote GPU, as the low-latency kernels do), an upper bound on inter-domain bytes.

Time on the wire per token = intra bytes / NVLink bandwidth + inter bytes / NIC bandwidth (per GPU, one
direction, not overlapped: an upper bound; bandwidth-bound, latency ignored).

Measured: `python -m k3lite.interconnect measure --ranks 4` starts N worker processes with
torch.distributed (gloo, 127.0.0.1 only), shards the experts of one real `LatentMoE`, routes with its real
`Router`, dispatches/combines with `all_to_all_single`, counts the bytes of the buffers handed to the
collective (excluding each rank's chunk to itself), checks the output against the single-process
`LatentMoE.forward`, and prints measured next to analytic. Analytic CLI:
`python -m k3lite.interconnect analytic --topology nvl72 --ep 64`.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
import torch

from k3lite.config import PRESETS, K3Config, MoEConfig, get_preset

# ------------------------------------------------------------------------------------------ wire formats
METADATA_BYTES_PER_EXPERT = 8  # int32 expert id + fp32 gate weight, k of them per dispatched copy


@dataclass(frozen=True)
class WireFormat:
    """How one activation vector is encoded on the wire."""

    name: str
    elem_bytes: int
    group_size: int = 0  # elements sharing one scale (0 = no scales)
    scale_bytes: int = 0  # bytes per scale
    description: str = ""

    def row_bytes(self, dim: int) -> int:
        """Bytes of one dim-vector: dim * elem_bytes (+ one scale per group_size elements)."""
        scales = math.ceil(dim / self.group_size) * self.scale_bytes if self.group_size else 0
        return dim * self.elem_bytes + scales


WIRE_FORMATS: dict[str, WireFormat] = {
    "fp8": WireFormat("fp8", 1, 128, 4, "FP8 e4m3, 1 byte/elem + one 4-byte fp32 scale per 128 elements"),
    "bf16": WireFormat("bf16", 2, 0, 0, "BF16, 2 bytes/elem"),
    "fp32": WireFormat("fp32", 4, 0, 0, "FP32, 4 bytes/elem (exact; used for the measured equality check)"),
}


def wire_format(name: str) -> WireFormat:
    if name not in WIRE_FORMATS:
        raise ValueError(f"precision must be one of {list(WIRE_FORMATS)}, got {name!r}")
    return WIRE_FORMATS[name]


# ------------------------------------------------------------------------------------------ topologies
NVLINK5_PER_DIR = 900e9  # bytes/s: NVLink 5 is 1.8 TB/s per GPU, bidirectional -> 900 GB/s each way
CX8_PER_DIR = 100e9  # bytes/s: ConnectX-8 SuperNIC 800 Gb/s per GPU = 100 GB/s each way


@dataclass(frozen=True)
class Topology:
    """GPUs, how many share one NVLink (scale-up) domain, and per-GPU one-direction link bandwidths."""

    name: str
    n_gpus: int
    gpus_per_domain: int
    intra_bw: float  # bytes/s per GPU per direction inside the NVLink domain
    inter_bw: float  # bytes/s per GPU per direction to other domains (scale-out NIC)
    source: str

    def __post_init__(self) -> None:
        if self.n_gpus < 1 or self.gpus_per_domain < 1:
            raise ValueError(f"topology needs n_gpus >= 1 and gpus_per_domain >= 1, got {self.n_gpus}, {self.gpus_per_domain}")
        if self.n_gpus % self.gpus_per_domain:
            raise ValueError(f"n_gpus ({self.n_gpus}) must be a multiple of gpus_per_domain ({self.gpus_per_domain})")
        if self.intra_bw <= 0 or self.inter_bw <= 0:
            raise ValueError("link bandwidths must be > 0 bytes/s")


TOPOLOGIES: dict[str, Topology] = {
    "dgx-b300": Topology(
        "8-GPU DGX B300 node", 8, 8, NVLINK5_PER_DIR, CX8_PER_DIR,
        "NVIDIA DGX B300 datasheet: 8 Blackwell Ultra GPUs, 5th-gen NVLink 1.8 TB/s per GPU (14.4 TB/s total), "
        "8x ConnectX-8 SuperNIC 800 Gb/s"),
    "super-node-64": Topology(
        "64-GPU super-node (one scale-up domain)", 64, 64, NVLINK5_PER_DIR, CX8_PER_DIR,
        "64 GPUs in one scale-up domain; per-GPU bandwidth ASSUMED equal to NVLink 5 (1.8 TB/s per GPU, "
        "NVIDIA NVLink spec) - our assumption, not a vendor spec for a 64-GPU system"),
    "nvl72": Topology(
        "NVL72 rack (72 GPUs, one NVLink domain)", 72, 72, NVLINK5_PER_DIR, CX8_PER_DIR,
        "NVIDIA GB200 NVL72 spec: 72 GPUs in one NVLink domain, 1.8 TB/s NVLink per GPU (130 TB/s total); "
        "scale-out ConnectX-8 800 Gb/s per GPU (GB300 NVL72 spec)"),
    "multi-node-8x8": Topology(
        "8 nodes x 8 GPUs over scale-out network", 64, 8, NVLINK5_PER_DIR, CX8_PER_DIR,
        "8x DGX B300 (NVIDIA DGX B300 datasheet: NVLink 5 1.8 TB/s per GPU inside a node; "
        "ConnectX-8 800 Gb/s per GPU between nodes)"),
}


def get_topology(name: str) -> Topology:
    if name not in TOPOLOGIES:
        raise ValueError(f"topology must be one of {list(TOPOLOGIES)}, got {name!r}")
    return TOPOLOGIES[name]


@dataclass(frozen=True)
class Deployment:
    """Where the experts of one MoE layer live and how activations are encoded on the wire.

    ep_size GPUs (the first ep_size GPUs of the topology) share the E experts, as evenly as possible, in
    contiguous blocks (expert e -> GPU e // (E/G) when G divides E). node_limit M > 0: each token may use
    experts on at most M NVLink domains (node-limited routing); 0 = unlimited.
    """

    topology: Topology
    ep_size: int
    dispatch: str = "fp8"
    combine: str = "bf16"
    node_limit: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.ep_size, int) or self.ep_size < 1:
            raise ValueError(f"ep_size must be a positive integer, got {self.ep_size!r}")
        if self.ep_size > self.topology.n_gpus:
            raise ValueError(f"ep_size ({self.ep_size}) must be <= the topology's GPUs ({self.topology.n_gpus})")
        g = self.topology.gpus_per_domain
        if self.ep_size > g and self.ep_size % g:
            raise ValueError(f"ep_size ({self.ep_size}) must be <= gpus_per_domain ({g}) or a multiple of it")
        if self.node_limit < 0:
            raise ValueError(f"node_limit must be >= 0 (0 = unlimited), got {self.node_limit}")
        wire_format(self.dispatch), wire_format(self.combine)

    @property
    def gpus_per_domain(self) -> int:
        return min(self.topology.gpus_per_domain, self.ep_size)

    @property
    def n_domains(self) -> int:
        return self.ep_size // self.gpus_per_domain


def experts_per_gpu(n_experts: int, n_gpus: int) -> list[int]:
    """As even as possible: the first E mod G GPUs hold one extra expert."""
    if n_gpus < 1 or n_experts < n_gpus:
        raise ValueError(f"need at least one expert per GPU: n_experts ({n_experts}) >= ep_size ({n_gpus}) >= 1")
    base, extra = divmod(n_experts, n_gpus)
    return [base + (j < extra) for j in range(n_gpus)]


def expert_to_gpu(n_experts: int, n_gpus: int) -> np.ndarray:
    """(E,) GPU of each expert, contiguous blocks."""
    return np.repeat(np.arange(n_gpus), experts_per_gpu(n_experts, n_gpus))


# ------------------------------------------------------------------------------------------ analytic
class CopyCounts(NamedTuple):
    """Expected (or counted) copies of one token per MoE layer."""

    gpus_hit: float  # distinct GPUs holding >= 1 of the token's experts (own GPU included)
    remote_intra: float  # distinct remote GPUs in the token's own NVLink domain
    remote_inter: float  # distinct GPUs in other domains
    p_own_gpu: float  # probability the token's own GPU holds one of its experts

    @property
    def remote(self) -> float:
        return self.remote_intra + self.remote_inter


def _miss(pool: int, on_gpu: int, k: int) -> float:
    """P(none of k draws without replacement from `pool` experts lands on a GPU holding `on_gpu` of them)."""
    return math.comb(pool - on_gpu, k) / math.comb(pool, k)


def expected_copies(n_experts: int, top_k: int, ep_size: int, gpus_per_domain: int, node_limit: int = 0) -> CopyCounts:
    """Exact expectation under uniform routing (formulas in the module docstring); token on a uniform GPU."""
    if not 1 <= top_k <= n_experts:
        raise ValueError(f"top_k must be in [1, n_experts={n_experts}], got {top_k}")
    counts = experts_per_gpu(n_experts, ep_size)
    g = min(gpus_per_domain, ep_size)
    if ep_size % g:
        raise ValueError(f"ep_size ({ep_size}) must be a multiple of gpus_per_domain ({g})")
    n_dom = ep_size // g
    if node_limit and node_limit < n_dom:
        if n_experts % ep_size:
            raise ValueError(f"node-limited routing needs n_experts ({n_experts}) divisible by ep_size ({ep_size})")
        e = n_experts // ep_size
        pool = node_limit * g * e
        if top_k > pool:
            raise ValueError(f"top_k ({top_k}) must be <= experts on node_limit={node_limit} domains ({pool})")
        q = (node_limit / n_dom) * (1 - _miss(pool, e, top_k))  # P(a given GPU is hit)
        return CopyCounts(ep_size * q, (g - 1) * q, (ep_size - g) * q, q)
    p = np.array([1 - _miss(n_experts, c, top_k) for c in counts])  # (G,) P(GPU j hit)
    total = float(p.sum())
    # token's GPU s is uniform over the G GPUs; every domain has g GPUs
    return CopyCounts(total, (g - 1) / ep_size * total, (ep_size - g) / ep_size * total, total / ep_size)


def count_copies(topk_idx: np.ndarray, src_gpu: np.ndarray, expert_gpu: np.ndarray,
                 gpus_per_domain: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact remote copies per token for given routing: (intra (N,), inter (N,)) int arrays.

    topk_idx (N, k) expert ids, src_gpu (N,) GPU each token lives on, expert_gpu (E,) placement.
    """
    topk_idx = np.asarray(topk_idx)
    src_gpu = np.asarray(src_gpu)
    n = topk_idx.shape[0]
    n_gpus = int(expert_gpu.max()) + 1 if expert_gpu.size else 1
    dest = np.asarray(expert_gpu)[topk_idx]  # (N, k)
    hit = np.zeros((n, n_gpus), dtype=bool)  # (N, G) distinct destinations
    np.put_along_axis(hit, dest, True, axis=1)
    hit[np.arange(n), src_gpu] = False  # own GPU: no wire
    same_dom = (np.arange(n_gpus)[None, :] // gpus_per_domain) == (src_gpu[:, None] // gpus_per_domain)  # (N, G)
    return (hit & same_dom).sum(1), (hit & ~same_dom).sum(1)


def sample_uniform_routing(n_tokens: int, n_experts: int, top_k: int, ep_size: int, gpus_per_domain: int,
                           node_limit: int = 0, seed: int = 0) -> np.ndarray:
    """Monte-Carlo routing of the uniform model: (N, k) expert ids (node-limited if node_limit > 0)."""
    rng = np.random.default_rng(seed)
    g = min(gpus_per_domain, ep_size)
    n_dom = ep_size // g
    if node_limit and node_limit < n_dom:
        e_dom = n_experts // n_dom
        doms = np.argsort(rng.random((n_tokens, n_dom)), axis=1)[:, :node_limit]  # (N, M) random domains
        local = np.argsort(rng.random((n_tokens, node_limit * e_dom)), axis=1)[:, :top_k]  # (N, k) in the pool
        return doms[np.arange(n_tokens)[:, None], local // e_dom] * e_dom + local % e_dom
    return np.argsort(rng.random((n_tokens, n_experts)), axis=1)[:, :top_k]


class LayerBytes(NamedTuple):
    """Bytes one token moves per MoE layer (expected values; floats)."""

    dispatch_intra: float  # payload + routing metadata
    dispatch_inter: float
    combine_intra: float
    combine_inter: float
    metadata: float  # the routing-metadata part of dispatch (intra + inter)

    @property
    def total(self) -> float:
        return self.dispatch_intra + self.dispatch_inter + self.combine_intra + self.combine_inter

    @property
    def intra(self) -> float:
        return self.dispatch_intra + self.combine_intra

    @property
    def inter(self) -> float:
        return self.dispatch_inter + self.combine_inter


def layer_bytes(copies_intra: float, copies_inter: float, dim: int, top_k: int, dispatch: str, combine: str,
                metadata: bool = True) -> LayerBytes:
    """Bytes for the given number of remote copies (formula in the module docstring)."""
    meta = METADATA_BYTES_PER_EXPERT * top_k if metadata else 0
    d_row = wire_format(dispatch).row_bytes(dim) + meta
    c_row = wire_format(combine).row_bytes(dim)
    return LayerBytes(copies_intra * d_row, copies_inter * d_row, copies_intra * c_row, copies_inter * c_row,
                      (copies_intra + copies_inter) * meta)


class TokenTraffic(NamedTuple):
    """Analytic bytes per token for one config on one deployment."""

    name: str
    dim_on_wire: int  # latent_dim or d_model
    n_experts: int
    top_k: int
    ep_size: int
    experts_per_gpu: float
    copies: CopyCounts
    per_layer: LayerBytes
    n_moe_layers: int
    per_forward: float  # bytes per token per forward pass (all MoE layers)
    wire_s_layer: float  # seconds per token per layer on one GPU's links (intra/NVLink + inter/NIC)
    wire_s_forward: float


def analytic_traffic(cfg: K3Config, dep: Deployment, metadata: bool = True) -> TokenTraffic:
    """Bytes one token moves per MoE layer and per forward pass under uniform routing."""
    moe = cfg.moe
    dim = moe.latent_dim or cfg.d_model
    c = expected_copies(moe.n_routed_experts, moe.top_k, dep.ep_size, dep.gpus_per_domain, dep.node_limit)
    lb = layer_bytes(c.remote_intra, c.remote_inter, dim, moe.top_k, dep.dispatch, dep.combine, metadata)
    n_moe = sum(t == "moe" for t in cfg.ffn_types())
    wire = lb.intra / dep.topology.intra_bw + lb.inter / dep.topology.inter_bw
    return TokenTraffic(cfg.name, dim, moe.n_routed_experts, moe.top_k, dep.ep_size,
                        moe.n_routed_experts / dep.ep_size, c, lb, n_moe, lb.total * n_moe, wire, wire * n_moe)


def compare_presets(names: tuple[str, ...] = ("deepseek-v3", "kimi-k2", "k3-estimated"), topology: str = "nvl72",
                    ep_size: int = 64, dispatch: str = "fp8", combine: str = "bf16",
                    node_limit: int = 0) -> list[TokenTraffic]:
    """The side-by-side: each preset's published/estimated config on the same deployment."""
    dep = Deployment(get_topology(topology), ep_size, dispatch, combine, node_limit)
    return [analytic_traffic(get_preset(n), dep) for n in names]


def traffic_table(rows: list[TokenTraffic]) -> list[dict]:
    """Plain dicts for a table (units in the keys)."""
    return [{
        "model": r.name, "dim on wire": r.dim_on_wire, "experts / GPU": round(r.experts_per_gpu, 2),
        "remote GPUs / token (intra)": round(r.copies.remote_intra, 3),
        "remote GPUs / token (inter)": round(r.copies.remote_inter, 3),
        "KB / token / layer": round(r.per_layer.total / 1e3, 2), "MoE layers": r.n_moe_layers,
        "MB / token / forward": round(r.per_forward / 1e6, 3),
        "µs on wire / token / forward": round(r.wire_s_forward * 1e6, 3),
    } for r in rows]


# ------------------------------------------------------------------------------------------ wire codecs
def encode(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """(M, dim) float -> (M, row_bytes) uint8 exactly as it would travel."""
    f = wire_format(fmt)
    x = x.float().contiguous()
    if fmt == "fp32":
        return x.view(torch.uint8)  # (M, 4 dim)
    if fmt == "bf16":
        return x.to(torch.bfloat16).view(torch.uint8)  # (M, 2 dim)
    m, dim = x.shape
    n_groups = math.ceil(dim / f.group_size)
    pad = torch.zeros(m, n_groups * f.group_size)
    pad[:, :dim] = x
    grouped = pad.view(m, n_groups, f.group_size)  # (M, n_groups, 128)
    scale = grouped.abs().amax(-1).clamp_min(1e-12) / 448.0  # (M, n_groups) e4m3 max is 448
    q = (grouped / scale[..., None]).to(torch.float8_e4m3fn).view(torch.uint8).reshape(m, -1)[:, :dim]
    return torch.cat([q, scale.contiguous().view(torch.uint8)], dim=1)  # (M, dim + 4 n_groups)


def decode(buf: torch.Tensor, dim: int, fmt: str) -> torch.Tensor:
    """(M, row_bytes) uint8 -> (M, dim) float32."""
    f = wire_format(fmt)
    buf = buf.contiguous()
    if fmt == "fp32":
        return buf.view(torch.float32)
    if fmt == "bf16":
        return buf.view(torch.bfloat16).float()
    m = buf.shape[0]
    n_groups = math.ceil(dim / f.group_size)
    q = torch.zeros(m, n_groups * f.group_size, dtype=torch.uint8)
    q[:, :dim] = buf[:, :dim]
    scale = buf[:, dim:].contiguous().view(torch.float32)  # (M, n_groups)
    vals = q.view(torch.float8_e4m3fn).float().view(m, n_groups, f.group_size) * scale[..., None]
    return vals.reshape(m, -1)[:, :dim]


# ------------------------------------------------------------------------------------------ measured run
@dataclass(frozen=True)
class MeasureSpec:
    """One small MoE layer for the measured run (the same on every rank: built from `seed`)."""

    ranks: int = 4
    ranks_per_node: int = 2  # pretend NVLink domains of this many ranks, to split intra / inter
    d_model: int = 64
    latent_dim: int = 32  # 0 = classic MoE (d_model travels)
    n_experts: int = 16
    top_k: int = 4
    ffn_dim: int = 32
    tokens_per_rank: int = 32
    dispatch: str = "fp32"
    combine: str = "fp32"
    node_limit: int = 0  # > 0: the real router's group-limited top-k with one group per pretend domain
    seed: int = 0
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if not 1 <= self.ranks <= 8:
            raise ValueError(f"ranks must be in [1, 8] (each is a CPU process), got {self.ranks}")
        if self.ranks_per_node < 1 or self.ranks % self.ranks_per_node:
            raise ValueError(f"ranks ({self.ranks}) must be a multiple of ranks_per_node ({self.ranks_per_node})")
        if not 1 <= self.tokens_per_rank <= 1024:
            raise ValueError(f"tokens_per_rank must be in [1, 1024], got {self.tokens_per_rank}")
        if not 8 <= self.d_model <= 512:
            raise ValueError(f"d_model must be in [8, 512] for the measured run, got {self.d_model}")
        if self.n_experts < self.ranks or self.n_experts > 256:
            raise ValueError(f"n_experts must be in [ranks={self.ranks}, 256], got {self.n_experts}")
        if not 1 <= self.ffn_dim <= 1024:
            raise ValueError(f"ffn_dim must be in [1, 1024], got {self.ffn_dim}")
        if not 0 < self.timeout_s <= 600:
            raise ValueError(f"timeout_s must be in (0, 600], got {self.timeout_s}")
        wire_format(self.dispatch), wire_format(self.combine)
        n_dom = self.ranks // self.ranks_per_node
        if self.node_limit and (self.node_limit > n_dom or self.n_experts % self.ranks):
            raise ValueError(f"node_limit ({self.node_limit}) must be <= pretend domains ({n_dom}) and needs "
                             f"n_experts ({self.n_experts}) divisible by ranks ({self.ranks})")
        self.moe_config()  # validates top_k <= n_experts (reachable ones) and latent_dim <= d_model

    def moe_config(self) -> MoEConfig:
        if self.latent_dim > self.d_model or self.latent_dim < 0:
            raise ValueError(f"latent_dim ({self.latent_dim}) must be in [0, d_model={self.d_model}]")
        groups = self.ranks // self.ranks_per_node if self.node_limit else 1  # experts are contiguous per rank,
        return MoEConfig(n_routed_experts=self.n_experts, top_k=self.top_k, expert_ffn_dim=self.ffn_dim,  # so a
                         n_shared_experts=1, latent_dim=self.latent_dim, latent_norm=bool(self.latent_dim),  # group
                         balancing="none", route_scale=1.0, n_groups=groups,  # of experts = one pretend domain
                         topk_groups=self.node_limit or 1)

    @property
    def dim_on_wire(self) -> int:
        return self.latent_dim or self.d_model


def build_problem(spec: MeasureSpec):
    """(LatentMoE, x (ranks * tokens_per_rank, d)) - identical on every process (seeded)."""
    from k3lite.moe import LatentMoE

    torch.manual_seed(spec.seed)
    moe = LatentMoE(spec.d_model, spec.moe_config()).eval()
    gen = torch.Generator().manual_seed(spec.seed + 1)
    x = torch.randn(spec.ranks * spec.tokens_per_rank, spec.d_model, generator=gen)  # (N, d)
    return moe, x


def _alltoall(dist, send: torch.Tensor, send_counts: list[int], recv_counts: list[int]) -> torch.Tensor:
    recv = torch.empty((sum(recv_counts), *send.shape[1:]), dtype=send.dtype)
    dist.all_to_all_single(recv, send, output_split_sizes=recv_counts, input_split_sizes=send_counts)
    return recv


def ep_forward(moe, x: torch.Tensor, spec: MeasureSpec, rank: int, dist) -> tuple[torch.Tensor, dict, torch.Tensor]:
    """Expert-parallel forward of this rank's tokens x (n, d): (out (n, d), bytes sent by kind, topk_idx (n, k)).

    Dispatch: one record per (token, distinct destination rank) = [encoded latent | k int32 ids (-1 = not
    on that rank) | k fp32 weights]. Combine: each destination returns the weighted sum of its experts.
    """
    from k3lite.moe import RoutedExperts, expert_forward

    world, k, dim = spec.ranks, spec.top_k, spec.dim_on_wire
    placement = torch.from_numpy(expert_to_gpu(spec.n_experts, world))  # (E,)
    first = [int(v) for v in np.cumsum([0] + experts_per_gpu(spec.n_experts, world))]
    sent = dict(dispatch_intra=0, dispatch_inter=0, combine_intra=0, combine_inter=0, control=0)

    def count(kind: str, counts: list[int], row_bytes: int) -> None:
        for dst, c in enumerate(counts):
            if dst != rank:  # the chunk to itself never leaves the process
                side = "intra" if dst // spec.ranks_per_node == rank // spec.ranks_per_node else "inter"
                sent[f"{kind}_{side}"] += c * row_bytes

    route = moe.router(x)  # the real router: topk_idx (n, k), topk_weight (n, k)
    h = x
    if spec.latent_dim:
        h = moe.down_proj(x)  # (n, l)
        if moe.latent_norm is not None:
            h = moe.latent_norm(h)
    dest = placement[route.topk_idx]  # (n, k) rank of each chosen expert
    tok_list, rec_list, send_counts = [], [], []
    for dst in range(world):
        on_dst = dest == dst  # (n, k)
        toks = on_dst.any(1).nonzero().squeeze(1)  # (m,) tokens with >= 1 expert on dst
        ids = torch.where(on_dst[toks], route.topk_idx[toks], -1).to(torch.int32)  # (m, k)
        w = route.topk_weight[toks].float().contiguous()  # (m, k)
        rec_list.append(torch.cat([encode(h[toks], spec.dispatch), ids.view(torch.uint8), w.view(torch.uint8)], 1))
        tok_list.append(toks)
        send_counts.append(int(toks.numel()))
    send = torch.cat(rec_list)  # (sum m, rec_bytes) uint8
    rec_bytes = send.shape[1]

    counts_t = torch.tensor(send_counts, dtype=torch.int64)
    recv_counts_t = torch.empty_like(counts_t)
    dist.all_to_all_single(recv_counts_t, counts_t)  # control: how many records each peer will send
    sent["control"] += 8 * (world - 1)
    recv_counts = recv_counts_t.tolist()

    recv = _alltoall(dist, send, send_counts, recv_counts)  # (R, rec_bytes)
    count("dispatch", send_counts, rec_bytes * send.element_size())

    # ---- expert compute on the rows this rank received
    wire = wire_format(spec.dispatch).row_bytes(dim)
    hr = decode(recv[:, :wire], dim, spec.dispatch)  # (R, dim)
    ids = recv[:, wire : wire + 4 * k].contiguous().view(torch.int32).long()  # (R, k)
    wr = recv[:, wire + 4 * k :].contiguous().view(torch.float32)  # (R, k)
    lo, hi = first[rank], first[rank + 1]
    shard = RoutedExperts(hi - lo, dim, spec.ffn_dim)
    for name in ("w_gate", "w_up", "w_down"):
        getattr(shard, name).data = getattr(moe.experts, name).data[lo:hi]  # a view: this rank's experts
    row, slot = (ids >= 0).nonzero(as_tuple=True)  # (P,) pairs (received row, top-k slot)
    y = expert_forward(shard, hr[row], ids[row, slot] - lo) * wr[row, slot, None]  # (P, dim)
    partial = torch.zeros(hr.shape[0], dim).index_add_(0, row, y)  # (R, dim) per-row weighted sum

    # ---- combine: send partial sums back (splits reversed)
    partial_wire = encode(partial, spec.combine)  # (R, combine row bytes) uint8
    back = _alltoall(dist, partial_wire, recv_counts, send_counts)  # (sum m, row)
    count("combine", recv_counts, partial_wire.shape[1] * partial_wire.element_size())
    routed = torch.zeros(x.shape[0], dim).index_add_(0, torch.cat(tok_list), decode(back, dim, spec.combine))
    out = moe.up_proj(routed) if spec.latent_dim else routed  # (n, d)
    if moe.cfg.n_shared_experts:
        out = out + moe.shared(x)
    return out, sent, route.topk_idx


def _worker_main(spec_json: str, rank: int, port: int, out_dir: str) -> int:
    import torch.distributed as dist

    torch.set_num_threads(1)
    spec = MeasureSpec(**json.loads(spec_json))
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=spec.ranks,
                            timeout=timedelta(seconds=spec.timeout_s))
    try:
        print(f"rank {rank}: joined gloo group on 127.0.0.1:{port}", flush=True)
        moe, x = build_problem(spec)
        n = spec.tokens_per_rank
        with torch.no_grad():  # not inference_mode: gloo collectives write into their tensors in place
            out, sent, topk = ep_forward(moe, x[rank * n : (rank + 1) * n], spec, rank, dist)
        dist.barrier()
        torch.save({"out": out, "sent": sent, "topk_idx": topk}, Path(out_dir) / f"rank{rank}.pt")
        print(f"rank {rank}: done, sent {sent}", flush=True)
    finally:
        dist.destroy_process_group()
    return 0


class PortInUseError(ValueError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_port(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            raise PortInUseError(f"port {port} on 127.0.0.1 is already in use ({e.strerror}); "
                                 f"pass another --port, or --port 0 to pick a free one") from None


class MeasureResult(NamedTuple):
    spec: MeasureSpec
    port: int
    measured: list[dict]  # per rank: bytes sent by kind (dispatch/combine x intra/inter, control)
    predicted: list[dict]  # per rank: analytic bytes for the same routing decisions
    uniform: LayerBytes  # analytic expectation per token under uniform routing
    uniform_copies: CopyCounts
    topk_idx: np.ndarray  # (N, k) routing decisions gathered from the ranks (tokens in rank order)
    max_rel_err: float  # max |distributed - single process| / max |single process|
    tolerance: float
    wall_s: float

    @property
    def n_tokens(self) -> int:
        return self.spec.ranks * self.spec.tokens_per_rank

    def total(self, which: str) -> dict:
        rows = self.measured if which == "measured" else self.predicted
        return {key: sum(r[key] for r in rows) for key in KINDS}

    @property
    def agree(self) -> bool:
        return all({k: m[k] for k in KINDS} == p for m, p in zip(self.measured, self.predicted))

    @property
    def outputs_match(self) -> bool:
        return self.max_rel_err <= self.tolerance


KINDS = ("dispatch_intra", "dispatch_inter", "combine_intra", "combine_inter")
# bound on max|diff| / max|ref| vs the fp32 single-process output: float summation order only (fp32), or the
# rounding of the wire format (bf16: 8 mantissa bits, ~0.4% per element; fp8 e4m3: 3 bits, ~6% per element)
TOLERANCE = {"fp32": 1e-5, "bf16": 2e-2, "fp8": 1e-1}


def copy_matrix(topk_idx: np.ndarray, src_gpu: np.ndarray, expert_gpu: np.ndarray, n_gpus: int) -> np.ndarray:
    """(G, G) int: copies[s, t] = tokens on GPU s with >= 1 expert on GPU t (diagonal zeroed: no wire)."""
    n = topk_idx.shape[0]
    hit = np.zeros((n, n_gpus), dtype=bool)  # (N, G) distinct destinations per token
    np.put_along_axis(hit, np.asarray(expert_gpu)[topk_idx], True, axis=1)
    copies = np.zeros((n_gpus, n_gpus), dtype=np.int64)
    np.add.at(copies, np.asarray(src_gpu), hit.astype(np.int64))
    np.fill_diagonal(copies, 0)
    return copies


def predicted_for_routing(spec: MeasureSpec, topk_idx: np.ndarray) -> list[dict]:
    """Analytic bytes SENT by each rank for the given routing (N, k), tokens in rank order.

    Dispatch is sent by the token's rank, combine by the rank hosting the experts (it returns the partials).
    """
    g, rpn = spec.ranks, spec.ranks_per_node
    src = np.repeat(np.arange(g), spec.tokens_per_rank)
    copies = copy_matrix(np.asarray(topk_idx), src, expert_to_gpu(spec.n_experts, g), g)  # (G, G)
    same = (np.arange(g)[:, None] // rpn) == (np.arange(g)[None, :] // rpn)  # (G, G) same pretend domain
    d_row = wire_format(spec.dispatch).row_bytes(spec.dim_on_wire) + METADATA_BYTES_PER_EXPERT * spec.top_k
    c_row = wire_format(spec.combine).row_bytes(spec.dim_on_wire)
    return [{
        "dispatch_intra": int((copies[r] * same[r]).sum()) * d_row,
        "dispatch_inter": int((copies[r] * ~same[r]).sum()) * d_row,
        "combine_intra": int((copies[:, r] * same[:, r]).sum()) * c_row,  # partials r sends back
        "combine_inter": int((copies[:, r] * ~same[:, r]).sum()) * c_row,
    } for r in range(g)]


def measure(spec: MeasureSpec, port: int = 0, progress: Callable[[float, str], None] | None = None) -> MeasureResult:
    """Run the expert-parallel layer on spec.ranks gloo processes; always reaps them (also on error/timeout)."""
    progress = progress or (lambda frac, msg: None)
    if port:
        check_port(port)
    else:
        port = free_port()
    t0 = time.perf_counter()
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    spec_json = json.dumps(spec.__dict__)
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="k3lite-ep-") as tmp:
        logs = []
        try:
            progress(0.05, f"starting {spec.ranks} gloo workers on 127.0.0.1:{port}")
            for rank in range(spec.ranks):
                log = open(Path(tmp) / f"rank{rank}.log", "w")
                logs.append(log)
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "k3lite.interconnect", "_worker", "--rank", str(rank), "--port",
                     str(port), "--spec", spec_json, "--out", tmp],
                    cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
            deadline = time.monotonic() + spec.timeout_s
            reported = -1
            while True:
                codes = [p.poll() for p in procs]
                done = sum(c == 0 for c in codes)
                if done != reported:
                    progress(0.05 + 0.8 * done / spec.ranks, f"{done}/{spec.ranks} ranks finished")
                    reported = done
                failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
                if failed:
                    r = failed[0]
                    tail = (Path(tmp) / f"rank{r}.log").read_text()[-1500:]
                    raise RuntimeError(f"rank {r} exited with code {codes[r]}:\n{tail}")
                if done == spec.ranks:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"measured run exceeded timeout_s={spec.timeout_s:g} s; workers killed")
                time.sleep(0.05)
            parts = [torch.load(Path(tmp) / f"rank{r}.pt", weights_only=True) for r in range(spec.ranks)]
        finally:
            for p in procs:  # reap every worker we started, whatever happened
                if p.poll() is None:
                    p.kill()
                p.wait(timeout=10)
            for log in logs:
                log.close()
    progress(0.9, "single-process reference")
    moe, x = build_problem(spec)
    with torch.inference_mode():
        ref = moe(x[None]).out[0]  # (N, d) the plain LatentMoE.forward
    dist_out = torch.cat([p["out"] for p in parts])
    topk = torch.cat([p["topk_idx"] for p in parts]).numpy()
    c = expected_copies(spec.n_experts, spec.top_k, spec.ranks, spec.ranks_per_node, spec.node_limit)
    uniform = layer_bytes(c.remote_intra, c.remote_inter, spec.dim_on_wire, spec.top_k, spec.dispatch, spec.combine)
    progress(1.0, "done")
    return MeasureResult(spec, port, [p["sent"] for p in parts], predicted_for_routing(spec, topk), uniform, c, topk,
                         float((dist_out - ref).abs().max() / ref.abs().max().clamp_min(1e-30)),
                         max(TOLERANCE[spec.dispatch], TOLERANCE[spec.combine]), time.perf_counter() - t0)


def format_result(res: MeasureResult) -> str:
    s = res.spec
    n = res.n_tokens
    m, p = res.total("measured"), res.total("predicted")
    lines = [
        f"expert-parallel MoE layer on {s.ranks} gloo ranks (127.0.0.1:{res.port}), {s.ranks_per_node} ranks per "
        f"pretend NVLink domain; {s.n_experts} experts top-{s.top_k}, d_model {s.d_model}, dim on wire "
        f"{s.dim_on_wire}, {n} tokens, node limit {s.node_limit or 'none'}; dispatch {s.dispatch} + {8 * s.top_k} B routing metadata per copy, "
        f"combine {s.combine}",
        f"{'bytes/token':<16}{'measured':>12}{'same routing':>14}{'uniform E[.]':>14}",
    ]
    for key in KINDS:
        lines.append(f"{key:<16}{m[key] / n:>12.2f}{p[key] / n:>14.2f}{getattr(res.uniform, key):>14.2f}")
    lines.append(f"{'total':<16}{sum(m.values()) / n:>12.2f}{sum(p.values()) / n:>14.2f}{res.uniform.total:>14.2f}")
    lines.append(f"per rank measured == analytic for the same routing: {res.agree} "
                 f"(exact integer byte counts; control traffic {res.measured[0]['control']} B/rank not per token)")
    lines.append(f"distributed output vs single-process LatentMoE.forward: max|diff|/max|ref| = {res.max_rel_err:.3g} "
                 f"(tolerance {res.tolerance:g}) -> {'MATCH' if res.outputs_match else 'MISMATCH'}")
    lines.append(f"wall time {res.wall_s:.1f} s")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ CLI
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.interconnect", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analytic", help="bytes per token for the presets on a topology")
    a.add_argument("--topology", default="nvl72", choices=list(TOPOLOGIES))
    a.add_argument("--ep", type=int, default=64, help="expert-parallel size (GPUs)")
    a.add_argument("--dispatch", default="fp8", choices=list(WIRE_FORMATS))
    a.add_argument("--combine", default="bf16", choices=list(WIRE_FORMATS))
    a.add_argument("--node-limit", type=int, default=0)
    a.add_argument("--presets", default="deepseek-v3,kimi-k2,k3-estimated")
    m = sub.add_parser("measure", help="a real expert-parallel run on gloo worker processes")
    m.add_argument("--ranks", type=int, default=4)
    m.add_argument("--ranks-per-node", type=int, default=0, help="pretend NVLink domain size (default ranks/2)")
    m.add_argument("--tokens", type=int, default=32, help="tokens per rank")
    m.add_argument("--d-model", type=int, default=64)
    m.add_argument("--latent", type=int, default=32)
    m.add_argument("--experts", type=int, default=16)
    m.add_argument("--top-k", type=int, default=4)
    m.add_argument("--dispatch", default="fp32", choices=list(WIRE_FORMATS))
    m.add_argument("--combine", default="fp32", choices=list(WIRE_FORMATS))
    m.add_argument("--node-limit", type=int, default=0, help="max pretend domains per token (0 = none)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    m.add_argument("--timeout", type=float, default=60.0)
    w = sub.add_parser("_worker", help=argparse.SUPPRESS)
    w.add_argument("--rank", type=int, required=True)
    w.add_argument("--port", type=int, required=True)
    w.add_argument("--spec", required=True)
    w.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "_worker":  # a traceback here goes to the rank's log, which the parent quotes
        return _worker_main(args.spec, args.rank, args.port, args.out)
    try:
        if args.cmd == "analytic":
            rows = compare_presets(tuple(args.presets.split(",")), args.topology, args.ep, args.dispatch,
                                   args.combine, args.node_limit)
            topo = get_topology(args.topology)
            print(f"{topo.name}, EP={args.ep}, dispatch {args.dispatch}, combine {args.combine}, node limit "
                  f"{args.node_limit or 'none'}; uniform routing; bandwidths: {topo.source}")
            for row in traffic_table(rows):
                print("  " + ", ".join(f"{k}: {v}" for k, v in row.items()))
            return 0
        rpn = args.ranks_per_node or max(1, args.ranks // 2)
        spec = MeasureSpec(ranks=args.ranks, ranks_per_node=rpn, d_model=args.d_model, latent_dim=args.latent,
                           n_experts=args.experts, top_k=args.top_k, tokens_per_rank=args.tokens,
                           dispatch=args.dispatch, combine=args.combine, node_limit=args.node_limit, seed=args.seed,
                           timeout_s=args.timeout)
        res = measure(spec, args.port, progress=lambda f, msg: print(f"[{f:4.0%}] {msg}", file=sys.stderr))
        print(format_result(res))
        return 0 if res.agree and res.outputs_match else 1
    except (ValueError, RuntimeError, TimeoutError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
