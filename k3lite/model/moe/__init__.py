"""Mixture of experts: router, balancing (aux-loss / bias / quantile), LatentMoE, shared experts, dispatch.

    x (B, T, d) --router(full d)--> scores (N, E) --select top-k--> topk_idx (N, k), topk_weight (N, k)
      |--down_proj d->l--> latent (N, l) --dispatch: sort by expert, one matmul per expert slice-->
      |                    combine: sum_k weight * expert(latent) --up_proj l->d--> routed (N, d)
      |--shared SwiGLU (full d, always on)--------------------------------------> + shared (N, d)

Sources
- Router, sigmoid scores, group-limited top-k, gate weights from the raw scores times `route_scale`: DeepSeek-V3
  (arXiv 2412.19437; `inference/model.py` `Gate`), matched in its two special cases: the chosen weights are
  renormalised over the k only for sigmoid scores (softmax scores are used as they are), and groups are ranked
  by their best score (amax) when selection has no bias, by the sum of their top-2 when it has one (bias, and
  quantile's beta, which plays the same role). tests/model/test_moe_router.py checks this against a port of `Gate`.
- Balancing, selected by `MoEConfig.balancing`:
    none      plain top-k of the raw scores.
    aux_loss  Switch / GShard auxiliary loss  L = alpha * E * sum_i f_i * P_i  (Fedus et al., arXiv 2101.03961),
              f_i = fraction of the N*k assignments that went to expert i, P_i = mean routing probability.
    bias      DeepSeek-V3 auxiliary-loss-free balancing (Wang et al., arXiv 2408.15664): a per-expert bias b is
              added to the scores for *selection only*; after each step b_i += gamma * sign(mean_load - load_i).
    quantile  Quantile Balancing as K3 trains with it (Kimi K3 Technical Report, arXiv 2607.24653, §2.3.3 Eq. 14;
              first described by J. Su, "MoE环游记 6", kexue.fm/archives/11619): the dual of the assignment LP
              "each token gets k experts, each expert gets N*k/E tokens". Route top-(k+1) on the biased score
              s + b (the previous b); the (k+1)-th is the token's cutoff alpha_i; then
              b^_j = -quantile_{1-k/E}(s_:,j - alpha), b = b^ - mean(b^), used from the next step on and frozen
              at inference. No step size: b is *read off* the score distribution, like grading on a curve.
              At batch 1 / decode the running b is used unchanged.
  The `Router.bias` buffer holds b (bias method, selection = s + b) or beta = -b (quantile, selection = s - beta;
  the name and sign the shipped checkpoint stores; K3's checkpoint stores b as `e_score_correction_bias`).
- LatentMoE (NVIDIA, arXiv 2601.18089): experts run in a latent_dim < d_model space; only the latent crosses
  the expert-parallel interconnect. latent_dim = 0 is a classic MoE.
- Capacity factor with token dropping: Switch Transformer / GShard (first come, first served in token order).

One idea a module, read in this order:
    router.py     Router (scores, group-limited top-k, gate weights, aux loss, bias update), selection_stability
    balancing.py  quantile balancing: Eq. 14 (`quantile_bias`), its slow reference, Su's `quantile_beta`, and the
                  pooled-histogram estimator (`cut_histogram`, `merge_histograms`, `quantile_bias_histogram`)
    experts.py    RoutedExperts in stacked weights [E, in, out]; grouped dispatch/combine with capacity, the
                  per-token references, the padded-batch cost model, the experts' FLOPs per token
    stats.py      RoutingStats: load, max-violation, CV, entropy of one layer's routing
    latent.py     LatentMoE, the layer (norm at dispatch, or as K3 on the aggregated output)
    reference.py  K3's released gate and MoE block, token by token (slow references)
"""
from k3lite.model.moe.balancing import (BiasHistogram, cut_histogram, merge_histograms, quantile_beta, quantile_bias,
                                        quantile_bias_histogram, quantile_bias_reference)
from k3lite.model.moe.experts import (DispatchResult, RoutedExperts, active_expert_flops_per_token, capacity_for,
                                      capacity_mask, dispatch_combine, dispatch_combine_naive, expert_forward,
                                      expert_forward_naive, padded_rows_cap)
from k3lite.model.moe.latent import LatentMoE, MoEOutput
from k3lite.model.moe.reference import latent_moe_reference, released_gate_reference
from k3lite.model.moe.router import Router, RouterOutput, selection_stability
from k3lite.model.moe.stats import RoutingStats, routing_metrics, routing_stats

__all__ = [
    "BiasHistogram", "cut_histogram", "merge_histograms", "quantile_beta", "quantile_bias", "quantile_bias_histogram",
    "quantile_bias_reference", "DispatchResult", "RoutedExperts", "active_expert_flops_per_token", "capacity_for",
    "capacity_mask", "dispatch_combine", "dispatch_combine_naive", "expert_forward", "expert_forward_naive",
    "padded_rows_cap", "LatentMoE", "MoEOutput", "latent_moe_reference", "released_gate_reference", "Router",
    "RouterOutput", "selection_stability", "RoutingStats", "routing_metrics", "routing_stats",
]
