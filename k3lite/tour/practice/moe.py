"""Practice on the routing page: even load, experts a batch touches, GPUs a token reaches, LatentMoE's wire bytes,
the busiest expert in a routing picture."""
from __future__ import annotations

import numpy as np
import torch

from k3lite.analytic.latent import latent_cost_per_token
from k3lite.analytic.memory import expected_experts_touched
from k3lite.analytic.placement import mean_load_per_expert
from k3lite.base.evidence import derived
from k3lite.interconnect.analytic import expected_copies
from k3lite.interconnect.deployment import RECORD_LAYOUTS, ROW_WORDS, record_bytes
from k3lite.model.moe.stats import routing_metrics
from k3lite.model.presets import get_preset
from k3lite.tour.practice.core import Instance, Problem, final, num
from k3lite.viz.moe import routing_heatmap

K3 = get_preset("kimi-k3")
RATIOS = {"1": 1.0, "1/2": 0.5, "1/4": 0.25, "1/8": 0.125}  # the routing page's latent choices (moe_latent)
EXPERTS = (64, 128, 256, 512, 896)


def mean_load(rng) -> Instance:
    tokens = rng.choice([512, 1024, 2048, 4096, 8192])
    experts = rng.choice(EXPERTS)
    top_k = rng.choice([2, 4, 8, 16])
    mean = mean_load_per_expert(tokens, top_k, experts)
    return Instance(
        f"A batch of **{tokens:,} tokens** is routed to **{experts} experts**, **top-{top_k}** each. If the load were "
        "perfectly even, how many assignments would each expert get?",
        mean, "assignments", 0.01, "Routing page: the dashed line in the load bars is this mean", "moe",
        {"moe_experts": experts, "moe_top_k": top_k},
        ("Each token makes top-k assignments; spread evenly over E experts: N k / E.",
         f"{tokens:,} x {top_k} / {experts} = {num(mean)}.", final(mean, "assignments")),
        "from k3lite.analytic.placement import mean_load_per_expert\n"
        f"answer = mean_load_per_expert({tokens}, {top_k}, {experts})",
        {"tokens": tokens, "experts": experts, "top_k": top_k}, derived(mean_load_per_expert))


def touched(rng) -> Instance:
    experts = rng.choice(EXPERTS)
    top_k = rng.choice([4, 8, 16])
    batch = rng.choice([1, 4, 16, 64, 256])
    n = expected_experts_touched(experts, top_k, batch)
    share = 1 - (1 - top_k / experts) ** batch
    return Instance(
        f"One decode step runs **{batch} tokens** through a MoE layer of **{experts} experts**, **top-{top_k}**, "
        "routing uniform. How many distinct experts does the step touch (and so read from HBM), on average?",
        n, "experts", 0.02, "Routing page, section (e), at these experts, top-k and batch: the experts one decode "
        "step reads (the hybrid and serving pages read this many)",
        "moe", {"moe_experts": experts, "moe_top_k": top_k, "moe_section": "(e) Activation ratio", "moe_batch": batch},
        (f"A given expert is missed by one token with probability 1 - k/E = {num(1 - top_k / experts)}, by all "
         f"{batch} with (1 - k/E)^B.",
         f"Touched: E (1 - (1 - k/E)^B) = {experts} x {num(share)} = {num(n)}.", final(n, "experts")),
        "from k3lite.analytic.memory import expected_experts_touched\n"
        f"answer = expected_experts_touched({experts}, {top_k}, {batch})",
        {"experts": experts, "top_k": top_k, "batch": batch}, derived(expected_experts_touched))


def gpus_reached(rng) -> Instance:
    experts = rng.choice([256, 512, 896])
    top_k = rng.choice([8, 16])
    gpus = rng.choice([8, 16, 32, 64, 128])
    hit = expected_copies(experts, top_k, gpus, gpus).gpus_hit
    return Instance(
        f"**{experts} experts** are spread in equal blocks over **{gpus} GPUs**; a token picks **{top_k}** of them "
        "at random. On how many distinct GPUs do its experts live, on average?",
        hit, "GPUs", 0.02, "Routing page at K3's 896 experts: the GPU view, 'GPUs the experts are spread over'",
        "moe", {"moe_experts": experts, "moe_top_k": top_k, "moe_gpus": gpus},
        (f"A GPU holds {num(experts / gpus)} experts; it is missed when all {top_k} picks fall elsewhere.",
         "Sum over GPUs of P(hit) = `expected_copies(E, k, G, G).gpus_hit`.",
         f"= {num(hit)} GPUs of {gpus}.", final(hit, "GPUs")),
        "from k3lite.interconnect.analytic import expected_copies\n"
        f"answer = expected_copies({experts}, {top_k}, {gpus}, {gpus}).gpus_hit",
        {"experts": experts, "top_k": top_k, "gpus": gpus}, derived(expected_copies))


def _latent(ratio: float, top_k: int, experts: int):
    m = K3.moe
    return latent_cost_per_token(K3.d_model, m.expert_ffn_dim, top_k, m.n_shared_experts, m.one_shared_ffn_dim,
                                 ratio, n_experts=experts)


def latent_wire(rng) -> Instance:
    label = rng.choice(list(RATIOS))
    top_k = rng.choice([8, 16])
    experts = rng.choice([256, 512, 896])
    cost = _latent(RATIOS[label], top_k, experts)
    kb = cost.wire_bytes / 1e3
    return Instance(
        f"K3's width d = {K3.d_model}, **{experts} experts, top-{top_k}**, latent ratio **{label}** (latent = "
        f"{cost.latent_dim}), on one 8-GPU node (EP 8, DeepEP normal, fp8 dispatch, bf16 combine, uniform routing; "
        f"records: {RECORD_LAYOUTS['normal']}, {ROW_WORDS}). How many kB cross the wire per token per MoE layer, "
        "metadata included?",
        kb, "kB", 0.02, "Routing page, section (d): LatentMoE's wire bytes vs the latent ratio", "moe",
        {"moe_latent": label, "moe_experts": experts, "moe_top_k": top_k},
        (f"Only the {cost.latent_dim}-number latent is sent, once per GPU that hosts one of the token's experts "
         "(dispatch), and once back (combine), with routing metadata.",
         f"Records: dispatch {record_bytes('normal', 'dispatch', cost.latent_dim, top_k, 'fp8')} B, combine "
         f"{record_bytes('normal', 'combine', cost.latent_dim, top_k, 'bf16')} B per copy.",
         "`latent_cost_per_token` calls the one wire-bytes function on the reference deployment.",
         f"= {num(cost.wire_bytes)} bytes = {num(kb)} kB.", final(kb, "kB")),
        "from k3lite.analytic.latent import latent_cost_per_token\nfrom k3lite.model.presets import get_preset\n"
        "m, d = get_preset('kimi-k3').moe, get_preset('kimi-k3').d_model\n"
        f"answer = latent_cost_per_token(d, m.expert_ffn_dim, {top_k}, m.n_shared_experts, m.one_shared_ffn_dim, "
        f"{RATIOS[label]}, n_experts={experts}).wire_bytes / 1e3",
        {"top_k": top_k, "experts": experts, "ratio": RATIOS[label]}, derived(latent_cost_per_token),
        pages=("moe", "interconnect"))


def latent_predict(rng) -> Instance:
    (la, ka), (lb, kb) = rng.sample([("1/2", 8), ("1/4", 16), ("1/8", 16), ("1", 4), ("1/4", 8), ("1/2", 16)], 2)
    a, b = _latent(RATIOS[la], ka, 896), _latent(RATIOS[lb], kb, 896)
    if abs(a.wire_bytes - b.wire_bytes) < 0.01 * max(a.wire_bytes, b.wire_bytes):
        lb, kb = ("1/8", 4) if (la, ka) != ("1/8", 4) else ("1", 16)
        b = _latent(RATIOS[lb], kb, 896)
    name_a, name_b = f"latent {la}, top-{ka}", f"latent {lb}, top-{kb}"
    right = name_a if a.wire_bytes > b.wire_bytes else name_b
    return Instance(
        f"K3 width, 896 experts, one 8-GPU node. Which sends **more bytes per token** over the wire: **{name_a}** "
        f"or **{name_b}**?",
        right, "", 0.0, "Routing page, section (d), at each setting", "moe",
        {"moe_latent": la, "moe_experts": 896, "moe_top_k": ka},
        ("Bytes = (copies, one per GPU hosting a chosen expert) x (record of the latent): more experts per token "
         "means more GPUs reached, a smaller latent means smaller records.",
         f"`latent_cost_per_token`: {name_a} {num(a.wire_bytes / 1e3)} kB, {name_b} {num(b.wire_bytes / 1e3)} kB.",
         final(right)),
        "from k3lite.analytic.latent import latent_cost_per_token\nfrom k3lite.model.presets import get_preset\n"
        "m, d = get_preset('kimi-k3').moe, get_preset('kimi-k3').d_model\n"
        "wire = lambda r, k: latent_cost_per_token(d, m.expert_ffn_dim, k, m.n_shared_experts, m.one_shared_ffn_dim,"
        " r, n_experts=896).wire_bytes\n"
        f"answer = {name_a!r} if wire({RATIOS[la]}, {ka}) > wire({RATIOS[lb]}, {kb}) else {name_b!r}",
        {"top_k_a": ka, "top_k_b": kb}, derived(latent_cost_per_token), choices=(name_a, name_b))


def busiest(rng) -> Instance:
    experts, top_k, tokens = rng.choice([12, 16, 20]), rng.choice([2, 3]), rng.choice([10, 12, 14, 16])
    np_rng = np.random.default_rng(rng.randrange(2**32))
    favourite = rng.randrange(experts)
    weights = np.ones(experts)
    weights[favourite] = 4.0  # one expert the router favours, so the busiest is clear in the picture
    while True:  # redrawn until one expert is strictly the busiest: the picture must have one answer
        idx = np.stack([np_rng.choice(experts, top_k, replace=False, p=weights / weights.sum())
                        for _ in range(tokens)])  # (tokens, top_k)
        load, violation, _, _ = routing_metrics(torch.as_tensor(idx), experts)
        loads = load.tolist()
        if sorted(loads)[-1] > sorted(loads)[-2]:
            break
    gate = np_rng.dirichlet(np.ones(top_k), size=tokens)  # (tokens, top_k)
    top = max(range(experts), key=lambda e: (loads[e], -e))
    others = rng.sample([e for e in range(experts) if e != top], 3)
    choices = tuple(f"expert {e}" for e in sorted(others + [top]))
    return Instance(
        f"The picture shows {tokens} tokens routed to {experts} experts, top-{top_k} (a coloured cell = a chosen "
        "expert). Which expert got the most tokens?",
        f"expert {top}", "", 0.0, "Routing page: the routing heatmap (tokens x experts) at these experts and top-k "
        "(its own prompt's routing: count its columns the same way)", "moe", {"moe_experts": experts, "moe_top_k": top_k},
        (f"Count the coloured cells in each column: `routing_metrics` counts {loads[top]} for expert {top}; the mean "
         f"is {num(tokens * top_k / experts)}, so its max-violation is {num(violation)}.", final(f"expert {top}")),
        "import numpy as np, torch\nfrom k3lite.model.moe.stats import routing_metrics\n"
        f"idx = np.array({idx.tolist()})\n"
        f"load = routing_metrics(torch.as_tensor(idx), {experts})[0].tolist()\n"
        f"answer = f'expert {{max(range({experts}), key=lambda e: (load[e], -e))}}'",
        {"busiest_load": loads[top]}, derived(routing_metrics), choices=choices,
        figure=(routing_heatmap, ([str(t) for t in range(tokens)], idx, gate, experts)))


PROBLEMS = (
    Problem("moe-mean-load", "moe", "compute", 1, "The even share", mean_load,
            {"tokens": (512, 8192), "experts": (64, 896), "top_k": (2, 16)}),
    Problem("moe-experts-touched", "moe", "compute", 2, "Experts one step reads", touched,
            {"experts": (64, 896), "top_k": (4, 16), "batch": (1, 256)}),
    Problem("moe-gpus-reached", "moe", "compute", 2, "GPUs a token's experts live on", gpus_reached,
            {"experts": (256, 896), "top_k": (8, 16), "gpus": (8, 128)}),
    Problem("moe-latent-wire", "moe", "compute", 2, "LatentMoE's bytes on the wire", latent_wire,
            {"top_k": (8, 16), "experts": (256, 896), "ratio": (0.125, 1)}),
    Problem("moe-latent-predict", "moe", "predict", 2, "Smaller latent or fewer experts?", latent_predict,
            {"top_k_a": (4, 16), "top_k_b": (4, 16)}),
    Problem("moe-busiest", "moe", "read", 1, "The busiest expert", busiest, {"busiest_load": (2, 16)}),
)
