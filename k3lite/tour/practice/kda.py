"""Practice on the KDA page: the fixed state, the MLA cache it replaces, how long a channel remembers, the recall
probe (a hand-built live run, ~0.1 s)."""
from __future__ import annotations

import math

from k3lite.analytic import memory
from k3lite.base.evidence import derived
from k3lite.model import kda
from k3lite.model.presets import get_preset
from k3lite.panels.kda import DECAY_RATES, DECAY_SPAN, MEMORY_HEAD_DIMS, MEMORY_HEADS, memory_config
from k3lite.tour.practice.core import Instance, Problem, final, num
from k3lite.viz.kda import decay_memory_figure

MODELS = ("kimi-linear-48b-a3b", "kimi-k3")
K3_BOUND = get_preset("kimi-k3").kda.decay_lower_bound  # the bounded-decay panel's fastest curve


def _tail(conv: int) -> str:
    return "no conv tail" if conv == 0 else f"plus the bf16 conv tail of q, k and v ({conv - 1} past tokens each)"


def _memory_query(preset: str, heads: int, head_dim: int) -> dict:
    """The KDA page's memory section at this model with its KDA layers re-sized."""
    return {"kda_preset": preset, "kda_mem_heads": heads, "kda_mem_head_dim": head_dim}


def state_mb(rng) -> Instance:
    preset = rng.choice(MODELS)
    heads = rng.choice([h for h in MEMORY_HEADS if h])
    head_dim = rng.choice([d for d in MEMORY_HEAD_DIMS if d])
    conv = memory_config(preset, heads, head_dim).kda.conv_size
    b = memory.kda_state_bytes(heads, head_dim, conv)
    mb = b / 1e6
    tail = _tail(conv)
    return Instance(
        f"One KDA layer with **{heads} heads** of **head dim {head_dim}** keeps an fp32 state of head_dim x head_dim "
        f"per head, {tail}. How many MB (10^6 bytes) is that, per sequence?",
        mb, "MB", 0.02, "KDA page, 'Memory for decoding vs context length': the flat KDA line", "kda",
        _memory_query(preset, heads, head_dim),
        (f"State: H x K x K x 4 bytes = {heads} x {head_dim} x {head_dim} x 4 = "
         f"{num(heads * head_dim * head_dim * 4 / 1e6)} MB.",
         f"Conv tail: 3 x (conv - 1) x H x K x 2 bytes = {num(3 * max(conv - 1, 0) * heads * head_dim * 2 / 1e6)} MB.",
         f"`memory.kda_state_bytes`: {num(mb)} MB, whatever the context length.", final(mb, "MB")),
        "from k3lite.analytic.memory import kda_state_bytes\n"
        f"answer = kda_state_bytes({heads}, {head_dim}, conv_size={conv}) / 1e6",
        {"heads": heads, "head_dim": head_dim, "conv": conv}, derived(memory.kda_state_bytes))


def mla_over_kda(rng) -> Instance:
    preset = rng.choice(MODELS)
    context = rng.choice([4096, 16384, 65536, 131072, 262144, 1_048_576])
    cfg = get_preset(preset)
    per_tok = memory.mla_cache_bytes_per_token(cfg.mla)
    state = memory.kda_layer_state_bytes(cfg.kda)
    ratio = per_tok * context / state
    return Instance(
        f"In **{preset}**, at a context of **{context:,} tokens**: one MLA layer's latent cache is how many times "
        "one KDA layer's fixed state (fp32 state + conv tail)?",
        ratio, "x", 0.02, f"KDA page, memory panel, model {preset}: the MLA line over the KDA line", "kda",
        {"kda_preset": preset},
        (f"MLA per token: (kv_lora {cfg.mla.kv_lora_rank} + rope {cfg.mla.qk_rope_head_dim}) x 2 bytes = {per_tok} B; "
         f"x {context:,} tokens = {num(per_tok * context / 1e6)} MB.",
         f"KDA state (`kda_layer_state_bytes`): {num(state / 1e6)} MB.",
         f"Ratio: {num(per_tok * context / 1e6)} / {num(state / 1e6)} = {num(ratio)}.", final(ratio, "x")),
        "from k3lite.analytic import memory\nfrom k3lite.model.presets import get_preset\n"
        f"cfg = get_preset({preset!r})\n"
        f"answer = memory.mla_cache_bytes_per_token(cfg.mla) * {context} / memory.kda_layer_state_bytes(cfg.kda)",
        {"context": context}, derived(memory.mla_cache_bytes_per_token, memory.kda_layer_state_bytes))


def break_even(rng) -> Instance:
    heads = rng.choice([h for h in MEMORY_HEADS if h])
    head_dim = rng.choice([64, 128])
    cfg = memory_config("kimi-linear-48b-a3b", heads, head_dim)
    tokens = memory.break_even_context(cfg)
    per_tok = memory.mla_cache_bytes_per_token(cfg.mla)
    return Instance(
        f"A KDA layer with **{heads} heads x head dim {head_dim}** (fp32 state, {_tail(cfg.kda.conv_size)}) replaces "
        f"an MLA layer of Kimi Linear (kv_lora {cfg.mla.kv_lora_rank} + rope {cfg.mla.qk_rope_head_dim}, bf16). From how "
        "many tokens of context on does the MLA cache take more memory than the KDA state?",
        tokens, "tokens", 0.02, "KDA page, memory panel: where the MLA line crosses the flat KDA line", "kda",
        _memory_query("kimi-linear-48b-a3b", heads, head_dim),
        (f"KDA state: `kda_layer_state_bytes` = {memory.kda_layer_state_bytes(cfg.kda):,} B.",
         f"MLA cache per token: {per_tok} B.",
         f"Break-even: ceil(state / per token) = {tokens:,} tokens.", final(tokens, "tokens")),
        "from k3lite.analytic import memory\nfrom k3lite.panels.kda import memory_config\n"
        f"cfg = memory_config('kimi-linear-48b-a3b', {heads}, {head_dim})\n"
        "answer = memory.break_even_context(cfg)",
        {"heads": heads, "head_dim": head_dim}, derived(memory.break_even_context))


def kept(rng) -> Instance:
    # a rate and a distance the KDA page's bounded-decay panel draws (its curves), so the hint shows the answer
    g = rng.choice(DECAY_RATES + (K3_BOUND,))
    n = rng.choice([t for t in (1, 2, 5, 10, 20, 40) if t in DECAY_SPAN and math.exp(g * t) >= 1e-4])  # typeable
    frac = memory.decay_memory(g, [n]).kept_after[0]
    pct = 100 * frac
    return Instance(
        f"A KDA key channel has a constant per-token log-decay **g = {g}** (it keeps e^g of its state each token). "
        f"What percentage of a write does it still hold **{n} tokens** later?",
        pct, "%", 0.02, "KDA page: the bounded-decay panel (f), 'what e⁻⁵ per token means for memory': the curve of this "
        "g", "kda", {},
        (f"Each token multiplies the write by e^g; after n tokens: e^(g n) = e^({num(g * n)}).",
         f"`memory.decay_memory`: {num(frac)} = {num(pct)} %.", final(pct, "%")),
        "from k3lite.analytic.memory import decay_memory\n"
        f"answer = 100 * decay_memory({g}, [{n}]).kept_after[0]",
        {"log_decay": g, "tokens": n}, derived(memory.decay_memory))


def read_span(rng) -> Instance:
    base = rng.choice([-0.02, -0.05, -0.1, -0.2, -0.5])
    gs = sorted(round(base * f, 3) for f in (1.0, 1.5, 2.5))  # close enough that one log axis shows all three
    pick = rng.choice(gs)
    slowest = memory.decay_memory(max(gs), [0]).tokens_to_threshold
    tokens = list(range(0, math.ceil(1.3 * slowest) + 1))
    curves = {f"g = {g}": memory.decay_memory(g, tokens).kept_after for g in gs}
    span = memory.decay_memory(pick, tokens).tokens_to_threshold
    return Instance(
        f"The picture shows what three KDA channels keep of a write, by tokens since the write (log scale); the dashed "
        f"line is 1%. After about how many tokens does the **g = {pick}** channel fall to 1%?",
        span, "tokens", 0.1, "KDA page: the decay panel (fraction kept vs tokens)", "kda", {},
        (f"It crosses 1% where e^(g n) = 0.01: n = ln(0.01) / g = {num(math.log(0.01))} / ({pick}) "
         "(`decay_memory(...).tokens_to_threshold`).",
         f"= {num(span)} tokens (reading the picture within 10% is enough).", final(span, "tokens")),
        "from k3lite.analytic.memory import decay_memory\n"
        f"answer = decay_memory({pick}, [0]).tokens_to_threshold",
        {"log_decay": pick}, derived(memory.decay_memory),
        figure=(decay_memory_figure, (tokens, curves, 0.01)))


def probe_predict(rng) -> Instance:
    n = rng.choice([16, 64, 128, 256, 512])
    decay = rng.choice([0.5, 0.7, 0.9, 0.95, 0.99])
    leak = rng.choice([0.0, 0.3, 0.6, 0.9])
    probe = kda.recall_probe(n, fast_decay=decay, keys="aligned", leak=leak)
    score = float(probe.scores["KDA"][probe.fact_index])
    answer = "yes" if score > 0.5 else "no"
    return Instance(
        f"The KDA page's recall probe with **aligned** keys: a fact is written, then **{n - 1} more pairs**; KDA's "
        f"fast channels keep **{decay}** of their state per token (they lose {1 - decay:.2g} of it each token) and later keys leak **{leak:.0%}** into the fact's slow "
        "channels. Does KDA still recall the fact (cosine above 0.5)?",
        answer, "", 0.0, "KDA page: 'run the probe' at these settings", "kda",
        {"kda_probe": "true", "kda_probe_keys": "aligned", "kda_probe_n": n, "kda_probe_decay": decay,
         "kda_probe_leak": leak},
        ("The fact sits in channels that never decay; what erases it is later keys written into those channels "
         "(the leak), and the more of them, the more.",
         f"`kda.recall_probe` (a live run, ~0.1 s): KDA's recall of the fact = {num(score)}.", final(answer)),
        "from k3lite.model import kda\n"
        f"probe = kda.recall_probe({n}, fast_decay={decay}, keys='aligned', leak={leak})\n"
        "answer = 'yes' if float(probe.scores['KDA'][probe.fact_index]) > 0.5 else 'no'",
        {"writes": n, "decay": decay, "leak": leak}, derived(kda.recall_probe), choices=("yes", "no"))


PROBLEMS = (
    Problem("kda-state-mb", "kda", "compute", 1, "One KDA layer's state", state_mb,
            {"heads": (16, 96), "head_dim": (64, 256), "conv": (0, 4)}),
    Problem("kda-mla-over-kda", "kda", "compute", 2, "MLA cache against KDA state", mla_over_kda,
            {"context": (4096, 1_048_576)}),
    Problem("kda-break-even", "kda", "compute", 2, "Where the cache passes the state", break_even,
            {"heads": (16, 96), "head_dim": (64, 128)}),
    Problem("kda-kept", "kda", "compute", 1, "What a channel keeps", kept, {"log_decay": (-5.0, -0.01),
                                                                          "tokens": (1, 40)}),
    Problem("kda-read-span", "kda", "read", 2, "When a channel forgets, from the picture", read_span,
            {"log_decay": (-1.25, -0.02)}),
    Problem("kda-probe-predict", "kda", "predict", 3, "Does KDA keep the fact?", probe_predict,
            {"writes": (16, 512), "decay": (0.5, 0.99), "leak": (0.0, 0.9)}),
)
