"""Practice on the interconnect page: bytes one token sends per MoE layer at a given EP, topology and scheme
(k3lite.interconnect.analytic.wire_bytes_per_token, the one function every page's byte numbers come from)."""
from __future__ import annotations

from functools import lru_cache

from k3lite.base.evidence import derived
from k3lite.interconnect.analytic import analytic_traffic, node_limit_sweep, wire_bytes_per_token
from k3lite.interconnect.deployment import RECORD_LAYOUTS, ROW_WORDS, SCHEME_LABELS, TOPOLOGIES, Deployment
from k3lite.interconnect.sentences import routing_rule_words
from k3lite.model.presets import get_preset
from k3lite.model.cards import display_name
from k3lite.tour.practice.core import Instance, Problem, final, num
from k3lite.viz.interconnect import node_limit_figure

PRESETS = ("kimi-k3", "kimi-k2", "deepseek-v3")
SETUPS = (("dgx-b300", 8), ("nvl72", 72), ("nvl72", 64), ("multi-node-8x8", 16), ("multi-node-8x8", 32),
          ("multi-node-8x8", 64), ("super-node-64", 64))


def _query(preset: str, topology: str, ep: int, scheme: str = "normal", **more) -> dict:
    return {"ic_preset": preset, "ic_topology": topology, "ic_ep": ep, "ic_scheme": scheme, **more}


def _call(preset: str, topology: str, ep: int, scheme: str) -> str:
    return (f"wire_bytes_per_token(get_preset({preset!r}), {topology!r}, ep={ep}, scheme={scheme!r})")


def _records(scheme: str) -> str:
    """The question's statement of the record layout its answer counts."""
    return f"records as {SCHEME_LABELS[scheme].split(' (')[0]} lays them out: {RECORD_LAYOUTS[scheme]}, {ROW_WORDS}"


def _routing(preset: str, topology: str, ep: int, scheme: str) -> str:
    """The routing the answer assumes, from the model's config: its own group rule (DeepSeek-V3's 8 groups, best
    4), each token's experts otherwise drawn evenly (`wire_bytes_per_token`'s expectation)."""
    rule = routing_rule_words(get_preset(preset).moe, Deployment(TOPOLOGIES[topology], ep, scheme=scheme))
    return f"routed as its config says ({rule}), the top-k experts otherwise drawn evenly"


IMPORTS = ("from k3lite.interconnect.analytic import wire_bytes_per_token\n"
           "from k3lite.model.presets import get_preset\n")


def token_bytes(rng) -> Instance:
    preset = rng.choice(PRESETS)
    topology, ep = rng.choice(SETUPS)
    scheme = rng.choice(["direct", "normal", "low-latency"])
    b = wire_bytes_per_token(get_preset(preset), topology, ep, scheme)
    kb = b.total / 1e3
    return Instance(
        f"**{display_name(preset)}** on **{TOPOLOGIES[topology].name}**, expert parallelism **EP {ep}**, "
        f"**{SCHEME_LABELS[scheme]}**, fp8 dispatch + bf16 combine, {_routing(preset, topology, ep, scheme)} "
        f"({_records(scheme)}). How many "
        "kB does one token send per MoE layer (dispatch + combine)?",
        kb, "kB", 0.02, "Interconnect page at these settings: 'bytes per token per MoE layer'", "interconnect",
        _query(preset, topology, ep, scheme),
        (f"Copies per token (dispatch; combine mirrors it): {num(b.copies.total)} "
         f"({num(b.copies.intra)} over NVLink, {num(b.copies.inter)} over the NIC).",
         f"Records: {b.dispatch_record} B out (fp8 + metadata), {b.combine_record} B back (bf16).",
         f"{num(b.copies.total)} x ({b.dispatch_record} + {b.combine_record}) = {num(b.total)} B = {num(kb)} kB.",
         final(kb, "kB")),
        IMPORTS + f"answer = {_call(preset, topology, ep, scheme)}.total / 1e3",
        {"ep": ep}, derived(wire_bytes_per_token))


def nic_bytes(rng) -> Instance:
    preset = rng.choice(PRESETS)
    ep = rng.choice([16, 32, 64])
    scheme = rng.choice(["direct", "normal"])
    b = wire_bytes_per_token(get_preset(preset), "multi-node-8x8", ep, scheme)
    kb = b.inter / 1e3
    return Instance(
        f"**{display_name(preset)}**, EP **{ep}** over 8-GPU nodes joined by the scale-out network, "
        f"**{SCHEME_LABELS[scheme]}**, fp8 dispatch + bf16 combine, {_routing(preset, 'multi-node-8x8', ep, scheme)} "
        f"({_records(scheme)}). "
        "How many kB per token per MoE layer go through the NIC (between nodes, both directions)?",
        kb, "kB", 0.02, "Interconnect page: the NIC part of the bytes", "interconnect",
        _query(preset, "multi-node-8x8", ep, scheme),
        (f"Copies that leave the node: {num(b.copies.inter)} per direction "
         + ("(one per remote GPU hit)." if scheme == "direct" else "(one per remote node hit, fanned out there)."),
         f"x ({b.dispatch_record} + {b.combine_record}) B = {num(b.inter)} B.", final(kb, "kB")),
        IMPORTS + f"answer = {_call(preset, 'multi-node-8x8', ep, scheme)}.inter / 1e3",
        {"ep": ep}, derived(wire_bytes_per_token))


def more_bytes(rng) -> Instance:
    preset = rng.choice(PRESETS)
    knob = rng.choice(["scheme", "ep", "dispatch"])
    topology, ep, scheme, fmt = "multi-node-8x8", 64, "normal", "fp8"
    if knob == "scheme":
        a, b = dict(scheme="direct"), dict(scheme="normal")
        words = ("direct all_to_all", "DeepEP normal")
    elif knob == "ep":
        a, b = dict(ep=16), dict(ep=64)
        words = ("EP 16", "EP 64")
    else:
        a, b = dict(dispatch="fp8"), dict(dispatch="bf16")
        words = ("fp8 dispatch", "bf16 dispatch")

    def nic(**kw) -> float:
        args = dict(topology=topology, ep=ep, scheme=scheme, dispatch=fmt) | kw
        return wire_bytes_per_token(get_preset(preset), **args).inter

    na, nb = nic(**a), nic(**b)
    right = words[0] if na > nb else words[1] if nb > na else "the same"
    return Instance(
        f"**{display_name(preset)}** on 8 nodes of 8 GPUs (EP 64, DeepEP normal, fp8 dispatch unless changed). Which puts **more "
        f"bytes through the NIC** per token: **{words[0]}** or **{words[1]}**?",
        right, "", 0.0, "Interconnect page: change the one setting and watch the NIC bytes", "interconnect",
        _query(preset, topology, a.get("ep", ep), a.get("scheme", scheme)),
        ("NIC bytes = copies that leave the node x record bytes; the scheme sets the copies (per GPU or per node), EP "
         "sets how many nodes the experts span, the format sets the record.",
         f"`wire_bytes_per_token(...).inter`: {words[0]} {num(na / 1e3)} kB, {words[1]} {num(nb / 1e3)} kB.",
         final(right)),
        IMPORTS + f"nic = lambda **kw: wire_bytes_per_token(get_preset({preset!r}), **({{'topology': {topology!r}, "
        f"'ep': {ep}, 'scheme': {scheme!r}, 'dispatch': {fmt!r}}} | kw)).inter\n"
        f"na, nb = nic(**{a!r}), nic(**{b!r})\n"
        f"answer = {words[0]!r} if na > nb else {words[1]!r} if nb > na else 'the same'",
        {"ep": ep}, derived(wire_bytes_per_token), choices=(*words, "the same"))


@lru_cache(maxsize=8)  # ~1 s per preset: the node-limited points are sampled
def _sweep(preset: str) -> dict:
    return node_limit_sweep(get_preset(preset), "multi-node-8x8", 64)


def node_limit(rng) -> Instance:
    preset = rng.choice(PRESETS)
    sweep = _sweep(preset)
    points = dict(sweep["normal"])
    m = rng.choice(sorted(points))
    kb = points[m] / 1e3
    said = "no limit" if m == max(points) else f"M = {m}"
    return Instance(
        f"The picture shows **{display_name(preset)}**'s NIC bytes per token per MoE layer against the node limit M "
        f"(EP 64 on 8 nodes; without a limit it is {_routing(preset, 'multi-node-8x8', 64, 'normal')}). Reading the **DeepEP normal** line at **{said}**: how many kB is it?",
        kb, "kB", 0.05, "Interconnect page: the node-limit panel", "interconnect",
        _query(preset, "multi-node-8x8", 64, "normal", ic_node_limit=0 if m == max(points) else m),
        ("A node limit M lets a token use experts on at most M nodes (DeepSeek-V3's group rule): fewer nodes hit, "
         "fewer copies through the NIC.",
         f"`node_limit_sweep` (node-limited points sampled): {num(kb)} kB at {said}.", final(kb, "kB")),
        "from k3lite.interconnect.analytic import node_limit_sweep\nfrom k3lite.model.presets import get_preset\n"
        f"answer = dict(node_limit_sweep(get_preset({preset!r}), 'multi-node-8x8', 64)['normal'])[{m}] / 1e3",
        {"node_limit": m}, derived(node_limit_sweep), figure=(node_limit_figure, (sweep, m)))


def link_time(rng) -> Instance:
    experts = rng.choice([256, 512, 896])
    top_k = rng.choice([4, 8, 16])
    ep = rng.choice([16, 32, 64])
    base = get_preset("kimi-k3")
    cfg = base.with_(moe={"n_routed_experts": experts, "top_k": top_k})
    topo = TOPOLOGIES["multi-node-8x8"]
    dep = Deployment(topo, ep)
    t = analytic_traffic(cfg, dep)
    links = f"NVLink {num(topo.intra_bw / 1e9)} GB/s and NIC {num(topo.inter_bw / 1e9)} GB/s per GPU each way"
    us = 1e6 * t.wire_s_forward
    return Instance(
        f"On the routing page you set **{experts} experts, top-{top_k}** at K3's width (latent {base.moe.latent_dim}). "
        f"Now deploy it at **EP {ep}** over 8-GPU nodes ({links}; DeepEP normal, fp8 dispatch, bf16 combine, uniform "
        f"routing): how many µs does one token's traffic take on one GPU's links over all {t.n_moe_layers} MoE "
        "layers (NVLink + NIC, not overlapped)?",
        us, "µs", 0.02, "Routing page for E and top-k, then the interconnect page at these settings", "interconnect",
        _query("kimi-k3", "multi-node-8x8", ep, ic_experts=experts, ic_top_k=top_k),
        (f"Per layer: {num(t.per_layer.intra)} B over NVLink at {num(topo.intra_bw / 1e9)} GB/s + "
         f"{num(t.per_layer.inter)} B over the NIC at {num(topo.inter_bw / 1e9)} GB/s = {num(1e6 * t.wire_s_layer)} µs "
         "(`link_seconds`).",
         f"x {t.n_moe_layers} MoE layers = {num(us)} µs (`analytic_traffic`).", final(us, "µs")),
        "from k3lite.interconnect.analytic import analytic_traffic\n"
        "from k3lite.interconnect.deployment import TOPOLOGIES, Deployment\nfrom k3lite.model.presets import get_preset\n"
        f"cfg = get_preset('kimi-k3').with_(moe={{'n_routed_experts': {experts}, 'top_k': {top_k}}})\n"
        f"answer = 1e6 * analytic_traffic(cfg, Deployment(TOPOLOGIES['multi-node-8x8'], {ep})).wire_s_forward",
        {"experts": experts, "top_k": top_k, "ep": ep}, derived(analytic_traffic), pages=("moe", "interconnect"))


PROBLEMS = (
    Problem("ic-token-bytes", "interconnect", "compute", 2, "Bytes one token sends", token_bytes, {"ep": (8, 72)}),
    Problem("ic-nic-bytes", "interconnect", "compute", 2, "Bytes through the NIC", nic_bytes, {"ep": (16, 64)}),
    Problem("ic-more-bytes", "interconnect", "predict", 2, "Which moves more through the NIC?", more_bytes,
            {"ep": (64, 64)}),
    Problem("ic-node-limit", "interconnect", "read", 3, "The node limit, from the picture", node_limit,
            {"node_limit": (1, 8)}),
    Problem("ic-link-time", "interconnect", "compute", 3, "From the routing page to link time", link_time,
            {"experts": (256, 896), "top_k": (4, 16), "ep": (16, 64)}),
)
