"""Group-limited routing: which rule a token is routed by on a deployment, and how many GPUs / domains it reaches.

A MoE's own routing rule lives in its config (`MoEConfig.n_groups`, `topk_groups`): the E experts form G groups of
E / G consecutive experts (group q = experts [q E / G, (q + 1) E / G)), each group is scored by the sum of its two
best expert scores, the best M groups are kept and the token takes its top-k experts among them (DeepSeek-V3's
`Gate`, `inference/model.py` at deepseek-ai/DeepSeek-V3 9b4e978, lines 584-593; its released config: n_group 8,
topk_group 4). K3, K2 and Kimi Linear have one group: no limit. A deployment may add a node limit (at most M
domains per token, as DeepSeek-V3 trained with 4 of 8 nodes): that is the same rule with one group per domain.

    routing_rule(n_groups, topk_groups, n_domains, node_limit)   the (groups, kept) a token is routed by there
    routed_hits(E, k, ep, g, groups, kept)      E[distinct GPUs hit], E[distinct domains hit], seeded sampling
    sample_group_limited_routing(...)           the rule itself on i.i.d. sigmoid scores: (N, k) expert ids

`routed_hits` maps groups onto GPUs and domains for any placement: experts sit on GPUs in contiguous blocks
(`experts_per_gpu`), so unit u (a GPU, or a domain of g GPUs) shares o(u, q) experts with group q. Within a kept
group that receives j experts they are a uniform j-subset of its E / G (the scores are i.i.d.), so u is missed by
that group with probability C(E/G - o, j) / C(E/G, j), and E[units hit | the kept groups and their counts] =
sum_u (1 - prod_q C(E/G - o(u, q), j_q) / C(E/G, j_q)), exact given the counts. Only the counts are sampled (the
top min(k, E/G) scores of each group as order statistics), so a group per GPU (DeepSeek-V3 on one 8-GPU node,
EP 8: at most 4 GPUs) and a group per domain (on 8 x 8, EP 64: at most 4 nodes) are one computation, as is a
group spanning several GPUs or domains. `tests/interconnect/test_routing.py` checks it against the plain sampler
and the model's own Router.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from k3lite.interconnect.deployment import experts_per_gpu

GROUP_SAMPLE_TOKENS = 32_768  # tokens sampled per group-limited setting (standard errors <= 0.002 GPUs, 0.003 domains)


class GroupLimitedHits(NamedTuple):
    """E[distinct GPUs / domains a token's experts sit on] under the group rule, with standard errors."""

    gpus: float
    domains: float
    gpus_se: float
    domains_se: float
    n_tokens: int


def routing_rule(n_groups: int, topk_groups: int, n_domains: int, node_limit: int = 0) -> tuple[int, int]:
    """(groups, kept) a token is routed by: the model's own rule (its config's n_groups / topk_groups), or with a
    deployment's node limit M (0 < M < domains) one group per domain, the best M kept; where the model's own groups
    are the domains the stricter of the two limits holds. (1, 1): no limit (every expert reachable)."""
    if node_limit < 0:
        raise ValueError(f"node_limit must be >= 0 (0 = the model's own routing), got {node_limit}")
    if node_limit and node_limit < n_domains:
        return n_domains, min(node_limit, topk_groups) if n_groups == n_domains else node_limit
    return (n_groups, topk_groups) if topk_groups < n_groups else (1, 1)


def reach_caps(n_experts: int, ep_size: int, gpus_per_domain: int, n_groups: int, topk_groups: int
               ) -> tuple[int, int]:
    """(most GPUs, most domains) a token can reach under the group rule: the kept groups times the units one group
    touches, at most all of them (DeepSeek-V3: 4 GPUs on one 8-GPU node at EP 8; 4 nodes on 8 x 8 at EP 64)."""
    g = min(gpus_per_domain, ep_size)
    bounds = np.concatenate([[0], np.cumsum(experts_per_gpu(n_experts, ep_size))])
    return tuple(min(len(b) - 1, topk_groups * int((_overlap(b, n_experts, n_groups) > 0).sum(0).max()))
                 for b in (bounds, bounds[::g]))


def describe_rule(n_experts: int, ep_size: int, gpus_per_domain: int, n_groups: int, topk_groups: int,
                  node_limit: int = 0) -> str:
    """The rule a token is routed by there, in words with what it caps: the model's own ('8 groups, best 4, so at
    most 4 of 8 GPUs'), and a deployment's node limit where it changes anything ('a node limit, at most 4 of 8
    nodes'); '' for no limit."""
    g = min(gpus_per_domain, ep_size)
    n_dom = ep_size // g
    own = ""
    if topk_groups < n_groups:
        gpus, doms = reach_caps(n_experts, ep_size, g, n_groups, topk_groups)
        cap = (f"at most {doms} of {n_dom} nodes" if doms < n_dom else
               f"at most {gpus} of {ep_size} GPUs" if gpus < ep_size else "no fewer GPUs")
        own = f"{n_groups} groups, best {topk_groups}, so {cap}"
    if 0 < node_limit < n_dom:
        if routing_rule(n_groups, topk_groups, n_dom, node_limit) == routing_rule(n_groups, topk_groups, n_dom):
            return f"{own} (a node limit of {node_limit} adds nothing)"
        return f"{own + ' and ' if own else ''}a node limit, at most {node_limit} of {n_dom} nodes"
    return own


def sample_group_limited_routing(n_tokens: int, n_experts: int, top_k: int, n_groups: int, group_limit: int,
                                 rng: np.random.Generator) -> np.ndarray:
    """(N, k) expert ids chosen by DeepSeek-V3's `Gate` rule from i.i.d. sigmoid scores (zero bias): groups of
    E / n_groups consecutive experts ranked by the sum of their top-2 scores, the best `group_limit` kept, then the
    top-k experts among those (`inference/model.py` 584-593)."""
    per_group = n_experts // n_groups
    logits = rng.standard_normal((n_tokens, n_groups, per_group), dtype=np.float32)  # (N, G, E/G)
    best = min(2, per_group)
    top = np.partition(logits, per_group - best, axis=2)[..., per_group - best:]  # (N, G, 2) two best per group
    group_score = (1 / (1 + np.exp(-top))).sum(-1)  # (N, G) sum of the two best sigmoid scores
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


def _overlap(bounds: np.ndarray, n_experts: int, n_groups: int) -> np.ndarray:
    """(U, G) experts unit u (spanning experts [bounds[u], bounds[u + 1])) shares with group q."""
    size = n_experts // n_groups
    lo = np.arange(n_groups) * size
    return np.clip(np.minimum(bounds[1:, None], lo + size) - np.maximum(bounds[:-1, None], lo), 0, None)


@functools.lru_cache(maxsize=256)
def routed_hits(n_experts: int, top_k: int, ep_size: int, gpus_per_domain: int, n_groups: int, topk_groups: int,
                n_tokens: int = GROUP_SAMPLE_TOKENS, seed: int = 0) -> GroupLimitedHits:
    """Mean distinct GPUs and domains hit per token under the group rule (n_groups, best topk_groups), by seeded
    sampling of each kept group's expert count, the units hit averaged exactly given the counts (module docstring).

    Only the top min(k, E/G) scores of each group matter (its top-2 rank it, at most k of it can be chosen); they
    are drawn directly as order statistics (Rényi: the largest of n uniforms is V^(1/n), the next that times
    V'^(1/(n-1)), ...; scores = sigmoid of the normal quantile)."""
    if n_experts % n_groups or not 1 <= topk_groups <= n_groups:
        raise ValueError(f"the group rule needs n_experts ({n_experts}) divisible by n_groups ({n_groups}) and "
                         f"1 <= topk_groups ({topk_groups}) <= n_groups")
    g = min(gpus_per_domain, ep_size)
    per_group = n_experts // n_groups
    m = min(top_k, per_group)
    gpu_bounds = np.concatenate([[0], np.cumsum(experts_per_gpu(n_experts, ep_size))])
    overlaps = [_overlap(gpu_bounds, n_experts, n_groups).T,  # (G, U) per group: experts it shares with each unit
                _overlap(gpu_bounds[::g], n_experts, n_groups).T]
    miss = np.array([[math.comb(per_group - o, j) / math.comb(per_group, j) for j in range(m + 1)]
                     for o in range(per_group + 1)])  # (o, j): a unit sharing o experts missed by j chosen ones
    rng = np.random.default_rng(seed)
    found: list[list[np.ndarray]] = [[], []]
    for start in range(0, n_tokens, 8192):
        n = min(8192, n_tokens - start)
        v = rng.random((n, n_groups, m))
        u = np.cumprod(v ** (1.0 / (per_group - np.arange(m))), axis=-1)  # (n, G, m) top-m uniforms, descending
        best = min(2, m)
        score = 1 / (1 + np.exp(-_normal_quantile(u[..., :best])))  # (n, G, 2) the two best sigmoid scores
        keep = np.argpartition(-score.sum(-1), topk_groups - 1, axis=1)[:, :topk_groups]  # (n, M) kept groups
        pool = np.take_along_axis(u, keep[:, :, None], axis=1).reshape(n, topk_groups * m)  # ranks as the scores
        local = np.argpartition(-pool, top_k - 1, axis=1)[:, :top_k]  # (n, k) top-k of the kept pool
        per_kept = np.zeros((n, topk_groups), dtype=np.int64)
        np.add.at(per_kept, (np.arange(n)[:, None], local // m), 1)  # (n, M) experts each kept group receives
        for out, ov in zip(found, overlaps):
            missed = miss[ov[keep], per_kept[..., None]].prod(1)  # (n, U) P(unit missed | kept groups, counts)
            out.append((1 - missed).sum(1))
    (gpus, doms), se = (np.concatenate(f) for f in found), math.sqrt(n_tokens)
    return GroupLimitedHits(float(gpus.mean()), float(doms.mean()), float(gpus.std(ddof=1) / se),
                            float(doms.std(ddof=1) / se), n_tokens)


def group_limited_hits(n_experts: int, top_k: int, ep_size: int, gpus_per_domain: int, node_limit: int,
                       n_tokens: int = GROUP_SAMPLE_TOKENS, seed: int = 0) -> GroupLimitedHits:
    """`routed_hits` under a node limit M: one group per domain, the best M kept."""
    g = min(gpus_per_domain, ep_size)
    return routed_hits(n_experts, top_k, ep_size, g, ep_size // g, node_limit, n_tokens, seed)
