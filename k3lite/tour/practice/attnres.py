"""Practice on the Attention Residuals page: what a sublayer reads over depth, and what full vs block AttnRes
costs per token (k3lite.model.attnres.attnres_cost, the picture's depth_reads)."""
from __future__ import annotations

from k3lite.base.evidence import derived
from k3lite.model.attnres import attnres_cost, block_size_words
from k3lite.model.presets import get_preset
from k3lite.panels.attnres import LAYERS as COST_LAYERS  # the cost section's depths (its curves' x axis)
from k3lite.panels.attnres import WIDTHS  # its d_model choices
from k3lite.tour.practice.core import Instance, Problem, final, num
from k3lite.viz.diagrams import depth_reads, depth_reads_figure

LITE_LAYERS = get_preset("lite").n_layers


def fewer_reads(rng) -> Instance:
    layers = rng.choice([n for n in (24, 48, 64, 96, 128) if n in COST_LAYERS])  # depths the page draws
    d = rng.choice(WIDTHS)
    block = rng.choice([4, 8, 16, 24, 32])
    full, blk = attnres_cost(layers, d, "full"), attnres_cost(layers, d, "block", block)
    factor = full.read_bytes / blk.read_bytes
    return Instance(
        f"A model of **{layers} layers**, d = **{d}**, bf16: full AttnRes vs block AttnRes with blocks of "
        f"**{block_size_words(block)}**. How many times fewer bytes does the block version read per token over depth?",
        factor, "x", 0.02, f"Attention Residuals page: 'What block grouping saves', d_model {d}, S = {block}",
        "attention_residuals", {"ar_d": d, "ar_S": block},
        (f"Full: sublayer s reads s + 1 vectors; over {full.n_sublayers} sublayers + the final mix: "
         f"{full.source_reads:,} vectors = {num(full.read_bytes / 1e6)} MB.",
         f"Block: the embedding + each completed block sum + one partial sum: {blk.source_reads:,} vectors = "
         f"{num(blk.read_bytes / 1e6)} MB (`attnres_cost`).",
         f"{num(full.read_bytes / 1e6)} / {num(blk.read_bytes / 1e6)} = {num(factor)}.", final(factor, "x")),
        "from k3lite.model.attnres import attnres_cost\n"
        f"answer = attnres_cost({layers}, {d}, 'full').read_bytes / attnres_cost({layers}, {d}, 'block', {block})"
        ".read_bytes",
        {"layers": layers, "d": d, "block": block}, derived(attnres_cost))


def live_kb(rng) -> Instance:
    layers = rng.choice([n for n in (24, 48, 64, 96) if n in COST_LAYERS])  # (the reason above)
    d = rng.choice(WIDTHS)
    mode = rng.choice(["full", "block"])
    block = rng.choice([4, 8, 24])
    cost = attnres_cost(layers, d, mode, block)
    kb = cost.live_bytes / 1e3
    how = "full AttnRes" if mode == "full" else f"block AttnRes, blocks of {block_size_words(block)}"
    return Instance(
        f"**{layers} layers**, d = **{d}**, bf16, **{how}**: at its peak, how many kB of depth sources must one token "
        "keep so later sublayers can read them?",
        kb, "kB", 0.02, "Attention Residuals page: 'What block grouping saves' (kept vectors)", "attention_residuals",
        {"ar_d": d, "ar_S": block},
        (f"Peak sources kept: {cost.live_sources} vectors of d = {d} numbers (`attnres_cost(...).live_sources`).",
         f"x {d} x 2 bytes = {num(kb)} kB.", final(kb, "kB")),
        "from k3lite.model.attnres import attnres_cost\n"
        f"answer = attnres_cost({layers}, {d}, {mode!r}, {block}).live_bytes / 1e3",
        {"layers": layers, "d": d, "block": block}, derived(attnres_cost))


def sources_read(rng) -> Instance:
    mode = rng.choice(["full", "block"])
    block = rng.choice([2, 3, 4, 6])
    reader = rng.randrange(1, 2 * LITE_LAYERS + 1)
    reads = depth_reads(LITE_LAYERS, mode, block, reader)
    n = len(reads.sources)
    how = "full AttnRes" if mode == "full" else f"block AttnRes, S = {block} sublayers"
    return Instance(
        f"The picture shows the lite model's {LITE_LAYERS} layers ({2 * LITE_LAYERS} sublayers) under **{how}**, "
        f"and what sublayer **{reader}** reads. How many depth sources (vectors) does it attend over?",
        n, "sources", 0.01, f"Attention Residuals page: mode {mode}, block {block}, reading sublayer {reader}",
        "attention_residuals", {"ar_mode": mode, "ar_block": block, "ar_reader": reader},
        ("Full: the embedding and every earlier output. Block: the embedding, each completed block's sum, and the "
         "partial sum of the current block.",
         f"`depth_reads`: {', '.join(name for name, _, _ in reads.sources)}.", final(n, "sources")),
        "from k3lite.viz.diagrams import depth_reads\n"
        f"answer = len(depth_reads({LITE_LAYERS}, {mode!r}, {block}, {reader}).sources)",
        {"reader": reader, "block": block}, derived(depth_reads),
        figure=(depth_reads_figure, (reads,)))


def block_predict(rng) -> Instance:
    layers = rng.choice([n for n in (48, 64, 96) if n in COST_LAYERS])  # (the reason above)
    a, b = sorted(rng.sample([2, 4, 8, 16, 24, 48], 2))
    ra, rb = (attnres_cost(layers, 7168, "block", s).live_sources for s in (a, b))
    if ra == rb:
        answer = "the same"
    else:
        answer = f"S = {a}" if ra > rb else f"S = {b}"
    return Instance(
        f"K3's width, **{layers} layers**, block AttnRes. Which block size makes a token keep **more** depth "
        f"vectors at its peak: **S = {a}** or **S = {b}** sublayers?",
        answer, "", 0.0, "Attention Residuals page: 'What block grouping saves', at each S", "attention_residuals",
        {"ar_S": a},
        ("Kept at the end: the embedding + one sum per completed block + the partial sum: smaller blocks, more sums.",
         f"`attnres_cost(...).live_sources`: S = {a}: {ra}, S = {b}: {rb}.", final(answer)),
        "from k3lite.model.attnres import attnres_cost\n"
        f"ra, rb = (attnres_cost({layers}, 7168, 'block', s).live_sources for s in ({a}, {b}))\n"
        f"answer = 'the same' if ra == rb else ({f'S = {a}'!r} if ra > rb else {f'S = {b}'!r})",
        {"block_a": a, "block_b": b}, derived(attnres_cost), choices=(f"S = {a}", f"S = {b}", "the same"))


PROBLEMS = (
    Problem("attnres-fewer-reads", "attention_residuals", "compute", 2, "Full vs block: bytes read", fewer_reads,
            {"layers": (24, 128), "d": (2304, 7168), "block": (4, 32)}),
    Problem("attnres-live-kb", "attention_residuals", "compute", 2, "What a token keeps over depth", live_kb,
            {"layers": (24, 96), "d": (2304, 7168), "block": (4, 24)}),
    Problem("attnres-sources", "attention_residuals", "read", 1, "Sources one sublayer reads", sources_read,
            {"reader": (1, 2 * LITE_LAYERS), "block": (2, 6)}),
    Problem("attnres-block-predict", "attention_residuals", "predict", 1, "Smaller blocks, more to keep?",
            block_predict, {"block_a": (2, 48), "block_b": (2, 48)}),
)
