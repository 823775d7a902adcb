"""Practice on the forward pass and the architecture map: which layer is which, and where the bytes of one decoded
token go (k3lite.analytic.anatomy, the map's numbers)."""
from __future__ import annotations

from k3lite.analytic.anatomy import BYTE_KINDS, PART_LABEL, anatomy
from k3lite.base.evidence import derived
from k3lite.model.presets import get_preset
from k3lite.panels.home import MAP_CONTEXT
from k3lite.tour.practice.core import Instance, Problem, final, num

PRESETS = ("kimi-k3", "kimi-linear-48b-a3b", "deepseek-v3", "kimi-k2")
HYBRID = ("kimi-k3", "kimi-linear-48b-a3b")
# the context the home map's bytes (what these problems' hints open) are computed at: one, so the map shows the key
CONTEXTS = (MAP_CONTEXT,)
# the attention-or-experts question needs the context to move the answer: the map cannot show all of these yet
BIGGER_CONTEXTS = (4096, 32768, 131072, 1_048_576)


def layer_kind(rng) -> Instance:
    preset = rng.choice(HYBRID)
    types = get_preset(preset).layer_types()
    layer = rng.randrange(1, len(types) + 1)
    kind = types[layer - 1].upper()
    pattern = get_preset(preset).kda_ratio
    return Instance(
        f"**{preset}** has {len(types)} layers in a {pattern[0]}:{pattern[1]} KDA:MLA pattern, the last layer global. "
        f"Is layer **{layer}** (counting from 1) a KDA or an MLA layer?",
        kind, "", 0.0, f"Home page, {preset}: the architecture map (one row per layer)", "home",
        {"home_preset": preset},
        (f"The pattern repeats every {sum(pattern)} layers: {pattern[0]} KDA then {pattern[1]} MLA; the last layer is "
         "MLA whatever the count.",
         f"`cfg.layer_types()[{layer - 1}]` = {types[layer - 1]!r}.", final(kind)),
        f"from k3lite.model.presets import get_preset\nanswer = get_preset({preset!r}).layer_types()[{layer - 1}].upper()",
        {"layer": layer}, derived(get_preset), choices=("KDA", "MLA"))


def moe_layers(rng) -> Instance:
    preset = rng.choice(PRESETS)
    cfg = get_preset(preset)
    ffn = cfg.ffn_types()
    n = ffn.count("moe")
    return Instance(
        f"**{preset}** has {cfg.n_layers} layers; the first {cfg.first_k_dense} use a dense FFN. How many layers send "
        "tokens to experts (a MoE FFN), and so put bytes on the wire?",
        n, "layers", 0.01, f"Home page, {preset}: the map's expert rows", "home", {"home_preset": preset},
        (f"Every layer after the first {cfg.first_k_dense} dense one(s) is MoE (`cfg.ffn_types()`).",
         f"{cfg.n_layers} - {cfg.first_k_dense} = {n}.", final(n, "layers")),
        f"from k3lite.model.presets import get_preset\nanswer = get_preset({preset!r}).ffn_types().count('moe')",
        {"layers": cfg.n_layers}, derived(get_preset))


def _bytes(preset: str, context: int) -> dict[str, float]:
    """Bytes one decoded token moves, by kind, summed over every part (bf16 weights, batch 1)."""
    totals = anatomy(get_preset(preset), context).totals()
    return {k: sum(p.bytes.get(k, 0.0) for p in totals.values()) for k in BYTE_KINDS}


def token_gb(rng) -> Instance:
    preset = rng.choice(PRESETS)
    context = rng.choice(CONTEXTS)
    by_kind = _bytes(preset, context)
    gb = sum(by_kind.values()) / 1e9
    return Instance(
        f"One decoded token of **{preset}** at batch 1, **{context:,} tokens** of context, bf16 weights: how many GB "
        "does it move in all (weights read, cache read, bytes on the wire, depth-mix reads)?",
        gb, "GB", 0.02, f"Home page, {preset}: the architecture map's bytes (hover a part)", "home",
        {"home_preset": preset},
        (", ".join(f"{k} {num(v / 1e9)} GB" for k, v in by_kind.items()) + " (`anatomy(...).totals()`).",
         f"Sum: {num(gb)} GB.", final(gb, "GB")),
        "from k3lite.analytic.anatomy import anatomy\nfrom k3lite.model.presets import get_preset\n"
        f"parts = anatomy(get_preset({preset!r}), {context}).totals().values()\n"
        "answer = sum(p.bytes_total for p in parts) / 1e9",
        {"context": context}, derived(anatomy), pages=("forward_pass", "home"))


def cache_share(rng) -> Instance:
    preset = rng.choice(PRESETS)
    context = rng.choice(CONTEXTS)
    by_kind = _bytes(preset, context)
    pct = 100 * by_kind["cache"] / sum(by_kind.values())
    return Instance(
        f"Same accounting for **{preset}** at **{context:,} tokens**, batch 1, bf16: what percentage of the bytes one "
        "decoded token moves is cache (MLA latents, KDA states)?",
        pct, "%", 0.02, f"Home page, {preset}: the map's cache bytes against the rest", "home",
        {"home_preset": preset},
        (f"Cache {num(by_kind['cache'] / 1e9)} GB of {num(sum(by_kind.values()) / 1e9)} GB (`anatomy`).",
         f"= {num(pct)} %.", final(pct, "%")),
        "from k3lite.analytic.anatomy import anatomy\nfrom k3lite.model.presets import get_preset\n"
        f"parts = anatomy(get_preset({preset!r}), {context}).totals().values()\n"
        "answer = 100 * sum(p.bytes.get('cache', 0) for p in parts) / sum(p.bytes_total for p in parts)",
        {"context": context}, derived(anatomy), pages=("forward_pass", "home"))


def bigger_part(rng) -> Instance:
    preset = rng.choice(PRESETS)
    context = rng.choice(BIGGER_CONTEXTS)
    totals = anatomy(get_preset(preset), context).totals()
    a, b = "attention_mla", "routed_experts"
    ba, bb = totals[a].bytes_total, totals[b].bytes_total
    right = PART_LABEL[a] if ba > bb else PART_LABEL[b]
    return Instance(
        f"**{preset}**, one decoded token at batch 1 with **{context:,} tokens** of context: which part moves more "
        f"bytes, the **{PART_LABEL[a]}** (weights + latent cache) or the **{PART_LABEL[b]}** (the top-k experts' "
        "weights + the wire)?",
        right, "", 0.0, f"Home page, {preset}: hover the two parts on the map", "home",
        {"home_preset": preset},
        (f"`anatomy(...).totals()`: {PART_LABEL[a]} {num(ba / 1e9)} GB, {PART_LABEL[b]} {num(bb / 1e9)} GB; the MLA "
         "cache grows with the context, the experts' bytes do not.", final(right)),
        "from k3lite.analytic.anatomy import anatomy, PART_LABEL\nfrom k3lite.model.presets import get_preset\n"
        f"t = anatomy(get_preset({preset!r}), {context}).totals()\n"
        f"answer = PART_LABEL[max(({a!r}, {b!r}), key=lambda p: t[p].bytes_total)]",
        {"context": context}, derived(anatomy), choices=(PART_LABEL[a], PART_LABEL[b]), pages=("forward_pass", "home"))


PROBLEMS = (
    Problem("fp-layer-kind", "forward_pass", "compute", 1, "KDA or MLA?", layer_kind, {"layer": (1, 93)}),
    Problem("fp-moe-layers", "forward_pass", "compute", 1, "Layers that use experts", moe_layers,
            {"layers": (27, 93)}),
    Problem("fp-token-gb", "forward_pass", "compute", 3, "Every byte of one decoded token", token_gb,
            {"context": (4096, 1_048_576)}),
    Problem("fp-cache-share", "forward_pass", "compute", 2, "The cache's share of the bytes", cache_share,
            {"context": (4096, 1_048_576)}),
    Problem("fp-bigger-part", "forward_pass", "predict", 2, "Attention or experts?", bigger_part,
            {"context": (4096, 1_048_576)}),
)
