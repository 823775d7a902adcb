"""The interconnect page's computed sentences, built from the analytic model's numbers (no Streamlit): what one
token moves per layer, what a node limit cuts, DeepSeek-V3 / K2 / K3 side by side, and the routing rule each byte
figure assumes (`routing_clause`, from the configs). Every comparison word
("fewer", "more") comes from `k3lite.base.wording`, so it follows the numbers it compares."""
from __future__ import annotations

from k3lite.base.units import fmt_bytes, fmt_seconds
from k3lite.base.wording import times
from k3lite.interconnect.analytic import TokenTraffic
from k3lite.interconnect.deployment import TOPOLOGIES, Deployment
from k3lite.interconnect.routing import describe_rule
from k3lite.model.config import K3Config, MoEConfig


def routing_rule_words(moe: MoEConfig, dep: Deployment) -> str:
    """The rule a token of `moe` is routed by on `dep`: its config's ('8 groups, best 4, so at most 4 of 8 GPUs', or
    'no group limit'), and the deployment's node limit where it has one (`routing.describe_rule`)."""
    return describe_rule(moe.n_routed_experts, dep.ep_size, dep.gpus_per_domain, moe.n_groups, moe.topk_groups,
                         dep.node_limit) or "no group limit"


def routing_clause(named: list[tuple[str, MoEConfig]], dep: Deployment, where: str = "") -> str:
    """What routing a byte figure assumes, per model, from the configs: 'routed as each config says: Kimi K3 with no
    group limit, DeepSeek-V3 with 8 groups, best 4, so at most 4 of 8 GPUs'."""
    return f"routed as each config says{where}: " + ", ".join(f"{name} with {routing_rule_words(moe, dep)}"
                                                              for name, moe in named)


def layer_sentence(t: TokenTraffic, hit_gpus: int) -> str:
    """Per MoE layer and per forward pass: bytes, copies, the NIC's share, wire time; the drawn token's GPUs."""
    b = t.per_layer
    nic_share = b.inter / b.total if b.total else 0.0
    return (f"Per MoE layer a token moves **{fmt_bytes(b.total)}** ({fmt_bytes(b.dispatch)} out, "
            f"{fmt_bytes(b.combine)} back): {t.copies.total:.2f} copies of a {b.dispatch_record} B record, "
            f"{100 * nic_share:.0f}% of the bytes over the NIC. Over {t.n_moe_layers} MoE layers that is "
            f"**{fmt_bytes(t.per_forward)}** and {fmt_seconds(t.wire_s_forward)} on the wire per token. The drawn "
            f"token (one seeded routing draw) sends copies to {hit_gpus} GPU{'s' if hit_gpus != 1 else ''}; "
            "the expected numbers are averages over uniform routing.")


def node_limit_sentence(sweep: dict[str, list[tuple[int, float]]], n_domains: int, own_rule: str = "",
                        own_cap: int = 0) -> str:
    """What limiting each token to M domains (M = min(4, D - 1), below `own_cap`, the most domains the model's own
    routing reaches, where that is fewer than D) cuts, per scheme, from `node_limit_sweep`'s NIC bytes against the
    model's own routing; "" when no limit below it can route a token. `own_rule`: that routing in words."""
    limits = [m for m, _ in sweep["direct"]]
    top = min(4, n_domains - 1, own_cap - 1 if 0 < own_cap < n_domains else n_domains)
    at = max((m for m in limits if m <= top), default=None)
    if at is None:
        return ""
    cut = {s: 1 - dict(pts)[at] / pts[-1][1] if pts[-1][1] else 0.0 for s, pts in sweep.items()}
    direct, normal = dict(sweep["direct"])[at], dict(sweep["normal"])[at]
    own = (f"Its own routing ({own_rule}) already keeps a token on at most {own_cap} of the {n_domains} domains: "
           f"a node limit from {own_cap} to {n_domains} changes nothing. " if 0 < own_cap < n_domains else "")
    return (f"{own}Limiting each token to M = {at} of {n_domains} domains cuts the NIC bytes by "
            f"{100 * cut['direct']:.0f}% with direct copies, {100 * cut['normal']:.0f}% with DeepEP's normal kernels "
            f"(one RDMA copy per node: at most M) and {100 * cut['low-latency']:.0f}% with low-latency messages (one "
            f"per expert, wherever it is). At M = {at} the normal kernels send "
            f"{times(normal, direct, 'more', 'fewer')} NIC bytes than direct copies; the node limit cuts most for the "
            "hierarchical kernels.")


def comparison_sentence(rows_8x8: dict[str, TokenTraffic], one_node: dict[str, TokenTraffic], k3: K3Config,
                        k2: K3Config, ds: K3Config | None = None) -> str:
    """K3 against K2 on 8 x 8 GPUs (and on one node): GPUs reached, copies, record size, bytes (as ratios "1.20x
    K2's", never a comparison word), and the NIC's share of K3's bytes and wire time; with `ds` (DeepSeek-V3's
    config) the routing rule each model's rows assume. `rows_*`: `compare_presets` rows by preset name."""
    a, b = rows_8x8["kimi-k3"], rows_8x8["kimi-k2"]
    copies, record = a.copies.total / b.copies.total, a.per_layer.dispatch_record / b.per_layer.dispatch_record
    moved = a.per_layer.total / b.per_layer.total
    verdict = ("the wider routing cancels the narrower record: nothing is saved against K2" if abs(moved - 1) < 0.05
               else "the wider routing outweighs the narrower record" if moved > 1 else
               "the narrower record outweighs the wider routing")
    one3, one2 = one_node["kimi-k3"], one_node["kimi-k2"]
    nic = TOPOLOGIES["multi-node-8x8"].inter_bw
    named = [("DeepSeek-V3", ds), ("Kimi K2", k2), ("Kimi K3", k3)] if ds else []
    routed = routing_clause([(model, cfg.moe) for model, cfg in named],
                            Deployment(TOPOLOGIES["multi-node-8x8"], a.ep_size), " on 8 x 8")
    return (
        "Each model with its own published config (DeepSeek-V3: arXiv 2412.19437 config.json; Kimi K2: "
        f"Kimi-K2-Instruct config.json; Kimi K3: moonshotai/Kimi-K3 config.json, {k3.moe.n_routed_experts} "
        f"experts top-{k3.moe.top_k}, hidden {k3.d_model}, latent {k3.moe.latent_dim}, {k3.n_layers} layers)"
        + (f", {routed}" if ds else "") + ". What "
        f"to notice: on 8 x 8 GPUs K3 reaches {a.copies.gpus_hit / b.copies.gpus_hit:.2f}x as many GPUs per token "
        f"as K2 ({a.copies.gpus_hit:.1f} vs {b.copies.gpus_hit:.1f}) and sends {copies:.2f}x K2's copies, each "
        f"{record:.2f}x as large (its {k3.moe.latent_dim}-wide latent against K2's d_model {k2.d_model}, plus routing "
        f"metadata for top-{k3.moe.top_k} instead of top-{k2.moe.top_k}), so it moves {moved:.2f}x K2's bytes per "
        f"layer: {verdict}. On one 8-GPU node the GPU ratio is {one3.copies.gpus_hit / one2.copies.gpus_hit:.2f}x "
        f"and the bytes {one3.per_layer.total / one2.per_layer.total:.2f}x. On 8 x 8 the NIC carries "
        f"{100 * a.per_layer.inter / a.per_layer.total:.0f}% of K3's bytes and "
        f"{100 * (a.per_layer.inter / nic) / a.wire_s_layer:.0f}% of its wire time.")

