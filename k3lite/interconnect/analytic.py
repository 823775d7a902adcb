"""Bytes one token moves per MoE layer under expert parallelism: three dispatch schemes, exact expectations.

Expert parallelism (EP) spreads the E routed experts of a MoE layer over G GPUs in D domains of g GPUs
(an NVLink node or rack; "intra" = NVLink inside a domain, "inter" = the scale-out NIC / RDMA). A token is
*dispatched* to its top-k experts and their weighted outputs are *combined* back. How many copies travel
depends on the kernels (DeepEP, github.com/deepseek-ai/DeepEP at dd758ca, `csrc/kernels/legacy/`):

    direct       one copy per distinct remote GPU hosting >= 1 of the token's experts (a flat all_to_all; DeepEP's
                 intranode kernels: `intranode.cu` dispatch sends a token to each rank with is_token_in_rank set,
                 lines 360-400). The token's own GPU costs nothing. Combine: each such GPU returns its partial sum.
    normal       DeepEP's high-throughput internode kernels: one RDMA copy per distinct remote *node*, written to
                 the GPU with the same local rank there (`internode.cu` 625-690: one slot per RDMA rank whose
                 8-GPU mask is non-zero; 983-993: that GPU's forwarder copies the record over NVLink), then
                 NVLink forwarding to each distinct GPU of that node hosting one of the token's experts
                 (the entry GPU itself needs no copy). Own-node GPUs are reached over NVLink only.
                 Combine mirrors it: reduce inside the node, one RDMA copy back per node (`internode.cu` combine,
                 1721-1758). Node-limited routing (at most M nodes per token) caps the RDMA copies at M (M - 1 when the own node is among them).
    low-latency  DeepEP's low-latency kernels: one message per (token, selected expert) on another GPU, no
                 de-duplication (`internode_ll.cu` 209-271: a warp per top-k slot, one put per slot; NVLink when
                 a peer-to-peer pointer exists, else RDMA). Combine: one bf16 message back per (token, expert);
                 the weighted sum happens at the token's GPU (`internode_ll.cu` 1073-1090).

Record bytes per copy (what one copy occupies on the wire), dim = elements travelling (latent_dim for LatentMoE,
arXiv 2601.18089, else d_model), row(fmt) = the activation in its wire format, k = top-k:

    direct       dispatch row + 4 (int32 source index) + 12 k (int64 topk_idx + fp32 weight per slot; DeepEP's
                 `topk_idx_t` is int64 unless EP_NUM_TOPK_IDX_BITS says otherwise: compiled.cuh 54-72,
                 intranode.cu 276-291)          combine row + 4 + 4 k (intranode.cu 764-776)
    normal       dispatch align16(row + 8 + 8 k): 8-byte SourceMeta, topk_idx narrowed to int32 on the wire
                 (`static_cast<int>`), fp32 weights (internode.cu 22-51, 716-726), the same record on both hops
                                                combine align16(row + 8 + 4 k) (internode.cu 1758)
    low-latency  dispatch 16 + row (an int4 header: source index + 3 reserved ints; internode_ll.cu 176-182)
                                                combine row (as DeepEP's own byte count, tests/legacy/test_low_latency.py 218-224)

Wire formats: FP8 e4m3 with one fp32 scale per 128 elements (1 byte/elem + 4 bytes per 128), BF16, FP32.

Expected copies under uniform routing (top-k without replacement among E experts; the token on a uniform GPU;
c_j experts on GPU j, C_n on domain n; p_j = 1 - C(E - c_j, k)/C(E, k), P_n = 1 - C(E - C_n, k)/C(E, k)):

    direct       intra = (g - 1)/G * sum_j p_j          inter = (G - g)/G * sum_j p_j
    normal       intra = (G - D)/G * sum_j p_j          inter = (G - g)/G * sum_n P_n
                 (an NVLink hop reaches every hit GPU whose local rank differs from the token's)
    low-latency  intra = k (g - 1)/G                    inter = k (G - g)/G   (each slot's expert is uniform)

Node-limited routing (M of D domains, then k experts among their pool of M g e, e = E/G; DeepSeek-V3 M = 4):
q = (M/D)(1 - C(Mge - e, k)/C(Mge, k)) per GPU, Q = (M/D)(1 - C(Mge - ge, k)/C(Mge, k)) per domain, and the
formulas above with p_j -> q, P_n -> Q. Low-latency is unchanged: node limits do not shorten its messages.

Combine moves as many copies as dispatch, in the other direction. Time on the wire per token = intra bytes /
NVLink bandwidth + inter bytes / NIC bandwidth (per GPU, one direction, not overlapped, latency ignored).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from k3lite.config import K3Config, MoEConfig, get_preset

SCHEMES = ("direct", "normal", "low-latency")
SCHEME_LABELS = {
    "direct": "direct (one copy per remote GPU)",
    "normal": "DeepEP normal (one RDMA copy per remote node, NVLink fan-out)",
    "low-latency": "DeepEP low-latency (one message per selected expert)",
}


def check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {list(SCHEMES)}, got {scheme!r}")
    return scheme


# ------------------------------------------------------------------------------------------ wire formats
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


def _align16(n: int) -> int:
    return -(-n // 16) * 16


def record_bytes(scheme: str, direction: str, dim: int, top_k: int, fmt: str) -> int:
    """Bytes one copy occupies on the wire (payload + routing metadata + padding); layouts in the docstring."""
    row = wire_format(fmt).row_bytes(dim)
    if direction not in ("dispatch", "combine"):
        raise ValueError(f"direction must be 'dispatch' or 'combine', got {direction!r}")
    check_scheme(scheme)
    if scheme == "direct":
        return row + 4 + (12 if direction == "dispatch" else 4) * top_k
    if scheme == "normal":
        return _align16(row + 8 + (8 if direction == "dispatch" else 4) * top_k)
    return row + 16 if direction == "dispatch" else row


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


def get_topology(name: str | Topology) -> Topology:
    if isinstance(name, Topology):
        return name
    if name not in TOPOLOGIES:
        raise ValueError(f"topology must be one of {list(TOPOLOGIES)}, got {name!r}")
    return TOPOLOGIES[name]


@dataclass(frozen=True)
class Deployment:
    """Where the experts of one MoE layer live, how they are reached, and how activations are encoded.

    ep_size GPUs (the first ep_size GPUs of the topology) share the E experts, as evenly as possible, in
    contiguous blocks. node_limit M > 0: each token may use experts on at most M domains; 0 = unlimited.
    """

    topology: Topology
    ep_size: int
    dispatch: str = "fp8"
    combine: str = "bf16"
    node_limit: int = 0
    scheme: str = "normal"

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
        wire_format(self.dispatch), wire_format(self.combine), check_scheme(self.scheme)

    @property
    def gpus_per_domain(self) -> int:
        return min(self.topology.gpus_per_domain, self.ep_size)

    @property
    def n_domains(self) -> int:
        return self.ep_size // self.gpus_per_domain

    def describe(self) -> str:
        limit = f", node limit M = {self.node_limit}" if self.node_limit else ""
        return (f"{self.topology.name}, EP {self.ep_size}, {SCHEME_LABELS[self.scheme]}, {self.dispatch} dispatch + "
                f"{self.combine} combine{limit}, uniform routing")


# The deployment the MoE and forward-pass pages state for their byte numbers: one 8-GPU node, DeepEP normal
# kernels (the prefill / training path), FP8 dispatch and BF16 combine as in DeepEP's own benchmarks.
REFERENCE = Deployment(TOPOLOGIES["dgx-b300"], 8, "fp8", "bf16", 0, "normal")


def experts_per_gpu(n_experts: int, n_gpus: int) -> list[int]:
    """As even as possible: the first E mod G GPUs hold one extra expert."""
    if n_gpus < 1 or n_experts < n_gpus:
        raise ValueError(f"need at least one expert per GPU: n_experts ({n_experts}) >= ep_size ({n_gpus}) >= 1")
    base, extra = divmod(n_experts, n_gpus)
    return [base + (j < extra) for j in range(n_gpus)]


def expert_to_gpu(n_experts: int, n_gpus: int) -> np.ndarray:
    """(E,) GPU of each expert, contiguous blocks."""
    return np.repeat(np.arange(n_gpus), experts_per_gpu(n_experts, n_gpus))


# ------------------------------------------------------------------------------------------ expected copies
class CopyCounts(NamedTuple):
    """Expected (or counted) copies of one token per MoE layer, dispatch direction (combine mirrors it)."""

    intra: float  # copies over NVLink (inside a domain)
    inter: float  # copies over the NIC (between domains)
    gpus_hit: float  # distinct GPUs holding >= 1 of the token's experts (own GPU included)
    domains_hit: float  # distinct domains holding >= 1 of the token's experts (own domain included)

    @property
    def total(self) -> float:
        return self.intra + self.inter


def _miss(pool: int, on_gpu: int, k: int) -> float:
    """P(none of k draws without replacement from `pool` experts lands among `on_gpu` given ones)."""
    return math.comb(pool - on_gpu, k) / math.comb(pool, k)


def expected_copies(n_experts: int, top_k: int, ep_size: int, gpus_per_domain: int, node_limit: int = 0,
                    scheme: str = "direct") -> CopyCounts:
    """Exact expectation under uniform routing (formulas in the module docstring); token on a uniform GPU."""
    check_scheme(scheme)
    if not 1 <= top_k <= n_experts:
        raise ValueError(f"top_k must be in [1, n_experts={n_experts}], got {top_k}")
    counts = experts_per_gpu(n_experts, ep_size)
    g = min(gpus_per_domain, ep_size)
    if ep_size % g:
        raise ValueError(f"ep_size ({ep_size}) must be a multiple of gpus_per_domain ({g})")
    G, D = ep_size, ep_size // g
    if node_limit and node_limit < D:
        if n_experts % ep_size:
            raise ValueError(f"node-limited routing needs n_experts ({n_experts}) divisible by ep_size ({ep_size})")
        e = n_experts // ep_size
        pool = node_limit * g * e
        if top_k > pool:
            raise ValueError(f"top_k ({top_k}) must be <= experts on node_limit={node_limit} domains ({pool})")
        sum_p = G * (node_limit / D) * (1 - _miss(pool, e, top_k))  # sum over GPUs of P(GPU hit)
        sum_dom = D * (node_limit / D) * (1 - _miss(pool, g * e, top_k))  # sum over domains of P(domain hit)
    else:
        sum_p = sum(1 - _miss(n_experts, c, top_k) for c in counts)
        dom_counts = [sum(counts[n * g:(n + 1) * g]) for n in range(D)]
        sum_dom = sum(1 - _miss(n_experts, c, top_k) for c in dom_counts)
    if scheme == "direct":
        intra, inter = (g - 1) / G * sum_p, (G - g) / G * sum_p
    elif scheme == "normal":
        intra, inter = (G - D) / G * sum_p, (G - g) / G * sum_dom
    else:
        intra, inter = top_k * (g - 1) / G, top_k * (G - g) / G
    return CopyCounts(intra, inter, sum_p, sum_dom)


# ------------------------------------------------------------------------------------------ exact counts
def link_copies(topk_idx: np.ndarray, src_gpu: np.ndarray, expert_gpu: np.ndarray, gpus_per_domain: int,
                scheme: str) -> dict[str, np.ndarray]:
    """Copies each GPU sends to each GPU for given routing: {phase: (G, G) int}, diagonal zero (no wire).

    Phases: dispatch_intra, dispatch_inter, combine_intra, combine_inter. topk_idx (N, k) expert ids,
    src_gpu (N,) the GPU each token lives on, expert_gpu (E,) placement. Row = sender, column = receiver.
    """
    check_scheme(scheme)
    topk_idx, src = np.asarray(topk_idx), np.asarray(src_gpu)
    expert_gpu = np.asarray(expert_gpu)
    n, G, g = topk_idx.shape[0], int(expert_gpu.max()) + 1, gpus_per_domain
    dest = expert_gpu[topk_idx]  # (N, k) GPU of each chosen expert
    mats = {p: np.zeros((G, G), dtype=np.int64) for p in ("dispatch_intra", "dispatch_inter")}
    if scheme == "low-latency":
        np.add.at(mats["dispatch_intra"], (np.repeat(src, dest.shape[1]), dest.reshape(-1)), 1)
    else:
        hit = np.zeros((n, G), dtype=bool)  # (N, G) distinct destination GPUs
        np.put_along_axis(hit, dest, True, axis=1)
        if scheme == "direct":
            np.add.at(mats["dispatch_intra"], src, hit.astype(np.int64))
        else:  # normal: RDMA to the same local rank of each hit domain, then NVLink from that entry GPU
            dom_hit = hit.reshape(n, G // g, g).any(2)  # (N, D)
            entry = np.arange(G // g)[None, :] * g + (src % g)[:, None]  # (N, D) entry GPU per domain
            rows, doms = dom_hit.nonzero()
            np.add.at(mats["dispatch_inter"], (src[rows], entry[rows, doms]), 1)
            tok, gpu = hit.nonzero()
            np.add.at(mats["dispatch_intra"], (entry[tok, gpu // g], gpu), 1)
    same = (np.arange(G)[:, None] // g) == (np.arange(G)[None, :] // g)  # (G, G) same domain
    every = mats["dispatch_intra"] + mats["dispatch_inter"]
    out = {"dispatch_intra": every * same, "dispatch_inter": every * ~same}
    for side in ("intra", "inter"):
        np.fill_diagonal(out[f"dispatch_{side}"], 0)
        out[f"combine_{side}"] = out[f"dispatch_{side}"].T.copy()  # combine retraces every copy backwards
    return out


def count_copies(topk_idx: np.ndarray, src_gpu: np.ndarray, expert_gpu: np.ndarray, gpus_per_domain: int,
                 scheme: str = "direct") -> tuple[np.ndarray, np.ndarray]:
    """Exact dispatch copies per token for given routing: (intra (N,), inter (N,)) int arrays."""
    check_scheme(scheme)
    topk_idx, src = np.asarray(topk_idx), np.asarray(src_gpu)
    expert_gpu = np.asarray(expert_gpu)
    n, G, g = topk_idx.shape[0], int(expert_gpu.max()) + 1, gpus_per_domain
    dest = expert_gpu[topk_idx]  # (N, k)
    same_dom = dest // g == (src // g)[:, None]  # (N, k)
    if scheme == "low-latency":
        remote = dest != src[:, None]
        return (remote & same_dom).sum(1), (~same_dom).sum(1)
    hit = np.zeros((n, G), dtype=bool)  # (N, G)
    np.put_along_axis(hit, dest, True, axis=1)
    own = np.arange(G)[None, :] // g == (src // g)[:, None]  # (N, G) GPU in the token's domain
    if scheme == "direct":
        hit[np.arange(n), src] = False
        return (hit & own).sum(1), (hit & ~own).sum(1)
    other_local = (np.arange(G)[None, :] % g) != (src % g)[:, None]  # (N, G) local rank differs
    dom_hit = hit.reshape(n, G // g, g).any(2)  # (N, D)
    return (hit & other_local).sum(1), dom_hit.sum(1) - dom_hit[np.arange(n), src // g]


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


# ------------------------------------------------------------------------------------------ bytes
class WireBytes(NamedTuple):
    """Bytes one token moves per MoE layer (expected under uniform routing), by direction and link."""

    scheme: str
    copies: CopyCounts  # dispatch copies per token per layer (combine sends as many back)
    dispatch_record: int  # bytes per dispatch copy (payload + metadata + padding)
    combine_record: int
    dispatch_intra: float
    dispatch_inter: float
    combine_intra: float
    combine_inter: float
    metadata: float  # the routing-metadata and padding part of all four (bytes)

    @property
    def dispatch(self) -> float:
        return self.dispatch_intra + self.dispatch_inter

    @property
    def combine(self) -> float:
        return self.combine_intra + self.combine_inter

    @property
    def intra(self) -> float:
        return self.dispatch_intra + self.combine_intra

    @property
    def inter(self) -> float:
        return self.dispatch_inter + self.combine_inter

    @property
    def total(self) -> float:
        return self.dispatch + self.combine


def layer_bytes(copies: CopyCounts, scheme: str, dim: int, top_k: int, dispatch: str, combine: str) -> WireBytes:
    """Bytes for the given copies: copies x record bytes of the scheme (layouts in the module docstring)."""
    d_rec, c_rec = (record_bytes(scheme, side, dim, top_k, fmt) for side, fmt in
                    (("dispatch", dispatch), ("combine", combine)))
    meta = (d_rec - wire_format(dispatch).row_bytes(dim)) + (c_rec - wire_format(combine).row_bytes(dim))
    return WireBytes(scheme, copies, d_rec, c_rec, copies.intra * d_rec, copies.inter * d_rec,
                     copies.intra * c_rec, copies.inter * c_rec, copies.total * meta)


def wire_bytes_per_token(cfg: K3Config | MoEConfig, topology: str | Topology = "dgx-b300", ep: int = 8,
                         scheme: str = "normal", node_limit: int = 0, *, dispatch: str = "fp8",
                         combine: str = "bf16", d_model: int | None = None) -> WireBytes:
    """THE wire-bytes function: bytes one token moves per MoE layer (dispatch + combine, intra / inter).

    cfg: a K3Config, or a MoEConfig with d_model given (the width when there is no latent). Defaults are the
    REFERENCE deployment the MoE and forward-pass pages state. Uniform routing, expected values.
    """
    if isinstance(cfg, K3Config):
        moe, width = cfg.moe, cfg.d_model
    else:
        if d_model is None:
            raise ValueError("wire_bytes_per_token needs d_model when given a MoEConfig")
        moe, width = cfg, d_model
    dep = Deployment(get_topology(topology), ep, dispatch, combine, node_limit, scheme)
    c = expected_copies(moe.n_routed_experts, moe.top_k, dep.ep_size, dep.gpus_per_domain, node_limit, scheme)
    return layer_bytes(c, scheme, moe.latent_dim or width, moe.top_k, dispatch, combine)


def deployment_bytes(cfg: K3Config | MoEConfig, dep: Deployment, d_model: int | None = None) -> WireBytes:
    """wire_bytes_per_token for a Deployment object."""
    return wire_bytes_per_token(cfg, dep.topology, dep.ep_size, dep.scheme, dep.node_limit, dispatch=dep.dispatch,
                                combine=dep.combine, d_model=d_model)


class TokenTraffic(NamedTuple):
    """Analytic bytes per token for one config on one deployment."""

    name: str
    dim_on_wire: int  # latent_dim or d_model
    n_experts: int
    top_k: int
    ep_size: int
    experts_per_gpu: float
    per_layer: WireBytes
    n_moe_layers: int
    per_forward: float  # bytes per token per forward pass (all MoE layers)
    wire_s_layer: float  # seconds per token per layer on one GPU's links (intra/NVLink + inter/NIC)
    wire_s_forward: float

    @property
    def copies(self) -> CopyCounts:
        return self.per_layer.copies


def link_seconds(b: WireBytes, topology: Topology) -> float:
    """Seconds the bytes take on one GPU's links: intra / NVLink + inter / NIC (not overlapped)."""
    return b.intra / topology.intra_bw + b.inter / topology.inter_bw


def analytic_traffic(cfg: K3Config, dep: Deployment) -> TokenTraffic:
    """Bytes one token moves per MoE layer and per forward pass under uniform routing."""
    moe = cfg.moe
    b = deployment_bytes(cfg, dep)
    n_moe = sum(t == "moe" for t in cfg.ffn_types())
    wire = link_seconds(b, dep.topology)
    return TokenTraffic(cfg.name, moe.latent_dim or cfg.d_model, moe.n_routed_experts, moe.top_k, dep.ep_size,
                        moe.n_routed_experts / dep.ep_size, b, n_moe, b.total * n_moe, wire, wire * n_moe)


def compare_presets(names: tuple[str, ...] = ("deepseek-v3", "kimi-k2", "k3-estimated"), topology: str = "nvl72",
                    ep_size: int = 64, dispatch: str = "fp8", combine: str = "bf16", node_limit: int = 0,
                    scheme: str = "normal") -> list[TokenTraffic]:
    """The side-by-side: each preset's published/estimated config on the same deployment."""
    dep = Deployment(get_topology(topology), ep_size, dispatch, combine, node_limit, scheme)
    return [analytic_traffic(get_preset(n), dep) for n in names]


def node_limit_sweep(cfg: K3Config, topology: str, ep_size: int, dispatch: str = "fp8",
                     combine: str = "bf16") -> dict[str, list[tuple[int, float]]]:
    """NIC (inter-domain) bytes per token per layer vs node limit M = 1..D, per scheme: {scheme: [(M, bytes)]}."""
    dep = Deployment(get_topology(topology), ep_size, dispatch, combine)
    return {s: [(m, wire_bytes_per_token(cfg, topology, ep_size, s, m if m < dep.n_domains else 0,
                                         dispatch=dispatch, combine=combine).inter)
                for m in range(1, dep.n_domains + 1)] for s in SCHEMES}


def traffic_table(rows: list[TokenTraffic]) -> list[dict]:
    """Plain dicts for a table (units in the keys; decimal kB / MB)."""
    return [{
        "model": r.name, "dim on wire": r.dim_on_wire, "experts / GPU": round(r.experts_per_gpu, 2),
        "NVLink copies / token": round(r.copies.intra, 3), "NIC copies / token": round(r.copies.inter, 3),
        "kB / token / layer": round(r.per_layer.total / 1e3, 2), "NIC kB / token / layer": round(r.per_layer.inter / 1e3, 2),
        "MoE layers": r.n_moe_layers, "MB / token / forward": round(r.per_forward / 1e6, 3),
        "µs on wire / token / forward": round(r.wire_s_forward * 1e6, 3),
    } for r in rows]


def cli_rows(presets: tuple[str, ...], topology: str, ep_size: int, node_limit: int, scheme: str,
             dispatch: str = "fp8", combine: str = "bf16") -> list[dict]:
    """The `analytic --json` rows: per preset, expected copies and bytes per token per MoE layer."""
    rows = compare_presets(presets, topology, ep_size, dispatch, combine, node_limit, scheme)
    return [{
        "preset": r.name, "topology": topology, "ep": ep_size, "node_limit": node_limit, "scheme": scheme,
        "dispatch_format": dispatch, "combine_format": combine, "dim_on_wire": r.dim_on_wire,
        "intra_copies": r.copies.intra, "inter_copies": r.copies.inter,
        "dispatch_bytes": r.per_layer.dispatch, "combine_bytes": r.per_layer.combine,
        "dispatch_intra_bytes": r.per_layer.dispatch_intra, "dispatch_inter_bytes": r.per_layer.dispatch_inter,
        "combine_intra_bytes": r.per_layer.combine_intra, "combine_inter_bytes": r.per_layer.combine_inter,
        "dispatch_record_bytes": r.per_layer.dispatch_record, "combine_record_bytes": r.per_layer.combine_record,
        "moe_layers": r.n_moe_layers, "bytes_per_forward": r.per_forward, "wire_us_per_forward": r.wire_s_forward * 1e6,
    } for r in rows]
