"""Practice on the 3:1 hybrid page: how much cache the pattern saves, how many global layers it keeps, decode time
and the longest context one GPU holds (Kimi Linear 48B re-patterned, k3lite.analytic.hybrid)."""
from __future__ import annotations

from k3lite.analytic import hybrid
from k3lite.base.evidence import derived
from k3lite.panels.hybrid import CONTEXTS  # the contexts the page's cache and step-time curves are drawn at
from k3lite.tour.practice.core import Instance, Problem, final, num
from k3lite.viz.hybrid import layer_pattern_figure

GPUS = ("H200", "B200", "B300", "MI300X")  # hold the 48B model's bf16 weights (an H100's 80 GB does not)


def _query(ratio: int, batch: int = 1, gpu: str | None = None) -> dict:
    return {"hy_ratio": ratio, "hy_batch": batch, **({"hy_hw": gpu} if gpu else {})}


def kv_cut(rng) -> Instance:
    ratio = rng.choice([1, 2, 3, 5, 7])
    context = rng.choice(CONTEXTS)
    cut = 100 * hybrid.kv_reduction(ratio, context)
    mix, full = hybrid.decode_cost(ratio, context), hybrid.decode_cost(0, context)
    return Instance(
        f"Kimi Linear 48B re-patterned to **{ratio}:1** (KDA:MLA, last layer global), at **{context:,} tokens** of "
        "context: how much smaller (in %) is one sequence's decode cache than with every layer MLA?",
        cut, "%", 0.02, f"3:1 hybrid page at ratio {ratio}:1: the cache panel", "hybrid_attention", _query(ratio),
        (f"All MLA: {full.n_mla} layers of latent cache = {num(full.cache_bytes / 1e9)} GB.",
         f"{ratio}:1: {mix.n_mla} MLA layers ({num(mix.mla_cache_bytes / 1e9)} GB) + {mix.n_kda} fixed KDA states "
         f"({num(mix.kda_state_bytes / 1e9)} GB) = {num(mix.cache_bytes / 1e9)} GB.",
         f"1 - {num(mix.cache_bytes / 1e9)} / {num(full.cache_bytes / 1e9)} = {num(cut)} % (`hybrid.kv_reduction`).",
         final(cut, "%")),
        f"from k3lite.analytic import hybrid\nanswer = 100 * hybrid.kv_reduction({ratio}, {context})",
        {"ratio": ratio, "context": context}, derived(hybrid.kv_reduction))


def mla_layers(rng) -> Instance:
    ratio = rng.choice([1, 2, 3, 4, 5, 6, 7])
    types = hybrid.hybrid_config(ratio).layer_types()
    n = types.count("mla")
    return Instance(
        f"The picture shows Kimi Linear 48B's {len(types)} layers re-patterned to **{ratio}:1**. How many of them are "
        "global MLA layers (each keeps a cache that grows with the context)?",
        n, "layers", 0.01, f"3:1 hybrid page at ratio {ratio}:1: the layer pattern", "hybrid_attention",
        _query(ratio),
        (f"Every {ratio + 1}th layer is MLA, and the last layer is global too (`hybrid_config`).",
         f"Count: {n} MLA and {len(types) - n} KDA of {len(types)}.", final(n, "layers")),
        "from k3lite.analytic import hybrid\n"
        f"answer = hybrid.hybrid_config({ratio}).layer_types().count('mla')",
        {"ratio": ratio}, derived(hybrid.hybrid_config),
        figure=(layer_pattern_figure, (types, f"Kimi Linear 48B at {ratio}:1")))


def tpot(rng) -> Instance:
    ratio = rng.choice([0, 1, 3, 7])
    context = rng.choice(CONTEXTS)
    batch = rng.choice([1, 4, 16])
    gpu = rng.choice(GPUS)
    while not hybrid.decode_cost(ratio, context, batch, gpu).fits and batch > 1:  # keep it on one GPU
        batch //= 4
    cost = hybrid.decode_cost(ratio, context, batch, gpu)
    ms = 1e3 * cost.tpot_s
    return Instance(
        f"Kimi Linear 48B at **{ratio}:1** on one **{gpu}**, **batch {batch}**, **{context:,}-token** contexts, bf16 "
        "weights, ideal kernels: how many ms does one decode step take (the roofline)?",
        ms, "ms", 0.02, f"3:1 hybrid page: ratio {ratio}:1, batch {batch}, {gpu}", "hybrid_attention",
        _query(ratio, batch, gpu),
        (f"Bytes one step reads: weights the batch touches {num(cost.weight_bytes / 1e9)} GB + {batch} x cache "
         f"{num(cost.cache_bytes / 1e9)} GB = {num(cost.bytes_per_step / 1e9)} GB.",
         f"Time = max(bytes / HBM bandwidth, FLOPs / peak) ({'HBM' if cost.memory_bound else 'compute'}-bound), "
         "`hybrid.decode_cost`.",
         f"= {num(ms)} ms.", final(ms, "ms")),
        "from k3lite.analytic import hybrid\n"
        f"answer = 1e3 * hybrid.decode_cost({ratio}, {context}, {batch}, {gpu!r}).tpot_s",
        {"ratio": ratio, "context": context, "batch": batch}, derived(hybrid.decode_cost))


def max_context(rng) -> Instance:
    ratio = rng.choice([0, 1, 3])
    batch = rng.choice([2, 8, 32])
    gpu = rng.choice(GPUS)
    tokens = hybrid.max_context_on_one_gpu(ratio, batch, gpu)
    k = tokens / 1e3
    return Instance(
        f"Kimi Linear 48B at **{ratio}:1**, bf16 weights, on one **{gpu}**, **{batch} sequences** at once: what is "
        "the longest context (in thousands of tokens) whose caches still fit next to the weights?",
        k, "k tokens", 0.02, f"3:1 hybrid page: ratio {ratio}:1, batch {batch}, {gpu}", "hybrid_attention",
        _query(ratio, batch, gpu),
        ("Free HBM = HBM - weights; per sequence: fixed KDA states + MLA latent x context.",
         "Context = (free / batch - KDA states) / (MLA cache per token), `hybrid.max_context_on_one_gpu`.",
         f"= {tokens:,} tokens = {num(k)} k.", final(k, "k tokens")),
        "from k3lite.analytic import hybrid\n"
        f"answer = hybrid.max_context_on_one_gpu({ratio}, {batch}, {gpu!r}) / 1e3",
        {"ratio": ratio, "batch": batch}, derived(hybrid.max_context_on_one_gpu))


def faster(rng) -> Instance:
    gpu = rng.choice(GPUS)
    (ra, ca), (rb, cb) = rng.sample([(0, 32768), (3, 262144), (0, 131072), (7, 1_048_576), (1, 262144),
                                     (3, 1_048_576)], 2)
    ta, tb = (hybrid.decode_cost(r, c, 1, gpu).tpot_s for r, c in ((ra, ca), (rb, cb)))
    name_a, name_b = (f"{'all MLA' if r == 0 else f'{r}:1'} at {c:,} tokens" for r, c in ((ra, ca), (rb, cb)))
    right = name_a if ta < tb else name_b
    return Instance(
        f"Batch 1 on one {gpu}: which decodes a token faster, Kimi Linear 48B at **{name_a}** or at **{name_b}**?",
        right, "", 0.0, "3:1 hybrid page: the decode time vs context panel, at each ratio", "hybrid_attention",
        _query(ra, 1, gpu),
        ("At batch 1 a step reads all active weights once plus the cache; the cache grows with the context only in "
         "the MLA layers.",
         f"`hybrid.decode_cost`: {name_a} {num(1e3 * ta)} ms, {name_b} {num(1e3 * tb)} ms.", final(right)),
        "from k3lite.analytic import hybrid\n"
        f"t = lambda r, c: hybrid.decode_cost(r, c, 1, {gpu!r}).tpot_s\n"
        f"answer = {name_a!r} if t({ra}, {ca}) < t({rb}, {cb}) else {name_b!r}",
        {"context_a": ca, "context_b": cb}, derived(hybrid.decode_cost), choices=(name_a, name_b))


PROBLEMS = (
    Problem("hybrid-kv-cut", "hybrid_attention", "compute", 1, "The cache the hybrid saves", kv_cut,
            {"ratio": (1, 7), "context": (min(CONTEXTS), max(CONTEXTS))}),
    Problem("hybrid-mla-layers", "hybrid_attention", "read", 1, "Count the global layers", mla_layers,
            {"ratio": (1, 7)}),
    Problem("hybrid-tpot", "hybrid_attention", "compute", 3, "One decode step's time", tpot,
            {"ratio": (0, 7), "context": (min(CONTEXTS), max(CONTEXTS)), "batch": (1, 16)}),
    Problem("hybrid-max-context", "hybrid_attention", "compute", 2, "The longest context one GPU holds",
            max_context, {"ratio": (0, 3), "batch": (2, 32)}),
    Problem("hybrid-faster", "hybrid_attention", "predict", 2, "Which decodes faster?", faster,
            {"context_a": (min(CONTEXTS), max(CONTEXTS)), "context_b": (min(CONTEXTS), max(CONTEXTS))}),
)
