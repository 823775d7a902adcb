"""Where the experts live and how one copy is laid out on the wire: schemes, wire formats, records, topologies.

Record bytes per copy (what one copy occupies on the wire), dim = elements travelling (latent_dim for LatentMoE,
arXiv 2601.18089, else d_model), row(fmt) = the activation in its wire format, k = top-k:

    direct       dispatch row + 4 (int32 source index) + 12 k (int64 topk_idx + fp32 weight per slot; DeepEP's
                 `topk_idx_t` is int64 unless EP_NUM_TOPK_IDX_BITS says otherwise: compiled.cuh 54-72,
                 intranode.cu 276-291)          combine row + 4 + 4 k (intranode.cu 764-776)
    normal       dispatch align16(row + 8 + 8 k): 8-byte SourceMeta, topk_idx narrowed to int32 on the wire
                 (`static_cast<int>`), fp32 weights (internode.cu 22-51, 719-726), the same record on both hops
                                                combine align16(row + 8 + 4 k) (internode.cu 1758)
    low-latency  dispatch 16 + row (an int4 header: source index + 3 reserved ints; internode_ll.cu 176-182)
                                                combine row (as DeepEP's own byte count, tests/legacy/test_low_latency.py 218-224)

Wire formats: FP8 e4m3 with one fp32 scale per 128 elements (1 byte/elem + 4 bytes per 128), BF16, FP32.

Topologies: per-GPU, one-direction bandwidths from vendor datasheets (each entry cites its source).
`Deployment` = topology + EP size + wire formats + node limit + scheme; `REFERENCE` is the deployment the MoE and
forward-pass pages state for their byte numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

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


# each scheme's record layout in words, as `record_bytes` computes it (row = the activation in its wire format)
RECORD_LAYOUTS = {
    "direct": "dispatch row + 4 + 12 k bytes, combine row + 4 + 4 k (source index; topk index and weight per slot)",
    "normal": "dispatch align16(row + 8 + 8 k) bytes, combine align16(row + 8 + 4 k) (8-byte source metadata; "
              "index and weight per top-k slot; 16-byte aligned)",
    "low-latency": "dispatch 16 + row bytes, combine row (a 16-byte header)",
}
ROW_WORDS = "row = the values in the wire format (fp8: 1 byte each + a 4-byte scale per 128; bf16: 2 bytes each)"


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
NVLINK4_PER_DIR = 450e9  # bytes/s: NVLink 4 (Hopper) is 900 GB/s per GPU, bidirectional -> 450 GB/s each way
CX7_PER_DIR = 50e9  # bytes/s: ConnectX-7 400 Gb/s per GPU = 50 GB/s each way
_HOPPER_NODE = ("8 GPUs per node on NVLink 4, 900 GB/s per GPU bidirectional (NVIDIA H100 / H200 SXM datasheets, as "
                "tabulated at glennklockwood.com/garden/processors/h100 and aiwiki.ai/wiki/nvidia_h200); one "
                "ConnectX-7 400 Gb/s NIC per GPU between nodes, as in DGX H100 / DGX H200 (8 x ConnectX-7)")


@dataclass(frozen=True)
class Topology:
    """GPUs, how many share one NVLink (scale-up) domain, and per-GPU one-direction link bandwidths."""

    name: str
    n_gpus: int
    gpus_per_domain: int
    intra_bw: float  # bytes/s per GPU per direction inside the NVLink domain
    inter_bw: float  # bytes/s per GPU per direction to other domains (scale-out NIC)
    source: str
    short: str = ""  # what a control shows (a quarter of a 1400 px page holds ~25 characters); "" = the name

    @property
    def label(self) -> str:
        return self.short or self.name

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
        "8x ConnectX-8 SuperNIC 800 Gb/s", "one node, 8 GPUs"),
    "super-node-64": Topology(
        "64-GPU super-node (one scale-up domain)", 64, 64, NVLINK5_PER_DIR, CX8_PER_DIR,
        "64 GPUs in one scale-up domain; per-GPU bandwidth ASSUMED equal to NVLink 5 (1.8 TB/s per GPU, "
        "NVIDIA NVLink spec) - our assumption, not a vendor spec for a 64-GPU system", "64-GPU super-node"),
    "nvl72": Topology(
        "NVL72 rack (72 GPUs, one NVLink domain)", 72, 72, NVLINK5_PER_DIR, CX8_PER_DIR,
        "NVIDIA GB200 NVL72 spec: 72 GPUs in one NVLink domain, 1.8 TB/s NVLink per GPU (130 TB/s total); "
        "scale-out ConnectX-8 800 Gb/s per GPU (GB300 NVL72 spec)", "NVL72 rack, 72 GPUs"),
    "multi-node-8x8": Topology(
        "8 nodes x 8 GPUs over scale-out network", 64, 8, NVLINK5_PER_DIR, CX8_PER_DIR,
        "8x DGX B300 (NVIDIA DGX B300 datasheet: NVLink 5 1.8 TB/s per GPU inside a node; "
        "ConnectX-8 800 Gb/s per GPU between nodes)", "8 nodes × 8 GPUs"),
    "h100-8x8": Topology(
        "8 nodes x 8 H100 SXM (NVLink 4, 400G NICs)", 64, 8, NVLINK4_PER_DIR, CX7_PER_DIR,
        "8x DGX H100: " + _HOPPER_NODE, "8 × 8 H100 nodes"),
    "h200-8x8": Topology(
        "8 nodes x 8 H200 (NVLink 4, 400G NICs)", 64, 8, NVLINK4_PER_DIR, CX7_PER_DIR,
        "8x DGX H200: " + _HOPPER_NODE, "8 × 8 H200 nodes"),
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


def even_expert_counts(ep_size: int, lo: int = 8, hi: int = 1024, step: int = 8) -> list[int]:
    """Expert counts E in [lo, hi] (multiples of `step`) that shard evenly over `ep_size` GPUs: multiples of
    lcm(step, ep_size). Node-limited routing (and real deployments) need E divisible by the EP size; the
    interconnect page offers only these, so no slider position is an error."""
    if ep_size < 1 or step < 1:
        raise ValueError(f"ep_size and step must be >= 1, got {ep_size}, {step}")
    unit = math.lcm(step, ep_size)
    counts = list(range(unit * max(1, -(-lo // unit)), hi + 1, unit))
    if not counts:
        raise ValueError(f"no expert count in [{lo}, {hi}] is a multiple of {unit} (EP {ep_size})")
    return counts


def snap_experts(n_experts: int, ep_size: int, lo: int = 8, hi: int = 1024, step: int = 8) -> int:
    """The nearest of `even_expert_counts(ep_size, ...)` to `n_experts` (the larger one on a tie)."""
    return min(even_expert_counts(ep_size, lo, hi, step), key=lambda e: (abs(e - n_experts), -e))


def expert_to_gpu(n_experts: int, n_gpus: int) -> np.ndarray:
    """(E,) GPU of each expert, contiguous blocks."""
    return np.repeat(np.arange(n_gpus), experts_per_gpu(n_experts, n_gpus))
