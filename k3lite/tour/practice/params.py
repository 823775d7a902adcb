"""Practice on the home page's numbers: parameters, the active share, weight bytes (count_params, memory)."""
from __future__ import annotations

from k3lite.analytic import memory
from k3lite.analytic.params import count_params
from k3lite.base.evidence import derived
from k3lite.model.presets import get_preset
from k3lite.tour.practice.core import Instance, Problem, final, num
from k3lite.viz.params import breakdown_figure

BIG = ("kimi-k3", "kimi-k2", "deepseek-v3", "kimi-linear-48b-a3b")
COMPONENT_WORDS = {"routed_experts": "routed experts", "attention_mla": "MLA attention", "attention_kda": "KDA attention",
                   "shared_experts": "shared experts", "embedding": "embedding", "lm_head": "LM head",
                   "dense_ffn": "dense FFN", "latent_proj": "latent projections", "router": "router",
                   "attn_res": "Attention Residuals", "norms": "norms"}


def _knob_query(preset: str, experts: int, top_k: int) -> dict:
    return {"home_preset": preset, f"home_experts_{preset}": experts, f"home_top_k_{preset}": top_k}


def active_share(rng) -> Instance:
    preset = rng.choice(BIG)
    cfg = get_preset(preset)
    experts = rng.choice([e for e in (64, 128, 256, 384, 512) if e >= 4 * cfg.moe.top_k])
    top_k = rng.choice([2, 4, 8])
    rep = count_params(cfg.with_(moe={"n_routed_experts": experts, "top_k": top_k}))
    pct = 100 * rep.activation_ratio
    return Instance(
        f"Take **{preset}**, but give it **{experts} routed experts** with **top-{top_k}** (everything else as "
        "published). What percentage of its parameters does one token multiply with?",
        pct, "%", 0.02, f"Home page, {preset}, 'Change it': experts {experts}, top-k {top_k}", "home",
        _knob_query(preset, experts, top_k),
        ("Active = everything every token uses (attention, shared experts, dense layers, router, LM head) + "
         "top-k / E of the routed experts.",
         f"`count_params` builds the model on the meta device and counts: total {num(rep.total / 1e9)} B, active "
         f"{num(rep.active / 1e9)} B.",
         f"active / total = {num(rep.active / 1e9)} / {num(rep.total / 1e9)} = {num(pct)} %.",
         final(pct, "%")),
        "from k3lite.analytic.params import count_params\nfrom k3lite.model.presets import get_preset\n"
        f"cfg = get_preset({preset!r}).with_(moe={{'n_routed_experts': {experts}, 'top_k': {top_k}}})\n"
        "answer = 100 * count_params(cfg).activation_ratio",
        {"experts": experts, "top_k": top_k}, derived(count_params))


# `memory.weight_bytes` keeps these in bf16 whatever the format: the questions say so
KEPT_BF16 = "the router, the norms and the AttnRes queries, which stay in bf16 (2 bytes)"
BF16 = num(memory.precision("bf16").bytes_per_param)


def weights_gb(rng) -> Instance:
    preset = rng.choice(BIG)
    fmt = rng.choice(["bf16", "fp8", "mxfp4", "nvfp4"])
    cfg = get_preset(preset)
    total = sum(memory.weight_bytes(cfg, fmt).values()) / 1e9
    per = memory.precision(fmt).bytes_per_param
    params = count_params(cfg).total
    kept = memory.component_params(cfg)["other"]
    return Instance(
        f"How many GB (10^9 bytes) do **all** of {preset}'s weights take if every weight is stored in **{fmt}** "
        f"({num(per)} bytes per parameter, scales included) except {KEPT_BF16}?",
        total, "GB", 0.02, f"Home page, {preset}: total parameters; the format's bytes per parameter", "home",
        {"home_preset": preset},
        (f"Parameters: `count_params` gives {num(params / 1e9)} B in all.",
         f"Bytes = parameters x {num(per)} bytes ({memory.precision(fmt).note}), but the {num(kept / 1e6)} M "
         f"router, norm and AttnRes parameters at {BF16} bytes.",
         f"({num(params / 1e9)} B - {num(kept / 1e9)} B) x {num(per)} + {num(kept / 1e9)} B x {BF16} = {num(total)} GB.",
         final(total, "GB")),
        "from k3lite.analytic import memory\nfrom k3lite.model.presets import get_preset\n"
        f"answer = sum(memory.weight_bytes(get_preset({preset!r}), {fmt!r}).values()) / 1e9",
        {"bytes_per_param": per}, derived(memory.weight_bytes, count_params))


def sparser(rng) -> Instance:
    a, b = rng.sample(BIG, 2)
    ra, rb = count_params(get_preset(a)).activation_ratio, count_params(get_preset(b)).activation_ratio
    right = a if ra < rb else b
    ka, kb = get_preset(a).moe, get_preset(b).moe
    return Instance(
        f"**{a}** routes each token to {ka.top_k} of {ka.n_routed_experts} experts, **{b}** to {kb.top_k} of "
        f"{kb.n_routed_experts}. Which one multiplies a token with the *smaller share* of its parameters?",
        right, "", 0.0, "Home page: switch the configuration and read 'activation ratio'", "home",
        {"home_preset": right},
        ("The expert share top-k / E is not the parameter share: attention and shared parts are always on.",
         f"`count_params`: {a} {num(100 * ra)} % active, {b} {num(100 * rb)} %.", final(right)),
        "from k3lite.analytic.params import count_params\nfrom k3lite.model.presets import get_preset\n"
        f"share = {{n: count_params(get_preset(n)).activation_ratio for n in ({a!r}, {b!r})}}\n"
        "answer = min(share, key=share.get)",
        {"top_k_a": ka.top_k, "top_k_b": kb.top_k}, derived(count_params), choices=(a, b))


def part_share(rng) -> Instance:
    preset = rng.choice(BIG + ("lite",))
    rep = count_params(get_preset(preset))
    parts = {k: v for k, v in rep.by_component.items() if v}
    part = rng.choice(sorted(parts, key=parts.get, reverse=True)[:3])
    share = 100 * parts[part] / rep.total
    return Instance(
        f"The picture is {preset}'s parameter breakdown (hover a bar for its count). What percentage of all its "
        f"parameters are the **{COMPONENT_WORDS[part]}**?",
        share, "%", 0.05, f"Home page, {preset}: the parameter map", "home", {"home_preset": preset},
        (f"Read the {COMPONENT_WORDS[part]} bar: {num(parts[part] / 1e9)} B of {num(rep.total / 1e9)} B in all "
         "(`count_params(...).by_component`).",
         f"{num(parts[part] / 1e9)} / {num(rep.total / 1e9)} = {num(share)} %.", final(share, "%")),
        "from k3lite.analytic.params import count_params\nfrom k3lite.model.presets import get_preset\n"
        f"rep = count_params(get_preset({preset!r}))\n"
        f"answer = 100 * rep.by_component[{part!r}] / rep.total",
        {"share_pct": share}, derived(count_params), figure=(breakdown_figure, (rep,)))


def active_bytes(rng) -> Instance:
    fmt = rng.choice(["bf16", "fp8", "mxfp4"])
    preset = rng.choice(BIG)
    cfg = get_preset(preset)
    active = sum(memory.weight_bytes(cfg, fmt, active=True).values()) / 1e9
    per, n_active = memory.precision(fmt).bytes_per_param, count_params(cfg).active
    kept = memory.component_params(cfg, active=True)["other"]
    return Instance(
        f"At batch 1 a decode step of {preset} reads the weights one token uses. With every weight in **{fmt}** "
        f"({num(per)} bytes per parameter, scales included) except {KEPT_BF16}, how many GB is that per token?",
        active, "GB", 0.02, f"Home page, {preset}: 'active per token' x bytes per parameter", "home",
        {"home_preset": preset},
        (f"Active parameters (`count_params`): {num(n_active / 1e9)} B, of them {num(kept / 1e6)} M router, norm and "
         f"AttnRes parameters at {BF16} bytes.",
         f"({num(n_active / 1e9)} B - {num(kept / 1e9)} B) x {num(per)} + {num(kept / 1e9)} B x {BF16} bytes "
         f"(`memory.weight_bytes(..., active=True)`) = {num(active)} GB.",
         final(active, "GB")),
        "from k3lite.analytic import memory\nfrom k3lite.model.presets import get_preset\n"
        f"answer = sum(memory.weight_bytes(get_preset({preset!r}), {fmt!r}, active=True).values()) / 1e9",
        {"bytes_per_param": memory.precision(fmt).bytes_per_param}, derived(memory.weight_bytes))


PROBLEMS = (
    Problem("params-active-share", "home", "compute", 2, "Active share of a re-sized MoE", active_share,
            {"experts": (64, 512), "top_k": (2, 8)}),
    Problem("params-weights-gb", "home", "compute", 1, "All weights in one format", weights_gb,
            {"bytes_per_param": (0.5, 2)}),
    Problem("params-sparser", "home", "predict", 1, "Which model is sparser?", sparser,
            {"top_k_a": (1, 32), "top_k_b": (1, 32)}),
    Problem("params-part-share", "home", "read", 1, "A part's share, from the picture", part_share,
            {"share_pct": (0.1, 100)}),
    Problem("params-active-bytes", "home", "compute", 2, "Bytes a token's weights take", active_bytes,
            {"bytes_per_param": (0.5, 2)}),
)

