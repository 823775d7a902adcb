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

Record bytes per copy (payload + routing metadata + padding, read from DeepEP's buffers): deployment.py.

Expected copies under uniform routing (top-k without replacement among E experts; the token on a uniform GPU;
c_j experts on GPU j, C_n on domain n; p_j = 1 - C(E - c_j, k)/C(E, k), P_n = 1 - C(E - C_n, k)/C(E, k)):

    direct       intra = (g - 1)/G * sum_j p_j          inter = (G - g)/G * sum_j p_j
    normal       intra = (G - D)/G * sum_j p_j          inter = (G - g)/G * sum_n P_n
                 (an NVLink hop reaches every hit GPU whose local rank differs from the token's)
    low-latency  intra = k (g - 1)/G                    inter = k (G - g)/G   (each slot's expert is uniform)

Group-limited routing is the model's own rule where its config has one (DeepSeek-V3: n_group 8, topk_group 4;
`inference/model.py` `Gate.forward`, deepseek-ai/DeepSeek-V3 at 9b4e978, lines 584-593): groups of E / G
consecutive experts, each scored by the sum of its two best expert scores, the best M kept, the token's top-k taken
among them. So on one 8-GPU node at EP 8 (a group per GPU) a DeepSeek-V3 token reaches at most 4 GPUs, and on
8 x 8 at EP 64 (a group per node) at most 4 nodes. A deployment's node limit (at most M domains per token) is the
same rule with one group per domain (`routing.routing_rule`). A group that wins on its two best scores nearly always
receives one of them, so a token lands in almost all M chosen groups (DeepSeek-V3 on 8 x 8: 3.97 of 4 nodes), far
more than M random groups with k experts spread uniformly over them would give (3.63). The sums over GPUs and
domains of P(hit) are E[distinct GPUs hit] and E[distinct domains hit]; `routing.routed_hits` estimates both by
seeded sampling of i.i.d. sigmoid scores (GROUP_SAMPLE_TOKENS tokens, standard errors returned; <= 0.003 for the
presets), and the formulas above use them. Low-latency is unchanged: group limits do not shorten its messages.

Combine moves as many copies as dispatch, in the other direction. Time on the wire per token = intra bytes /
NVLink bandwidth + inter bytes / NIC bandwidth (per GPU, one direction, not overlapped, latency ignored).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from k3lite.model.config import K3Config, MoEConfig
from k3lite.model.presets import get_preset
from k3lite.interconnect.deployment import (
    SCHEMES, Deployment, Topology, check_scheme, experts_per_gpu, get_topology, record_bytes, wire_format,
)
from k3lite.interconnect.routing import (  # noqa: F401  (re-exported: the routing rule's home is routing.py)
    GROUP_SAMPLE_TOKENS, GroupLimitedHits, describe_rule, group_limited_hits, routed_hits, routing_rule,
    sample_group_limited_routing,
)

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
                    scheme: str = "direct", *, n_groups: int = 1, topk_groups: int = 1) -> CopyCounts:
    """Expectation under uniform routing (formulas in the module docstring); token on a uniform GPU. n_groups /
    topk_groups: the model's own group rule (its config's); node_limit M > 0: a deployment's limit of M domains
    (`routing_rule` says which holds). Exact without a limit; with one, the hit counts come from `routed_hits`
    (DeepSeek-V3's group rule, sampled)."""
    check_scheme(scheme)
    if not 1 <= top_k <= n_experts:
        raise ValueError(f"top_k must be in [1, n_experts={n_experts}], got {top_k}")
    counts = experts_per_gpu(n_experts, ep_size)
    g = min(gpus_per_domain, ep_size)
    if ep_size % g:
        raise ValueError(f"ep_size ({ep_size}) must be a multiple of gpus_per_domain ({g})")
    G, D = ep_size, ep_size // g
    groups, kept = routing_rule(n_groups, topk_groups, D, node_limit)
    if kept < groups:
        if n_experts % groups:
            raise ValueError(f"group-limited routing needs n_experts ({n_experts}) divisible by its {groups} groups")
        pool = kept * (n_experts // groups)
        if top_k > pool:
            where = (f"node_limit={node_limit} domains" if node_limit and node_limit < D
                     else f"the best {kept} of {groups} groups")
            raise ValueError(f"top_k ({top_k}) must be <= experts on {where} ({pool})")
        hits = routed_hits(n_experts, top_k, ep_size, g, groups, kept)
        sum_p, sum_dom = hits.gpus, hits.domains  # sums over GPUs / domains of P(hit)
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
def _destinations(topk_idx: np.ndarray, expert_gpu: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(dest (N, k) GPU of each slot, -1 where masked; valid (N, k); G). A slot of -1 is DeepEP's "no expert"
    (a dropped or masked top-k entry): it sends nothing. Any other id outside [0, E) is an error, not numpy's
    negative indexing (which would read -1 as the last expert)."""
    topk_idx, expert_gpu = np.asarray(topk_idx), np.asarray(expert_gpu)
    if topk_idx.ndim != 2:
        raise ValueError(f"topk_idx must be (N, k), got shape {topk_idx.shape}")
    n_experts = expert_gpu.shape[0]
    bad = (topk_idx < -1) | (topk_idx >= n_experts)
    if bad.any():
        raise ValueError(f"topk_idx must be expert ids in [0, {n_experts}) or -1 for a masked slot; got "
                         f"{int(topk_idx[bad][0])}")
    valid = topk_idx >= 0
    dest = np.where(valid, expert_gpu[np.where(valid, topk_idx, 0)], -1)
    return dest, valid, int(expert_gpu.max()) + 1


def _hit_gpus(dest: np.ndarray, valid: np.ndarray, n_gpus: int) -> np.ndarray:
    """(N, G) bool: distinct GPUs holding >= 1 of the token's (unmasked) experts."""
    hit = np.zeros((dest.shape[0], n_gpus + 1), dtype=bool)  # last column collects masked slots
    np.put_along_axis(hit, np.where(valid, dest, n_gpus), True, axis=1)
    return hit[:, :n_gpus]


def link_copies(topk_idx: np.ndarray, src_gpu: np.ndarray, expert_gpu: np.ndarray, gpus_per_domain: int,
                scheme: str) -> dict[str, np.ndarray]:
    """Copies each GPU sends to each GPU for given routing: {phase: (G, G) int}, diagonal zero (no wire).

    Phases: dispatch_intra, dispatch_inter, combine_intra, combine_inter. topk_idx (N, k) expert ids (-1 = masked
    slot, sends nothing), src_gpu (N,) the GPU each token lives on, expert_gpu (E,) placement. Row = sender, column =
    receiver.
    """
    check_scheme(scheme)
    src = np.asarray(src_gpu)
    dest, valid, G = _destinations(topk_idx, expert_gpu)  # (N, k) GPU of each chosen expert
    n, g = dest.shape[0], gpus_per_domain
    mats = {p: np.zeros((G, G), dtype=np.int64) for p in ("dispatch_intra", "dispatch_inter")}
    if scheme == "low-latency":
        np.add.at(mats["dispatch_intra"], (np.repeat(src, dest.shape[1])[valid.reshape(-1)], dest[valid]), 1)
    else:
        hit = _hit_gpus(dest, valid, G)  # (N, G) distinct destination GPUs
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
    """Exact dispatch copies per token for given routing: (intra (N,), inter (N,)) int arrays. A topk_idx of -1
    (DeepEP's masked slot) sends nothing; other ids outside [0, E) raise ValueError."""
    check_scheme(scheme)
    src = np.asarray(src_gpu)
    dest, valid, G = _destinations(topk_idx, expert_gpu)  # (N, k)
    n, g = dest.shape[0], gpus_per_domain
    same_dom = dest // g == (src // g)[:, None]  # (N, k)
    if scheme == "low-latency":
        remote = valid & (dest != src[:, None])
        return (remote & same_dom).sum(1), (valid & ~same_dom).sum(1)
    hit = _hit_gpus(dest, valid, G)  # (N, G)
    own = np.arange(G)[None, :] // g == (src // g)[:, None]  # (N, G) GPU in the token's domain
    if scheme == "direct":
        hit[np.arange(n), src] = False
        return (hit & own).sum(1), (hit & ~own).sum(1)
    other_local = (np.arange(G)[None, :] % g) != (src % g)[:, None]  # (N, G) local rank differs
    dom_hit = hit.reshape(n, G // g, g).any(2)  # (N, D)
    return (hit & other_local).sum(1), dom_hit.sum(1) - dom_hit[np.arange(n), src // g]


def sample_uniform_routing(n_tokens: int, n_experts: int, top_k: int, ep_size: int, gpus_per_domain: int,
                           node_limit: int = 0, seed: int = 0, *, n_groups: int = 1,
                           topk_groups: int = 1) -> np.ndarray:
    """Monte-Carlo routing of the uniform model: (N, k) expert ids; under a group rule (the model's n_groups /
    topk_groups, or a node limit: `routing_rule`) DeepSeek-V3's (`sample_group_limited_routing`)."""
    rng = np.random.default_rng(seed)
    g = min(gpus_per_domain, ep_size)
    groups, kept = routing_rule(n_groups, topk_groups, ep_size // g, node_limit)
    if kept < groups:
        return sample_group_limited_routing(n_tokens, n_experts, top_k, groups, kept, rng)
    return np.argsort(rng.random((n_tokens, n_experts)), axis=1)[:, :top_k]


def model_copies(moe: MoEConfig, dep: Deployment) -> CopyCounts:
    """expected_copies of a model on a deployment, routed by its own rule (and the deployment's node limit)."""
    return expected_copies(moe.n_routed_experts, moe.top_k, dep.ep_size, dep.gpus_per_domain, dep.node_limit,
                           dep.scheme, n_groups=moe.n_groups, topk_groups=moe.topk_groups)


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
    REFERENCE deployment the MoE and forward-pass pages state. Uniform routing, expected values, by the model's
    own routing rule (its config's group limit: DeepSeek-V3's 8 groups, best 4) and, when node_limit > 0, a
    deployment's limit of that many domains per token (`routing.routing_rule`).
    """
    if isinstance(cfg, K3Config):
        moe, width = cfg.moe, cfg.d_model
    else:
        if d_model is None:
            raise ValueError("wire_bytes_per_token needs d_model when given a MoEConfig")
        moe, width = cfg, d_model
    c = model_copies(moe, Deployment(get_topology(topology), ep, dispatch, combine, node_limit, scheme))
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


def compare_presets(names: tuple[str, ...] = ("deepseek-v3", "kimi-k2", "kimi-k3"), topology: str = "nvl72",
                    ep_size: int = 64, dispatch: str = "fp8", combine: str = "bf16", node_limit: int = 0,
                    scheme: str = "normal") -> list[TokenTraffic]:
    """The side-by-side: each preset's published/estimated config on the same deployment."""
    dep = Deployment(get_topology(topology), ep_size, dispatch, combine, node_limit, scheme)
    return [analytic_traffic(get_preset(n), dep) for n in names]


def node_limit_sweep(cfg: K3Config, topology: str, ep_size: int, dispatch: str = "fp8",
                     combine: str = "bf16") -> dict[str, list[tuple[int, float]]]:
    """NIC (inter-domain) bytes per token per layer vs node limit M = 1..D, per scheme: {scheme: [(M, bytes)]}.

    A limit M whose domains hold fewer than top_k experts cannot route a token (M x GPUs per domain x experts
    per GPU < top_k): it is left out rather than failing the sweep (E = 64 on 64 GPUs, top-16: M >= 2)."""
    dep = Deployment(get_topology(topology), ep_size, dispatch, combine)
    moe = cfg.moe
    per_domain = dep.gpus_per_domain * (moe.n_routed_experts // ep_size)
    limits = [m for m in range(1, dep.n_domains + 1) if m == dep.n_domains or m * per_domain >= moe.top_k]
    return {s: [(m, wire_bytes_per_token(cfg, topology, ep_size, s, m if m < dep.n_domains else 0,
                                         dispatch=dispatch, combine=combine).inter)
                for m in limits] for s in SCHEMES}


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
    """The `analytic --json` rows: per preset, expected copies and bytes per token per MoE layer, and the routing
    rule they assume (the preset's own group limit, with the node limit where one is given)."""
    rows = compare_presets(presets, topology, ep_size, dispatch, combine, node_limit, scheme)
    dep = Deployment(get_topology(topology), ep_size, dispatch, combine, node_limit, scheme)
    rules = {r.name: describe_rule(r.n_experts, ep_size, dep.gpus_per_domain, get_preset(r.name).moe.n_groups,
                                   get_preset(r.name).moe.topk_groups, node_limit) or "no group limit" for r in rows}
    return [{
        "preset": r.name, "topology": topology, "ep": ep_size, "node_limit": node_limit, "scheme": scheme,
        "routing": rules[r.name],
        "dispatch_format": dispatch, "combine_format": combine, "dim_on_wire": r.dim_on_wire,
        "intra_copies": r.copies.intra, "inter_copies": r.copies.inter,
        "dispatch_bytes": r.per_layer.dispatch, "combine_bytes": r.per_layer.combine,
        "dispatch_intra_bytes": r.per_layer.dispatch_intra, "dispatch_inter_bytes": r.per_layer.dispatch_inter,
        "combine_intra_bytes": r.per_layer.combine_intra, "combine_inter_bytes": r.per_layer.combine_inter,
        "dispatch_record_bytes": r.per_layer.dispatch_record, "combine_record_bytes": r.per_layer.combine_record,
        "moe_layers": r.n_moe_layers, "bytes_per_forward": r.per_forward, "wire_us_per_forward": r.wire_s_forward * 1e6,
    } for r in rows]
