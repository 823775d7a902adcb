"""The backward pass of expert parallelism: what travels, in which wire format, how many bytes (analytic).

Autograd through the all-to-alls turns each collective around: the gradient of a dispatch is a combine and the
gradient of a combine is a dispatch (DeepEP's README, its training example at deepseek-ai/DeepEP @ dd758ca:
`dispatch_backward` calls `combine(grad_recv_x, handle, topk_weights=grad_recv_topk_weights)`, `combine_backward`
calls `dispatch(grad_combined_x, handle=handle)`). So the backward moves exactly as many copies as the forward,
each one the other way round:

    grad of combine   the gradient of a token's output goes to every GPU (copy) that sent it a partial sum: the same
                      copies, on the same links, as the forward dispatch. A *cached* dispatch: no top-k ids or weights
                      travel (DeepEP `Buffer.dispatch` asserts `topk_idx is None and topk_weights is None` when given
                      a handle, so the kernels see num_topk = 0): record_bytes(scheme, "dispatch", dim, 0, fmt) =
                      direct row + 4, normal align16(row + 8), low-latency 16 + row.
    grad of dispatch  each copy's input gradient comes back, reduced the way the combine reduces, with the gradient
                      of the k gate weights (fp32) where the weights travelled forward and were applied at the
                      expert's GPU (direct, normal): record_bytes(scheme, "combine", dim, k, fmt). The low-latency
                      kernels apply the weights at the token's GPU, so no weight gradient travels (record = row).

Wire formats as DeepSeek-V3 trains (report arXiv 2412.19437 §3.3.2): the forward dispatch in FP8 (the activations
before the MoE up-projections), the activation gradient before the MoE down-projections in FP8 too (the gradient
of the combine, dispatched), and "both the forward and backward combine components" in BF16.

Expected bytes under uniform routing are the forward's copies (analytic.model_copies, by the model's own routing
rule) times these records; for given routing, analytic.link_copies' dispatch matrices carry the grad of the combine and its combine
matrices the grad of the dispatch (`backward_link_bytes`). measured_backward.py counts the same bytes on gloo.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from k3lite.base.evidence import Evidence, derived, measured_elsewhere, released
from k3lite.interconnect.analytic import (
    CopyCounts, WireBytes, group_limited_hits, layer_bytes, link_copies, model_copies, sample_uniform_routing,
)
from k3lite.interconnect.deepep import SOURCE as DEEPEP_SOURCE
from k3lite.interconnect.deepep import normal_rows
from k3lite.interconnect.deployment import Deployment, Topology, expert_to_gpu, record_bytes, wire_format
from k3lite.model.config import K3Config, MoEConfig
from k3lite.model.presets import get_preset

# the four byte kinds the backward adds: direction of travel x link (the forward's are measured.KINDS)
BWD_KINDS = ("grad_combine_intra", "grad_combine_inter", "grad_dispatch_intra", "grad_dispatch_inter")

TRAINING_FORMATS = {"dispatch": "fp8", "combine": "bf16", "grad_combine": "fp8", "grad_dispatch": "bf16"}
TRAINING_FORMATS_SOURCE = ("DeepSeek-V3 technical report (arXiv 2412.19437) §3.3.2: activations before the MoE "
                           "up-projections dispatched in FP8, the activation gradient before the MoE down-projections "
                           "in FP8, forward and backward combine in BF16")
KERNELS_SOURCE = ("DeepEP README training example (deepseek-ai/DeepEP @ dd758ca): the backward of dispatch is a combine "
                  "with the top-k weight gradients, the backward of combine a cached dispatch (no top-k)")


def backward_records(scheme: str, dim: int, top_k: int, grad_combine: str = "fp8",
                     grad_dispatch: str = "bf16") -> tuple[int, int]:
    """(bytes of one grad-of-combine copy, bytes of one grad-of-dispatch copy): layouts in the module docstring."""
    wire_format(grad_combine), wire_format(grad_dispatch)
    return (record_bytes(scheme, "dispatch", dim, 0, grad_combine),
            record_bytes(scheme, "combine", dim, top_k if scheme != "low-latency" else 0, grad_dispatch))


def backward_layer_bytes(copies: CopyCounts, scheme: str, dim: int, top_k: int, grad_combine: str = "fp8",
                         grad_dispatch: str = "bf16") -> WireBytes:
    """The backward's bytes per token per MoE layer for the forward's copies, as a WireBytes whose *dispatch*
    fields are the grad of the combine (it travels like a dispatch) and whose *combine* fields are the grad of the
    dispatch (it travels like a combine)."""
    gc, gd = backward_records(scheme, dim, top_k, grad_combine, grad_dispatch)
    meta = (gc - wire_format(grad_combine).row_bytes(dim)) + (gd - wire_format(grad_dispatch).row_bytes(dim))
    return WireBytes(scheme, copies, gc, gd, copies.intra * gc, copies.inter * gc, copies.intra * gd,
                     copies.inter * gd, copies.total * meta)


class TrainingEPBytes(NamedTuple):
    """Bytes one token moves per MoE layer in one training step (expected under uniform routing)."""

    forward: WireBytes
    backward: WireBytes  # dispatch fields = grad of combine, combine fields = grad of dispatch
    formats: dict
    evidence: Evidence

    @property
    def total(self) -> float:
        return self.forward.total + self.backward.total

    @property
    def intra(self) -> float:
        return self.forward.intra + self.backward.intra

    @property
    def inter(self) -> float:
        return self.forward.inter + self.backward.inter


def training_ep_bytes(cfg: K3Config | MoEConfig, dep: Deployment, d_model: int | None = None, *,
                      latent: bool = True, grad_combine: str | None = None,
                      grad_dispatch: str | None = None) -> TrainingEPBytes:
    """Forward + backward bytes per token per MoE layer on a deployment. The forward uses the deployment's
    dispatch / combine formats; the backward's default to the same (grad of combine as the dispatch, grad of
    dispatch as the combine: DeepSeek-V3's FP8 / BF16). latent=False sends d_model (the classic MoE) instead of
    the latent: the latent's saving, both directions."""
    if isinstance(cfg, K3Config):
        moe, width = cfg.moe, cfg.d_model
    else:
        if d_model is None:
            raise ValueError("training_ep_bytes needs d_model when given a MoEConfig")
        moe, width = cfg, d_model
    dim = (moe.latent_dim or width) if latent else width
    gc, gd = grad_combine or dep.dispatch, grad_dispatch or dep.combine
    c = model_copies(moe, dep)  # routed by the model's own rule (and the deployment's node limit)
    fwd = layer_bytes(c, dep.scheme, dim, moe.top_k, dep.dispatch, dep.combine)
    bwd = backward_layer_bytes(c, dep.scheme, dim, moe.top_k, gc, gd)
    formats = {"dispatch": dep.dispatch, "combine": dep.combine, "grad_combine": gc, "grad_dispatch": gd}
    return TrainingEPBytes(fwd, bwd, formats, derived(training_ep_bytes, model_copies, backward_records))


def backward_link_bytes(topk_idx: np.ndarray, src_gpu: np.ndarray, expert_gpu: np.ndarray, gpus_per_domain: int,
                        scheme: str, dim: int, top_k: int, grad_combine: str, grad_dispatch: str) -> list[dict]:
    """Bytes each GPU SENDS in the backward for given routing: per GPU {BWD_KINDS: int}, exact integers."""
    mats = link_copies(topk_idx, src_gpu, expert_gpu, gpus_per_domain, scheme)
    gc, gd = backward_records(scheme, dim, top_k, grad_combine, grad_dispatch)
    rec = {"grad_combine": (gc, "dispatch"), "grad_dispatch": (gd, "combine")}
    n = mats["dispatch_intra"].shape[0]
    return [{kind: int(mats[f"{rec[kind.rsplit('_', 1)[0]][1]}_{kind.rsplit('_', 1)[1]}"][r].sum())
             * rec[kind.rsplit("_", 1)[0]][0] for kind in BWD_KINDS} for r in range(n)]


# ------------------------------------------------------------------------------------------ DeepSeek-V3's numbers
DSV3_REPORT = "DeepSeek-V3 technical report (arXiv 2412.19437)"


def h800_topology() -> Topology:
    """DeepSeek-V3's training cluster as its report states it: 2048 H800 GPUs, 8 per node on NVLink (160 GB/s
    achieved), one 400 Gb/s InfiniBand NIC per GPU (50 GB/s): a Topology the traffic functions accept."""
    return Topology("DeepSeek-V3's 2048 H800s (8 per node, NVLink 160 GB/s, IB 50 GB/s)", 2048, 8, 160e9, 50e9,
                    f"{DSV3_REPORT} §3.1 and §3.2.2: 2048 NVIDIA H800 GPUs, NVLink 160 GB/s, IB 50 GB/s per GPU")


class DeepSeekCheck(NamedTuple):
    """One of DeepSeek-V3's numerical statements and ours for it: 'about' holds within 5%, 'at most' when ours
    does not exceed theirs."""

    claim: str
    relation: str  # "about" | "at most"
    theirs: float
    ours: float
    evidence_theirs: Evidence
    evidence_ours: Evidence

    @property
    def holds(self) -> bool:
        if self.relation == "at most":
            return self.ours <= self.theirs
        return abs(self.ours - self.theirs) <= 0.05 * abs(self.theirs)


def deepseek_v3_checks() -> list[DeepSeekCheck]:
    """DeepSeek-V3's statements about its training interconnect (§3.2.2), reproduced where they are numbers:
    NVLink 160 GB/s "roughly 3.2 times" InfiniBand's 50 GB/s; each token on at most 4 nodes (its group rule,
    sampled here on EP 64 = 8 nodes: the most nodes any sampled token reaches, and the mean); "up to 13 experts
    (4 nodes x 3.2 experts/node) while preserving the same communication cost"."""
    topo = h800_topology()
    ratio = topo.intra_bw / topo.inter_bw
    moe = get_preset("deepseek-v3").moe
    ids = sample_uniform_routing(4096, moe.n_routed_experts, moe.top_k, 64, 8, node_limit=4, seed=0)  # (N, k)
    nodes = expert_to_gpu(moe.n_routed_experts, 64)[ids] // 8  # (N, k) node of each chosen expert
    most = max(len(set(row)) for row in nodes.tolist())
    hits = group_limited_hits(moe.n_routed_experts, moe.top_k, 64, 8, 4)
    rep = released(f"{DSV3_REPORT} §3.2.2")
    return [
        DeepSeekCheck("NVLink bandwidth / InfiniBand bandwidth", "about", 3.2, ratio, rep, derived(h800_topology)),
        DeepSeekCheck("nodes any token's experts sit on (most over 4,096 sampled tokens, group rule, EP 64)",
                      "at most", 4.0, float(most), rep, derived(sample_uniform_routing)),
        DeepSeekCheck("nodes a token's experts sit on (mean, group rule, EP 64)", "at most", 4.0, hits.domains, rep,
                      derived(group_limited_hits)),
        DeepSeekCheck("experts per node reachable over NVLink in the time of one IB copy", "about", 3.2, ratio, rep,
                      derived(h800_topology)),
        DeepSeekCheck("experts a token uses per node it reaches (mean top-8 / nodes hit), within that 3.2", "at most",
                      3.2, moe.top_k / hits.domains, rep, derived(group_limited_hits)),
        DeepSeekCheck("experts per token at the same communication cost (4 nodes x 3.2 per node)", "about", 13.0,
                      4 * ratio, rep, derived(h800_topology)),
    ]


def deepep_training_bandwidths() -> list[dict]:
    """DeepEP's measured normal-kernel (training / prefill) bandwidths, as deepep.py tabulates them, each row with
    its evidence."""
    ev = measured_elsewhere(DEEPEP_SOURCE)
    return [dict(row, evidence=ev) for row in normal_rows()]
