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

Node-limited routing follows DeepSeek-V3's group rule (`inference/model.py` `Gate.forward`, repository
deepseek-ai/DeepSeek-V3 at 9b4e978, lines 584-593): the experts form D groups (here: one per domain), each group
is scored by the sum of its two best expert scores, the best M groups are kept (DeepSeek-V3: M = 4 of 8) and the
token takes its top-k experts among them. A group that wins on its two best scores nearly always receives one of
them, so a token lands in almost all M chosen domains (DeepSeek-V3 on 8 x 8: 3.97 of 4), far more than M random
domains with k experts spread uniformly over them would give (3.63). The sums over GPUs and domains of P(hit) are
E[distinct GPUs hit] and E[distinct domains hit]; `group_limited_hits` estimates both by seeded sampling of
i.i.d. sigmoid scores (GROUP_SAMPLE_TOKENS tokens, standard errors returned; <= 0.003 for the presets), and
the formulas above use them. Low-latency is unchanged: node limits do not shorten its messages.

Combine moves as many copies as dispatch, in the other direction. Time on the wire per token = intra bytes /
NVLink bandwidth + inter bytes / NIC bandwidth (per GPU, one direction, not overlapped, latency ignored).
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from k3lite.model.config import K3Config, MoEConfig
from k3lite.model.presets import get_preset
from k3lite.interconnect.deployment import (
    SCHEMES, Deployment, Topology, check_scheme, experts_per_gpu, get_topology, record_bytes, wire_format,
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


# ------------------------------------------------------------------------------------------ node-limited routing
GROUP_SAMPLE_TOKENS = 32_768  # tokens sampled per node-limited setting (standard errors <= 0.002 GPUs, 0.003 domains)


class GroupLimitedHits(NamedTuple):
    """E[distinct GPUs / domains a token's experts sit on] under the group rule, with standard errors."""

    gpus: float
    domains: float
    gpus_se: float
    domains_se: float
    n_tokens: int


def sample_group_limited_routing(n_tokens: int, n_experts: int, top_k: int, n_groups: int, group_limit: int,
                                 rng: np.random.Generator) -> np.ndarray:
    """(N, k) expert ids chosen by DeepSeek-V3's `Gate` rule from i.i.d. sigmoid scores (zero bias): groups of
    E / n_groups consecutive experts ranked by the sum of their top-2 scores, the best `group_limit` kept, then the
    top-k experts among those (`inference/model.py` 584-593)."""
    per_group = n_experts // n_groups
    logits = rng.standard_normal((n_tokens, n_groups, per_group), dtype=np.float32)  # (N, D, E/D)
    best = min(2, per_group)
    top = np.partition(logits, per_group - best, axis=2)[..., per_group - best:]  # (N, D, 2) two best per group
    group_score = (1 / (1 + np.exp(-top))).sum(-1)  # (N, D) sum of the two best sigmoid scores
    keep = np.argpartition(-group_score, group_limit - 1, axis=1)[:, :group_limit]  # (N, M) kept groups
    pool = np.take_along_axis(logits, keep[:, :, None], axis=1).reshape(n_tokens, group_limit * per_group)
    local = np.argpartition(-pool, top_k - 1, axis=1)[:, :top_k]  # (N, k) top-k of the kept pool (sigmoid monotone)
    return np.take_along_axis(keep, local // per_group, axis=1) * per_group + local % per_group


def _normal_quantile(p: np.ndarray) -> np.ndarray:
    """Inverse standard-normal CDF (Acklam's rational approximation, relative error < 1.2e-9), p in (0, 1)."""
    a = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
         -3.066479806614716e+01, 2.506628277459239e+00)
    b = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
         -1.328068155288572e+01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
         4.374664141464968e+00, 2.938163982698783e+00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)

    def tail(q):  # q = sqrt(-2 log(tail probability))
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)

    p = np.asarray(p, dtype=np.float64)
    q = p - 0.5
    r = q * q
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    lo, hi = p < 0.02425, p > 1 - 0.02425
    x = np.where(lo, tail(np.sqrt(-2 * np.log(np.where(lo, p, 0.5)))), x)
    return np.where(hi, -tail(np.sqrt(-2 * np.log(np.where(hi, 1 - p, 0.5)))), x)


@functools.lru_cache(maxsize=256)
def group_limited_hits(n_experts: int, top_k: int, ep_size: int, gpus_per_domain: int, node_limit: int,
                       n_tokens: int = GROUP_SAMPLE_TOKENS, seed: int = 0) -> GroupLimitedHits:
    """Mean distinct GPUs and domains hit per token under node-limited (group) routing, by seeded sampling.

    The same rule as `sample_group_limited_routing`, sampled faster: only the top min(k, E/D) scores of each
    group matter (its top-2 rank it, at most k of it can be chosen), and those are drawn directly as order
    statistics (Rényi: the largest of n uniforms is V^(1/n), the next that times V'^(1/(n-1)), ...; scores =
    sigmoid of the normal quantile). Domains hit are counted; GPUs hit are averaged exactly given how many experts
    j each domain receives (uniformly placed among its g e experts: g (1 - C(ge - e, j) / C(ge, j)) GPUs), which
    also lowers the sampling error. `tests/interconnect/test_interconnect.py` checks it against the plain sampler and against
    DeepSeek-V3's `Gate`."""
    g = min(gpus_per_domain, ep_size)
    n_dom, e = ep_size // g, n_experts // ep_size
    per_group = g * e
    m = min(top_k, per_group)
    gpus_given = np.array([g * (1 - _miss(per_group, e, j)) for j in range(m + 1)])  # E[GPUs | j experts in a domain]
    rng = np.random.default_rng(seed)
    gpus, doms = [], []
    for start in range(0, n_tokens, 8192):
        n = min(8192, n_tokens - start)
        v = rng.random((n, n_dom, m))
        u = np.cumprod(v ** (1.0 / (per_group - np.arange(m))), axis=-1)  # (n, D, m) top-m uniforms, descending
        best = min(2, m)
        score = 1 / (1 + np.exp(-_normal_quantile(u[..., :best])))  # (n, D, 2) the two best sigmoid scores
        keep = np.argpartition(-score.sum(-1), node_limit - 1, axis=1)[:, :node_limit]  # (n, M) kept groups
        pool = np.take_along_axis(u, keep[:, :, None], axis=1).reshape(n, node_limit * m)  # ranks as the scores
        local = np.argpartition(-pool, top_k - 1, axis=1)[:, :top_k]  # (n, k) top-k of the kept pool
        per_dom = np.zeros((n, node_limit), dtype=np.int64)
        np.add.at(per_dom, (np.arange(n)[:, None], local // m), 1)  # (n, M) experts each kept group receives
        gpus.append(gpus_given[per_dom].sum(1))
        doms.append((per_dom > 0).sum(1))
    gpus_a, doms_a = np.concatenate(gpus), np.concatenate(doms)
    se = math.sqrt(n_tokens)
    return GroupLimitedHits(float(gpus_a.mean()), float(doms_a.mean()), float(gpus_a.std(ddof=1) / se),
                            float(doms_a.std(ddof=1) / se), n_tokens)


def expected_copies(n_experts: int, top_k: int, ep_size: int, gpus_per_domain: int, node_limit: int = 0,
                    scheme: str = "direct") -> CopyCounts:
    """Expectation under uniform routing (formulas in the module docstring); token on a uniform GPU. Exact without
    a node limit; with one, the hit counts come from `group_limited_hits` (DeepSeek-V3's group rule, sampled)."""
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
        hits = group_limited_hits(n_experts, top_k, ep_size, g, node_limit)
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
                           node_limit: int = 0, seed: int = 0) -> np.ndarray:
    """Monte-Carlo routing of the uniform model: (N, k) expert ids; with node_limit > 0 (and < domains), DeepSeek-V3's
    group rule with one group per domain (`sample_group_limited_routing`)."""
    rng = np.random.default_rng(seed)
    g = min(gpus_per_domain, ep_size)
    n_dom = ep_size // g
    if node_limit and node_limit < n_dom:
        return sample_group_limited_routing(n_tokens, n_experts, top_k, n_dom, node_limit, rng)
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
